//! The shared objects as the machines see them: each machine holds a handle to the one gate
//! (and the one limiter) of the scenario, which passes every call through and logs it with
//! what the object looked like around it, so that the checks can judge each call in order.
//! While the model observes a clone of a machine (the ledger's muting, shared with the log),
//! the handles answer as if open and pass nothing on: a clone's calls are not the machine's.

use core::fmt;
use core::time::Duration;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use backstop_core::{
    AdaptiveRateLimiter, Ask, Gate, GateAdmission, GateSignal, GateState, Instant, NoGate,
    NoRateLimiter, OriginGate, RateLimiter,
};

/// One call a machine made to a shared object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Call {
    /// `Gate::admit`, and the gate just after it.
    Admit {
        now: Instant,
        ask: Ask,
        answer: GateAdmission,
        after: GateView,
    },
    /// `Gate::on_attempt_end`, and the gate just before and after it.
    AttemptEnd {
        now: Instant,
        signal: GateSignal,
        before: GateView,
        after: GateView,
    },
    /// `Gate::probe_not_sent`: the probe the gate admitted at `admitted` will not be sent
    /// (the limiter held it back, or its operation ended first); the gate just before and
    /// after it (read at `admitted`).
    ProbeNotSent {
        admitted: Instant,
        before: GateView,
        after: GateView,
    },
    /// `RateLimiter::acquire`, and the limiter just before and after it.
    Acquire {
        now: Instant,
        answer: Result<(), Instant>,
        before: LimiterView,
        after: LimiterView,
    },
    /// `RateLimiter::on_response`, and the limiter just before and after it.
    Response {
        now: Instant,
        throttled: bool,
        before: LimiterView,
        after: LimiterView,
    },
}

/// What a call is, without what it found or left: what the checks expect a machine to call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Key {
    Admit(Instant, Duration),
    AttemptEnd(Instant, GateSignal),
    ProbeNotSent(Instant),
    Acquire(Instant),
    Response(Instant, bool),
}

impl Call {
    pub(crate) fn key(&self) -> Key {
        match *self {
            Call::Admit { now, ask, .. } => Key::Admit(now, ask.lease),
            Call::AttemptEnd { now, signal, .. } => Key::AttemptEnd(now, signal),
            Call::ProbeNotSent { admitted, .. } => Key::ProbeNotSent(admitted),
            Call::Acquire { now, .. } => Key::Acquire(now),
            Call::Response { now, throttled, .. } => Key::Response(now, throttled),
        }
    }
}

/// What a gate's readers say at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GateView {
    /// `state(now)`.
    pub(crate) state: GateState,
    /// The end of the last closing (`state(Instant::ZERO)`'s `until`), unless the gate is
    /// open (or the closing ended at 0).
    pub(crate) until: Option<Instant>,
    pub(crate) closes: u64,
    pub(crate) reopens: u64,
    /// `failure_counts(now)`.
    pub(crate) counts: (u64, u64),
}

impl GateView {
    pub(crate) fn of(gate: &OriginGate, now: Instant) -> Self {
        GateView {
            state: gate.state(now),
            until: match gate.state(Instant::ZERO) {
                GateState::Closed { until, .. } => Some(until),
                _ => None,
            },
            closes: gate.closes(),
            reopens: gate.reopens(),
            counts: gate.failure_counts(now),
        }
    }
}

/// What a limiter's readers say (the floats compared bit for bit).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LimiterView {
    pub(crate) enabled_at: Option<Instant>,
    pub(crate) throttles: u64,
    pub(crate) measured: f64,
    pub(crate) fill_rate: f64,
    pub(crate) max_capacity: f64,
    pub(crate) capacity: f64,
}

impl LimiterView {
    pub(crate) fn of(limiter: &AdaptiveRateLimiter) -> Self {
        assert_eq!(
            limiter.is_enabled(),
            limiter.enabled_at().is_some(),
            "enabled, yet no instant it switched on (or the other way round)"
        );
        LimiterView {
            enabled_at: limiter.enabled_at(),
            throttles: limiter.throttles(),
            measured: limiter.measured_rate(),
            fill_rate: limiter.fill_rate(),
            max_capacity: limiter.max_capacity(),
            capacity: limiter.capacity(),
        }
    }

    fn bits(&self) -> (Option<Instant>, u64, [u64; 4]) {
        let floats = [
            self.measured,
            self.fill_rate,
            self.max_capacity,
            self.capacity,
        ];
        (self.enabled_at, self.throttles, floats.map(f64::to_bits))
    }
}

