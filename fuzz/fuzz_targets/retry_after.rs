//! Arbitrary bytes into the public `Retry-After` parsers. The checks (no panic, the documented
//! grammar and bounds, round-trips, the differential against `httpdate`) are the oracle's
//! (`backstop_oracle::retry_after`), shared with proptest and the stable corpus replay.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    backstop_oracle::retry_after::check(data);
});
