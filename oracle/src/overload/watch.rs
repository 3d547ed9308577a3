//! The rules of the shared objects, and of how a machine consults them, checked call by call
//! from the log: what each machine must call and when (from what the driver fed it), what it
//! must decide from the answers, and what the objects may answer (from what they were told,
//! never from their own formulas).

use core::time::Duration;

use backstop_core::{
    Ask, AttemptError, AttemptOutcome, Decision, DelaySource, ErrorClass, ErrorKind, GateAdmission,
    GateSignal, GateState, Instant, Policy, Reopening, Slot, StopReason, WaitReason,
};

use super::decode::{GateSetup, LimiterSetup, Trip};
use super::shared::{Call, GateView, Key, LimiterView};
use crate::machine::{Action, Model, ServerAsked};

/// What the model knew of an operation before a step.
#[derive(Clone, Copy, Debug)]
pub(super) struct Before {
    pub(super) now: Instant,
    pub(super) in_flight: Option<Instant>,
    pub(super) started_at: Instant,
    pub(super) admitted: bool,
    pub(super) sends: u32,
    pub(super) last: Option<AttemptOutcome>,
    pub(super) done: bool,
    pub(super) deadline: Instant,
}

impl Before {
    pub(super) fn of(model: &Model) -> Self {
        Before {
            now: model.now,
            in_flight: model.in_flight,
            started_at: model.started_at,
            admitted: model.admitted,
            sends: model.sends,
            last: model.last,
            done: model.terminal.is_some(),
            deadline: model.deadline,
        }
    }
}

/// What the checks keep of one operation beyond its model.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Consulting {
    /// The gate admitted the attempt due (or in flight) as its probe.
    pub(super) probe: bool,
    /// When the gate admitted it (while `probe`).
    pub(super) probe_admitted: Instant,
    /// The wait the operation is held back in, from a poll that asked: its end and source.
    pub(super) held: Option<(Instant, DelaySource)>,
    /// The slot a reopening gate set aside for the operation's attempt due: its next ask
    /// must hold it.
    pub(super) slot: Option<Slot>,
    /// When the gate's last answer held the operation back (the instant it asked then), if
    /// it did: its next ask says it returns from that hold.
    pub(super) gate_held: Option<Instant>,
}

/// The checks' view of the shared objects.
pub(crate) struct Watch {
    gate: Option<GateWatch>,
    limiter: Option<LimiterWatch>,
}

/// What the limiter has been told, as far as the rules need it.
struct LimiterWatch {
    /// The first throttle's `now`: the limiter is on from it.
    first_throttle: Option<Instant>,
    throttles: u64,
    /// The latest `now` the bucket was refilled to (every response, every `acquire` while
    /// on).
    refilled: Option<Instant>,
    /// The last call was a refusal that said a token would be there at this instant.
    promised: Option<Instant>,
    /// The measured rate's books: responses in the current half-second, its number, the rate.
    count: u64,
    bucket: u64,
    measured: f64,
}

/// What the gate has been told, as far as the rules need it.
struct GateWatch {
    setup: GateSetup,
    /// The end of the closing the back-off signals reported since the gate last reopened
    /// (their latest end): no attempt is admitted before it.
    closed_until: Option<Instant>,
    /// The lease of the last probe admitted, until the gate closes or opens again: no other
    /// probe before its end.
    probe_lease: Option<Instant>,
    /// When the last probe was admitted: a hand-back names it so.
    last_probe: Option<Instant>,
    /// When the gate last opened again (the failure-ratio trip ignores attempts started
    /// before).
    opened_at: Instant,
    closes: u64,
    reopens: u64,
}

impl Watch {
    pub(crate) fn new(gate: Option<GateSetup>, limiter: Option<LimiterSetup>) -> Self {
        Watch {
            gate: gate.map(|setup| GateWatch {
                setup,
                closed_until: None,
                probe_lease: None,
                last_probe: None,
                opened_at: Instant::ZERO,
                closes: 0,
                reopens: 0,
            }),
            limiter: limiter.map(|setup| LimiterWatch {
                first_throttle: None,
                throttles: 0,
                refilled: None,
                promised: None,
                count: 0,
                // `with_start`: the first bucket starts at `floor(start)` seconds.
                bucket: setup.start.map_or(0, |s| s.as_duration().as_secs() * 2),
                measured: 0.0,
            }),
        }
    }

