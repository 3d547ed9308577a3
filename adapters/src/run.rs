//! The retry loop: the one place where decisions become actions.
//!
//! Rule (the machine's driver contract, `backstop::machine::RetryMachine`): poll the machine, act
//! on its decision, report what happened, repeat until it returns or gives up. Every attempt races
//! its timeout and the abort; every wait races the abort; after every timer the clock is read again
//! and the machine decides (a timer is never trusted). Before the next attempt, a discarded
//! response's body is read to its end when it is small and quick (so that the client can reuse the
//! connection), else dropped; after an abort nothing is sent, and the attempt function is not even
//! called.

use core::future::Future;
use core::ops::Deref;
use core::pin::{pin, Pin};
use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, Decision, Event, Instant, Response, ResponseClass, RetryMachine,
    SendReason, WaitReason,
};
use backstop_core::{ErrorKind, Outcome, Policy, StopReason};
use futures_lite::future;

use crate::abort::Abort;
use crate::drain::{announced_too_long, DrainLimits};
use crate::observe::events::EventKind;
use crate::observe::spans::{AttemptSpan, InSpan};
use crate::observe::Emitter;
use crate::outcome::{Retried, RetryError};
use crate::overload::{AttemptEnd, Marks, SharedGate, SharedLimiter};
use crate::progress::Progress;
use crate::race::{Race, Raced, Racer};
use crate::request::{copy_for_attempt, Attempt, AttemptNumber, Plan};
use crate::response_view::ResponseView;
use crate::retrier::{LazyRng, Retrier, SharedBudget};
use crate::runtime::Runtime;
use crate::timed_out::AttemptTimedOut;
use crate::transport::Transport;

/// Runs one operation: sends `request` through `transport` until the policy is satisfied.
///
/// - The [`Transport`] performs one attempt (one HTTP exchange up to the response head) per
///   call of its `send`, with a fresh [`Attempt`] carrying a copy of `request` (its body
///   cloned: bytes are shared, a [`ReplayBody`](crate::ReplayBody) is made afresh); a
///   closure `|attempt: Attempt<B>| async { .. }` is one.
///   The loop races it against the attempt's timeout and the request's [`Abort`]; when either
///   wins, the attempt's future is dropped, which cancels the request in flight.
/// - The request's extensions may carry an [`Abort`] (which ends the operation), an
///   [`OperationName`](crate::OperationName) (which names its events) and a
///   [`Policy`](crate::Policy) (which replaces the retrier's for this request); every copy
///   carries them to the transport too.
/// - The client's error gets its [`ErrorKind`] from [`Transport::error_kind`] (by default
///   [`default_error_kind`](crate::classify::default_error_kind), which reads its chain); the
///   retrier's override, if any, then picks the class.
/// - An attempt the loop's timer ends is [`ErrorKind::Timeout`] (maybe sent), or
///   [`ErrorKind::ConnectTimeout`] (never sent) when its client said, with
///   [`mark_connecting`](crate::transport::mark_connecting), that it was still connecting.
/// - Before the next attempt, a discarded response's body goes to [`Transport::drain`]
///   (by default dropped, which closes its connection) with the [`DrainLimits`] in force: the
///   retrier's ([`Retrier::drain`]), their time cut to half the time left before the deadline
///   and, when the machine waits before the next attempt, to the wait. The drain runs at the
///   start of that wait, inside it: the next attempt goes out when the wait ends, as decided,
///   whatever the body does, so `Policy::worst_case` holds for the loop. (Without a wait, the
///   drain runs right before the next attempt, within its limits and within the longest wait
///   `worst_case` counts.) Hence one edge: when the operation ends at that wait instead of
///   sending (its wake-up came at or past the deadline), the response it would return has
///   been released; the loop returns [`RetryError::TimedOut`], whose outcome names that
///   response's status. The returned response's body is never touched.
/// - Before each attempt, the loop awaits [`Transport::ready`] (backpressure, not an attempt;
///   bounded by the deadline and ended by the abort).
///
/// - `run` does not hedge: the [`Transport`] lends itself to one attempt at a time. Under a
///   policy with [`hedging`](crate::PolicyBuilder::hedging) it retries with the policy's retry
///   settings; the tower layer and the reqwest middleware hedge.
///
/// Returns the last response whenever there is one (even a 503 after the attempts ran out),
/// else why there is none. See the crate docs for an example.
pub fn run<'a, RT, B, T>(
    retrier: &'a Retrier,
    runtime: &'a RT,
    request: http::Request<B>,
    transport: T,
) -> impl Future<Output = Result<Retried<T::Body>, RetryError<T::Error>>> + use<'a, RT, B, T>
where
    RT: Runtime + ?Sized,
    B: Clone,
    T: Transport<B>,
{
    let plan = retrier.plan(&request);
    drive(
        retrier,
        runtime,
        plan,
        move |number, _: &Plan| {
            let mut copy = copy_for_attempt(&request);
            AttemptNumber::put(copy.extensions_mut(), number);
            copy
        },
        transport,
        |result, _| result,
    )
}

