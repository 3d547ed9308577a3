//! One scenario, four front doors: the helper every scenario file uses.
//!
//! Each adapter sends the scenario's [`TestRequest`] as its users would (see
//! [`crate::request`]): ureq's `Client::run` and the tower layer (over hyper-util on tokio, and
//! over `backstop::smol::HttpService` on smol) take an `http::Request` with the abort, name and
//! policy in its extensions; the reqwest middleware takes a reqwest request with them in the
//! middleware's extensions. Every client is new for the run.

use core::time::Duration;

use backstop::runtime::{Runtime, StdRuntime, VirtualTime};
use backstop::smol::SmolRuntime;
use backstop::tokio::TokioRuntime;
use backstop::{ErrorKind, Outcome};
use backstop::{Retrier, RetryError};

use crate::https::Trust;
use crate::middleware;
use crate::request::TestRequest;

/// A front door under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Adapter {
    /// `backstop::ureq` (blocking).
    Ureq,
    /// `backstop::tower`'s layer over `backstop::smol::HttpService`, on smol.
    TowerSmol,
    /// `backstop::tower`'s layer over hyper-util's client, on tokio.
    TowerTokio,
    /// `backstop::reqwest`: a reqwest client with `RetryMiddleware` (reqwest-middleware).
    Reqwest,
}

/// Which clock a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Clock {
    /// The adapter's real clock and timers.
    Real,
    /// [`VirtualTime`] over the adapter's runtime: waits between attempts take no real time,
    /// attempt timeouts stay real.
    Virtual,
    /// [`Clock::Virtual`] started this far ahead of the adapter's clock: the operation runs as
    /// if that long had passed since the runs on the other clocks (for state shared between
    /// operations, such as origin gates, that ages). Not counted in [`Run::skipped`].
    VirtualAhead(Duration),
}

impl Clock {
    /// How far ahead of the adapter's clock a run on this clock starts.
    fn ahead(self) -> Duration {
        match self {
            Clock::VirtualAhead(d) => d,
            Clock::Real | Clock::Virtual => Duration::ZERO,
        }
    }
}

/// Virtual time over `inner`, started `ahead` of its clock.
fn virtual_time_ahead<R: Runtime>(inner: R, ahead: Duration) -> VirtualTime<R> {
    let virtual_time = VirtualTime::new(inner);
    virtual_time.advance(ahead);
    virtual_time
}

/// Runs `scenario` once for each adapter, in the order of [`Adapter::ALL`].
pub fn for_each_adapter(mut scenario: impl FnMut(Adapter)) {
    for adapter in Adapter::ALL {
        scenario(adapter);
    }
}

/// A response the operation returned, its body read to the end.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: http::HeaderMap,
    /// The body, or why reading it failed.
    pub body: Result<Vec<u8>, String>,
    /// How the operation ended.
    pub outcome: Outcome,
    /// What hedging did, when the operation was hedged (the async front doors).
    pub hedged: Option<backstop::HedgeOutcome>,
}

/// An operation that ended without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The caller aborted.
    Aborted(Outcome),
    /// The last attempt timed out.
    TimedOut(Outcome),
    /// Nothing was sent.
    NotSent(Outcome),
    /// The last attempt failed with this kind of error.
    Failed {
        /// The error's kind.
        kind: ErrorKind,
        /// How the operation ended.
        outcome: Outcome,
    },
}

/// What one run of one adapter gave.
#[derive(Debug)]
pub struct Run {
    /// The adapter.
    pub adapter: Adapter,
    /// The response, or why there is none.
    pub result: Result<Answer, Failure>,
    /// Virtual time skipped (zero on the real clock).
    pub skipped: Duration,
    /// Real time the call took.
    pub real: Duration,
}

impl Run {
    /// How the operation ended.
    #[must_use]
    pub fn outcome(&self) -> Outcome {
        match &self.result {
            Ok(a) => a.outcome,
            Err(
                Failure::Aborted(o)
                | Failure::TimedOut(o)
                | Failure::NotSent(o)
                | Failure::Failed { outcome: o, .. },
            ) => *o,
        }
    }

    /// The returned status, if a response was returned.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        self.result.as_ref().ok().map(|a| a.status)
    }

    /// The returned body, if a response was returned and its body read.
    #[must_use]
    pub fn body(&self) -> Option<&[u8]> {
        self.result
            .as_ref()
            .ok()
            .and_then(|a| a.body.as_deref().ok())
    }
}

