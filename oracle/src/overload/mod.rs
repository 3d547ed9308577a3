//! Checks for the overload-control objects, `OriginGate` and `AdaptiveRateLimiter`, and for
//! the retry machine that consults them: one to four operations (each a `RetryMachine` with
//! the retry oracle's model) share the one gate and/or the one limiter, and a decoded schedule
//! interleaves their steps on one clock (which may go backwards, and which each machine clamps
//! to the latest `now` it saw), since the objects matter only across operations. Every call a
//! machine makes to them is logged, and checked in order, after every step:
//!
//! - no panic; every retry-machine check of `crate::machine` still holds for each operation
//!   (its waits, sends, deadline, outcome, budget, determinism), where a wait for a shared
//!   object is bounded by the deadline only (a gate's closing and spread, or a trip's break,
//!   may exceed the policy's own bounds on its waits);
//! - a machine asks the gate (then, only if the gate admits it, the limiter) exactly when a
//!   send is due and not yet admitted, at its own `now`, with the attempt's timeout as the
//!   probe's lease; `AttemptStarted` is accepted only once a poll said `Send`; a refused event
//!   calls nothing and changes nothing, shared objects included; two polls agree and the
//!   second asks nothing;
//! - what a held-back attempt becomes: a `Wait` until the object's instant (at least a
//!   nanosecond away), its source `OriginPaused`/`RateLimited`, its cause `None` for a first
//!   attempt (else the retry's), or, when that wait would reach the deadline or a first
//!   attempt fails fast, the end with `StopReason::OriginPaused`/`RateLimited`: no operation
//!   sends at or after its deadline, and no wait of any source ends at or after it;
//! - every attempt's end reaches the gate once, at the machine's `now`, with its start, its
//!   back-off (`Retry-After` on a 429, a 503 or a 403 that is a rate-limit answer the
//!   caller's class did not make final, else an exhausted quota's reset, cut at
//!   `max_retry_after`), whether it failed and whether it was the probe; the caller's abort
//!   and a permanent error say nothing of the server and are not reported;
//! - a probe the gate admitted that is not sent is handed back at once
//!   (`Gate::probe_not_sent`, naming the instant of its admission): the limiter held it back,
//!   or its operation ended first (the caller's abort, the deadline); an abort calls nothing
//!   else;
//! - the gate: once a back-off signal of `d` was reported at `t`, nothing is admitted (`Open`
//!   or `Probe`) before `t + d` until a probe's answer opens it again; every caller held back
//!   is told its own reopening within `[until, until + min(spread, d / 10)]`; one probe at a
//!   time while its lease runs, the others told to ask again after `[recheck, 2 × recheck]`;
//!   a hand-back frees the lease of the probe it names, and changes nothing when a later
//!   probe was admitted since;
//!   only a probe's answer without a back-off opens the gate (a failed one closes it again
//!   when the trip is on); the trip closes it for its break exactly when the window's ratio
//!   is reached; an ordinary end without a back-off leaves a gate without a trip as it was;
//! - the same input run twice gives the same decisions, calls, answers and objects' state.

mod decode;
pub(crate) mod shared;
pub(crate) mod watch;

use std::rc::Rc;

use backstop_core::{
    Decision, Event, Gate, Instant, MisuseError, NoGate, NoRateLimiter, OriginGate, Policy,
    RateLimiter, RetryMachine,
};
use rand_core::SeedableRng;

pub(crate) use decode::decode_gate;
pub use decode::{GateSetup, LimiterSetup, Operation, Scenario, Step, Trip, MAX_OPERATIONS};
use shared::{Call, Consulted, GateView, LimiterView, Log, Objects, SharedGate, SharedLimiter};
use watch::{Before, Consulting, Watch};

use crate::machine::{event_of, time_of, Action, Ledger, Model, Paused};

/// A machine of the scenario: the default RNG, books for its budget, and its handles to the
/// shared objects.
type Machine<G, L> = RetryMachine<rand_pcg::Pcg64Mcg, Ledger, G, L>;

/// Runs every overload check on `data`.
pub fn check(data: &[u8]) {
    let scenario = Scenario::decode(data);
    let Ok(policy) = scenario.policy else {
        return; // an invalid configuration is refused by `build`, which is all it may do
    };
    if let Some(setup) = &scenario.gate {
        let built = OriginGate::new(setup.config);
        assert_eq!(
            built.is_ok(),
            setup.valid(),
            "OriginGate::new and the documented ranges disagree on {setup:?}: {:?}",
            built.err()
        );
        if built.is_err() {
            return;
        }
    }
    crate::twice_alike(
        || dispatch(&scenario, policy),
        "decisions, calls and shared state",
    );
}

fn dispatch(s: &Scenario, policy: Policy) -> Vec<Trace> {
    match (s.gate.is_some(), s.limiter.is_some()) {
        (true, true) => run::<SharedGate, SharedLimiter>(s, policy),
        (true, false) => run::<SharedGate, NoRateLimiter>(s, policy),
        (false, true) => run::<NoGate, SharedLimiter>(s, policy),
        (false, false) => run::<NoGate, NoRateLimiter>(s, policy),
    }
}