/// [`run`] for a front door that sends the caller's request itself (the reqwest middleware,
/// the tower layer): the loop knows the request by its `plan`, each attempt carries the
/// request `head` makes of it (empty, or [`plan_head`]'s), and `finish` turns the result (and
/// the transport, given back) into the front door's. The loop's future is the front door's
/// own: it owns (or borrows, through `retrier` and `runtime`) what it works on, with no
/// future around it that would hold them too.
#[cfg(any(feature = "tower", feature = "reqwest"))]
pub(crate) fn run_planned<Rr, Rh, RT, H, T, F, O>(
    retrier: Rr,
    runtime: Rh,
    plan: Plan,
    head: H,
    transport: T,
    finish: F,
) -> impl Future<Output = O> + use<Rr, Rh, RT, H, T, F, O>
where
    Rr: Deref<Target = Retrier>,
    Rh: Deref<Target = RT>,
    RT: Runtime + ?Sized,
    H: Fn(&Plan) -> http::Request<()>,
    T: Transport<()>,
    F: FnOnce(Result<Retried<T::Body>, RetryError<T::Error>>, T) -> O,
{
    drive(
        retrier,
        runtime,
        plan,
        move |_, plan: &Plan| head(plan),
        transport,
        finish,
    )
}

/// An attempt's request with `plan`'s method and URI, and nothing else: for a transport that
/// keeps the rest of the request, so that the operation's future holds those once.
#[cfg(feature = "tower")]
pub(crate) fn plan_head(plan: &Plan) -> http::Request<()> {
    let mut head = http::Request::new(());
    *head.method_mut() = plan.method.clone();
    *head.uri_mut() = plan.uri().clone();
    head
}

/// A value a future owns, lent to the loop as a reference would be (the tower layer's
/// runtime, cloned per call).
#[cfg(feature = "tower")]
pub(crate) struct Own<T>(pub(crate) T);

