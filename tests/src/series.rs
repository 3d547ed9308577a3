//! A `metrics` series as the scenarios that read a recorder name it.

/// `key` as `name{label=value,…}`, its labels in the order the series gave them.
#[must_use]
pub fn name(key: &metrics::Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}
