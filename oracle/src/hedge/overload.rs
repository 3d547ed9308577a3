//! Checks for `HedgeMachine` with an origin gate and/or a send-rate limiter: the hedging
//! scenario's machine (same policy, request, budget, latencies and steps) built with
//! `with_overload` on the overload oracle's logged objects, set up from the scenario's seed
//! (the gate's settings as the overload oracle decodes them, perhaps closed and the limiter
//! perhaps on at the start, as another operation's answer would leave them). Every call the
//! machine makes is logged and checked in order, after every step, with the objects' own rules
//! (`crate::overload`'s watch):
//!
//! - the gate (then, only if the gate admits the copy, the limiter) is asked exactly when a
//!   copy is due and not yet admitted, in a poll, at its `now`, once: with the copy's timeout
//!   as the probe's lease, the deadline (`now` for a first copy under `fail_fast_when_paused`)
//!   and the slot a `Paced` answer gave; a second poll asks nothing, a refused event calls
//!   nothing, a clone's calls reach nothing;
//! - an admitted copy is a `Send` of the next copy, repeated without asking again until it
//!   starts; a `Started` is accepted only after that;
//! - a held copy is not sent: a hold until `t` (at least a nanosecond away) before the
//!   deadline is a `Wait` that ends by `t` (at `t` with no copy in flight); one at or past the
//!   deadline (or any hold of a first copy failing fast) suppresses the copy, and the outcome
//!   says why (`origin_paused`, `rate_limited`);
//! - every copy's answer is reported once, at the machine's `now`: a response to the limiter
//!   (a 429, or a 503 with a usable `Retry-After`, throttles) then to the gate (its start, its
//!   back-off, failed unless it won, whether it was the probe); a transient error and a
//!   timeout to the gate as a failure; the caller's abort, a permanent error and a cancelled
//!   copy are not reported;
//! - a probe is handed back (`probe_not_sent`, naming its admission) when the copy admitted
//!   as the probe is cancelled before it answers (not for its timeout, which is its answer),
//!   or when it is never sent (the limiter held it, or the operation moved on);
//! - at the end no grant is held for a copy not sent; the same input run twice gives the same
//!   decisions, calls and objects' state.

use core::time::Duration;
use std::rc::Rc;

use backstop_core::{
    Ask, CancelReason, ErrorClass, Gate, GateAdmission, GateSignal, HedgeDecision, HedgeEvent,
    HedgeMachine, Instant, MisuseError, NoGate, NoRateLimiter, OriginGate, Policy, RateLimiter,
    Slot, StopReason,
};

use super::books::{muted, Books, Samples};
use super::decode::{Action, CopyRef, Scenario};
use super::parts;
use crate::machine::{event_of, time_of, Action as RetryAction, ServerAsked};
use crate::overload::shared::{Call, Consulted, GateView, LimiterView, Log, Objects};
use crate::overload::shared::{SharedGate, SharedLimiter};
use crate::overload::watch::Watch;
use crate::overload::{decode_gate, GateSetup, LimiterSetup};
use crate::Bytes;

type Machine<G, RL> = HedgeMachine<rand_pcg::Pcg64Mcg, Books, Samples, G, RL>;

/// What a run produced, compared between two runs for determinism.
#[derive(Debug, PartialEq)]
pub(super) enum Trace {
    Polled(HedgeDecision),
    Handled(Result<(), MisuseError>),
    Calls(Vec<Call>),
    NextDeadline(Option<Instant>),
    Gate(Option<GateView>),
    Limiter(Option<LimiterView>),
}

/// The objects the seed sets up: which there are, the gate's settings, and what another
/// operation left them in at the start.
struct Setup {
    gate: Option<GateSetup>,
    limiter: Option<LimiterSetup>,
    /// A back-off signal the gate heard at the start.
    closed_for: Option<Duration>,
    /// The limiter heard a throttle at the start.
    throttled: bool,
}

impl Setup {
    fn of(s: &Scenario) -> Self {
        let bytes = s.seed.to_le_bytes();
        let mut r = Bytes::new(&bytes);
        let gate = decode_gate(&mut r);
        let bits = s.seed.rotate_left(17);
        Setup {
            gate: (bits % 4 != 2).then_some(gate),
            limiter: (bits % 4 >= 2).then_some(LimiterSetup::default()),
            closed_for: match (bits >> 2) % 6 {
                0 | 1 => None,
                2 => Some(Duration::from_millis(1)),
                3 => Some(Duration::from_millis(500)),
                4 => Some(Duration::from_secs(2)),
                _ => Some(Duration::from_secs(60)),
            },
            throttled: (bits >> 5) & 1 == 1,
        }
    }
}