#[cfg(feature = "tower")]
impl<T> Deref for Own<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The loop: `plan` says what the operation is, `next_request` makes attempt `n`'s request,
/// `finish` makes the output of the result and the transport.
// Not an `async fn`, whose future would hold the request and the transport twice (the
// arguments, and the bindings they move to): the block works on what it captured.
#[allow(clippy::manual_async_fn)]
fn drive<Rr, Rh, RT, B, P, N, T, F, O>(
    retrier: Rr,
    runtime: Rh,
    mut plan: P,
    mut next_request: N,
    mut transport: T,
    finish: F,
) -> impl Future<Output = O> + use<Rr, Rh, RT, B, P, N, T, F, O>
where
    Rr: Deref<Target = Retrier>,
    Rh: Deref<Target = RT>,
    RT: Runtime + ?Sized,
    P: core::borrow::BorrowMut<Plan>,
    N: FnMut(u32, &Plan) -> http::Request<B>,
    T: Transport<B>,
    F: FnOnce(Result<Retried<T::Body>, RetryError<T::Error>>, T) -> O,
{
    async move {
        let (retrier, runtime): (&Retrier, &RT) = (&retrier, &runtime);
        let plan = plan.borrow_mut();
        // The plan is read where it was captured, not moved to a binding of its own: moved,
        // it would take its room twice in this future. The origin is taken; the rest
        // (the abort too) is lent to the operation.
        let origin = plan.origin.take();
        let plan: &Plan = plan;
        let start = runtime.now();
        let facts = plan.facts();
        let mut operation = Operation {
            retrier,
            runtime,
            emitter: Emitter::new(&retrier.observers, retrier.metrics.as_ref(), plan),
            machine: RetryMachine::with_overload(
                // The request's own policy, else the retrier's: borrowed, not copied.
                plan.policy.as_deref().unwrap_or(retrier.policy()),
                facts,
                retrier.next_rng(),
                retrier.budget.clone(),
                SharedGate::of(retrier.gates.as_deref(), origin, start),
                SharedLimiter(retrier.limiter.as_deref()),
                start,
            ),
            progress: Progress::default(),
        };
        let mut last = Last::Nothing;
        // The clock as last read. It is read again after every attempt and every wait; a reading
        // is reused for the next decision only when nothing but bookkeeping ran in between (no
        // observer callback, which may take any time).
        let mut now = start;
        // The transport was made ready for the next attempt, while the machine decides again
        // after a wait for readiness.
        let mut is_ready = false;
        // The attempt whose zero wait was last reported (0: none).
        let mut told_zero_wait = 0;
        // Bounded by the machine: every pass sends an attempt or waits, and both end by the
        // deadline, after which the machine returns or gives up.
        loop {
            now = match operation.machine.poll(now) {
                Decision::Send {
                    attempt,
                    timeout,
                    reason,
                } => {
                    // A retry at once had a wait of zero: reported like any wait, once (this
                    // decision repeats until the attempt starts).
                    if let SendReason::RetryAtOnce(wait) = reason {
                        if told_zero_wait != attempt {
                            told_zero_wait = attempt;
                            now = operation.zero_wait(now, wait);
                        }
                    }
                    // The previous response will not be returned: release it before sending again
                    // (its connection with it, when it is read to its end), then decide again on
                    // the clock after.
                    if matches!(last, Last::Response(_)) {
                        // Retries only: boxed, so that the success path's future does not carry
                        // the room of a drain (nor of the wait's, below).
                        now = Box::pin(operation.discard::<B, T>(now, &mut last, &mut transport))
                            .await;
                        continue;
                    }
                    // Before the attempt is made, not only before it is reported: a transport that
                    // starts its request (or makes its body) when called would otherwise send
                    // after the abort.
                    if operation.aborted() {
                        let _ = operation.machine.handle(now, Event::Abort);
                        continue;
                    }
                    // Not ready at once: decide again on the clock after (the deadline may have
                    // come, the timeout is shorter, the abort may have ended the operation).
                    if let Some(after) = operation.ready(&mut is_ready, || transport.ready()).await
                    {
                        now = after;
                        continue;
                    }
                    // Pinned here, where it lives until it ends; dropped before its error is read
                    // (the transport is lent to it meanwhile). It runs inside the attempt's span.
                    let span = operation.emitter.attempt_span(attempt);
                    let (raced, span) = {
                        let future = pin!(span.scope(|| transport.send(Attempt {
                            number: attempt,
                            timeout,
                            request: next_request(attempt, plan),
                        })));
                        let mut traced = InSpan { future, span };
                        let raced = if operation.start(now) {
                            let mut scoped = operation.progress.scope(Pin::new(&mut traced));
                            Some(
                                operation
                                    .race(now.saturating_add(timeout), Pin::new(&mut scoped))
                                    .await,
                            )
                        } else {
                            None
                        };
                        (raced, traced.span)
                    };
                    // How the attempt ended is read where it is (a local of this poll, not of
                    // the future: it lives across no `await`); only the response the operation
                    // ends with moves on (each move of a response copies it).
                    let Some(mut raced) = raced else { continue };
                    let ended = operation.ended(&mut raced);
                    let after = operation.attempt_ended::<B, T>(
                        now,
                        (attempt, timeout),
                        (&mut raced, ended),
                        &span,
                        &transport,
                        &mut last,
                    );
                    // A response ends the operation (the success path: it is returned from here,
                    // never moved into `last`), or is kept in `last`, boxed, to be released
                    // before the next attempt: `last` stays small in this future.
                    match raced {
                        Raced::Done(Ok(response)) => match operation.machine.poll(after) {
                            Decision::Return(outcome) | Decision::GiveUp(outcome) => {
                                return finish(operation.returned(outcome, response), transport);
                            }
                            _ => {
                                last = Last::Response(Box::new(response));
                                after
                            }
                        },
                        _ => after,
                    }
                }
                Decision::Wait {
                    until,
                    delay,
                    reason,
                } => {
                    Box::pin(operation.wait::<B, T>(
                        now,
                        (until, delay, reason),
                        &mut last,
                        &mut transport,
                    ))
                    .await
                }
                Decision::Return(outcome) | Decision::GiveUp(outcome) => {
                    let result = operation.finish(outcome, last);
                    return finish(result, transport);
                }
                // The loop awaits every attempt where it sends it, so the machine never has one in
                // flight (`AwaitResponse`), and it has no other decision.
                other => unreachable!("the retry loop cannot act on `{other}`"),
            };
        }
    }
}