    /// Checks every call of a step against the objects' rules, in order.
    pub(crate) fn calls(&mut self, calls: &[Call]) {
        for call in calls {
            match call {
                Call::Admit { .. } | Call::AttemptEnd { .. } | Call::ProbeNotSent { .. } => self
                    .gate
                    .as_mut()
                    .expect("a gate call without a gate")
                    .call(call),
                Call::Acquire { .. } | Call::Response { .. } => self
                    .limiter
                    .as_mut()
                    .expect("a limiter call without a limiter")
                    .call(call),
            }
        }
    }

    /// The calls an attempt's end must make: the limiter hears of a response, then the gate
    /// of the end (not of the caller's abort nor of a permanent error, which say nothing of
    /// the server).
    fn attempt_end(
        &self,
        now: Instant,
        before: &Before,
        op: &mut Consulting,
        end: End,
        policy: &Policy,
    ) -> Vec<Key> {
        let mut keys = Vec::new();
        let (back_off, failed) = match end {
            End::Response {
                status,
                retryable,
                asked,
            } => {
                let retry_after = if asked.too_many || status == 503 {
                    asked.retry_after
                } else {
                    None
                };
                if self.limiter.is_some() {
                    // A throttle: a 429 (or a 403 that is a rate-limit answer), or a
                    // 503 with a usable `Retry-After`.
                    let throttled = asked.too_many || retry_after.is_some();
                    keys.push(Key::Response(now, throttled));
                }
                let back_off = retry_after
                    .or(asked.rate_limit)
                    .map(|d| d.min(policy.max_retry_after()));
                (back_off, retryable)
            }
            End::Error(class) => match class {
                ErrorClass::Aborted | ErrorClass::Permanent => return keys,
                _ => (None, true),
            },
        };
        if self.gate.is_some() {
            let signal = GateSignal {
                started: before.started_at,
                back_off,
                failed,
                probe: core::mem::take(&mut op.probe),
            };
            keys.push(Key::AttemptEnd(now, signal));
        }
        keys
    }

