//! The hedging state machine: several copies of one request in flight, the first final answer
//! wins, the others are cancelled.
//!
//! Rule (gRPC gRFC A6 hedging, made HTTP-aware): copy k goes out `delay` after copy k−1 while
//! nothing final has arrived; a non-final answer (a retryable status or error) sends the next
//! copy at once, not before a server-directed floor (`Retry-After`, a rate-limit reset) any
//! answer set; no copy starts at or after the deadline and each copy's timeout ends by it. The
//! first final answer (a status the policy does not retry) wins and every other copy is
//! cancelled; a retryable answer never wins while another copy may still answer. Every copy
//! after the first is paid for by the shared retry budget; a denial suppresses it and every
//! later one, while the copies in flight run on. Every copy, the first too, is admitted by the
//! origin's gate and the send-rate limiter before it is sent, as a retry is: overload control
//! holds a backup back as it holds a retry.

use core::borrow::Borrow;
use core::time::Duration;

use rand_core::Rng;

use super::config::{HedgeDelay, MAX_COPIES};
use super::decision::{CancelReason, HedgeDecision, HedgeEvent, HedgeOutcome, HedgeTrigger};
use super::latency::{Latencies, NoLatencies};
use crate::budget::{self, Budget, Unlimited};
use crate::classify::{AttemptError, ErrorClass, ErrorKind};
use crate::decision::{AttemptOutcome, DelaySource, Outcome, StopReason};
use crate::event::{MisuseError, Request, Response};
use crate::overload::{Gate, GateSignal, NoGate, NoRateLimiter, RateLimiter, SendDue, Standing};
use crate::policy::Policy;
use crate::server_delay::{
    floored_wait, is_retryable, may_set_floor, pushback, pushback_stops, server_floor,
};
use crate::time::{nanos_saturating, Instant};

/// The shortest adaptive delay (Finagle's floor).
const MIN_ADAPTIVE_DELAY: Duration = Duration::from_millis(1);

/// What the budget is told a delay-triggered copy is for: the copy before did not answer in
/// time, which is a (soft) timeout.
const SLOW_COPY: AttemptOutcome = AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout));

/// Where one copy stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyState {
    /// Not sent.
    Idle,
    /// In flight since `started`, timing out at `timeout_at` (nanoseconds); `probe`: the gate
    /// admitted it as its probe, at this instant.
    InFlight {
        started: u64,
        timeout_at: u64,
        probe: Option<u64>,
    },
    /// It answered.
    Ended,
    /// The driver must drop it.
    Cancel(CancelReason),
    /// The driver dropped it.
    Cancelled,
}