/// What a run produced, compared between two runs for determinism.
#[derive(Debug, PartialEq)]
enum Trace {
    Polled(usize, Decision),
    Handled(usize, Result<(), MisuseError>),
    Calls(Vec<Call>),
    NextDeadline(Option<Instant>),
    Gate(Option<GateView>),
    Limiter(Option<LimiterView>),
}

/// One operation of the scenario.
struct Op<G, L> {
    m: Machine<G, L>,
    model: Model,
    consulting: Consulting,
}

/// Runs a scenario once, checking every step; returns the trace for the determinism check.
fn run<G, L>(s: &Scenario, policy: Policy) -> Vec<Trace>
where
    G: Gate + Consulted,
    L: RateLimiter + Consulted,
{
    let log = Log::default();
    let objects = Objects {
        gate: s
            .gate
            .map(|setup| Rc::new(OriginGate::new(setup.config).expect("checked by `check`"))),
        limiter: s.limiter.map(|setup| Rc::new(setup.build())),
        log: log.clone(),
    };
    let paused = Paused {
        gate: G::ACTIVE,
        limiter: L::ACTIVE,
    };
    let mut ops: Vec<Op<G, L>> = s
        .operations
        .iter()
        .map(|o| {
            let rng = rand_pcg::Pcg64Mcg::seed_from_u64(o.seed);
            let ledger = Ledger::sharing(log.muted.clone());
            let m = RetryMachine::with_overload(
                policy,
                o.request,
                rng,
                ledger.clone(),
                G::consult(&objects),
                L::consult(&objects),
                o.start,
            );
            let mut model = Model::new(policy, o.request, o.idempotency_key.as_deref(), o.start);
            model.ledger = ledger;
            model.paused = paused;
            assert_eq!(m.next_deadline(), None, "a fresh machine is ready to send");
            Op {
                m,
                model,
                consulting: Consulting::default(),
            }
        })
        .collect();
    let mut watch = Watch::new(s.gate, s.limiter);
    if let Some(limiter) = objects.limiter.as_deref() {
        let v = LimiterView::of(limiter);
        let fresh = (
            v.enabled_at,
            v.throttles,
            v.capacity,
            v.fill_rate,
            v.max_capacity,
        );
        assert_eq!(
            fresh,
            (None, 0, 0.0, 0.5, 1.0),
            "a new limiter is off and empty"
        );
    }
    let mut clock = s.operations[0].start;
    let mut trace = Vec::with_capacity(s.steps.len() * 4);
    for step in &s.steps {
        let k = step.operation;
        let op = &mut ops[k];
        let fed = time_of(&step.time, clock, op.model.deadline, op.m.next_deadline());
        clock = fed;
        let before = Before::of(&op.model);
        let calls = match &step.action {
            Action::Poll => {
                op.model.now = op.model.now.max(fed);
                let d = op.m.poll(fed);
                let calls = log.take();
                op.model.observe(&d);
                assert_eq!(op.m.poll(fed), d, "two polls at the same time must agree");
                assert_eq!(log.take(), [], "a second poll asked again");
                watch.polled(
                    fed,
                    &before,
                    &mut op.model,
                    &mut op.consulting,
                    &d,
                    &calls,
                    &policy,
                );
                trace.push(Trace::Polled(k, d));
                calls
            }
            Action::Abort => {
                op.model.now = op.model.now.max(fed);
                let result = op.m.handle(fed, Event::Abort);
                op.model.aborted(result);
                let calls = log.take();
                watch.aborted(&before, &mut op.consulting, &calls);
                trace.push(Trace::Handled(k, result));
                calls
            }
            action => {
                // What a poll at `fed` would say: a pure observation, on a clone whose calls
                // are muted.
                let peek = op.model.ledger.muted(|| op.m.clone().poll(fed));
                let state = format!("{:?}", op.m);
                let (event, asked) = event_of(action, &policy);
                let result = op.m.handle(fed, event);
                let calls = log.take();
                if result.is_err() {
                    assert_eq!(
                        format!("{:?}", op.m),
                        state,
                        "a refused {action:?} at {fed:?} changed the machine"
                    );
                }
                op.model.handled(fed, &peek, action, asked, result, &op.m);
                watch.handled(
                    fed,
                    &before,
                    &mut op.consulting,
                    action,
                    asked,
                    result,
                    &calls,
                    &policy,
                );
                trace.push(Trace::Handled(k, result));
                calls
            }
        };
        watch.calls(&calls);
        op.model.after(&op.m);
        assert_eq!(
            log.take(),
            [],
            "an observation on a clone reached a shared object"
        );
        let limiter = objects.limiter.as_deref().map(LimiterView::of);
        watch.after(limiter);
        trace.push(Trace::Calls(calls));
        trace.push(Trace::NextDeadline(op.m.next_deadline()));
        trace.push(Trace::Gate(
            objects.gate.as_deref().map(|g| GateView::of(g, clock)),
        ));
        trace.push(Trace::Limiter(limiter));
    }
    trace
}
