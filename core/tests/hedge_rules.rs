//! One test per rule of the hedging machine (gRFC A6 hedging, made HTTP-aware), named after
//! the rule, on virtual time.

use core::cell::{Cell, RefCell};
use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, Backoff, Budget, CancelReason, ConfigError, DelaySource,
    ErrorClass, ErrorKind, HedgeDecision, HedgeEvent, HedgeMachine, HedgeOutcome, HedgeTrigger,
    Hedging, HedgingError, Instant, Latencies, LatencyTracker, Method, MisuseError, NoLatencies,
    NonIdempotent, Policy, Request, Response, RetryAfterAboveMax, RetryQuota, StopReason,
    Unlimited, A6_MAX_ATTEMPTS, MAX_COPIES,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn at(v: u64) -> Instant {
    Instant::from_millis(v)
}

/// The defaults, hedged with a fixed `delay` and `copies` copies, without the random spread
/// above a server's floor (so waits are exact).
fn hedged(delay: u64, copies: u32) -> Policy {
    Policy::builder()
        .hedging(Hedging::fixed(ms(delay)).max_attempts(copies))
        .retry_after_spread(Duration::ZERO)
        .build()
        .unwrap()
}

/// A hedging machine on virtual time.
struct Sim<B: Budget = Unlimited, L: Latencies = NoLatencies> {
    m: HedgeMachine<Pcg64Mcg, B, L>,
    now: Instant,
}

impl Sim {
    fn new(policy: Policy, request: Request) -> Self {
        Sim::with(policy, request, Unlimited, NoLatencies)
    }

    fn get(policy: Policy) -> Self {
        Sim::new(policy, Request::new(Method::Get))
    }
}

impl<B: Budget, L: Latencies> Sim<B, L> {
    fn with(policy: Policy, request: Request, budget: B, latencies: L) -> Self {
        let rng = Pcg64Mcg::seed_from_u64(7);
        Sim {
            m: HedgeMachine::with_budget(policy, request, rng, budget, latencies, Instant::ZERO),
            now: Instant::ZERO,
        }
    }

    fn at(&mut self, ms: u64) -> &mut Self {
        self.now = at(ms);
        self
    }

    fn poll(&mut self) -> HedgeDecision {
        let d = self.m.poll(self.now);
        assert_eq!(self.m.poll(self.now), d, "two polls at the same time agree");
        d
    }

    /// Expects a `Send`, starts the copy, and returns its number, timeout and trigger.
    fn send(&mut self) -> (u32, Duration, HedgeTrigger) {
        match self.poll() {
            HedgeDecision::Send {
                copy,
                timeout,
                trigger,
            } => {
                self.m
                    .handle(self.now, HedgeEvent::Started { copy })
                    .expect("a send was due");
                (copy, timeout, trigger)
            }
            other => panic!("expected Send at {:?}, got {other:?}", self.now),
        }
    }

    fn respond(&mut self, copy: u32, response: Response<'_>) {
        self.m
            .handle(self.now, HedgeEvent::Response { copy, response })
            .expect("the copy was in flight");
    }

    fn status(&mut self, copy: u32, status: u16) {
        self.respond(copy, Response::new(status));
    }

    fn fail(&mut self, copy: u32, error: AttemptError) {
        self.m
            .handle(self.now, HedgeEvent::Error { copy, error })
            .expect("the copy was in flight");
    }

    /// Expects a `Cancel`, reports the copy dropped, and returns it and why.
    fn cancel(&mut self) -> (u32, CancelReason) {
        match self.poll() {
            HedgeDecision::Cancel { copy, reason } => {
                self.m
                    .handle(self.now, HedgeEvent::Cancelled { copy })
                    .expect("a cancel was due");
                (copy, reason)
            }
            other => panic!("expected Cancel at {:?}, got {other:?}", self.now),
        }
    }

    /// Expects a `Wait` and returns when it ends and the copies in flight.
    fn wait(&mut self) -> (Instant, u32) {
        match self.poll() {
            HedgeDecision::Wait { until, in_flight } => {
                assert!(until > self.now, "a wait that has ended");
                (until, in_flight)
            }
            other => panic!("expected Wait at {:?}, got {other:?}", self.now),
        }
    }

    fn returned(&mut self) -> HedgeOutcome {
        match self.poll() {
            HedgeDecision::Return(o) => o,
            other => panic!("expected Return, got {other:?}"),
        }
    }

    fn gave_up(&mut self) -> HedgeOutcome {
        match self.poll() {
            HedgeDecision::GiveUp(o) => o,
            other => panic!("expected GiveUp, got {other:?}"),
        }
    }
}

fn error(kind: ErrorKind) -> AttemptError {
    AttemptError::new(kind)
}

/// A budget that grants the first `grants` copies, and keeps the books.
#[derive(Default)]
struct Books {
    grants: Cell<u32>,
    asked: Cell<u32>,
    given_back: Cell<u32>,
    ends: RefCell<Vec<bool>>,
    started: Cell<u32>,
}

impl Books {
    fn granting(grants: u32) -> Self {
        let b = Books::default();
        b.grants.set(grants);
        b
    }
}

impl Budget for &Books {
    fn on_operation_start(&self, _now: Instant) {
        self.started.set(self.started.get() + 1);
    }
    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        self.asked.set(self.asked.get() + 1);
        self.asked.get() <= self.grants.get()
    }
    fn on_retry_cancelled(&self, now: Instant, granted_at: Instant, _cause: AttemptOutcome) {
        assert!(granted_at <= now);
        self.given_back.set(self.given_back.get() + 1);
    }
    fn on_attempt_end(&self, _now: Instant, success: bool) {
        self.ends.borrow_mut().push(success);
    }
}

impl<'b> Sim<&'b Books> {
    /// A GET hedged every `delay` ms up to `copies` copies, whose budget keeps `books`.
    fn booked(books: &'b Books, delay: u64, copies: u32) -> Self {
        Sim::with(
            hedged(delay, copies),
            Request::new(Method::Get),
            books,
            NoLatencies,
        )
    }
}

// --- Policy -----------------------------------------------------------------------------

#[test]
fn hedging_max_attempts_counts_the_original_and_is_capped_at_a6s_five() {
    for n in 2..=A6_MAX_ATTEMPTS {
        let policy = Policy::builder()
            .hedging(Hedging::fixed(ms(10)).max_attempts(n))
            .build()
            .unwrap();
        assert_eq!(policy.hedging().map(|h| h.attempts()), Some(n));
        let mut sim = Sim::get(policy);
        for copy in 1..=n {
            sim.at(10 * u64::from(copy - 1));
            assert_eq!(sim.send().0, copy);
        }
        // The original and n - 1 hedges: no copy after the n-th, however long it takes.
        sim.at(4_000);
        assert!(matches!(sim.poll(), HedgeDecision::Wait { in_flight, .. } if in_flight == n));
    }
    assert_eq!(
        Policy::builder()
            .hedging(Hedging::fixed(ms(10)).max_attempts(6))
            .build(),
        Err(ConfigError::Hedging(HedgingError::Attempts {
            value: 6,
            cap: 5
        }))
    );
}

