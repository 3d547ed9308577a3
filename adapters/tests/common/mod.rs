//! A hand-moved clock for the loop's contract tests: time passes only when a test (or an
//! attempt it scripts) moves it, and a wait moves it to the wait's end at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use backstop::runtime::{Instant, Runtime, Sleep};

/// A clock moved by hand. A wait ends at once, moving the clock to its end; an attempt's
/// timer never fires (the attempts these tests script end by themselves).
#[derive(Clone, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// Moves the clock to `t` (never backwards).
    pub fn set(&self, t: Instant) {
        let n = u64::try_from(t.as_duration().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_max(n, Ordering::SeqCst);
    }
}

impl Runtime for ManualClock {
    fn now(&self) -> Instant {
        Instant::from_duration(Duration::from_nanos(self.nanos.load(Ordering::SeqCst)))
    }

    fn sleep_until(&self, until: Instant) -> Sleep {
        self.set(until);
        Box::pin(core::future::ready(()))
    }

    fn timeout_at(&self, _: Instant) -> Sleep {
        Box::pin(core::future::pending())
    }
}

/// A response with `status` and no body.
pub fn response(status: u16) -> http::Response<()> {
    let mut r = http::Response::new(());
    *r.status_mut() = http::StatusCode::from_u16(status).expect("a valid status");
    r
}
