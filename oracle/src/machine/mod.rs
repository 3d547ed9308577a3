//! Checks for `RetryMachine`: an arbitrary valid policy and request, then an arbitrary sequence
//! of time steps and events (responses with any status and any `Retry-After`/`Date` bytes,
//! network errors of every kind and class, timer firings, aborts, misplaced events, `now` going
//! backwards), with the machine's documented invariants checked after every step:
//!
//! - no panic; a misplaced event is a `MisuseError` exactly when the contract says so, and
//!   changes nothing at all (the machine's whole state, its clock included, is as before);
//! - an event meets the state the previous call left: the response (or error) of the attempt
//!   in flight, like an abort, wins over a timeout that no decision reported yet;
//! - attempts started never exceed `max_attempts`, and `Send` always names the next attempt;
//! - every `Wait` is at most `policy.max_wait()`, ends after `now` and before the deadline, and
//!   honours the server's `Retry-After` as a floor within its documented spread; a backoff wait
//!   never exceeds the backoff's cap; the spread never turns a floor that fits before the
//!   deadline into a give-up;
//! - a rate-limit reset is a floor only when its quota is exhausted (`r=0`, a remaining field
//!   of 0, or none on a 429), `RateLimit` with quota left means no floor at all, and a Unix
//!   `X-RateLimit-Reset` more than a day before its reference is malformed (the rule is
//!   restated in `rate_limit_floor`, the IETF field read by `sfv`);
//! - a 403 is final unless it is a rate-limit answer (the policy reads the rate-limit fields,
//!   and it has a usable `Retry-After` or an exhausted quota's reset by the rule above): then
//!   it is a 429, retryable when a 429 is (restated in `event_of`);
//! - a `Send` never happens at or after the deadline, and its timeout never ends past it;
//! - after `Return`/`GiveUp`, every poll repeats the same decision and nothing is sent again;
//! - after an accepted `Abort` the next decision is `GiveUp` with `StopReason::Aborted`;
//! - after every `handle`/`poll`, `next_deadline()` is `None` or later than the latest `now`
//!   (a `now` that goes backwards is clamped to the latest one seen);
//! - a request whose method the policy may not retry (POST/PATCH without a key under the
//!   default, any POST/PATCH under `NonIdempotent::Never`, PUT/DELETE not added) is never sent again once it may have reached the server: only a
//!   `NotSent` error allows another attempt; an `Idempotency-Key` that is empty or only
//!   whitespace is no key (the request is built from the raw value, and the rule is restated
//!   here);
//! - the reason of every terminal decision is consistent with what happened, and `Return` comes
//!   exactly when the last outcome is a response and the operation was not aborted;
//! - the budget pays only for retries sent: it holds exactly the retries sent, plus the one
//!   granted and not sent yet while the machine waits for it or asks for its send, and once
//!   the operation is over (an abort or a deadline during the wait included), exactly the
//!   retries sent; it hears of a final 2xx or 3xx as a success, and of no final 4xx or 5xx;
//!   it hears of the operation once, when its first attempt starts (an operation that sent
//!   nothing earns no retries);
//! - attempts, waits and the time the decisions account for stay within
//!   `Policy::worst_case()`, under a hedging policy too (which this machine ignores: it
//!   retries under the policy's retry settings, as `run` and the blocking clients do);
//! - the same input run twice gives the same decisions, bit for bit.

mod decode;
mod ledger;
mod model;
mod rules;

use core::time::Duration;

use backstop_core::{
    parse_delay_seconds, parse_http_date, parse_retry_after, Decision, Event, Gate, Instant,
    MisuseError, Outcome, Policy, RateLimiter, Response, ResponseClass, RetryAfter, RetryMachine,
    UnixTime, XRateLimitReset,
};
use rand_core::SeedableRng;

pub(crate) use decode::{
    decode_action, decode_duration, decode_error, decode_policy, decode_request, decode_response,
    decode_time_step, Action, TimeStep,
};
pub use decode::{RateLimitFields, Scenario};
pub(crate) use ledger::Ledger;
pub(crate) use model::{time_of, Model, Paused};

/// The machine under test: the default RNG, and a budget that grants every retry and keeps
/// the books.
type Machine = RetryMachine<rand_pcg::Pcg64Mcg, Ledger>;