#[test]
fn allow_above_a6_cap_raises_the_cap_to_max_copies_only() {
    let raised = |n| {
        Policy::builder()
            .hedging(Hedging::fixed(ms(10)).max_attempts(n).allow_above_a6_cap())
            .build()
    };
    for n in 2..=MAX_COPIES {
        assert!(raised(n).is_ok(), "{n} copies with the cap raised");
    }
    assert_eq!(
        raised(MAX_COPIES + 1),
        Err(ConfigError::Hedging(HedgingError::Attempts {
            value: MAX_COPIES + 1,
            cap: MAX_COPIES
        }))
    );
    let mut sim = Sim::get(raised(MAX_COPIES).unwrap());
    for copy in 1..=MAX_COPIES {
        sim.at(10 * u64::from(copy - 1));
        assert_eq!(sim.send().0, copy);
    }
    sim.at(4_000);
    assert!(matches!(
        sim.poll(),
        HedgeDecision::Wait { in_flight: 10, .. }
    ));
}

#[test]
fn fewer_than_two_copies_is_refused() {
    for n in [0, 1] {
        let e = Policy::builder()
            .hedging(Hedging::fixed(ms(10)).max_attempts(n))
            .build()
            .unwrap_err();
        assert_eq!(
            e,
            ConfigError::Hedging(HedgingError::Attempts { value: n, cap: 5 })
        );
        assert!(e.to_string().contains("2 to 5"), "{e}");
    }
}

#[test]
fn an_adaptive_extra_load_outside_1_to_50_percent_is_refused() {
    for p in [0, 51, 100, 255] {
        assert_eq!(
            Policy::builder().hedging(Hedging::adaptive(p)).build(),
            Err(ConfigError::Hedging(HedgingError::ExtraLoad(p)))
        );
    }
    for p in [1, 5, 50] {
        assert!(Policy::builder()
            .hedging(Hedging::adaptive(p))
            .build()
            .is_ok());
    }
}

#[test]
fn only_requests_that_could_be_retried_are_hedged() {
    let keyed = |m| Request::new(m).with_idempotency_key(true);
    let cases = [
        (Request::new(Method::Get), None),
        (Request::new(Method::Head), None),
        (Request::new(Method::Options), None),
        (Request::new(Method::Put), Some(StopReason::NotIdempotent)),
        (
            Request::new(Method::Delete),
            Some(StopReason::NotIdempotent),
        ),
        (
            Request::new(Method::Post),
            Some(StopReason::NoIdempotencyKey),
        ),
        (
            Request::new(Method::Patch),
            Some(StopReason::NoIdempotencyKey),
        ),
        (keyed(Method::Post), None),
        (keyed(Method::Patch), None),
    ];
    for (request, refusal) in cases {
        let mut sim = Sim::new(hedged(10, 3), request);
        assert_eq!(sim.send().0, 1);
        sim.at(10);
        match refusal {
            None => {
                assert_eq!(sim.m.max_copies(), 3, "{request:?} is hedged");
                assert_eq!(sim.send().0, 2, "{request:?} is hedged");
            }
            Some(reason) => {
                assert_eq!(sim.m.max_copies(), 1, "{request:?} is sent once");
                assert!(matches!(
                    sim.poll(),
                    HedgeDecision::Wait { in_flight: 1, .. }
                ));
                // A non-final answer ends it, with the reason a retry would have been refused.
                sim.status(1, 503);
                let o = sim.returned();
                assert_eq!((o.outcome.attempts, o.outcome.reason), (1, reason));
            }
        }
    }
    // PUT once added to the retried methods; POST with a key not under `Never`.
    let put = Policy::builder()
        .hedging(Hedging::fixed(ms(10)))
        .add_retry_method(Method::Put)
        .build()
        .unwrap();
    assert_eq!(Sim::new(put, Request::new(Method::Put)).m.max_copies(), 2);
    let never = Policy::builder()
        .hedging(Hedging::fixed(ms(10)))
        .non_idempotent(NonIdempotent::Never)
        .build()
        .unwrap();
    assert_eq!(Sim::new(never, keyed(Method::Post)).m.max_copies(), 1);
}

#[test]
fn a_body_that_cannot_be_sent_again_is_sent_once() {
    let request = Request::new(Method::Get).with_replayable_body(false);
    let mut sim = Sim::new(hedged(10, 3), request);
    assert_eq!(sim.m.max_copies(), 1);
    sim.send();
    sim.at(1_000);
    assert!(matches!(
        sim.poll(),
        HedgeDecision::Wait { in_flight: 1, .. }
    ));
    sim.fail(1, error(ErrorKind::ConnectionRefused)); // even a copy that was never sent
    let o = sim.gave_up();
    assert_eq!(o.outcome.reason, StopReason::BodyNotReplayable);
    assert_eq!(o.outcome.attempts, 1);
}

#[test]
fn a_policy_without_hedging_sends_one_copy() {
    let mut sim = Sim::get(Policy::default());
    assert_eq!(sim.m.max_copies(), 1);
    assert_eq!(sim.m.delay(), None);
    sim.send();
    sim.at(100);
    sim.status(1, 503);
    let o = sim.returned();
    assert_eq!(
        (o.outcome.attempts, o.outcome.reason),
        (1, StopReason::Attempts)
    );
}

// --- Schedule ---------------------------------------------------------------------------

#[test]
fn copy_k_is_sent_delay_after_copy_k_minus_1_while_nothing_final_has_arrived() {
    let mut sim = Sim::get(hedged(50, 4));
    assert_eq!(sim.send(), (1, Duration::from_secs(5), HedgeTrigger::First));
    assert_eq!(sim.wait(), (at(50), 1));
    sim.at(49);
    assert!(
        matches!(sim.poll(), HedgeDecision::Wait { .. }),
        "not before the delay"
    );
    // A driver that wakes late sends late; the next copy is `delay` after that one.
    sim.at(70);
    assert_eq!(
        sim.send(),
        (2, Duration::from_secs(5), HedgeTrigger::Delay(ms(50)))
    );
    assert_eq!(sim.wait(), (at(120), 2));
    sim.at(120);
    assert_eq!(sim.send().0, 3);
    sim.at(170);
    assert_eq!(sim.send().0, 4);
    // No fifth: the next wake-up is the first copy's timeout.
    assert_eq!(sim.wait(), (at(5_000), 4));
}

