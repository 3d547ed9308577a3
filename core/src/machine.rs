//! The retry state machine: events in, decisions out.
//!
//! Rule: time and randomness are inputs (so every decision can be replayed); one funnel in
//! ([`RetryMachine::handle`]) and one funnel out ([`RetryMachine::poll`]); every decision carries
//! its reason; the state is fixed-size and nothing is allocated (so it runs in `no_std`).

use core::time::Duration;

use rand_core::Rng;

use crate::backoff::Backoff;
use crate::budget::{self, Budget, Unlimited};
use crate::classify::{AttemptError, ErrorClass, ErrorKind};
use crate::decision::{
    AttemptOutcome, Decision, DelaySource, Outcome, SendReason, StopReason, WaitReason,
};
use crate::event::{Event, MisuseError, Request, Response};
use crate::jitter::{uniform_nanos, uniform_nanos_nonzero, Jitter};
use crate::overload::{Gate, GateSignal, NoGate, NoRateLimiter, RateLimiter, SendDue, Standing};
use crate::policy::Policy;
use crate::server_delay::{
    floored_wait, is_retryable, may_set_floor, pushback, pushback_stops, server_floor,
};
use crate::time::{nanos_saturating, Instant};
use core::borrow::Borrow;

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
pub struct RetryMachine<R, B = Unlimited, G = NoGate, L = NoRateLimiter, P = Policy> {
    /// The policy, owned or borrowed (`&Policy`: a driver that keeps its policy elsewhere
    /// does not copy it into every operation).
    policy: P,
    /// Read once, into `fixed`; kept so that `Debug` shows it.
    #[allow(dead_code)]
    request: Request,
    rng: R,
    budget: B,
    /// The origin's gate, consulted before every attempt (a no-op [`NoGate`] by default).
    gate: G,
    /// The send-rate limiter, consulted before every attempt after the gate.
    limiter: L,
    /// The gate and the limiter admitted the attempt due (a token was taken): the `Send`
    /// repeats without asking them again until the attempt starts.
    admitted: bool,
    /// The attempt admitted (or in flight) is the gate's probe.
    probe: bool,
    /// Its standing with the gate: the slot a reopening gave it, whether it was held back.
    standing: Standing,
    /// When the gate admitted the probe, in nanoseconds (read while `admitted && probe`): an
    /// operation that ends before sending it hands it back.
    probe_admitted: u64,
    /// When the budget granted the retry that is not sent yet (see `delay`).
    granted_at: u64,
    /// Where the operation stands. The values a phase needs are the fields below: a plain tag
    /// and `u64` nanoseconds, so that a decision reads a field or two.
    phase: Phase,
    attempts: u32,
    /// The latest `now` seen, in nanoseconds since the caller's epoch.
    now: u64,
    /// The instant after which no attempt starts, in nanoseconds.
    deadline: u64,
    /// Before this instant an attempt surely gets the policy's whole attempt timeout (the
    /// deadline does not cut it): `deadline - attempt_timeout + 1`, or 0 when the deadline is
    /// closer than one attempt timeout to the epoch.
    full_timeout_before: u64,
    /// The instant of the phase, in nanoseconds: the attempt's start (`InFlight`: its timeout,
    /// [`Self::timeout_at`], is derived when it is read, which a driver that sends with the
    /// `Send`'s timeout never does), the end of the wait (`Waiting`, `Retry`, `RetryAtOnce`),
    /// the end of the operation (`Done`).
    at: u64,
    /// The length of the wait (`Waiting`, `Retry`, `RetryAtOnce`: 0), in nanoseconds: exact,
    /// since the wait ends before the deadline. `at - delay` is when the budget granted the
    /// retry that is not sent yet (given back if the operation ends first, so the budget pays
    /// only for retries sent; its cause is `last`, which no event changes before the retry is
    /// sent or given back).
    delay: u64,
    /// The attempt whose end caused the retry (`Waiting`, `Retry`, `RetryAtOnce`).
    wait_cause: AttemptOutcome,
    /// What decided the length of the wait (`Waiting`, `Retry`, `RetryAtOnce`). With
    /// `wait_cause` and the attempt after `attempts`, the [`WaitReason`]; kept as fields so
    /// that a decision reads each as it was written.
    wait_source: DelaySource,
    /// Why the machine stopped (`Done`).
    stop: StopReason,
    started: u64,
    /// The last wait, for the decorrelated jitter; kept up to date only by a machine whose
    /// backoff reads it (not the exponential backoff with full jitter).
    previous_wait: Duration,
    /// The attempts made when the last retry a gRPC pushback timed was decided (0: none):
    /// the backoff counts its retries from there (gRFC A6: after a pushback's retry fails,
    /// the delay starts again from the initial backoff).
    backoff_from: u32,
    last: Option<AttemptOutcome>,
    /// The last response's `Retry-After` delay, for the outcome.
    last_retry_after: Option<Duration>,
    /// What the policy and the request fix for the whole operation, computed once.
    fixed: Fixed,
}

