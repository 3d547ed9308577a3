//! The thundering-herd experiment (docs/HERD-RESULTS.md describes it and its results): a deterministic discrete-event
//! simulation that drives backstop's real [`RetryMachine`](backstop_core::RetryMachine) on virtual
//! time.
//!
//! - [`contention`] (part 1) reproduces Marc Brooker's optimistic-concurrency experiment
//!   ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015): N clients each need one
//!   successful versioned write; a rejected write is answered `409 Conflict` and the machine
//!   decides when to try again.
//! - [`overload`] (part 2) runs an open-loop client against a server with finite capacity
//!   through an outage, an overload and a short blip, with and without retry budgets.
//! - [`hedging`] (issue 20, binary `hedge`) drives the real
//!   [`HedgeMachine`](backstop_core::HedgeMachine) instead: requests fanned out to 100 leaves
//!   whose latency has the heavy tail of [`tail`], with no hedging, fixed and adaptive backup
//!   requests, and a provider-wide slowdown; [`hedge_outputs`] makes its tables and figures.
//! - [`pushback`] and [`adaptive`] (issue 21, binary `overload`, run together by
//!   [`overload_control`] through the open-loop driver [`open_loop`]) drive the real
//!   `RetryMachine` with the overload objects: an [`OriginGate`](backstop_core::OriginGate)
//!   against a server that answers `503 Retry-After: 10` for 10 s, and the adaptive client
//!   rate limiter against a server that admits 100 requests/s and answers `429` above it;
//!   [`fleet`] (issue 27) runs a thousand processes, each with its own gate and limiter, told
//!   one instant by an HTTP-date `Retry-After`.
//!
//! Everything is seeded and runs on virtual time: the same seed and the same code give the
//! same tables and figures, bit for bit (the binaries read the wall clock only to print how
//! long they took).

pub mod adaptive;
pub mod cli;
pub mod contention;
pub mod events;
pub mod fleet;
pub mod hedge_outputs;
pub mod hedging;
pub mod net;
pub mod open_loop;
pub mod overload;
pub mod overload_control;
pub mod parallel;
pub mod plot;
pub mod pushback;
pub mod report;
pub mod stats;
pub mod tail;