#[test]
fn a_zero_delay_sends_every_copy_at_once() {
    let mut sim = Sim::get(hedged(0, 3));
    for copy in 1..=3 {
        assert_eq!(sim.send().0, copy);
    }
    assert_eq!(sim.wait(), (at(5_000), 3));
}

#[test]
fn a_non_final_answer_sends_the_next_copy_at_once_and_later_copies_resume_delay_after_it() {
    let mut sim = Sim::get(hedged(100, 4));
    sim.send();
    sim.at(30).status(1, 503);
    let (copy, _, trigger) = sim.send();
    assert_eq!(copy, 2);
    assert_eq!(
        trigger,
        HedgeTrigger::Answer {
            copy: 1,
            outcome: AttemptOutcome::Response(503),
            floor: None
        }
    );
    // The delay runs from copy 2's start, not from copy 1's.
    assert_eq!(sim.wait(), (at(130), 1));
    sim.at(130);
    assert_eq!(
        sim.send(),
        (3, Duration::from_secs(5), HedgeTrigger::Delay(ms(100)))
    );
}

#[test]
fn a_retryable_error_is_a_non_final_answer() {
    for (kind, class) in [
        (ErrorKind::ConnectionRefused, ErrorClass::NotSent),
        (ErrorKind::ConnectionReset, ErrorClass::MaybeSent),
        (ErrorKind::Timeout, ErrorClass::Timeout),
    ] {
        let mut sim = Sim::get(hedged(100, 2));
        sim.send();
        sim.at(5);
        sim.fail(1, error(kind));
        let (copy, _, trigger) = sim.send();
        assert_eq!(copy, 2, "{class:?}");
        assert!(matches!(
            trigger,
            HedgeTrigger::Answer { copy: 1, outcome: AttemptOutcome::Error(e), floor: None }
                if e.class == class
        ));
    }
}

#[test]
fn a_retry_after_on_a_non_final_answer_delays_the_next_copy_to_its_floor() {
    let mut sim = Sim::get(hedged(50, 4));
    sim.send();
    sim.at(10).respond(1, Response::new(503).retry_after(b"2"));
    assert_eq!(
        sim.wait(),
        (at(2_010), 0),
        "the next copy waits for the floor"
    );
    sim.at(2_009);
    assert!(matches!(sim.poll(), HedgeDecision::Wait { .. }));
    sim.at(2_010);
    let (copy, _, trigger) = sim.send();
    assert_eq!(copy, 2);
    assert_eq!(
        trigger,
        HedgeTrigger::Answer {
            copy: 1,
            outcome: AttemptOutcome::Response(503),
            floor: Some(DelaySource::RetryAfter)
        }
    );
    // Later copies go `delay` after it again.
    assert_eq!(sim.wait(), (at(2_060), 1));
}

#[test]
fn a_floor_also_holds_back_a_copy_due_on_the_delay() {
    // Copy 2 answers 429 with Retry-After: 1 while copy 1 is still in flight: copy 3 (due 50 ms
    // after copy 2 on the delay) waits for the server.
    let mut sim = Sim::get(hedged(50, 3));
    sim.send();
    sim.at(50).send();
    sim.at(60).respond(2, Response::new(429).retry_after(b"1"));
    assert_eq!(sim.wait(), (at(1_060), 1));
    sim.at(1_060);
    assert_eq!(sim.send().0, 3);
}

#[test]
fn a_rate_limit_reset_on_a_non_final_answer_is_a_floor_too() {
    let mut sim = Sim::get(hedged(50, 2));
    sim.send();
    sim.at(10)
        .respond(1, Response::new(429).rate_limit(b"\"default\";r=0;t=3"));
    assert_eq!(sim.wait(), (at(3_010), 0));
    sim.at(3_010);
    assert!(matches!(
        sim.send().2,
        HedgeTrigger::Answer {
            floor: Some(DelaySource::RateLimitReset),
            ..
        }
    ));
}

#[test]
fn a_retry_after_above_the_ceiling_suppresses_the_next_copies_or_is_clamped() {
    let policy = |clamp| {
        let mut b = Policy::builder()
            .hedging(Hedging::fixed(ms(50)).max_attempts(3))
            .max_retry_after(Duration::from_secs(1))
            .retry_after_spread(Duration::ZERO);
        if clamp {
            b = b.retry_after_above_max(RetryAfterAboveMax::Clamp);
        }
        b.build().unwrap()
    };
    // Give up: copy 2, in flight, runs on; no copy follows.
    let mut sim = Sim::get(policy(false));
    sim.send();
    sim.at(50).send();
    sim.at(60).respond(1, Response::new(503).retry_after(b"30"));
    assert_eq!(sim.wait(), (at(5_050), 1), "copy 2 runs on, no copy 3");
    sim.at(70).status(2, 503);
    let o = sim.returned();
    assert_eq!(o.outcome.reason, StopReason::RetryAfterAboveMax);
    assert_eq!(
        (o.suppressed, o.suppressed_by),
        (1, Some(StopReason::RetryAfterAboveMax))
    );
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(503)));
    // Clamp: the next copy waits the ceiling.
    let mut sim = Sim::get(policy(true));
    sim.send();
    sim.at(10).respond(1, Response::new(503).retry_after(b"30"));
    assert_eq!(sim.wait(), (at(1_010), 0));
    sim.at(1_010);
    assert!(matches!(
        sim.send().2,
        HedgeTrigger::Answer {
            floor: Some(DelaySource::RetryAfterClamped),
            ..
        }
    ));
}

#[test]
fn no_copy_starts_at_or_after_the_deadline() {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(600)).max_attempts(3))
        .max_elapsed(ms(1_000))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.send();
    sim.at(600).send();
    // Copy 3 would be due at 1,200 ms, past the deadline: it is never scheduled.
    assert_eq!(sim.wait(), (at(1_000), 2));
    // A driver that reports a start at the deadline is refused.
    let mut late = Sim::get(policy);
    late.send();
    assert_eq!(
        late.m.handle(at(1_000), HedgeEvent::Started { copy: 2 }),
        Err(MisuseError::NoSendPending)
    );
    // A floor that ends at or after the deadline sends nothing either.
    let mut sim = Sim::get(policy);
    sim.send();
    sim.at(100)
        .respond(1, Response::new(503).retry_after(b"0.9"));
    let o = sim.returned();
    assert_eq!(
        (o.outcome.reason, o.outcome.attempts),
        (StopReason::Deadline, 1)
    );
    // Copies in flight at the deadline time out there, and the operation ends.
    let mut sim = Sim::get(policy);
    sim.send();
    sim.at(600).send();
    sim.at(1_000);
    assert_eq!(sim.cancel(), (1, CancelReason::TimedOut));
    assert_eq!(sim.cancel(), (2, CancelReason::TimedOut));
    let o = sim.gave_up();
    assert_eq!(o.outcome.reason, StopReason::Deadline);
    assert!(
        matches!(o.outcome.last, Some(AttemptOutcome::Error(e)) if e.kind == ErrorKind::Timeout)
    );
}

