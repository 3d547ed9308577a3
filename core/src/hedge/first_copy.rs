//! A hedged operation's first copy, sent before its machine is made.
//!
//! Rule: a hedged operation whose first copy answers with a final status before its hedging
//! delay does nothing a plain request does not; it should cost what a plain request costs.
//! [`HedgeMachine::first_copy`] sends the first copy as the machine would (when no gate or
//! limiter is to be asked: an admission may hold the copy) and keeps only its bounds; the
//! copy's final answer ends the operation with the outcome the machine would give
//! ([`FirstCopy::answered`]); anything else (a non-final answer, an error, the hedging delay
//! or the timeout, an abort) makes the machine, in the state the first copy's start left
//! ([`FirstCopy::into_machine`]), which the driver then tells what happened. The budget, the
//! latencies, the gate and the limiter hear exactly what they hear from the machine.

use core::borrow::Borrow;
use core::time::Duration;

use rand_core::Rng;

use super::decision::HedgeOutcome;
use super::latency::{Latencies, NoLatencies};
use super::machine::{overload_engaged, tell_overload, Bounds};
use super::HedgeMachine;
use crate::budget::{self, Budget, Unlimited};
use crate::decision::{AttemptOutcome, Outcome, StopReason};
use crate::event::{Request, Response};
use crate::overload::{Gate, NoGate, NoRateLimiter, RateLimiter};
use crate::policy::Policy;
use crate::server_delay::{is_retryable, may_set_floor, server_floor};
use crate::time::Instant;

/// A hedged operation's first copy, in flight, with no machine made yet: see
/// [`HedgeMachine::first_copy`]. It holds what the machine would be made of.
///
/// ```
/// use backstop_core::{HedgeMachine, Hedging, Instant, Method, NoGate, NoLatencies,
///                     NoRateLimiter, Policy, Request, Response, Unlimited};
/// use core::time::Duration;
/// use rand_core::SeedableRng;
///
/// let policy = Policy::builder().hedging(Hedging::fixed(Duration::from_millis(50))).build()?;
/// let rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
/// let (budget, gate, limiter) = (Unlimited, NoGate, NoRateLimiter);
/// let request = Request::new(Method::Get);
/// let Ok(first) = HedgeMachine::first_copy(
///     policy, request, rng, budget, NoLatencies, gate, limiter, Instant::ZERO,
/// ) else {
///     panic!("no gate or limiter to ask: the first copy goes at once")
/// };
/// // Send the first copy with `first.timeout()`; race it against `first.wait_until()`.
/// assert_eq!(first.wait_until(), Instant::from_nanos(50_000_000));
/// // A 503 after 20 ms does not end the operation: the first copy comes back, and the
/// // machine made of it takes the answer.
/// let t = Instant::from_nanos(20_000_000);
/// let Err(first) = first.answered(t, &Response::new(503)) else { panic!("a 503 is retried") };
/// let machine = first.clone().into_machine();
/// assert_eq!((machine.sent(), machine.in_flight()), (1, 1));
/// // A 200 ends it, as the machine would end it.
/// let done = first.answered(t, &Response::new(200)).map_err(|_| "a 200 is final")?;
/// assert_eq!((done.winner, done.outcome.attempts), (Some(1), 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct FirstCopy<R, B = Unlimited, L = NoLatencies, G = NoGate, RL = NoRateLimiter, P = Policy>
{
    policy: P,
    rng: R,
    budget: B,
    latencies: L,
    gate: G,
    limiter: RL,
    bounds: Bounds,
    /// When the operation started and its first copy was sent (nanoseconds).
    sent: u64,
}

impl<R: Rng, B: Budget, L: Latencies, G: Gate, RL: RateLimiter, P: Borrow<Policy>>
    HedgeMachine<R, B, L, G, RL, P>
{
    /// Starts an operation at `now` (the arguments of [`HedgeMachine::with_overload`]) by
    /// sending its first copy without making the machine, when that copy goes out at once
    /// with nothing to ask: no gate or limiter engaged, and time before the deadline. The
    /// budget hears of the operation's start, as from the machine's first `Started`. Else
    /// `Err` holds the machine `with_overload` makes, nothing sent.
    // The machine's arguments: one more than clippy's default.
    #[allow(clippy::too_many_arguments)]
    // The `Err` is the machine itself, which the driver keeps where it wants it (boxed, or in
    // its future); an allocation-free crate cannot box it.
    #[allow(clippy::result_large_err)]
    // Inlined: a driver's future then holds the parts in place.
    #[inline(always)]
    pub fn first_copy(
        policy: P,
        request: Request,
        rng: R,
        budget: B,
        latencies: L,
        gate: G,
        limiter: RL,
        now: Instant,
    ) -> Result<FirstCopy<R, B, L, G, RL, P>, Self> {
        let bounds = Bounds::of(policy.borrow(), request, &latencies, now);
        let sent = now.nanos();
        let parts = (policy, rng, budget, latencies, gate, limiter);
        if overload_engaged(&parts.4, &parts.5) || sent >= bounds.deadline {
            return Err(HedgeMachine::from_bounds(parts, bounds, sent));
        }
        let (policy, rng, budget, latencies, gate, limiter) = parts;
        // The operation starts with its first send (see `HedgeMachine::handle`).
        budget.on_operation_start(now);
        Ok(FirstCopy {
            policy,
            rng,
            budget,
            latencies,
            gate,
            limiter,
            bounds,
            sent,
        })
    }
}

