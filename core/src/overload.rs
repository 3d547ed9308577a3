//! Overload control past one operation: objects shared by every operation of a client that
//! the machine consults before each attempt, the way it consults a [`Budget`](crate::Budget).
//!
//! - An origin gate ([`Gate`]): a server's pushback (`Retry-After` on a 429 or 503, an
//!   exhausted rate-limit quota, a 403 that is a rate-limit answer) pauses every operation to that origin, not only the one that
//!   received it.
//! - A send-rate limiter ([`RateLimiter`]): after the server throttles, the client's rate of
//!   sends (first attempts too) follows AWS's adaptive (CUBIC) token bucket.
//!
//! Both are sans-IO (driven only by the `now` passed in), `no_std` and allocation-free, and
//! both are optional: [`NoGate`] and [`NoRateLimiter`] cost nothing.

use core::time::Duration;

use crate::decision::StopReason;
use crate::time::Instant;

mod gate;
mod rate_limiter;

pub use gate::{
    FailureRatio, GateCloseReason, GateConfig, GateConfigError, GateState, OriginGate, Reopening,
};
pub use rate_limiter::{AdaptiveRateLimiter, Cubic};

/// What a [`Gate`] says before an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GateAdmission {
    /// Open: send.
    Open,
    /// Half-open, and this attempt is the probe: send, and report its end with
    /// [`GateSignal::probe`] set.
    Probe,
    /// Closed until this instant (the reopening time, spread): do not send before it.
    Closed(Instant),
    /// Half-open with another operation's probe in flight: ask again at this instant (the
    /// probe's answer may have opened or closed the gate by then).
    AwaitProbe(Instant),
    /// Reopening at a pace ([`Reopening`]): the slot is this caller's. Wait until its
    /// instant, then ask again holding it ([`Ask::holding`]): the gate admits the holder unless
    /// it has closed again meanwhile. A slot at or past the caller's deadline is not given to
    /// it (nothing is reserved): the caller gives up.
    Paced(Slot),
}

/// An instant a reopening gate set aside for one caller ([`GateAdmission::Paced`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// When the caller may send.
    pub at: Instant,
    /// The reopening it belongs to (the gate's count of reopenings): a slot of an earlier
    /// reopening is void.
    pub reopening: u64,
}

/// What an operation asks a [`Gate`] before an attempt.
///
/// ```
/// use backstop_core::{Ask, Instant};
/// use core::time::Duration;
///
/// let ask = Ask::new(Duration::from_secs(5)).before(Instant::from_secs(15));
/// assert_eq!((ask.lease, ask.deadline, ask.slot), (Duration::from_secs(5), Some(Instant::from_secs(15)), None));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Ask {
    /// Bounds a probe: if its answer has not been reported `lease` after it was admitted (its
    /// operation was dropped, say), another operation becomes the probe.
    pub lease: Duration,
    /// The operation's deadline, if it has one: a reopening gate gives no slot at or past it.
    pub deadline: Option<Instant>,
    /// The slot an earlier [`GateAdmission::Paced`] gave this operation.
    pub slot: Option<Slot>,
    /// When the gate's last answer to this operation held it back (`Closed`, `AwaitProbe`,
    /// `Paced`): the instant it asked then; `None` if the gate has not held it back. A closing
    /// counts each operation that asks during it once, for the pace of the reopening after it:
    /// a new caller, or one back from a hold given before the closing began (by an earlier
    /// closing, its half-open, or the reopening it cut short); not one it held already.
    pub returning: Option<Instant>,
}

impl Ask {
    /// An ask with a probe `lease`, no deadline, no slot.
    #[must_use]
    pub const fn new(lease: Duration) -> Self {
        Ask {
            lease,
            deadline: None,
            slot: None,
            returning: None,
        }
    }

    /// The same ask by an operation that must send before `deadline`.
    #[must_use]
    pub const fn before(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The same ask by the holder of `slot` (if any).
    #[must_use]
    pub const fn holding(mut self, slot: Option<Slot>) -> Self {
        self.slot = slot;
        self
    }

    /// The same ask by an operation the gate's last answer held back when it asked at `held`
    /// (`None`: by one the gate has not held back).
    ///
    /// ```
    /// use backstop_core::{Ask, Instant};
    /// use core::time::Duration;
    ///
    /// // Told `Closed` when it asked at 5 s, the operation comes back.
    /// let back = Ask::new(Duration::from_secs(5)).returning(Some(Instant::from_secs(5)));
    /// assert_eq!(back.returning, Some(Instant::from_secs(5)));
    /// ```
    #[must_use]
    pub const fn returning(mut self, held: Option<Instant>) -> Self {
        self.returning = held;
        self
    }
}

/// What an attempt's end tells a [`Gate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GateSignal {
    /// When the attempt started (the results of attempts started before the gate last opened
    /// update the failure counts only).
    pub started: Instant,
    /// The server's back-off: its `Retry-After` on a 429 or 503 (or on a 403 that is a
    /// rate-limit answer), or an exhausted quota's reset, as the machine reads it (skew-corrected), already cut at the policy's ceiling.
    pub back_off: Option<Duration>,
    /// The attempt failed: a retryable status or a transient error (for the failure-ratio
    /// trip). A final status is a success.
    pub failed: bool,
    /// The attempt was admitted as the probe ([`GateAdmission::Probe`]).
    pub probe: bool,
}