/// The sans-IO hedging state machine for one operation: the policy's
/// [`Hedging`](crate::Hedging) instead of its retries.
///
/// `R` is the random number generator (only a server-directed floor's spread draws from it),
/// `B` the shared [`Budget`] every copy after the first is paid from, `L` the [`Latencies`] an
/// adaptive delay reads and the answers feed, `G` the origin's [`Gate`] and `RL` the send-rate
/// [`RateLimiter`] every copy is admitted by (see [`HedgeMachine::with_overload`]).
///
/// # The driver's contract
///
/// A driver loops on `poll(now)`:
/// - [`HedgeDecision::Send`]: start the copy, report [`HedgeEvent::Started`], and later its
///   [`HedgeEvent::Response`] or [`HedgeEvent::Error`] (with its number).
/// - [`HedgeDecision::Cancel`]: drop the copy's future and report [`HedgeEvent::Cancelled`].
/// - [`HedgeDecision::Wait`]: wait for any copy's answer, at most until `until`.
/// - [`HedgeDecision::Return`] / [`HedgeDecision::GiveUp`]: done (every copy is cancelled or
///   answered by then); every later poll repeats it.
///
/// A misplaced event is a [`MisuseError`] and changes nothing. A policy without hedging, or a
/// request that may not be retried (a method the policy does not retry and no
/// `Idempotency-Key`, or a body that cannot be sent again) gets one copy, and stops after a
/// non-final answer with the reason a retry would have been refused.
///
/// # Overload control
///
/// A machine made by [`HedgeMachine::with_overload`] admits every copy, the first too, before
/// it asks for its send, in the retry machine's order: the budget pays for a copy after the
/// first when it is due, then the origin's gate and then the send-rate limiter admit it.
///
/// - A copy the gate or the limiter holds back is not sent: it becomes due at the later of its
///   trigger (the hedging delay after the copy before, a non-final answer, a server floor) and
///   the end of the hold ([`GateAdmission::Closed`](crate::GateAdmission::Closed), [`GateAdmission::AwaitProbe`](crate::GateAdmission::AwaitProbe), a
///   [`GateAdmission::Paced`](crate::GateAdmission::Paced) slot, which the copy holds and asks with, or the limiter's
///   instant). A hedging delay and a gate hold combine by their maximum, not their sum: a
///   backup whose delay ends during a closing goes out at the reopening, not a delay after it.
///   The copies in flight run on meanwhile; the [`HedgeDecision::Wait`] ends at the earliest
///   of their timeouts and the held copy's new due time, when it is admitted again.
/// - A hold that reaches the deadline (or any hold of the first copy, under
///   [`fail_fast_when_paused`](crate::PolicyBuilder::fail_fast_when_paused)) suppresses the
///   copy and every later one, with [`StopReason::OriginPaused`] or
///   [`StopReason::RateLimited`] in [`HedgeOutcome::suppressed_by`]; the budget's grant for it
///   goes back; with no copy in flight, the operation ends with that reason.
/// - Every copy's answer is reported as a retry's is: a response to the gate (its back-off:
///   a `Retry-After` on a 429 or 503, else an exhausted quota's reset, cut at
///   `max_retry_after`; whether it failed; whether it was the probe) and to the limiter (a 429,
///   or a 503 with a usable `Retry-After`, throttles), a transient error or a timeout to the
///   gate as a failure. A copy the machine cancels (another copy won, a fatal error, an abort)
///   has no answer and is not reported; the caller's abort and a permanent error say nothing
///   of the server either. But a cancelled copy that was the gate's probe, or a probe admitted
///   and never sent, is handed back at once ([`Gate::probe_not_sent`]): its lease would hold
///   every other operation to the origin until it ran out.
///
/// ```
/// use backstop_core::{HedgeDecision, HedgeEvent, Hedging, Instant, Method, Policy, Request,
///                     Response, HedgeMachine, StopReason};
/// use core::time::Duration;
/// use rand_core::SeedableRng;
///
/// let policy = Policy::builder().hedging(Hedging::fixed(Duration::from_millis(50))).build()?;
/// let rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
/// let mut m = HedgeMachine::new(policy, Request::new(Method::Get), rng, Instant::ZERO);
///
/// assert!(matches!(m.poll(Instant::ZERO), HedgeDecision::Send { copy: 1, .. }));
/// m.handle(Instant::ZERO, HedgeEvent::Started { copy: 1 })?;
/// // Copy 1 is slow: at 50 ms copy 2 goes out.
/// let t = Instant::from_nanos(50_000_000);
/// assert!(matches!(m.poll(t), HedgeDecision::Send { copy: 2, .. }));
/// m.handle(t, HedgeEvent::Started { copy: 2 })?;
/// // Copy 2 answers first: copy 1 is cancelled, then copy 2's response is returned.
/// m.handle(t, HedgeEvent::Response { copy: 2, response: Response::new(200) })?;
/// assert!(matches!(m.poll(t), HedgeDecision::Cancel { copy: 1, .. }));
/// m.handle(t, HedgeEvent::Cancelled { copy: 1 })?;
/// let HedgeDecision::Return(done) = m.poll(t) else { panic!("expected the response") };
/// assert_eq!((done.winner, done.outcome.attempts, done.cancelled), (Some(2), 2, 1));
/// assert_eq!(done.outcome.reason, StopReason::FinalStatus);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct HedgeMachine<
    R,
    B = Unlimited,
    L = NoLatencies,
    G = NoGate,
    RL = NoRateLimiter,
    P = Policy,
> {
    /// The policy, owned or borrowed (`&Policy`: a driver that keeps its policy elsewhere
    /// does not copy it into every operation).
    policy: P,
    rng: R,
    budget: B,
    latencies: L,
    /// The origin's gate, asked before every copy (a no-op [`NoGate`] by default).
    gate: G,
    /// The send-rate limiter, asked before every copy after the gate.
    limiter: RL,
    /// The gate and the limiter admitted the copy due: its `Send` repeats without asking them
    /// again until it starts.
    admitted: bool,
    /// The copy admitted is the gate's probe, admitted at this instant (nanoseconds).
    probe_admitted: Option<u64>,
    /// Its standing with the gate: the slot a reopening gave it, whether it was held back.
    standing: Standing,
    /// The copy due is held back until this instant (0: not held): it is not due before, and
    /// a new trigger does not bring it forward.
    hold: u64,
    /// The latest `now` seen, in nanoseconds.
    now: u64,
    started: u64,
    /// What the policy and the request fix: the deadline, the copies' timeout, the delay,
    /// how many copies, why a retry is refused.
    bounds: Bounds,
    copies: [CopyState; MAX_COPIES as usize],
    /// Copies started.
    sent: u32,
    /// When the first copy started (read once `sent > 0`).
    first_started: u64,
    /// The operation's one latency sample is recorded (see `record_sample`).
    sampled: bool,
    /// When the next copy is due, and why; `None`: no copy is coming.
    next: Option<(u64, HedgeTrigger)>,
    /// No copy starts before this instant: the latest server-directed floor.
    not_before: u64,
    /// The budget's grant for the next copy (a `Send` is pending): when, and for what.
    granted: Option<(u64, AttemptOutcome)>,
    suppressed_by: Option<StopReason>,
    /// Done (at `ended`, for `stop`).
    done: bool,
    stop: StopReason,
    ended: u64,
    winner: Option<u32>,
    cancelled: u32,
    /// The last response's status and `Retry-After` delay.
    last_response: Option<(u16, Option<Duration>)>,
    last_error: Option<AttemptError>,
}

