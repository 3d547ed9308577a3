//! Checks for `RetryMachine`: an arbitrary valid policy and request, then an arbitrary sequence
//! of time steps and events (responses with any status and any `Retry-After`/`Date` bytes,
//! network errors of every kind and class, timer firings, aborts, misplaced events, `now` going
//! backwards), with the invariants of DESIGN.md checked after every step:
//!
//! - no panic; a misplaced event is a `MisuseError` exactly when the contract says so, and
//!   changes nothing;
//! - attempts started never exceed `max_attempts`, and `Send` always names the next attempt;
//! - every `Wait` is at most `policy.max_wait()`, ends after `now` and before the deadline, and
//!   honours the server's `Retry-After` as a floor within its documented spread;
//! - a `Send` never happens at or after the deadline, and its timeout never ends past it;
//! - after `Return`/`GiveUp`, every poll repeats the same decision and nothing is sent again;
//! - after an accepted `Abort` the next decision is `GiveUp` with `StopReason::Aborted`;
//! - after every `handle`/`poll`, `next_deadline()` is `None` or later than the latest `now`
//!   (a `now` that goes backwards is clamped to the latest one seen);
//! - a request whose method the policy may not retry (POST/PATCH without opt-in and key,
//!   PUT/DELETE not added) is never sent again once it may have reached the server: only a
//!   `NotSent` error allows another attempt;
//! - the reason of every terminal decision is consistent with what happened;
//! - the same input run twice gives the same decisions, bit for bit.

use core::time::Duration;
use std::time::UNIX_EPOCH;

use backstop::{
    parse_http_date, parse_retry_after, AttemptError, AttemptOutcome, Backoff, Decision,
    DelaySource, ErrorClass, ErrorKind, Event, Instant, Jitter, Method, MisuseError, Outcome,
    Policy, PolicyBuilder, Request, Response, RetryAfter, RetryAfterAboveMax, RetryMachine,
    SendReason, StatusSet, StopReason, UnixTime,
};
use rand_core::SeedableRng;

use super::Bytes;

/// The machine under test: the default RNG, no budget.
type Machine = RetryMachine<rand_pcg::Pcg64Mcg>;

/// The most steps one input drives.
const MAX_STEPS: usize = 256;

/// Runs every machine check on `data`.
pub(crate) fn check(data: &[u8]) {
    let scenario = Scenario::decode(data);
    let Ok(policy) = scenario.policy else {
        return; // an invalid configuration is refused by `build`, which is all it may do
    };
    let first = run(&scenario, policy);
    let second = run(&scenario, policy);
    assert_eq!(
        first, second,
        "the same seed and events must give the same decisions"
    );
}

/// A decoded input.
#[derive(Debug)]
pub(crate) struct Scenario {
    pub(crate) policy: Result<Policy, backstop::ConfigError>,
    pub(crate) request: Request,
    pub(crate) seed: u64,
    pub(crate) start: Instant,
    pub(crate) steps: Vec<Step>,
}

/// One thing a driver does: move time (perhaps backwards), then poll or feed an event.
#[derive(Debug)]
pub(crate) struct Step {
    time: TimeStep,
    action: Action,
}

#[derive(Debug)]
enum TimeStep {
    Same,
    Nanos(u32),
    Millis(u16),
    Secs(u16),
    BackMillis(u16),
    BackSecs(u16),
    NextDeadline,
    JustBeforeNextDeadline,
    Deadline,
    JustBeforeDeadline,
    Far(u64),
    Absolute(u64),
    Max,
}

#[derive(Debug)]
enum Action {
    Poll,
    Started,
    Response {
        status: u16,
        retry_after: Option<Vec<u8>>,
        date: Option<Vec<u8>>,
        wall_clock: Option<UnixTime>,
    },
    Error(AttemptError),
    TimePassed,
    Abort,
}

/// What a run produced, compared between two runs for determinism.
#[derive(Debug, PartialEq)]
enum Trace {
    Polled(Decision),
    Handled(Result<(), MisuseError>),
    NextDeadline(Option<Instant>),
}

