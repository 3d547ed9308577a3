//! A future raced against its timeout and its operation's abort: how both loops wait for an
//! attempt (the retry loop), the copies in flight (the hedging loop), a readiness or a drain.
//!
//! Rule: a timer is never trusted. One that fires before the clock reaches the timeout is
//! replaced and the future keeps running; the abort's flag is read after its listener is made
//! and again after it is heard, so no abort is missed.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use backstop_core::Instant;

use crate::abort::Abort;
use crate::runtime::{Runtime, Sleep};

/// What a race reads of its operation: its clock and timers, and its abort.
pub(crate) trait Racer {
    /// The operation's runtime.
    type Runtime: Runtime + ?Sized;

    /// The clock and the timers.
    fn runtime(&self) -> &Self::Runtime;

    /// The operation's abort, if it has one.
    fn abort(&self) -> Option<&Abort>;
}

/// How a raced future ended.
pub(crate) enum Raced<T> {
    /// By itself, with this output.
    Done(T),
    /// The clock reached the timeout first.
    TimedOut,
    /// The operation was aborted first.
    Aborted,
}

/// A future raced against `timeout_at` and its operation's abort (see the module).
///
/// The abort's listener and the timer are made on the first poll that finds the future
/// pending: a blocking attempt completes in that poll (its client enforces the timeout and the
/// abort), and so may an async one, with neither made for it. Each wake-up polls the future
/// once, first: a poll that found it pending registered its waker, so polling it again before
/// the task is woken only repeats the client's work. Written out, not an `async fn`: the
/// attempt's state in the operation's future is this and nothing around it.
pub(crate) struct Race<'r, F, O> {
    attempt: Pin<&'r mut F>,
    /// The operation's runtime and abort (one reference: this lives in its future).
    operation: &'r O,
    listener: Option<event_listener::EventListener>,
    timer: Option<Sleep>,
    timeout_at: Instant,
}

impl<'r, F, O> Race<'r, F, O> {
    /// Races `attempt` against `timeout_at` and `operation`'s abort.
    pub(crate) fn new(operation: &'r O, timeout_at: Instant, attempt: Pin<&'r mut F>) -> Self {
        Race {
            attempt,
            operation,
            listener: None,
            timer: None,
            timeout_at,
        }
    }
}

impl<F: Future, O: Racer> Future for Race<'_, F, O> {
    type Output = Raced<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // Bounded: a pass ends in a result or `Pending`, unless the timer fired before
        // `timeout_at`; then the future is polled again and a new timer made.
        loop {
            if let Poll::Ready(output) = this.attempt.as_mut().poll(cx) {
                return Poll::Ready(Raced::Done(output));
            }
            if let Some(abort) = this.operation.abort() {
                // The flag is checked after the listener is made, and again after it is
                // heard: nothing that happened before it was made is missed. Bounded: a
                // listener is heard only after the flag was set.
                loop {
                    if abort.is_aborted() {
                        return Poll::Ready(Raced::Aborted);
                    }
                    match &mut this.listener {
                        None => this.listener = Some(abort.listen()),
                        Some(listener) => {
                            if Pin::new(listener).poll(cx).is_pending() {
                                break;
                            }
                            this.listener = None;
                        }
                    }
                }
            }
            let (runtime, timeout_at) = (this.operation.runtime(), this.timeout_at);
            let sleep = this
                .timer
                .get_or_insert_with(|| runtime.timeout_at(timeout_at));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if runtime.now() >= timeout_at {
                return Poll::Ready(Raced::TimedOut);
            }
            this.timer = None;
        }
    }
}
