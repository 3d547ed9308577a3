//! The operation carried into a resumable body: its machine, what was handed over, and the
//! decisions that follow a failure. Written once for the async body (reqwest, tower) and the
//! blocking one (ureq); each acts on the [`Step`]s in its own way.

use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, BodyEnd, Decision, ErrorKind, Event, Instant, Policy,
    Representation, ResumeAnswer, Resumption, RetryMachine, StopReason,
};

use crate::abort::Abort;
use crate::body::BodyError;
use crate::observe::events::EventKind;
use crate::observe::spans::{AttemptSpan, OperationSpan};
use crate::observe::Emitter;
use crate::overload::{OwnedLimiter, SharedGate};
use crate::request::Plan;
use crate::retrier::{LazyRng, Retrier, SharedBudget};
use crate::run::classified;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The operation's machine, owned by the body.
type Machine = RetryMachine<LazyRng, SharedBudget, SharedGate, OwnedLimiter, Policy>;

/// What the body needs of the operation to go on with it.
pub(crate) struct Carried {
    /// The retrier (its budget, gates, limiter, classification and observers).
    pub(crate) retrier: Retrier,
    /// The policy in force (the request's own, else the retrier's).
    pub(crate) policy: Policy,
    /// The request's facts (method, key).
    pub(crate) request: backstop_core::Request,
    /// The request's URI, for its origin's gate.
    pub(crate) uri: http::Uri,
    /// The operation's start.
    pub(crate) started: Instant,
    /// Attempts so far.
    pub(crate) attempts: u32,
    /// The operation's abort.
    pub(crate) abort: Option<Abort>,
    /// The operation as its events show it (name, method, URI).
    pub(crate) plan: Plan,
}

/// What the body does next.
pub(crate) enum Step {
    /// Send attempt `attempt` with these `Range` and `If-Range`, within `timeout`.
    Send {
        #[cfg_attr(not(any(feature = "reqwest", feature = "tower")), allow(dead_code))]
        attempt: u32,
        timeout: Duration,
        range: http::HeaderValue,
        if_range: http::HeaderValue,
    },
    /// Wait until this instant, then call [`Resumer::woke`].
    Wait(Instant),
    /// Stream the answer's body (from the bytes handed over).
    Stream,
    /// The body is whole.
    Complete,
    /// The body ends with this error.
    Fail(BodyError),
}

/// The operation carried into a resumable body (see the module docs).
pub(crate) struct Resumer {
    retrier: Retrier,
    plan: Plan,
    machine: Box<Machine>,
    resumption: Resumption,
    abort: Option<Abort>,
    /// Bytes handed to the caller.
    delivered: u64,
    /// Bytes handed over when the current attempt began.
    since: u64,
    /// When the attempt in flight was sent.
    sent: Instant,
    /// Why the body's last attempt failed (for the error, if the machine gives up).
    cause: ErrorKind,
    source: Option<BoxError>,
    /// The span of the operation carried on in the body (made at its first resume, when it is
    /// reported), and the span of the resume in flight.
    spans: Option<Box<(OperationSpan, AttemptSpan)>>,
}

impl Resumer {
    /// The operation of `carried`, which returned a `status` response at `now` whose body may
    /// be resumed as `resumption` says.
    pub(crate) fn new(carried: Carried, resumption: Resumption, status: u16, now: Instant) -> Self {
        let gates = carried.retrier.gates.as_deref();
        let origin = gates.and_then(|g| g.find_uri(&carried.uri));
        let machine = RetryMachine::with_overload(
            carried.policy,
            carried.request,
            carried.retrier.next_rng(),
            carried.retrier.budget.clone(),
            SharedGate::of(gates, origin, carried.started),
            OwnedLimiter(carried.retrier.limiter.clone()),
            carried.started,
        )
        .returned_at(carried.attempts, status, now);
        Resumer {
            retrier: carried.retrier,
            plan: carried.plan,
            machine: Box::new(machine),
            resumption,
            abort: carried.abort,
            delivered: 0,
            since: 0,
            sent: now,
            cause: ErrorKind::BodyCut,
            source: None,
            spans: None,
        }
    }

