//! The hedging loop: several copies of one request in flight, the first final answer wins.
//!
//! Rule (the hedging machine's driver contract, `backstop::machine::HedgeMachine`): poll the
//! machine and act on its decision. A copy is a future the loop owns; the loop polls every copy in
//! flight together with one timer (the next copy's delay or the first timeout, as the machine's
//! `Wait` says) and the abort, reports the first copy that ends, and polls the machine again. A
//! copy the machine cancels is dropped where it stands, which cancels its request: on HTTP/1.1 its
//! connection is closed (the response is not read), on HTTP/2 its stream is reset. A discarded
//! response (a non-final answer) is dropped, not drained: another copy may be in flight on the pool
//! already. After an abort nothing is sent.
//!
//! The first copy goes out before the machine is made (`HedgeMachine::first_copy`), raced like
//! any copy: the usual hedged operation, whose first copy answers with a final status before the
//! hedging delay, ends there with the outcome the machine would give and costs what a plain
//! request costs. Anything else makes the machine in the state the first copy's start left, and
//! the loop goes on from there.
//!
//! Overload control holds copies as it holds retries: the machine asks the origin's gate
//! ([`Retrier::origin_gates`]) and the send-rate limiter ([`Retrier::rate_limiter`]) before
//! every copy, the first too. A copy they hold back is not sent; it goes out at the later of
//! its hedging delay (or the answer that called for it) and the hold's end, while the copies
//! in flight run on, or not at all when the hold reaches the deadline (`origin_paused`,
//! `rate_limited`). Every copy's answer is reported to them, and the loop emits what it did
//! (`GateClosed`, `GateReopened`, `RateLimiterEnabled`), as the retry loop does.

mod copies;

use core::future::Future;
use core::pin::{pin, Pin};
use core::time::Duration;

use futures_lite::future;

use crate::abort::Abort;
use crate::observe::events::EventKind;
use crate::observe::Emitter;
use crate::outcome::{Retried, RetryError};
use crate::overload::{AttemptEnd, Marks, SharedGate, SharedLimiter};
use crate::race::{Race, Raced, Racer};
use crate::request::{Attempt, Plan};
use crate::retrier::{LazyRng, Retrier, SharedBudget};
use crate::run::{classified, response_facts};
use crate::runtime::Runtime;
use crate::timed_out::AttemptTimedOut;
use backstop_core::{
    AttemptError, AttemptOutcome, FirstCopy, HedgeDecision, HedgeEvent, HedgeMachine, HedgeTrigger,
    Instant, LatencyTracker, Request, Response,
};
use backstop_core::{ErrorKind, HedgeOutcome, Policy, StopReason};
use copies::{Copies, SentCopy};

/// What the machines know of the request in `plan` when an operation under `policy` is
/// hedged ([`Policy::hedges`]): the policy hedges and the request may be sent again by its
/// method alone, with a body that can be sent again. `None`: any other request goes through
/// the retry loop: a keyed POST or PATCH is retried there (its copies never overlap, so none
/// meets the 409 its server gives a concurrent repeat of the key), anything else is sent
/// once (or retried where the policy allows, e.g. a connection that was never made).
pub(crate) fn hedges(policy: &Policy, plan: &Plan) -> Option<Request> {
    // Most policies do not hedge: their requests' facts are not read here.
    policy.hedging()?;
    let facts = plan.facts();
    policy.hedges(facts).then_some(facts)
}

