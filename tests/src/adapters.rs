//! One scenario, five adapters: the helper every scenario file uses.
//!
//! ureq, smol and tokio take the scenario's [`RetryRequest`] as it is (`Client::run`). The
//! reqwest middleware and the tower layer take their own stack's request: the scenario's is
//! turned into one ([`RetryRequest::to_http`]: method, URL, headers, the `Idempotency-Key`, the
//! body) with its [`Abort`](backstop::Abort) in the extensions, where a user of those
//! stacks puts it, and sent through a new client of that stack.

use core::time::Duration;

use backstop::tokio::TokioRuntime;
use backstop::{ErrorKind, Outcome};
use backstop::{Retried, Retrier, RetryError, RetryRequest, Runtime, StdRuntime, VirtualTime};
use http_body_util::{BodyExt, Full};

use crate::middleware;

/// An adapter under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Adapter {
    /// `backstop::ureq` (blocking).
    Ureq,
    /// `backstop::smol`.
    Smol,
    /// `backstop::tokio`.
    Tokio,
    /// `backstop::reqwest`: a reqwest client with `RetryMiddleware` (reqwest-middleware).
    Reqwest,
    /// `backstop::tower`: a hyper-util client behind `RetryLayer`.
    Tower,
}

/// Which clock a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Clock {
    /// The adapter's real clock and timers.
    Real,
    /// [`VirtualTime`] over the adapter's runtime: waits between attempts take no real time,
    /// attempt timeouts stay real.
    Virtual,
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
}

/// An operation that ended without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The caller aborted.
    Aborted(Outcome),
    /// The last attempt timed out.
    TimedOut(Outcome),
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
                Failure::Aborted(o) | Failure::TimedOut(o) | Failure::Failed { outcome: o, .. },
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
    /// All five adapters.
    pub const ALL: [Adapter; 5] = [
        Adapter::Ureq,
        Adapter::Smol,
        Adapter::Tokio,
        Adapter::Reqwest,
        Adapter::Tower,
    ];

    /// The adapters with a client of their own that takes a [`RetryRequest`] (`Client::run`),
    /// for the scenarios about `RetryRequest` itself (its validation, its body factory). The
    /// reqwest and tower stacks build and check requests with their own builders.
    pub const CLIENTS: [Adapter; 3] = [Adapter::Ureq, Adapter::Smol, Adapter::Tokio];

    /// Whether the adapter calls a [`RetryRequest::body_factory`] once per attempt. The reqwest
    /// and tower stacks send a body of their own, made once and cloned for each attempt.
    #[must_use]
    pub fn calls_the_body_factory_per_attempt(self) -> bool {
        Adapter::CLIENTS.contains(&self)
    }

    /// Runs one operation through the adapter's ready-made client on this thread.
    ///
    /// # Panics
    ///
    /// If a tokio runtime cannot be built (a broken test machine).
    #[must_use]
    pub fn run(self, retrier: &Retrier, request: RetryRequest, clock: Clock) -> Run {
        let started = std::time::Instant::now();
        let (result, skipped) = match self {
            Adapter::Ureq => {
                let client = backstop::ureq::Client::new(retrier.clone());
                match clock {
                    Clock::Real => (ureq_run(&client, request), Duration::ZERO),
                    Clock::Virtual => {
                        let client = client.with_runtime(VirtualTime::new(StdRuntime::new()));
                        let r = ureq_run(&client, request);
                        (r, client.runtime().skipped())
                    }
                }
            }
            Adapter::Smol => smol::block_on(async {
                let client = backstop::smol::Client::new(retrier.clone());
                match clock {
                    Clock::Real => (
                        hyper_answer(client.run(request).await).await,
                        Duration::ZERO,
                    ),
                    Clock::Virtual => {
                        let client = client
                            .with_runtime(VirtualTime::new(backstop::smol::SmolRuntime::new()));
                        let r = hyper_answer(client.run(request).await).await;
                        (r, client.runtime().skipped())
                    }
                }
            }),
            Adapter::Tokio => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime")
                .block_on(async {
                    let client = backstop::tokio::Client::new(retrier.clone());
                    match clock {
                        Clock::Real => (
                            hyper_answer(client.run(request).await).await,
                            Duration::ZERO,
                        ),
                        Clock::Virtual => {
                            let client = client.with_runtime(VirtualTime::new(
                                backstop::tokio::TokioRuntime::new(),
                            ));
                            let r = hyper_answer(client.run(request).await).await;
                            (r, client.runtime().skipped())
                        }
                    }
                }),
            Adapter::Reqwest | Adapter::Tower => {
                let ((result, _text), skipped) =
                    stack_run(self, retrier, request, clock, &middleware::default_tls());
                (result, skipped)
            }
        };
        Run {
            adapter: self,
            result,
            skipped,
            real: started.elapsed(),
        }
    }
}