    /// Checks what a poll of an operation called and decided, and learns from it.
    #[allow(clippy::too_many_arguments)] // the step's every part, as the caller has them
    pub(super) fn polled(
        &self,
        fed: Instant,
        before: &Before,
        model: &mut Model,
        op: &mut Consulting,
        d: &Decision,
        calls: &[Call],
        policy: &Policy,
    ) {
        let now = before.now.max(fed);
        let mut rest = calls;
        // What the last attempt ended with, as of this poll.
        let mut last = before.last;
        // A timeout the poll applies is the attempt's end (and the cause of a retry it decides).
        if let Some(timeout_at) = before.in_flight {
            if now >= timeout_at {
                last = Some(AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout)));
                let end = End::Error(ErrorClass::Timeout);
                let keys = self.attempt_end(now, before, op, end, policy);
                let (ended, after) = rest.split_at(keys.len().min(rest.len()));
                let got: Vec<Key> = ended.iter().map(Call::key).collect();
                assert_eq!(
                    got, keys,
                    "the calls of a timeout applied by a poll at {now:?}"
                );
                rest = after;
            }
        }
        let sends = before.sends;
        if before.admitted && !before.done && d.outcome().is_some() {
            // The deadline ended it with its send admitted, unsent.
            let keys = self.hand_back(op);
            let (handed, after) = rest.split_at(keys.len().min(rest.len()));
            let got: Vec<Key> = handed.iter().map(Call::key).collect();
            assert_eq!(
                got, keys,
                "a probe its operation ended before sending is handed back at once, naming \
                 its admission ({d:?})"
            );
            rest = after;
        }
        if rest.is_empty() {
            self.polled_without_asking(before, op, d);
            return;
        }
        assert!(
            !before.admitted,
            "a machine whose send was admitted asked again: {rest:?}"
        );
        assert!(!before.done, "a machine that is done asked: {rest:?}");
        let lease = policy
            .attempt_timeout()
            .min(model.deadline.saturating_duration_since(now));
        let mut held = None;
        let mut probe = false;
        let mut paced = None;
        let first = sends == 0;
        let fail_fast = first && policy.fail_fast_when_paused();
        if self.gate.is_some() {
            let Call::Admit {
                now: at,
                ask,
                answer,
                ..
            } = rest[0]
            else {
                panic!("an admission that does not ask the gate first: {rest:?}")
            };
            assert_eq!(at, now, "the gate asked at another time than the machine's");
            assert_eq!(
                ask.lease, lease,
                "the probe's lease is the attempt's timeout"
            );
            // Failing fast, no slot but the present is of use.
            let deadline = if fail_fast { now } else { model.deadline };
            assert_eq!(
                ask.deadline,
                Some(deadline),
                "the gate is told the operation's deadline (now, failing fast)"
            );
            let held_slot = core::mem::take(&mut op.slot);
            assert_eq!(
                ask.slot, held_slot,
                "the gate is asked holding the slot it gave, and only it"
            );
            assert_eq!(
                ask.returning, op.gate_held,
                "an operation returns to the gate exactly when its last answer held it back, \
                 from the instant of that answer"
            );
            op.gate_held = matches!(
                answer,
                GateAdmission::Closed(_) | GateAdmission::AwaitProbe(_) | GateAdmission::Paced(_)
            )
            .then_some(now);
            rest = &rest[1..];
            match answer {
                // A slot it held is spent, whatever the limiter says.
                GateAdmission::Open => {}
                GateAdmission::Probe => probe = true,
                GateAdmission::Closed(t) | GateAdmission::AwaitProbe(t) => {
                    held = Some((t, DelaySource::OriginPaused, StopReason::OriginPaused));
                }
                GateAdmission::Paced(slot) => {
                    held = Some((slot.at, DelaySource::OriginPaused, StopReason::OriginPaused));
                    paced = Some(slot);
                }
                other => panic!("a gate admission this checker does not know: {other:?}"),
            }
        }
        if held.is_none() && self.limiter.is_some() {
            let Some(&Call::Acquire {
                now: at, answer, ..
            }) = rest.first()
            else {
                panic!("an attempt the gate admitted that the limiter was not asked for: {rest:?}")
            };
            assert_eq!(
                at, now,
                "the limiter asked at another time than the machine's"
            );
            rest = &rest[1..];
            if let Err(t) = answer {
                if probe {
                    // The probe the limiter held back is handed back to the gate at once.
                    let Some(&Call::ProbeNotSent { admitted: at, .. }) = rest.first() else {
                        panic!(
                            "the gate's probe was held back by the limiter and not handed back: \
                             the gate would hold every operation for the probe's lease: {rest:?}"
                        )
                    };
                    assert_eq!(at, now, "the probe handed back at another time");
                    rest = &rest[1..];
                }
                held = Some((t, DelaySource::RateLimited, StopReason::RateLimited));
            }
        }
        assert!(
            rest.is_empty(),
            "calls beyond the admission, or a limiter asked while the gate held the attempt \
             back: {rest:?}"
        );
        let Some((until, source, reason)) = held else {
            assert!(
                matches!(d, Decision::Send { attempt, .. } if *attempt == sends + 1),
                "admitted, yet {d:?}"
            );
            model.admitted = true;
            op.probe = probe;
            op.probe_admitted = now;
            op.held = None;
            return;
        };
        // Not before the next nanosecond: a wait ends after `now`.
        let until = until.max(now.saturating_add(Duration::from_nanos(1)));
        if until >= model.deadline || fail_fast {
            let o = d.outcome().unwrap_or_else(|| {
                panic!(
                    "held back until {until:?} past the deadline {:?} (or failing fast), yet {d:?}",
                    model.deadline
                )
            });
            assert_eq!(o.reason, reason, "held back by the {source:?}: {d:?}");
            op.held = None;
        } else {
            let expected = Decision::Wait {
                until,
                delay: until.saturating_duration_since(now),
                reason: WaitReason {
                    cause: if first { None } else { last },
                    source,
                    next_attempt: sends + 1,
                },
            };
            assert_eq!(*d, expected, "held back by the {source:?} until {until:?}");
            op.held = Some((until, source));
            op.slot = paced;
        }
    }

    /// A poll that asked nothing: its send was admitted already, or it is still held back in
    /// the same wait, or nothing was due.
    fn polled_without_asking(&self, before: &Before, op: &Consulting, d: &Decision) {
        match *d {
            Decision::Send { .. } => assert!(
                before.admitted,
                "a send that the gate and the limiter did not admit: {d:?}"
            ),
            Decision::Wait { until, reason, .. }
                if matches!(
                    reason.source,
                    DelaySource::OriginPaused | DelaySource::RateLimited
                ) =>
            {
                assert_eq!(
                    op.held,
                    Some((until, reason.source)),
                    "a wait for a shared object that did not say so: {d:?}"
                );
            }
            Decision::Return(o) | Decision::GiveUp(o)
                if matches!(o.reason, StopReason::OriginPaused | StopReason::RateLimited) =>
            {
                assert!(before.done, "held back without asking: {d:?}");
            }
            _ => {}
        }
    }

    /// Checks what an event fed to an operation called.
    #[allow(clippy::too_many_arguments)] // the step's every part, as the caller has them
    pub(super) fn handled(
        &self,
        fed: Instant,
        before: &Before,
        op: &mut Consulting,
        action: &Action,
        asked: ServerAsked,
        result: Result<(), backstop_core::MisuseError>,
        calls: &[Call],
        policy: &Policy,
    ) {
        let got: Vec<Key> = calls.iter().map(Call::key).collect();
        if result.is_err() {
            assert_eq!(got, [], "a refused {action:?} called a shared object");
            return;
        }
        let now = before.now.max(fed);
        let expected = match action {
            Action::Response { status, .. } => {
                let end = End::Response {
                    status: *status,
                    retryable: asked.retryable,
                    asked,
                };
                self.attempt_end(now, before, op, end, policy)
            }
            Action::Error(e) => self.attempt_end(now, before, op, End::Error(e.class), policy),
            Action::TimePassed => match before.in_flight {
                // The machine applies the timeout it reached.
                Some(timeout_at) if now >= timeout_at => {
                    let end = End::Error(ErrorClass::Timeout);
                    self.attempt_end(now, before, op, end, policy)
                }
                // Or the deadline, with its send admitted and unsent.
                _ if before.admitted && !before.done && now >= before.deadline => {
                    self.hand_back(op)
                }
                _ => Vec::new(),
            },
            Action::Started | Action::Abort | Action::Poll => Vec::new(),
        };
        assert_eq!(got, expected, "the calls of {action:?} at {now:?}");
        if matches!(action, Action::TimePassed) {
            // A wait that ended: the next poll asks again.
            if op.held.is_some_and(|(until, _)| now >= until) {
                op.held = None;
            }
        }
    }

    /// The calls of an operation that ends with its send admitted and not sent: the gate's
    /// probe, if it is one, is handed back at once, named by the instant it was admitted (it
    /// would otherwise hold every operation to the origin until its lease ran out).
    fn hand_back(&self, op: &mut Consulting) -> Vec<Key> {
        if core::mem::take(&mut op.probe) {
            vec![Key::ProbeNotSent(op.probe_admitted)]
        } else {
            Vec::new()
        }
    }

    /// Checks what an abort of an operation called.
    pub(super) fn aborted(&self, before: &Before, op: &mut Consulting, calls: &[Call]) {
        let expected = if before.admitted && !before.done {
            self.hand_back(op)
        } else {
            Vec::new()
        };
        let got: Vec<Key> = calls.iter().map(Call::key).collect();
        assert_eq!(
            got, expected,
            "an abort calls no shared object, but to hand back a probe admitted and unsent"
        );
    }

    /// Checks that hold after every step: what the limiter's readers say.
    pub(crate) fn after(&self, limiter: Option<LimiterView>) {
        if let Some(v) = limiter {
            assert!(v.capacity >= 0.0, "a negative capacity: {v:?}");
            assert!(
                v.capacity <= v.max_capacity,
                "above the bucket's size: {v:?}"
            );
            assert!(v.fill_rate >= 0.5, "a fill rate below 0.5: {v:?}");
            assert!(
                v.max_capacity >= 1.0,
                "a bucket smaller than a token: {v:?}"
            );
            let w = self.limiter.as_ref().expect("a limiter");
            assert_eq!(
                (v.enabled_at, v.throttles),
                (w.first_throttle, w.throttles),
                "on from the first throttle, counting each"
            );
        }
    }
}

