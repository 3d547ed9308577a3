//! What the checker knows, from the outside, about the hedging machine, how it learns it, and
//! the rules each decision is checked against (written from the rules, not from the machine's
//! own code).

use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, CancelReason, DelaySource, ErrorClass, ErrorKind, HedgeDecision,
    HedgeDelay, HedgeEvent, HedgeOutcome, HedgeTrigger, Instant, Method, MisuseError,
    NonIdempotent, Outcome, Policy, Request, RetryAfterAboveMax, StopReason, WorstCase,
};

use super::books::{Books, Samples};
use super::decode::{Action, CopyRef, Scenario};
use super::Machine;
use crate::machine::{event_of, Action as RetryAction, ServerAsked, TimeStep};

/// Where a copy stands, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    InFlight,
    /// It answered.
    Ended,
    /// The machine must tell the driver to drop it, for this reason.
    ToCancel(CancelReason),
    /// The driver reported it dropped.
    Cancelled,
}

#[derive(Clone, Copy, Debug)]
struct Copy {
    started: Instant,
    /// `min(started + attempt_timeout, deadline)`, from the rule.
    timeout_at: Instant,
    state: State,
    /// It was cancelled while in flight for another reason than its timeout.
    counted: bool,
}

/// A non-final answer since the last copy started: the next copy's trigger.
#[derive(Clone, Copy, Debug)]
struct NonFinal {
    copy: u32,
    outcome: AttemptOutcome,
    at: Instant,
    floor: Option<DelaySource>,
}

pub(super) struct Model {
    policy: Policy,
    start: Instant,
    deadline: Instant,
    /// The latest `now` the machine took.
    now: Instant,
    /// Copies this operation may send, by the rule.
    max: u32,
    /// Why a request sent once is not sent again, by the rule.
    refusal: Option<StopReason>,
    /// The hedging delay, by the rule (`None`: copies follow non-final answers only).
    delay: Option<Duration>,
    worst: WorstCase,
    copies: Vec<Copy>,
    last_start: Instant,
    since_start: Option<NonFinal>,
    /// When the latest non-final answer came.
    latest_answer: Instant,
    /// No copy starts before `floor_lo`; the machine's floor (with its spread) is at most
    /// `floor_hi`.
    floor_lo: Instant,
    floor_hi: Instant,
    suppressed: Option<StopReason>,
    winner: Option<u32>,
    /// A stop that ends the operation at once (a winner, a permanent error, an abort).
    stop: Option<StopReason>,
    done_at: Option<Instant>,
    last_response: Option<(u16, Option<Duration>)>,
    last_error: Option<AttemptError>,
    terminal: Option<HedgeDecision>,
    /// What the tracker must have been fed: one sample per operation that sent a copy, its
    /// first copy's latency cut at that copy's timeout or the operation's end.
    records: Vec<(Instant, Duration)>,
    /// A copy went out on the hedging delay.
    on_delay: bool,
    /// What the budget must have heard: (successes, failures).
    ends: (u32, u32),
    pub(super) books: Books,
    pub(super) samples: Samples,
}