/// What the model reads of a machine under test, whatever gate and limiter it consults (the
/// overload oracle's machines consult shared ones).
pub(crate) trait Driven: Clone {
    fn next_deadline(&self) -> Option<Instant>;
    fn attempts(&self) -> u32;
    fn outcome(&self) -> Option<Outcome>;
    fn poll(&mut self, now: Instant) -> Decision;
}

impl<G: Gate + Clone, L: RateLimiter + Clone> Driven
    for RetryMachine<rand_pcg::Pcg64Mcg, Ledger, G, L>
{
    fn next_deadline(&self) -> Option<Instant> {
        RetryMachine::next_deadline(self)
    }
    fn attempts(&self) -> u32 {
        RetryMachine::attempts(self)
    }
    fn outcome(&self) -> Option<Outcome> {
        RetryMachine::outcome(self)
    }
    fn poll(&mut self, now: Instant) -> Decision {
        RetryMachine::poll(self, now)
    }
}

/// Runs every machine check on `data`.
pub fn check(data: &[u8]) {
    let scenario = Scenario::decode(data);
    let Ok(policy) = scenario.policy else {
        return; // an invalid configuration is refused by `build`, which is all it may do
    };
    crate::twice_alike(|| run(&scenario, policy), "decisions");
}

/// What a run produced, compared between two runs for determinism.
#[derive(Debug, PartialEq)]
enum Trace {
    Polled(Decision),
    Handled(Result<(), MisuseError>),
    NextDeadline(Option<Instant>),
}

/// Runs a scenario once, checking every step; returns the trace for the determinism check.
fn run(s: &Scenario, policy: Policy) -> Vec<Trace> {
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(s.seed);
    let ledger = Ledger::default();
    let mut m: Machine = RetryMachine::with_budget(policy, s.request, rng, ledger.clone(), s.start);
    let mut model = Model::new(policy, s.request, s.idempotency_key.as_deref(), s.start);
    model.ledger = ledger;
    assert_eq!(
        m.deadline(),
        s.start.saturating_add(policy.max_elapsed()),
        "the deadline is max_elapsed after creation"
    );
    // A fresh machine has decided nothing yet (not even a deadline that `start` already
    // reaches: the first call applies it), so it is only checked, not observed.
    assert_eq!(m.next_deadline(), None, "a fresh machine is ready to send");
    assert_eq!((m.attempts(), m.outcome()), (0, None), "a fresh machine");
    let mut trace = Vec::with_capacity(s.steps.len() * 2);
    for step in &s.steps {
        let fed = model.time(&step.time, &m);
        match &step.action {
            Action::Poll => {
                model.now = model.now.max(fed);
                let d = m.poll(fed);
                model.observe(&d);
                assert_eq!(m.poll(fed), d, "two polls at the same time must agree");
                trace.push(Trace::Polled(d));
            }
            Action::Abort => {
                // An abort wins over any bound `fed` reaches that no decision reported yet: it
                // meets the state the previous call left, not the one `fed` would make.
                model.now = model.now.max(fed);
                let result = m.handle(fed, Event::Abort);
                model.aborted(result);
                trace.push(Trace::Handled(result));
            }
            action => {
                // What a poll at `fed` would say: a pure observation, on a clone.
                let before = model.ledger.muted(|| m.clone().poll(fed));
                let state = format!("{m:?}");
                let (event, floor) = event_of(action, &policy);
                let result = m.handle(fed, event);
                if result.is_err() {
                    assert_eq!(
                        format!("{m:?}"),
                        state,
                        "a refused {action:?} at {fed:?} changed the machine"
                    );
                }
                model.handled(fed, &before, action, floor, result, &m);
                trace.push(Trace::Handled(result));
            }
        }
        model.after(&m);
        trace.push(Trace::NextDeadline(m.next_deadline()));
    }
    trace
}

/// What the server asked of a response, computed from the public parsers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ServerAsked {
    /// Whether the response is retryable: the caller's class, else the policy's status set,
    /// else, for a 403, whether it is a rate-limit answer (`rate_limit_answer`) while a 429
    /// is retried.
    pub(crate) retryable: bool,
    /// Whether the response is a 429, or a 403 that is a rate-limit answer the caller's class
    /// did not make final: a throttle, whose `Retry-After` closes the gate.
    pub(crate) too_many: bool,
    /// The floor of the wait: the `Retry-After` delay, else (on a retryable status, when the
    /// policy reads them) the rate-limit reset.
    pub(crate) floor: Option<Duration>,
    /// The floor comes from a rate-limit field.
    pub(crate) from_rate_limit: bool,
    /// The `Retry-After` delay alone, whatever the status (the outcome's).
    pub(crate) retry_after: Option<Duration>,
    /// The rate-limit reset alone, when it counts (on a retryable status, when the policy
    /// reads the fields), whatever the `Retry-After`.
    pub(crate) rate_limit: Option<Duration>,
}