/// An operation's standing with its origin's gate between two asks, kept by both machines:
/// the slot a reopening gave it, and when the gate's last answer held it back, if it did (then
/// it asks again as [`Ask::returning`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Standing {
    slot: Option<Slot>,
    held: Option<Instant>,
}

/// What the gate said to an operation's ask, as a machine acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GateSaid {
    /// Send (as the probe, or not), unless the limiter holds the attempt back.
    Admitted { probe: bool },
    /// Not before this instant.
    Held(Instant),
}

impl Standing {
    /// Asks `gate` at `now` for an attempt with a probe `lease` that must go before
    /// `deadline`, holding the slot the gate gave, if any.
    pub(crate) fn ask<G: Gate + ?Sized>(
        &mut self,
        gate: &G,
        now: Instant,
        lease: Duration,
        deadline: Instant,
    ) -> GateSaid {
        let held_slot = self.slot.take();
        let ask = Ask::new(lease)
            .before(deadline)
            .holding(held_slot)
            .returning(self.held);
        let answer = gate.admit(now, ask);
        self.held = matches!(
            answer,
            GateAdmission::Closed(_) | GateAdmission::AwaitProbe(_) | GateAdmission::Paced(_)
        )
        .then_some(now);
        match answer {
            GateAdmission::Probe => GateSaid::Admitted { probe: true },
            GateAdmission::Closed(t) | GateAdmission::AwaitProbe(t) => GateSaid::Held(t),
            GateAdmission::Paced(slot) => {
                self.slot = Some(slot);
                GateSaid::Held(slot.at)
            }
            // Admitted: a slot it held is spent, even if the limiter holds the attempt back
            // now (it then queues again: kept, the limiter's waiters would go past the
            // gate's pace, all at once when the limiter has tokens).
            _ => GateSaid::Admitted { probe: false },
        }
    }

    /// The attempt asked for goes now, or never: the slot is spent.
    pub(crate) fn spend(&mut self) {
        self.slot = None;
    }

    /// Asks the gate (when engaged), then the limiter (when engaged), to admit an attempt due
    /// at `now`: `Ok(probe)` to send it, as the gate's probe or not, else until when it is
    /// held back, with the reason to give up for if the hold is too long (the gate's
    /// `OriginPaused`, the limiter's `RateLimited`). A probe the limiter holds back is handed
    /// back at once: another operation may probe meanwhile.
    pub(crate) fn admit<G: Gate, L: RateLimiter>(
        &mut self,
        gate: &G,
        limiter: &L,
        now: Instant,
        lease: Duration,
        deadline: Instant,
    ) -> Result<bool, (Instant, StopReason)> {
        let mut probe = false;
        if G::ACTIVE && gate.engaged() {
            match self.ask(gate, now, lease, deadline) {
                GateSaid::Admitted { probe: p } => probe = p,
                GateSaid::Held(t) => return Err((t, StopReason::OriginPaused)),
            }
        }
        if L::ACTIVE && limiter.engaged() {
            if let Err(t) = limiter.acquire(now) {
                if probe {
                    gate.probe_not_sent(now);
                }
                return Err((t, StopReason::RateLimited));
            }
        }
        Ok(probe)
    }

    /// What an operation does about the send due at `now` (nanoseconds), with a probe `lease`,
    /// under its `deadline` (nanoseconds): [`admit`](Self::admit) it, then send it, wait for
    /// the hold's end, or give up when that end reaches the deadline or the send `fails_fast`
    /// (a first send under [`Policy::fail_fast_when_paused`](crate::Policy::fail_fast_when_paused),
    /// which can use no slot of a reopening but the present). Shared by both machines.
    pub(crate) fn admit_send<G: Gate, L: RateLimiter>(
        &mut self,
        (gate, limiter): (&G, &L),
        now: u64,
        lease: Duration,
        deadline: u64,
        fails_fast: bool,
    ) -> SendDue {
        let ask_before = if fails_fast { now } else { deadline };
        let admitted = self.admit(
            gate,
            limiter,
            Instant::from_nanos(now),
            lease,
            Instant::from_nanos(ask_before),
        );
        let (until, reason) = match admitted {
            Ok(probe) => {
                self.spend();
                return SendDue::Now { probe };
            }
            Err(held) => held,
        };
        // Not before the next nanosecond: a wait ends after `now`.
        let until = until.nanos().max(now.saturating_add(1));
        if until >= deadline || fails_fast {
            self.spend();
            return SendDue::GiveUp(reason);
        }
        SendDue::Held { until, reason }
    }
}