/// Where an operation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The first attempt is due.
    First,
    /// A retry is due: the wait for `wait_cause` ended.
    Retry,
    /// A retry is due at once: the wait decided for `wait_cause` was zero.
    RetryAtOnce,
    /// An attempt is in flight since `at`, until [`RetryMachine::timeout_at`].
    InFlight,
    /// Waiting until `at`, for `delay`, for `wait_cause` and `wait_source`.
    Waiting,
    /// Done at `at`, for `stop`.
    Done,
}

/// The values of the policy and the request that every decision reads, fixed when the
/// machine is created: the policy's part (computed once per policy, [`PerPolicy`]), and the
/// refusals that depend on the request but not on the attempt.
#[derive(Clone, Copy, Debug)]
struct Fixed {
    /// The policy's attempt timeout in nanoseconds (saturated).
    attempt_timeout: u64,
    /// The same as the `Duration` a send reports when the deadline is further away.
    attempt_timeout_duration: Duration,
    /// Whether the backoff is exponential with full jitter ([`PerPolicy`]).
    full_exponential: bool,
    /// The backoff's base and cap in nanoseconds (read only when `full_exponential`).
    exponential: FullExponential,
    /// Below this attempt count, a retryable response is retried by the exponential backoff
    /// with full jitter, with nothing to refuse: `max_attempts` when the backoff is that one,
    /// its base and cap are not zero (so every draw has a span) and the request may be
    /// retried, else 0. One comparison for the usual retry.
    fast_retries_below: u32,
    /// Why a retry is refused after an attempt that never reached the server, if it is.
    refusal_not_sent: Option<StopReason>,
    /// Why a retry is refused after any other attempt, if it is.
    refusal: Option<StopReason>,
}

/// What every machine under one policy reads the same, in nanoseconds (saturated): computed
/// once, when the policy is built ([`PolicyBuilder::build`](crate::PolicyBuilder::build)), not
/// for every operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PerPolicy {
    /// The overall deadline's length.
    pub(crate) max_elapsed: u64,
    /// The attempt timeout.
    pub(crate) attempt_timeout: u64,
    /// The same as the `Duration` a send reports when the deadline is further away.
    attempt_timeout_duration: Duration,
    /// Whether the backoff is exponential with full jitter: the wait is then computed in
    /// `u64` from `exponential` (a full-jitter draw only depends on the delay saturated to
    /// `u64` nanoseconds).
    full_exponential: bool,
    /// The backoff's base and cap in nanoseconds (read only when `full_exponential`).
    exponential: FullExponential,
    /// `full_exponential`, with a base and a cap above zero: every draw has a span.
    fast: bool,
}

impl PerPolicy {
    /// A placeholder, before the policy's fields are set.
    pub(crate) const UNCOMPUTED: PerPolicy = PerPolicy {
        max_elapsed: 0,
        attempt_timeout: 0,
        attempt_timeout_duration: Duration::ZERO,
        full_exponential: false,
        exponential: FullExponential::new(0, 0),
        fast: false,
    };

    /// The part of `policy` the machines read.
    pub(crate) const fn of(policy: &Policy) -> Self {
        let backoff = policy.backoff();
        let attempt_timeout = nanos_saturating(policy.attempt_timeout());
        let full_exponential = matches!(
            (backoff, policy.jitter()),
            (Backoff::Exponential { .. }, Jitter::Full)
        );
        let exponential = FullExponential::new(
            nanos_saturating(backoff.base()),
            nanos_saturating(backoff.cap()),
        );
        PerPolicy {
            max_elapsed: nanos_saturating(policy.max_elapsed()),
            attempt_timeout,
            attempt_timeout_duration: Duration::from_nanos(attempt_timeout),
            full_exponential,
            exponential,
            fast: full_exponential && exponential.base > 0 && exponential.cap > 0,
        }
    }
}

/// The first retry `n` (from 1) whose delay `base * 2^(n-1)` reaches `cap` or would overflow
/// (65 when none does: a `base` of 0 under a `cap` above 0), without a loop: the shift that
/// gives `base` the bit length of `cap`, or one more.
const fn cap_from(base: u64, cap: u64) -> u32 {
    if base >= cap {
        return 1;
    }
    if base == 0 {
        return 65;
    }
    // `base < cap`, both above 0: the shift is at least 0 and below 64.
    let shift = base.leading_zeros() - cap.leading_zeros();
    // At `shift`, `base << shift` does not overflow (same bit length as `cap`); one more
    // reaches `cap` or overflows.
    if base << shift >= cap {
        shift + 1
    } else {
        shift + 2
    }
}

/// An exponential backoff with full jitter, in nanoseconds (saturated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FullExponential {
    base: u64,
    cap: u64,
    /// The first retry whose delay `min(cap, base * 2^(n-1))` (saturating) is the cap: every
    /// later one's is too, and every earlier one's is `base * 2^(n-1)`, below the cap.
    cap_from: u32,
}

impl FullExponential {
    const fn new(base: u64, cap: u64) -> Self {
        FullExponential {
            base,
            cap,
            cap_from: cap_from(base, cap),
        }
    }

    /// `min(cap, base * 2^(n-1))` in `u64`, for retry `n` (at least 1: a retry follows an
    /// attempt).
    #[inline]
    fn delay(self, n: u32) -> u64 {
        debug_assert!(n >= 1, "a retry follows an attempt");
        if n >= self.cap_from {
            self.cap
        } else {
            // `1 <= n < cap_from <= 65`, and below `cap_from` the shift does not overflow.
            self.base << (n - 1)
        }
    }
}