/// Runs one hedged operation of the request `plan` holds (`facts`: what [`hedges`] read of
/// it): `send` makes copy `n`'s future (it owns what it needs: the loop
/// holds several at once), `error_kind` names a client error's kind, and `finish` makes the
/// front door's output of the caller's result and what hedging did. The policy is the plan's
/// own, else the retrier's (borrowed, not copied). The retrier and the runtime come through
/// `Deref` (owned or borrowed): this future is the one a front door boxes, not one awaited
/// inside another (each nesting moves its kilobytes once more).
// Not an `async fn`, whose future would hold the plan and `send` twice (the arguments, and
// the bindings they move to): the block works on what it captured.
#[allow(clippy::manual_async_fn)]
pub(crate) fn run_hedged<Rr, Rh, RT, F, Fut, B, E, K, Fin, O>(
    retrier: Rr,
    runtime: Rh,
    mut plan: Plan,
    facts: Request,
    mut send: F,
    error_kind: K,
    finish: Fin,
) -> impl Future<Output = O> + use<Rr, Rh, RT, F, Fut, B, E, K, Fin, O>
where
    Rr: core::ops::Deref<Target = Retrier>,
    Rh: core::ops::Deref<Target = RT>,
    RT: Runtime + ?Sized,
    F: FnMut(Attempt<()>) -> Fut,
    Fut: Future<Output = Result<http::Response<B>, E>>,
    E: std::error::Error + 'static,
    K: Fn(&E) -> ErrorKind,
    Fin: FnOnce(Result<Retried<B>, RetryError<E>>, HedgeOutcome) -> O,
{
    async move {
        let (retrier, runtime): (&Retrier, &RT) = (&retrier, &runtime);
        let abort = plan.abort.take();
        let start = runtime.now();
        let origin = plan.origin.take();
        let plan = &plan;
        let op = Operation {
            retrier,
            runtime,
            plan,
            emitter: Emitter::new(&retrier.observers, retrier.metrics.as_ref(), plan),
            abort: abort.as_ref(),
            start,
            error_kind,
        };
        // The request's own policy, else the retrier's: borrowed, not copied.
        let policy = plan.policy.as_deref().unwrap_or(retrier.policy());
        let parts = || {
            (
                retrier.next_rng(),
                retrier.budget.clone(),
                &*retrier.latencies,
                SharedGate::of(retrier.gates.as_deref(), origin, start),
                SharedLimiter(retrier.limiter.as_deref()),
            )
        };
        let mut copies = pin!(Copies::new());
        let mut last = Leftovers::default();
        let mut now = start;
        // The first copy goes out as a plain request does, with no machine (`FirstCopy`):
        // when it answers with a final status before the hedging delay, the operation ends
        // as the machine would end it. Anything else (or a gate or limiter to ask first, an
        // abort already) makes the machine, which then drives the operation. (A block: what
        // it leaves behind is gone before the loop, not kept in the future's room.)
        let mut machine: Box<Machine<'_>> = 'first: {
            let first = match op.first_copy(policy, facts, parts) {
                Ok(first) => first,
                Err(machine) => break 'first machine,
            };
            let copy = (1, first.timeout(), HedgeTrigger::First);
            now = op.send_copy(&mut send, copies.as_mut(), copy, start);
            let until = first.wait_until();
            // The observers took the hedging delay: the machine decides at once.
            if now >= until {
                break 'first machine_of(first);
            }
            let raced = op.race(until, copies.as_mut()).await;
            let ended = runtime.now();
            let (Raced::Done((0, Ok(response))), false) = (&raced, op.aborted()) else {
                let mut machine = machine_of(first);
                match op.raced(&mut machine, copies.as_mut(), &mut last, (raced, ended)) {
                    Next::At(after) => now = after,
                    Next::Done(result, done) => return finish(result, done),
                }
                break 'first machine;
            };
            // Taken out before its answer is read, as the loop takes out a copy that answered.
            // The answer is read once (the response hook runs once per response), for the
            // first copy or for the machine made of it.
            let sent = copies.as_mut().take(0);
            let facts = response_facts(retrier, first.policy(), plan, response);
            let first = match first.answered(ended, &facts) {
                // The usual hedged success: the first copy's final answer, before the delay. No
                // gate or limiter was engaged (else the machine sends the first copy): there
                // are no marks to compare.
                Ok(done) => {
                    let status = AttemptOutcome::Response(facts.status);
                    op.announce((1, sent.as_ref()), ended, status, None);
                    ended_with(&op.emitter, done);
                    // Matched by reference above, moved once here (the response is large).
                    let Raced::Done((_, Ok(response))) = raced else {
                        unreachable!("matched above")
                    };
                    let outcome = done.outcome;
                    return finish(Ok(Retried { response, outcome }), done);
                }
                Err(first) => first,
            };
            let mut machine = machine_of(first);
            let answer = Answer::Response(facts);
            op.copy_ended(&mut machine, (1, sent.as_ref()), ended, answer);
            let Raced::Done((_, Ok(response))) = raced else {
                unreachable!("matched above")
            };
            match op.after_response(&mut machine, &mut last, response, ended) {
                Next::At(after) => now = after,
                Next::Done(result, done) => return finish(result, done),
            }
            machine
        };
        // Bounded by the machine: at most `max_copies` sends and as many cancels, and every wait
        // ends at a copy's timeout or the next copy's delay, all by the deadline.
        loop {
            now = match machine.poll(now) {
                HedgeDecision::Send {
                    copy,
                    timeout,
                    trigger,
                } => {
                    if op.aborted() {
                        let _ = machine.handle(now, HedgeEvent::Abort);
                        continue;
                    }
                    // Cannot fail: the machine has just decided to send this copy.
                    let _ = machine.handle(now, HedgeEvent::Started { copy });
                    op.send_copy(&mut send, copies.as_mut(), (copy, timeout, trigger), now)
                }
                HedgeDecision::Cancel { copy, reason } => {
                    // Dropping the future cancels its request.
                    if let Some(cancelled) = copies.as_mut().take(copy as usize - 1) {
                        cancelled.span.cancelled(reason.as_str());
                    }
                    // Cannot fail: the machine has just asked for this cancel.
                    let _ = machine.handle(now, HedgeEvent::Cancelled { copy });
                    op.emitter.emit(EventKind::CopyCancelled {
                        copy,
                        reason,
                        elapsed: now.saturating_duration_since(start),
                    });
                    op.emitter.clock_after(runtime, now)
                }
                // Nothing in flight: a wait between copies (a server's floor), which a runtime
                // may skip (`VirtualTime`), raced against the abort only.
                HedgeDecision::Wait {
                    until,
                    in_flight: 0,
                } => {
                    let sleep = runtime.sleep_until(until);
                    match op.abort {
                        Some(a) => future::or(a.aborted(), sleep).await,
                        None => sleep.await,
                    }
                    let woke = runtime.now();
                    if op.aborted() {
                        let _ = machine.handle(woke, HedgeEvent::Abort);
                    }
                    op.emitter.clock_after(runtime, woke)
                }
                HedgeDecision::Wait { until, .. } => {
                    let raced = op.race(until, copies.as_mut()).await;
                    let ended = runtime.now();
                    match op.raced(&mut machine, copies.as_mut(), &mut last, (raced, ended)) {
                        Next::At(after) => after,
                        Next::Done(result, done) => return finish(result, done),
                    }
                }
                HedgeDecision::Return(done) | HedgeDecision::GiveUp(done) => {
                    ended_with(&op.emitter, done);
                    return finish(last.finish(done, None), done);
                }
                // The machine has no other decision today; a new one is polled again.
                _ => now,
            };
        }
    }
}