/// The gate returns early on any back-off signal, a zero one included, before the trip is
/// evaluated (core/src/overload/gate.rs): tolerated until fixed, so that the fuzzer can find
/// anything else (set it to `false` to see the failures).
const KNOWN_ZERO_BACK_OFF_SKIPS_THE_TRIP: bool = false;

/// A refusal says when the bucket will hold a token, rounded up to the next nanosecond, but
/// the refill at that instant (`capacity + dt * fill_rate`, in floats) can fall short of 1 by
/// an ulp (`0.9999999999999999`), and the caller is refused again and told to come back a
/// nanosecond later (core/src/overload/rate_limiter.rs, `State::acquire`): tolerated within
/// float rounding until fixed, pinned by core/tests/properties.rs.
const KNOWN_TOKEN_SHORT_BY_ROUNDING: bool = false;

/// How an attempt ended, for what the gate and the limiter must hear of it.
#[derive(Clone, Copy, Debug)]
enum End {
    Response {
        status: u16,
        retryable: bool,
        asked: ServerAsked,
    },
    Error(ErrorClass),
}

impl GateWatch {
    fn call(&mut self, call: &Call) {
        let after = match *call {
            Call::Admit {
                now,
                ask,
                answer,
                after,
            } => {
                self.admitted(now, ask, answer, after);
                after
            }
            Call::AttemptEnd {
                now,
                signal,
                before,
                after,
            } => {
                self.ended(now, signal, before, after);
                after
            }
            Call::ProbeNotSent {
                admitted,
                before,
                after,
            } => {
                if self.last_probe == Some(admitted) {
                    // Its lease goes: the next caller may probe at once.
                    assert!(
                        !matches!(
                            after.state,
                            GateState::HalfOpen {
                                probe_lease: Some(_),
                                ..
                            }
                        ),
                        "the gate kept the lease of the probe admitted at {admitted:?}, handed \
                         back: {after:?}"
                    );
                    self.probe_lease = None;
                } else {
                    // A later probe keeps its lease: the hand-back changes nothing.
                    assert_eq!(
                        after, before,
                        "the hand-back of a probe admitted at {admitted:?} changed the gate, \
                         whose last probe was admitted at {:?}",
                        self.last_probe
                    );
                }
                after
            }
            _ => unreachable!("a limiter call"),
        };
        let (closes, reopens) = (after.closes, after.reopens);
        if (closes, reopens) != (self.closes, self.reopens) {
            self.probe_lease = None;
        }
        (self.closes, self.reopens) = (closes, reopens);
    }

