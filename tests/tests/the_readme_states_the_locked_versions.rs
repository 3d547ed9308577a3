//! The README's install section says which versions of their own crates a user's project
//! must have (a reqwest 0.12 user otherwise meets an opaque trait error): each one stated is
//! the version backstop builds against, read from the workspace's Cargo.lock (every locked
//! version of that crate is on the stated line: `0.13` means 0.13.x, `1` means 1.x).

use std::path::Path;

/// The `(crate, version)` pairs in the README's versions table.
fn stated(readme: &str) -> Vec<(String, String)> {
    let table = readme
        .split("<!-- versions:")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /versions -->").next())
        .expect("the README's versions table");
    let mut pairs = Vec::new();
    for row in table.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').collect();
        let Some(crates) = cells.get(2) else { continue };
        let words: Vec<&str> = crates
            .split(|c: char| c == ',' || c == '(' || c == ')' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            let (name, version) = (pair[0], pair[1]);
            let is_name = name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            let is_version = version.chars().all(|c| c.is_ascii_digit() || c == '.')
                && version.starts_with(|c: char| c.is_ascii_digit());
            if is_name && is_version && name.starts_with(|c: char| c.is_ascii_lowercase()) {
                pairs.push((name.to_owned(), version.to_owned()));
            }
        }
    }
    pairs
}

/// Every version of `name` in the lockfile.
fn locked(lock: &str, name: &str) -> Vec<String> {
    lock.split("[[package]]")
        .filter(|p| p.lines().any(|l| l.trim() == format!("name = \"{name}\"")))
        .filter_map(|p| {
            p.lines()
                .find_map(|l| l.trim().strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_owned())
        })
        .collect()
}

#[test]
fn the_readme_states_the_locked_versions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("the README");
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("the lockfile");
    let pairs = stated(&readme);
    let names: Vec<&str> = pairs.iter().map(|(n, _)| n.as_str()).collect();
    for must in [
        "reqwest",
        "reqwest-middleware",
        "hyper",
        "ureq",
        "tower",
        "http",
        "tokio",
    ] {
        assert!(
            names.contains(&must),
            "the README states no version of {must}: {pairs:?}"
        );
    }
    for (name, version) in &pairs {
        let versions = locked(&lock, name);
        assert!(!versions.is_empty(), "{name} is not in Cargo.lock");
        for v in &versions {
            let on_line = v == version || v.starts_with(&format!("{version}."));
            assert!(
                on_line,
                "the README says {name} {version}; Cargo.lock has {name} {v}"
            );
        }
    }
}