/// Runs the scenario with the objects its seed sets up, checking every call; `None` when it
/// sets up none (the plain run covers it) or a gate `OriginGate::new` refuses.
pub(super) fn run(s: &Scenario, policy: Policy) -> Option<Vec<Trace>> {
    let setup = Setup::of(s);
    if setup
        .gate
        .is_some_and(|g| OriginGate::new(g.config).is_err())
    {
        return None;
    }
    Some(match (setup.gate.is_some(), setup.limiter.is_some()) {
        (true, true) => run_with::<SharedGate, SharedLimiter>(s, policy, &setup),
        (true, false) => run_with::<SharedGate, NoRateLimiter>(s, policy, &setup),
        (false, true) => run_with::<NoGate, SharedLimiter>(s, policy, &setup),
        (false, false) => return None,
    })
}

fn run_with<G, RL>(s: &Scenario, policy: Policy, setup: &Setup) -> Vec<Trace>
where
    G: Gate + Consulted,
    RL: RateLimiter + Consulted,
{
    let log = Log::default();
    let objects = Objects {
        gate: setup
            .gate
            .map(|g| Rc::new(OriginGate::new(g.config).expect("checked by `run`"))),
        limiter: setup.limiter.map(|l| Rc::new(l.build())),
        log: log.clone(),
    };
    let mut watch = Watch::new(setup.gate, setup.limiter);
    // What another operation's answer left the objects in, through logged handles so that the
    // watch knows it.
    if let (Some(d), Some(_)) = (setup.closed_for, &objects.gate) {
        SharedGate::consult(&objects).on_attempt_end(
            s.start,
            GateSignal {
                started: s.start,
                back_off: Some(d),
                failed: true,
                probe: false,
            },
        );
    }
    if let (true, Some(_)) = (setup.throttled, &objects.limiter) {
        SharedLimiter::consult(&objects).on_response(s.start, true);
    }
    watch.calls(&log.take());

    // With a gate or a limiter to ask, the first copy is never sent without them:
    // `first_copy` hands back the machine `with_overload` makes, having called nothing.
    let (rng, books, samples) = parts(s);
    let handed_back = HedgeMachine::first_copy(
        policy,
        s.request,
        rng,
        books,
        samples,
        G::consult(&objects),
        RL::consult(&objects),
        s.start,
    );
    assert_eq!(log.take(), [], "`first_copy` called a shared object");
    let Err(handed_back) = handed_back else {
        panic!("`first_copy` sent a first copy with a gate or a limiter to ask");
    };
    let (rng, books, samples) = parts(s);
    let mut m: Machine<G, RL> = HedgeMachine::with_overload(
        policy,
        s.request,
        rng,
        books.clone(),
        samples.clone(),
        G::consult(&objects),
        RL::consult(&objects),
        s.start,
    );
    assert_eq!(
        format!("{handed_back:?}"),
        format!("{m:?}"),
        "`first_copy` handed back another machine than `with_overload` makes"
    );
    let mut c = Consults::new(&policy, &m, G::ACTIVE, RL::ACTIVE, s.start);
    let mut trace = Vec::with_capacity(s.steps.len() * 6);
    for step in &s.steps {
        let fed = time_of(&step.time, c.now, c.deadline, m.next_deadline());
        let calls = match &step.action {
            Action::Poll => {
                let d = m.poll(fed);
                let calls = log.take();
                assert_eq!(m.poll(fed), d, "two polls at the same time must agree");
                assert_eq!(log.take(), [], "a second poll called a shared object");
                c.polled(fed, &d, &calls, &books);
                trace.push(Trace::Polled(d));
                calls
            }
            action => {
                let (copy, event, asked) = c.event_for(action, &policy);
                // A pure observation, on a clone whose calls reach nothing.
                log.muted.set(true);
                let _ = muted(&books, &samples, || m.clone().poll(fed));
                log.muted.set(false);
                let state = format!("{m:?}");
                let result = m.handle(fed, event);
                let calls = log.take();
                if result.is_err() {
                    assert_eq!(format!("{m:?}"), state, "a refused {event:?} changed it");
                    assert_eq!(calls, [], "a refused {event:?} called a shared object");
                } else {
                    c.handled(fed, action, copy, asked, &calls, &m);
                }
                trace.push(Trace::Handled(result));
                calls
            }
        };
        watch.calls(&calls);
        let limiter = objects.limiter.as_deref().map(LimiterView::of);
        watch.after(limiter);
        c.after(&m);
        trace.push(Trace::Calls(calls));
        trace.push(Trace::NextDeadline(m.next_deadline()));
        trace.push(Trace::Gate(
            objects.gate.as_deref().map(|g| GateView::of(g, c.now)),
        ));
        trace.push(Trace::Limiter(limiter));
    }
    trace
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    InFlight,
    /// It answered (or timed out, reported).
    Ended,
    /// The machine told the driver to drop it.
    ToDrop,
    Dropped,
}