impl Model {
    pub(super) fn new(
        s: &Scenario,
        policy: Policy,
        books: Books,
        samples: Samples,
        m: &Machine,
    ) -> Self {
        let request = s.request;
        let refusal = refusal(&policy, request, s.idempotency_key.as_deref());
        let hedging = policy.hedging();
        let max = match (hedging, refusal) {
            (Some(h), None) => h.attempts(),
            _ => 1,
        };
        let delay = match hedging.map(|h| h.delay()) {
            Some(HedgeDelay::Fixed(d)) => Some(d),
            Some(HedgeDelay::Adaptive {
                max_extra_load_percent,
                min_samples,
            }) => {
                let q = percentile(&s.samples, 100 - max_extra_load_percent, min_samples);
                check_adaptive_delay(m.delay(), q, &s.samples);
                m.delay()
            }
            _ => None,
        };
        if let Some(HedgeDelay::Fixed(d)) = hedging.map(|h| h.delay()) {
            // The machine keeps nanoseconds: a longer delay saturates, which no deadline
            // reaches.
            let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            assert_eq!(
                m.delay(),
                Some(Duration::from_nanos(nanos)),
                "the fixed delay"
            );
        } else if hedging.is_none() {
            assert_eq!(m.delay(), None, "no hedging, no delay");
        }
        let deadline = s.start.saturating_add(policy.max_elapsed());
        assert_eq!(
            m.deadline(),
            deadline,
            "the deadline is max_elapsed after creation"
        );
        assert_eq!(m.max_copies(), max, "the copies {request:?} may send");
        assert_eq!(
            (m.sent(), m.in_flight(), m.outcome()),
            (0, 0, None),
            "a fresh machine"
        );
        assert_eq!(
            m.next_deadline(),
            None,
            "a fresh machine's first copy is due"
        );
        assert_eq!(
            books.starts(),
            0,
            "the budget hears of the operation when its first copy starts, not before"
        );
        Model {
            policy,
            start: s.start,
            deadline,
            now: s.start,
            max,
            refusal,
            delay: delay
                .map(|d| Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))),
            worst: worst_case(&policy),
            copies: Vec::new(),
            last_start: s.start,
            since_start: None,
            latest_answer: s.start,
            floor_lo: Instant::ZERO,
            floor_hi: Instant::ZERO,
            suppressed: None,
            winner: None,
            stop: None,
            done_at: None,
            last_response: None,
            last_error: None,
            terminal: None,
            records: Vec::new(),
            on_delay: false,
            ends: (0, 0),
            books,
            samples,
        }
    }

    fn sent(&self) -> u32 {
        self.copies.len() as u32
    }

    fn in_flight(&self) -> u32 {
        self.copies
            .iter()
            .filter(|c| c.state == State::InFlight)
            .count() as u32
    }

    fn earliest_timeout(&self) -> Option<Instant> {
        self.copies
            .iter()
            .filter(|c| c.state == State::InFlight)
            .map(|c| c.timeout_at)
            .min()
    }

    fn done(&self) -> bool {
        self.done_at.is_some()
    }

    /// When the next copy is due, at the earliest and at the latest (a server floor's spread
    /// is the machine's draw); `None` when no copy is coming.
    fn due(&self) -> Option<(Instant, Instant)> {
        if self.done()
            || self.stop.is_some()
            || self.sent() >= self.max
            || self.suppressed.is_some()
        {
            return None;
        }
        if self.sent() == 0 {
            return Some((self.start, self.start));
        }
        let at = match (self.since_start, self.delay) {
            (Some(answer), _) => answer.at,
            (None, Some(d)) => self.last_start.saturating_add(d),
            (None, None) => return None,
        };
        Some((at.max(self.floor_lo), at.max(self.floor_hi)))
    }

    /// Whether a copy is still coming: one is due before the deadline, and (when the call
    /// applied the deadline) `now` has not reached it.
    fn can_come(&self, deadline_applied: bool) -> bool {
        self.due().is_some_and(|(lo, _)| lo < self.deadline)
            && !(deadline_applied && self.now >= self.deadline)
    }

    /// The `now` a time step feeds.
    pub(super) fn time(&self, step: &TimeStep, m: &Machine) -> Instant {
        let back = |d: Duration| Instant::from_duration(self.now.as_duration().saturating_sub(d));
        let next = m.next_deadline().unwrap_or(self.now);
        let before = |t: Instant| {
            Instant::from_duration(t.as_duration().saturating_sub(Duration::from_nanos(1)))
        };
        match *step {
            TimeStep::Same => self.now,
            TimeStep::Nanos(n) => self.now.saturating_add(Duration::from_nanos(u64::from(n))),
            TimeStep::Millis(n) => self.now.saturating_add(Duration::from_millis(u64::from(n))),
            TimeStep::Secs(n) => self.now.saturating_add(Duration::from_secs(u64::from(n))),
            TimeStep::BackMillis(n) => back(Duration::from_millis(u64::from(n))),
            TimeStep::BackSecs(n) => back(Duration::from_secs(u64::from(n))),
            TimeStep::NextDeadline => next,
            TimeStep::JustBeforeNextDeadline => before(next),
            TimeStep::Deadline => self.deadline,
            TimeStep::JustBeforeDeadline => before(self.deadline),
            TimeStep::Far(n) => self.now.saturating_add(Duration::from_nanos(n)),
            TimeStep::Absolute(n) => Instant::from_duration(Duration::from_nanos(n)),
            TimeStep::Max => Instant::from_duration(Duration::MAX),
        }
    }

    /// The copy an action names, resolved against what the driver knows.
    fn resolve(&self, copy: CopyRef, action: &Action) -> u32 {
        let n = match copy {
            CopyRef::Raw(n) => return n,
            CopyRef::Natural(n) => usize::from(n),
        };
        let pick = |list: Vec<u32>, fallback: u32| match list.len() {
            0 => fallback,
            len => list[n % len],
        };
        let numbered = |f: &dyn Fn(State) -> bool| -> Vec<u32> {
            (1..=self.sent())
                .filter(|&c| f(self.copies[c as usize - 1].state))
                .collect()
        };
        match action {
            Action::Started(_) => self.sent() + 1,
            Action::Cancelled(_) => pick(
                numbered(&|s| matches!(s, State::ToCancel(_))),
                n as u32 % 12,
            ),
            _ => pick(numbered(&|s| s == State::InFlight), self.sent().max(1)),
        }
    }

    /// The event for an action, the copy it names and what its response asks for.
    pub(super) fn event_for<'a>(
        &self,
        action: &'a Action,
        policy: &Policy,
    ) -> (u32, HedgeEvent<'a>, ServerAsked) {
        let none = ServerAsked::default();
        match action {
            Action::Poll | Action::TimePassed => (0, HedgeEvent::TimePassed, none),
            Action::Abort => (0, HedgeEvent::Abort, none),
            Action::Started(c) => {
                let copy = self.resolve(*c, action);
                (copy, HedgeEvent::Started { copy }, none)
            }
            Action::Cancelled(c) => {
                let copy = self.resolve(*c, action);
                (copy, HedgeEvent::Cancelled { copy }, none)
            }
            Action::Answer(c, answer) => {
                let copy = self.resolve(*c, action);
                match answer {
                    RetryAction::Error(error) => (
                        copy,
                        HedgeEvent::Error {
                            copy,
                            error: *error,
                        },
                        none,
                    ),
                    response => match event_of(response, policy) {
                        (backstop_core::Event::Response(response), asked) => {
                            (copy, HedgeEvent::Response { copy, response }, asked)
                        }
                        other => unreachable!("a response action gave {other:?}"),
                    },
                }
            }
        }
    }

    // --- What the machine learns, from the rules ------------------------------------------

    /// Every copy in flight whose timeout `now` reached has timed out (a poll or a timer
    /// applies the bounds; an answer or a start does not).
    fn apply_timeouts(&mut self) {
        if self.done() {
            return;
        }
        for i in 0..self.copies.len() {
            let c = self.copies[i];
            if c.state == State::InFlight && self.now >= c.timeout_at {
                self.copies[i].state = State::ToCancel(CancelReason::TimedOut);
                if i == 0 {
                    // The first copy took at least its timeout: the operation's sample.
                    self.sample(c.timeout_at);
                }
                let error = AttemptError::new(ErrorKind::Timeout);
                self.last_error = Some(error);
                self.ends.1 += 1;
                self.non_final(i as u32 + 1, AttemptOutcome::Error(error), none());
            }
        }
    }

    /// Copy `copy` ended with a non-final answer at `now`: the next copy goes at once, not
    /// before the server's floor; a floor above the ceiling suppresses every later copy
    /// (or is clamped to it).
    fn non_final(&mut self, copy: u32, outcome: AttemptOutcome, asked: ServerAsked) {
        let at = self.now;
        self.latest_answer = at;
        if self.sent() >= self.max || self.suppressed.is_some() {
            return;
        }
        let max = self.policy.max_retry_after();
        let mut source = None;
        if let Some(floor) = asked.floor {
            let kind = if asked.from_rate_limit {
                DelaySource::RateLimitReset
            } else {
                DelaySource::RetryAfter
            };
            let (lo, hi) = if floor <= max {
                source = Some(kind);
                // The spread: at most the policy's, a tenth of the floor, up to the ceiling,
                // and never past the deadline when the floor alone is before it.
                let room = self
                    .deadline
                    .saturating_duration_since(at.saturating_add(floor))
                    .saturating_sub(Duration::from_nanos(1));
                let spread = self
                    .policy
                    .retry_after_spread()
                    .min(floor / 10)
                    .min(max - floor)
                    .min(room);
                (at.saturating_add(floor), at.saturating_add(floor + spread))
            } else if self.policy.retry_after_above_max() == RetryAfterAboveMax::Clamp {
                source = Some(match kind {
                    DelaySource::RateLimitReset => DelaySource::RateLimitResetClamped,
                    _ => DelaySource::RetryAfterClamped,
                });
                (at.saturating_add(max), at.saturating_add(max))
            } else {
                self.suppressed = Some(StopReason::RetryAfterAboveMax);
                return;
            };
            self.floor_lo = self.floor_lo.max(lo);
            self.floor_hi = self.floor_hi.max(hi);
        }
        self.since_start = Some(NonFinal {
            copy,
            outcome,
            at,
            floor: source,
        });
    }

    /// Every copy in flight is to be dropped, for `reason`.
    fn cancel_in_flight(&mut self, reason: CancelReason) {
        for c in &mut self.copies {
            if c.state == State::InFlight {
                c.state = State::ToCancel(reason);
                c.counted = true;
            }
        }
    }

    /// The operation's one latency sample, at `at` (the first copy's timeout, or the end),
    /// unless it has one, or sent nothing: the first copy's latency as far as it was seen.
    fn sample(&mut self, at: Instant) {
        if let (Some(first), true) = (self.copies.first(), self.records.is_empty()) {
            self.records
                .push((at, at.saturating_duration_since(first.started)));
        }
    }

    /// The outcome the rules give, once the operation is over.
    fn expected_outcome(&self) -> HedgeOutcome {
        let reason = match (self.stop, self.suppressed) {
            (Some(stop), _) => stop,
            (None, Some(r)) => r,
            // A copy the operation could still send could not start before the deadline.
            (None, None) if self.sent() < self.max => StopReason::Deadline,
            (None, None) => self.refusal.unwrap_or(StopReason::Attempts),
        };
        let (last, retry_after) = match (self.last_response, self.last_error) {
            (Some((status, ra)), _) => (Some(AttemptOutcome::Response(status)), ra),
            (None, Some(e)) => (Some(AttemptOutcome::Error(e)), None),
            (None, None) => (None, None),
        };
        let done_at = self.done_at.expect("over");
        HedgeOutcome {
            outcome: Outcome {
                attempts: self.sent(),
                elapsed: done_at.saturating_duration_since(self.start),
                reason,
                last,
                retry_after,
            },
            winner: self.winner,
            cancelled: self.copies.iter().filter(|c| c.counted).count() as u32,
            suppressed: match self.suppressed {
                Some(_) => self.max - self.sent(),
                None => 0,
            },
            suppressed_by: self.suppressed,
        }
    }

    /// After a call that may end the operation: whether it must be over now, and the outcome.
    fn settle(&mut self, m: &Machine, deadline_applied: bool) {
        let must =
            self.stop.is_some() || (self.in_flight() == 0 && !self.can_come(deadline_applied));
        if must && self.done_at.is_none() {
            self.done_at = Some(self.now);
            self.sample(self.now);
        }
        assert_eq!(
            m.outcome().is_some(),
            self.done(),
            "over exactly when a final answer, a permanent error or an abort came, or when no \
             copy is in flight and none can come ({} in flight, due {:?}, deadline {:?}, now {:?})",
            self.in_flight(),
            self.due(),
            self.deadline,
            self.now
        );
        if let Some(o) = m.outcome() {
            assert_eq!(o, self.expected_outcome(), "the outcome the rules give");
        }
    }

    // --- The calls -------------------------------------------------------------------------

    /// A real poll at `fed` decided `d` (twice); the budget had denied `denied` copies before.
    pub(super) fn polled(&mut self, fed: Instant, d: &HedgeDecision, m: &Machine, denied: u32) {
        self.now = self.now.max(fed);
        self.apply_timeouts();
        // The budget is asked inside the poll, after the bounds: learn what it said.
        if self.books.denied() > denied && self.suppressed.is_none() {
            self.suppressed = Some(StopReason::Budget);
        }
        self.settle(m, true);
        self.observe(d);
    }

    /// An event at `fed` gave `result`; `probe` is what a poll at `fed` would have said
    /// (observed on a clone).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn handled(
        &mut self,
        fed: Instant,
        action: &Action,
        copy: u32,
        asked: ServerAsked,
        probe: &HedgeDecision,
        result: Result<(), MisuseError>,
        m: &Machine,
    ) {
        let now = self.now.max(fed);
        match action {
            Action::Poll => unreachable!("polls are `polled`"),
            Action::TimePassed => {
                assert_eq!(result, Ok(()), "time passing is always accepted");
                self.now = now;
                self.apply_timeouts();
                self.settle(m, true);
            }
            Action::Abort => {
                assert_eq!(result, Ok(()), "an abort is always accepted");
                self.now = now;
                if !self.done() {
                    self.cancel_in_flight(CancelReason::Aborted);
                    self.stop = Some(StopReason::Aborted);
                }
                self.settle(m, false);
            }
            Action::Started(_) => self.started(now, copy, probe, result, m),
            Action::Cancelled(_) => {
                let i = copy.checked_sub(1).map(|i| i as usize);
                let pending = i.and_then(|i| self.copies.get(i)).map(|c| c.state);
                if matches!(pending, Some(State::ToCancel(_))) {
                    assert_eq!(result, Ok(()), "copy {copy} was to be dropped");
                    self.now = now;
                    self.copies[i.expect("a copy")].state = State::Cancelled;
                } else {
                    assert_eq!(
                        result,
                        Err(MisuseError::NoCancelPending),
                        "copy {copy} ({pending:?}) was not to be dropped"
                    );
                }
                assert_eq!(
                    m.outcome().is_some(),
                    self.done(),
                    "a cancel changes no end"
                );
            }
            Action::Answer(_, answer) => {
                let i = copy.checked_sub(1).map(|i| i as usize);
                let state = i.and_then(|i| self.copies.get(i)).map(|c| c.state);
                if state != Some(State::InFlight) {
                    assert_eq!(
                        result,
                        Err(MisuseError::NoAttemptInFlight),
                        "an answer for copy {copy} ({state:?}), which is not in flight"
                    );
                    return;
                }
                assert_eq!(
                    result,
                    Ok(()),
                    "copy {copy} was in flight: its answer is taken, even past a timeout no \
                     call applied"
                );
                assert!(
                    self.winner.is_none() && !self.done(),
                    "an answer after the end"
                );
                self.now = now;
                let i = i.expect("a copy");
                self.copies[i].state = State::Ended;
                match answer {
                    RetryAction::Response { status, .. } => {
                        self.last_response = Some((*status, asked.retry_after));
                        if asked.retryable {
                            self.ends.1 += 1;
                            self.non_final(copy, AttemptOutcome::Response(*status), asked);
                        } else {
                            // The first final answer wins.
                            self.winner = Some(copy);
                            self.stop = Some(StopReason::FinalStatus);
                            // A final 4xx or 5xx is neither a success nor a failure.
                            if *status < 400 {
                                self.ends.0 += 1;
                            }
                            self.cancel_in_flight(CancelReason::Superseded { winner: copy });
                        }
                    }
                    RetryAction::Error(e) => {
                        self.last_error = Some(*e);
                        let timeout_at = self.copies[0].timeout_at;
                        if copy == 1 && e.kind == ErrorKind::Timeout && self.now >= timeout_at {
                            // The timeout the driver enforced (through the caller's override),
                            // as the machine's own: the first copy took at least its timeout.
                            self.sample(timeout_at);
                        }
                        match e.class {
                            ErrorClass::Aborted => {
                                self.cancel_in_flight(CancelReason::Aborted);
                                self.stop = Some(StopReason::Aborted);
                            }
                            ErrorClass::Permanent => {
                                self.cancel_in_flight(CancelReason::Fatal);
                                self.stop = Some(StopReason::PermanentError);
                            }
                            _ => {
                                self.ends.1 += 1;
                                self.non_final(copy, AttemptOutcome::Error(*e), none());
                            }
                        }
                    }
                    other => unreachable!("an answer is a response or an error: {other:?}"),
                }
                self.settle(m, true);
            }
        }
    }

    fn started(
        &mut self,
        now: Instant,
        copy: u32,
        probe: &HedgeDecision,
        result: Result<(), MisuseError>,
        m: &Machine,
    ) {
        let sent = self.sent();
        // A copy after the first is started only once the budget has paid for it (the poll
        // that decided its send asked).
        let paid = sent == 0 || self.books.paid() == sent;
        match result {
            Ok(()) => {
                assert_eq!(copy, sent + 1, "the started copy is the next one");
                assert!(
                    !self.done() && self.stop.is_none(),
                    "a copy started after the end"
                );
                assert!(
                    copy <= self.max,
                    "copy {copy} beyond the {} allowed",
                    self.max
                );
                assert!(
                    now < self.deadline,
                    "a copy started at or after the deadline"
                );
                assert!(paid, "copy {copy} started before the budget paid for it");
                assert!(
                    self.due().is_some_and(|(lo, _)| lo <= now),
                    "copy {copy} started before it was due ({:?})",
                    self.due()
                );
                self.now = now;
                if let HedgeDecision::Send {
                    trigger: HedgeTrigger::Delay(_),
                    ..
                } = probe
                {
                    self.on_delay = true;
                }
                self.copies.push(Copy {
                    started: now,
                    timeout_at: now
                        .saturating_add(self.policy.attempt_timeout())
                        .min(self.deadline),
                    state: State::InFlight,
                    counted: false,
                });
                self.last_start = now;
                self.since_start = None;
                assert_eq!(
                    self.books.paid(),
                    sent,
                    "the copy's grant is spent, no other held"
                );
            }
            Err(e) => {
                assert_eq!(e, MisuseError::NoSendPending, "a refused start");
                let due = matches!(probe, HedgeDecision::Send { copy: c, .. } if *c == copy);
                assert!(
                    !(due && paid),
                    "copy {copy} was due and paid for ({probe:?}), yet its start was refused"
                );
            }
        }
        assert_eq!(m.outcome().is_some(), self.done(), "a start changes no end");
    }

    // --- The decisions ---------------------------------------------------------------------

    /// Checks a decision of a real poll at `self.now`.
    fn observe(&mut self, d: &HedgeDecision) {
        if let Some(terminal) = &self.terminal {
            assert_eq!(d, terminal, "a terminal decision must repeat forever");
            return;
        }
        let to_drop: Vec<(u32, CancelReason)> = (1..=self.sent())
            .filter_map(|c| match self.copies[c as usize - 1].state {
                State::ToCancel(r) => Some((c, r)),
                _ => None,
            })
            .collect();
        if let HedgeDecision::Cancel { copy, reason } = *d {
            assert!(
                to_drop.contains(&(copy, reason)),
                "Cancel {{ copy: {copy}, reason: {reason:?} }}, but the copies to drop are \
                 {to_drop:?}"
            );
            return;
        }
        assert!(
            to_drop.is_empty(),
            "{d:?} while copies must be dropped: {to_drop:?}"
        );
        if let Some(o) = d_outcome(d) {
            assert!(self.done(), "{d:?} before the end");
            assert_eq!(self.in_flight(), 0, "the end with a copy in flight");
            assert_eq!(o, self.expected_outcome(), "the outcome the rules give");
            let response = matches!(o.outcome.last, Some(AttemptOutcome::Response(_)))
                && o.outcome.reason != StopReason::Aborted;
            assert_eq!(
                matches!(d, HedgeDecision::Return(_)),
                response,
                "Return exactly when a response is handed back: {d:?}"
            );
            self.terminal = Some(*d);
            return;
        }
        assert!(!self.done(), "over, yet {d:?}");
        let due = self
            .due()
            .filter(|&(lo, _)| lo < self.deadline && self.now < self.deadline);
        match *d {
            HedgeDecision::Send {
                copy,
                timeout,
                trigger,
            } => self.check_send(copy, timeout, trigger, due),
            HedgeDecision::Wait { until, in_flight } => self.check_wait(until, in_flight, due),
            _ => panic!("a decision this checker does not know: {d:?}"),
        }
    }

    fn check_send(
        &self,
        copy: u32,
        timeout: Duration,
        trigger: HedgeTrigger,
        due: Option<(Instant, Instant)>,
    ) {
        let sent = self.sent();
        assert_eq!(copy, sent + 1, "Send names the next copy");
        assert!(
            copy <= self.max,
            "copy {copy} beyond the {} allowed",
            self.max
        );
        assert!(
            copy <= self.worst.attempts,
            "copy {copy} beyond the worst case"
        );
        assert!(
            self.in_flight() < self.worst.in_flight,
            "a copy beyond the worst case in flight"
        );
        assert!(self.now < self.deadline, "a send at or after the deadline");
        assert!(!timeout.is_zero(), "a copy with no time at all");
        assert!(
            timeout <= self.policy.attempt_timeout(),
            "timeout above attempt_timeout"
        );
        let end = self.now.saturating_add(timeout);
        assert!(
            end <= self.deadline,
            "a copy's timeout ends past the deadline"
        );
        assert!(
            timeout == self.policy.attempt_timeout() || end == self.deadline,
            "a timeout cut short of the deadline"
        );
        let (lo, _) = due.unwrap_or_else(|| panic!("copy {copy} sent, but none is coming"));
        assert!(lo <= self.now, "copy {copy} sent before it is due ({lo:?})");
        assert_eq!(
            self.books.paid(),
            sent,
            "a copy after the first is paid for when it is sent, once"
        );
        let expected = match (sent, self.since_start) {
            (0, _) => HedgeTrigger::First,
            (_, Some(a)) => HedgeTrigger::Answer {
                copy: a.copy,
                outcome: a.outcome,
                floor: a.floor,
            },
            (_, None) => HedgeTrigger::Delay(self.delay.expect("a delay sends it")),
        };
        assert_eq!(trigger, expected, "the trigger of copy {copy}");
    }

    fn check_wait(&self, until: Instant, in_flight: u32, due: Option<(Instant, Instant)>) {
        assert_eq!(in_flight, self.in_flight(), "the copies in flight");
        assert!(until > self.now, "a wait that has ended is still reported");
        assert!(until <= self.deadline, "a wait past the deadline");
        let timeout = self.earliest_timeout();
        match due {
            Some((lo, hi)) => {
                assert!(
                    hi > self.now,
                    "copy {} is due ({lo:?} to {hi:?}) at {:?}, yet the machine waits",
                    self.sent() + 1,
                    self.now
                );
                let lo = timeout.map_or(lo, |t| t.min(lo));
                let hi = timeout.map_or(hi, |t| t.min(hi));
                assert!(
                    lo <= until && until <= hi,
                    "the wait ends at {until:?}, not at the earliest of the next copy and the \
                     timeouts ({lo:?} to {hi:?})"
                );
            }
            None => assert_eq!(
                Some(until),
                timeout,
                "no copy is coming: the wait ends at the earliest timeout"
            ),
        }
        if in_flight == 0 {
            assert!(
                until.saturating_duration_since(self.latest_answer) <= self.worst.wait,
                "a wait after an answer above the worst case"
            );
        }
    }

    /// Checks that hold after every step.
    pub(super) fn after(&mut self, m: &Machine) {
        if let Some(next) = m.next_deadline() {
            assert!(
                next > self.now,
                "next_deadline {next:?} is not after now {:?}: a driver would spin",
                self.now
            );
            assert!(!self.done(), "a deadline after the end");
        }
        assert_eq!(m.sent(), self.sent(), "sent() counts the copies started");
        assert_eq!(
            m.in_flight(),
            self.in_flight(),
            "in_flight() counts the copies in flight"
        );
        assert!(self.sent() <= self.max && self.sent() <= self.worst.attempts);
        assert!(self.in_flight() <= self.worst.in_flight);
        assert_eq!(m.outcome().is_some(), self.done(), "the end is the rules'");
        if let Some(o) = m.outcome() {
            assert_eq!(o, self.expected_outcome(), "the outcome never changes");
        }
        assert_eq!(
            self.samples.recorded(),
            self.records,
            "the tracker is fed one sample per operation that sent a copy: its first copy's \
             latency, cut at that copy's timeout or the operation's end, and nothing else"
        );
        if let (true, Some(&(_, sample)), Some(delay)) =
            (self.on_delay, self.records.first(), self.delay)
        {
            // What keeps the adaptive delay's extra load under its bound: an operation
            // hedged on the delay never records less than it.
            assert!(
                sample >= delay,
                "an operation hedged on a {delay:?} delay recorded {sample:?}"
            );
        }
        assert_eq!(
            self.books.ends(),
            self.ends,
            "the budget hears of every non-final answer, timeout and winner"
        );
        assert_eq!(
            self.books.starts(),
            self.sent().min(1),
            "the budget hears of the operation once, when its first copy starts"
        );
        if let (Some(first), Some(at)) = (self.copies.first(), self.books.started_at()) {
            assert_eq!(
                at, first.started,
                "the operation starts with its first copy"
            );
        }
        assert!(
            self.books.asked() <= self.max.saturating_sub(1),
            "the budget asked for more copies than the hedges allowed"
        );
        assert!(self.books.denied() <= 1, "asked again after a denial");
        let paid = self.books.paid();
        let spent = self.sent().saturating_sub(1);
        if self.done() || !self.can_come(false) {
            assert_eq!(
                paid, spent,
                "no grant held for a copy that will not be sent"
            );
        } else {
            assert!(
                paid == spent || paid == self.sent(),
                "the budget holds {paid} for {} copies",
                self.sent()
            );
        }
    }
}

