//! The resumable streaming body: a response's body that resumes by itself after a failure.
//!
//! Rule (RFC 9110 §14 and §13.1.5): after a cut, a stall past the idle timeout, or an end
//! short of the declared length, the body asks for the rest, `Range: bytes=N-` where N is the
//! number of bytes already handed to the caller, with `If-Range` carrying the first response's
//! strong validator; it goes on only with a `206` exactly at N with the same complete length,
//! validator and coding ([`Resumption::answer`](backstop_core::Resumption::answer)). Each
//! resume is an attempt of the same operation ([`Resumer`]): the same count, budget,
//! deadline, gate and limiter, and the same abort. Anything else ends the body with a
//! [`BodyError`]: two representations are never spliced.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use backstop_core::{ErrorKind, Resumption};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::body::resumer::{BoxError, Carried, Resumer, Step};
use crate::body::BodyError;
use crate::runtime::{Runtime, Sleep};

/// A response to a resume, as the front door's client gave it.
pub(crate) type Refetched<B, E> =
    Pin<Box<dyn Future<Output = Result<http::Response<B>, E>> + Send>>;

/// How a front door sends a resume: its client, kept by the body.
pub(crate) trait Refetch: Send + 'static {
    /// The body of a response.
    type Body: Body<Data = Bytes, Error: Into<BoxError>> + Send + Unpin + 'static;
    /// The client's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Sends the operation's request again with `range` and `if_range` (attempt `attempt`).
    fn refetch(
        &mut self,
        range: http::HeaderValue,
        if_range: http::HeaderValue,
        attempt: u32,
    ) -> Refetched<Self::Body, Self::Error>;

    /// The kind of the client's error.
    fn error_kind(&self, error: &Self::Error) -> ErrorKind;
}

/// The streaming body that resumes itself (see the module docs).
pub(crate) struct ResumableBody<F: Refetch, RT> {
    fetch: F,
    runtime: RT,
    resumer: Resumer,
    /// Resolves when the abort fires: every state polls it first.
    aborted: Option<Sleep>,
    /// The longest the body may go without a byte.
    idle: Duration,
    state: State<F::Body, F::Error>,
}

enum State<B, E> {
    /// Reading `body`; `idle` fires at the earliest when the body has been silent for the
    /// idle timeout since `last`, the last byte (re-armed then, not at every byte).
    Streaming {
        body: B,
        idle: Sleep,
        last: backstop_core::Instant,
    },
    Sending {
        call: Refetched<B, E>,
        timer: Sleep,
    },
    Waiting {
        timer: Sleep,
    },
    Done,
}

// Nothing in the body is pinned in place: the futures it polls are boxed, and the response
// bodies it reads are `Unpin`.
impl<F: Refetch, RT> Unpin for ResumableBody<F, RT> {}

impl<F: Refetch, RT: Runtime> ResumableBody<F, RT> {
    /// `body`, the body of the `status` response the operation `carried` returned, resumable
    /// as `resumption` says, through `fetch`, with at most `idle` between two bytes.
    pub(crate) fn new(
        body: F::Body,
        (resumption, status): (Resumption, u16),
        fetch: F,
        runtime: RT,
        carried: Carried,
        idle: Duration,
    ) -> Self {
        let now = runtime.now();
        let aborted = carried.abort.clone().map(|abort| {
            let aborted: Sleep = Box::pin(async move { abort.aborted().await });
            aborted
        });
        let idle_timer = runtime.sleep_until(now.saturating_add(idle));
        ResumableBody {
            fetch,
            resumer: Resumer::new(carried, resumption, status, now),
            aborted,
            idle,
            state: State::Streaming {
                body,
                idle: idle_timer,
                last: now,
            },
            runtime,
        }
    }

    /// Acts on `step`, with the answer's body when it is to be streamed: `Err` ends the body.
    fn act(&mut self, step: Step, answer: Option<F::Body>) -> Result<(), BodyError> {
        let now = self.runtime.now();
        self.state = match step {
            Step::Send {
                attempt,
                timeout,
                range,
                if_range,
            } => State::Sending {
                call: self.fetch.refetch(range, if_range, attempt),
                timer: self.runtime.timeout_at(now.saturating_add(timeout)),
            },
            Step::Wait(until) => State::Waiting {
                timer: self.runtime.sleep_until(until),
            },
            Step::Stream => match answer {
                Some(body) => State::Streaming {
                    body,
                    idle: self.runtime.sleep_until(now.saturating_add(self.idle)),
                    last: now,
                },
                None => State::Done,
            },
            Step::Complete => State::Done,
            Step::Fail(e) => {
                self.state = State::Done;
                return Err(e);
            }
        };
        Ok(())
    }
}

impl<F: Refetch, RT: Runtime> Body for ResumableBody<F, RT> {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        // An abort ends the body wherever it waits (registered with this task's waker).
        let fired = this
            .aborted
            .as_mut()
            .is_some_and(|aborted| aborted.as_mut().poll(cx).is_ready());
        if fired && !matches!(this.state, State::Done) {
            this.state = State::Done;
            this.aborted = None;
            let e = this.resumer.aborted(this.runtime.now());
            return Poll::Ready(Some(Err(e)));
        }
        // Bounded: each pass moves to another state, and the machine bounds the attempts.
        loop {
            let now = this.runtime.now();
            let (step, answer) = match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Streaming { body, idle, last } => match Pin::new(body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        if let Some(data) = frame.data_ref() {
                            this.resumer.handed_over(data.len());
                            *last = now;
                        }
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Poll::Ready(Some(Err(e))) => (
                        this.resumer.failed(now, ErrorKind::BodyCut, Some(e.into())),
                        None,
                    ),
                    Poll::Ready(None) => (this.resumer.ended(now), None),
                    Poll::Pending => match idle.as_mut().poll(cx) {
                        // Bytes came since it was armed: armed again from the last one.
                        Poll::Ready(()) if now < last.saturating_add(this.idle) => {
                            *idle = this.runtime.sleep_until(last.saturating_add(this.idle));
                            continue;
                        }
                        Poll::Ready(()) => {
                            (this.resumer.failed(now, ErrorKind::BodyStalled, None), None)
                        }
                        Poll::Pending => return Poll::Pending,
                    },
                },
                State::Sending { call, timer } => match call.as_mut().poll(cx) {
                    Poll::Ready(Ok(response)) => {
                        let (head, body) = response.into_parts();
                        let step = this.resumer.answered(now, head.status, &head.headers);
                        (step, Some(body))
                    }
                    Poll::Ready(Err(e)) => {
                        let kind = this.fetch.error_kind(&e);
                        (this.resumer.error(now, kind, Box::new(e)), None)
                    }
                    Poll::Pending => match timer.as_mut().poll(cx) {
                        Poll::Ready(()) => (this.resumer.timed_out(now), None),
                        Poll::Pending => return Poll::Pending,
                    },
                },
                State::Waiting { timer } => match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => (this.resumer.woke(now), None),
                    Poll::Pending => return Poll::Pending,
                },
            };
            if let Err(e) = this.act(step, answer) {
                return Poll::Ready(Some(Err(e)));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.resumer.remaining() {
            Some(left) => SizeHint::with_exact(left),
            None => SizeHint::default(),
        }
    }
}
