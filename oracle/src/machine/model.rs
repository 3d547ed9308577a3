//! What the checker knows, from the outside, about the machine, and how it learns it.

use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, Decision, DelaySource, ErrorClass, ErrorKind, Instant, Method,
    MisuseError, NonIdempotent, Policy, Request, StopReason, WorstCase,
};

use super::decode::{Action, TimeStep};
use super::ledger::Ledger;
use super::{Driven, ServerAsked};

/// Which shared objects may hold an attempt back (the overload oracle's machines consult an
/// origin gate, a send-rate limiter, or both; the retry oracle's consult neither).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Paused {
    /// An origin gate: [`DelaySource::OriginPaused`], [`StopReason::OriginPaused`].
    pub(crate) gate: bool,
    /// A send-rate limiter: [`DelaySource::RateLimited`], [`StopReason::RateLimited`].
    pub(crate) limiter: bool,
}

impl Paused {
    /// Whether the machine consults anything before an attempt.
    pub(crate) fn any(self) -> bool {
        self.gate || self.limiter
    }

    /// Whether `source` is a wait for a shared object, and one this machine consults.
    pub(crate) fn source(self, source: DelaySource) -> Option<bool> {
        match source {
            DelaySource::OriginPaused => Some(self.gate),
            DelaySource::RateLimited => Some(self.limiter),
            _ => None,
        }
    }

    /// Whether `reason` is a stop for a shared object, and one this machine consults.
    pub(crate) fn reason(self, reason: StopReason) -> Option<bool> {
        match reason {
            StopReason::OriginPaused => Some(self.gate),
            StopReason::RateLimited => Some(self.limiter),
            _ => None,
        }
    }
}

/// What the checker knows, from the outside, about the machine.
pub(crate) struct Model {
    pub(crate) policy: Policy,
    pub(crate) request: Request,
    /// Whether the request carries a key a server can deduplicate on, by the rule.
    pub(crate) has_key: bool,
    pub(crate) start: Instant,
    pub(crate) deadline: Instant,
    /// The latest `now` fed: the machine's clamped time.
    pub(crate) now: Instant,
    /// Attempts reported started and accepted.
    pub(crate) sends: u32,
    /// The attempt in flight, with its timeout.
    pub(crate) in_flight: Option<Instant>,
    /// `false` once a request the policy may not retry may have reached the server.
    pub(crate) may_send_again: bool,
    /// What the last attempt ended with.
    pub(crate) last: Option<AttemptOutcome>,
    /// Whether the last response was retryable (its class, else the status set, else a 403
    /// that is a rate-limit answer).
    pub(crate) last_retryable: bool,
    /// The server-directed floor of the last response (its `Retry-After`, else its rate-limit
    /// reset), if it had a usable one.
    pub(crate) floor: Option<Duration>,
    /// The floor comes from a rate-limit field, not from `Retry-After`.
    pub(crate) floor_from_rate_limit: bool,
    /// The last response's `Retry-After` delay, whatever its status.
    pub(crate) retry_after: Option<Duration>,
    /// The policy's bounds, computed before anything happened.
    pub(crate) worst: WorstCase,
    /// The time the decisions account for so far: every ended attempt (cut at its timeout)
    /// and every wait decided.
    pub(crate) busy: Duration,
    /// When the attempt in flight started.
    pub(crate) started_at: Instant,
    /// When the first attempt started.
    pub(crate) first_started: Option<Instant>,
    /// The next attempt of the last wait counted in `busy`.
    pub(crate) counted_wait: u32,
    /// An abort was accepted while the machine was not done.
    pub(crate) aborted: bool,
    /// The terminal decision, once seen.
    pub(crate) terminal: Option<Decision>,
    /// An attempt just ended with this (a response or error event was accepted): the next
    /// observation is checked against the rules for what follows it.
    pub(crate) ended: Option<AttemptOutcome>,
    /// The books of the machine's budget.
    pub(crate) ledger: Ledger,
    /// The successes the budget must have heard of.
    successes: u32,
    /// What may hold an attempt back (nothing, for the retry oracle).
    pub(crate) paused: Paused,
    /// The gate and the limiter admitted the send due (a real poll said `Send` since the
    /// last attempt started): only then is `AttemptStarted` accepted, when `paused.any()`.
    /// The overload oracle keeps it.
    pub(crate) admitted: bool,
}