impl<R: Rng> HedgeMachine<R, Unlimited, NoLatencies> {
    /// A machine for one operation, created at `now`, with no budget and no latencies (an
    /// adaptive delay then sends copies only after non-final answers).
    pub fn new(policy: Policy, request: Request, rng: R, now: Instant) -> Self {
        HedgeMachine::with_budget(policy, request, rng, Unlimited, NoLatencies, now)
    }
}

impl<R: Rng, B: Budget, L: Latencies> HedgeMachine<R, B, L> {
    /// A machine that pays for copies from `budget` and reads (and feeds) `latencies`. The
    /// budget hears of the operation ([`Budget::on_operation_start`]) when its first copy
    /// starts, not before: an operation that sends nothing earns no retries.
    pub fn with_budget(
        policy: Policy,
        request: Request,
        rng: R,
        budget: B,
        latencies: L,
        now: Instant,
    ) -> Self {
        HedgeMachine::with_overload(
            policy,
            request,
            rng,
            budget,
            latencies,
            NoGate,
            NoRateLimiter,
            now,
        )
    }
}

impl<R: Rng, B: Budget, L: Latencies, G: Gate, RL: RateLimiter, P: Borrow<Policy>>
    HedgeMachine<R, B, L, G, RL, P>
{
    /// A machine that pays for copies from `budget`, reads (and feeds) `latencies`, and has
    /// every copy (the first too) admitted by the origin's `gate`, then the send-rate
    /// `limiter`, before it is sent: see [Overload control](HedgeMachine#overload-control).
    /// The waits they cause are bounded by the deadline, not by [`Policy::worst_case`]'s
    /// `wait`, which counts the policy's own waits.
    // The retry machine's arguments, and the latencies: one more than clippy's default.
    #[allow(clippy::too_many_arguments)]
    // Inlined: a driver's future then builds the machine in its place, not in a temporary
    // moved there.
    #[inline(always)]
    pub fn with_overload(
        policy: P,
        request: Request,
        rng: R,
        budget: B,
        latencies: L,
        gate: G,
        limiter: RL,
        now: Instant,
    ) -> Self {
        let bounds = Bounds::of(policy.borrow(), request, &latencies, now);
        HedgeMachine::from_bounds(
            (policy, rng, budget, latencies, gate, limiter),
            bounds,
            now.nanos(),
        )
    }

    /// A machine with nothing sent yet, for an operation started at `now` (nanoseconds) within
    /// `bounds`.
    // Inlined: see `with_overload`.
    #[inline(always)]
    pub(super) fn from_bounds(
        (policy, rng, budget, latencies, gate, limiter): (P, R, B, L, G, RL),
        bounds: Bounds,
        now: u64,
    ) -> Self {
        HedgeMachine {
            bounds,
            policy,
            rng,
            budget,
            latencies,
            gate,
            limiter,
            admitted: false,
            probe_admitted: None,
            standing: Standing::default(),
            hold: 0,
            now,
            started: now,
            copies: [CopyState::Idle; MAX_COPIES as usize],
            sent: 0,
            first_started: now,
            sampled: false,
            next: Some((now, HedgeTrigger::First)),
            not_before: 0,
            granted: None,
            suppressed_by: None,
            done: false,
            stop: StopReason::FinalStatus,
            ended: now,
            winner: None,
            cancelled: 0,
            last_response: None,
            last_error: None,
        }
    }

    /// The policy this machine follows.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        self.policy.borrow()
    }

    /// The hedging delay this operation uses (fixed, or read from the latencies when the
    /// machine was created); `None` when copies follow non-final answers only.
    #[must_use]
    pub fn delay(&self) -> Option<Duration> {
        self.bounds.delay.map(Duration::from_nanos)
    }

    /// The copies this operation may send (1 when it may not be hedged).
    #[must_use]
    pub const fn max_copies(&self) -> u32 {
        self.bounds.max
    }

    /// Copies started so far.
    #[must_use]
    pub const fn sent(&self) -> u32 {
        self.sent
    }

    /// Copies in flight.
    #[must_use]
    pub fn in_flight(&self) -> u32 {
        self.sent_copies()
            .iter()
            .filter(|c| matches!(c, CopyState::InFlight { .. }))
            .count() as u32
    }

    /// The instant after which no copy starts.
    #[must_use]
    pub const fn deadline(&self) -> Instant {
        Instant::from_nanos(self.bounds.deadline)
    }

    /// The origin gate this machine consults (see [`HedgeMachine::with_overload`]).
    #[must_use]
    pub const fn gate(&self) -> &G {
        &self.gate
    }

    /// The send-rate limiter this machine consults.
    #[must_use]
    pub const fn rate_limiter(&self) -> &RL {
        &self.limiter
    }

    /// When the driver must poll again at the latest, always later than the latest `now` seen;
    /// `None`: act now (a send, a cancel or a timeout is due), or done.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.done || self.cancel_pending().is_some() {
            return None;
        }
        // A bound `now` already reached (a send due, or a timeout that an answer fed after it
        // left unapplied) means "poll now", as for the retry machine: never an instant in the
        // past.
        let at = self
            .earliest_timeout()
            .into_iter()
            .chain(self.next.map(|(at, _)| at))
            .min()?;
        (at > self.now).then(|| Instant::from_nanos(at))
    }

    /// The final outcome, once done.
    #[must_use]
    pub fn outcome(&self) -> Option<HedgeOutcome> {
        self.done.then(|| self.hedge_outcome())
    }

    /// Feeds one event in. A misplaced event is an error and changes nothing.
    pub fn handle(&mut self, now: Instant, event: HedgeEvent<'_>) -> Result<(), MisuseError> {
        let now = self.now.max(now.nanos());
        match event {
            HedgeEvent::Started { copy } => self.started_copy(now, copy),
            HedgeEvent::Response { copy, response } => {
                let i = self.in_flight_index(copy)?;
                self.now = now;
                self.response_in(i, &response);
                Ok(())
            }
            HedgeEvent::Error { copy, error } => {
                let i = self.in_flight_index(copy)?;
                self.now = now;
                self.error_in(i, error);
                Ok(())
            }
            HedgeEvent::Cancelled { copy } => {
                let i = index(copy).ok_or(MisuseError::NoCancelPending)?;
                if !matches!(self.state(i), CopyState::Cancel(_)) {
                    return Err(MisuseError::NoCancelPending);
                }
                self.now = now;
                self.set(i, CopyState::Cancelled);
                Ok(())
            }
            HedgeEvent::TimePassed => {
                self.now = now;
                self.advance();
                Ok(())
            }
            HedgeEvent::Abort => {
                self.now = now;
                self.abort();
                Ok(())
            }
        }
    }

    /// The next decision at `now`. Polling twice without an event in between gives the same
    /// decision (unless time passed a bound).
    pub fn poll(&mut self, now: Instant) -> HedgeDecision {
        self.now = self.now.max(now.nanos());
        self.advance();
        if let Some((i, reason)) = self.cancel_pending() {
            return HedgeDecision::Cancel {
                copy: i as u32 + 1,
                reason,
            };
        }
        if self.done {
            return self.terminal();
        }
        if let Some((at, trigger)) = self.next {
            if at <= self.now {
                if self.sent >= 1 && self.granted.is_none() {
                    let cause = cause_of(trigger);
                    if self.budget.try_retry(Instant::from_nanos(self.now), cause) {
                        self.granted = Some((self.now, cause));
                    } else {
                        self.suppress(StopReason::Budget);
                        return self.after_change();
                    }
                }
                if self.overload() && !self.admitted && !self.admission(trigger) {
                    return self.after_change();
                }
                return HedgeDecision::Send {
                    copy: self.sent + 1,
                    timeout: self.copy_timeout(),
                    trigger,
                };
            }
        }
        self.wait()
    }

    /// The decision after a change made inside `poll`: done, or a wait.
    fn after_change(&mut self) -> HedgeDecision {
        if self.done {
            self.terminal()
        } else {
            self.wait()
        }
    }

    fn wait(&self) -> HedgeDecision {
        let until = self
            .earliest_timeout()
            .into_iter()
            .chain(self.next.map(|(at, _)| at))
            .min()
            // Not reached: a machine that is not done has a copy in flight or one coming.
            .unwrap_or(self.bounds.deadline);
        HedgeDecision::Wait {
            until: Instant::from_nanos(until),
            in_flight: self.in_flight(),
        }
    }

    fn terminal(&self) -> HedgeDecision {
        let outcome = self.hedge_outcome();
        match outcome.outcome.last {
            Some(AttemptOutcome::Response(_)) if self.stop != StopReason::Aborted => {
                HedgeDecision::Return(outcome)
            }
            _ => HedgeDecision::GiveUp(outcome),
        }
    }

    fn hedge_outcome(&self) -> HedgeOutcome {
        let (last, retry_after) = match (self.last_response, self.last_error) {
            (Some((status, retry_after)), _) => {
                (Some(AttemptOutcome::Response(status)), retry_after)
            }
            (None, Some(e)) => (Some(AttemptOutcome::Error(e)), None),
            (None, None) => (None, None),
        };
        HedgeOutcome {
            outcome: Outcome {
                attempts: self.sent,
                elapsed: Duration::from_nanos(self.ended.saturating_sub(self.started)),
                reason: self.stop,
                last,
                retry_after,
            },
            winner: self.winner,
            cancelled: self.cancelled,
            suppressed: match self.suppressed_by {
                Some(_) => self.bounds.max - self.sent,
                None => 0,
            },
            suppressed_by: self.suppressed_by,
        }
    }

    /// The state of the copy at index `i` (every index a copy number gives is in the array;
    /// past it, `Idle`).
    fn state(&self, i: usize) -> CopyState {
        self.copies.get(i).copied().unwrap_or(CopyState::Idle)
    }

    /// Sets the state of the copy at index `i` (past the array, nothing: not reached).
    fn set(&mut self, i: usize, state: CopyState) {
        if let Some(c) = self.copies.get_mut(i) {
            *c = state;
        }
    }

    /// The states of the copies sent so far (every later one is `Idle`): what the machine
    /// looks through, not the whole array.
    fn sent_copies(&self) -> &[CopyState] {
        self.copies
            .get(..self.sent as usize)
            .unwrap_or(&self.copies)
    }

    /// The first copy the driver must drop, and why.
    fn cancel_pending(&self) -> Option<(usize, CancelReason)> {
        self.sent_copies()
            .iter()
            .enumerate()
            .find_map(|(i, c)| match c {
                CopyState::Cancel(reason) => Some((i, *reason)),
                _ => None,
            })
    }

    fn earliest_timeout(&self) -> Option<u64> {
        self.sent_copies()
            .iter()
            .filter_map(|c| match c {
                CopyState::InFlight { timeout_at, .. } => Some(*timeout_at),
                _ => None,
            })
            .min()
    }

    fn in_flight_index(&self, copy: u32) -> Result<usize, MisuseError> {
        match index(copy) {
            Some(i) if matches!(self.state(i), CopyState::InFlight { .. }) => Ok(i),
            _ => Err(MisuseError::NoAttemptInFlight),
        }
    }

    fn started_copy(&mut self, now: u64, copy: u32) -> Result<(), MisuseError> {
        let due = matches!(self.next, Some((at, _)) if at <= now);
        let paid = self.sent == 0 || self.granted.is_some();
        let admitted = self.admitted || !self.overload();
        if self.done
            || !due
            || !paid
            || !admitted
            || now >= self.bounds.deadline
            || copy != self.sent + 1
        {
            return Err(MisuseError::NoSendPending);
        }
        if self.sent == 0 {
            // The operation starts with its first send: one that never sends earns the
            // others no retries.
            self.budget.on_operation_start(Instant::from_nanos(now));
        }
        let probe = self.probe_admitted.take();
        self.mark_started(now, probe);
        Ok(())
    }

    /// Copy `sent + 1` is in flight from `now` (the gate's probe, admitted at `probe`): the
    /// state a `Started` leaves, without telling the budget (see `started_copy`).
    pub(super) fn mark_started(&mut self, now: u64, probe: Option<u64>) {
        self.now = now;
        if self.sent == 0 {
            self.first_started = now;
        }
        self.set(
            self.sent as usize,
            CopyState::InFlight {
                started: now,
                timeout_at: self.bounds.timeout_at(now),
                probe,
            },
        );
        self.sent += 1;
        self.granted = None;
        self.admitted = false;
        self.hold = 0;
        self.next = None;
        if self.sent < self.bounds.max && self.suppressed_by.is_none() {
            if let Some(d) = self.bounds.delay {
                self.next_at(
                    now.saturating_add(d),
                    HedgeTrigger::Delay(Duration::from_nanos(d)),
                );
            }
        }
    }

    /// Sets the next copy at `at` (not before the latest floor, nor before the end of a hold),
    /// unless that is at or after the deadline: then no copy is coming, and what was granted
    /// for it goes back.
    fn next_at(&mut self, at: u64, trigger: HedgeTrigger) {
        let at = at.max(self.not_before).max(self.hold);
        self.next = (at < self.bounds.deadline).then_some((at, trigger));
        if self.next.is_none() {
            self.give_back_grant();
        } else if at > self.now {
            // A floor put the copy admitted off: the gate and the limiter are asked again
            // when it is due (the answer that set the floor may have closed the gate).
            self.release_admission();
        }
    }

    fn response_in(&mut self, i: usize, response: &Response<'_>) {
        let status = response.status;
        let retryable = is_retryable(self.policy.borrow(), response);
        if let Some(success) = budget::response_success(response, retryable) {
            self.budget
                .on_attempt_end(Instant::from_nanos(self.now), success);
        }
        if self.overload() {
            self.overload_response(i, response, retryable);
        }
        let policy = self.policy.borrow();
        let (retry_after, floor) = if may_set_floor(policy, response, retryable) {
            server_floor(policy, response, retryable)
        } else {
            (None, None)
        };
        self.last_response = Some((status, retry_after));
        if pushback_stops(response, retryable) {
            // A6: no further copy; the ones in flight run on.
            self.set(i, CopyState::Ended);
            self.suppress(StopReason::ServerPushback);
        } else if retryable {
            self.set(i, CopyState::Ended);
            self.non_final(i, AttemptOutcome::Response(status), floor);
        } else {
            self.win(i);
        }
    }

    fn error_in(&mut self, i: usize, error: AttemptError) {
        let in_flight = match self.state(i) {
            CopyState::InFlight { started, probe, .. } => Some((started, probe)),
            _ => None,
        };
        if let (0, ErrorKind::Timeout, CopyState::InFlight { timeout_at, .. }) =
            (i, error.kind, self.state(i))
        {
            if self.now >= timeout_at {
                // The timeout the driver enforced (through its caller's classification), as the
                // machine's own would have: the first copy took at least its timeout.
                self.record_sample(timeout_at);
            }
        }
        self.set(i, CopyState::Ended);
        self.last_error = Some(error);
        match error.class {
            ErrorClass::Aborted => self.abort(),
            ErrorClass::Permanent => {
                self.cancel_others(CancelReason::Fatal);
                self.finish(StopReason::PermanentError);
            }
            ErrorClass::NotSent | ErrorClass::MaybeSent | ErrorClass::Timeout => {
                if let (true, Some((started, probe))) = (self.overload(), in_flight) {
                    self.overload_error(started, probe);
                }
                self.budget
                    .on_attempt_end(Instant::from_nanos(self.now), false);
                self.non_final(i, AttemptOutcome::Error(error), None);
            }
        }
    }

    /// Copy `i` answered with a final status: it wins.
    fn win(&mut self, i: usize) {
        self.set(i, CopyState::Ended);
        let winner = i as u32 + 1;
        self.winner = Some(winner);
        self.cancel_others(CancelReason::Superseded { winner });
        self.finish(StopReason::FinalStatus);
    }

    /// Marks every copy in flight for cancelling.
    fn cancel_others(&mut self, reason: CancelReason) {
        for i in 0..self.sent_copies().len() {
            if let CopyState::InFlight { probe, .. } = self.state(i) {
                self.set(i, CopyState::Cancel(reason));
                self.cancelled += 1;
                if let Some(admitted) = probe {
                    // A dropped copy never answers: its probe's lease would hold every other
                    // operation to the origin until it ran out.
                    self.gate.probe_not_sent(Instant::from_nanos(admitted));
                }
            }
        }
    }

    /// Records the operation's one latency sample at `at`, unless it is recorded already: the
    /// first copy's latency as far as the operation saw it, from its send to `at` (the first
    /// copy's timeout, or the operation's end, whichever came first).
    ///
    /// A copy goes out on the delay `d` only while the operation has not ended `d` after the
    /// first copy's send (and the first copy has not timed out: it would have sent the next
    /// copy at once), so every operation hedged on the delay records at least `d`, and one
    /// that was not records what its first copy alone would have: the share of the samples
    /// at or above the delay is at least the share of the operations hedged on it. The
    /// latencies of the later copies (a backup's is measured from its own send, shorter)
    /// would pull the percentile down, and with it the delay, until more operations than the
    /// bound were hedged.
    fn record_sample(&mut self, at: u64) {
        if self.sent == 0 || self.sampled {
            return;
        }
        self.sampled = true;
        self.latencies.record(
            Instant::from_nanos(at),
            Duration::from_nanos(at.saturating_sub(self.first_started)),
        );
    }

    /// Copy `i` ended with a non-final answer: the next copy goes at once, or after the
    /// server's floor; with none coming and none in flight, the operation ends.
    fn non_final(
        &mut self,
        i: usize,
        outcome: AttemptOutcome,
        floor: Option<(Duration, DelaySource)>,
    ) {
        if self.sent < self.bounds.max && self.suppressed_by.is_none() {
            let mut source = None;
            if let Some(floor) = floor {
                let room = self.bounds.deadline.saturating_sub(self.now);
                match floored_wait(self.policy.borrow(), &mut self.rng, room, floor) {
                    Some((wait, s)) => {
                        let until = self.now.saturating_add(nanos_saturating(wait));
                        self.not_before = self.not_before.max(until);
                        source = Some(s);
                    }
                    None => self.suppress(StopReason::RetryAfterAboveMax),
                }
            }
            if self.suppressed_by.is_none() {
                self.next_at(
                    self.now,
                    HedgeTrigger::Answer {
                        copy: i as u32 + 1,
                        outcome,
                        floor: source,
                    },
                );
            }
        }
        self.end_if_exhausted();
    }

    /// No copy may follow (`reason`): the ones in flight run on.
    fn suppress(&mut self, reason: StopReason) {
        self.suppressed_by = Some(reason);
        self.next = None;
        self.give_back_grant();
        self.end_if_exhausted();
    }

    /// Ends the operation when nothing is in flight and no copy is coming: every copy failed.
    fn end_if_exhausted(&mut self) {
        if self.done || self.next.is_some() || self.in_flight() > 0 {
            return;
        }
        let reason = match (self.suppressed_by, self.bounds.refusal) {
            (Some(r), _) => r,
            // A copy the operation may send could not start before the deadline (the first
            // one included, for a request that would have been sent once).
            _ if self.sent < self.bounds.max => StopReason::Deadline,
            (None, Some(r)) => r,
            (None, None) => StopReason::Attempts,
        };
        self.finish(reason);
    }

    /// Applies the bounds `now` reached: timeouts, then the deadline.
    fn advance(&mut self) {
        let now = self.now;
        for i in 0..self.sent_copies().len() {
            if let CopyState::InFlight {
                started,
                timeout_at,
                probe,
            } = self.state(i)
            {
                if now >= timeout_at && !self.done {
                    if i == 0 {
                        // The first copy's latency is at least its timeout.
                        debug_assert_eq!(started, self.first_started);
                        self.record_sample(timeout_at);
                    }
                    if self.overload() {
                        self.overload_error(started, probe);
                    }
                    self.set(i, CopyState::Cancel(CancelReason::TimedOut));
                    let error = AttemptError::new(ErrorKind::Timeout);
                    self.last_error = Some(error);
                    self.budget.on_attempt_end(Instant::from_nanos(now), false);
                    self.non_final(i, AttemptOutcome::Error(error), None);
                }
            }
        }
        if !self.done && now >= self.bounds.deadline {
            self.next = None;
            self.give_back_grant();
            self.end_if_exhausted();
        }
    }

    fn abort(&mut self) {
        if !self.done {
            self.cancel_others(CancelReason::Aborted);
            self.finish(StopReason::Aborted);
        }
    }

    /// The copy due will not be sent: the budget's grant for it goes back, and so does the
    /// gate's probe if it was admitted as one.
    fn give_back_grant(&mut self) {
        if let Some((granted_at, cause)) = self.granted.take() {
            self.budget.on_retry_cancelled(
                Instant::from_nanos(self.now),
                Instant::from_nanos(granted_at),
                cause,
            );
        }
        self.release_admission();
    }

    /// The copy admitted is not sent now: a probe admitted for it goes back to the gate.
    fn release_admission(&mut self) {
        self.admitted = false;
        if let Some(admitted) = self.probe_admitted.take() {
            self.gate.probe_not_sent(Instant::from_nanos(admitted));
        }
    }

    /// Whether this machine has a gate or a limiter to consult: `false` at compile time for
    /// [`NoGate`] and [`NoRateLimiter`].
    #[inline(always)]
    fn overload(&self) -> bool {
        overload_engaged(&self.gate, &self.limiter)
    }

    /// Asks the gate, then the limiter, to admit the copy due (for `trigger`): whether they
    /// did (a token taken). Else the copy is held until they may (due again then, at the
    /// earliest), or suppressed when that would reach the deadline.
    #[cold]
    #[inline(never)]
    fn admission(&mut self, trigger: HedgeTrigger) -> bool {
        let fails_fast = self.sent == 0 && self.policy().fail_fast_when_paused();
        let due = self.standing.admit_send(
            (&self.gate, &self.limiter),
            self.now,
            self.copy_timeout(),
            self.bounds.deadline,
            fails_fast,
        );
        match due {
            SendDue::Now { probe } => {
                self.admitted = true;
                self.probe_admitted = probe.then_some(self.now);
                return true;
            }
            SendDue::GiveUp(reason) => self.suppress(reason),
            SendDue::Held { until, .. } => {
                self.hold = until;
                self.next_at(until, trigger);
            }
        }
        false
    }

    /// Tells the gate and the limiter how copy `i` (in flight) ended with `response`.
    #[cold]
    #[inline(never)]
    fn overload_response(&mut self, i: usize, response: &Response<'_>, retryable: bool) {
        let CopyState::InFlight { started, probe, .. } = self.state(i) else {
            return;
        };
        let parts = (self.policy.borrow(), &self.gate, &self.limiter);
        tell_overload(
            parts,
            self.now,
            (started, probe.is_some()),
            response,
            retryable,
        );
    }

    /// Tells the gate that a copy in flight since `started` (its probe, if `probe`) ended with
    /// a transient error or its timeout.
    #[cold]
    #[inline(never)]
    fn overload_error(&mut self, started: u64, probe: Option<u64>) {
        if G::ACTIVE {
            self.gate.on_attempt_end(
                Instant::from_nanos(self.now),
                GateSignal {
                    started: Instant::from_nanos(started),
                    back_off: None,
                    failed: true,
                    probe: probe.is_some(),
                },
            );
        }
    }

    /// The timeout of a copy sent now: `min(attempt_timeout, deadline - now)`.
    fn copy_timeout(&self) -> Duration {
        self.bounds.copy_timeout(self.now)
    }

    fn finish(&mut self, reason: StopReason) {
        self.record_sample(self.now);
        self.give_back_grant();
        self.done = true;
        self.stop = reason;
        self.ended = self.now;
        self.next = None;
    }
}