/// The hedging machine a hedged operation drives.
type Machine<'a> = HedgeMachine<
    LazyRng,
    SharedBudget,
    &'a LatencyTracker,
    SharedGate,
    SharedLimiter<'a>,
    &'a Policy,
>;

/// What the machine of a hedged operation is made of, but its policy and request.
type Parts<'a> = (
    LazyRng,
    SharedBudget,
    &'a LatencyTracker,
    SharedGate,
    SharedLimiter<'a>,
);

/// A hedged operation's first copy before its machine is made (see `FirstCopy`).
type First<'a> =
    FirstCopy<LazyRng, SharedBudget, &'a LatencyTracker, SharedGate, SharedLimiter<'a>, &'a Policy>;

/// The copy (by index) that ended first, with its client's result.
type Answered<B, E> = (usize, Result<http::Response<B>, E>);

/// What the loop does after the copies' race: polls the machine again at this instant, or
/// ends the operation with this result.
// The result goes straight to the front door's `finish`: boxing it would add an allocation.
#[allow(clippy::large_enum_variant)]
enum Next<B, E> {
    At(Instant),
    Done(Result<Retried<B>, RetryError<E>>, HedgeOutcome),
}

/// One hedged operation: what its loop reads.
struct Operation<'a, RT: ?Sized, K> {
    retrier: &'a Retrier,
    runtime: &'a RT,
    plan: &'a Plan,
    emitter: Emitter<'a, Plan>,
    abort: Option<&'a Abort>,
    start: Instant,
    /// Names a client error's kind.
    error_kind: K,
}

