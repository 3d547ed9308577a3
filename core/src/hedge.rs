//! Hedged requests: a second copy of an idempotent request when the first is slow, the first
//! final answer wins. See [`HedgeMachine`](crate::HedgeMachine) for the rule and the driver's
//! contract, [`Hedging`](crate::Hedging) for the policy, and
//! [`LatencyTracker`](crate::LatencyTracker) for an adaptive delay.

mod config;
mod decision;
mod first_copy;
mod latency;
mod machine;

pub use config::{HedgeDelay, Hedging, HedgingError, A6_MAX_ATTEMPTS, MAX_COPIES};
pub use decision::{CancelReason, HedgeDecision, HedgeEvent, HedgeOutcome, HedgeTrigger};
pub use first_copy::FirstCopy;
pub use latency::{Latencies, LatencyTracker, NoLatencies};
pub use machine::HedgeMachine;
