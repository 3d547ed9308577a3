//! The retry state machine: events in, decisions out.
//!
//! Rule: time and randomness are inputs (so every decision can be replayed); one funnel in
//! ([`RetryMachine::handle`]) and one funnel out ([`RetryMachine::poll`]); every decision carries
//! its reason; the state is fixed-size and nothing is allocated (so it runs in `no_std`).

use core::time::Duration;

use rand_core::Rng;

use crate::backoff::Backoff;
use crate::budget::{Budget, Unlimited};
use crate::classify::{AttemptError, ErrorClass, ErrorKind};
use crate::decision::{
    AttemptOutcome, Decision, DelaySource, Outcome, SendReason, StopReason, WaitReason,
};
use crate::event::{Event, MisuseError, Request, Response};
use crate::jitter::{uniform_nanos, Jitter};
use crate::policy::{Policy, RetryAfterAboveMax};
use crate::rate_limit::reset_delay;
use crate::retry_after::{parse_http_date, parse_retry_after, RetryAfter};
use crate::time::{nanos_saturating, Instant};

/// The sans-IO retry state machine for one operation (one logical request and its retries).
///
/// `R` is the caller's random number generator (seed it for reproducible runs); `B` an optional
/// shared [`Budget`].
///
/// # The driver's contract
///
/// A driver loops:
///
/// 1. `poll(now)` and act on the [`Decision`]:
///    - [`Decision::Send`]: report [`Event::AttemptStarted`], send the request, and report its
///      [`Event::Response`] or [`Event::Error`] when it ends.
///    - [`Decision::AwaitResponse`]: an attempt is in flight; wait for it, at most until its
///      `timeout_at` (then poll: the machine treats it as timed out).
///    - [`Decision::Wait`]: sleep until `until`, then poll again (keep the last response until
///      the next send: if the operation ends first, it is the one returned).
///    - [`Decision::Return`] / [`Decision::GiveUp`]: stop; every later poll repeats it.
/// 2. An event meets the state the previous call left: a misplaced one is a [`MisuseError`]
///    and changes nothing, and the answer of the attempt in flight is taken even past its
///    timeout as long as no decision reported that timeout.
/// 3. [`Event::Abort`] may come at any time; the next decision is `GiveUp` with
///    [`StopReason::Aborted`] and nothing is ever sent again.
///
/// `now` is the caller's monotonic time ([`Instant`]). A `now` earlier than one already seen is
/// treated as the latest one seen (time never runs backwards inside the machine).
/// After every `handle` or `poll`, [`RetryMachine::next_deadline`] is `None` (act now, or done)
/// or strictly later than `now`, so a driver that sleeps until it never spins.
///
/// # Example
///
/// ```
/// use backstop_core::{Decision, Event, Instant, Method, Policy, Request, Response, RetryMachine, StopReason};
/// use rand_core::SeedableRng;
///
/// let policy = Policy::default();
/// let rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
/// let mut now = Instant::ZERO;
/// let mut m = RetryMachine::new(policy, Request::new(Method::Get), rng, now);
///
/// assert!(matches!(m.poll(now), Decision::Send { attempt: 1, .. }));
/// m.handle(now, Event::AttemptStarted).unwrap();
/// m.handle(now, Event::Response(Response::new(503).retry_after(b"2"))).unwrap();
/// let Decision::Wait { until, .. } = m.poll(now) else { panic!("expected a wait") };
/// assert!(until >= Instant::from_secs(2)); // the server's value is a floor
///
/// now = until;
/// assert!(matches!(m.poll(now), Decision::Send { attempt: 2, .. }));
/// m.handle(now, Event::AttemptStarted).unwrap();
/// m.handle(now, Event::Response(Response::new(200))).unwrap();
/// let Decision::Return(outcome) = m.poll(now) else { panic!("expected the response") };
/// assert_eq!((outcome.attempts, outcome.reason), (2, StopReason::FinalStatus));
/// ```
#[derive(Clone, Debug)]
pub struct RetryMachine<R, B = Unlimited> {
    policy: Policy,
    /// Read once, into `fixed`; kept so that `Debug` shows it.
    #[allow(dead_code)]
    request: Request,
    rng: R,
    budget: B,
    started: Instant,
    deadline: Instant,
    now: Instant,
    attempts: u32,
    previous_wait: Duration,
    last: Option<AttemptOutcome>,
    /// The last response's `Retry-After` delay, for the outcome.
    last_retry_after: Option<Duration>,
    /// When the budget granted the retry that is not sent yet. Given back if the operation
    /// ends first, so the budget pays only for retries sent. Its cause is `last`, which no
    /// event changes before the retry is sent or given back.
    granted: Option<Instant>,
    state: State,
    /// What the policy and the request fix for the whole operation, computed once.
    fixed: Fixed,
}

