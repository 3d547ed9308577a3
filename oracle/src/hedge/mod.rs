//! Checks for `HedgeMachine`: an arbitrary valid policy (the retry scenario's, with or without
//! a hedging policy: fixed or adaptive delay, 2 to 10 copies), request, seed, start, latency
//! tracker contents and budget denials, then an arbitrary sequence of time steps and events
//! (copies started, answers of every kind for any copy number, cancels acknowledged, timer
//! firings, aborts, misplaced events, `now` going backwards), with the machine's documented
//! rules checked after every step by a model that knows only what a driver sees:
//!
//! - no panic; a misplaced event (a start that is not due, an answer for a copy not in
//!   flight, a cancel not asked for, any copy number) is a `MisuseError` and changes nothing at
//!   all (the machine's whole state, its clock, budget and latencies included);
//! - never more than `max_attempts` copies (the policy's, or 1 for a request that may not be
//!   hedged: a method not retried, a POST/PATCH without its key, a body that cannot be sent
//!   again, a policy without hedging), never more in flight than `worst_case().in_flight`; a
//!   `Send` names the next copy, never at or after the deadline, with a timeout that ends by it;
//! - the schedule: the first copy at once; copy k `delay` after copy k−1's start while
//!   nothing non-final has arrived, at once after a non-final answer (a retryable status, a
//!   retryable error or a timeout) since that start, never before a server floor
//!   (`Retry-After`, a rate-limit reset; within its spread); its trigger says which; a copy
//!   that is due is sent, one that is not is not; every `Wait` ends exactly at the earliest of
//!   the next copy and the copies' timeouts, and a wait after an answer is within
//!   `worst_case().wait`;
//! - the adaptive delay is the tracker's `100 − max_extra_load` percentile of the latencies it
//!   held (read at its bucket's upper edge, at least 1 ms), and none below `min_samples`;
//! - the winner: the first final answer (a status the policy does not retry) wins, every copy
//!   in flight then gets a `Cancel` naming it, and the response is returned only once every
//!   cancel is acknowledged; a retryable answer never wins, nor ends the operation while
//!   another copy is in flight or one is still coming; no answer is taken after the winner, no
//!   copy sent after it or after an abort; a permanent error and an abort cancel every copy;
//! - at `Return`/`GiveUp` no copy is in flight or still to drop, and the outcome is exactly the
//!   rules' (copies sent, winner, copies cancelled, suppressed and why, the last response else
//!   the last error, its `Retry-After`, the stop reason, the time elapsed), and repeats forever;
//! - the budget: it hears of the operation once, when its first copy starts (never for an
//!   operation that sent nothing); every copy after the first is asked for when it is due and
//!   paid for once; a denial suppresses it and every later one while the copies in flight run
//!   on; a grant for a copy never sent is given back; the budget hears of every non-final
//!   answer and timeout (failures) and of a 2xx or 3xx winner (a success), not of a 4xx or
//!   5xx winner, aborts or permanent errors;
//! - the tracker is fed one sample per operation that sent a copy, and nothing else: the first
//!   copy's latency, from its send to its timeout or the operation's end, whichever came
//!   first; so an operation hedged on the delay records at least the delay (what keeps the
//!   adaptive delay's extra load under its bound);
//! - after every `handle`/`poll`, `next_deadline()` is `None` or later than the latest `now`;
//!   polling twice gives the same decision; the same input run twice gives the same decisions.
//!
//! The same scenario then runs on a machine that consults an origin gate and/or a send-rate
//! limiter (set up from its seed), whose every call to them is checked (see `overload`); and
//! its first copy is sent before the machine is made, as the front doors send it, which must
//! change nothing (see `first_copy`).

mod books;
mod decode;
mod first_copy;
mod model;
mod overload;

use backstop_core::{HedgeDecision, HedgeMachine, Instant, MisuseError, Policy};
use rand_core::SeedableRng;

use books::{muted, Books, Samples};
pub(crate) use decode::decode_hedging;
use decode::Action;
pub use decode::Scenario;
use model::Model;

/// The machine under test: the default RNG, a budget that keeps the books, a tracker that
/// lists what it is fed.
type Machine = HedgeMachine<rand_pcg::Pcg64Mcg, Books, Samples>;

/// Runs every hedging check on `data`.
pub fn check(data: &[u8]) {
    let scenario = Scenario::decode(data);
    let Ok(policy) = scenario.policy else {
        return; // an invalid configuration is refused by `build`, which is all it may do
    };
    crate::twice_alike(|| run(&scenario, policy), "decisions");
    crate::twice_alike(
        || overload::run(&scenario, policy),
        "decisions, calls and shared state",
    );
    first_copy::run(&scenario, policy);
}

/// What a run produced, compared between two runs for determinism.
#[derive(Debug, PartialEq)]
enum Trace {
    Polled(HedgeDecision),
    Handled(Result<(), MisuseError>),
    NextDeadline(Option<Instant>),
}

/// What a machine for `s` is made of besides its policy and request: the seeded generator, and
/// a budget and a latency tracker as the scenario sets them up. Fresh for each machine: a
/// machine's clones share its budget and tracker.
fn parts(s: &Scenario) -> (rand_pcg::Pcg64Mcg, Books, Samples) {
    (
        rand_pcg::Pcg64Mcg::seed_from_u64(s.seed),
        Books::new(s.denials),
        Samples::new(s.window, s.start, &s.samples),
    )
}

/// The machine `with_budget` makes for `s` under `policy`, with the budget and the tracker it
/// shares with its clones.
fn made(s: &Scenario, policy: Policy) -> (Machine, Books, Samples) {
    let (rng, books, samples) = parts(s);
    let machine = HedgeMachine::with_budget(
        policy,
        s.request,
        rng,
        books.clone(),
        samples.clone(),
        s.start,
    );
    (machine, books, samples)
}

/// Runs a scenario once, checking every step; returns the trace for the determinism check.
fn run(s: &Scenario, policy: Policy) -> Vec<Trace> {
    let (mut m, books, samples) = made(s, policy);
    let mut model = Model::new(s, policy, books, samples, &m);
    let mut trace = Vec::with_capacity(s.steps.len() * 2);
    for step in &s.steps {
        let fed = model.time(&step.time, &m);
        match &step.action {
            Action::Poll => {
                let denied = model.books.denied();
                let d = m.poll(fed);
                assert_eq!(m.poll(fed), d, "two polls at the same time must agree");
                model.polled(fed, &d, &m, denied);
                trace.push(Trace::Polled(d));
            }
            action => {
                let (copy, event, asked) = model.event_for(action, &policy);
                // What a poll at `fed` would say: a pure observation, on a clone.
                let probe = muted(&model.books, &model.samples, || m.clone().poll(fed));
                let state = format!("{m:?}");
                let result = m.handle(fed, event);
                if result.is_err() {
                    assert_eq!(
                        format!("{m:?}"),
                        state,
                        "a refused {event:?} at {fed:?} changed the machine"
                    );
                }
                model.handled(fed, action, copy, asked, &probe, result, &m);
                trace.push(Trace::Handled(result));
            }
        }
        model.after(&m);
        trace.push(Trace::NextDeadline(m.next_deadline()));
    }
    trace
}