impl Fixed {
    fn new(policy: &Policy, request: Request) -> Self {
        let body = if request.has_replayable_body {
            None
        } else {
            Some(StopReason::BodyNotReplayable)
        };
        let refusal = body.or(policy.retry_refusal(request.method, request.has_idempotency_key));
        // Copied field by field: the machine keeps only what its decisions read (a driver's
        // future holds it; the reqwest middleware's box is at glibc's per-thread cache limit).
        let part = policy.per_policy();
        Fixed {
            attempt_timeout: part.attempt_timeout,
            attempt_timeout_duration: part.attempt_timeout_duration,
            full_exponential: part.full_exponential,
            exponential: part.exponential,
            fast_retries_below: match refusal {
                None if part.fast => policy.max_attempts(),
                _ => 0,
            },
            refusal_not_sent: body,
            refusal,
        }
    }
}

impl<R: Rng> RetryMachine<R, Unlimited> {
    /// A machine for one operation, created at `now` (the `max_elapsed` deadline runs from
    /// here), with no retry budget.
    pub fn new(policy: Policy, request: Request, rng: R, now: Instant) -> Self {
        RetryMachine::with_budget(policy, request, rng, Unlimited, now)
    }
}

impl<R: Rng, B: Budget> RetryMachine<R, B> {
    /// A machine that consults `budget` before every retry. The budget hears of the operation
    /// ([`Budget::on_operation_start`]) when its first attempt starts, not before: an
    /// operation that sends nothing earns no retries.
    pub fn with_budget(policy: Policy, request: Request, rng: R, budget: B, now: Instant) -> Self {
        RetryMachine::with_overload(policy, request, rng, budget, NoGate, NoRateLimiter, now)
    }
}

impl<R: Rng, B: Budget, G: Gate, L: RateLimiter, P: Borrow<Policy>> RetryMachine<R, B, G, L, P> {
    /// A machine that consults `budget` before every retry, and the origin's `gate` and the
    /// send-rate `limiter` before every attempt (the first one too): a closed gate or an empty
    /// bucket makes the machine wait ([`DelaySource::OriginPaused`],
    /// [`DelaySource::RateLimited`]) or, when the wait would pass the deadline (or the policy
    /// [fails fast](crate::PolicyBuilder::fail_fast_when_paused) on a first attempt), give up
    /// ([`StopReason::OriginPaused`], [`StopReason::RateLimited`]). Every response and every
    /// transient error is reported to the gate (the caller's abort and a permanent error say
    /// nothing of the server: a probe that ends so lets its lease run out; a probe aborted
    /// before it was sent is handed back at once), every response to
    /// the limiter (a 429 or a retried 403 that is a rate-limit answer, or a 503 with a usable
    /// `Retry-After`, as a throttle). The waits
    /// they cause are bounded by the deadline, not by [`Policy::worst_case`]'s `wait`, which
    /// counts the policy's own waits.
    // Inlined: a driver's future then builds the machine in its place, not in a temporary
    // moved there (measured: ~100 instructions per operation on every front door).
    #[inline(always)]
    pub fn with_overload(
        policy: P,
        request: Request,
        rng: R,
        budget: B,
        gate: G,
        limiter: L,
        now: Instant,
    ) -> Self {
        let borrowed = policy.borrow();
        let fixed = Fixed::new(borrowed, request);
        let deadline = now
            .nanos()
            .saturating_add(borrowed.per_policy().max_elapsed);
        let previous_wait = borrowed.backoff().base();
        RetryMachine {
            deadline,
            full_timeout_before: match deadline.checked_sub(fixed.attempt_timeout) {
                Some(last) => last.saturating_add(1),
                None => 0,
            },
            policy,
            request,
            rng,
            budget,
            gate,
            limiter,
            admitted: false,
            probe: false,
            standing: Standing::default(),
            probe_admitted: 0,
            granted_at: 0,
            phase: Phase::First,
            attempts: 0,
            now: now.nanos(),
            at: 0,
            delay: 0,
            // Read only in the phases that follow a retry's decision, which sets them.
            wait_cause: AttemptOutcome::Response(0),
            wait_source: DelaySource::Backoff,
            stop: StopReason::FinalStatus,
            started: now.nanos(),
            previous_wait,
            backoff_from: 0,
            last: None,
            last_retry_after: None,
            fixed,
        }
    }