/// What a hedged operation's policy and request fix when it starts: its deadline, each copy's
/// timeout, the hedging delay, how many copies it may send, and why a retry is refused.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bounds {
    /// No copy starts at or after it (nanoseconds).
    pub(super) deadline: u64,
    /// Each copy's timeout, cut at the deadline (nanoseconds).
    pub(super) attempt_timeout: u64,
    /// The hedging delay in nanoseconds; `None`: copies follow non-final answers only.
    pub(super) delay: Option<u64>,
    /// Copies this operation may send.
    pub(super) max: u32,
    /// Why a retry of this request is refused, if it is (then `max` is 1).
    pub(super) refusal: Option<StopReason>,
}

impl Bounds {
    /// The bounds of an operation with `request` under `policy`, started at `now` (an
    /// adaptive delay is read from `latencies` then).
    // Inlined: see `HedgeMachine::with_overload`.
    #[inline(always)]
    pub(super) fn of<L: Latencies>(
        policy: &Policy,
        request: Request,
        latencies: &L,
        now: Instant,
    ) -> Self {
        let refusal = if request.has_replayable_body {
            policy.retry_refusal(request.method, request.has_idempotency_key)
        } else {
            Some(StopReason::BodyNotReplayable)
        };
        let hedging = policy.hedging();
        let max = match (hedging, refusal) {
            (Some(h), None) => h.attempts().min(MAX_COPIES),
            _ => 1,
        };
        let delay = match hedging.map(|h| h.delay()) {
            Some(HedgeDelay::Fixed(d)) => Some(nanos_saturating(d)),
            Some(HedgeDelay::Adaptive {
                max_extra_load_percent,
                min_samples,
            }) => latencies
                .quantile(now, 100 - max_extra_load_percent.min(100), min_samples)
                .map(|q| nanos_saturating(q.max(MIN_ADAPTIVE_DELAY))),
            None => None,
        };
        let now = now.nanos();
        Bounds {
            deadline: now.saturating_add(policy.per_policy().max_elapsed),
            attempt_timeout: policy.per_policy().attempt_timeout,
            delay,
            max,
            refusal,
        }
    }