/// What the last attempt left for the caller.
enum Last<B, E> {
    Nothing,
    /// A response the operation does not end with (yet): the next attempt's or wait's to
    /// release. Boxed: the success path never puts its response here.
    Response(Box<http::Response<B>>),
    Error(E, ErrorKind),
    /// The loop's own timer ended the attempt: there is no client error to return.
    TimedOut,
}

/// How a raced attempt ended, with the client's result when it ended by itself.
type Sent<B, E> = Raced<Result<http::Response<B>, E>>;

/// One operation's state between the loop's steps.
struct Operation<'a, RT: ?Sized> {
    retrier: &'a Retrier,
    runtime: &'a RT,
    emitter: Emitter<'a, Plan>,
    machine: RetryMachine<LazyRng, SharedBudget, SharedGate, SharedLimiter<'a>, &'a Policy>,
    /// Whether the attempt in flight is still connecting, as its client says.
    progress: Progress,
}

impl<RT: Runtime + ?Sized> Racer for Operation<'_, RT> {
    type Runtime = RT;

    fn runtime(&self) -> &RT {
        self.runtime
    }

    fn abort(&self) -> Option<&Abort> {
        Operation::abort(self)
    }
}

impl<'a, RT: Runtime + ?Sized> Operation<'a, RT> {
    /// The request's abort, from its plan.
    fn abort(&self) -> Option<&'a Abort> {
        self.emitter.plan().abort.as_ref()
    }

    fn aborted(&self) -> bool {
        self.abort().is_some_and(Abort::is_aborted)
    }

    fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.machine.started())
    }

    /// Starts the attempt decided at `now`, unless an abort came first (reported; the
    /// attempt is then neither sent nor counted): whether it started. The caller then races
    /// it against its timeout and the abort ([`Self::race`]) and reads the clock after
    /// ([`Self::ended`]).
    fn start(&mut self, now: Instant) -> bool {
        if self.aborted() {
            let _ = self.machine.handle(now, Event::Abort);
            return false;
        }
        // Cannot fail: the machine has just decided to send.
        let _ = self.machine.handle(now, Event::AttemptStarted);
        true
    }

    /// Reads the clock after a started attempt's race ended (`raced`: an abort that came
    /// meanwhile replaces it).
    fn ended<T>(&self, raced: &mut Raced<T>) -> Instant {
        let ended = self.runtime.now();
        // An abort wins over whatever the attempt ended with: a blocking client reports the
        // abort that interrupted it as an error of its own.
        if self.aborted() {
            *raced = Raced::Aborted;
        }
        ended
    }

    /// Reports how attempt `number` with its `timeout`, sent at `now`, ended (`raced`, the
    /// clock read `ended` after it; recorded on its `span` too), its error's kind from
    /// `transport`. A response stays in `raced`; an error moves to `last`. Returns the clock
    /// after (the end's own reading when the machine is done).
    fn attempt_ended<B, T: Transport<B>>(
        &mut self,
        now: Instant,
        (number, timeout): (u32, Duration),
        (raced, ended): (&mut Sent<T::Body, T::Error>, Instant),
        span: &AttemptSpan,
        transport: &T,
        last: &mut Last<T::Body, T::Error>,
    ) -> Instant {
        let classify = |e: &T::Error| transport.error_kind(e);
        let (gate, limiter) = (self.machine.gate(), self.machine.rate_limiter());
        let marks = Marks::of(gate, limiter, &self.emitter);
        let result = self.report(classify, (number, timeout), ended, raced, last);
        span.ended(&result);
        let end = AttemptEnd {
            attempt: number,
            outcome: result,
            sent: now,
            ended,
        };
        let overload = (self.machine.gate(), self.machine.rate_limiter());
        let marks = marks.map(|marks| (marks, overload));
        end.announce(&self.emitter, marks, self.machine.started());
        // The time the observers took counts for the next decision, unless there is none to
        // make: a machine done at this end returns the same outcome at any later instant.
        if self.machine.is_done() {
            ended
        } else {
            self.emitter.clock_after(self.runtime, ended)
        }
    }

    /// Makes the transport ready for the attempt about to go (`ready`), unless a wait for it
    /// already did (`is_ready`, which this resets), bounded by the deadline and the abort (an
    /// abort is reported; the deadline the machine finds at its next decision). `None`: ready
    /// at once, the decision stands. Else the clock after, to decide again on; when the
    /// transport became ready meanwhile, `is_ready` keeps it so for that decision.
    async fn ready<F: Future<Output = ()>>(
        &mut self,
        is_ready: &mut bool,
        ready: impl FnOnce() -> F,
    ) -> Option<Instant> {
        if core::mem::take(is_ready) {
            return None;
        }
        let mut ready = pin!(ready());
        // The common case, a client that is always ready, costs one poll and no clock read.
        if future::poll_once(ready.as_mut()).await.is_some() {
            return None;
        }
        let raced = self.race(self.machine.deadline(), ready).await;
        let after = self.runtime.now();
        match raced {
            Raced::Done(()) if !self.aborted() => *is_ready = true,
            Raced::Aborted | Raced::Done(_) => {
                let _ = self.machine.handle(after, Event::Abort);
            }
            Raced::TimedOut => {}
        }
        Some(after)
    }

    /// Races `attempt` against `timeout_at` and the abort (see [`Race`]).
    fn race<'r, F: Future>(
        &'r self,
        timeout_at: Instant,
        attempt: Pin<&'r mut F>,
    ) -> Race<'r, F, Self> {
        Race::new(self, timeout_at, attempt)
    }

    /// Reports how attempt `number` with its `timeout` ended (`raced`, the clock read `ended`
    /// after it) to the machine, keeps what the caller may get (a response stays in `raced`,
    /// an error moves to `last`), and says what it was.
    fn report<B, E: std::error::Error + 'static>(
        &mut self,
        classify: impl Fn(&E) -> ErrorKind,
        (number, timeout): (u32, Duration),
        ended: Instant,
        raced: &mut Raced<Result<http::Response<B>, E>>,
        last: &mut Last<B, E>,
    ) -> AttemptOutcome {
        // The attempt's own result is reported at `ended` even when the clock has reached its
        // timeout by then: the machine takes what the client produced over a timeout that no
        // decision has reported yet (as it takes the abort).
        match raced {
            Raced::Aborted => {
                let _ = self.machine.handle(ended, Event::Abort);
                AttemptOutcome::Error(AttemptError::new(ErrorKind::Aborted))
            }
            // The loop's timer ended the attempt. It is reported as an error like a client's
            // (the machine would time it out by itself at the next decision, but without the
            // caller's override), and it replaces whatever an earlier attempt left in `last`:
            // the error returned is the last attempt's. A connect that never completed sent
            // nothing: the client said which it was.
            Raced::TimedOut => {
                let kind = self.progress.timed_out_kind();
                let e = self.classified(kind, &AttemptTimedOut::new(number, timeout));
                // Cannot fail: the attempt is in flight until its result is reported.
                let _ = self.machine.handle(ended, Event::Error(e));
                *last = Last::TimedOut;
                AttemptOutcome::Error(e)
            }
            Raced::Done(Ok(response)) => {
                let facts = self.response_facts(response);
                let status = facts.status;
                // Cannot fail: the attempt is in flight until its result is reported.
                let _ = self.machine.handle(ended, Event::Response(facts));
                // It replaces what an earlier attempt left; the caller keeps it.
                *last = Last::Nothing;
                AttemptOutcome::Response(status)
            }
            Raced::Done(Err(error)) => {
                let kind = classify(error);
                let e = self.classified(kind, &*error);
                // Cannot fail: the attempt is in flight until its result is reported.
                let _ = self.machine.handle(ended, Event::Error(e));
                // The error moves to `last` (what is left in its place is not read again).
                if let Raced::Done(Err(error)) = core::mem::replace(raced, Raced::TimedOut) {
                    *last = Last::Error(error, kind);
                }
                AttemptOutcome::Error(e)
            }
        }
    }

    /// The attempt error of `kind` for `error` (see [`classified`]).
    fn classified(
        &self,
        kind: ErrorKind,
        error: &(dyn std::error::Error + 'static),
    ) -> AttemptError {
        classified(self.retrier, kind, error)
    }

    /// Reads the body of the response in `last`, decided at `now` to be discarded before a
    /// retry at once, to its end within the drain limits, or drops it; `last` is left empty.
    /// Returns the clock after.
    async fn discard<B, T: Transport<B>>(
        &self,
        now: Instant,
        last: &mut Last<T::Body, T::Error>,
        transport: &mut T,
    ) -> Instant {
        // No longer than the longest wait `Policy::worst_case` counts between two attempts:
        // this drain takes the place of a wait of zero, so the bound holds for the loop too.
        let end = now.saturating_add(self.machine.policy().worst_case().wait);
        let Some((body, limits)) = self.body_to_drain(now, end, last) else {
            return now;
        };
        let until = now.saturating_add(limits.max_time());
        // However it ends, the body is gone: read to its end, or dropped mid-way.
        let _ = self.race(until, pin!(transport.drain(body, limits))).await;
        self.runtime.now()
    }

    /// Takes the response out of `last` and returns its body with the limits to read it
    /// within (by `end` at the latest), or drops it (`None`): draining is off, the operation
    /// is aborted, or the body announces more than the limit.
    fn body_to_drain<B, E>(
        &self,
        now: Instant,
        end: Instant,
        last: &mut Last<B, E>,
    ) -> Option<(B, DrainLimits)> {
        let Last::Response(response) = core::mem::replace(last, Last::Nothing) else {
            return None;
        };
        let response = *response;
        // Half the time left at most: the next attempt keeps the other half.
        let time_left = self.machine.deadline().saturating_duration_since(now);
        let limits = self
            .retrier
            .drain
            .within(time_left / 2)
            .within(end.saturating_duration_since(now));
        if limits.is_off() || self.aborted() || announced_too_long(response.headers(), limits) {
            return None;
        }
        Some((response.into_body(), limits))
    }

    /// The parts of `response` that bear on a retry (see [`response_facts`]).
    #[inline]
    fn response_facts<'r, B>(&self, response: &'r http::Response<B>) -> Response<'r> {
        response_facts(
            self.retrier,
            self.machine.policy(),
            self.emitter.plan(),
            response,
        )
    }

    /// Reports the zero wait decided at `now` before a retry sent at once: a wait that started
    /// and ended. Returns the clock after.
    fn zero_wait(&self, now: Instant, reason: WaitReason) -> Instant {
        let elapsed = self.since_start(now);
        self.emitter.emit(EventKind::WaitStarted {
            next_attempt: reason.next_attempt,
            delay: Duration::ZERO,
            cause: reason.cause,
            source: reason.source,
            elapsed,
        });
        self.emitter.emit(EventKind::WaitEnded {
            next_attempt: reason.next_attempt,
            slept: Duration::ZERO,
            elapsed,
        });
        self.emitter.clock_after(self.runtime, now)
    }

    /// Waits until `until` (decided at `now`), or until the abort, draining the discarded
    /// response in `last` meanwhile. Returns the clock after.
    async fn wait<B, T: Transport<B>>(
        &mut self,
        now: Instant,
        (until, delay, reason): (Instant, Duration, WaitReason),
        last: &mut Last<T::Body, T::Error>,
        transport: &mut T,
    ) -> Instant {
        self.emitter.emit(EventKind::WaitStarted {
            next_attempt: reason.next_attempt,
            delay,
            cause: reason.cause,
            source: reason.source,
            elapsed: self.since_start(now),
        });
        // The drain runs inside the wait, cut at the wait's end: draining after it would push
        // the next attempt back by the drain's time, past what the machine decided (and past
        // `Policy::worst_case`). It runs first, on a real timer, so that a virtual wait still
        // leaves the client its real time to read the body.
        //
        // The response is thereby released at the wait's start, not at the next `Send`: if
        // the operation ends at this wait instead (it woke at or past the deadline), there is
        // no body left to return (see `finish`).
        if let Some((body, limits)) = self.body_to_drain(now, until, last) {
            let cut = now.saturating_add(limits.max_time()).min(until);
            let _ = self.race(cut, pin!(transport.drain(body, limits))).await;
        }
        let sleep = self.runtime.sleep_until(until);
        match self.abort() {
            Some(a) => future::or(a.aborted(), sleep).await,
            None => sleep.await,
        }
        let woke = self.runtime.now();
        if self.aborted() {
            let _ = self.machine.handle(woke, Event::Abort);
        }
        self.emitter.emit(EventKind::WaitEnded {
            next_attempt: reason.next_attempt,
            slept: woke.saturating_duration_since(now),
            elapsed: self.since_start(woke),
        });
        self.emitter.clock_after(self.runtime, woke)
    }

    /// Reports the operation's end; an aborted operation's result, whatever its last attempt
    /// left: [`RetryError::Aborted`].
    fn ended_with<E>(&self, outcome: Outcome) -> Result<(), RetryError<E>> {
        self.emitter.emit(EventKind::Finished { outcome });
        if outcome.reason == StopReason::Aborted {
            return Err(RetryError::Aborted(outcome));
        }
        Ok(())
    }

    /// The caller's result when the machine ends the operation with the `response` its last
    /// attempt just got (see [`Self::finish`]).
    // Inlined: the response is then put in the caller's result in place (one move fewer).
    #[inline(always)]
    fn returned<B, E>(
        &self,
        outcome: Outcome,
        response: http::Response<B>,
    ) -> Result<Retried<B>, RetryError<E>> {
        self.ended_with(outcome)?;
        Ok(Retried { response, outcome })
    }

    /// Turns the machine's final outcome and the last attempt's leftovers into the caller's
    /// result.
    fn finish<B, E>(
        &self,
        outcome: Outcome,
        last: Last<B, E>,
    ) -> Result<Retried<B>, RetryError<E>> {
        self.ended_with(outcome)?;
        match last {
            Last::Response(response) => Ok(Retried {
                response: *response,
                outcome,
            }),
            // The client's own timeout is a time-out like the loop's. `Nothing` with a response
            // in the outcome: the machine returned a response the loop had already released
            // (drained during a wait the operation ended at, past the deadline); the time ran
            // out, and the outcome says which response it was.
            // Nothing at all: no attempt went out (a paused origin, the limiter, the
            // deadline before the client was ready).
            Last::Nothing if outcome.last.is_none() => Err(RetryError::NotSent(outcome)),
            Last::TimedOut | Last::Error(_, ErrorKind::Timeout) | Last::Nothing => {
                Err(RetryError::TimedOut(outcome))
            }
            Last::Error(error, kind) => Err(RetryError::Failed {
                error,
                kind,
                outcome,
            }),
        }
    }
}