#[test]
fn each_copys_timeout_is_clamped_to_the_deadline() {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(700)).max_attempts(2))
        .max_elapsed(ms(1_000))
        .attempt_timeout(ms(800))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    assert_eq!(sim.send().1, ms(800));
    sim.at(700);
    assert_eq!(sim.send().1, ms(300), "copy 2 ends by the deadline");
    assert_eq!(sim.wait(), (at(800), 2));
    sim.at(800);
    assert_eq!(sim.cancel(), (1, CancelReason::TimedOut));
    assert_eq!(sim.wait(), (at(1_000), 1));
}

#[test]
fn a_copy_past_its_timeout_is_cancelled_and_counts_as_a_non_final_answer() {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(Duration::from_secs(10)).max_attempts(2))
        .attempt_timeout(ms(300))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.send();
    assert_eq!(sim.wait(), (at(300), 1));
    sim.at(300);
    assert_eq!(sim.cancel(), (1, CancelReason::TimedOut));
    let (copy, _, trigger) = sim.send();
    assert_eq!(copy, 2);
    assert!(matches!(
        trigger,
        HedgeTrigger::Answer { copy: 1, outcome: AttemptOutcome::Error(e), .. }
            if e.kind == ErrorKind::Timeout
    ));
    // A response for the timed-out copy comes too late.
    assert_eq!(
        sim.m.handle(
            sim.now,
            HedgeEvent::Response {
                copy: 1,
                response: Response::new(200)
            }
        ),
        Err(MisuseError::NoAttemptInFlight)
    );
}

// --- Winner -----------------------------------------------------------------------------

#[test]
fn the_first_final_answer_wins_and_every_other_copy_is_cancelled() {
    let mut sim = Sim::get(hedged(10, 4));
    for t in [0, 10, 20, 30] {
        sim.at(t).send();
    }
    sim.at(35).status(3, 200);
    let mut cancelled = Vec::new();
    for _ in 0..3 {
        let (copy, reason) = sim.cancel();
        assert_eq!(reason, CancelReason::Superseded { winner: 3 });
        cancelled.push(copy);
    }
    assert_eq!(cancelled, [1, 2, 4]);
    let o = sim.returned();
    assert_eq!(o.winner, Some(3));
    assert_eq!((o.outcome.attempts, o.cancelled), (4, 3));
    assert_eq!(o.outcome.reason, StopReason::FinalStatus);
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(200)));
    assert_eq!(o.outcome.elapsed, ms(35));
    // The losers' answers are no longer taken: one final answer only.
    assert_eq!(
        sim.m.handle(
            sim.now,
            HedgeEvent::Response {
                copy: 1,
                response: Response::new(200)
            }
        ),
        Err(MisuseError::NoAttemptInFlight)
    );
}

#[test]
fn a_status_the_policy_does_not_retry_is_final_and_wins() {
    for status in [201, 204, 301, 400, 404, 409, 501] {
        let mut sim = Sim::get(hedged(10, 2));
        sim.send();
        sim.at(10).send();
        sim.at(12).status(1, status);
        assert_eq!(sim.cancel(), (2, CancelReason::Superseded { winner: 1 }));
        let o = sim.returned();
        assert_eq!(
            (o.winner, o.outcome.reason),
            (Some(1), StopReason::FinalStatus)
        );
    }
}

#[test]
fn a_retryable_answer_never_wins_while_another_copy_is_pending() {
    let mut sim = Sim::get(hedged(10, 2));
    sim.send();
    sim.at(10).send();
    sim.at(11).status(2, 503);
    // Copy 1 is still pending: nothing is returned, nothing cancelled, no copy left to send.
    assert_eq!(sim.wait(), (at(5_000), 1));
    assert!(sim.m.outcome().is_none());
    sim.at(20).status(1, 200);
    let o = sim.returned();
    assert_eq!((o.winner, o.cancelled), (Some(1), 0));
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(200)));
}

#[test]
fn when_every_copy_failed_the_last_response_is_returned_with_its_own_stop_reason() {
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(10).send();
    sim.at(20).send();
    sim.at(21).status(1, 500);
    sim.at(22).fail(3, error(ErrorKind::ConnectionReset));
    sim.at(23).status(2, 503);
    let o = sim.returned();
    assert_eq!(o.winner, None);
    assert_eq!(o.outcome.reason, StopReason::Attempts);
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(503)));
    assert_eq!((o.outcome.attempts, o.cancelled, o.suppressed), (3, 0, 0));
    // An error after the last response does not hide it.
    let mut sim = Sim::get(hedged(10, 2));
    sim.send();
    sim.at(10).send();
    sim.at(11).respond(1, Response::new(503).retry_after(b"0"));
    sim.at(12).fail(2, error(ErrorKind::ConnectionReset));
    let o = sim.returned();
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(503)));
    assert_eq!(o.outcome.retry_after, Some(Duration::ZERO));
}

#[test]
fn when_every_copy_failed_without_a_response_the_last_error_is_given_up() {
    let mut sim = Sim::get(hedged(10, 2));
    sim.send();
    sim.at(10).send();
    sim.at(11).fail(1, error(ErrorKind::ConnectionReset));
    sim.at(12).fail(2, error(ErrorKind::UnexpectedEof));
    let o = sim.gave_up();
    assert_eq!(o.outcome.reason, StopReason::Attempts);
    assert!(
        matches!(o.outcome.last, Some(AttemptOutcome::Error(e)) if e.kind == ErrorKind::UnexpectedEof)
    );
}

#[test]
fn nothing_is_returned_before_every_loser_is_cancelled() {
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(10).send();
    sim.at(20).send();
    sim.at(25).status(2, 200);
    // The cancels repeat until acknowledged, and only then does the response come.
    assert!(matches!(sim.poll(), HedgeDecision::Cancel { copy: 1, .. }));
    sim.at(30);
    assert!(matches!(sim.poll(), HedgeDecision::Cancel { copy: 1, .. }));
    assert_eq!(sim.m.next_deadline(), None, "act now");
    sim.cancel();
    assert!(matches!(sim.poll(), HedgeDecision::Cancel { copy: 3, .. }));
    // Acknowledging a copy that was not to be cancelled is refused.
    assert_eq!(
        sim.m.handle(sim.now, HedgeEvent::Cancelled { copy: 2 }),
        Err(MisuseError::NoCancelPending)
    );
    sim.cancel();
    assert_eq!(sim.returned().cancelled, 2);
    assert_eq!(sim.m.in_flight(), 0);
}