fn ureq_run<RT: Runtime>(
    client: &backstop::ureq::Client<RT>,
    request: RetryRequest,
) -> Result<Answer, Failure> {
    ureq_answer(client.run(request))
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
    })
}

pub(crate) async fn hyper_answer<E>(
    result: Result<Retried<hyper::body::Incoming>, RetryError<E>>,
) -> Result<Answer, Failure> {
    let done = result.map_err(failure)?;
    let outcome = done.outcome;
    let (parts, body) = done.response.into_parts();
    Ok(Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body
            .collect()
            .await
            .map(|b| b.to_bytes().to_vec())
            .map_err(|e| e.to_string()),
        outcome,
    })
}

/// One operation through the reqwest middleware or the tower layer: the scenario's request in
/// that stack's form, through a new client of it trusting `tls`, on a current-thread tokio
/// runtime. The answer or failure, the error's text if there is one, and the time skipped.
pub(crate) fn stack_run(
    adapter: Adapter,
    retrier: &Retrier,
    mut request: RetryRequest,
    clock: Clock,
    tls: &crate::https::Trust,
) -> ((Result<Answer, Failure>, Option<String>), Duration) {
    assert!(
        request.error().is_none(),
        "{adapter:?} builds requests with its own builder: a RetryRequest's error cannot be \
         expressed there (use Adapter::CLIENTS)"
    );
    let abort = request.abort_handle().cloned();
    let policy = request.request_policy().copied();
    let name = request
        .operation_name()
        .map(|n| backstop::OperationName::new(n.to_owned()));
    let mut head = request.to_http();
    let virtual_time = VirtualTime::new(TokioRuntime::new());
    let result = middleware::block_on(async {
        match adapter {
            Adapter::Reqwest => {
                let client = match clock {
                    Clock::Real => middleware::reqwest_client(retrier, &TokioRuntime::new(), tls),
                    Clock::Virtual => middleware::reqwest_client(retrier, &virtual_time, tls),
                };
                let mut extensions = http::Extensions::new();
                if let Some(abort) = abort {
                    extensions.insert(abort);
                }
                if let Some(name) = name {
                    extensions.insert(name);
                }
                if let Some(policy) = policy {
                    extensions.insert(policy);
                }
                let request = reqwest::Request::try_from(head).expect("a reqwest request");
                let result = client
                    .execute_with_extensions(request, &mut extensions)
                    .await;
                middleware::reqwest_answer(result).await
            }
            _ => {
                if let Some(abort) = abort {
                    head.extensions_mut().insert(abort);
                }
                if let Some(name) = name {
                    head.extensions_mut().insert(name);
                }
                if let Some(policy) = policy {
                    head.extensions_mut().insert(policy);
                }
                let request = head.map(Full::new);
                match clock {
                    Clock::Real => {
                        let client = middleware::tower_client(retrier, &TokioRuntime::new(), tls);
                        middleware::tower_answer(client, request).await
                    }
                    Clock::Virtual => {
                        let client = middleware::tower_client(retrier, &virtual_time, tls);
                        middleware::tower_answer(client, request).await
                    }
                }
            }
        }
    });
    let skipped = match clock {
        Clock::Real => Duration::ZERO,
        Clock::Virtual => virtual_time.skipped(),
    };
    (result, skipped)
}

fn failure<E>(e: RetryError<E>) -> Failure {
    failure_of(&e)
}

/// The uniform [`Failure`] of an operation that ended without a response.
pub(crate) fn failure_of<E>(e: &RetryError<E>) -> Failure {
    match e {
        RetryError::Aborted(o) => Failure::Aborted(*o),
        RetryError::TimedOut(o) => Failure::TimedOut(*o),
        RetryError::Failed { kind, outcome, .. } => Failure::Failed {
            kind: *kind,
            outcome: *outcome,
        },
        // Refused before any attempt: what a client's own check says of the request.
        RetryError::InvalidRequest { outcome, .. } => Failure::Failed {
            kind: ErrorKind::InvalidRequest,
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
            Some(backstop::AttemptOutcome::Response(answer.status)),
            "the returned response is the last one: {context}"
        ),
        Err(Failure::Failed { kind, outcome }) => assert!(
            matches!(outcome.last, Some(backstop::AttemptOutcome::Error(e)) if e.kind == *kind),
            "the error is the last one: {context}"
        ),
        Err(Failure::TimedOut(outcome)) => assert!(
            matches!(outcome.last, Some(backstop::AttemptOutcome::Error(e))
                if e.kind == backstop::ErrorKind::Timeout),
            "a time-out is the last outcome: {context}"
        ),
        Err(Failure::Aborted(_)) => panic!("nobody aborted: {context}"),
    }
}
