//! The retry loop: the one place where decisions become actions.
//!
//! Rule (DESIGN.md "Adapters", the machine's driver contract): poll the machine, act on its
//! decision, report what happened, repeat until it returns or gives up. Every attempt races its
//! timeout and the abort; every wait races the abort; after every timer the clock is read again
//! and the machine decides (a timer is never trusted). A discarded response is dropped before
//! the next attempt starts; after an abort nothing is sent.

use core::future::Future;
use core::pin::{pin, Pin};
use core::time::Duration;

use backstop::{
    AttemptError, AttemptOutcome, Decision, ErrorClass, ErrorKind, Event, Instant, Method, Outcome,
    Request, Response, RetryMachine, StopReason,
};
use futures_lite::future;

use crate::abort::Abort;
use crate::observe::events::{AttemptResult, EventKind, FinalResult};
use crate::observe::Emitter;
use crate::outcome::{Retried, RetryError};
use crate::request::{Attempt, RetryRequest};
use crate::retrier::Retrier;
use crate::runtime::{Purpose, Runtime};

/// What the last attempt left for the caller.
enum Last<B, E> {
    Nothing,
    Response(http::Response<B>),
    Error(E, ErrorKind),
}

/// How a raced attempt ended.
enum Raced<T> {
    Done(T),
    TimedOut,
    Aborted,
}

