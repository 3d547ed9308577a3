//! smol's clock and timers: `std::time::Instant` and `async-io` timers.

use crate::runtime::{Epoch, Runtime, Sleep};
use backstop_core::Instant;

/// smol's clock (`std::time::Instant`) and sleep (`async_io::Timer`), on the process-wide
/// epoch (`Epoch::process`).
#[derive(Clone, Copy, Debug)]
pub struct SmolRuntime {
    epoch: Epoch,
}

impl SmolRuntime {
    /// A runtime on the process-wide epoch.
    #[must_use]
    pub fn new() -> Self {
        SmolRuntime {
            epoch: Epoch::process(),
        }
    }
}

impl Default for SmolRuntime {
    fn default() -> Self {
        SmolRuntime::new()
    }
}

impl Runtime for SmolRuntime {
    fn now(&self) -> Instant {
        self.epoch.to_instant(std::time::Instant::now())
    }

    fn sleep_until(&self, until: Instant) -> Sleep {
        let timer = match self.epoch.to_std(until) {
            Some(at) => async_io::Timer::at(at),
            None => async_io::Timer::never(),
        };
        Box::pin(async move {
            timer.await;
        })
    }
}
