//! An arbitrary valid policy and an arbitrary sequence of events and time steps into
//! `RetryMachine`, then the same bytes, read as a hedging scenario, into `HedgeMachine`, then
//! read as an overload scenario, into one to four `RetryMachine`s sharing an `OriginGate`
//! and/or an `AdaptiveRateLimiter`, with their invariants checked after every step, by the one
//! oracle (`backstop_oracle::machine`, `backstop_oracle::hedge` and
//! `backstop_oracle::overload`), shared with proptest and the stable corpus replay.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    backstop_oracle::machine::check(data);
    backstop_oracle::hedge::check(data);
    backstop_oracle::overload::check(data);
});
