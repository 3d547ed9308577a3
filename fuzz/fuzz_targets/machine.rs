//! An arbitrary valid policy and an arbitrary sequence of events and time steps into
//! `RetryMachine`, with its invariants checked after every step. The decoding and the checks
//! live in core/tests/support/fuzz_checks/machine.rs, shared with the stable replay test.
#![no_main]

#[allow(dead_code)]
#[path = "../../core/tests/support/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_checks::machine::check(data);
});
