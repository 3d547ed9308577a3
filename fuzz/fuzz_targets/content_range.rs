//! Arbitrary bytes into the public `Content-Range` parser and the resume answers built on it.
//! The checks (no panic, the differential against a reference on `str`, the round trip, a part
//! only where the body broke off) are the oracle's (`backstop_oracle::content_range`), shared
//! with the stable corpus replay.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    backstop_oracle::content_range::check(data);
});
