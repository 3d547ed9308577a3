//! A timer for a thread that has no reactor: a helper thread sleeps until the instant and
//! wakes the task.
//!
//! Rule: every runtime bounds every attempt, whatever its future does. The blocking runtime's
//! thread waits in the executor for the attempt (or the abort, or the wait's end), so
//! something else must wake it: one helper thread per timer, the simplest waker-based timer
//! without a reactor. The helper starts only on the first poll before the instant: a blocking
//! client's attempt completes in its first poll, before its timeout's timer is ever polled.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Resolves at `until` (never, for `None`: an instant beyond `std`'s range).
pub(crate) struct ThreadTimer {
    until: Option<Instant>,
    /// Shared with the helper thread, started on the first poll before `until`.
    helper: Option<Arc<Shared>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    fired: bool,
    /// The timer was dropped: the helper thread ends without waking anyone.
    dropped: bool,
    waker: Option<Waker>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent whatever panicked: recover it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ThreadTimer {
    pub(crate) fn at(until: Option<Instant>) -> Self {
        ThreadTimer {
            until,
            helper: None,
        }
    }
}

impl Future for ThreadTimer {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some(until) = this.until else {
            return Poll::Pending;
        };
        if Instant::now() >= until {
            return Poll::Ready(());
        }
        if let Some(shared) = &this.helper {
            let mut state = shared.lock();
            if state.fired {
                return Poll::Ready(());
            }
            state.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let shared = Arc::new(Shared::default());
        shared.lock().waker = Some(cx.waker().clone());
        let theirs = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("backstop-timer".into())
            .spawn(move || fire_at(&theirs, until));
        if spawned.is_err() {
            // No thread to be had: keep the bound by parking this one until the instant (the
            // attempt cannot finish early meanwhile, but it cannot outlive its timeout).
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            return Poll::Ready(());
        }
        this.helper = Some(shared);
        Poll::Pending
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        if let Some(shared) = &self.helper {
            shared.lock().dropped = true;
            shared.changed.notify_one();
        }
    }
}

/// The helper thread: waits until `until` or the timer's drop, whichever comes first.
fn fire_at(shared: &Shared, until: Instant) {
    let mut state = shared.lock();
    // Bounded by `until`: each pass waits for the time left or for the drop.
    while !state.dropped {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            state.fired = true;
            let waker = state.waker.take();
            drop(state);
            if let Some(waker) = waker {
                waker.wake();
            }
            return;
        }
        state = shared
            .changed
            .wait_timeout(state, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    #[test]
    fn fires_at_its_instant_while_the_executor_waits() {
        let until = Instant::now() + Duration::from_millis(20);
        futures_lite::future::block_on(ThreadTimer::at(Some(until)));
        assert!(Instant::now() >= until);
    }

    #[test]
    fn a_past_instant_is_ready_at_once() {
        let past = Instant::now();
        let mut timer = core::pin::pin!(ThreadTimer::at(Some(past)));
        assert!(
            futures_lite::future::block_on(futures_lite::future::poll_once(timer.as_mut()))
                .is_some()
        );
    }
}