    /// When a copy sent at `now` times out: `min(now + attempt_timeout, deadline)`.
    pub(super) fn timeout_at(&self, now: u64) -> u64 {
        now.saturating_add(self.attempt_timeout).min(self.deadline)
    }

    /// The timeout of a copy sent at `now`: `min(attempt_timeout, deadline - now)`.
    pub(super) fn copy_timeout(&self, now: u64) -> Duration {
        Duration::from_nanos(self.attempt_timeout.min(self.deadline.saturating_sub(now)))
    }
}

/// Whether the origin's gate or the send-rate limiter is to be consulted: `false` at compile
/// time for [`NoGate`] and [`NoRateLimiter`].
#[inline(always)]
pub(super) fn overload_engaged<G: Gate, RL: RateLimiter>(gate: &G, limiter: &RL) -> bool {
    (G::ACTIVE && gate.engaged()) || (RL::ACTIVE && limiter.engaged())
}

/// Tells the gate and the limiter (under `policy`) how a copy in flight since `started` (the
/// gate's probe if `probe`) ended at `now` with `response`.
#[cold]
#[inline(never)]
pub(super) fn tell_overload<G: Gate, RL: RateLimiter>(
    (policy, gate, limiter): (&Policy, &G, &RL),
    now: u64,
    (started, probe): (u64, bool),
    response: &Response<'_>,
    retryable: bool,
) {
    let now = Instant::from_nanos(now);
    let (back_off, throttled) = pushback(policy, response, retryable);
    if RL::ACTIVE {
        limiter.on_response(now, throttled);
    }
    if G::ACTIVE {
        gate.on_attempt_end(
            now,
            GateSignal {
                started: Instant::from_nanos(started),
                back_off,
                failed: retryable,
                probe,
            },
        );
    }
}

/// The index of copy `copy` in the state, if it is a copy number.
fn index(copy: u32) -> Option<usize> {
    (1..=MAX_COPIES).contains(&copy).then(|| copy as usize - 1)
}

/// What the budget is told a copy is for.
fn cause_of(trigger: HedgeTrigger) -> AttemptOutcome {
    match trigger {
        HedgeTrigger::Answer { outcome, .. } => outcome,
        HedgeTrigger::First | HedgeTrigger::Delay(_) => SLOW_COPY,
    }
}