impl PartialEq for LimiterView {
    fn eq(&self, other: &Self) -> bool {
        self.bits() == other.bits()
    }
}

/// Every call the machines made since the last `take`, and the muting shared with their
/// ledgers.
#[derive(Clone, Default)]
pub(crate) struct Log {
    calls: Rc<RefCell<Vec<Call>>>,
    pub(crate) muted: Rc<Cell<bool>>,
}

impl Log {
    fn push(&self, call: Call) {
        self.calls.borrow_mut().push(call);
    }

    /// The calls since the last `take`.
    pub(crate) fn take(&self) -> Vec<Call> {
        core::mem::take(&mut *self.calls.borrow_mut())
    }

    fn muted(&self) -> bool {
        self.muted.get()
    }
}

/// The scenario's shared objects.
pub(crate) struct Objects {
    pub(crate) gate: Option<Rc<OriginGate>>,
    pub(crate) limiter: Option<Rc<AdaptiveRateLimiter>>,
    pub(crate) log: Log,
}

/// A gate or a limiter type a machine of the scenario may consult, built from the scenario's
/// objects.
pub(crate) trait Consulted: Clone + fmt::Debug {
    fn consult(objects: &Objects) -> Self;
}

impl Consulted for NoGate {
    fn consult(_: &Objects) -> Self {
        NoGate
    }
}

impl Consulted for NoRateLimiter {
    fn consult(_: &Objects) -> Self {
        NoRateLimiter
    }
}

/// A machine's handle to the scenario's gate.
#[derive(Clone)]
pub(crate) struct SharedGate {
    gate: Rc<OriginGate>,
    log: Log,
}

impl fmt::Debug for SharedGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the shared state: the handle is the only way to it, and a refused event must
        // make no call at all (checked), so it cannot change it either.
        f.write_str("SharedGate")
    }
}

impl Consulted for SharedGate {
    fn consult(objects: &Objects) -> Self {
        SharedGate {
            gate: objects.gate.clone().expect("a scenario with a gate"),
            log: objects.log.clone(),
        }
    }
}

impl Gate for SharedGate {
    fn admit(&self, now: Instant, ask: Ask) -> GateAdmission {
        if self.log.muted() {
            return GateAdmission::Open;
        }
        let answer = self.gate.admit(now, ask);
        self.log.push(Call::Admit {
            now,
            ask,
            answer,
            after: GateView::of(&self.gate, now),
        });
        answer
    }

    fn on_attempt_end(&self, now: Instant, signal: GateSignal) {
        if self.log.muted() {
            return;
        }
        let before = GateView::of(&self.gate, now);
        self.gate.on_attempt_end(now, signal);
        self.log.push(Call::AttemptEnd {
            now,
            signal,
            before,
            after: GateView::of(&self.gate, now),
        });
    }

    fn probe_not_sent(&self, admitted: Instant) {
        if self.log.muted() {
            return;
        }
        let before = GateView::of(&self.gate, admitted);
        self.gate.probe_not_sent(admitted);
        self.log.push(Call::ProbeNotSent {
            admitted,
            before,
            after: GateView::of(&self.gate, admitted),
        });
    }
}

/// A machine's handle to the scenario's limiter.
#[derive(Clone)]
pub(crate) struct SharedLimiter {
    limiter: Rc<AdaptiveRateLimiter>,
    log: Log,
}

impl fmt::Debug for SharedLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the shared state, as for the gate.
        f.write_str("SharedLimiter")
    }
}

impl Consulted for SharedLimiter {
    fn consult(objects: &Objects) -> Self {
        SharedLimiter {
            limiter: objects.limiter.clone().expect("a scenario with a limiter"),
            log: objects.log.clone(),
        }
    }
}

impl RateLimiter for SharedLimiter {
    fn acquire(&self, now: Instant) -> Result<(), Instant> {
        if self.log.muted() {
            return Ok(());
        }
        let before = LimiterView::of(&self.limiter);
        let answer = self.limiter.acquire(now);
        self.log.push(Call::Acquire {
            now,
            answer,
            before,
            after: LimiterView::of(&self.limiter),
        });
        answer
    }

    fn on_response(&self, now: Instant, throttled: bool) {
        if self.log.muted() {
            return;
        }
        let before = LimiterView::of(&self.limiter);
        self.limiter.on_response(now, throttled);
        self.log.push(Call::Response {
            now,
            throttled,
            before,
            after: LimiterView::of(&self.limiter),
        });
    }
}