impl Scenario {
    pub(crate) fn decode(data: &[u8]) -> Scenario {
        let mut r = Bytes::new(data);
        let policy = decode_policy(&mut r).build();
        let request = Request::new(decode_method(&mut r)).with_idempotency_key(r.bool());
        let seed = r.u64();
        let start = Instant::from_duration(decode_duration(&mut r));
        let mut steps = Vec::new();
        while !r.is_empty() && steps.len() < MAX_STEPS {
            steps.push(Step {
                time: decode_time_step(&mut r),
                action: decode_action(&mut r),
            });
        }
        Scenario {
            policy,
            request,
            seed,
            start,
            steps,
        }
    }
}

fn decode_policy(r: &mut Bytes<'_>) -> PolicyBuilder {
    let set = r.u16();
    let mut b = Policy::builder();
    if set & 1 != 0 {
        b = b.max_attempts(match r.u8() {
            255 => r.u32(),
            n => u32::from(n % 12),
        });
    }
    if set & 2 != 0 {
        b = b.max_elapsed(decode_duration(r));
    }
    if set & 4 != 0 {
        b = b.attempt_timeout(decode_duration(r));
    }
    if set & 8 != 0 {
        b = b.backoff(match r.below(3) {
            0 => Backoff::exponential(decode_duration(r), decode_duration(r)),
            1 => Backoff::linear(decode_duration(r), decode_duration(r)),
            _ => Backoff::constant(decode_duration(r)),
        });
    }
    if set & 16 != 0 {
        b = b.jitter(match r.below(4) {
            0 => Jitter::None,
            1 => Jitter::Full,
            2 => Jitter::Equal,
            _ => Jitter::Decorrelated,
        });
    }
    if set & 32 != 0 {
        b = match r.below(3) {
            0 => b.retryable_status_set(StatusSet::EMPTY),
            1 => {
                let n = usize::from(r.below(8));
                let codes: Vec<u16> = (0..n).map(|_| decode_status(r)).collect();
                b.retryable_statuses(&codes)
            }
            _ => b.retryable_status_set(StatusSet::DEFAULT_RETRYABLE),
        };
    }
    if set & 64 != 0 {
        let mask = r.u8();
        let methods: Vec<Method> = ALL_METHODS
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << (i % 8)) != 0)
            .map(|(_, m)| *m)
            .collect();
        b = if r.bool() {
            b.retry_methods(&methods)
        } else {
            methods.iter().fold(b, |b, m| b.retry_method(*m))
        };
    }
    if set & 128 != 0 {
        b = b.retry_non_idempotent(r.bool());
    }
    if set & 256 != 0 {
        b = b.max_retry_after(decode_duration(r));
    }
    if set & 512 != 0 {
        b = b.retry_after_above_max(if r.bool() {
            RetryAfterAboveMax::Clamp
        } else {
            RetryAfterAboveMax::GiveUp
        });
    }
    if set & 1024 != 0 {
        b = b.retry_after_spread(decode_duration(r));
    }
    b
}

/// Idempotent ones first, so that most masks build.
const ALL_METHODS: [Method; 10] = [
    Method::Get,
    Method::Head,
    Method::Options,
    Method::Trace,
    Method::Put,
    Method::Delete,
    Method::Post,
    Method::Patch,
    Method::Connect,
    Method::Other,
];

fn decode_method(r: &mut Bytes<'_>) -> Method {
    ALL_METHODS[usize::from(r.below(10))]
}

fn decode_duration(r: &mut Bytes<'_>) -> Duration {
    match r.below(10) {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(u64::from(r.u16())),
        2 => Duration::from_millis(u64::from(r.u16())),
        3 => Duration::from_millis(u64::from(r.u8()) * 10),
        4 => Duration::from_secs(u64::from(r.u8())),
        5 => Duration::from_secs(u64::from(r.u16())),
        6 => Duration::from_nanos(r.u64()),
        7 => Duration::new(r.u64(), r.u32() % 1_000_000_000),
        8 => Duration::MAX,
        _ => Duration::from_secs(u64::from(r.u32())),
    }
}

const RETRYABLE: [u16; 7] = [408, 425, 429, 500, 502, 503, 504];
const COMMON: [u16; 13] = [
    200, 201, 204, 301, 304, 400, 401, 403, 404, 409, 410, 418, 422,
];

fn decode_status(r: &mut Bytes<'_>) -> u16 {
    match r.below(4) {
        0 => RETRYABLE[usize::from(r.below(7))],
        1 => r.u16(),
        2 => COMMON[usize::from(r.below(13))],
        _ => 100 + r.u16() % 500,
    }
}