/// The attempt error of `kind` for `error`, in the class the retrier's override picks (the
/// kind's own class when there is no override or it keeps the default).
pub(crate) fn classified(
    retrier: &Retrier,
    kind: ErrorKind,
    error: &(dyn std::error::Error + 'static),
) -> AttemptError {
    let class = retrier
        .classify
        .as_ref()
        .and_then(|f| f(kind, error))
        .unwrap_or_else(|| kind.class());
    AttemptError::new(kind).with_class(class)
}

/// The parts of `response` that bear on a retry under `policy`, for the request of `plan`
/// (whose method and URI the retrier's response hook reads, when there is one). The fast path (a status the
/// policy does not retry, or one without any of the fields) looks up one or two header names
/// only.
#[inline]
pub(crate) fn response_facts<'r, B>(
    retrier: &Retrier,
    policy: &Policy,
    plan: &Plan,
    response: &'r http::Response<B>,
) -> Response<'r> {
    let headers = response.headers();
    let status = response.status().as_u16();
    let class = match &retrier.classify_response {
        Some(f) => f(&ResponseView {
            method: &plan.method,
            uri: plan.uri(),
            status: response.status(),
            headers,
        }),
        None => ResponseClass::ByStatus,
    };
    let mut facts = Response::new(status).class(class);
    // A gRPC pushback bears on a retryable answer (its wait, or a stop) and on a final gRPC
    // error (a stop counts as a failure to the throttle, as A6 counts it), which only a
    // response hook (the gRPC layer's) makes of a 200: other responses never look it up.
    let grpc = matches!(class, ResponseClass::Retryable | ResponseClass::FinalError);
    if grpc && holds(headers, &GRPC_RETRY_PUSHBACK_MS) {
        facts = facts.pushback_from_http(headers);
    }
    // `Date` matters only as the reference of a `Retry-After` or an `X-RateLimit-Reset`:
    // without those fields, it is not looked up.
    if holds(headers, &http::header::RETRY_AFTER) {
        facts = facts.retry_after_from_http(headers);
    }
    // The rate-limit fields matter only on a retryable status or a 403 (which an exhausted
    // quota makes a rate-limit answer): a 200 looks none of them up.
    if policy.rate_limit_fields_bear_on(status, class) {
        facts = facts.rate_limit_from_http(headers);
    }
    if facts.retry_after.is_some() || facts.x_rate_limit_reset.is_some() {
        // Only an HTTP-date `Retry-After` or a Unix-time reset needs the wall clock.
        facts = facts.wall_clock(retrier.wall_clock.now());
    }
    facts
}

/// The gRPC server's pushback field (gRFC A6).
static GRPC_RETRY_PUSHBACK_MS: http::HeaderName =
    http::HeaderName::from_static(backstop_core::grpc::RETRY_PUSHBACK_MS);

/// Whether `headers` hold the field `name`: read through for the few fields a response
/// usually has (comparing a standard name is one comparison, cheaper than hashing it), looked
/// up in a larger map.
#[inline]
fn holds(headers: &http::HeaderMap, name: &http::HeaderName) -> bool {
    if headers.keys_len() <= 8 {
        headers.keys().any(|k| k == name)
    } else {
        headers.contains_key(name)
    }
}
