//! What an executor supplies to the retry loop: its clock and its sleep.
//!
//! Rule: the loop exists once, so that a fix made there reaches every adapter, and each
//! executor is a small trait implementation. The clock is injected so that tests and
//! simulations run on virtual time ([`VirtualTime`](crate::VirtualTime)).

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::Instant;

use crate::abort::Abort;
use crate::thread_timer::ThreadTimer;

/// A boxed sleep: resolves at (or, rarely, a little before) the instant it was made for.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Why the loop sleeps, so that a virtual clock can skip waits yet keep attempt timeouts real.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Purpose {
    /// The wait between two attempts that the machine decided.
    Wait,
    /// The timeout of the attempt in flight, raced against it.
    AttemptTimeout,
}

/// An executor's clock and sleep.
///
/// `now` is monotonic and measured from the runtime's own epoch (see [`Epoch`]); `sleep_until`
/// takes an instant on the same clock. The loop never trusts a timer: after every sleep it
/// reads the clock again and asks the machine, so a timer that fires early only costs one more
/// sleep.
pub trait Runtime {
    /// The current instant.
    fn now(&self) -> Instant;

    /// A future that resolves at `until`.
    ///
    /// An [`AttemptTimeout`](Purpose::AttemptTimeout) sleep is raced against an attempt that
    /// is pending on the same task: it must wake the task through its waker, never block the
    /// thread. Async runtimes ignore `abort` (the loop races every sleep against it); a
    /// runtime that blocks the thread inside `poll` for a [`Wait`](Purpose::Wait) must return
    /// early when `abort` fires.
    fn sleep_until(&self, until: Instant, purpose: Purpose, abort: Option<&Abort>) -> Sleep;
}

impl<R: Runtime + ?Sized> Runtime for &R {
    fn now(&self) -> Instant {
        (**self).now()
    }

    fn sleep_until(&self, until: Instant, purpose: Purpose, abort: Option<&Abort>) -> Sleep {
        (**self).sleep_until(until, purpose, abort)
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

/// The blocking runtime: `std::time::Instant` for the clock; a wait parks the thread (inside
/// `poll`) until its end or an abort, and an attempt's timeout is a timer thread that wakes
/// the executor, so it bounds any attempt future. Used by `backstop::ureq`, and by any caller
/// that runs the loop with `futures_lite::future::block_on`.
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

    fn sleep_until(&self, until: Instant, purpose: Purpose, abort: Option<&Abort>) -> Sleep {
        if purpose == Purpose::AttemptTimeout {
            // Raced against an attempt that is pending: the thread waits in the executor for
            // whichever wakes it first, so the timer must wake it from elsewhere.
            return Box::pin(ThreadTimer::at(self.epoch.to_std(until)));
        }
        Box::pin(BlockingSleep {
            until: self.epoch.to_std(until),
            abort: abort.cloned(),
        })
    }
}

/// Parks the thread inside `poll` until the deadline or an abort.
struct BlockingSleep {
    until: Option<std::time::Instant>,
    abort: Option<Abort>,
}

impl Future for BlockingSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        match (self.until, &self.abort) {
            (Some(until), Some(abort)) => {
                abort.wait_until(until);
            }
            (Some(until), None) => {
                std::thread::sleep(until.saturating_duration_since(std::time::Instant::now()));
            }
            (None, Some(abort)) => {
                abort.wait_timeout(Duration::MAX);
            }
            // An instant beyond `std`'s range: sleep in long steps (the loop re-checks the
            // clock after each).
            (None, None) => std::thread::sleep(Duration::from_secs(86_400)),
        }
        Poll::Ready(())
    }
}