    /// An admission: never before the end of a closing the server asked for, one probe at
    /// a time, every caller told its own reopening within the closing's spread.
    fn admitted(&mut self, now: Instant, ask: Ask, answer: GateAdmission, after: GateView) {
        let lease = ask.lease;
        assert_eq!(
            (after.closes, after.reopens),
            (self.closes, self.reopens),
            "an admission opened or closed the gate"
        );
        let past_closing = self.closed_until.is_none_or(|u| now >= u);
        let reopening = matches!(after.state, GateState::Reopening { .. });
        if let (Some(slot), true) = (ask.slot, reopening) {
            if slot.reopening == self.reopens {
                assert_eq!(
                    answer,
                    GateAdmission::Open,
                    "the holder of a slot of this reopening was not admitted"
                );
            }
        }
        match answer {
            GateAdmission::Open => {
                assert_eq!(
                    self.closed_until, None,
                    "open at {now:?}, though a back-off signal closed the gate and no probe answered"
                );
                assert!(
                    after.state == GateState::Open || reopening,
                    "admitted Open by a gate that is {:?}",
                    after.state
                );
                if let GateState::Reopening { next_slot, .. } = after.state {
                    // Each admission while reopening takes the slot at hand, but a holder's.
                    assert!(
                        next_slot > now || ask.slot.is_some(),
                        "admitted at {now:?} while reopening, with no slot taken: {:?}",
                        after.state
                    );
                }
            }
            GateAdmission::Paced(slot) => {
                assert_eq!(self.closed_until, None, "paced before a probe answered");
                assert!(
                    self.setup.reopening != Reopening::AtOnce,
                    "a gate that reopens at once paced a caller"
                );
                let GateState::Reopening { since, next_slot } = after.state else {
                    panic!("told Paced at {now:?} by a gate that is {:?}", after.state)
                };
                assert_eq!(slot.reopening, self.reopens, "a slot of another reopening");
                assert!(
                    slot.at > now && slot.at >= since,
                    "a slot {slot:?} not ahead of {now:?}"
                );
                let usable = ask.deadline.is_none_or(|d| slot.at < d);
                assert!(
                    !usable || next_slot > slot.at,
                    "a slot {slot:?} given without setting it aside: {:?}",
                    after.state
                );
            }
            GateAdmission::Probe => {
                assert!(
                    past_closing,
                    "a probe at {now:?} before the end of the closing the server asked for ({:?})",
                    self.closed_until
                );
                assert!(
                    self.probe_lease.is_none_or(|e| now >= e),
                    "a second probe at {now:?} while the first one's lease runs until {:?}",
                    self.probe_lease
                );
                let lease_end = now.saturating_add(lease);
                assert!(
                    matches!(after.state, GateState::HalfOpen { probe_lease, .. }
                        if probe_lease == (lease_end > now).then_some(lease_end)),
                    "a probe admitted with a {lease:?} lease at {now:?}: {:?}",
                    after.state
                );
                self.probe_lease = Some(lease_end);
                self.last_probe = Some(now);
            }
            GateAdmission::Closed(t) => {
                let GateState::Closed { until, spread, .. } = after.state else {
                    panic!("told Closed at {now:?} by a gate that is {:?}", after.state)
                };
                assert!(until > now, "closed, past the closing's end");
                assert!(
                    t >= until && t <= until.saturating_add(spread),
                    "a reopening {t:?} outside [{until:?}, + {spread:?}]"
                );
                assert!(
                    spread <= self.setup.spread,
                    "a spread {spread:?} above the configured {:?}",
                    self.setup.spread
                );
                assert!(
                    self.closed_until.is_none_or(|u| until >= u),
                    "a closing {until:?} shorter than the server asked ({:?})",
                    self.closed_until
                );
            }
            GateAdmission::AwaitProbe(t) => {
                assert!(
                    past_closing,
                    "half-open at {now:?} before the end of the closing ({:?})",
                    self.closed_until
                );
                assert!(
                    self.probe_lease.is_some_and(|e| now < e),
                    "told to await a probe at {now:?} with none in its lease ({:?})",
                    self.probe_lease
                );
                let recheck = self.setup.recheck;
                let earliest = now.saturating_add(recheck);
                assert!(
                    t >= earliest && t <= earliest.saturating_add(recheck),
                    "a recheck {t:?} outside now + [{recheck:?}, 2 × {recheck:?}] from {now:?}"
                );
            }
            other => panic!("a gate admission this checker does not know: {other:?}"),
        }
    }