/// Runs one operation: sends `request` through `send` until the policy is satisfied.
///
/// - `send` performs one attempt (one HTTP exchange up to the response head) and is called
///   once per attempt with a fresh [`Attempt`]. The loop races it against the attempt's timeout
///   and the request's [`Abort`]; when either wins, the attempt's future is dropped, which
///   cancels the request in flight.
/// - `classify` maps the client's error to an [`ErrorKind`]; the retrier's override, if any,
///   then picks the class.
///
/// Returns the last response whenever there is one (even a 503 after the attempts ran out),
/// else why there is none. See the crate docs for an example.
pub async fn run<RT, B, E, Fut>(
    retrier: &Retrier,
    runtime: &RT,
    mut request: RetryRequest,
    classify: impl Fn(&E) -> ErrorKind,
    mut send: impl FnMut(Attempt) -> Fut,
) -> Result<Retried<B>, RetryError<E>>
where
    RT: Runtime + ?Sized,
    E: std::error::Error + 'static,
    Fut: Future<Output = Result<http::Response<B>, E>>,
{
    let abort = request.abort.clone();
    let abort = abort.as_ref();
    let emitter = Emitter::new(
        retrier,
        request.name.as_deref(),
        &request.method,
        &request.uri,
    );
    let start = runtime.now();
    let facts = Request::new(Method::from(&request.method))
        .with_idempotency_key(request.has_idempotency_key());
    let mut machine = RetryMachine::with_budget(
        *retrier.policy(),
        facts,
        retrier.next_rng(),
        retrier.budget.clone(),
        start,
    );
    let mut last: Last<B, E> = Last::Nothing;
    let since_start = |now: Instant| now.saturating_duration_since(start);
    // The clock as last read. It is read again after every attempt and every wait; a reading
    // is reused for the next decision only when nothing but bookkeeping ran in between (no
    // observer callback, which may take any time).
    let mut now = start;

    loop {
        if abort.is_some_and(Abort::is_aborted) {
            let _ = machine.handle(now, Event::Abort);
        }
        match machine.poll(now) {
            Decision::Send {
                attempt, timeout, ..
            } => {
                // The previous response will not be returned: release it before sending again.
                last = Last::Nothing;
                let timeout_at = now.saturating_add(timeout);
                // Pinned here, in the loop's own state: the race borrows it instead of
                // moving it into a future of its own.
                let mut attempt_future = pin!(send(Attempt {
                    number: attempt,
                    timeout,
                    deadline: timeout_at,
                    request: request.for_attempt(),
                }));
                if abort.is_some_and(Abort::is_aborted) {
                    // An abort that came first wins: the attempt is neither sent nor counted.
                    let _ = machine.handle(now, Event::Abort);
                    continue;
                }
                if machine.handle(now, Event::AttemptStarted).is_err() {
                    break;
                }
                // The attempt's own result is reported at the last instant still in time
                // when the clock, read after it, has reached its timeout: what the client
                // produced wins over a timeout that no decision has reported yet.
                let in_time = now.saturating_add(timeout.saturating_sub(Duration::from_nanos(1)));
                let raced = if let Some(output) = future::poll_once(attempt_future.as_mut()).await {
                    // One poll of the attempt alone: a blocking attempt completes in it (its
                    // client enforces the timeout and the abort), and so may an async one,
                    // with no abort listener or timer made for it.
                    Raced::Done(output)
                } else {
                    race_attempt(runtime, abort, timeout_at, attempt_future).await
                };
                let ended = runtime.now();
                let aborted = abort.is_some_and(Abort::is_aborted);
                let result = match raced {
                    _ if aborted => {
                        let _ = machine.handle(ended, Event::Abort);
                        AttemptResult::Aborted
                    }
                    Raced::Aborted => {
                        let _ = machine.handle(ended, Event::Abort);
                        AttemptResult::Aborted
                    }
                    Raced::TimedOut => timed_out(&mut machine, ended),
                    Raced::Done(Ok(response)) => {
                        let headers = response.headers();
                        // `Date` matters only as the reference of a `Retry-After` (an
                        // HTTP-date one): without that field, skip both lookups.
                        let facts = if headers.contains_key(http::header::RETRY_AFTER) {
                            let facts = Response::from_http(response.status(), headers);
                            if facts.retry_after.is_some() {
                                // Only an HTTP-date `Retry-After` needs the wall clock.
                                facts.wall_clock(retrier.wall_clock.now())
                            } else {
                                facts
                            }
                        } else {
                            Response::new(response.status().as_u16())
                        };
                        let status = facts.status;
                        if machine
                            .handle(ended.min(in_time), Event::Response(facts))
                            .is_ok()
                        {
                            last = Last::Response(response);
                            AttemptResult::Status(status)
                        } else {
                            // The machine had already timed the attempt out at `ended`.
                            timed_out(&mut machine, ended)
                        }
                    }
                    Raced::Done(Err(error)) => {
                        let kind = classify(&error);
                        let class = retrier
                            .classify
                            .as_ref()
                            .and_then(|f| f(kind, &error))
                            .unwrap_or_else(|| kind.class());
                        let e = AttemptError::new(kind).with_class(class);
                        if machine.handle(ended.min(in_time), Event::Error(e)).is_ok() {
                            last = Last::Error(error, kind);
                            AttemptResult::Error { kind, class }
                        } else {
                            timed_out(&mut machine, ended)
                        }
                    }
                };
                emitter.emit(EventKind::AttemptEnded {
                    attempt,
                    result,
                    took: ended.saturating_duration_since(now),
                    elapsed: since_start(ended),
                });
                now = emitter.clock_after(runtime, ended);
            }
            Decision::Wait {
                until,
                delay,
                reason,
            } => {
                emitter.emit(EventKind::WaitStarted {
                    next_attempt: reason.next_attempt,
                    delay,
                    cause: attempt_result(reason.cause),
                    source: reason.source,
                    elapsed: since_start(now),
                });
                let sleep = runtime.sleep_until(until, Purpose::Wait, abort);
                match abort {
                    Some(a) => future::or(a.aborted(), sleep).await,
                    None => sleep.await,
                }
                let woke = runtime.now();
                emitter.emit(EventKind::WaitEnded {
                    next_attempt: reason.next_attempt,
                    slept: woke.saturating_duration_since(now),
                    elapsed: since_start(woke),
                });
                now = emitter.clock_after(runtime, woke);
            }
            Decision::Return(outcome) | Decision::GiveUp(outcome) => {
                return finish(&emitter, outcome, last);
            }
            Decision::AwaitResponse { .. } => {
                // The loop awaits every attempt inline, so the machine never waits on one here;
                // should it, the attempt is gone: report it as timed out.
                let _ = machine.handle(now, Event::Error(AttemptError::new(ErrorKind::Timeout)));
                now = runtime.now();
            }
            // A decision this loop does not know: stop rather than guess.
            _ => break,
        }
    }
    let now = runtime.now();
    let _ = machine.handle(now, Event::Abort);
    let outcome = machine.outcome().unwrap_or(Outcome {
        attempts: machine.attempts(),
        elapsed: since_start(now),
        reason: StopReason::Aborted,
        last: None,
    });
    finish(&emitter, outcome, Last::Nothing)
}

