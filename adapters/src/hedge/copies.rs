//! The copies of a hedged operation in flight, by index (copy `n` at `n - 1`).
//!
//! Rule: a copy in flight is polled inside its span until it ends, is cancelled (dropped, which
//! cancels its request) or times out. The first copy is held in place, pinned where the
//! operation's future is: an operation that never sends a second copy (the usual hedged
//! success) allocates nothing for its copies. A later copy is boxed, in a list made when the
//! second copy is sent.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use backstop_core::Instant;

use crate::observe::spans::AttemptSpan;

/// What the loop keeps of a copy beside its future: its span, when it was sent and its timeout.
pub(super) struct SentCopy {
    pub(super) span: AttemptSpan,
    pub(super) at: Instant,
    pub(super) timeout: Duration,
}

impl SentCopy {
    /// When the loop's timer ends the copy.
    fn timeout_at(&self) -> Instant {
        self.at.saturating_add(self.timeout)
    }
}

/// A later copy in flight.
struct Later<Fut> {
    future: Pin<Box<Fut>>,
    sent: SentCopy,
}

pin_project_lite::pin_project! {
    /// The copies in flight.
    pub(super) struct Copies<Fut> {
        #[pin]
        first: Option<Fut>,
        first_sent: Option<SentCopy>,
        // Copy `n` (from 2) at `n - 2`.
        later: Vec<Option<Later<Fut>>>,
    }
}

impl<Fut: Future> Copies<Fut> {
    /// None in flight.
    pub(super) fn new() -> Self {
        Copies {
            first: None,
            first_sent: None,
            later: Vec::new(),
        }
    }

    /// Copy `index + 1`, sent with `sent`, is in flight as `future`.
    pub(super) fn put(self: Pin<&mut Self>, index: usize, future: Fut, sent: SentCopy) {
        let mut this = self.project();
        let Some(later) = index.checked_sub(1) else {
            this.first.set(Some(future));
            *this.first_sent = Some(sent);
            return;
        };
        if this.later.len() <= later {
            this.later.resize_with(later + 1, || None);
        }
        this.later[later] = Some(Later {
            future: Box::pin(future),
            sent,
        });
    }

    /// Takes copy `index + 1` out (its future is dropped, which cancels its request if it is
    /// still in flight): what was kept of it, if it was in flight.
    pub(super) fn take(self: Pin<&mut Self>, index: usize) -> Option<SentCopy> {
        let mut this = self.project();
        let Some(later) = index.checked_sub(1) else {
            this.first.set(None);
            return this.first_sent.take();
        };
        let taken = this.later.get_mut(later)?.take()?;
        Some(taken.sent)
    }

    /// Takes out the first copy (by index) whose timeout has come by `now`: its index and what
    /// was kept of it (its future is dropped).
    pub(super) fn take_timed_out(
        mut self: Pin<&mut Self>,
        now: Instant,
    ) -> Option<(usize, SentCopy)> {
        let this = self.as_mut().project();
        let first = this.first_sent.as_ref().filter(|s| s.timeout_at() <= now);
        let index = if first.is_some() {
            0
        } else {
            let later = this
                .later
                .iter()
                .position(|c| c.as_ref().is_some_and(|c| c.sent.timeout_at() <= now))?;
            later + 1
        };
        let sent = self.take(index)?;
        Some((index, sent))
    }
}

impl<Fut: Future> Future for Copies<Fut> {
    type Output = (usize, Fut::Output);

    /// Polls every copy in flight, each inside its span, in order: the first that ends, by
    /// index, with its output. Never ready with none in flight (the loop races the copies
    /// only while some are).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(usize, Fut::Output)> {
        let this = self.project();
        if let (Some(future), Some(sent)) = (this.first.as_pin_mut(), this.first_sent.as_ref()) {
            if let Poll::Ready(output) = sent.span.poll_in(future, cx) {
                return Poll::Ready((0, output));
            }
        }
        for (i, copy) in this.later.iter_mut().enumerate() {
            if let Some(copy) = copy {
                if let Poll::Ready(output) = copy.sent.span.poll_in(copy.future.as_mut(), cx) {
                    return Poll::Ready((i + 1, output));
                }
            }
        }
        Poll::Pending
    }
}