    /// An attempt's end: a back-off signal closes the gate at least until its end; only a
    /// probe's answer opens it again; the trip closes it exactly when the window's ratio is
    /// reached.
    fn ended(&mut self, now: Instant, signal: GateSignal, before: GateView, after: GateView) {
        let closed = after.closes - before.closes;
        let reopened = after.reopens - before.reopens;
        assert!(
            closed + reopened <= 1,
            "one call closed or opened the gate twice"
        );
        let back_off = signal.back_off.filter(|d| !d.is_zero());
        let trip = self.setup.trip;
        if reopened == 1 {
            assert!(
                signal.probe && signal.back_off.is_none(),
                "opened again by {signal:?}, which is no probe's answer without a back-off"
            );
            assert!(
                !(signal.failed && trip.is_some()),
                "a failed probe opened the gate although the trip is on"
            );
            assert!(
                !matches!(
                    before.state,
                    GateState::Open | GateState::Closed { .. } | GateState::Reopening { .. }
                ),
                "opened again from {:?}",
                before.state
            );
            let expected_open = self.setup.reopening == Reopening::AtOnce;
            assert!(
                if expected_open {
                    after.state == GateState::Open
                } else {
                    matches!(after.state, GateState::Reopening { since, next_slot }
                        if since == now && next_slot == now)
                },
                "opened ({:?}), yet {:?}",
                self.setup.reopening,
                after.state
            );
            self.closed_until = None;
            self.opened_at = now;
        }
        if let Some(d) = back_off {
            let end = now.saturating_add(d);
            self.closed_until = Some(self.closed_until.map_or(end, |u| u.max(end)));
            if end > now {
                assert!(
                    matches!(after.state, GateState::Closed { until, .. } if until >= end),
                    "a {d:?} back-off at {now:?} left the gate {:?}",
                    after.state
                );
            }
        }
        if closed == 1 && signal.back_off.is_none() {
            let trip = trip.expect("closed without a back-off signal, and no trip");
            assert!(signal.failed, "a success closed the gate");
            let end = now.saturating_add(trip.break_duration);
            assert!(
                matches!(after.state, GateState::Closed { until, .. } if until == end)
                    || end <= now,
                "a trip at {now:?} closes for the break {:?}: {:?}",
                trip.break_duration,
                after.state
            );
            if !signal.probe {
                assert!(
                    reached(&trip, after.counts),
                    "tripped on {:?}, below the ratio",
                    after.counts
                );
            }
        }
        if let Some(trip) = trip {
            let fresh = signal.started >= self.opened_at;
            // A reopening gate counts and trips as an open one.
            let was_open = matches!(before.state, GateState::Open | GateState::Reopening { .. });
            // KNOWN_ZERO_BACK_OFF_SKIPS_THE_TRIP: a failure whose back-off is zero (a 503
            // with `Retry-After: 0`) is counted but never trips the gate, whatever the ratio;
            // pinned by core/tests/properties.rs, tolerated here until it is fixed.
            let skipped = KNOWN_ZERO_BACK_OFF_SKIPS_THE_TRIP && signal.back_off.is_some();
            if was_open
                && signal.failed
                && back_off.is_none()
                && !skipped
                && fresh
                && reached(&trip, after.counts)
            {
                assert_eq!(
                    closed, 1,
                    "the window's ratio is reached ({:?}), yet open",
                    after.counts
                );
            }
            assert!(
                after.counts.0 <= after.counts.1,
                "more failures than attempts: {:?}",
                after.counts
            );
        } else {
            assert_eq!(after.counts, (0, 0), "failure counts without a trip");
        }
        if signal.back_off.is_none() && !signal.probe && trip.is_none() {
            assert_eq!(
                (closed, reopened, after.state == before.state),
                (0, 0, true),
                "an ordinary end without a back-off changed the gate"
            );
        }
    }
}