impl Adapter {
    /// All four front doors.
    pub const ALL: [Adapter; 4] = [
        Adapter::Ureq,
        Adapter::TowerSmol,
        Adapter::TowerTokio,
        Adapter::Reqwest,
    ];

    /// Whether the adapter calls a [`TestRequest::body_factory`] once per attempt: the tower
    /// layer does (a `ReplayBody`); ureq and reqwest clone the bytes the factory made once.
    #[must_use]
    pub fn calls_the_body_factory_per_attempt(self) -> bool {
        matches!(self, Adapter::TowerSmol | Adapter::TowerTokio)
    }

    /// Runs one operation through a new client of the adapter, on this thread.
    ///
    /// # Panics
    ///
    /// If a tokio runtime cannot be built (a broken test machine).
    #[must_use]
    pub fn run(self, retrier: &Retrier, request: TestRequest, clock: Clock) -> Run {
        let started = std::time::Instant::now();
        let ((result, _text), skipped) =
            send(self, retrier, &request, clock, &middleware::default_tls());
        Run {
            adapter: self,
            result,
            skipped,
            real: started.elapsed(),
        }
    }
}

/// What one operation gave: the answer or failure, the client error's text if there is one.
pub type Sent = (Result<Answer, Failure>, Option<String>);

/// One operation through a new client of `adapter` trusting `tls`, on `clock`. What it gave,
/// and the virtual time skipped.
pub(crate) fn send(
    adapter: Adapter,
    retrier: &Retrier,
    request: &TestRequest,
    clock: Clock,
    tls: &Trust,
) -> (Sent, Duration) {
    // Under tower, the retrier's `ReadBody` is a layer of its own, under the retry layer.
    let read = retrier.read_body_limit();
    let reads = read.max_bytes().is_some();
    match adapter {
        Adapter::Ureq => {
            let virtual_time = virtual_time_ahead(StdRuntime::new(), clock.ahead());
            let sent = match clock {
                Clock::Real => ureq_send(retrier, StdRuntime::new(), request, tls),
                Clock::Virtual | Clock::VirtualAhead(_) => {
                    ureq_send(retrier, virtual_time.clone(), request, tls)
                }
            };
            (sent, virtual_time.skipped().saturating_sub(clock.ahead()))
        }
        Adapter::TowerSmol => smol::block_on(async {
            let virtual_time = virtual_time_ahead(SmolRuntime::new(), clock.ahead());
            let sent = match clock {
                Clock::Real if reads => {
                    let client =
                        middleware::smol_client_reading(retrier, &SmolRuntime::new(), tls, read);
                    middleware::tower_send(client, request).await
                }
                Clock::Virtual | Clock::VirtualAhead(_) if reads => {
                    let client = middleware::smol_client_reading(retrier, &virtual_time, tls, read);
                    middleware::tower_send(client, request).await
                }
                Clock::Real => {
                    let client = middleware::smol_client(retrier, &SmolRuntime::new(), tls);
                    middleware::tower_send(client, request).await
                }
                Clock::Virtual | Clock::VirtualAhead(_) => {
                    let client = middleware::smol_client(retrier, &virtual_time, tls);
                    middleware::tower_send(client, request).await
                }
            };
            (sent, virtual_time.skipped().saturating_sub(clock.ahead()))
        }),
        Adapter::TowerTokio | Adapter::Reqwest => {
            let virtual_time = virtual_time_ahead(TokioRuntime::new(), clock.ahead());
            let sent = middleware::block_on(async {
                match (adapter, clock) {
                    (Adapter::Reqwest, Clock::Real) => {
                        let client = middleware::reqwest_client(retrier, &TokioRuntime::new(), tls);
                        middleware::reqwest_send(&client, request).await
                    }
                    (Adapter::Reqwest, Clock::Virtual | Clock::VirtualAhead(_)) => {
                        let client = middleware::reqwest_client(retrier, &virtual_time, tls);
                        middleware::reqwest_send(&client, request).await
                    }
                    (_, Clock::Real) if reads => {
                        let runtime = TokioRuntime::new();
                        let client = middleware::tower_client_reading(retrier, &runtime, tls, read);
                        middleware::tower_send(client, request).await
                    }
                    (_, Clock::Virtual | Clock::VirtualAhead(_)) if reads => {
                        let client =
                            middleware::tower_client_reading(retrier, &virtual_time, tls, read);
                        middleware::tower_send(client, request).await
                    }
                    (_, Clock::Real) => {
                        let client = middleware::tower_client(retrier, &TokioRuntime::new(), tls);
                        middleware::tower_send(client, request).await
                    }
                    (_, Clock::Virtual | Clock::VirtualAhead(_)) => {
                        let client = middleware::tower_client(retrier, &virtual_time, tls);
                        middleware::tower_send(client, request).await
                    }
                }
            });
            (sent, virtual_time.skipped().saturating_sub(clock.ahead()))
        }
    }
}