#[test]
fn abort_cancels_every_copy_and_nothing_is_sent_after() {
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(10).send();
    sim.at(15);
    sim.m.handle(sim.now, HedgeEvent::Abort).unwrap();
    assert_eq!(sim.cancel(), (1, CancelReason::Aborted));
    assert_eq!(sim.cancel(), (2, CancelReason::Aborted));
    sim.at(1_000);
    let o = sim.gave_up();
    assert_eq!(o.outcome.reason, StopReason::Aborted);
    assert_eq!((o.outcome.attempts, o.cancelled, o.winner), (2, 2, None));
    assert_eq!(
        sim.m.handle(sim.now, HedgeEvent::Started { copy: 3 }),
        Err(MisuseError::NoSendPending)
    );
    // An abort after a response in hand still gives up (the caller no longer wants it).
    let mut sim = Sim::get(hedged(10, 2));
    sim.send();
    sim.at(5).status(1, 503);
    sim.m.handle(sim.now, HedgeEvent::Abort).unwrap();
    assert_eq!(sim.gave_up().outcome.reason, StopReason::Aborted);
    // An abort after the end changes nothing.
    let mut sim = Sim::get(hedged(10, 2));
    sim.send();
    sim.status(1, 200);
    let done = sim.returned();
    sim.m.handle(sim.now, HedgeEvent::Abort).unwrap();
    assert_eq!(sim.returned(), done);
}

#[test]
fn a_permanent_error_cancels_the_other_copies() {
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(10).send();
    sim.at(11).fail(2, error(ErrorKind::Tls));
    assert_eq!(sim.cancel(), (1, CancelReason::Fatal));
    let o = sim.gave_up();
    assert_eq!(o.outcome.reason, StopReason::PermanentError);
    assert_eq!((o.outcome.attempts, o.cancelled, o.winner), (2, 1, None));
}

#[test]
fn a_permanent_error_ends_the_operation_with_the_last_response_in_hand_if_any() {
    // The outcome's last answer is the last response, else the last error: a 503 in hand is
    // handed back, with the permanent error as the reason.
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(5).status(1, 503);
    sim.send();
    sim.at(6).fail(2, error(ErrorKind::InvalidRequest));
    let o = sim.returned();
    assert_eq!(o.outcome.reason, StopReason::PermanentError);
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(503)));
}

#[test]
fn the_callers_abort_reported_as_a_copys_error_aborts_everything() {
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(10).send();
    sim.at(11).fail(1, error(ErrorKind::Aborted));
    assert_eq!(sim.cancel(), (2, CancelReason::Aborted));
    assert_eq!(sim.gave_up().outcome.reason, StopReason::Aborted);
}

#[test]
fn nothing_is_sent_after_the_winner() {
    let mut sim = Sim::get(hedged(10, 3));
    sim.send();
    sim.at(10).status(1, 200);
    let o = sim.returned();
    assert_eq!((o.outcome.attempts, o.winner), (1, Some(1)));
    for t in [10, 20, 30, 100_000] {
        sim.at(t);
        assert_eq!(sim.returned(), o);
        assert_eq!(
            sim.m.handle(sim.now, HedgeEvent::Started { copy: 2 }),
            Err(MisuseError::NoSendPending)
        );
    }
}

// --- Delay ------------------------------------------------------------------------------

#[test]
fn an_adaptive_delay_is_the_quantile_of_recent_latencies_and_at_least_1_ms() {
    let tracker = LatencyTracker::new(Duration::from_secs(30));
    for latency in 1..=100 {
        tracker.record(Instant::ZERO, ms(latency));
    }
    // Finagle's 5 % extra load: the 95th percentile (read at its bucket's upper edge).
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(5).min_samples(100))
        .build()
        .unwrap();
    let sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &tracker);
    let delay = sim.m.delay().unwrap();
    assert!(delay >= ms(95) && delay < ms(95) + ms(95) / 8, "{delay:?}");
    // 50 %: the median.
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(50).min_samples(100))
        .build()
        .unwrap();
    let sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &tracker);
    let delay = sim.m.delay().unwrap();
    assert!(delay >= ms(50) && delay < ms(50) + ms(50) / 8, "{delay:?}");
    // Very fast answers: the delay is at least 1 ms.
    let fast = LatencyTracker::new(Duration::from_secs(30));
    for _ in 0..10 {
        fast.record(Instant::ZERO, Duration::from_micros(3));
    }
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(5).min_samples(10))
        .build()
        .unwrap();
    let mut sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &fast);
    assert_eq!(sim.m.delay(), Some(ms(1)));
    sim.send();
    assert_eq!(sim.wait(), (at(1), 1));
    sim.at(1);
    assert_eq!(sim.send().2, HedgeTrigger::Delay(ms(1)));
}

#[test]
fn an_adaptive_delay_does_not_hedge_until_the_tracker_has_enough_samples() {
    let tracker = LatencyTracker::new(Duration::from_secs(30));
    for _ in 0..99 {
        tracker.record(Instant::ZERO, ms(20));
    }
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(5)) // 100 samples by default
        .build()
        .unwrap();
    let mut sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &tracker);
    assert_eq!(sim.m.delay(), None);
    sim.send();
    // No copy on a delay, however slow copy 1 is; a non-final answer still sends one.
    assert_eq!(sim.wait(), (at(5_000), 1));
    sim.at(1_000).status(1, 503);
    assert!(matches!(
        sim.send(),
        (2, _, HedgeTrigger::Answer { copy: 1, .. })
    ));
    // The samples of an old window do not count.
    for _ in 0..10 {
        tracker.record(Instant::ZERO, ms(20));
    }
    assert_eq!(tracker.samples(Instant::ZERO), 109);
    let later = Instant::from_secs(31);
    let m = HedgeMachine::with_budget(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(1),
        Unlimited,
        &tracker,
        later,
    );
    assert_eq!(m.delay(), None, "the window slid past every sample");
}

/// Latencies, as recorded.
#[derive(Default)]
struct Recorded(RefCell<Vec<(Instant, Duration)>>);

impl Latencies for Recorded {
    fn quantile(&self, _: Instant, _: u8, _: u32) -> Option<Duration> {
        Some(ms(50))
    }
    fn record(&self, now: Instant, latency: Duration) {
        self.0.borrow_mut().push((now, latency));
    }
}

