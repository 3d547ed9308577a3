//! A clock on which every timer fires exactly at its instant, moving the clock there: a wait
//! and an attempt's timeout take no real time, so a test can let attempts time out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backstop::runtime::{Instant, Runtime, Sleep};

/// Every sleep (a wait or an attempt's timeout) moves the clock to its end and resolves.
#[derive(Clone, Default)]
pub struct JumpClock {
    nanos: Arc<AtomicU64>,
}

impl JumpClock {
    /// Moves the clock to `t` (never backwards).
    pub fn set(&self, t: Instant) {
        let n = u64::try_from(t.as_duration().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_max(n, Ordering::SeqCst);
    }
}

impl Runtime for JumpClock {
    fn now(&self) -> Instant {
        Instant::from_duration(Duration::from_nanos(self.nanos.load(Ordering::SeqCst)))
    }

    fn sleep_until(&self, until: Instant) -> Sleep {
        self.set(until);
        Box::pin(core::future::ready(()))
    }
}
