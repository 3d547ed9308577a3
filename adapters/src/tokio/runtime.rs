//! tokio's clock and timers.
//!
//! Rule (so that paused time drives the waits in tests): the clock is `tokio::time::Instant`,
//! so `tokio::time::pause()` and `advance()` move it, and waits are `tokio::time::sleep_until`.

use core::time::Duration;

use crate::runtime::{Epoch, Runtime, Sleep};
use backstop_core::Instant;

/// tokio's clock and sleep. Its epoch is process-wide, so instants from different clients
/// (of any adapter) compare: a shared budget sees one clock.
#[derive(Clone, Copy, Debug)]
pub struct TokioRuntime {
    epoch: tokio::time::Instant,
}

impl TokioRuntime {
    /// A runtime on the process-wide epoch (`backstop::runtime::Epoch::process`, the same as
    /// the other adapters'), read on tokio's clock: paused time counts.
    #[must_use]
    pub fn new() -> Self {
        TokioRuntime {
            epoch: tokio::time::Instant::from_std(Epoch::process().origin()),
        }
    }
}

impl Default for TokioRuntime {
    fn default() -> Self {
        TokioRuntime::new()
    }
}

impl Runtime for TokioRuntime {
    fn now(&self) -> Instant {
        Instant::from_duration(tokio::time::Instant::now().saturating_duration_since(self.epoch))
    }

    /// Must be polled inside a tokio runtime with the time driver enabled.
    fn sleep_until(&self, until: Instant) -> Sleep {
        let deadline = self
            .epoch
            .checked_add(until.as_duration())
            // Beyond tokio's range: a day from now (the loop re-checks the clock after it).
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400));
        Box::pin(tokio::time::sleep_until(deadline))
    }
}