    /// `n` more bytes were handed to the caller.
    pub(crate) fn handed_over(&mut self, n: usize) {
        self.delivered = self.delivered.saturating_add(n as u64);
    }

    /// The body's length still to come, when it is known.
    #[cfg_attr(not(any(feature = "reqwest", feature = "tower")), allow(dead_code))]
    pub(crate) fn remaining(&self) -> Option<u64> {
        self.resumption
            .length()
            .map(|length| length.saturating_sub(self.delivered))
    }

    /// The body failed at `now` with `kind` (and the client's `source`).
    pub(crate) fn failed(
        &mut self,
        now: Instant,
        kind: ErrorKind,
        source: Option<BoxError>,
    ) -> Step {
        let error = match &source {
            Some(e) => classified(&self.retrier, kind, &**e),
            None => AttemptError::new(kind),
        };
        (self.cause, self.source) = (kind, source);
        let progressed = self.delivered > self.since;
        if self.machine.body_failed(now, error, progressed).is_err() {
            return self.fail(kind);
        }
        self.next(now)
    }

    /// The body ended cleanly at `now`: whole, or cut short of its declared length.
    pub(crate) fn ended(&mut self, now: Instant) -> Step {
        match self.resumption.ended(self.delivered) {
            BodyEnd::Complete | BodyEnd::Undeclared => Step::Complete,
            BodyEnd::Truncated { .. } => self.failed(now, ErrorKind::BodyCut, None),
            _ => self.fail(ErrorKind::BodyChanged),
        }
    }

    /// The resume in flight failed at `now` with the client's `error` of `kind`.
    pub(crate) fn error(&mut self, now: Instant, kind: ErrorKind, error: BoxError) -> Step {
        let attempt = classified(&self.retrier, kind, &*error);
        let _ = self.machine.handle(now, Event::Error(attempt));
        self.attempt_ended(now, AttemptOutcome::Error(attempt));
        (self.cause, self.source) = (kind, Some(error));
        self.next(now)
    }

    /// The resume in flight ran out of time at `now` (the async body's timer; a blocking
    /// client's own timeout is its error).
    #[cfg_attr(not(any(feature = "reqwest", feature = "tower")), allow(dead_code))]
    pub(crate) fn timed_out(&mut self, now: Instant) -> Step {
        let error = AttemptError::new(ErrorKind::Timeout);
        let _ = self.machine.handle(now, Event::Error(error));
        self.attempt_ended(now, AttemptOutcome::Error(error));
        (self.cause, self.source) = (ErrorKind::Timeout, None);
        self.next(now)
    }

    /// The wait before the next resume ended at `now`.
    pub(crate) fn woke(&mut self, now: Instant) -> Step {
        self.next(now)
    }

    /// The abort fired: the body ends.
    pub(crate) fn aborted(&mut self, now: Instant) -> BodyError {
        let _ = self.machine.handle(now, Event::Abort);
        BodyError::ended(ErrorKind::Aborted, self.delivered, None)
    }

    /// The answer, at `now`, to the resume in flight: `status` and `headers`.
    pub(crate) fn answered(
        &mut self,
        now: Instant,
        status: http::StatusCode,
        headers: &http::HeaderMap,
    ) -> Step {
        let shown = representation(status, headers);
        let answer = self.resumption.answer(self.delivered, &shown);
        let mut facts =
            backstop_core::Response::new(status.as_u16()).retry_after_from_http(headers);
        if facts.retry_after.is_some() {
            facts = facts.wall_clock(self.retrier.wall_clock.now());
        }
        let _ = self.machine.handle(now, Event::Response(facts));
        self.attempt_ended(now, AttemptOutcome::Response(status.as_u16()));
        match answer {
            ResumeAnswer::Part { .. } | ResumeAnswer::Restart => Step::Stream,
            ResumeAnswer::Complete => Step::Complete,
            ResumeAnswer::Changed | ResumeAnswer::Mismatch(_) => self.fail(ErrorKind::BodyChanged),
            // Another status: the machine decides (a 503 is retried, a 404 ends the body).
            _ => self.next(now),
        }
    }