/// The values of the policy and the request that every decision reads, computed once when the
/// machine is created: in nanoseconds, and the refusals that do not depend on the attempt.
#[derive(Clone, Copy, Debug)]
struct Fixed {
    /// The policy's attempt timeout in nanoseconds (saturated).
    attempt_timeout: u64,
    /// `Some((base, cap))` in nanoseconds (saturated) when the backoff is exponential with full
    /// jitter: the wait is then computed in `u64` (a full-jitter draw only depends on the delay
    /// saturated to `u64` nanoseconds).
    full_exponential: Option<(u64, u64)>,
    /// Why a retry is refused after an attempt that never reached the server, if it is.
    refusal_not_sent: Option<StopReason>,
    /// Why a retry is refused after any other attempt, if it is.
    refusal: Option<StopReason>,
}

impl Fixed {
    fn new(policy: &Policy, request: Request) -> Self {
        let body = if request.has_replayable_body {
            None
        } else {
            Some(StopReason::BodyNotReplayable)
        };
        let backoff = policy.backoff();
        Fixed {
            attempt_timeout: nanos_saturating(policy.attempt_timeout()),
            full_exponential: match (backoff, policy.jitter()) {
                (Backoff::Exponential { base, cap }, Jitter::Full) => {
                    Some((nanos_saturating(base), nanos_saturating(cap)))
                }
                _ => None,
            },
            refusal_not_sent: body,
            refusal: body.or(policy.retry_refusal(request.method, request.has_idempotency_key)),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    Ready(SendReason),
    InFlight {
        timeout_at: Instant,
    },
    Waiting {
        until: Instant,
        delay: Duration,
        reason: WaitReason,
    },
    Done {
        reason: StopReason,
        at: Instant,
    },
}

impl<R: Rng> RetryMachine<R, Unlimited> {
    /// A machine for one operation, created at `now` (the `max_elapsed` deadline runs from
    /// here), with no retry budget.
    pub fn new(policy: Policy, request: Request, rng: R, now: Instant) -> Self {
        RetryMachine::with_budget(policy, request, rng, Unlimited, now)
    }
}

impl<R: Rng, B: Budget> RetryMachine<R, B> {
    /// A machine that consults `budget` before every retry.
    pub fn with_budget(policy: Policy, request: Request, rng: R, budget: B, now: Instant) -> Self {
        budget.on_operation_start(now);
        RetryMachine {
            deadline: now.saturating_add(policy.max_elapsed()),
            policy,
            request,
            rng,
            budget,
            started: now,
            now,
            attempts: 0,
            previous_wait: policy.backoff().base(),
            last: None,
            last_retry_after: None,
            granted: None,
            state: State::Ready(SendReason::First),
            fixed: Fixed::new(&policy, request),
        }
    }

    /// The policy this machine follows.
    #[must_use]
    pub const fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The instant after which no attempt starts.
    #[must_use]
    pub const fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Attempts started so far.
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.attempts
    }

    /// When the driver must poll again at the latest: the in-flight attempt's timeout or the
    /// end of a wait. `None` means "poll now" (a send is due) or "done".
    #[must_use]
    pub const fn next_deadline(&self) -> Option<Instant> {
        match self.state {
            State::InFlight { timeout_at } => Some(timeout_at),
            State::Waiting { until, .. } => Some(until),
            State::Ready(_) | State::Done { .. } => None,
        }
    }

    /// The final outcome, once the machine is done.
    #[must_use]
    pub fn outcome(&self) -> Option<Outcome> {
        match self.state {
            State::Done { reason, at } => Some(self.outcome_at(reason, at)),
            _ => None,
        }
    }

    /// Feeds one event in. A misplaced event is an error and changes nothing (not even the
    /// machine's clock).
    ///
    /// An event meets the state the previous call left, with the bounds `now` reaches applied
    /// afterwards: an abort, or the response (or error) of the attempt in flight, wins over a
    /// timeout or a deadline that no decision has reported yet.
    #[inline]
    pub fn handle(&mut self, now: Instant, event: Event<'_>) -> Result<(), MisuseError> {
        // A small dispatch, inlined where it is called (so the event is known there), to one
        // function per event. No bound applies after `AttemptStarted`, `Response` or `Error`:
        // the new timeout is later than `now` (the attempt timeout is not zero, and the time
        // left is not either), and a wait that follows an attempt ends after `now` and before
        // the deadline.
        let now = self.now.max(now);
        match event {
            Event::Abort => {
                self.now = now;
                self.abort();
                Ok(())
            }
            Event::TimePassed => {
                self.advance(now);
                Ok(())
            }
            Event::AttemptStarted => self.attempt_started(now),
            Event::Response(ref response) => self.response_in(now, response),
            Event::Error(error) => self.error_in(now, error),
        }
    }

    /// [`Event::AttemptStarted`] at `now` (not earlier than the machine's clock).
    fn attempt_started(&mut self, now: Instant) -> Result<(), MisuseError> {
        if !self.send_due_at(now) {
            return Err(MisuseError::NoSendPending);
        }
        self.now = now;
        self.granted = None;
        self.attempts = self.attempts.saturating_add(1);
        self.state = State::InFlight {
            timeout_at: Instant::from_nanos(
                now.nanos().saturating_add(self.attempt_timeout_nanos()),
            ),
        };
        Ok(())
    }

    /// [`Event::Response`] at `now` (not earlier than the machine's clock).
    fn response_in(&mut self, now: Instant, response: &Response<'_>) -> Result<(), MisuseError> {
        if !matches!(self.state, State::InFlight { .. }) {
            return Err(MisuseError::NoAttemptInFlight);
        }
        self.now = now;
        let retryable = self.policy.retries_status(response.status);
        let floor = self.server_floor(response, retryable);
        self.attempt_ended(AttemptOutcome::Response(response.status), retryable, floor);
        Ok(())
    }

    /// [`Event::Error`] at `now` (not earlier than the machine's clock).
    fn error_in(&mut self, now: Instant, error: AttemptError) -> Result<(), MisuseError> {
        if !matches!(self.state, State::InFlight { .. }) {
            return Err(MisuseError::NoAttemptInFlight);
        }
        self.now = now;
        self.attempt_ended(AttemptOutcome::Error(error), false, None);
        Ok(())
    }

    /// Whether a send is due at `now`: what [`RetryMachine::poll`] would say, without changing
    /// anything (a refused `AttemptStarted` must leave the machine as it was).
    fn send_due_at(&self, now: Instant) -> bool {
        let ready = match self.state {
            State::Ready(_) => true,
            State::Waiting { until, .. } => now >= until,
            State::InFlight { .. } | State::Done { .. } => false,
        };
        ready && now < self.deadline
    }

    /// The next decision at `now`. Polling twice without an event in between gives the same
    /// decision (unless time passed a bound); a terminal decision repeats forever.
    pub fn poll(&mut self, now: Instant) -> Decision {
        // The usual polls, where no bound is reached or only a wait's end, answer at once; the
        // others apply the bounds first.
        let now = self.now.max(now);
        self.now = now;
        match self.state {
            State::Waiting {
                until,
                delay,
                reason,
            } if now < until => Decision::Wait {
                until,
                delay,
                reason,
            },
            State::Waiting { reason, .. } if now < self.deadline => {
                let reason = SendReason::Retry(reason.cause);
                self.state = State::Ready(reason);
                self.send(reason)
            }
            State::Ready(reason) if now < self.deadline => self.send(reason),
            State::InFlight { timeout_at } if now < timeout_at => Decision::AwaitResponse {
                attempt: self.attempts,
                timeout_at,
            },
            _ => {
                self.advance(now);
                self.decision()
            }
        }
    }

    /// The send that is due, for `reason`.
    fn send(&self, reason: SendReason) -> Decision {
        Decision::Send {
            attempt: self.attempts.saturating_add(1),
            timeout: self.attempt_timeout(),
            reason,
        }
    }

    /// The decision the state stands for, once the bounds `now` reached are applied.
    fn decision(&self) -> Decision {
        match self.state {
            State::Ready(reason) => self.send(reason),
            State::InFlight { timeout_at } => Decision::AwaitResponse {
                attempt: self.attempts,
                timeout_at,
            },
            State::Waiting {
                until,
                delay,
                reason,
            } => Decision::Wait {
                until,
                delay,
                reason,
            },
            State::Done { reason, at } => {
                let outcome = self.outcome_at(reason, at);
                match outcome.last {
                    Some(AttemptOutcome::Response(_)) if reason != StopReason::Aborted => {
                        Decision::Return(outcome)
                    }
                    _ => Decision::GiveUp(outcome),
                }
            }
        }
    }

    /// Moves time forward and applies every bound that `now` has reached.
    ///
    /// Each bound is checked once: what follows a timed-out attempt is a wait that ends after
    /// `now`, a send due before the deadline, or the end; a wait ends before the deadline, so
    /// only a send due may have reached it.
    fn advance(&mut self, now: Instant) {
        let now = self.now.max(now);
        self.now = now;
        match self.state {
            State::InFlight { timeout_at } => {
                if now >= timeout_at {
                    self.attempt_ended(
                        AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout)),
                        false,
                        None,
                    );
                }
            }
            State::Waiting { until, reason, .. } => {
                if now >= until {
                    if now >= self.deadline {
                        self.stop(StopReason::Deadline);
                    } else {
                        self.state = State::Ready(SendReason::Retry(reason.cause));
                    }
                }
            }
            State::Ready(_) => {
                if now >= self.deadline {
                    self.stop(StopReason::Deadline);
                }
            }
            State::Done { .. } => {}
        }
    }

    fn abort(&mut self) {
        if !matches!(self.state, State::Done { .. }) {
            self.stop(StopReason::Aborted);
        }
    }

    fn stop(&mut self, reason: StopReason) {
        if let (Some(granted_at), Some(cause)) = (self.granted.take(), self.last) {
            self.budget.on_retry_cancelled(self.now, granted_at, cause);
        }
        self.state = State::Done {
            reason,
            at: self.now,
        };
    }

    fn outcome_at(&self, reason: StopReason, at: Instant) -> Outcome {
        Outcome {
            attempts: self.attempts,
            elapsed: at.saturating_duration_since(self.started),
            reason,
            last: self.last,
            retry_after: match self.last {
                Some(AttemptOutcome::Response(_)) => self.last_retry_after,
                _ => None,
            },
        }
    }

    /// `min(attempt_timeout, deadline - now)`: an attempt never runs past the deadline.
    fn attempt_timeout(&self) -> Duration {
        Duration::from_nanos(self.attempt_timeout_nanos())
    }

    /// [`Self::attempt_timeout`] in nanoseconds, the form the machine computes with (the
    /// time left is below `u64::MAX` nanoseconds, so the minimum is exact).
    fn attempt_timeout_nanos(&self) -> u64 {
        self.fixed
            .attempt_timeout
            .min(self.deadline.nanos().saturating_sub(self.now.nanos()))
    }

    /// The server-directed delay of a response, if it has a usable `Retry-After`.
    fn retry_after_delay(&self, response: &Response<'_>) -> Option<Duration> {
        match parse_retry_after(response.retry_after?)? {
            RetryAfter::Delay(d) => Some(d),
            date @ RetryAfter::Date(_) => {
                let reference = response
                    .date
                    .and_then(parse_http_date)
                    .or(response.wall_clock)?;
                Some(date.delay_from(reference))
            }
        }
    }

    /// The server-directed delay of a response and where it comes from: its `Retry-After`
    /// (kept for the outcome), else, on a retryable status, its rate-limit fields.
    fn server_floor(
        &mut self,
        response: &Response<'_>,
        retryable: bool,
    ) -> Option<(Duration, DelaySource)> {
        self.last_retry_after = self.retry_after_delay(response);
        if let Some(d) = self.last_retry_after {
            return Some((d, DelaySource::RetryAfter));
        }
        if !retryable || !self.policy.rate_limit_fields() {
            return None;
        }
        reset_delay(response, self.policy.x_rate_limit_reset())
            .map(|d| (d, DelaySource::RateLimitReset))
    }

    /// Decides what follows an attempt that ended with `cause` (`retryable`: whether the
    /// policy retries a response's status; unused for an error).
    fn attempt_ended(
        &mut self,
        cause: AttemptOutcome,
        retryable: bool,
        floor: Option<(Duration, DelaySource)>,
    ) {
        self.last = Some(cause);
        let any_method = match cause {
            AttemptOutcome::Response(_) => {
                self.budget.on_attempt_end(self.now, !retryable);
                if !retryable {
                    return self.stop(StopReason::FinalStatus);
                }
                false
            }
            AttemptOutcome::Error(error) => match error.class {
                // Neither the caller's abort nor a permanent error says anything about the
                // server's health: the budget is not told of them.
                ErrorClass::Aborted => return self.stop(StopReason::Aborted),
                ErrorClass::Permanent => return self.stop(StopReason::PermanentError),
                ErrorClass::NotSent => {
                    self.budget.on_attempt_end(self.now, false);
                    true
                }
                ErrorClass::MaybeSent | ErrorClass::Timeout => {
                    self.budget.on_attempt_end(self.now, false);
                    false
                }
            },
        };
        let refusal = if any_method {
            self.fixed.refusal_not_sent
        } else {
            self.fixed.refusal
        };
        if let Some(reason) = refusal {
            return self.stop(reason);
        }
        if self.attempts >= self.policy.max_attempts() {
            return self.stop(StopReason::Attempts);
        }
        let (delay, delay_nanos, source) = match floor {
            Some((floor, source)) => match self.retry_after_wait(floor, source) {
                Some((delay, source)) => (delay, nanos_saturating(delay), source),
                None => return self.stop(StopReason::RetryAfterAboveMax),
            },
            None => {
                let (delay, nanos) = self.backoff_wait();
                (delay, nanos, DelaySource::Backoff)
            }
        };
        let until = Instant::from_nanos(self.now.nanos().saturating_add(delay_nanos));
        if until >= self.deadline {
            return self.stop(StopReason::Deadline);
        }
        if !self.budget.try_retry(self.now, cause) {
            return self.stop(StopReason::Budget);
        }
        self.granted = Some(self.now);
        self.previous_wait = delay;
        let reason = WaitReason {
            cause,
            source,
            next_attempt: self.attempts.saturating_add(1),
        };
        self.state = if delay_nanos == 0 {
            State::Ready(SendReason::RetryAtOnce(reason))
        } else {
            State::Waiting {
                until,
                delay,
                reason,
            }
        };
    }

    /// The wait for a server-directed delay: the value as a floor, plus a spread, within the
    /// ceiling. `None` means the value is above the ceiling and the policy gives up.
    fn retry_after_wait(
        &mut self,
        floor: Duration,
        source: DelaySource,
    ) -> Option<(Duration, DelaySource)> {
        let max = self.policy.max_retry_after();
        let (floor, source) = if floor <= max {
            (floor, source)
        } else {
            match self.policy.retry_after_above_max() {
                RetryAfterAboveMax::Clamp => (max, source.clamped()),
                _ => return None,
            }
        };
        // The spread is ours, not the server's: it never takes a wait past the ceiling, nor
        // past the deadline when the server's value alone would fit before it. In nanoseconds:
        // the room before the deadline fits a u64, and it bounds the spread, so saturating a
        // larger floor or ceiling changes no result (and no random draw).
        let floor_nanos = nanos_saturating(floor);
        let room = self
            .deadline
            .nanos()
            .saturating_sub(self.now.nanos())
            .saturating_sub(floor_nanos)
            .saturating_sub(1);
        let spread = nanos_saturating(self.policy.retry_after_spread())
            .min(floor_nanos / 10)
            .min(nanos_saturating(max).saturating_sub(floor_nanos))
            .min(room);
        Some((
            floor.saturating_add(Duration::from_nanos(uniform_nanos(&mut self.rng, spread))),
            source,
        ))
    }

    /// The policy's backoff for the coming retry, jittered, and the same in nanoseconds
    /// (saturated).
    fn backoff_wait(&mut self) -> (Duration, u64) {
        if let Some((base, cap)) = self.fixed.full_exponential {
            // `Backoff::delay` then `Jitter::Full` in `u64`: the delay `min(cap, base *
            // 2^(n-1))` saturated to `u64` nanoseconds is the span of the draw.
            let shift = self.attempts.max(1) - 1;
            let d = if shift >= 64 || base > u64::MAX >> shift {
                cap
            } else {
                (base << shift).min(cap)
            };
            let nanos = uniform_nanos(&mut self.rng, d);
            return (Duration::from_nanos(nanos), nanos);
        }
        let backoff = self.policy.backoff();
        let d = backoff.delay(self.attempts);
        let wait = self.policy.jitter().apply(
            d,
            backoff.base(),
            backoff.cap(),
            self.previous_wait,
            &mut self.rng,
        );
        (wait, nanos_saturating(wait))
    }
}