#[test]
fn the_tracker_records_one_sample_per_operation_the_first_copys_latency_until_the_end() {
    let recorded = Recorded::default();
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(5).max_attempts(4))
        .build()
        .unwrap();
    let mut sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &recorded);
    assert_eq!(sim.m.delay(), Some(ms(50)));
    sim.send(); // copy 1 at 0
    sim.at(50).send(); // copy 2 at 50
    sim.at(60).status(2, 503); // a fast failure
    sim.send(); // copy 3 at 60
    sim.at(65).fail(3, error(ErrorKind::ConnectionReset));
    sim.send(); // copy 4 at 65
    sim.at(90).status(4, 200); // the winner, 25 ms after its own send
    sim.cancel();
    sim.returned();
    // Copy 1 had not answered after 90 ms, when the winner's answer ended the operation: the
    // one sample, and nothing of the others (a backup's 25 ms would pull the delay down, and
    // the extra load up).
    assert_eq!(*recorded.0.borrow(), [(at(90), ms(90))]);
}

#[test]
fn an_operation_that_ends_without_a_winner_records_its_first_copys_latency_too() {
    let recorded = Recorded::default();
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(5).max_attempts(2))
        .build()
        .unwrap();
    let mut sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &recorded);
    sim.send();
    sim.at(10).status(1, 503);
    sim.send();
    sim.at(30).status(2, 503);
    assert!(matches!(sim.m.poll(sim.now), HedgeDecision::Return(_)));
    assert_eq!(*recorded.0.borrow(), [(at(30), ms(30))]);
}

#[test]
fn a_first_copy_that_timed_out_is_recorded_at_its_timeout_and_once() {
    let recorded = Recorded::default();
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(5))
        .attempt_timeout(ms(30))
        .build()
        .unwrap();
    let mut sim = Sim::with(policy, Request::new(Method::Get), Unlimited, &recorded);
    sim.send();
    sim.at(40); // the driver wakes late: the copy still took its timeout
    sim.cancel();
    assert_eq!(*recorded.0.borrow(), [(at(30), ms(30))]);
    // Copy 2 goes at once and wins: the operation's sample is already recorded.
    sim.send();
    sim.at(45).status(2, 200);
    sim.returned();
    assert_eq!(*recorded.0.borrow(), [(at(30), ms(30))]);
}

// --- Budget -----------------------------------------------------------------------------

#[test]
fn every_copy_after_the_first_withdraws_from_the_retry_budget() {
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 3);
    assert_eq!(books.started.get(), 0, "nothing sent yet");
    sim.send();
    assert_eq!(
        books.started.get(),
        1,
        "the operation started with its first copy"
    );
    assert_eq!(books.asked.get(), 0, "the first copy is free");
    sim.at(10).send();
    sim.at(20).send();
    assert_eq!(books.asked.get(), 2);
    sim.at(21).status(3, 200);
    sim.cancel();
    sim.cancel();
    sim.returned();
    assert_eq!((books.asked.get(), books.given_back.get()), (2, 0));
    assert_eq!(*books.ends.borrow(), [true], "the winner is a success");
    // The same budget type retries use. The AWS quota charges a copy sent on the delay as a
    // retry after a timeout (10: the copy before did not answer in time), and a copy after a
    // retryable status as a plain retry (5).
    let quota = RetryQuota::new().with_capacity(25).with_success_refund(0);
    let mut sim = Sim::with(
        hedged(10, 3),
        Request::new(Method::Get),
        &quota,
        NoLatencies,
    );
    sim.send();
    sim.at(10).send();
    assert_eq!(quota.available(), 15);
    sim.at(12).status(2, 503);
    sim.send();
    assert_eq!(quota.available(), 10);
}

#[test]
fn a_budget_denial_suppresses_the_new_copy_and_later_ones_while_copies_in_flight_run_on() {
    let books = Books::granting(1);
    let mut sim = Sim::booked(&books, 10, 4);
    sim.send();
    sim.at(10).send();
    sim.at(20);
    // Copy 3 is denied: no send, copies 1 and 2 run on.
    assert_eq!(sim.wait(), (at(5_000), 2));
    assert_eq!(books.asked.get(), 2);
    sim.at(30).status(1, 503);
    // A non-final answer would send a copy, but the budget already said no: none is asked for.
    assert_eq!(sim.wait(), (at(5_010), 1));
    assert_eq!(
        books.asked.get(),
        2,
        "a denied operation does not ask again"
    );
    sim.at(40).status(2, 200);
    let o = sim.returned();
    assert_eq!(o.winner, Some(2));
    assert_eq!(o.outcome.attempts, 2);
    assert_eq!(
        (o.suppressed, o.suppressed_by),
        (2, Some(StopReason::Budget))
    );
    assert_eq!(
        o.outcome.reason,
        StopReason::FinalStatus,
        "the winner's reason"
    );
    // Every copy failing after a denial: the reason is the budget.
    let books = Books::granting(0);
    let mut sim = Sim::booked(&books, 10, 2);
    sim.send();
    sim.at(10);
    assert_eq!(sim.wait(), (at(5_000), 1));
    sim.at(11).status(1, 503);
    let o = sim.returned();
    assert_eq!(o.outcome.reason, StopReason::Budget);
    assert_eq!((o.outcome.attempts, o.suppressed), (1, 1));
}

#[test]
fn a_grant_for_a_copy_never_sent_is_given_back() {
    // An abort between the grant (the Send) and the start.
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 2);
    sim.send();
    sim.at(10);
    assert!(matches!(sim.poll(), HedgeDecision::Send { copy: 2, .. }));
    assert_eq!(books.asked.get(), 1);
    sim.m.handle(sim.now, HedgeEvent::Abort).unwrap();
    sim.cancel();
    sim.gave_up();
    assert_eq!(books.given_back.get(), 1);
    // The deadline reached before the start.
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(10)))
        .max_elapsed(ms(100))
        .build()
        .unwrap();
    let books = Books::granting(10);
    let mut sim = Sim::with(policy, Request::new(Method::Get), &books, NoLatencies);
    sim.send();
    sim.at(10);
    assert!(matches!(sim.poll(), HedgeDecision::Send { copy: 2, .. }));
    sim.at(100);
    sim.cancel();
    sim.gave_up();
    assert_eq!((books.asked.get(), books.given_back.get()), (1, 1));
    // The winner arriving before the start.
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 2);
    sim.send();
    sim.at(10);
    assert!(matches!(sim.poll(), HedgeDecision::Send { copy: 2, .. }));
    sim.status(1, 200);
    sim.returned();
    assert_eq!((books.asked.get(), books.given_back.get()), (1, 1));
}

