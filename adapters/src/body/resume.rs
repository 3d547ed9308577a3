//! The resumable streaming body: a response's body that resumes by itself after a failure.
//!
//! Rule (RFC 9110 §14 and §13.1.5): after a cut, a stall past the idle timeout, or an end
//! short of the declared length, the body asks for the rest, `Range: bytes=N-` where N is the
//! number of bytes already handed to the caller, with `If-Range` carrying the first response's
//! strong validator; it goes on only with a `206` exactly at N with the same complete length,
//! validator and coding ([`Resumption::answer`]). Each resume is an attempt of the same
//! operation, on a machine carried to where the operation returned
//! ([`RetryMachine::returned_at`]): the same count, budget, deadline, gate and limiter, and
//! the same abort. Anything else ends the body with a [`BodyError`]: two representations are
//! never spliced.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, BodyEnd, Decision, ErrorKind, Event, Instant, Policy,
    Representation, ResumeAnswer, Resumption, RetryMachine,
};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::abort::Abort;
use crate::body::BodyError;
use crate::observe::events::EventKind;
use crate::observe::Emitter;
use crate::overload::{OwnedLimiter, SharedGate};
use crate::request::Plan;
use crate::retrier::{LazyRng, Retrier, SharedBudget};
use crate::run::classified;
use crate::runtime::{Runtime, Sleep};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

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

/// The operation's machine, owned by the body.
type Machine = RetryMachine<LazyRng, SharedBudget, SharedGate, OwnedLimiter, Policy>;

/// What the body needs of the operation to go on with it.
pub(crate) struct Carried {
    /// The retrier (its budget, gates, limiter and classification).
    pub(crate) retrier: Retrier,
    /// The policy in force (the request's own, else the retrier's).
    pub(crate) policy: Policy,
    /// The request's facts (method, key).
    pub(crate) request: backstop_core::Request,
    /// The request's URI, for its origin's gate.
    pub(crate) uri: http::Uri,
    /// The operation's start, attempts so far, and the abort.
    pub(crate) started: Instant,
    pub(crate) attempts: u32,
    pub(crate) abort: Option<Abort>,
    /// The longest a body may go without a byte.
    pub(crate) idle: Duration,
    /// The operation as its events show it (name, method, URI).
    pub(crate) plan: Plan,
}

/// The streaming body that resumes itself (see the module docs).
pub(crate) struct ResumableBody<F: Refetch, RT> {
    fetch: F,
    runtime: RT,
    retrier: Retrier,
    /// The operation as its events show it.
    plan: Plan,
    /// When the attempt in flight was sent.
    sent: Instant,
    machine: Box<Machine>,
    resumption: Resumption,
    abort: Option<Abort>,
    /// Resolves when the abort fires: every state that waits polls it too.
    aborted: Option<Sleep>,
    idle: Duration,
    /// Bytes handed to the caller.
    delivered: u64,
    /// Bytes handed over when the current attempt began.
    since: u64,
    state: State<F::Body, F::Error>,
}

enum State<B, E> {
    Streaming { body: B, idle: Sleep },
    Sending { call: Refetched<B, E>, timer: Sleep },
    Waiting { timer: Sleep },
    Done,
}

impl<F: Refetch, RT: Runtime> ResumableBody<F, RT> {
    /// `body`, the body of the response `head` the operation returned, resumable as `resumption`
    /// says, through `fetch`.
    pub(crate) fn new(
        body: F::Body,
        resumption: Resumption,
        fetch: F,
        runtime: RT,
        carried: Carried,
        status: u16,
    ) -> Self {
        let now = runtime.now();
        let gate = SharedGate::of(
            carried.retrier.gates.as_deref(),
            carried
                .retrier
                .gates
                .as_deref()
                .and_then(|g| g.find_uri(&carried.uri)),
            carried.started,
        );
        let machine = RetryMachine::with_overload(
            carried.policy,
            carried.request,
            carried.retrier.next_rng(),
            carried.retrier.budget.clone(),
            gate,
            OwnedLimiter(carried.retrier.limiter.clone()),
            carried.started,
        )
        .returned_at(carried.attempts, status, now);
        let idle = runtime.sleep_until(now.saturating_add(carried.idle));
        ResumableBody {
            fetch,
            retrier: carried.retrier,
            plan: carried.plan,
            sent: now,
            machine: Box::new(machine),
            resumption,
            aborted: carried.abort.clone().map(|abort| {
                let aborted: Sleep = Box::pin(async move { abort.aborted().await });
                aborted
            }),
            abort: carried.abort,
            idle: carried.idle,
            delivered: 0,
            since: 0,
            state: State::Streaming { body, idle },
            runtime,
        }
    }