    /// Acts on the machine's next decision at `now`.
    fn next(&mut self, now: Instant) -> Step {
        if self.abort.as_ref().is_some_and(Abort::is_aborted) {
            let _ = self.machine.handle(now, Event::Abort);
        }
        match self.machine.poll(now) {
            Decision::Send {
                attempt, timeout, ..
            } => {
                let range = http::HeaderValue::from_str(&format!("bytes={}-", self.delivered));
                let if_range = http::HeaderValue::from_bytes(self.resumption.if_range());
                let (Ok(range), Ok(if_range)) = (range, if_range) else {
                    return self.fail(self.cause);
                };
                let _ = self.machine.handle(now, Event::AttemptStarted);
                self.emit(EventKind::BodyResumed {
                    attempt,
                    offset: self.delivered,
                    cause: self.cause,
                    elapsed: now.saturating_duration_since(self.machine.started()),
                });
                self.sent = now;
                self.since = self.delivered;
                self.open_span(attempt);
                Step::Send {
                    attempt,
                    timeout,
                    range,
                    if_range,
                }
            }
            Decision::Wait { until, .. } => Step::Wait(until),
            _ => {
                let outcome = self.machine.outcome();
                let kind = match outcome {
                    Some(o) if o.reason == StopReason::Aborted => ErrorKind::Aborted,
                    Some(o) => match o.last {
                        Some(AttemptOutcome::Error(e)) => e.kind,
                        _ => self.cause,
                    },
                    None => self.cause,
                };
                self.fail(kind)
            }
        }
    }

    /// The body ends with `kind`, the last failure's source with it.
    fn fail(&mut self, kind: ErrorKind) -> Step {
        Step::Fail(BodyError::ended(kind, self.delivered, self.source.take()))
    }

    /// Tells the retrier's observers (and `tracing`, and the metrics) of `kind`.
    fn emit(&self, kind: EventKind) {
        let observers = &self.retrier.observers;
        Emitter::new(observers, self.retrier.metrics.as_ref(), &self.plan).emit(kind);
    }

    /// Opens the span of resume `attempt` (with its `http.request.resend_count`), under the
    /// span of the operation carried on in the body, when the operation is reported.
    fn open_span(&mut self, attempt: u32) {
        if !crate::observe::reported(&self.retrier.observers) {
            return;
        }
        let plan = &self.plan;
        let (name, method) = (
            plan.name.as_ref().map(crate::OperationName::as_str),
            &plan.method,
        );
        let spans = self.spans.get_or_insert_with(|| {
            let operation = OperationSpan::new(name, method, plan.target(), None);
            Box::new((operation, AttemptSpan::default()))
        });
        let url = crate::observe::RedactedUri::of(plan.target());
        spans.1 = spans.0.attempt(attempt, method, url, None);
    }

    /// Reports the end of the resume sent at `self.sent`, at `now`, with `result`.
    fn attempt_ended(&mut self, now: Instant, result: AttemptOutcome) {
        if let Some(spans) = self.spans.as_mut() {
            spans.1.ended(&result);
            spans.1 = AttemptSpan::default();
        }
        self.emit(EventKind::AttemptEnded {
            attempt: self.machine.attempts(),
            result,
            took: now.saturating_duration_since(self.sent),
            elapsed: now.saturating_duration_since(self.machine.started()),
        });
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

/// Whether the body of the response `head` may be resumed (`decoded`: the client counts
/// decoded bytes): a `200` with a strong validator and a declared length.
pub(crate) fn resumption_of(
    status: http::StatusCode,
    headers: &http::HeaderMap,
    decoded: bool,
) -> Option<Resumption> {
    // Without a declared length, a clean end cannot be told from a cut (and a client that
    // decodes the body drops the length of the coded one it received).
    crate::body::declared_length(headers)?;
    let counted = if decoded {
        backstop_core::Counted::Decoded
    } else {
        backstop_core::Counted::AsSent
    };
    Resumption::of(&representation(status, headers), counted).ok()
}