#[test]
fn the_budget_hears_of_server_outcomes_but_not_of_aborts_or_permanent_errors() {
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 4);
    sim.send();
    sim.at(1).status(1, 503);
    sim.send();
    sim.at(2).fail(2, error(ErrorKind::ConnectionReset));
    sim.send();
    sim.at(3).fail(3, error(ErrorKind::Tls));
    assert_eq!(sim.returned().outcome.reason, StopReason::PermanentError);
    assert_eq!(*books.ends.borrow(), [false, false]);
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 2);
    sim.send();
    sim.at(10).send();
    sim.m.handle(sim.now, HedgeEvent::Abort).unwrap();
    sim.cancel();
    sim.cancel();
    sim.gave_up();
    assert!(books.ends.borrow().is_empty());
}

/// As on the retry path: a final answer that is not a 2xx or 3xx (a 404 here) wins, but the
/// budget hears of it neither as a success nor as a failure.
#[test]
fn a_winning_404_is_neither_a_success_nor_a_failure_for_the_budget() {
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 3);
    sim.send();
    sim.at(1).status(1, 503);
    sim.send();
    sim.at(2).status(2, 404);
    assert_eq!(
        sim.returned().outcome.last,
        Some(AttemptOutcome::Response(404))
    );
    assert_eq!(*books.ends.borrow(), [false]);
    let books = Books::granting(10);
    let mut sim = Sim::booked(&books, 10, 3);
    sim.send();
    sim.at(1).status(1, 200);
    sim.returned();
    assert_eq!(*books.ends.borrow(), [true], "a 2xx winner is a success");
}

#[test]
fn the_outcome_says_how_many_copies_were_sent_which_won_which_were_suppressed_and_why() {
    let books = Books::granting(1);
    let mut sim = Sim::booked(&books, 10, 5);
    sim.send();
    sim.at(10).send();
    sim.at(20);
    sim.wait(); // copy 3 denied
    sim.at(25).status(1, 404);
    assert_eq!(sim.cancel(), (2, CancelReason::Superseded { winner: 1 }));
    let o = sim.returned();
    assert_eq!(o.outcome.attempts, 2);
    assert_eq!(o.winner, Some(1));
    assert_eq!(o.cancelled, 1);
    assert_eq!(
        (o.suppressed, o.suppressed_by),
        (3, Some(StopReason::Budget))
    );
    assert_eq!(o.outcome.last, Some(AttemptOutcome::Response(404)));
    assert_eq!(o.outcome.elapsed, ms(25));
}

// --- Bounds -----------------------------------------------------------------------------

#[test]
fn the_worst_case_covers_hedging() {
    // One attempt when retried, with no backoff to speak of: the hedged bound is the larger.
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(100)).max_attempts(4))
        .max_attempts(1)
        .backoff(Backoff::constant(ms(1)))
        .max_elapsed(Duration::from_secs(60))
        .attempt_timeout(Duration::from_secs(2))
        .max_retry_after(Duration::from_secs(3))
        .build()
        .unwrap();
    let w = policy.worst_case();
    assert_eq!((w.attempts, w.in_flight), (4, 4));
    // A copy starts at most an attempt timeout plus the ceiling after the previous one (an
    // answer at the end of its timeout with a floor at the ceiling), and ends its timeout later.
    assert_eq!(w.elapsed, Duration::from_secs(3 * 5 + 2));
    assert_eq!(w.wait, Duration::from_secs(3));
    // Within max_elapsed.
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(100)).max_attempts(4))
        .max_elapsed(Duration::from_secs(10))
        .build()
        .unwrap();
    assert_eq!(policy.worst_case().elapsed, Duration::from_secs(10));
    // Retrying keeps one request in flight.
    assert_eq!(Policy::default().worst_case().in_flight, 1);
}

#[test]
fn a_driver_that_acts_at_once_finishes_within_the_worst_case() {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(100)).max_attempts(3))
        .max_elapsed(Duration::from_secs(60))
        .attempt_timeout(Duration::from_secs(1))
        .max_retry_after(Duration::from_secs(2))
        .retry_after_spread(Duration::from_secs(1))
        .build()
        .unwrap();
    let worst = policy.worst_case();
    // Every copy answers 503 with the ceiling's Retry-After just before its timeout.
    let mut sim = Sim::get(policy);
    let mut peak = 0;
    let outcome = loop {
        match sim.poll() {
            HedgeDecision::Send { copy, timeout, .. } => {
                sim.m.handle(sim.now, HedgeEvent::Started { copy }).unwrap();
                peak = peak.max(sim.m.in_flight());
                let end = sim.now.saturating_add(timeout - Duration::from_nanos(1));
                sim.now = end;
                sim.respond(copy, Response::new(503).retry_after(b"2"));
            }
            HedgeDecision::Wait { until, .. } => sim.now = until,
            HedgeDecision::Cancel { copy, .. } => {
                sim.m
                    .handle(sim.now, HedgeEvent::Cancelled { copy })
                    .unwrap();
            }
            HedgeDecision::Return(o) | HedgeDecision::GiveUp(o) => break o,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(outcome.outcome.attempts, 3);
    assert!(
        outcome.outcome.elapsed <= worst.elapsed,
        "{outcome:?} vs {worst:?}"
    );
    assert!(peak <= worst.in_flight);
}

// --- Determinism and the driver's contract ----------------------------------------------

fn scripted(seed: u64) -> Vec<HedgeDecision> {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(40)).max_attempts(4))
        .build()
        .unwrap();
    let mut m = HedgeMachine::new(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(seed),
        Instant::ZERO,
    );
    let mut out = Vec::new();
    let mut now = Instant::ZERO;
    let answers = [
        Response::new(503).retry_after(b"1"),
        Response::new(429).retry_after(b"0.5"),
        Response::new(502),
        Response::new(200),
    ];
    let mut next = answers.iter();
    for _ in 0..40 {
        let d = m.poll(now);
        out.push(d);
        match d {
            HedgeDecision::Send { copy, .. } => {
                m.handle(now, HedgeEvent::Started { copy }).unwrap();
                now = now.saturating_add(ms(15));
                if let Some(r) = next.next() {
                    m.handle(now, HedgeEvent::Response { copy, response: *r })
                        .unwrap();
                }
            }
            HedgeDecision::Wait { until, .. } => now = until,
            HedgeDecision::Cancel { copy, .. } => {
                m.handle(now, HedgeEvent::Cancelled { copy }).unwrap();
            }
            _ => break,
        }
    }
    out
}

#[test]
fn the_same_seed_and_events_give_the_same_decisions() {
    for seed in 0..20 {
        assert_eq!(scripted(seed), scripted(seed));
    }
    // The seed is used: the spread above a floor is drawn from it.
    assert!((0..20).any(|seed| scripted(seed) != scripted(seed + 1)));
}