impl Model {
    pub(crate) fn new(
        policy: Policy,
        request: Request,
        idempotency_key: Option<&[u8]>,
        start: Instant,
    ) -> Self {
        // The rule: an `Idempotency-Key` is a key only when some byte of
        // it is not ASCII whitespace; empty or blank identifies nothing a server could
        // deduplicate on.
        let has_key = idempotency_key.is_some_and(|v| {
            v.iter()
                .any(|&b| !(b.is_ascii() && char::from(b).is_whitespace()))
        });
        assert_eq!(
            request.has_idempotency_key, has_key,
            "Request::with_idempotency_key_value breaks the key rule for {idempotency_key:?}"
        );
        Model {
            policy,
            request,
            has_key,
            start,
            deadline: start.saturating_add(policy.max_elapsed()),
            now: start,
            sends: 0,
            in_flight: None,
            may_send_again: true,
            last: None,
            last_retryable: false,
            floor: None,
            floor_from_rate_limit: false,
            retry_after: None,
            worst: worst_case(&policy),
            busy: Duration::ZERO,
            started_at: start,
            first_started: None,
            counted_wait: 0,
            aborted: false,
            terminal: None,
            ended: None,
            ledger: Ledger::default(),
            successes: 0,
            paused: Paused::default(),
            admitted: false,
        }
    }

    /// Whether the request may be sent again once it may have reached the server, from the
    /// rule itself (RFC 9110 §9.2.2), not from `Policy::may_retry`, which it also checks:
    /// an idempotent method the policy lists, or POST/PATCH with an `Idempotency-Key` (or
    /// without one, where the policy says the server deduplicates) unless the policy forbids it.
    pub(super) fn may_retry(&self) -> bool {
        let method = self.request.method;
        let has_idempotency_key = self.has_key;
        let listed = method.is_idempotent() && self.policy.retry_methods().contains(method);
        let keyed = matches!(method, Method::Post | Method::Patch)
            && match self.policy.non_idempotent() {
                NonIdempotent::Never => false,
                NonIdempotent::WithIdempotencyKey => has_idempotency_key,
                _ => true,
            };
        assert_eq!(
            self.policy.may_retry(method, has_idempotency_key),
            listed || keyed,
            "Policy::may_retry breaks the idempotency rule for {:?}",
            self.request
        );
        listed || keyed
    }

    /// The one reason a request the policy does not retry stops with, once it may have been
    /// sent: `NoIdempotencyKey` for a POST or PATCH that only lacks its key, else
    /// `NotIdempotent`.
    pub(super) fn refusal(&self) -> StopReason {
        let method = self.request.method;
        let has_idempotency_key = self.has_key;
        let lacks_only_the_key = matches!(method, Method::Post | Method::Patch)
            && self.policy.non_idempotent() == NonIdempotent::WithIdempotencyKey
            && !has_idempotency_key;
        if lacks_only_the_key {
            StopReason::NoIdempotencyKey
        } else {
            StopReason::NotIdempotent
        }
    }

    /// The `now` a time step feeds.
    pub(super) fn time(&self, step: &TimeStep, m: &impl Driven) -> Instant {
        time_of(step, self.now, self.deadline, m.next_deadline())
    }