/// Whether a window's `(failures, attempts)` trips the gate.
fn reached(trip: &Trip, (failures, attempts): (u64, u64)) -> bool {
    attempts >= u64::from(trip.minimum_throughput)
        && failures * 1000 >= u64::from(trip.ratio_per_mille) * attempts
}

impl LimiterWatch {
    fn call(&mut self, call: &Call) {
        match *call {
            Call::Acquire {
                now,
                answer,
                before,
                after,
            } => self.acquired(now, answer, before, after),
            Call::Response {
                now,
                throttled,
                before,
                after,
            } => self.responded(now, throttled, before, after),
            _ => unreachable!("a gate call"),
        }
    }

    /// `acquire`: off, every attempt goes and nothing changes; on, one whole token is taken,
    /// else nothing is and the answer is when one will be there (at most `1 / fill_rate`
    /// from the latest refill), and it is.
    fn acquired(
        &mut self,
        now: Instant,
        answer: Result<(), Instant>,
        before: LimiterView,
        after: LimiterView,
    ) {
        let Some(_) = before.enabled_at else {
            assert_eq!(answer, Ok(()), "a limiter that is off refused at {now:?}");
            assert_eq!(
                after, before,
                "an acquire of a limiter that is off changed it"
            );
            return;
        };
        assert_eq!(
            (after.fill_rate, after.max_capacity, after.measured),
            (before.fill_rate, before.max_capacity, before.measured),
            "an acquire changed the rate"
        );
        let refilled = self.refilled.map_or(now, |r| r.max(now));
        self.refilled = Some(refilled);
        if let Some(promised) = self.promised.take() {
            // KNOWN_TOKEN_SHORT_BY_ROUNDING: see the constant.
            let rounding = KNOWN_TOKEN_SHORT_BY_ROUNDING && after.capacity >= 1.0 - 1e-9;
            assert!(
                now < promised || answer.is_ok() || rounding,
                "told a token would be there at {promised:?}, refused at {now:?}: {before:?}"
            );
        }
        match answer {
            Ok(()) => assert!(after.capacity >= 0.0, "a token taken below zero: {after:?}"),
            Err(t) => {
                assert!(
                    after.capacity < 1.0,
                    "refused with a whole token: {after:?}"
                );
                assert!(
                    after.capacity >= before.capacity,
                    "a refusal took something: {before:?} then {after:?}"
                );
                assert!(t > now, "told to ask again at {t:?}, not after {now:?}");
                let longest = Duration::from_secs(2) + Duration::from_nanos(1);
                assert!(
                    t <= refilled.saturating_add(longest),
                    "told to ask again at {t:?}, more than 2 s after the refill at {refilled:?}"
                );
                self.promised = Some(t);
            }
        }
    }

