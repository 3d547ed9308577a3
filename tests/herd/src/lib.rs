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
//!
//! Everything is seeded: the same seed gives the same tables and figures, bit for bit.

pub mod contention;
pub mod events;
pub mod net;
pub mod overload;
pub mod parallel;
pub mod plot;
pub mod report;
pub mod stats;