impl<R: Rng, B: Budget, L: Latencies, G: Gate, RL: RateLimiter, P: Borrow<Policy>>
    FirstCopy<R, B, L, G, RL, P>
{
    /// The policy the operation follows.
    #[must_use]
    pub fn policy(&self) -> &Policy {
        self.policy.borrow()
    }

    /// The origin gate the operation consults.
    #[must_use]
    pub const fn gate(&self) -> &G {
        &self.gate
    }

    /// The send-rate limiter the operation consults.
    #[must_use]
    pub const fn rate_limiter(&self) -> &RL {
        &self.limiter
    }

    /// When the copy was sent (the operation's start).
    #[must_use]
    pub const fn sent_at(&self) -> Instant {
        Instant::from_nanos(self.sent)
    }

    /// The copy's timeout (the machine's `Send` says the same).
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.bounds.copy_timeout(self.sent)
    }

    /// Until when the driver waits for the copy's answer (the machine's `Wait` says the same):
    /// its timeout, or the hedging delay's end if it comes first and before the deadline.
    /// Then the machine takes over ([`into_machine`](Self::into_machine)).
    #[must_use]
    pub fn wait_until(&self) -> Instant {
        let b = &self.bounds;
        let timeout_at = b.timeout_at(self.sent);
        let next = match b.delay {
            Some(d) if b.max > 1 => Some(self.sent.saturating_add(d)),
            _ => None,
        };
        let until = match next {
            Some(at) if at < b.deadline => timeout_at.min(at),
            _ => timeout_at,
        };
        Instant::from_nanos(until)
    }

    /// The copy answered at `now` with `response`: if that ends the operation (a status the
    /// policy does not retry), its outcome, with the budget, the latencies, the gate and the
    /// limiter told what the machine would tell them. Else the first copy back, nothing told:
    /// make the machine ([`into_machine`](Self::into_machine)) and report the answer to it.
    /// Taken by value: a copy answers once.
    // The `Err` is the first copy itself, which the driver goes on with.
    #[allow(clippy::result_large_err)]
    pub fn answered(self, now: Instant, response: &Response<'_>) -> Result<HedgeOutcome, Self> {
        let policy = self.policy.borrow();
        if is_retryable(policy, response) {
            return Err(self);
        }
        // The machine's clock never goes back.
        let now = self.sent.max(now.nanos());
        let at = Instant::from_nanos(now);
        if let Some(success) = budget::response_success(response, false) {
            self.budget.on_attempt_end(at, success);
        }
        if overload_engaged(&self.gate, &self.limiter) {
            let parts = (policy, &self.gate, &self.limiter);
            tell_overload(parts, now, (self.sent, false), response, false);
        }
        let retry_after = if may_set_floor(policy, response, false) {
            server_floor(policy, response, false).0
        } else {
            None
        };
        // The operation's one latency sample: the first copy's, to its end.
        let took = Duration::from_nanos(now.saturating_sub(self.sent));
        self.latencies.record(at, took);
        Ok(HedgeOutcome {
            outcome: Outcome {
                attempts: 1,
                elapsed: took,
                reason: StopReason::FinalStatus,
                last: Some(AttemptOutcome::Response(response.status)),
                retry_after,
            },
            winner: Some(1),
            cancelled: 0,
            suppressed: 0,
            suppressed_by: None,
        })
    }

    /// The machine, in the state the copy's start left it (as if it had sent the copy): the
    /// driver reports to it what happened since.
    // Inlined: a driver builds the machine in its place (its box), not in a temporary.
    #[inline(always)]
    #[must_use]
    pub fn into_machine(self) -> HedgeMachine<R, B, L, G, RL, P> {
        let parts = (
            self.policy,
            self.rng,
            self.budget,
            self.latencies,
            self.gate,
            self.limiter,
        );
        let mut machine = HedgeMachine::from_bounds(parts, self.bounds, self.sent);
        machine.mark_started(self.sent, None);
        machine
    }
}
