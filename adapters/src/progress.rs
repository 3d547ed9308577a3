//! How far an attempt got when the loop's own timer ended it: still connecting, or connected.
//!
//! Rule: the same failure gets the same kind on every adapter. A connect that never completes
//! sent nothing ([`ErrorKind::ConnectTimeout`], not sent: retried for any method); an attempt
//! that timed out once connected may have been sent ([`ErrorKind::Timeout`]). Only the client
//! knows which, and a blocking client reports its own connect time-out; an async attempt is cut
//! by the loop's timer, which drops it. So the client says it while the loop polls the attempt:
//! its connector calls [`mark_connecting`] when it starts making a connection for the attempt
//! and [`mark_connected`] once the attempt has one (new or reused), and the loop reads the
//! last word when its timer wins. A client that says nothing gets `Timeout`: it is never taken
//! for one that did not send.

use core::cell::Cell;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicU8, Ordering};
use core::task::{Context, Poll};

use backstop_core::ErrorKind;

/// Where the attempt being polled is, as its client said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Stage {
    /// No attempt is being polled on this thread: a mark goes nowhere.
    Outside = 0,
    /// The client has said nothing.
    Unknown = 1,
    /// A connection is being made for the attempt, and it has none yet.
    Connecting = 2,
    /// The attempt has a connection: from here on it may have been sent.
    Connected = 3,
}

impl Stage {
    fn from_u8(v: u8) -> Stage {
        match v {
            1 => Stage::Unknown,
            2 => Stage::Connecting,
            3 => Stage::Connected,
            _ => Stage::Outside,
        }
    }
}

std::thread_local! {
    /// The stage of the attempt the loop is polling on this thread, `Outside` between polls.
    static CURRENT: Cell<Stage> = const { Cell::new(Stage::Outside) };
}

/// Tells the retry loop that the attempt it is polling is making a connection and has none
/// yet: if the attempt's timeout fires before [`mark_connected`], the attempt is
/// [`ErrorKind::ConnectTimeout`] (never sent) rather than [`ErrorKind::Timeout`].
///
/// Call it from the attempt's future, in the poll that starts the connect (resolving the host,
/// the TCP connect and the TLS handshake all count: nothing of the request is written before
/// they end). Outside a poll of the loop's attempt (a connection a pool finishes in a task of
/// its own) it does nothing. It never undoes [`mark_connected`]: an attempt that had a
/// connection may have been sent.
pub fn mark_connecting() {
    CURRENT.with(|c| {
        if c.get() == Stage::Unknown {
            c.set(Stage::Connecting);
        }
    });
}

/// Tells the retry loop that the attempt it is polling has a connection (new, or reused from a
/// pool): a time-out from here on is [`ErrorKind::Timeout`], maybe sent. Call it in the poll
/// that hands the request to the connection, before any of it is written.
pub fn mark_connected() {
    CURRENT.with(|c| {
        if c.get() != Stage::Outside {
            c.set(Stage::Connected);
        }
    });
}

/// One attempt's stage, kept by the loop between its polls of the attempt. Atomic only so that
/// the loop's future stays `Send` and `Sync`: one task polls it.
#[derive(Debug)]
pub(crate) struct Progress(AtomicU8);

impl Default for Progress {
    fn default() -> Self {
        Progress(AtomicU8::new(Stage::Unknown as u8))
    }
}

impl Progress {
    /// `future`, a new attempt, polled with this as the thread's current stage (reset to
    /// "nothing said").
    pub(crate) fn scope<'a, F: Future>(&'a self, future: Pin<&'a mut F>) -> Scoped<'a, F> {
        self.0.store(Stage::Unknown as u8, Ordering::Relaxed);
        Scoped {
            progress: self,
            future,
        }
    }

    /// The kind of a time-out of the attempt, by what its client said before the timer fired.
    pub(crate) fn timed_out_kind(&self) -> ErrorKind {
        match Stage::from_u8(self.0.load(Ordering::Relaxed)) {
            Stage::Connecting => ErrorKind::ConnectTimeout,
            Stage::Outside | Stage::Unknown | Stage::Connected => ErrorKind::Timeout,
        }
    }
}

/// An attempt's future, each poll of it inside its [`Progress`].
pub(crate) struct Scoped<'a, F> {
    progress: &'a Progress,
    future: Pin<&'a mut F>,
}

impl<F: Future> Future for Scoped<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let stage = Stage::from_u8(self.progress.0.load(Ordering::Relaxed));
        // The guard puts back what it found (another loop's attempt, polled around this one,
        // say) and keeps the stage, also when the poll unwinds.
        // Dropped after the poll (the output goes straight to the caller, not through a local).
        let _restore = Restore {
            progress: self.progress,
            outer: CURRENT.with(|c| c.replace(stage)),
        };
        self.future.as_mut().poll(cx)
    }
}

struct Restore<'a> {
    progress: &'a Progress,
    outer: Stage,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let stage = CURRENT.with(|c| c.replace(self.outer));
        self.progress.0.store(stage as u8, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polled_once(progress: &Progress, marks: impl Fn()) {
        let mut future = core::pin::pin!(core::future::poll_fn(|_| {
            marks();
            Poll::<()>::Pending
        }));
        let mut scoped = core::pin::pin!(progress.scope(future.as_mut()));
        let waker = std::task::Waker::noop();
        let _ = scoped.as_mut().poll(&mut Context::from_waker(waker));
    }

    #[test]
    fn a_time_out_while_connecting_is_a_connect_timeout() {
        let progress = Progress::default();
        polled_once(&progress, mark_connecting);
        assert_eq!(progress.timed_out_kind(), ErrorKind::ConnectTimeout);
    }

    #[test]
    fn a_time_out_once_connected_or_unmarked_is_a_timeout() {
        let progress = Progress::default();
        polled_once(&progress, || {});
        assert_eq!(progress.timed_out_kind(), ErrorKind::Timeout);
        polled_once(&progress, || {
            mark_connecting();
            mark_connected();
            // A later connect (a pool's) does not make a possibly sent attempt unsent.
            mark_connecting();
        });
        assert_eq!(progress.timed_out_kind(), ErrorKind::Timeout);
    }

    #[test]
    fn marks_outside_a_poll_go_nowhere() {
        mark_connecting();
        mark_connected();
        assert_eq!(CURRENT.with(Cell::get), Stage::Outside);
        let progress = Progress::default();
        polled_once(&progress, || {});
        assert_eq!(CURRENT.with(Cell::get), Stage::Outside);
        assert_eq!(progress.timed_out_kind(), ErrorKind::Timeout);
    }
}