fn decode_time_step(r: &mut Bytes<'_>) -> TimeStep {
    match r.below(14) {
        0 | 1 => TimeStep::Same,
        2 => TimeStep::Nanos(r.u32()),
        3 => TimeStep::Millis(r.u16()),
        4 => TimeStep::Secs(r.u16()),
        5 => TimeStep::BackMillis(r.u16()),
        6 => TimeStep::BackSecs(r.u16()),
        7 => TimeStep::NextDeadline,
        8 => TimeStep::JustBeforeNextDeadline,
        9 => TimeStep::Deadline,
        10 => TimeStep::JustBeforeDeadline,
        11 => TimeStep::Far(r.u64()),
        12 => TimeStep::Absolute(r.u64()),
        _ => TimeStep::Max,
    }
}

fn decode_action(r: &mut Bytes<'_>) -> Action {
    match r.below(8) {
        0 | 1 => Action::Poll,
        2 => Action::Started,
        3 | 4 => Action::Response {
            status: decode_status(r),
            retry_after: r.bool().then(|| decode_header(r)),
            date: r.bool().then(|| decode_header(r)),
            wall_clock: r.bool().then(|| decode_wall_clock(r)),
        },
        5 => {
            let error = AttemptError::new(ErrorKind::ALL[usize::from(r.below(12))]);
            Action::Error(match r.below(8) {
                c @ 0..=4 => error.with_class(ErrorClass::ALL[usize::from(c)]),
                _ => error,
            })
        }
        6 => Action::TimePassed,
        _ => Action::Abort,
    }
}

fn decode_wall_clock(r: &mut Bytes<'_>) -> UnixTime {
    match r.below(3) {
        0 => UnixTime::from_secs(1_700_000_000 + u64::from(r.u32())),
        1 => UnixTime::from_secs(r.u64() % (LAST_HTTP_DATE + 1)),
        _ => UnixTime::from_duration(decode_duration(r)),
    }
}

const LAST_HTTP_DATE: u64 = 253_402_300_799;

/// Hostile and malformed `Retry-After` shapes, to start the fuzzer off near the edges.
const HOSTILE: [&[u8]; 16] = [
    b"1e30",
    b"18446744073709551616",
    b"18446744073709551615",
    b"-1",
    b"NaN",
    b"0x10",
    b"",
    b" ",
    b"1.",
    b".5",
    b"+1",
    b"0.1",
    b"\xff\xfe",
    b"1, 2",
    b"Sun, 06 Nov 1994 08:49:37 GMT",
    b"Fri, 31 Dec 9999 23:59:59 GMT",
];

