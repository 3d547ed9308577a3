//! Arbitrary bytes into the public `RateLimit` parser (the field, then after the first `\n` its
//! `RateLimit-Policy`). The checks (no panic, the documented rule, the differential against
//! `sfv`) are the oracle's (`backstop_oracle::rate_limit`), shared with proptest and the stable
//! corpus replay.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    backstop_oracle::rate_limit::check(data);
});