    /// The policy this machine follows.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        self.policy.borrow()
    }

    /// The instant the machine was created at: the operation's start, from which the
    /// `max_elapsed` deadline runs.
    #[must_use]
    pub const fn started(&self) -> Instant {
        Instant::from_nanos(self.started)
    }

    /// The instant after which no attempt starts.
    #[must_use]
    pub const fn deadline(&self) -> Instant {
        Instant::from_nanos(self.deadline)
    }

    /// The origin gate this machine consults (see [`RetryMachine::with_overload`]).
    #[must_use]
    pub const fn gate(&self) -> &G {
        &self.gate
    }

    /// The send-rate limiter this machine consults.
    #[must_use]
    pub const fn rate_limiter(&self) -> &L {
        &self.limiter
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
        match self.phase {
            Phase::InFlight => Some(Instant::from_nanos(self.timeout_at())),
            Phase::Waiting => Some(Instant::from_nanos(self.at)),
            Phase::First | Phase::Retry | Phase::RetryAtOnce | Phase::Done => None,
        }
    }

    /// Whether the machine is done: every later poll returns its final decision, whatever
    /// the time (a driver need not read its clock for it).
    #[must_use]
    pub const fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// The final outcome, once the machine is done.
    #[must_use]
    pub fn outcome(&self) -> Option<Outcome> {
        match self.phase {
            Phase::Done => Some(self.outcome_now()),
            _ => None,
        }
    }

    /// Feeds one event in. A misplaced event is an error and changes nothing (not even the
    /// machine's clock).
    ///
    /// An event meets the state the previous call left, with the bounds `now` reaches applied
    /// afterwards: an abort, or the response (or error) of the attempt in flight, wins over a
    /// timeout or a deadline that no decision has reported yet.
    #[inline(always)]
    pub fn handle(&mut self, now: Instant, event: Event<'_>) -> Result<(), MisuseError> {
        // A small dispatch, inlined where it is called (so the event is known there), to one
        // function per event. No bound applies after `AttemptStarted`, `Response` or `Error`:
        // the new timeout is later than `now` (the attempt timeout is not zero, and the time
        // left is not either), and a wait that follows an attempt ends after `now` and before
        // the deadline.
        let now = self.now.max(now.nanos());
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
    #[inline(always)]
    fn attempt_started(&mut self, now: u64) -> Result<(), MisuseError> {
        // What `poll` would say, without changing anything (a refused `AttemptStarted` must
        // leave the machine as it was).
        let ready = match self.phase {
            Phase::First | Phase::Retry | Phase::RetryAtOnce => true,
            Phase::Waiting => now >= self.at,
            Phase::InFlight | Phase::Done => false,
        };
        if !ready || now >= self.deadline || (self.overload() && !self.admitted) {
            return Err(MisuseError::NoSendPending);
        }
        self.admitted = false;
        self.now = now;
        if self.attempts == 0 {
            // The operation starts with its first send: one that never sends (turned away by
            // a gate, aborted, out of time) earns the others no retries.
            self.budget.on_operation_start(Instant::from_nanos(now));
        }
        // A send is due only before the first attempt or after a retry was decided, with
        // `attempts < max_attempts`: the count cannot wrap (here and below).
        self.attempts = self.attempts.wrapping_add(1);
        self.at = now;
        self.phase = Phase::InFlight;
        Ok(())
    }

    /// [`Event::Response`] at `now` (not earlier than the machine's clock).
    #[inline(always)]
    fn response_in(&mut self, now: u64, response: &Response<'_>) -> Result<(), MisuseError> {
        if self.phase != Phase::InFlight {
            return Err(MisuseError::NoAttemptInFlight);
        }
        self.now = now;
        let status = response.status;
        let retryable = is_retryable(self.policy.borrow(), response);
        let cause = AttemptOutcome::Response(status);
        self.last = Some(cause);
        if let Some(success) = budget::response_success(response, retryable) {
            self.budget
                .on_attempt_end(Instant::from_nanos(now), success);
        }
        if self.overload() {
            self.overload_response(response, retryable);
        }
        // The usual response has no `Retry-After` and no rate-limit field: four tests, and
        // the parsers stay out of line.
        if may_set_floor(self.policy.borrow(), response, retryable) {
            self.response_with_fields(*response, cause, retryable);
        } else {
            self.last_retry_after = None;
            if !retryable {
                self.stop(StopReason::FinalStatus);
            } else if self.attempts < self.fixed.fast_retries_below {
                // The delay `min(cap, base * 2^(n-1))` is not zero: base and cap are not.
                let span = self.fixed.exponential.delay(self.backoff_retry());
                let delay = uniform_nanos_nonzero(&mut self.rng, span);
                self.schedule(cause, delay, DelaySource::Backoff);
            } else {
                self.response_retry_general(cause);
            }
        }
        Ok(())
    }

    /// What follows a response with a `Retry-After` or, on a retryable status, a rate-limit
    /// field. The response is taken by value: the copy is made on this path only, so the
    /// usual response need not be written to memory.
    #[cold]
    #[inline(never)]
    fn response_with_fields(
        &mut self,
        response: Response<'_>,
        cause: AttemptOutcome,
        retryable: bool,
    ) {
        let floor = self.server_floor(&response, retryable);
        match floor {
            _ if !retryable => self.stop(StopReason::FinalStatus),
            _ if pushback_stops(&response, retryable) => self.stop(StopReason::ServerPushback),
            Some(floor) => self.retry_with_floor(cause, self.fixed.refusal, floor),
            None => self.retry_with_backoff(cause, self.fixed.refusal),
        }
    }

    /// The retry after a retryable response without server-directed delay, when the fast
    /// path's one comparison does not settle it: a refusal, no attempt left, or another backoff.
    #[cold]
    #[inline(never)]
    fn response_retry_general(&mut self, cause: AttemptOutcome) {
        self.retry_with_backoff(cause, self.fixed.refusal);
    }

    /// [`Event::Error`] at `now` (not earlier than the machine's clock).
    fn error_in(&mut self, now: u64, error: AttemptError) -> Result<(), MisuseError> {
        if self.phase != Phase::InFlight {
            return Err(MisuseError::NoAttemptInFlight);
        }
        self.now = now;
        self.error_ended(error, false);
        Ok(())
    }

    /// Carries a machine just created at the operation's start to where the operation stood
    /// when it returned attempt `attempts`'s `status` response at `now`: for a driver that
    /// keeps the operation going in the response's body (a resumable download) on a machine
    /// of its own, built with the same policy, request, budget, gate and limiter, and
    /// `started` at the operation's start (so that its deadline is the operation's). The
    /// budget is not told of the operation's start again.
    ///
    /// ```
    /// use backstop_core::{AttemptError, Decision, ErrorKind, Instant, Method, Policy, Request};
    /// use backstop_core::RetryMachine;
    /// use rand_core::SeedableRng;
    ///
    /// let rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    /// let (start, cut) = (Instant::ZERO, Instant::from_secs(3));
    /// let mut body = RetryMachine::new(Policy::default(), Request::new(Method::Get), rng, start)
    ///     .returned_at(1, 200, Instant::from_secs(1));
    /// // Bytes were handed over before the cut: the resume goes at once, as attempt 2.
    /// body.body_failed(cut, AttemptError::new(ErrorKind::BodyCut), true).unwrap();
    /// assert!(matches!(body.poll(cut), Decision::Send { attempt: 2, .. }));
    /// ```
    #[must_use]
    pub fn returned_at(mut self, attempts: u32, status: u16, now: Instant) -> Self {
        self.attempts = attempts;
        self.now = self.now.max(now.nanos());
        self.last = Some(AttemptOutcome::Response(status));
        self.stop = StopReason::FinalStatus;
        self.phase = Phase::Done;
        self.at = self.now;
        self
    }

    /// The body of the response the machine returned failed at `now` with `error` (a cut, a
    /// stall): the operation goes on as if that attempt had ended with `error`, under the same
    /// rules (the request's method and key, the budget, the gate, the deadline, the attempts
    /// left). `at_once`: the body made progress since its attempt began (bytes were handed
    /// over), so the next attempt, which resumes it, goes without a backoff; else the policy's
    /// backoff applies, as after any failure.
    ///
    /// # Errors
    ///
    /// [`MisuseError::NoResponseReturned`] unless the machine is done with a response it
    /// returned (reason `final_status`); nothing changes then.
    pub fn body_failed(
        &mut self,
        now: Instant,
        error: AttemptError,
        at_once: bool,
    ) -> Result<(), MisuseError> {
        let returned = self.phase == Phase::Done
            && self.stop == StopReason::FinalStatus
            && matches!(self.last, Some(AttemptOutcome::Response(_)));
        if !returned {
            return Err(MisuseError::NoResponseReturned);
        }
        self.now = self.now.max(now.nanos());
        self.error_ended(error, at_once);
        Ok(())
    }

    /// The next decision at `now`. Polling twice without an event in between gives the same
    /// decision (unless time passed a bound); a terminal decision repeats forever.
    #[inline(always)]
    pub fn poll(&mut self, now: Instant) -> Decision {
        // The usual polls, where no bound is reached or only a wait's end, answer at once; the
        // others apply the bounds first. Tests in the order a retry loop meets them.
        // A wait that ended before `full_timeout_before` (which is not later than the deadline)
        // is a retry with the whole attempt timeout.
        let now = self.now.max(now.nanos());
        self.now = now;
        // Tests, not a `match`: a jump table costs more than the first test.
        if self.phase == Phase::Waiting {
            if now < self.at {
                return self.wait_decision();
            }
            if now < self.full_timeout_before {
                self.phase = self.after_wait();
                return self.send_due();
            }
        } else if self.phase == Phase::InFlight {
            if now < self.timeout_at() {
                return self.await_decision();
            }
        } else if self.phase != Phase::Done && now < self.deadline {
            return self.send_due();
        }
        self.poll_at_bound(now)
    }

    /// [`Self::poll`] when `now` reached a bound (or the machine is done): the bounds applied,
    /// then the decision.
    #[cold]
    #[inline(never)]
    fn poll_at_bound(&mut self, now: u64) -> Decision {
        self.advance(now);
        match self.phase {
            Phase::First | Phase::Retry | Phase::RetryAtOnce => self.send_due(),
            _ => self.decision(),
        }
    }

    /// Whether this machine has a gate or a limiter to consult: known when it is built (`false`
    /// at compile time for [`NoGate`] and [`NoRateLimiter`]).
    #[inline(always)]
    fn overload(&self) -> bool {
        (G::ACTIVE && self.gate.engaged()) || (L::ACTIVE && self.limiter.engaged())
    }

    /// The phase a wait ends in: a retry, or the first attempt that the gate or the limiter
    /// held back.
    #[inline(always)]
    fn after_wait(&self) -> Phase {
        if self.overload() && self.attempts == 0 {
            Phase::First
        } else {
            Phase::Retry
        }
    }

    /// The send that is due, once the gate and the limiter admit it (a machine without them
    /// sends at once).
    #[inline(always)]
    fn send_due(&mut self) -> Decision {
        if self.overload() && !self.admitted {
            if let Some(held) = self.admission() {
                return held;
            }
        }
        self.send()
    }

    /// Asks the gate, then the limiter, to admit the attempt due. `None`: admitted (a token
    /// taken). Else the decision instead: a wait until they admit it, or the end.
    #[cold]
    #[inline(never)]
    fn admission(&mut self) -> Option<Decision> {
        let fails_fast = self.attempts == 0 && self.policy.borrow().fail_fast_when_paused();
        let due = self.standing.admit_send(
            (&self.gate, &self.limiter),
            self.now,
            self.attempt_timeout(),
            self.deadline,
            fails_fast,
        );
        match due {
            SendDue::Now { probe } => {
                self.admitted = true;
                self.probe = probe;
                self.probe_admitted = self.now;
                return None;
            }
            SendDue::GiveUp(reason) => self.stop(reason),
            SendDue::Held { until, reason } => {
                // A retry keeps its cause (and its budget grant); a first attempt has none.
                self.phase = Phase::Waiting;
                self.delay = until - self.now;
                self.at = until;
                self.wait_source = if reason == StopReason::RateLimited {
                    DelaySource::RateLimited
                } else {
                    DelaySource::OriginPaused
                };
            }
        }
        Some(self.decision())
    }

    /// Tells the gate and the limiter how the attempt in flight (started at `at`) ended with
    /// `response`.
    #[cold]
    #[inline(never)]
    fn overload_response(&mut self, response: &Response<'_>, retryable: bool) {
        let now = Instant::from_nanos(self.now);
        let (back_off, throttled) = pushback(self.policy.borrow(), response, retryable);
        if L::ACTIVE {
            self.limiter.on_response(now, throttled);
        }
        if G::ACTIVE {
            self.gate.on_attempt_end(
                now,
                GateSignal {
                    started: Instant::from_nanos(self.at),
                    back_off,
                    failed: retryable,
                    probe: core::mem::take(&mut self.probe),
                },
            );
        }
    }

    /// Tells the gate how the attempt in flight (started at `at`) ended with a transient
    /// error.
    #[cold]
    #[inline(never)]
    fn overload_error(&mut self) {
        if G::ACTIVE {
            self.gate.on_attempt_end(
                Instant::from_nanos(self.now),
                GateSignal {
                    started: Instant::from_nanos(self.at),
                    back_off: None,
                    failed: true,
                    probe: core::mem::take(&mut self.probe),
                },
            );
        }
    }

    /// The send that is due (in `First`, `Retry` or `RetryAtOnce`).
    #[inline]
    fn send(&self) -> Decision {
        let reason = match self.phase {
            Phase::First => SendReason::First,
            Phase::RetryAtOnce => SendReason::RetryAtOnce(self.wait_reason()),
            _ => SendReason::Retry(self.wait_cause),
        };
        Decision::Send {
            attempt: self.attempts.wrapping_add(1),
            timeout: self.attempt_timeout(),
            reason,
        }
    }

    #[inline]
    fn wait_decision(&self) -> Decision {
        Decision::Wait {
            until: Instant::from_nanos(self.at),
            delay: Duration::from_nanos(self.delay),
            reason: self.wait_reason(),
        }
    }

    /// Why the machine waits or retries (in `Waiting`, `Retry`, `RetryAtOnce`).
    #[inline]
    fn wait_reason(&self) -> WaitReason {
        WaitReason {
            cause: if self.overload() && self.attempts == 0 {
                None
            } else {
                Some(self.wait_cause)
            },
            source: self.wait_source,
            next_attempt: self.attempts.wrapping_add(1),
        }
    }

    #[inline]
    fn await_decision(&self) -> Decision {
        Decision::AwaitResponse {
            attempt: self.attempts,
            timeout_at: Instant::from_nanos(self.timeout_at()),
        }
    }

    /// The decision the state stands for, once the bounds `now` reached are applied.
    fn decision(&self) -> Decision {
        match self.phase {
            Phase::First | Phase::Retry | Phase::RetryAtOnce => self.send(),
            Phase::InFlight => self.await_decision(),
            Phase::Waiting => self.wait_decision(),
            Phase::Done => {
                let outcome = self.outcome_now();
                match outcome.last {
                    Some(AttemptOutcome::Response(_)) if self.stop != StopReason::Aborted => {
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
    fn advance(&mut self, now: u64) {
        let now = self.now.max(now);
        self.now = now;
        match self.phase {
            Phase::InFlight => {
                if now >= self.timeout_at() {
                    self.error_ended(AttemptError::new(ErrorKind::Timeout), false);
                }
            }
            Phase::Waiting => {
                if now >= self.at {
                    if now >= self.deadline {
                        self.stop(StopReason::Deadline);
                    } else {
                        self.phase = self.after_wait();
                    }
                }
            }
            Phase::First | Phase::Retry | Phase::RetryAtOnce => {
                if now >= self.deadline {
                    self.stop(StopReason::Deadline);
                }
            }
            Phase::Done => {}
        }
    }

    fn abort(&mut self) {
        if self.phase != Phase::Done {
            self.stop(StopReason::Aborted);
        }
    }

    /// [`Self::stop`] at the deadline: a call of its own, so that the usual path does not
    /// carry the reason.
    #[cold]
    #[inline(never)]
    fn stop_at_deadline(&mut self) {
        self.stop(StopReason::Deadline);
    }

    fn stop(&mut self, reason: StopReason) {
        let granted = matches!(
            self.phase,
            Phase::Waiting | Phase::Retry | Phase::RetryAtOnce
        );
        if let (true, Some(cause)) = (granted, self.last) {
            self.budget.on_retry_cancelled(
                Instant::from_nanos(self.now),
                Instant::from_nanos(self.granted_at),
                cause,
            );
        }
        if core::mem::take(&mut self.admitted) && core::mem::take(&mut self.probe) {
            // A probe that will never be sent (the caller aborted before the send) would hold
            // every other operation to the origin until its lease ran out.
            self.gate
                .probe_not_sent(Instant::from_nanos(self.probe_admitted));
        }
        self.phase = Phase::Done;
        self.stop = reason;
        self.at = self.now;
    }

    /// The outcome of a machine that is done.
    fn outcome_now(&self) -> Outcome {
        Outcome {
            attempts: self.attempts,
            elapsed: Duration::from_nanos(self.at.saturating_sub(self.started)),
            reason: self.stop,
            last: self.last,
            retry_after: match self.last {
                Some(AttemptOutcome::Response(_)) => self.last_retry_after,
                _ => None,
            },
        }
    }

    /// `min(attempt_timeout, deadline - now)`: an attempt never runs past the deadline.
    #[inline]
    fn attempt_timeout(&self) -> Duration {
        if self.now < self.full_timeout_before {
            self.fixed.attempt_timeout_duration
        } else {
            Duration::from_nanos(
                self.fixed
                    .attempt_timeout
                    .min(self.deadline.saturating_sub(self.now)),
            )
        }
    }

    /// When the attempt in flight times out (`InFlight`, where `at` is its start):
    /// `at + min(attempt_timeout, deadline - at)`, which is `min(at + attempt_timeout,
    /// deadline)` (saturating; an attempt starts before the deadline).
    #[inline]
    const fn timeout_at(&self) -> u64 {
        let end = self.at.saturating_add(self.fixed.attempt_timeout);
        if end < self.deadline {
            end
        } else {
            self.deadline
        }
    }

    /// The server-directed delay of a response and where it comes from (see
    /// [`server_floor`]), keeping its `Retry-After` for the outcome.
    #[cold]
    #[inline(never)]
    fn server_floor(
        &mut self,
        response: &Response<'_>,
        retryable: bool,
    ) -> Option<(Duration, DelaySource)> {
        let (retry_after, floor) = server_floor(self.policy.borrow(), response, retryable);
        self.last_retry_after = retry_after;
        floor
    }

    /// Decides what follows an attempt that ended with `error` (`at_once`: a retry, if any,
    /// goes without a wait).
    fn error_ended(&mut self, error: AttemptError, at_once: bool) {
        let cause = AttemptOutcome::Error(error);
        self.last = Some(cause);
        let refusal = match error.class {
            // Neither the caller's abort nor a permanent error says anything about the
            // server's health: the budget is not told of them.
            ErrorClass::Aborted => return self.stop(StopReason::Aborted),
            ErrorClass::Permanent => return self.stop(StopReason::PermanentError),
            ErrorClass::NotSent => self.fixed.refusal_not_sent,
            ErrorClass::MaybeSent | ErrorClass::Timeout => self.fixed.refusal,
        };
        if G::ACTIVE && self.gate.engaged() {
            self.overload_error();
        }
        self.budget
            .on_attempt_end(Instant::from_nanos(self.now), false);
        if !at_once {
            return self.retry_with_backoff(cause, refusal);
        }
        if !self.retry_refused(refusal) {
            self.schedule(cause, 0, DelaySource::Backoff);
        }
    }

    /// Stops if no retry may follow: `refusal` (why the request may not be retried after
    /// its last attempt, if it may not), or no attempt left. Whether it stopped.
    #[inline(always)]
    fn retry_refused(&mut self, refusal: Option<StopReason>) -> bool {
        if let Some(reason) = refusal {
            self.stop(reason);
            return true;
        }
        if self.attempts >= self.policy.borrow().max_attempts() {
            self.stop(StopReason::Attempts);
            return true;
        }
        false
    }

    /// Decides whether and when to retry after an attempt that ended with a retryable
    /// `cause`, with no server-directed delay: the policy's backoff.
    #[inline(always)]
    fn retry_with_backoff(&mut self, cause: AttemptOutcome, refusal: Option<StopReason>) {
        if self.retry_refused(refusal) {
            return;
        }
        let delay = self.backoff_wait();
        self.schedule(cause, delay, DelaySource::Backoff);
    }

    /// The same with the server-directed delay `floor`.
    fn retry_with_floor(
        &mut self,
        cause: AttemptOutcome,
        refusal: Option<StopReason>,
        (floor, source): (Duration, DelaySource),
    ) {
        if self.retry_refused(refusal) {
            return;
        }
        match self.retry_after_wait(floor, source) {
            Some((delay, source)) => {
                // Read only if the retry is scheduled (a machine that stops draws no more).
                self.previous_wait = delay;
                if matches!(
                    source,
                    DelaySource::ServerPushback | DelaySource::ServerPushbackClamped
                ) {
                    self.backoff_from = self.attempts;
                }
                self.schedule(cause, nanos_saturating(delay), source);
            }
            None => self.stop(StopReason::RetryAfterAboveMax),
        }
    }

    /// Schedules the retry after `cause` in `delay_nanos` (saturated), unless it would start
    /// at or after the deadline or the budget denies it.
    #[inline(always)]
    fn schedule(&mut self, cause: AttemptOutcome, delay_nanos: u64, source: DelaySource) {
        let until = self.now.saturating_add(delay_nanos);
        if until >= self.deadline {
            return self.stop_at_deadline();
        }
        if !self.budget.try_retry(Instant::from_nanos(self.now), cause) {
            return self.stop(StopReason::Budget);
        }
        self.wait_cause = cause;
        self.wait_source = source;
        self.granted_at = self.now;
        if delay_nanos == 0 {
            self.phase = Phase::RetryAtOnce;
            self.at = self.now;
            self.delay = 0;
        } else {
            self.phase = Phase::Waiting;
            self.at = until;
            self.delay = delay_nanos;
        }
    }

    /// The wait for a server-directed delay (see [`floored_wait`]).
    #[cold]
    #[inline(never)]
    fn retry_after_wait(
        &mut self,
        floor: Duration,
        source: DelaySource,
    ) -> Option<(Duration, DelaySource)> {
        floored_wait(
            self.policy.borrow(),
            &mut self.rng,
            self.deadline.saturating_sub(self.now),
            (floor, source),
        )
    }

    /// The policy's backoff for the coming retry, jittered, in nanoseconds (saturated).
    #[inline]
    fn backoff_wait(&mut self) -> u64 {
        if self.fixed.full_exponential {
            return self.full_exponential_wait();
        }
        self.backoff_wait_general()
    }

    /// The retry the backoff is computed for: 1 for the first retry, or for the first after
    /// a retry a gRPC pushback timed.
    #[inline(always)]
    fn backoff_retry(&self) -> u32 {
        self.attempts - self.backoff_from
    }

    /// [`Self::backoff_wait`] for the exponential backoff with full jitter.
    #[inline(always)]
    fn full_exponential_wait(&mut self) -> u64 {
        // `Backoff::delay` then `Jitter::Full` in `u64`: the delay `min(cap, base * 2^(n-1))`
        // saturated to `u64` nanoseconds is the span of the draw.
        let span = self.fixed.exponential.delay(self.backoff_retry());
        uniform_nanos(&mut self.rng, span)
    }

    /// [`Self::backoff_wait`] for every other backoff and jitter.
    #[cold]
    #[inline(never)]
    fn backoff_wait_general(&mut self) -> u64 {
        let backoff = self.policy.borrow().backoff();
        let d = backoff.delay(self.backoff_retry());
        let wait = self.policy.borrow().jitter().apply(
            d,
            backoff.base(),
            backoff.cap(),
            self.previous_wait,
            &mut self.rng,
        );
        // Read only if the retry is scheduled (a machine that stops draws no more).
        self.previous_wait = wait;
        nanos_saturating(wait)
    }
}

#[cfg(test)]
mod cap_from_tests {
    use super::cap_from;
    use rand_core::{Rng, SeedableRng};

    /// The loop `cap_from` replaced: the first `n` with `base << (n-1)` at or over `cap`, or
    /// overflowing, or past 64 shifts.
    fn by_loop(base: u64, cap: u64) -> u32 {
        let mut n = 1u32;
        loop {
            let shift = n - 1;
            if shift >= 64 || base > u64::MAX >> shift || base << shift >= cap {
                return n;
            }
            n += 1;
        }
    }

    #[test]
    fn cap_from_is_the_loops_answer() {
        // Every pair of small values, and every pair of powers of two and their neighbours.
        for base in 0..70u64 {
            for cap in 0..70u64 {
                assert_eq!(cap_from(base, cap), by_loop(base, cap), "{base} {cap}");
            }
        }
        for base in edges() {
            for cap in edges() {
                assert_eq!(cap_from(base, cap), by_loop(base, cap), "{base} {cap}");
            }
        }
        // A seeded pseudo-random sweep, with values of every bit length.
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5EED);
        for _ in 0..200_000 {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            let (base, cap) = (a >> (a % 64), b >> (b % 64));
            assert_eq!(cap_from(base, cap), by_loop(base, cap), "{base} {cap}");
        }
    }

    /// 0, 1, `u64::MAX`, and each power of two with its neighbours.
    fn edges() -> impl Iterator<Item = u64> {
        [0, 1, u64::MAX].into_iter().chain((1..64).flat_map(|k| {
            let p = 1u64 << k;
            [p - 1, p, p + 1]
        }))
    }
}
