//! The sans-IO retry machine, whole: the [`backstop-core`](https://docs.rs/backstop-core)
//! crate, re-exported.
//!
//! Rule: every retry rule lives in [`RetryMachine`] (and in [`HedgeMachine`] for hedged
//! operations), never in the loop or a front door. A front door's user does not drive them:
//! [`run`](crate::run) and the front doors do, and the types their users touch are also at
//! this crate's root (`backstop::Policy`, `backstop::StopReason`, …). This module is for a
//! loop of your own: the machines, their inputs ([`Event`], [`HedgeEvent`]) and outputs
//! ([`Decision`], [`HedgeDecision`]), the gate and rate-limiter traits they consult before each
//! attempt ([`Gate`], [`RateLimiter`]), and the parsers of the server's fields
//! ([`parse_retry_after`], [`parse_rate_limit`]). A crate that needs only these (`no_std`, no
//! allocation) depends on `backstop-core` alone: its paths are these without `machine::`.

#[doc(inline)]
pub use backstop_core::*;