/// The event for an action, and what its response asks for.
pub(crate) fn event_of<'a>(action: &'a Action, policy: &Policy) -> (Event<'a>, ServerAsked) {
    let none = ServerAsked::default();
    match action {
        Action::Poll | Action::TimePassed => (Event::TimePassed, none),
        Action::Started => (Event::AttemptStarted, none),
        Action::Abort => (Event::Abort, none),
        Action::Error(e) => (Event::Error(*e), none),
        Action::Response {
            status,
            retry_after,
            date,
            wall_clock,
            rate_limit,
            class,
        } => {
            let response = Response {
                status: *status,
                retry_after: retry_after.as_deref(),
                date: date.as_deref(),
                wall_clock: *wall_clock,
                rate_limit: rate_limit.rate_limit.as_deref(),
                rate_limit_policy: rate_limit.rate_limit_policy.as_deref(),
                rate_limit_reset: rate_limit.rate_limit_reset.as_deref(),
                x_rate_limit_reset_after: rate_limit.x_rate_limit_reset_after.as_deref(),
                x_rate_limit_reset: rate_limit.x_rate_limit_reset.as_deref(),
                rate_limit_remaining: rate_limit.rate_limit_remaining.as_deref(),
                x_rate_limit_remaining: rate_limit.x_rate_limit_remaining.as_deref(),
                class: *class,
                pushback: None,
            };
            let reference = date.as_deref().and_then(parse_http_date).or(*wall_clock);
            let retry_after =
                retry_after
                    .as_deref()
                    .and_then(parse_retry_after)
                    .and_then(|value| match value {
                        RetryAfter::Delay(d) => Some(d),
                        RetryAfter::Date(_) => Some(value.delay_from(reference?)),
                    });
            let reset =
                || rate_limit_floor(rate_limit, *status, reference, policy.x_rate_limit_reset());
            let rate_limit_answer = *status == 403
                && policy.rate_limit_fields()
                && (retry_after.is_some() || reset().is_some());
            let retryable = match class {
                // A 403 that is a rate-limit answer is a 429: retried when a 429 is.
                ResponseClass::ByStatus => {
                    policy.retryable_statuses().contains(*status)
                        || (rate_limit_answer && policy.retryable_statuses().contains(429))
                }
                class => *class == ResponseClass::Retryable,
            };
            let rate_limit = (policy.rate_limit_fields() && retryable)
                .then(reset)
                .flatten();
            let asked = ServerAsked {
                retryable,
                too_many: *status == 429
                    || ((retryable || *class == ResponseClass::ByStatus) && rate_limit_answer),
                floor: retry_after.or(rate_limit),
                from_rate_limit: retry_after.is_none() && rate_limit.is_some(),
                retry_after,
                rate_limit,
            };
            (Event::Response(response), asked)
        }
    }
}

/// The rule (crate docs), restated: a reset is a floor only when the
/// quota it belongs to is exhausted. `RateLimit` (read by `sfv`) decides alone when it says
/// anything: an exhausted member's reset, or no floor at all when every member stating `r`
/// has quota left. Otherwise `RateLimit-Reset` counts when `RateLimit-Remaining` is 0 (or
/// absent or malformed on a 429), then `X-RateLimit-Reset-After` and `X-RateLimit-Reset` when
/// `X-RateLimit-Remaining` is; a Unix reset more than a day before the reference is malformed.
fn rate_limit_floor(
    f: &RateLimitFields,
    status: u16,
    reference: Option<UnixTime>,
    reading: XRateLimitReset,
) -> Option<Duration> {
    if let Some(field) = f.rate_limit.as_deref() {
        if let Some(verdict) =
            crate::rate_limit::ietf_verdict(field, f.rate_limit_policy.as_deref())
        {
            return verdict;
        }
    }
    let out = |remaining: &Option<Vec<u8>>| match remaining.as_deref().and_then(count) {
        Some(n) => n == 0,
        None => status == 429,
    };
    let seconds = |v: &Option<Vec<u8>>| v.as_deref().and_then(parse_delay_seconds);
    let draft = || {
        out(&f.rate_limit_remaining)
            .then(|| seconds(&f.rate_limit_reset))
            .flatten()
    };
    let x_reset = || {
        let value = seconds(&f.x_rate_limit_reset)?;
        match reading {
            XRateLimitReset::DelaySeconds => Some(value),
            _ => {
                let reference = reference?.as_duration();
                if reference.saturating_sub(value) > Duration::from_secs(24 * 60 * 60) {
                    return None; // decades stale: a delay-seconds value read as Unix time
                }
                Some(value.saturating_sub(reference))
            }
        }
    };
    let de_facto = || {
        out(&f.x_rate_limit_remaining)
            .then(|| seconds(&f.x_rate_limit_reset_after).or_else(x_reset))
            .flatten()
    };
    draft().or_else(de_facto)
}

