//! Arbitrary bytes into the public `Retry-After` parsers. The checks (no panic, the documented
//! grammar and bounds, round-trips, the differential against `httpdate`) live in
//! core/tests/support/fuzz_checks/retry_after.rs, shared with the stable replay test.
#![no_main]

#[allow(dead_code)]
#[path = "../../core/tests/support/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::retry_after::check(data);
});