#[derive(Clone, Copy, Debug)]
struct Copy {
    started: Instant,
    timeout_at: Instant,
    /// The gate admitted it as its probe, at this instant.
    probe: Option<Instant>,
    state: State,
}

/// What the checks know of the machine's consulting, from its decisions and calls.
struct Consults {
    policy: Policy,
    deadline: Instant,
    max: u32,
    gate: bool,
    limiter: bool,
    now: Instant,
    copies: Vec<Copy>,
    /// The copy due was admitted (its `Send` repeats until it starts).
    admitted: bool,
    /// The admitted copy is the gate's probe, admitted at this instant.
    pending_probe: Option<Instant>,
    /// A copy answered since the admission: its floor may have put the copy due off, and
    /// the machine then asks again when it is due.
    answered_since: bool,
    /// The slot a `Paced` answer gave the copy due.
    slot: Option<Slot>,
    /// When the gate's last answer held the operation back (the instant it asked then), if
    /// it did.
    gate_held: Option<Instant>,
    /// A hold suppressed the copies from here on, for this reason.
    suppressed: Option<StopReason>,
    /// The probes handed back (their admissions).
    handed_back: Vec<Instant>,
    done: bool,
}

impl Consults {
    fn new<G: Gate, RL: RateLimiter>(
        policy: &Policy,
        m: &Machine<G, RL>,
        gate: bool,
        limiter: bool,
        start: Instant,
    ) -> Self {
        Consults {
            policy: *policy,
            deadline: m.deadline(),
            max: m.max_copies(),
            gate,
            limiter,
            now: start,
            copies: Vec::new(),
            admitted: false,
            pending_probe: None,
            answered_since: false,
            slot: None,
            gate_held: None,
            suppressed: None,
            handed_back: Vec::new(),
            done: false,
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

    /// The event for an action, the copy it names and what its response asks for.
    fn event_for<'a>(
        &self,
        action: &'a Action,
        policy: &Policy,
    ) -> (u32, HedgeEvent<'a>, ServerAsked) {
        let none = ServerAsked::default();
        let pick = |c: &CopyRef, state: State| -> u32 {
            match *c {
                CopyRef::Raw(n) => n,
                CopyRef::Natural(n) => {
                    let list: Vec<u32> = (1..=self.sent())
                        .filter(|&k| self.copies[k as usize - 1].state == state)
                        .collect();
                    match list.len() {
                        0 => self.sent().max(1),
                        len => list[usize::from(n) % len],
                    }
                }
            }
        };
        match action {
            Action::Poll | Action::TimePassed => (0, HedgeEvent::TimePassed, none),
            Action::Abort => (0, HedgeEvent::Abort, none),
            Action::Started(c) => {
                let copy = match *c {
                    CopyRef::Raw(n) => n,
                    CopyRef::Natural(_) => self.sent() + 1,
                };
                (copy, HedgeEvent::Started { copy }, none)
            }
            Action::Cancelled(c) => {
                let copy = pick(c, State::ToDrop);
                (copy, HedgeEvent::Cancelled { copy }, none)
            }
            Action::Answer(c, RetryAction::Error(error)) => {
                let copy = pick(c, State::InFlight);
                let error = *error;
                (copy, HedgeEvent::Error { copy, error }, none)
            }
            Action::Answer(c, response) => {
                let copy = pick(c, State::InFlight);
                match event_of(response, policy) {
                    (backstop_core::Event::Response(response), asked) => {
                        (copy, HedgeEvent::Response { copy, response }, asked)
                    }
                    other => unreachable!("a response action gave {other:?}"),
                }
            }
        }
    }

    /// A `probe_not_sent` call: it names the probe admitted for the copy due, or a probe copy
    /// in flight (which the machine cancels).
    fn hand_back(&mut self, admitted: Instant) {
        let pending = self.pending_probe == Some(admitted);
        let in_flight = self
            .copies
            .iter()
            .any(|c| c.state == State::InFlight && c.probe == Some(admitted));
        assert!(
            pending || in_flight,
            "a probe handed back ({admitted:?}) that no copy holds: {:?}, pending {:?}",
            self.copies,
            self.pending_probe
        );
        if pending {
            self.pending_probe = None;
            self.admitted = false;
        }
        self.handed_back.push(admitted);
    }

    /// An admission is asked for while one was made: only after an answer that may have put
    /// the copy off (a probe admitted then was handed back).
    fn ask_again(&mut self) {
        if self.admitted {
            assert!(
                self.answered_since && self.pending_probe.is_none(),
                "asked again for an admitted copy"
            );
            self.admitted = false;
        }
    }

    /// Copies whose timeout `now` reached are reported to the gate as failures, in order.
    fn timeout(&mut self, now: Instant, signal: GateSignal) {
        let i = self
            .copies
            .iter()
            .position(|c| c.state == State::InFlight && c.started == signal.started)
            .unwrap_or_else(|| panic!("an end reported for no copy in flight: {signal:?}"));
        let c = self.copies[i];
        assert!(
            c.timeout_at <= now,
            "copy {} reported before its timeout",
            i + 1
        );
        assert_eq!(
            signal,
            GateSignal {
                started: c.started,
                back_off: None,
                failed: true,
                probe: c.probe.is_some(),
            },
            "a timeout's report"
        );
        self.copies[i].state = State::Ended;
    }

    fn polled(&mut self, fed: Instant, d: &HedgeDecision, calls: &[Call], books: &Books) {
        let now = self.now.max(fed);
        self.now = now;
        let was_done = self.done;
        // The admission: `Some(probe)` once admitted; the hold and its reason otherwise.
        let mut asked = false;
        let mut admitted: Option<Option<Instant>> = None;
        let mut hold: Option<(Instant, StopReason)> = None;
        let mut probe_now = None;
        for call in calls {
            match *call {
                Call::AttemptEnd {
                    now: at, signal, ..
                } => {
                    assert_eq!(at, now, "an end reported at another time");
                    assert!(!asked, "a timeout reported after the admission");
                    self.timeout(now, signal);
                    self.answered_since = true;
                }
                Call::Admit {
                    now: at,
                    ask,
                    answer,
                    ..
                } => {
                    assert!(!asked, "asked twice in one poll");
                    self.ask_again();
                    asked = true;
                    assert_eq!(at, now, "asked at another time");
                    let fail_fast = self.sent() == 0 && self.policy.fail_fast_when_paused();
                    let held_slot = self.slot.take();
                    let expected = Ask::new(
                        self.policy
                            .attempt_timeout()
                            .min(self.deadline.saturating_duration_since(now)),
                    )
                    .before(if fail_fast { now } else { self.deadline })
                    .holding(held_slot)
                    .returning(self.gate_held);
                    assert_eq!(ask, expected, "the ask of copy {}", self.sent() + 1);
                    self.gate_held = matches!(
                        answer,
                        GateAdmission::Closed(_)
                            | GateAdmission::AwaitProbe(_)
                            | GateAdmission::Paced(_)
                    )
                    .then_some(now);
                    match answer {
                        // A slot it held is spent, whatever the limiter says.
                        GateAdmission::Open => admitted = Some(None),
                        GateAdmission::Probe => {
                            admitted = Some(Some(now));
                            probe_now = Some(now);
                        }
                        GateAdmission::Closed(t) | GateAdmission::AwaitProbe(t) => {
                            hold = Some((t, StopReason::OriginPaused));
                        }
                        GateAdmission::Paced(slot) => {
                            hold = Some((slot.at, StopReason::OriginPaused));
                            self.slot = Some(slot);
                        }
                        other => panic!("an answer this checker does not know: {other:?}"),
                    }
                }
                Call::Acquire {
                    now: at, answer, ..
                } => {
                    assert_eq!(at, now, "a token asked at another time");
                    if !self.gate {
                        assert!(!asked, "asked twice in one poll");
                        self.ask_again();
                    }
                    assert!(
                        admitted.is_some() || !self.gate,
                        "the limiter asked without the gate's admission"
                    );
                    asked = true;
                    if let Err(t) = answer {
                        admitted = None;
                        hold = Some((t, StopReason::RateLimited));
                    } else if !self.gate {
                        admitted = Some(None);
                    }
                }
                Call::ProbeNotSent { admitted: a, .. } => {
                    if probe_now == Some(a) && admitted.is_none() {
                        // The limiter held the probe back.
                        probe_now = None;
                        self.handed_back.push(a);
                    } else {
                        self.hand_back(a);
                    }
                }
                Call::Response { .. } => panic!("a poll reported a response: {call:?}"),
            }
        }
        assert!(
            probe_now.is_none() || admitted.is_some(),
            "a held probe kept"
        );
        if !was_done {
            for (i, c) in self.copies.iter().enumerate() {
                if c.state == State::InFlight && c.timeout_at <= now && self.gate {
                    panic!("copy {} timed out unreported", i + 1);
                }
            }
        }
        if let Some(probe) = admitted {
            assert!(
                matches!(*d, HedgeDecision::Send { copy, .. } if copy == self.sent() + 1),
                "an admitted copy is sent: {d:?}"
            );
            self.admitted = true;
            self.answered_since = false;
            self.pending_probe = probe;
            self.slot = None;
        } else if let Some((t, reason)) = hold {
            let t = t.max(Instant::from_duration(
                now.as_duration() + Duration::from_nanos(1),
            ));
            let fail_fast = self.sent() == 0 && self.policy.fail_fast_when_paused();
            if t >= self.deadline || fail_fast {
                self.suppressed = Some(reason);
                self.slot = None;
                assert!(
                    !matches!(d, HedgeDecision::Send { .. }),
                    "a copy held past the deadline is sent"
                );
            } else {
                match *d {
                    HedgeDecision::Wait { until, in_flight } => {
                        assert!(
                            until > now && until <= t,
                            "held until {t:?}, waits {until:?}"
                        );
                        assert!(
                            in_flight > 0 || until == t,
                            "nothing in flight: until {t:?}"
                        );
                    }
                    _ => panic!("a copy held until {t:?} gave {d:?}"),
                }
            }
        } else if let HedgeDecision::Send { copy, .. } = *d {
            assert!(
                self.admitted,
                "copy {copy} sent without the gate and the limiter"
            );
        }
        match *d {
            HedgeDecision::Cancel { copy, reason } => {
                let c = &mut self.copies[copy as usize - 1];
                if c.state == State::InFlight {
                    c.state = State::ToDrop;
                }
                if let (Some(a), false) = (c.probe, reason == CancelReason::TimedOut) {
                    assert!(
                        self.handed_back.contains(&a),
                        "the probe copy {copy} is cancelled ({reason:?}) without handing its \
                         probe back"
                    );
                }
            }
            HedgeDecision::Return(o) | HedgeDecision::GiveUp(o) => {
                self.done = true;
                if let Some(a) = self.pending_probe {
                    assert!(
                        self.handed_back.contains(&a),
                        "the operation ended holding an unsent probe"
                    );
                }
                if let Some(r) = self.suppressed {
                    assert_eq!(o.suppressed_by, Some(r), "the suppression's reason");
                }
                if matches!(
                    o.suppressed_by,
                    Some(StopReason::OriginPaused | StopReason::RateLimited)
                ) {
                    assert_eq!(o.suppressed_by, self.suppressed, "a suppression by no hold");
                }
                assert_eq!(
                    books.paid(),
                    self.sent().saturating_sub(1),
                    "a grant held at the end"
                );
                assert_eq!(self.in_flight(), 0);
            }
            _ => {}
        }
    }

    fn handled<G: Gate, RL: RateLimiter>(
        &mut self,
        fed: Instant,
        action: &Action,
        copy: u32,
        asked: ServerAsked,
        calls: &[Call],
        m: &Machine<G, RL>,
    ) {
        let now = self.now.max(fed);
        self.now = now;
        let mut expected_end = None;
        let mut expected_response = None;
        match action {
            Action::Started(_) => {
                assert!(self.admitted, "copy {copy} started unadmitted");
                assert_eq!(copy, self.sent() + 1);
                assert_eq!(calls, [], "a start calls nothing");
                self.copies.push(Copy {
                    started: now,
                    timeout_at: now
                        .saturating_add(self.policy.attempt_timeout())
                        .min(self.deadline),
                    probe: self.pending_probe.take(),
                    state: State::InFlight,
                });
                self.admitted = false;
                return;
            }
            Action::Cancelled(_) => {
                assert_eq!(calls, [], "a cancel acknowledged calls nothing");
                self.copies[copy as usize - 1].state = State::Dropped;
                return;
            }
            Action::Answer(_, answer) => {
                self.answered_since = true;
                let c = self.copies[copy as usize - 1];
                assert_eq!(c.state, State::InFlight, "an answer taken for copy {copy}");
                self.copies[copy as usize - 1].state = State::Ended;
                match answer {
                    RetryAction::Error(e) => {
                        if !matches!(e.class, ErrorClass::Aborted | ErrorClass::Permanent) {
                            expected_end = Some(GateSignal {
                                started: c.started,
                                back_off: None,
                                failed: true,
                                probe: c.probe.is_some(),
                            });
                        }
                    }
                    _ => {
                        let HedgeEvent::Response { response, .. } =
                            self.event_for(action, &self.policy).1
                        else {
                            unreachable!("a response action")
                        };
                        let status = response.status;
                        // A 429 (or a 403 that is a retried rate-limit answer: `too_many`)
                        // or a 503 with a usable `Retry-After`, as for the retry machine.
                        let retry_after = if asked.too_many || status == 503 {
                            asked.retry_after
                        } else {
                            None
                        };
                        expected_response = Some(asked.too_many || retry_after.is_some());
                        let won = m.outcome().and_then(|o| o.winner) == Some(copy);
                        expected_end = Some(GateSignal {
                            started: c.started,
                            back_off: retry_after
                                .or(asked.rate_limit)
                                .map(|d| d.min(self.policy.max_retry_after())),
                            failed: !won,
                            probe: c.probe.is_some(),
                        });
                    }
                }
            }
            Action::Poll | Action::TimePassed | Action::Abort => {}
        }
        let mut rest = calls;
        if let (Some(throttled), true) = (expected_response, self.limiter) {
            match rest.split_first() {
                Some((
                    Call::Response {
                        now: at,
                        throttled: t,
                        ..
                    },
                    tail,
                )) => {
                    assert_eq!((*at, *t), (now, throttled), "the limiter's report");
                    rest = tail;
                }
                other => panic!("a response not reported to the limiter: {other:?}"),
            }
        }
        if let (Some(signal), true) = (expected_end, self.gate) {
            match rest.split_first() {
                Some((
                    Call::AttemptEnd {
                        now: at, signal: s, ..
                    },
                    tail,
                )) => {
                    assert_eq!((*at, *s), (now, signal), "copy {copy}'s report to the gate");
                    rest = tail;
                }
                other => panic!("copy {copy}'s end not reported to the gate: {other:?}"),
            }
        }
        for call in rest {
            match *call {
                Call::ProbeNotSent { admitted, .. } => self.hand_back(admitted),
                Call::AttemptEnd {
                    now: at, signal, ..
                } if matches!(action, Action::TimePassed) => {
                    assert_eq!(at, now);
                    self.timeout(now, signal);
                    self.answered_since = true;
                }
                _ => panic!("{action:?} made an unexpected call: {call:?}"),
            }
        }
        if m.outcome().is_some() {
            self.done = true;
        }
    }

    /// Checks that hold after every step.
    fn after<G: Gate, RL: RateLimiter>(&self, m: &Machine<G, RL>) {
        if let Some(next) = m.next_deadline() {
            assert!(next > self.now, "next_deadline {next:?} not after now");
        }
        assert_eq!(m.sent(), self.sent(), "the copies sent");
        assert!(self.sent() <= self.max, "more copies than allowed");
        for c in &self.copies {
            assert!(c.started < self.deadline, "a copy started at the deadline");
        }
    }
}