fn decode_header(r: &mut Bytes<'_>) -> Vec<u8> {
    let date = |r: &mut Bytes<'_>| {
        let secs = match r.below(3) {
            0 => 1_700_000_000 + u64::from(r.u32() % 1_000_000),
            _ => r.u64() % (LAST_HTTP_DATE + 1),
        };
        httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
    };
    match r.below(9) {
        0 => {
            let n = usize::from(r.below(48));
            r.take(n).to_vec()
        }
        1 => r.u64().to_string().into_bytes(),
        2 => u32::from(r.u8()).to_string().into_bytes(),
        3 => format!("{}.{}", r.u16(), r.u32()).into_bytes(),
        4 => date(r).into_bytes(),
        5 => imf_to_rfc850(&date(r)).into_bytes(),
        6 => imf_to_asctime(&date(r)).into_bytes(),
        7 => HOSTILE[usize::from(r.below(16))].to_vec(),
        _ => {
            let pad = [" ", "\t", "", "  "];
            let pad = pad[usize::from(r.below(4))];
            format!("{pad}{}{pad}", r.u8()).into_bytes()
        }
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` to `Sunday, 06-Nov-94 08:49:37 GMT`.
pub(crate) fn imf_to_rfc850(imf: &str) -> String {
    let full = match &imf[..3] {
        "Mon" => "Monday",
        "Tue" => "Tuesday",
        "Wed" => "Wednesday",
        "Thu" => "Thursday",
        "Fri" => "Friday",
        "Sat" => "Saturday",
        _ => "Sunday",
    };
    format!(
        "{full}, {}-{}-{} {} GMT",
        &imf[5..7],
        &imf[8..11],
        &imf[14..16],
        &imf[17..25]
    )
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` to `Sun Nov  6 08:49:37 1994`.
pub(crate) fn imf_to_asctime(imf: &str) -> String {
    let day = imf[5..7].trim_start_matches('0');
    format!(
        "{} {} {day:>2} {} {}",
        &imf[..3],
        &imf[8..11],
        &imf[17..25],
        &imf[12..16]
    )
}

/// Runs a scenario once, checking every step; returns the trace for the determinism check.
fn run(s: &Scenario, policy: Policy) -> Vec<Trace> {
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(s.seed);
    let mut m: Machine = RetryMachine::new(policy, s.request, rng, s.start);
    let mut model = Model::new(policy, s.request, s.start);
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
        model.now = model.now.max(fed);
        match &step.action {
            Action::Poll => {
                let d = m.poll(fed);
                model.observe(&d);
                assert_eq!(m.poll(fed), d, "two polls at the same time must agree");
                trace.push(Trace::Polled(d));
            }
            Action::Abort => {
                // An abort wins over any bound `fed` reaches that no decision reported yet: it
                // meets the state the previous call left, not the one `fed` would make.
                let result = m.handle(fed, Event::Abort);
                model.aborted(result);
                trace.push(Trace::Handled(result));
            }
            action => {
                // What the machine is doing once it has seen `fed`: a pure observation (on a
                // clone) of the state the event will meet.
                let before = m.clone().poll(fed);
                model.observe(&before);
                let (event, floor) = event_of(action);
                let result = m.handle(fed, event);
                model.handled(&before, action, floor, result, &m);
                trace.push(Trace::Handled(result));
            }
        }
        model.after(&m);
        trace.push(Trace::NextDeadline(m.next_deadline()));
    }
    trace
}

/// The event for an action, and the server-directed delay its response asks for (the
/// `Retry-After` floor), computed from the public parsers.
fn event_of(action: &Action) -> (Event<'_>, Option<Duration>) {
    match action {
        Action::Poll | Action::TimePassed => (Event::TimePassed, None),
        Action::Started => (Event::AttemptStarted, None),
        Action::Abort => (Event::Abort, None),
        Action::Error(e) => (Event::Error(*e), None),
        Action::Response {
            status,
            retry_after,
            date,
            wall_clock,
        } => {
            let response = Response {
                status: *status,
                retry_after: retry_after.as_deref(),
                date: date.as_deref(),
                wall_clock: *wall_clock,
            };
            let floor = retry_after
                .as_deref()
                .and_then(parse_retry_after)
                .and_then(|value| match value {
                    RetryAfter::Delay(d) => Some(d),
                    RetryAfter::Date(_) => {
                        let reference =
                            date.as_deref().and_then(parse_http_date).or(*wall_clock)?;
                        Some(value.delay_from(reference))
                    }
                });
            (Event::Response(response), floor)
        }
    }
}

/// What the checker knows, from the outside, about the machine.
struct Model {
    policy: Policy,
    request: Request,
    start: Instant,
    deadline: Instant,
    /// The latest `now` fed: the machine's clamped time.
    now: Instant,
    /// Attempts reported started and accepted.
    sends: u32,
    /// The attempt in flight, with its timeout.
    in_flight: Option<Instant>,
    /// `false` once a request the policy may not retry may have reached the server.
    may_send_again: bool,
    /// What the last attempt ended with.
    last: Option<AttemptOutcome>,
    /// The `Retry-After` floor of the last response, if it had a usable one.
    floor: Option<Duration>,
    /// An abort was accepted while the machine was not done.
    aborted: bool,
    /// The terminal decision, once seen.
    terminal: Option<Decision>,
    /// An attempt just ended with this (a response or error event was accepted): the next
    /// observation is checked against the rules for what follows it.
    ended: Option<AttemptOutcome>,
}

impl Model {
    fn new(policy: Policy, request: Request, start: Instant) -> Self {
        Model {
            policy,
            request,
            start,
            deadline: start.saturating_add(policy.max_elapsed()),
            now: start,
            sends: 0,
            in_flight: None,
            may_send_again: true,
            last: None,
            floor: None,
            aborted: false,
            terminal: None,
            ended: None,
        }
    }