    /// The operation goes on after the body failed with `kind` (and `source`): the next
    /// step, or the body's error.
    fn failed(&mut self, kind: ErrorKind, source: Option<BoxError>) -> Result<(), BodyError> {
        let now = self.runtime.now();
        let error = match &source {
            Some(e) => classified(&self.retrier, kind, &**e),
            None => AttemptError::new(kind),
        };
        let progressed = self.delivered > self.since;
        if self.machine.body_failed(now, error, progressed).is_err() {
            return Err(BodyError::ended(kind, self.delivered, source));
        }
        self.next(now, kind, source)
    }

    /// Acts on the machine's next decision at `now`; `kind` and `source` are the failure the
    /// body ends with if the machine gives up.
    fn next(
        &mut self,
        now: Instant,
        kind: ErrorKind,
        source: Option<BoxError>,
    ) -> Result<(), BodyError> {
        if self.abort.as_ref().is_some_and(Abort::is_aborted) {
            let _ = self.machine.handle(now, Event::Abort);
        }
        match self.machine.poll(now) {
            Decision::Send {
                attempt, timeout, ..
            } => {
                let _ = self.machine.handle(now, Event::AttemptStarted);
                self.emit(EventKind::BodyResumed {
                    attempt,
                    offset: self.delivered,
                    cause: kind,
                    elapsed: now.saturating_duration_since(self.machine.started()),
                });
                self.sent = now;
                self.since = self.delivered;
                let range = http::HeaderValue::from_str(&format!("bytes={}-", self.delivered));
                let if_range = http::HeaderValue::from_bytes(self.resumption.if_range());
                let (Ok(range), Ok(if_range)) = (range, if_range) else {
                    return Err(BodyError::ended(kind, self.delivered, source));
                };
                let call = self.fetch.refetch(range, if_range, attempt);
                let timer = self.runtime.timeout_at(now.saturating_add(timeout));
                self.state = State::Sending { call, timer };
                Ok(())
            }
            Decision::Wait { until, .. } => {
                self.state = State::Waiting {
                    timer: self.runtime.sleep_until(until),
                };
                Ok(())
            }
            Decision::Return(_) | Decision::GiveUp(_) => {
                self.state = State::Done;
                let kind = match self.machine.outcome().and_then(|o| o.last) {
                    Some(backstop_core::AttemptOutcome::Error(e)) => e.kind,
                    _ => kind,
                };
                let kind = if self
                    .machine
                    .outcome()
                    .is_some_and(|o| o.reason == backstop_core::StopReason::Aborted)
                {
                    ErrorKind::Aborted
                } else {
                    kind
                };
                Err(BodyError::ended(kind, self.delivered, source))
            }
            _ => Err(BodyError::ended(kind, self.delivered, source)),
        }
    }

    /// Tells the retrier's observers (and `tracing`, and the metrics) of `kind`.
    fn emit(&self, kind: EventKind) {
        let observers = &self.retrier.observers;
        Emitter::new(observers, self.retrier.metrics.as_ref(), &self.plan).emit(kind);
    }

    /// Reports the end of the resume sent at `self.sent`, at `now`, with `result`.
    fn attempt_ended(&self, now: Instant, result: AttemptOutcome) {
        self.emit(EventKind::AttemptEnded {
            attempt: self.machine.attempts(),
            result,
            took: now.saturating_duration_since(self.sent),
            elapsed: now.saturating_duration_since(self.machine.started()),
        });
    }

    /// The answer to a resume: streaming again, or the next step, or the body's error.
    fn answered(&mut self, response: http::Response<F::Body>) -> Result<(), BodyError> {
        let now = self.runtime.now();
        let shown = representation(response.status(), response.headers());
        let answer = self.resumption.answer(self.delivered, &shown);
        let facts = response_facts_of(&self.retrier, &response);
        let _ = self.machine.handle(now, Event::Response(facts));
        self.attempt_ended(now, AttemptOutcome::Response(response.status().as_u16()));
        match answer {
            ResumeAnswer::Part { .. } | ResumeAnswer::Restart => {
                let (_, body) = response.into_parts();
                let idle = self.runtime.sleep_until(now.saturating_add(self.idle));
                self.state = State::Streaming { body, idle };
                Ok(())
            }
            ResumeAnswer::Complete => {
                self.state = State::Done;
                Ok(())
            }
            ResumeAnswer::Changed | ResumeAnswer::Mismatch(_) => {
                self.state = State::Done;
                Err(BodyError::ended(
                    ErrorKind::BodyChanged,
                    self.delivered,
                    None,
                ))
            }
            // Another status: the machine decides (a 503 is retried, a 404 ends it).
            _ => self.next(now, ErrorKind::BodyCut, None),
        }
    }
}

/// The facts of a resume's answer that bear on a retry: its status and `Retry-After` (the
/// wall clock for an HTTP-date).
fn response_facts_of<'r, B>(
    retrier: &Retrier,
    response: &'r http::Response<B>,
) -> backstop_core::Response<'r> {
    let facts = backstop_core::Response::new(response.status().as_u16())
        .retry_after_from_http(response.headers());
    if facts.retry_after.is_some() {
        facts.wall_clock(retrier.wall_clock.now())
    } else {
        facts
    }
}

