//! What an executor supplies to the retry loop: its clock and its sleep; and the wall clock.
//!
//! Rule: the loop exists once, so that a fix made there reaches every adapter, and each
//! executor is a small trait implementation. The clock is injected so that tests and
//! simulations run on virtual time ([`VirtualTime`]). The front doors bring their own
//! runtimes (`backstop::tokio::TokioRuntime`, `backstop::smol::SmolRuntime`); [`StdRuntime`]
//! is the blocking one. The wall clock, against which an HTTP-date `Retry-After` is read when
//! the response has no `Date`, is an input too ([`WallClock`]).

use core::future::Future;
use core::pin::Pin;

pub use crate::virtual_time::VirtualTime;
pub use crate::wall_clock::{SkewedClock, SystemClock, WallClock};
#[doc(inline)]
pub use backstop_core::{Instant, UnixTime};

use crate::thread_timer::ThreadTimer;

/// A boxed sleep: resolves at (or, rarely, a little before) the instant it was made for.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// An executor's clock and sleep.
///
/// `now` is monotonic and measured from the runtime's own epoch (see [`Epoch`]); the sleeps
/// take an instant on the same clock. The loop never trusts a timer: after every sleep it
/// reads the clock again and asks the machine, so a timer that fires early only costs one more
/// sleep. Every sleep wakes its task through the waker, never by blocking the thread: the loop
/// races it against the attempt in flight or the operation's abort.
pub trait Runtime {
    /// The current instant.
    fn now(&self) -> Instant;

    /// A future that resolves at `until`: the wait between two attempts.
    fn sleep_until(&self, until: Instant) -> Sleep;

    /// A future that resolves at `until`, raced against the attempt in flight (its timeout)
    /// or a discarded body's drain. The same as [`sleep_until`](Self::sleep_until) unless the
    /// runtime treats waits apart: [`VirtualTime`] skips the waits and
    /// keeps these real, because the traffic they bound is real.
    fn timeout_at(&self, until: Instant) -> Sleep {
        self.sleep_until(until)
    }
}

impl<R: Runtime + ?Sized> Runtime for &R {
    fn now(&self) -> Instant {
        (**self).now()
    }

    fn sleep_until(&self, until: Instant) -> Sleep {
        (**self).sleep_until(until)
    }

    fn timeout_at(&self, until: Instant) -> Sleep {
        (**self).timeout_at(until)
    }
}

/// Maps a native monotonic clock onto backstop's [`Instant`]: the epoch is the moment the
/// runtime was created.
#[derive(Clone, Copy, Debug)]
pub struct Epoch(std::time::Instant);

impl Epoch {
    /// An epoch at the current `std` instant.
    #[must_use]
    pub fn now() -> Self {
        Epoch(std::time::Instant::now())
    }

    /// The process-wide epoch (fixed at its first use), shared by every runtime made with
    /// `new()`: instants from different clients compare, so a budget shared between them sees
    /// one clock.
    #[must_use]
    pub fn process() -> Self {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        Epoch(*ORIGIN.get_or_init(std::time::Instant::now))
    }

    /// The `std` instant at which backstop's clock reads zero.
    #[must_use]
    pub fn origin(self) -> std::time::Instant {
        self.0
    }

    /// A `std` instant on backstop's clock (instants before the epoch read as zero).
    #[must_use]
    pub fn to_instant(self, t: std::time::Instant) -> Instant {
        Instant::from_duration(t.saturating_duration_since(self.0))
    }

    /// The `std` instant of a backstop instant; `None` if it cannot be represented.
    #[must_use]
    pub fn to_std(self, t: Instant) -> Option<std::time::Instant> {
        self.0.checked_add(t.as_duration())
    }
}

/// The blocking runtime: `std::time::Instant` for the clock; a sleep is a timer thread that
/// wakes the executor (the thread parks in `futures_lite::future::block_on` until the timer,
/// the attempt or an abort wakes it), so it bounds any attempt future. Used by
/// `backstop::ureq`, and by any caller that runs the loop with `block_on`.
#[derive(Clone, Copy, Debug)]
pub struct StdRuntime {
    epoch: Epoch,
}

impl StdRuntime {
    /// A runtime on the process-wide epoch ([`Epoch::process`]).
    #[must_use]
    pub fn new() -> Self {
        StdRuntime {
            epoch: Epoch::process(),
        }
    }
}

impl Default for StdRuntime {
    fn default() -> Self {
        StdRuntime::new()
    }
}

impl Runtime for StdRuntime {
    fn now(&self) -> Instant {
        self.epoch.to_instant(std::time::Instant::now())
    }

    fn sleep_until(&self, until: Instant) -> Sleep {
        Box::pin(ThreadTimer::at(self.epoch.to_std(until)))
    }
}