    /// Whether the request may be sent again once it may have reached the server, from the
    /// rule itself (DESIGN.md "Methods"), not from `Policy::may_retry`, which it also checks:
    /// an idempotent method the policy lists, or POST/PATCH with opt-in and `Idempotency-Key`.
    fn may_retry(&self) -> bool {
        let Request {
            method,
            has_idempotency_key,
        } = self.request;
        let listed = method.is_idempotent() && self.policy.retry_methods().contains(method);
        let keyed = matches!(method, Method::Post | Method::Patch)
            && self.policy.retry_non_idempotent()
            && has_idempotency_key;
        assert_eq!(
            self.policy.may_retry(method, has_idempotency_key),
            listed || keyed,
            "Policy::may_retry breaks the idempotency rule for {:?}",
            self.request
        );
        listed || keyed
    }

    /// The `now` a time step feeds.
    fn time(&self, step: &TimeStep, m: &Machine) -> Instant {
        let back = |d: Duration| Instant::from_duration(self.now.as_duration().saturating_sub(d));
        let next = m.next_deadline().unwrap_or(self.now);
        match *step {
            TimeStep::Same => self.now,
            TimeStep::Nanos(n) => self.now.saturating_add(Duration::from_nanos(u64::from(n))),
            TimeStep::Millis(n) => self.now.saturating_add(Duration::from_millis(u64::from(n))),
            TimeStep::Secs(n) => self.now.saturating_add(Duration::from_secs(u64::from(n))),
            TimeStep::BackMillis(n) => back(Duration::from_millis(u64::from(n))),
            TimeStep::BackSecs(n) => back(Duration::from_secs(u64::from(n))),
            TimeStep::NextDeadline => next,
            TimeStep::JustBeforeNextDeadline => {
                Instant::from_duration(next.as_duration().saturating_sub(Duration::from_nanos(1)))
            }
            TimeStep::Deadline => self.deadline,
            TimeStep::JustBeforeDeadline => Instant::from_duration(
                self.deadline
                    .as_duration()
                    .saturating_sub(Duration::from_nanos(1)),
            ),
            TimeStep::Far(n) => self.now.saturating_add(Duration::from_nanos(n)),
            TimeStep::Absolute(n) => Instant::from_duration(Duration::from_nanos(n)),
            TimeStep::Max => Instant::from_duration(Duration::MAX),
        }
    }