impl<RT: Runtime + ?Sized, K> Racer for Operation<'_, RT, K> {
    type Runtime = RT;

    fn runtime(&self) -> &RT {
        self.runtime
    }

    fn abort(&self) -> Option<&Abort> {
        self.abort
    }
}

impl<'a, RT: Runtime + ?Sized, K> Operation<'a, RT, K> {
    fn aborted(&self) -> bool {
        self.abort.is_some_and(Abort::is_aborted)
    }

    /// Races the copies in flight against `until` (the next copy's delay or the first
    /// timeout: the machine's `Wait`) and the abort: the first copy to end, by index, with
    /// its output.
    fn race<'r, Fut: Future>(
        &'r self,
        until: Instant,
        copies: Pin<&'r mut Copies<Fut>>,
    ) -> Race<'r, Copies<Fut>, Self> {
        Race::new(self, until, copies)
    }

    /// Sends copy `copy` with its `timeout` (for `trigger`) at `now`: `send` makes its future
    /// inside its span, `copies` holds it, and the observers hear `CopySent`. Returns the
    /// clock after them.
    // Inlined: the future is made in its place.
    #[inline(always)]
    fn send_copy<Fut: Future>(
        &self,
        send: &mut impl FnMut(Attempt<()>) -> Fut,
        copies: Pin<&mut Copies<Fut>>,
        (copy, timeout, trigger): (u32, Duration, HedgeTrigger),
        now: Instant,
    ) -> Instant {
        let span = self.emitter.attempt_span(copy);
        let future = span.scope(|| {
            send(Attempt {
                number: copy,
                timeout,
                request: http::Request::new(()),
            })
        });
        let sent = SentCopy {
            span,
            at: now,
            timeout,
        };
        copies.put(copy as usize - 1, future, sent);
        self.emitter.emit(EventKind::CopySent {
            copy,
            trigger,
            elapsed: now.saturating_duration_since(self.start),
        });
        self.emitter.clock_after(self.runtime, now)
    }

    /// The operation's first copy, to send before the machine is made (what the machine will
    /// be made of: 128 bytes of the operation's future); or the machine, boxed, when it has to
    /// decide first (a gate or a limiter to ask, an abort already).
    // Inlined: the parts are made in place.
    #[inline(always)]
    fn first_copy(
        &self,
        policy: &'a Policy,
        facts: Request,
        parts: impl FnOnce() -> Parts<'a>,
    ) -> Result<First<'a>, Box<Machine<'a>>> {
        let (rng, budget, latencies, gate, limiter) = parts();
        if self.aborted() {
            return Err(Box::write(
                Box::new_uninit(),
                HedgeMachine::with_overload(
                    policy, facts, rng, budget, latencies, gate, limiter, self.start,
                ),
            ));
        }
        HedgeMachine::first_copy(
            policy, facts, rng, budget, latencies, gate, limiter, self.start,
        )
        .map_err(Box::new)
    }

    /// Acts on how the copies' race ended (`raced`, the clock read `ended` after it): reports
    /// an answer, the timeouts that came or the abort to the machine, keeps what the caller
    /// may get in `last`, and says what comes next.
    fn raced<B, E, Fut>(
        &self,
        machine: &mut Machine<'a>,
        mut copies: Pin<&mut Copies<Fut>>,
        last: &mut Leftovers<B, E>,
        (raced, ended): (Raced<Answered<B, E>>, Instant),
    ) -> Next<B, E>
    where
        Fut: Future<Output = Result<http::Response<B>, E>>,
        E: std::error::Error + 'static,
        K: Fn(&E) -> ErrorKind,
    {
        match raced {
            Raced::Done((i, _)) if self.aborted() => {
                copies.as_mut().take(i);
                let _ = machine.handle(ended, HedgeEvent::Abort);
            }
            Raced::Done((i, result)) => {
                let answered = copies.as_mut().take(i);
                let copy = i as u32 + 1;
                // The answer is read where it is; only what is kept moves on.
                let (answer, kind) = match &result {
                    Ok(response) => {
                        let facts =
                            response_facts(self.retrier, machine.policy(), self.plan, response);
                        (Answer::Response(facts), None)
                    }
                    Err(error) => {
                        let kind = (self.error_kind)(error);
                        (
                            Answer::Error(classified(self.retrier, kind, error)),
                            Some(kind),
                        )
                    }
                };
                self.copy_ended(machine, (copy, answered.as_ref()), ended, answer);
                match (result, kind) {
                    (Ok(response), _) => {
                        return self.after_response(machine, last, response, ended)
                    }
                    // Its kind was read above.
                    (Err(error), kind) => last.error = kind.map(|kind| (error, kind)),
                }
            }
            Raced::Aborted => {
                let _ = machine.handle(ended, HedgeEvent::Abort);
            }
            // Copies whose timeout came end with the loop's timeout error (through the caller's
            // override, as on the retry path); else the next copy is due.
            Raced::TimedOut => {
                // Dropping the future cancels its request.
                while let Some((i, timed_out)) = copies.as_mut().take_timed_out(ended) {
                    let copy = i as u32 + 1;
                    let e = classified(
                        self.retrier,
                        ErrorKind::Timeout,
                        &AttemptTimedOut::new(copy, timed_out.timeout),
                    );
                    let sent = Some(&timed_out);
                    self.copy_ended(machine, (copy, sent), ended, Answer::Error(e));
                }
            }
        }
        Next::At(self.emitter.clock_after(self.runtime, ended))
    }

    /// What follows a copy's `response` (reported to the machine at `ended`): the end of the
    /// operation with it, or it is kept in `last` (boxed: it may still be returned, in place of
    /// the previous one) and the machine decides again.
    fn after_response<B, E>(
        &self,
        machine: &mut Machine<'a>,
        last: &mut Leftovers<B, E>,
        response: http::Response<B>,
        ended: Instant,
    ) -> Next<B, E> {
        let after = self.emitter.clock_after(self.runtime, ended);
        match machine.poll(after) {
            // The operation ends with this response (returned from here, never kept in `last`).
            HedgeDecision::Return(done) | HedgeDecision::GiveUp(done) => {
                ended_with(&self.emitter, done);
                let last = core::mem::take(last);
                Next::Done(last.finish(done, Some(response)), done)
            }
            _ => {
                last.response = Some(Box::new(response));
                Next::At(after)
            }
        }
    }

    /// Reports copy `copy`'s end (`answer`, at `ended`) to the machine and tells the observers
    /// (see [`Self::announce`]).
    fn copy_ended(
        &self,
        machine: &mut Machine<'_>,
        (copy, sent): (u32, Option<&SentCopy>),
        ended: Instant,
        answer: Answer<'_>,
    ) {
        let marks = Marks::of(machine.gate(), machine.rate_limiter(), &self.emitter);
        let (event, outcome) = match answer {
            Answer::Response(response) => {
                let outcome = AttemptOutcome::Response(response.status);
                (HedgeEvent::Response { copy, response }, outcome)
            }
            Answer::Error(error) => (
                HedgeEvent::Error { copy, error },
                AttemptOutcome::Error(error),
            ),
        };
        // Cannot fail: the copy is in flight until its end is reported.
        let _ = machine.handle(ended, event);
        let marks = marks.map(|marks| (marks, (machine.gate(), machine.rate_limiter())));
        self.announce((copy, sent), ended, outcome, marks);
    }

    /// Records copy `copy`'s end (`outcome`, at `ended`) on its span, and tells the observers:
    /// its `AttemptEnded`, then what the report did to the gate and the limiter (their `marks`
    /// from before it, with the gate and the limiter). `sent`: what the loop kept of the copy
    /// (none: counted from `ended`).
    fn announce(
        &self,
        (copy, sent): (u32, Option<&SentCopy>),
        ended: Instant,
        outcome: AttemptOutcome,
        marks: Option<(Marks, (&SharedGate, &SharedLimiter<'_>))>,
    ) {
        if let Some(sent) = sent {
            sent.span.ended(&outcome);
        }
        let end = AttemptEnd {
            attempt: copy,
            outcome,
            sent: sent.map_or(ended, |s| s.at),
            ended,
        };
        end.announce(&self.emitter, marks, self.start);
    }
}

/// The machine `first` makes, boxed: the machine (its ten copies' states) would take the
/// operation's future past glibc's per-thread cache (1,032 bytes), where its allocation costs
/// more than two. Written into its allocation: with the constructor inlined, nothing is copied.
#[inline(always)]
fn machine_of(first: First<'_>) -> Box<Machine<'_>> {
    Box::write(Box::new_uninit(), first.into_machine())
}

/// How a copy ended: with a response (what the rules read of it), or an attempt error.
enum Answer<'r> {
    Response(Response<'r>),
    Error(AttemptError),
}

/// Reports the operation's end: what hedging did, then `Finished`.
fn ended_with(emitter: &Emitter<'_, Plan>, done: HedgeOutcome) {
    emitter.emit(EventKind::Hedged {
        winner: done.winner,
        cancelled: done.cancelled,
        suppressed: done.suppressed,
        suppressed_by: done.suppressed_by,
    });
    emitter.emit(EventKind::Finished {
        outcome: done.outcome,
    });
}

/// What the copies left for the caller: the last response (boxed: the success path returns
/// its response where it arrives, and never keeps one here), the last client error.
struct Leftovers<B, E> {
    response: Option<Box<http::Response<B>>>,
    error: Option<(E, ErrorKind)>,
}

impl<B, E> Default for Leftovers<B, E> {
    fn default() -> Self {
        Leftovers {
            response: None,
            error: None,
        }
    }
}

impl<B, E> Leftovers<B, E> {
    /// The caller's result for the machine's outcome: the response it names (`arrived`, the
    /// one that just ended the operation, else the last one kept), else the last error.
    fn finish(
        self,
        done: HedgeOutcome,
        arrived: Option<http::Response<B>>,
    ) -> Result<Retried<B>, RetryError<E>> {
        let outcome = done.outcome;
        match (outcome.last, arrived, self.response, self.error) {
            _ if outcome.reason == StopReason::Aborted => Err(RetryError::Aborted(outcome)),
            (Some(AttemptOutcome::Response(_)), Some(response), _, _) => {
                Ok(Retried { response, outcome })
            }
            (Some(AttemptOutcome::Response(_)), None, Some(response), _) => Ok(Retried {
                response: *response,
                outcome,
            }),
            // The machine's own timeout is the last error, or the client's was a timeout.
            (Some(AttemptOutcome::Error(e)), _, _, Some((error, kind)))
                if e.kind == kind && kind != ErrorKind::Timeout =>
            {
                Err(RetryError::Failed {
                    error,
                    kind,
                    outcome,
                })
            }
            // No copy went out (a paused origin, the limiter, the deadline first).
            (None, ..) => Err(RetryError::NotSent(outcome)),
            _ => Err(RetryError::TimedOut(outcome)),
        }
    }
}