/// Races a pending attempt against its timeout and the abort. A timer that fires before the
/// clock reaches `timeout_at` is re-armed: the attempt keeps running.
async fn race_attempt<RT, T>(
    runtime: &RT,
    abort: Option<&Abort>,
    timeout_at: Instant,
    mut attempt: Pin<&mut impl Future<Output = T>>,
) -> Raced<T>
where
    RT: Runtime + ?Sized,
{
    // The attempt was polled once already (see `run`) and is pending. The timer's instant is
    // absolute, and `Abort::aborted` checks the flag after it starts listening, so nothing
    // that happened since is missed.
    // Bounded: each pass sleeps until `timeout_at`; only an early timer comes round again.
    loop {
        let aborted = async {
            match abort {
                Some(a) => a.aborted().await,
                None => future::pending().await,
            }
            Raced::Aborted
        };
        let done = async { Raced::Done(attempt.as_mut().await) };
        let timer = runtime.sleep_until(timeout_at, Purpose::AttemptTimeout, abort);
        let timed_out = async {
            timer.await;
            Raced::TimedOut
        };
        match future::or(aborted, future::or(done, timed_out)).await {
            Raced::TimedOut if runtime.now() < timeout_at => continue,
            other => return other,
        }
    }
}

/// Reports an attempt timeout to the machine (which may already have applied it).
fn timed_out<R: rand_core::RngCore, B: backstop::Budget>(
    machine: &mut RetryMachine<R, B>,
    now: Instant,
) -> AttemptResult {
    let error = AttemptError::new(ErrorKind::Timeout);
    let _ = machine.handle(now, Event::Error(error));
    AttemptResult::Error {
        kind: ErrorKind::Timeout,
        class: ErrorClass::Timeout,
    }
}

fn attempt_result(outcome: AttemptOutcome) -> AttemptResult {
    match outcome {
        AttemptOutcome::Response(status) => AttemptResult::Status(status),
        AttemptOutcome::Error(e) => AttemptResult::Error {
            kind: e.kind,
            class: e.class,
        },
    }
}

/// Turns the machine's final outcome and the last attempt's leftovers into the caller's result.
fn finish<B, E>(
    emitter: &Emitter<'_>,
    outcome: Outcome,
    last: Last<B, E>,
) -> Result<Retried<B>, RetryError<E>> {
    let (result, value) = match last {
        _ if outcome.reason == StopReason::Aborted => {
            (FinalResult::Aborted, Err(RetryError::Aborted(outcome)))
        }
        Last::Response(response) => (
            FinalResult::Status(response.status().as_u16()),
            Ok(Retried { response, outcome }),
        ),
        Last::Error(_, ErrorKind::Timeout) => (
            FinalResult::Error(ErrorKind::Timeout),
            Err(RetryError::TimedOut(outcome)),
        ),
        Last::Error(error, kind) => (
            FinalResult::Error(kind),
            Err(RetryError::Failed {
                error,
                kind,
                outcome,
            }),
        ),
        Last::Nothing => (
            FinalResult::Error(ErrorKind::Timeout),
            Err(RetryError::TimedOut(outcome)),
        ),
    };
    emitter.emit(EventKind::Finished {
        attempts: outcome.attempts,
        reason: outcome.reason,
        result,
        elapsed: outcome.elapsed,
    });
    value
}