    /// Checks a decision the machine gives at `self.now`, and learns from it.
    pub(crate) fn observe(&mut self, d: &Decision) {
        // An attempt in flight ends by itself at its timeout: the machine saw `now`.
        if let Some(timeout_at) = self.in_flight {
            if self.now >= timeout_at {
                self.in_flight = None;
                self.floor = None;
                self.add_busy(timeout_at.saturating_duration_since(self.started_at));
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
                // A wait for a shared object (a paused origin, an empty bucket) is theirs:
                // the policy's bounds on its own waits do not apply (the overload oracle
                // checks it against the object's answer), only the deadline does.
                let paused = self.paused.source(reason.source).is_some();
                assert!(
                    paused || delay <= self.policy.max_wait(),
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
                assert_eq!(reason.cause, self.last, "the wait's cause");
                assert!(
                    paused || delay <= self.worst.wait,
                    "wait {delay:?} above the worst case"
                );
                if !paused && reason.next_attempt != self.counted_wait {
                    self.counted_wait = reason.next_attempt;
                    self.add_busy(delay);
                }
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

    /// Checks the result of an event fed at `fed` against the state the previous call left,
    /// and learns from it. `before` is what a poll at `fed` would have said (observed on a
    /// clone, so it changed nothing).
    #[allow(clippy::too_many_arguments)] // the step's every part, as the callers have them
    pub(crate) fn handled(
        &mut self,
        fed: Instant,
        before: &Decision,
        action: &Action,
        asked: ServerAsked,
        result: Result<(), MisuseError>,
        m: &impl Driven,
    ) {
        match action {
            Action::Started => {
                // A send is due at `fed` unless the attempt in flight is still the machine's
                // (a timeout no decision reported does not make room for a send), and, when a
                // gate or a limiter may hold it back, only once they admitted it (a poll said
                // `Send`: `before`, seen on a clone that asks neither, does not tell).
                let expected = self.in_flight.is_none()
                    && matches!(before, Decision::Send { .. })
                    && (self.admitted || !self.paused.any());
                assert_eq!(
                    result.is_ok(),
                    expected,
                    "AttemptStarted accepted exactly when a send is due ({before:?})"
                );
                if result.is_err() {
                    assert_eq!(result, Err(MisuseError::NoSendPending));
                    return;
                }
                self.now = self.now.max(fed);
                self.observe(before);
                self.admitted = false;
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
                    timeout_at.saturating_duration_since(self.now) <= self.policy.attempt_timeout(),
                    "an attempt's timeout above attempt_timeout"
                );
                self.in_flight = Some(timeout_at);
                self.started_at = self.now;
                self.first_started = self.first_started.or(Some(self.now));
                if !self.may_retry() || !self.request.has_replayable_body {
                    self.may_send_again = false;
                }
            }
            Action::Response { status, .. } => {
                if result.is_ok() {
                    self.last_retryable = asked.retryable;
                    // A success for the budget: a 2xx or 3xx the policy does not retry.
                    if *status < 400 && !asked.retryable {
                        self.successes += 1;
                    }
                }
                let outcome = AttemptOutcome::Response(*status);
                self.answered(fed, outcome, asked, result);
            }
            Action::Error(e) => {
                self.answered(fed, AttemptOutcome::Error(*e), asked, result);
                if result.is_ok()
                    && e.class == ErrorClass::NotSent
                    && self.request.has_replayable_body
                {
                    // Never reached the server: safe to send again for any method.
                    self.may_send_again = true;
                }
            }
            Action::TimePassed => {
                assert_eq!(result, Ok(()), "time passing is always accepted");
                self.now = self.now.max(fed);
                self.observe(before);
            }
            // The caller feeds these itself (see `run`).
            Action::Poll | Action::Abort => {}
        }
    }

    /// The attempt in flight's answer: taken whenever it comes, even past the attempt's
    /// timeout, as long as no decision reported that timeout.
    fn answered(
        &mut self,
        fed: Instant,
        outcome: AttemptOutcome,
        asked: ServerAsked,
        result: Result<(), MisuseError>,
    ) {
        assert_eq!(
            result.is_ok(),
            self.in_flight.is_some(),
            "an answer is accepted exactly while an attempt is in flight ({result:?})"
        );
        if result.is_err() {
            assert_eq!(result, Err(MisuseError::NoAttemptInFlight));
            return;
        }
        self.now = self.now.max(fed);
        if let Some(timeout_at) = self.in_flight {
            let ended = self.now.min(timeout_at);
            self.add_busy(ended.saturating_duration_since(self.started_at));
        }
        self.in_flight = None;
        self.last = Some(outcome);
        self.floor = asked.floor;
        self.floor_from_rate_limit = asked.from_rate_limit;
        self.retry_after = asked.retry_after;
        self.ended = self.last;
    }

    /// An abort met the state the previous call left: unless that was already terminal, the
    /// operation is aborted, and the attempt in flight (if any) never ends.
    pub(crate) fn aborted(&mut self, result: Result<(), MisuseError>) {
        assert_eq!(result, Ok(()), "an abort is always accepted");
        if self.terminal.is_none() {
            self.aborted = true;
            self.in_flight = None;
        }
    }

    /// Checks that hold after every `handle` or `poll`.
    pub(crate) fn after(&mut self, m: &impl Driven) {
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
        // Once the machine has stopped, its outcome never changes. (A stop that `now` reaches
        // but that no call applied yet, seen on a clone, is not the machine's outcome yet.)
        if let (Some(terminal), Some(outcome)) = (&self.terminal, m.outcome()) {
            assert_eq!(Some(&outcome), terminal.outcome(), "the outcome changed");
        }
        // Learn the state the last call left, so the next step's expectations are exact.
        let now = self.now;
        let d = self.ledger.muted(|| m.clone().poll(now));
        self.check_books(m, &d);
        if let Some(cause) = self.ended.take() {
            self.check_after_attempt(cause, &d);
        }
        self.observe(&d);
        if m.outcome().is_none() {
            // Seen on a clone only: a fresh machine whose start already reaches the deadline
            // stops at its first call, unless that call is an abort, which wins.
            self.terminal = None;
        }
    }
}

impl Model {
    /// The budget pays only for retries sent: `d` is what the machine
    /// would decide now.
    fn check_books(&self, m: &impl Driven, d: &Decision) {
        assert_eq!(
            self.ledger.successes(),
            self.successes,
            "the budget hears of each 2xx or 3xx final answer as a success, of nothing else"
        );
        assert_eq!(
            self.ledger.starts(),
            (self.sends.min(1), self.first_started),
            "the budget hears of the operation once, when its first attempt starts: an \
             operation that sent nothing earns no retries"
        );
        let sent = self.sends.saturating_sub(1);
        let paid = self.ledger.paid();
        if m.outcome().is_some() {
            assert_eq!(
                paid, sent,
                "over: the budget must hold exactly the retries sent"
            );
            return;
        }
        let pending = match d {
            // A first attempt that a gate or a limiter holds back is paid for by nobody.
            Decision::Wait { reason, .. } => reason.next_attempt > 1,
            Decision::Send { attempt, .. } => *attempt > 1,
            Decision::AwaitResponse { .. } => false,
            // Seen on a clone only (a bound `now` reaches): the machine still holds what it
            // held, a granted retry included.
            _ => paid > sent,
        };
        assert_eq!(
            paid,
            sent + u32::from(pending),
            "the budget holds the retries sent plus the one granted and pending; decided {d:?}"
        );
    }
}

/// `Policy::worst_case`, checked against the policy's own bounds.
fn worst_case(policy: &Policy) -> WorstCase {
    let worst = policy.worst_case();
    match policy.hedging() {
        // The bound holds for every path, this one (which retries) and the hedged one.
        Some(h) => assert_eq!(
            (worst.attempts, worst.in_flight),
            (policy.max_attempts().max(h.attempts()), h.attempts()),
            "worst case under a hedging policy"
        ),
        None => assert_eq!(
            (worst.attempts, worst.in_flight),
            (policy.max_attempts(), 1),
            "worst-case attempts"
        ),
    }
    assert!(
        worst.elapsed <= policy.max_elapsed(),
        "worst-case elapsed above max_elapsed"
    );
    assert!(
        worst.wait < policy.max_elapsed(),
        "a worst-case wait that cannot end before the deadline"
    );
    let retried_wait = policy
        .max_wait()
        .min(policy.max_elapsed().saturating_sub(Duration::from_nanos(1)));
    if policy.hedging().is_none() {
        assert_eq!(worst.wait, retried_wait, "worst-case wait");
    } else {
        // The hedging delay may be longer than any wait the retries decide.
        assert!(
            worst.wait >= retried_wait,
            "a worst-case wait under hedging below the retries' longest"
        );
    }
    worst
}

impl Model {
    /// Adds to the time the decisions account for, which never exceeds the worst case.
    fn add_busy(&mut self, d: Duration) {
        self.busy = self.busy.saturating_add(d);
        assert!(
            self.busy <= self.worst.elapsed,
            "the decisions account for {:?}, above the worst case {:?}",
            self.busy,
            self.worst
        );
    }
}

/// The `now` a time step feeds, from `now` (the latest fed), the machine's `deadline` and its
/// `next_deadline()`.
pub(crate) fn time_of(
    step: &TimeStep,
    now: Instant,
    deadline: Instant,
    next: Option<Instant>,
) -> Instant {
    let back = |d: Duration| Instant::from_duration(now.as_duration().saturating_sub(d));
    let next = next.unwrap_or(now);
    match *step {
        TimeStep::Same => now,
        TimeStep::Nanos(n) => now.saturating_add(Duration::from_nanos(u64::from(n))),
        TimeStep::Millis(n) => now.saturating_add(Duration::from_millis(u64::from(n))),
        TimeStep::Secs(n) => now.saturating_add(Duration::from_secs(u64::from(n))),
        TimeStep::BackMillis(n) => back(Duration::from_millis(u64::from(n))),
        TimeStep::BackSecs(n) => back(Duration::from_secs(u64::from(n))),
        TimeStep::NextDeadline => next,
        TimeStep::JustBeforeNextDeadline => {
            Instant::from_duration(next.as_duration().saturating_sub(Duration::from_nanos(1)))
        }
        TimeStep::Deadline => deadline,
        TimeStep::JustBeforeDeadline => Instant::from_duration(
            deadline
                .as_duration()
                .saturating_sub(Duration::from_nanos(1)),
        ),
        TimeStep::Far(n) => now.saturating_add(Duration::from_nanos(n)),
        TimeStep::Absolute(n) => Instant::from_duration(Duration::from_nanos(n)),
        TimeStep::Max => Instant::from_duration(Duration::MAX),
    }
}
