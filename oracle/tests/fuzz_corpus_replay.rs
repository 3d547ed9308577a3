//! Replays every file of every fuzz corpus (fuzz/corpus/<target>/) and every saved crash
//! (fuzz/regressions/<target>/) through the same checks the cargo-fuzz targets run, on the
//! stable toolchain with a plain `cargo test`: a regression is caught even where cargo-fuzz is
//! absent. The checks are this crate's.

use backstop_oracle::{content_range, hedge, machine, overload, rate_limit, retry_after};

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Every file under `fuzz/<kind>/<target>/`, sorted so failures are reproducible.
fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p)
                .unwrap_or_else(|e| panic!("cannot read corpus file {}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

/// Runs `check` on every input, naming the file that fails.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let mut count = 0;
    for kind in ["corpus", "regressions"] {
        for (path, bytes) in inputs(kind, target) {
            let result = std::panic::catch_unwind(|| check(&bytes));
            assert!(
                result.is_ok(),
                "{} fails the {target} checks; reproduce with \
                 `RUSTC_BOOTSTRAP=1 cargo fuzz run {target} {}` in fuzz/",
                path.display(),
                path.display()
            );
            count += 1;
        }
    }
    count
}

#[test]
fn every_retry_after_corpus_file_passes_the_parser_checks() {
    let n = replay("retry_after", retry_after::check);
    assert!(
        n > 0,
        "the retry_after corpus is missing: fuzz/corpus/retry_after/"
    );
}

#[test]
fn every_rate_limit_corpus_file_passes_the_parser_checks() {
    let n = replay("rate_limit", rate_limit::check);
    assert!(
        n > 0,
        "the rate_limit corpus is missing: fuzz/corpus/rate_limit/"
    );
}

#[test]
fn every_machine_corpus_file_passes_the_invariant_checks() {
    let n = replay("machine", machine::check);
    assert!(n > 0, "the machine corpus is missing: fuzz/corpus/machine/");
}

/// The `machine` target feeds every input to all three checks: so does the replay.
#[test]
fn every_machine_corpus_file_passes_the_hedging_checks() {
    let n = replay("machine", hedge::check);
    assert!(n > 0, "the machine corpus is missing: fuzz/corpus/machine/");
}

/// The third: the same bytes as machines sharing an origin gate and a rate limiter.
#[test]
fn every_machine_corpus_file_passes_the_overload_checks() {
    let n = replay("machine", overload::check);
    assert!(n > 0, "the machine corpus is missing: fuzz/corpus/machine/");
}

/// The hostile values of the hostile-server scenarios, too large or too odd to keep in a
/// corpus that libFuzzer mutates (a 64 KiB value would raise every run's `-max_len`).
#[test]
fn hostile_retry_after_values_pass_the_parser_checks() {
    let long_digits = vec![b'9'; 64 * 1024];
    let long_junk = vec![b'x'; 64 * 1024];
    let long_fraction = [b"1.".as_slice(), &[b'5'; 64 * 1024]].concat();
    let long_ows = [&[b' '; 32 * 1024][..], b"120", &[b'\t'; 32 * 1024][..]].concat();
    let values: [&[u8]; 14] = [
        b"1e30",
        b"18446744073709551616",
        b"-1",
        b"NaN",
        b"0x10",
        b"\xff\xfe\xfd",
        b"120\xff",
        b"1, 2",
        b"Fri, 31 Dec 9999 23:59:59 GMT",
        b"Thu, 01 Jan 1970 00:00:00 GMT",
        b"Wed, 31 Dec 1969 23:59:59 GMT",
        &long_digits,
        &long_junk,
        &long_fraction,
    ];
    for v in values.iter().copied().chain([long_ows.as_slice()]) {
        retry_after::check(v);
    }
}

#[test]
fn every_content_range_corpus_file_passes_the_parser_checks() {
    let n = replay("content_range", content_range::check);
    assert!(
        n > 0,
        "the content_range corpus is missing: fuzz/corpus/content_range/"
    );
}