/// A remaining field: `OWS 1*DIGIT OWS`, saturating; `None` when malformed.
fn count(v: &[u8]) -> Option<u128> {
    let text = core::str::from_utf8(v).ok()?;
    let digits = text.trim_matches([' ', '\t']);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u128>().unwrap_or(u128::MAX))
}

/// One GET under the default policy without jitter, one response of `status` with the rate-limit fields `f`
/// (and the wall clock `wall_clock`): the wait must follow the rate-limit rule restated in
/// `rate_limit_floor` (on a 403, no floor means the answer is final). For proptest, which builds the fields that random bytes rarely reach.
pub fn check_rate_limit_rule(status: u16, f: &RateLimitFields, wall_clock: Option<UnixTime>) {
    // No jitter: a backoff wait is never zero, so a zero floor cannot pass for one.
    let policy = Policy::builder()
        .jitter(backstop_core::Jitter::None)
        .build()
        .expect("a valid policy");
    let floor = rate_limit_floor(f, status, wall_clock, policy.x_rate_limit_reset());
    let mut response = Response::new(status);
    response.wall_clock = wall_clock;
    response.rate_limit = f.rate_limit.as_deref();
    response.rate_limit_policy = f.rate_limit_policy.as_deref();
    response.rate_limit_reset = f.rate_limit_reset.as_deref();
    response.rate_limit_remaining = f.rate_limit_remaining.as_deref();
    response.x_rate_limit_reset_after = f.x_rate_limit_reset_after.as_deref();
    response.x_rate_limit_reset = f.x_rate_limit_reset.as_deref();
    response.x_rate_limit_remaining = f.x_rate_limit_remaining.as_deref();
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let mut m = RetryMachine::new(
        policy,
        backstop_core::Request::new(backstop_core::Method::Get),
        rng,
        Instant::ZERO,
    );
    let _ = m.poll(Instant::ZERO);
    let handled = m.handle(Instant::ZERO, Event::AttemptStarted);
    assert_eq!(handled, Ok(()));
    let handled = m.handle(Instant::ZERO, Event::Response(response));
    assert_eq!(handled, Ok(()));
    let d = m.poll(Instant::ZERO);
    match (floor, d) {
        (None, Decision::Wait { reason, .. }) => assert_eq!(
            reason.source,
            backstop_core::DelaySource::Backoff,
            "no exhausted quota, yet a floor: {f:?} on {status}"
        ),
        (Some(floor), Decision::Wait { delay, reason, .. }) => {
            assert_eq!(
                reason.source,
                backstop_core::DelaySource::RateLimitReset,
                "{f:?} on {status}"
            );
            assert!(delay >= floor, "{delay:?} below the floor {floor:?}: {f:?}");
        }
        (Some(floor), Decision::Send { .. }) => {
            assert!(floor.is_zero(), "a {floor:?} floor not waited: {f:?}");
        }
        (Some(floor), d) => assert!(
            floor > policy.max_retry_after() || floor >= policy.max_elapsed(),
            "a {floor:?} floor that fits, yet {d:?}: {f:?}"
        ),
        // A 403 without an exhausted quota is a refusal, not a rate-limit answer.
        (None, Decision::Return(o)) if status == 403 => assert_eq!(
            (o.reason, o.attempts),
            (backstop_core::StopReason::FinalStatus, 1),
            "{f:?} on {status}"
        ),
        (None, d) => panic!("no floor, yet {d:?}: {f:?} on {status}"),
    }
}