fn none() -> ServerAsked {
    ServerAsked::default()
}

fn d_outcome(d: &HedgeDecision) -> Option<HedgeOutcome> {
    match d {
        HedgeDecision::Return(o) | HedgeDecision::GiveUp(o) => Some(*o),
        _ => None,
    }
}

/// Why a request is sent once, by the rule (RFC 9110 §9.2.2 and the policy): a body that
/// cannot be sent again; else a method the policy does not retry, or a POST/PATCH without a
/// usable `Idempotency-Key` (empty or blank is none) under the default, or any POST/PATCH under
/// `NonIdempotent::Never`.
fn refusal(policy: &Policy, request: Request, key: Option<&[u8]>) -> Option<StopReason> {
    if !request.has_replayable_body {
        return Some(StopReason::BodyNotReplayable);
    }
    let has_key = key.is_some_and(|v| {
        v.iter()
            .any(|&b| !(b.is_ascii() && char::from(b).is_whitespace()))
    });
    let method = request.method;
    let listed = method.is_idempotent() && policy.retry_methods().contains(method);
    let post = matches!(method, Method::Post | Method::Patch);
    let keyed = post
        && match policy.non_idempotent() {
            NonIdempotent::Never => false,
            NonIdempotent::WithIdempotencyKey => has_key,
            _ => true,
        };
    if listed || keyed {
        None
    } else if post && policy.non_idempotent() == NonIdempotent::WithIdempotencyKey {
        Some(StopReason::NoIdempotencyKey)
    } else {
        Some(StopReason::NotIdempotent)
    }
}