    /// Checks a decision the machine gives at `self.now`, and learns from it.
    fn observe(&mut self, d: &Decision) {
        // An attempt in flight ends by itself at its timeout: the machine saw `now`.
        if let Some(timeout_at) = self.in_flight {
            if self.now >= timeout_at {
                self.in_flight = None;
                self.floor = None;
                let cause = AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout));
                self.last = Some(cause);
                self.check_after_attempt(cause, d);
            }
        }
        if let Some(terminal) = &self.terminal {
            assert_eq!(d, terminal, "a terminal decision must repeat forever");
            return;
        }
        if self.aborted {
            assert!(
                matches!(d, Decision::GiveUp(o) if o.reason == StopReason::Aborted),
                "after an abort the decision must be GiveUp(Aborted), got {d:?}"
            );
        }
        match *d {
            Decision::Send {
                attempt,
                timeout,
                reason,
            } => self.check_send(attempt, timeout, reason),
            Decision::AwaitResponse {
                attempt,
                timeout_at,
            } => {
                assert_eq!(
                    attempt, self.sends,
                    "the attempt in flight is the last started"
                );
                assert_eq!(
                    self.in_flight,
                    Some(timeout_at),
                    "in flight with the timeout decided when it started"
                );
                assert!(
                    timeout_at > self.now,
                    "an expired attempt must have timed out"
                );
            }
            Decision::Wait {
                until,
                delay,
                reason,
            } => {
                assert!(
                    self.in_flight.is_none(),
                    "a wait while an attempt is in flight"
                );
                assert!(
                    delay <= self.policy.max_wait(),
                    "wait {delay:?} above max_wait"
                );
                assert!(!delay.is_zero(), "a zero wait is not reported");
                assert!(until > self.now, "a wait that has ended is still reported");
                assert!(
                    until < self.deadline,
                    "a wait that ends at or after the deadline"
                );
                assert!(
                    until <= self.now.saturating_add(delay),
                    "a wait ends `delay` after it was decided, which is not in the future"
                );
                assert_eq!(
                    reason.next_attempt,
                    self.sends + 1,
                    "the wait's next attempt"
                );
                assert!(
                    reason.next_attempt <= self.policy.max_attempts(),
                    "a wait for an attempt beyond max_attempts"
                );
                assert!(self.may_send_again, "a wait before a forbidden retry");
                assert_eq!(Some(reason.cause), self.last, "the wait's cause");
                self.check_wait_source(delay, reason.source);
            }
            Decision::Return(o) | Decision::GiveUp(o) => {
                self.check_outcome(d, &o);
                self.terminal = Some(*d);
                self.in_flight = None;
            }
            _ => panic!("a decision this checker does not know: {d:?}"),
        }
    }

    fn check_send(&self, attempt: u32, timeout: Duration, reason: SendReason) {
        assert!(
            self.in_flight.is_none(),
            "a send while an attempt is in flight"
        );
        assert_eq!(attempt, self.sends + 1, "Send names the next attempt");
        assert!(
            attempt <= self.policy.max_attempts(),
            "attempt {attempt} beyond max_attempts {}",
            self.policy.max_attempts()
        );
        assert!(self.now < self.deadline, "a send at or after the deadline");
        assert!(!timeout.is_zero(), "an attempt with no time at all");
        assert!(
            timeout <= self.policy.attempt_timeout(),
            "timeout above attempt_timeout"
        );
        assert!(
            self.now.saturating_add(timeout) <= self.deadline,
            "an attempt's timeout ends past the deadline"
        );
        assert!(
            self.may_send_again,
            "a non-idempotent request would be sent again"
        );
        match reason {
            SendReason::First => assert_eq!(self.sends, 0, "only the first send is First"),
            SendReason::Retry(cause) => {
                assert!(self.sends > 0, "a retry before any attempt");
                assert_eq!(
                    Some(cause),
                    self.last,
                    "a retry names the attempt it follows"
                );
            }
            _ => panic!("a send reason this checker does not know: {reason:?}"),
        }
    }

    fn check_wait_source(&self, delay: Duration, source: DelaySource) {
        let max = self.policy.max_retry_after();
        match source {
            DelaySource::Backoff => {
                assert_eq!(self.floor, None, "backoff despite a usable Retry-After");
                assert!(
                    delay <= self.policy.backoff().cap(),
                    "backoff above its cap"
                );
            }
            DelaySource::RetryAfter => {
                let floor = self
                    .floor
                    .expect("a Retry-After wait follows a Retry-After");
                let spread = self
                    .policy
                    .retry_after_spread()
                    .min(floor / 10)
                    .min(max.saturating_sub(floor));
                assert!(floor <= max, "honoured a Retry-After above the ceiling");
                assert!(delay >= floor, "waited less than the server asked");
                assert!(
                    delay <= floor.saturating_add(spread),
                    "spread above its bound"
                );
            }
            DelaySource::RetryAfterClamped => {
                let floor = self.floor.expect("a clamped wait follows a Retry-After");
                assert!(floor > max, "clamped a Retry-After below the ceiling");
                assert_eq!(
                    self.policy.retry_after_above_max(),
                    RetryAfterAboveMax::Clamp,
                    "clamped although the policy gives up"
                );
                assert_eq!(delay, max, "a clamped wait is the ceiling");
            }
            _ => panic!("a delay source this checker does not know: {source:?}"),
        }
    }

    fn check_outcome(&self, d: &Decision, o: &Outcome) {
        assert_eq!(o.attempts, self.sends, "outcome attempts");
        assert_eq!(
            o.last, self.last,
            "the outcome must carry the last response or error"
        );
        assert!(
            o.elapsed <= self.now.saturating_duration_since(self.start),
            "elapsed beyond the time seen"
        );
        let returns_response =
            matches!(o.last, Some(AttemptOutcome::Response(_))) && o.reason != StopReason::Aborted;
        assert_eq!(
            matches!(d, Decision::Return(_)),
            returns_response,
            "Return exactly when a response is handed back: {d:?}"
        );
        let last_class = match o.last {
            Some(AttemptOutcome::Error(e)) => Some(e.class),
            _ => None,
        };
        let may_retry = self.may_retry();
        match o.reason {
            StopReason::FinalStatus => assert!(
                matches!(o.last, Some(AttemptOutcome::Response(s))
                    if !self.policy.retryable_statuses().contains(s)),
                "FinalStatus for a retryable status: {o:?}"
            ),
            StopReason::PermanentError => {
                assert_eq!(last_class, Some(ErrorClass::Permanent), "{o:?}");
            }
            StopReason::NotIdempotent => {
                assert!(!may_retry, "NotIdempotent for a method the policy retries");
                assert_ne!(
                    last_class,
                    Some(ErrorClass::NotSent),
                    "NotSent is always safe"
                );
            }
            StopReason::Attempts => {
                assert_eq!(self.sends, self.policy.max_attempts(), "Attempts too early");
            }
            StopReason::Deadline => {}
            StopReason::RetryAfterAboveMax => {
                assert!(
                    self.floor
                        .is_some_and(|f| f > self.policy.max_retry_after()),
                    "RetryAfterAboveMax without a Retry-After above the ceiling"
                );
                assert_eq!(
                    self.policy.retry_after_above_max(),
                    RetryAfterAboveMax::GiveUp,
                    "gave up although the policy clamps"
                );
            }
            StopReason::Aborted => assert!(
                self.aborted || last_class == Some(ErrorClass::Aborted),
                "Aborted without an abort"
            ),
            StopReason::Budget => panic!("the unlimited budget denied a retry"),
            reason => panic!("a stop reason this checker does not know: {reason:?}"),
        }
    }

    /// Checks the result of an event against the state it met (`before`), and learns from it.
    fn handled(
        &mut self,
        before: &Decision,
        action: &Action,
        floor: Option<Duration>,
        result: Result<(), MisuseError>,
        m: &Machine,
    ) {
        match action {
            Action::Started => {
                let expected = matches!(before, Decision::Send { .. });
                assert_eq!(
                    result.is_ok(),
                    expected,
                    "AttemptStarted accepted exactly when a send is due ({before:?})"
                );
                if result.is_ok() {
                    self.sends += 1;
                    assert!(self.may_send_again, "a forbidden retry was started");
                    assert!(
                        self.sends <= self.policy.max_attempts(),
                        "too many attempts"
                    );
                    assert!(
                        self.now < self.deadline,
                        "an attempt started at the deadline"
                    );
                    let timeout_at = m
                        .next_deadline()
                        .expect("an attempt in flight has a timeout");
                    assert!(
                        timeout_at <= self.deadline,
                        "an attempt runs past the deadline"
                    );
                    assert!(
                        timeout_at.saturating_duration_since(self.now)
                            <= self.policy.attempt_timeout(),
                        "an attempt's timeout above attempt_timeout"
                    );
                    self.in_flight = Some(timeout_at);
                    if !self.may_retry() {
                        self.may_send_again = false;
                    }
                } else {
                    assert_eq!(result, Err(MisuseError::NoSendPending));
                }
            }
            Action::Response { .. } | Action::Error(_) if result.is_err() => {
                assert!(
                    !matches!(before, Decision::AwaitResponse { .. }),
                    "an answer refused while an attempt was in flight"
                );
                assert_eq!(result, Err(MisuseError::NoAttemptInFlight));
            }
            Action::Response { status, .. } => {
                assert!(
                    matches!(before, Decision::AwaitResponse { .. }),
                    "a response accepted with no attempt in flight"
                );
                self.in_flight = None;
                self.last = Some(AttemptOutcome::Response(*status));
                self.floor = floor;
                self.ended = self.last;
            }
            Action::Error(e) => {
                assert!(
                    matches!(before, Decision::AwaitResponse { .. }),
                    "an error accepted with no attempt in flight"
                );
                self.in_flight = None;
                self.last = Some(AttemptOutcome::Error(*e));
                self.floor = None;
                self.ended = self.last;
                if e.class == ErrorClass::NotSent {
                    self.may_send_again = true; // never reached the server: safe for any method
                }
            }
            Action::TimePassed | Action::Poll | Action::Abort => assert_eq!(result, Ok(())),
        }
        if result.is_err() {
            assert_eq!(
                &m.clone().poll(self.now),
                before,
                "a misplaced event must change nothing"
            );
        }
    }

    /// An abort met the state the previous call left: unless that was already terminal, the
    /// operation is aborted, and the attempt in flight (if any) never ends.
    fn aborted(&mut self, result: Result<(), MisuseError>) {
        assert_eq!(result, Ok(()), "an abort is always accepted");
        if self.terminal.is_none() {
            self.aborted = true;
            self.in_flight = None;
        }
    }

    /// Checks that hold after every `handle` or `poll`.
    fn after(&mut self, m: &Machine) {
        if let Some(next) = m.next_deadline() {
            assert!(
                next > self.now,
                "next_deadline {next:?} is not after now {:?}: a driver would spin",
                self.now
            );
        }
        assert_eq!(
            m.attempts(),
            self.sends,
            "attempts() counts the attempts started"
        );
        assert!(
            m.attempts() <= self.policy.max_attempts(),
            "attempts beyond the maximum"
        );
        if let Some(terminal) = &self.terminal {
            assert_eq!(
                m.outcome().as_ref(),
                terminal.outcome(),
                "the outcome changed"
            );
        }
        // Learn the state the last call left, so the next step's expectations are exact.
        let now = self.now;
        let d = m.clone().poll(now);
        if let Some(cause) = self.ended.take() {
            self.check_after_attempt(cause, &d);
        }
        self.observe(&d);
    }

    /// Checks the decision `d` that follows an attempt that ended with `cause` at `self.now`,
    /// from the rules alone (DESIGN.md "Semantics"): which stop reasons apply, whether one of
    /// them must stop the operation at once (a wait that cannot lead to a retry is not waited),
    /// and that nothing stops it when none applies. The order in which the machine tests the
    /// rules is its own business: any applicable reason is accepted.
    fn check_after_attempt(&self, cause: AttemptOutcome, d: &Decision) {
        let (forced, allowed) = self.stop_reasons_after(cause);
        match d.outcome() {
            Some(o) => assert!(
                allowed.contains(&o.reason),
                "after {cause:?} the machine stopped with {:?}; the rules allow {allowed:?}",
                o.reason
            ),
            None => assert!(
                !forced,
                "after {cause:?} the machine must stop ({allowed:?}), but decided {d:?}"
            ),
        }
    }

    /// The stop reasons that apply after an attempt ended with `cause`, and whether one of
    /// them certainly applies (the operation must stop now).
    fn stop_reasons_after(&self, cause: AttemptOutcome) -> (bool, Vec<StopReason>) {
        let mut allowed = Vec::new();
        let mut forced = false;
        let maybe_sent = match cause {
            AttemptOutcome::Response(status) => {
                if !self.policy.retryable_statuses().contains(status) {
                    return (true, vec![StopReason::FinalStatus]);
                }
                true
            }
            AttemptOutcome::Error(e) => match e.class {
                ErrorClass::Aborted => return (true, vec![StopReason::Aborted]),
                ErrorClass::Permanent => return (true, vec![StopReason::PermanentError]),
                ErrorClass::NotSent => false,
                _ => true,
            },
        };
        if maybe_sent && !self.may_retry() {
            allowed.push(StopReason::NotIdempotent);
            forced = true;
        }
        if self.sends >= self.policy.max_attempts() {
            allowed.push(StopReason::Attempts);
            forced = true;
        }
        let max = self.policy.max_retry_after();
        // The shortest and longest wait the rules allow before the next attempt.
        let (shortest, longest) = match self.floor {
            Some(f) if f > max => {
                if self.policy.retry_after_above_max() == RetryAfterAboveMax::Clamp {
                    (max, max)
                } else {
                    allowed.push(StopReason::RetryAfterAboveMax);
                    forced = true;
                    (max, max)
                }
            }
            Some(f) => {
                let spread = self
                    .policy
                    .retry_after_spread()
                    .min(f / 10)
                    .min(max.saturating_sub(f));
                (f, f.saturating_add(spread))
            }
            None => (Duration::ZERO, self.policy.backoff().cap()),
        };
        if self.now.saturating_add(longest) >= self.deadline {
            allowed.push(StopReason::Deadline);
            if self.now.saturating_add(shortest) >= self.deadline {
                forced = true;
            }
        }
        (forced, allowed)
    }
}