/// What an operation does about its send due (see [`Standing::admit_send`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendDue {
    /// Send it now, as the gate's probe or not.
    Now { probe: bool },
    /// Wait until `until` (nanoseconds, after now): held by the gate (`OriginPaused`) or the
    /// limiter (`RateLimited`).
    Held { until: u64, reason: StopReason },
    /// Give up for this reason: the hold would reach the deadline, or the send fails fast.
    GiveUp(StopReason),
}

/// A gate for one origin (scheme, host, port), shared by every operation to it.
pub trait Gate {
    /// Whether the machine consults this gate at all: `false` only for [`NoGate`], so that a
    /// machine without a gate pays nothing for the check.
    const ACTIVE: bool = true;

    /// Whether this gate holds anything back at all, fixed for its life: `false` for a
    /// wrapper that has no gate in it, so that the machine skips the calls (default `true`).
    #[inline(always)]
    fn engaged(&self) -> bool {
        true
    }

    /// Whether an attempt may start at `now`, for an operation that asks with `ask`.
    fn admit(&self, now: Instant, ask: Ask) -> GateAdmission;

    /// An attempt admitted by this gate ended at `now`.
    fn on_attempt_end(&self, now: Instant, signal: GateSignal);

    /// The attempt admitted at `admitted` as the probe ([`GateAdmission::Probe`]) will not be
    /// sent (the rate limiter held it back, or its operation ended before sending it: the
    /// caller's abort): the gate may hand the probe to another caller at once. `admitted` is
    /// the instant of that admission, not the time now: it names the probe.
    fn probe_not_sent(&self, admitted: Instant) {
        let _ = admitted;
    }
}

/// No gate: every attempt is admitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoGate;

impl Gate for NoGate {
    const ACTIVE: bool = false;
    #[inline(always)]
    fn admit(&self, _: Instant, _: Ask) -> GateAdmission {
        GateAdmission::Open
    }
    #[inline(always)]
    fn on_attempt_end(&self, _: Instant, _: GateSignal) {}
}

/// A limiter of the client's send rate, shared by every operation it paces.
pub trait RateLimiter {
    /// Whether the machine consults this limiter at all: `false` only for [`NoRateLimiter`].
    const ACTIVE: bool = true;

    /// Whether this limiter paces anything at all, fixed for its life: `false` for a wrapper
    /// that has no limiter in it (default `true`).
    #[inline(always)]
    fn engaged(&self) -> bool {
        true
    }

    /// Takes one token for an attempt at `now`, or says when to ask again, taking nothing.
    fn acquire(&self, now: Instant) -> Result<(), Instant>;

    /// A response arrived at `now`; `throttled` when the server throttled the client (a 429,
    /// a retried 403 that is a rate-limit answer, a 503 with `Retry-After`).
    fn on_response(&self, now: Instant, throttled: bool);
}

/// No limiter: every attempt is sent at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoRateLimiter;

impl RateLimiter for NoRateLimiter {
    const ACTIVE: bool = false;
    #[inline(always)]
    fn acquire(&self, _: Instant) -> Result<(), Instant> {
        Ok(())
    }
    #[inline(always)]
    fn on_response(&self, _: Instant, _: bool) {}
}

/// A shared pointer to a gate or a limiter is one: every call goes to the one it points to.
macro_rules! through_pointer {
    ($(#[$attr:meta])* $pointer:ty) => {
        $(#[$attr])*
        impl<G: Gate + ?Sized> Gate for $pointer {
            const ACTIVE: bool = G::ACTIVE;
            fn engaged(&self) -> bool {
                (**self).engaged()
            }
            fn admit(&self, now: Instant, ask: Ask) -> GateAdmission {
                (**self).admit(now, ask)
            }
            fn on_attempt_end(&self, now: Instant, signal: GateSignal) {
                (**self).on_attempt_end(now, signal);
            }
            fn probe_not_sent(&self, admitted: Instant) {
                (**self).probe_not_sent(admitted);
            }
        }
    };
}

through_pointer!(&G);
through_pointer!(#[cfg(feature = "std")] std::sync::Arc<G>);

macro_rules! limiter_through_pointer {
    ($(#[$attr:meta])* $pointer:ty) => {
        $(#[$attr])*
        impl<L: RateLimiter + ?Sized> RateLimiter for $pointer {
            const ACTIVE: bool = L::ACTIVE;
            fn engaged(&self) -> bool {
                (**self).engaged()
            }
            fn acquire(&self, now: Instant) -> Result<(), Instant> {
                (**self).acquire(now)
            }
            fn on_response(&self, now: Instant, throttled: bool) {
                (**self).on_response(now, throttled);
            }
        }
    };
}

limiter_through_pointer!(&L);
limiter_through_pointer!(#[cfg(feature = "std")] std::sync::Arc<L>);