#[test]
fn misplaced_events_are_misuse_errors_that_change_nothing() {
    let mut sim = Sim::get(hedged(10, 3));
    let check = |sim: &mut Sim, event: HedgeEvent<'_>, expected: MisuseError| {
        let before = format!("{:?}", sim.m);
        assert_eq!(sim.m.handle(sim.now, event), Err(expected), "{event:?}");
        assert_eq!(
            format!("{:?}", sim.m),
            before,
            "a refused {event:?} changed the machine"
        );
    };
    // Nothing started yet.
    check(
        &mut sim,
        HedgeEvent::Response {
            copy: 1,
            response: Response::new(200),
        },
        MisuseError::NoAttemptInFlight,
    );
    check(
        &mut sim,
        HedgeEvent::Error {
            copy: 1,
            error: error(ErrorKind::Dns),
        },
        MisuseError::NoAttemptInFlight,
    );
    check(
        &mut sim,
        HedgeEvent::Cancelled { copy: 1 },
        MisuseError::NoCancelPending,
    );
    check(
        &mut sim,
        HedgeEvent::Started { copy: 2 },
        MisuseError::NoSendPending,
    );
    for copy in [0, 11, u32::MAX] {
        check(
            &mut sim,
            HedgeEvent::Started { copy },
            MisuseError::NoSendPending,
        );
        check(
            &mut sim,
            HedgeEvent::Cancelled { copy },
            MisuseError::NoCancelPending,
        );
        check(
            &mut sim,
            HedgeEvent::Response {
                copy,
                response: Response::new(200),
            },
            MisuseError::NoAttemptInFlight,
        );
    }
    sim.send();
    // Started twice, the next copy before its delay, a copy not yet sent answering.
    check(
        &mut sim,
        HedgeEvent::Started { copy: 1 },
        MisuseError::NoSendPending,
    );
    sim.at(5);
    check(
        &mut sim,
        HedgeEvent::Started { copy: 2 },
        MisuseError::NoSendPending,
    );
    check(
        &mut sim,
        HedgeEvent::Response {
            copy: 2,
            response: Response::new(200),
        },
        MisuseError::NoAttemptInFlight,
    );
    check(
        &mut sim,
        HedgeEvent::Cancelled { copy: 1 },
        MisuseError::NoCancelPending,
    );
    sim.at(10).send();
    // The machine still works.
    sim.status(2, 200);
    assert_eq!(sim.cancel(), (1, CancelReason::Superseded { winner: 2 }));
    assert_eq!(sim.returned().winner, Some(2));
    check(
        &mut sim,
        HedgeEvent::Cancelled { copy: 1 },
        MisuseError::NoCancelPending,
    );
    check(
        &mut sim,
        HedgeEvent::Started { copy: 3 },
        MisuseError::NoSendPending,
    );
}

#[test]
fn a_terminal_decision_repeats_forever() {
    let mut sim = Sim::get(hedged(10, 2));
    sim.send();
    sim.at(3).status(1, 503);
    sim.send();
    sim.at(4).status(2, 500);
    let o = sim.returned();
    for t in [4, 5, 1_000, u64::MAX / 2_000_000] {
        sim.at(t);
        assert_eq!(sim.returned(), o);
        assert_eq!(sim.m.outcome(), Some(o));
        assert_eq!(sim.m.next_deadline(), None);
    }
}

#[test]
fn time_going_backwards_is_clamped_to_the_latest_time_seen() {
    let mut sim = Sim::get(hedged(50, 2));
    sim.send();
    sim.at(60);
    assert!(matches!(sim.poll(), HedgeDecision::Send { copy: 2, .. }));
    sim.at(10); // back in time: still due
    assert!(matches!(sim.poll(), HedgeDecision::Send { copy: 2, .. }));
    sim.m
        .handle(at(0), HedgeEvent::Started { copy: 2 })
        .unwrap();
    sim.at(0);
    // Copy 2 started at 60 ms (the latest time seen), so copy 1's timeout comes first.
    assert_eq!(sim.wait(), (at(5_000), 2));
    sim.at(5_000);
    assert_eq!(sim.cancel(), (1, CancelReason::TimedOut));
    assert_eq!(sim.wait(), (at(5_060), 1));
}

#[test]
fn a_deadline_reached_before_the_first_copy_is_the_reason_even_for_a_request_sent_once() {
    // Created at the end of time: the deadline is the creation instant, nothing can be sent.
    let policy = hedged(10, 2);
    let end = Instant::from_duration(Duration::MAX);
    for request in [Request::new(Method::Get), Request::new(Method::Post)] {
        let mut m = HedgeMachine::new(policy, request, Pcg64Mcg::seed_from_u64(1), end);
        let d = m.poll(end);
        let HedgeDecision::GiveUp(o) = d else {
            panic!("{request:?}: expected GiveUp, got {d:?}");
        };
        assert_eq!(
            (o.outcome.attempts, o.outcome.reason),
            (0, StopReason::Deadline),
            "{request:?}"
        );
    }
}

#[test]
fn a_grant_is_given_back_as_soon_as_its_copy_can_no_longer_be_sent() {
    // Granted on the delay, then a floor pushes the copy past the deadline while another
    // copy is still in flight: the grant goes back then, not when the operation ends.
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(10)).max_attempts(3))
        .max_elapsed(ms(1_000))
        .retry_after_spread(Duration::ZERO)
        .build()
        .unwrap();
    let books = Books::granting(10);
    let mut sim = Sim::with(policy, Request::new(Method::Get), &books, NoLatencies);
    sim.send();
    sim.at(10).send();
    sim.at(20);
    assert!(matches!(sim.poll(), HedgeDecision::Send { copy: 3, .. }));
    assert_eq!(books.asked.get(), 2);
    sim.respond(2, Response::new(503).retry_after(b"5"));
    assert_eq!(sim.wait(), (at(1_000), 1), "copy 1 runs on, no copy 3");
    assert_eq!(books.given_back.get(), 1, "copy 3's grant is back");
}

#[test]
fn next_deadline_is_when_to_poll_again_and_never_in_the_past() {
    let mut sim = Sim::get(hedged(50, 2));
    assert_eq!(sim.m.next_deadline(), None, "the first copy is due");
    sim.send();
    assert_eq!(sim.m.next_deadline(), Some(at(50)));
    sim.at(50).send();
    assert_eq!(sim.m.next_deadline(), Some(at(5_000)));
    // An answer that arrives after copy 1's timeout, which no call has applied yet: the machine
    // must be polled now, not at an instant already past.
    let late = at(6_000);
    sim.m
        .handle(
            late,
            HedgeEvent::Response {
                copy: 2,
                response: Response::new(503),
            },
        )
        .unwrap();
    assert!(
        sim.m.next_deadline().is_none_or(|t| t > late),
        "next_deadline {:?} is not after {late:?}",
        sim.m.next_deadline()
    );
}
