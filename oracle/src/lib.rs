//! # backstop-oracle
//!
//! The invariants of `backstop`'s machine and parsers, written once and fed three ways: by
//! proptest (`tests/properties.rs`), by the cargo-fuzz targets in `fuzz/`, and by the replay of
//! every committed fuzz corpus file on a plain `cargo test` (`tests/fuzz_corpus_replay.rs`).
//!
//! Each check takes raw bytes, decodes them into an input ([`machine::Scenario`], or the bytes
//! themselves for the parsers), drives the public API of `backstop` and panics with a message
//! that names the broken invariant. Every input decodes, so nothing the fuzzer finds is wasted.
//!
//! - [`machine`]: decoding ([`machine::Scenario`]), the model of what the machine may do, and
//!   the rules each decision is checked against.
//! - [`hedge`]: the same for the hedging machine ([`hedge::Scenario`]): copies in flight at
//!   once, the winner and its cancels, the schedule, the budget and the latency tracker.
//! - [`overload`]: the origin gate and the send-rate limiter shared by several retry
//!   machines ([`overload::Scenario`]): every call a machine makes to them, what it decides
//!   from their answers, and what they may answer.
//! - [`retry_after`]: the `Retry-After` and HTTP-date parsers, against an independent grammar
//!   and reference parser, and differentially against `httpdate`.
//! - [`rate_limit`]: the `RateLimit` parser, differentially against `sfv`.
//! - [`content_range`]: the `Content-Range` parser, against a reference on `str`, and the
//!   resume answers built on it.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bytes;
pub mod content_range;
pub mod hedge;
pub mod machine;
pub mod overload;
pub mod rate_limit;
pub mod retry_after;

use bytes::Bytes;

/// Runs a check's `run` twice and asserts both runs produced the same trace: time and
/// randomness are inputs, so the same input must give the same `what`.
pub(crate) fn twice_alike<T: PartialEq + core::fmt::Debug>(run: impl Fn() -> T, what: &str) {
    let (first, second) = (run(), run());
    assert_eq!(first, second, "the same input must give the same {what}");
}
