//! What this process holds, read from `/proc/self` (Linux): open descriptors and resident
//! memory. `None` where `/proc` is not there.

/// The number of open file descriptors.
#[must_use]
pub fn open_fds() -> Option<usize> {
    // The directory handle read_dir holds is one of the entries; it is counted every time, so
    // before/after differences are exact.
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

/// Resident memory in KiB (`VmRSS`).
#[must_use]
pub fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The number of threads of this process.
#[must_use]
pub fn threads() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}