/// The `p`-th percentile of `samples` (the smallest sample that at least `p` % of them do not
/// exceed), or `None` with fewer than `min_samples` (or none).
fn percentile(samples: &[Duration], p: u8, min_samples: u32) -> Option<Duration> {
    let n = samples.len();
    if n == 0 || (n as u64) < u64::from(min_samples) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = (n * usize::from(p)).div_ceil(100).max(1);
    Some(sorted[rank - 1])
}

/// The adaptive delay (Finagle): `max(1 ms, the percentile)`, read at the upper edge of a
/// bucket at most an eighth wide (in whole microseconds), so never shorter than the
/// percentile and at most an eighth above it.
fn check_adaptive_delay(delay: Option<Duration>, q: Option<Duration>, samples: &[Duration]) {
    let Some(q) = q else {
        assert_eq!(
            delay, None,
            "no delay before min_samples latencies ({samples:?})"
        );
        return;
    };
    let delay = delay.unwrap_or_else(|| panic!("a percentile {q:?}, yet no delay"));
    let micros = Duration::from_micros(u64::try_from(q.as_micros()).expect("small"));
    let floor = Duration::from_millis(1);
    assert!(
        delay >= floor.max(micros),
        "the adaptive delay {delay:?} is shorter than max(1 ms, {q:?})"
    );
    assert!(
        delay <= floor.max(micros + micros / 8 + Duration::from_micros(1)),
        "the adaptive delay {delay:?} is more than a bucket above {q:?}"
    );
}

/// `Policy::worst_case`, checked against the policy's own bounds.
fn worst_case(policy: &Policy) -> WorstCase {
    let worst = policy.worst_case();
    match policy.hedging() {
        Some(h) => {
            // The paths that retry instead follow the policy's retry settings: the bound is
            // the larger.
            assert_eq!(
                worst.attempts,
                h.attempts().max(policy.max_attempts()),
                "worst-case requests, hedged or retried"
            );
            assert_eq!(worst.in_flight, h.attempts(), "every copy may be in flight");
        }
        None => assert_eq!(
            (worst.attempts, worst.in_flight),
            (policy.max_attempts(), 1),
            "worst case of a retried operation"
        ),
    }
    assert!(
        worst.elapsed <= policy.max_elapsed(),
        "worst-case elapsed above max_elapsed"
    );
    assert!(
        worst.wait < policy.max_elapsed(),
        "a worst-case wait past the deadline"
    );
    worst
}