/// One operation through a new `backstop::ureq::Client` trusting `tls`, on `runtime`. A
/// bodiless request goes with no body at all (`()`), as a ureq user sends a GET.
fn ureq_send<RT: Runtime + Clone + Send + Sync + 'static>(
    retrier: &Retrier,
    runtime: RT,
    request: &TestRequest,
    tls: &Trust,
) -> Sent {
    let client =
        backstop::ureq::Client::with_tls(retrier.clone(), tls.ureq()).with_runtime(runtime);
    let http = request.to_http();
    let result = if http.body().is_empty() && request.factory().is_none() {
        client.run(http.map(|_| ()))
    } else {
        client.run(http.map(|body| body.to_vec()))
    };
    let text = failed_text(&result);
    (ureq_answer(result), text)
}

/// The `Display` of the client's error, when the operation failed with one.
pub(crate) fn failed_text<T, E: std::fmt::Display>(
    result: &Result<T, RetryError<E>>,
) -> Option<String> {
    match result {
        Err(RetryError::Failed { error, .. }) => Some(error.to_string()),
        _ => None,
    }
}

pub(crate) fn ureq_answer(result: backstop::ureq::Result) -> Result<Answer, Failure> {
    let done = result.map_err(failure)?;
    let outcome = done.outcome;
    let (parts, mut body) = done.response.into_parts();
    Ok(Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.read_to_vec().map_err(|e| e.to_string()),
        outcome,
        hedged: None,
    })
}

fn failure<E>(e: RetryError<E>) -> Failure {
    failure_of(&e)
}

/// The uniform [`Failure`] of an operation that ended without a response.
pub(crate) fn failure_of<E>(e: &RetryError<E>) -> Failure {
    match e {
        RetryError::Aborted(o) => Failure::Aborted(*o),
        RetryError::TimedOut(o) => Failure::TimedOut(*o),
        RetryError::NotSent(o) => Failure::NotSent(*o),
        RetryError::Failed { kind, outcome, .. } => Failure::Failed {
            kind: *kind,
            outcome: *outcome,
        },
        // A variant added later: report it as a failure of unknown kind.
        other => Failure::Failed {
            kind: ErrorKind::Other,
            outcome: *other.outcome(),
        },
    }
}

/// Asserts what every hostile scenario promises: the operation ended within `max_elapsed` plus
/// one attempt timeout (with slack for the scheduler), within `max_attempts`, and the caller
/// got the last response or error intact.
///
/// # Panics
///
/// When one of those does not hold (it is a test assertion).
pub fn assert_bounded(run: &Run, policy: &backstop::Policy, context: &str) {
    // Scheduling slack for a loaded 2-core CI machine (one run failed with 500 ms). A hang, the
    // failure this guards against, would overshoot it by far.
    let slack = std::time::Duration::from_secs(2);
    assert!(
        run.real + run.skipped <= policy.max_elapsed() + policy.attempt_timeout() + slack,
        "took too long: {context}"
    );
    let outcome = run.outcome();
    assert!(
        (1..=policy.max_attempts()).contains(&outcome.attempts),
        "{context}"
    );
    match &run.result {
        Ok(answer) => assert_eq!(
            outcome.last,
            Some(backstop::classify::AttemptOutcome::Response(answer.status)),
            "the returned response is the last one: {context}"
        ),
        Err(Failure::Failed { kind, outcome }) => assert!(
            matches!(outcome.last, Some(backstop::classify::AttemptOutcome::Error(e)) if e.kind == *kind),
            "the error is the last one: {context}"
        ),
        Err(Failure::TimedOut(outcome)) => assert!(
            matches!(outcome.last, Some(backstop::classify::AttemptOutcome::Error(e))
                if e.kind == backstop::ErrorKind::Timeout),
            "a time-out is the last outcome: {context}"
        ),
        Err(Failure::Aborted(_)) => panic!("nobody aborted: {context}"),
        Err(Failure::NotSent(_)) => panic!("something was sent: {context}"),
    }
}