    /// `on_response`: measured in half-second buckets; on from the first throttle, counting
    /// each; the rate never above twice the measured one, at least 0.5; the bucket's size the
    /// rate, at least a token; the bucket cut to it.
    fn responded(
        &mut self,
        now: Instant,
        throttled: bool,
        before: LimiterView,
        after: LimiterView,
    ) {
        self.promised = None;
        self.refilled = Some(self.refilled.map_or(now, |r| r.max(now)));
        let bucket = now.as_duration().as_nanos() / 500_000_000;
        let bucket = u64::try_from(bucket).unwrap_or(u64::MAX);
        self.count += 1;
        if bucket > self.bucket {
            let seconds = (bucket - self.bucket) as f64 / 2.0;
            self.measured = 0.8 * self.count as f64 / seconds + 0.2 * self.measured;
            self.count = 0;
            self.bucket = bucket;
        }
        let close = (after.measured - self.measured).abs() <= 1e-9 * self.measured.abs().max(1.0);
        assert!(
            close,
            "measured {} by the rule, the limiter says {}",
            self.measured, after.measured
        );
        if throttled {
            self.throttles += 1;
            self.first_throttle = self.first_throttle.or(Some(now));
        }
        assert_eq!(
            (after.enabled_at, after.throttles),
            (self.first_throttle, self.throttles),
            "on from the first throttle, counting each"
        );
        let _ = before;
        assert!(
            after.fill_rate <= (2.0 * after.measured).max(0.5),
            "a rate above twice the measured one: {after:?}"
        );
        assert_eq!(
            after.max_capacity,
            after.fill_rate.max(1.0),
            "the bucket's size is the rate, at least a token: {after:?}"
        );
    }
}