/// What `headers` (of a response with `status`) say of its representation.
fn representation(status: http::StatusCode, headers: &http::HeaderMap) -> Representation<'_> {
    let field = |name: http::header::HeaderName| headers.get(name).map(http::HeaderValue::as_bytes);
    let mut shown = Representation::new(status.as_u16());
    shown.content_length = field(http::header::CONTENT_LENGTH);
    shown.content_range = field(http::header::CONTENT_RANGE);
    shown.content_type = field(http::header::CONTENT_TYPE);
    shown.content_encoding = field(http::header::CONTENT_ENCODING);
    shown.etag = field(http::header::ETAG);
    shown.last_modified = field(http::header::LAST_MODIFIED);
    shown.date = field(http::header::DATE);
    shown.accept_ranges = field(http::header::ACCEPT_RANGES);
    shown
}

// Nothing in the body is pinned in place: the futures it polls are boxed, and the response
// bodies it reads are `Unpin`.
impl<F: Refetch, RT> Unpin for ResumableBody<F, RT> {}

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
            let now = this.runtime.now();
            let _ = this.machine.handle(now, Event::Abort);
            this.state = State::Done;
            this.aborted = None;
            let e = BodyError::ended(ErrorKind::Aborted, this.delivered, None);
            return Poll::Ready(Some(Err(e)));
        }
        // Bounded: each pass changes the state, and the machine bounds the attempts.
        loop {
            let step = match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Streaming { body, idle } => match Pin::new(body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        if let Some(data) = frame.data_ref() {
                            this.delivered = this.delivered.saturating_add(data.len() as u64);
                            let next = this.runtime.now().saturating_add(this.idle);
                            *idle = this.runtime.sleep_until(next);
                        }
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Poll::Ready(Some(Err(e))) => this.failed(ErrorKind::BodyCut, Some(e.into())),
                    Poll::Ready(None) => match this.resumption.ended(this.delivered) {
                        BodyEnd::Complete | BodyEnd::Undeclared => {
                            this.state = State::Done;
                            return Poll::Ready(None);
                        }
                        BodyEnd::Truncated { .. } => this.failed(ErrorKind::BodyCut, None),
                        _ => {
                            this.state = State::Done;
                            Err(BodyError::ended(
                                ErrorKind::BodyChanged,
                                this.delivered,
                                None,
                            ))
                        }
                    },
                    Poll::Pending => match idle.as_mut().poll(cx) {
                        Poll::Ready(()) => this.failed(ErrorKind::BodyStalled, None),
                        Poll::Pending => return Poll::Pending,
                    },
                },
                State::Sending { call, timer } => match call.as_mut().poll(cx) {
                    Poll::Ready(Ok(response)) => this.answered(response),
                    Poll::Ready(Err(e)) => {
                        let now = this.runtime.now();
                        let kind = this.fetch.error_kind(&e);
                        let error = classified(&this.retrier, kind, &e);
                        let _ = this.machine.handle(now, Event::Error(error));
                        this.attempt_ended(now, AttemptOutcome::Error(error));
                        this.next(now, kind, Some(Box::new(e)))
                    }
                    Poll::Pending => match timer.as_mut().poll(cx) {
                        Poll::Ready(()) => {
                            let now = this.runtime.now();
                            let error = AttemptError::new(ErrorKind::Timeout);
                            let _ = this.machine.handle(now, Event::Error(error));
                            this.attempt_ended(now, AttemptOutcome::Error(error));
                            this.next(now, ErrorKind::Timeout, None)
                        }
                        Poll::Pending => return Poll::Pending,
                    },
                },
                State::Waiting { timer } => match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        let now = this.runtime.now();
                        this.next(now, ErrorKind::BodyCut, None)
                    }
                    Poll::Pending => return Poll::Pending,
                },
            };
            if let Err(e) = step {
                this.state = State::Done;
                return Poll::Ready(Some(Err(e)));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.resumption.length() {
            Some(length) => SizeHint::with_exact(length.saturating_sub(self.delivered)),
            None => SizeHint::default(),
        }
    }
}

/// Whether the body of the response `head` may be resumed (`decoded`: the client counts
/// decoded bytes): a `200` with a strong validator and a declared length.
pub(crate) fn resumption_of(head: &http::response::Parts, decoded: bool) -> Option<Resumption> {
    let shown = representation(head.status, &head.headers);
    // Without a declared length, a clean end cannot be told from a cut (and a client that
    // decodes the body drops the length of the coded one it received).
    crate::body::declared_length(&head.headers)?;
    let counted = if decoded {
        backstop_core::Counted::Decoded
    } else {
        backstop_core::Counted::AsSent
    };
    Resumption::of(&shown, counted).ok()
}
