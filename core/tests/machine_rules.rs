//! One test per rule of the machine, named after the rule, on virtual time.

mod support;

use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, Backoff, Budget, Decision, DelaySource, ErrorClass, ErrorKind,
    Event, Instant, Jitter, Method, MisuseError, NonIdempotent, Policy, Request, Response,
    RetryAfterAboveMax, RetryMachine, StopReason, UnixTime,
};
use rand_core::SeedableRng;
use support::{millis, no_jitter, no_spread, Sim};

fn returned(d: Decision) -> backstop_core::Outcome {
    match d {
        Decision::Return(o) => o,
        other => panic!("expected Return, got {other:?}"),
    }
}

fn gave_up(d: Decision) -> backstop_core::Outcome {
    match d {
        Decision::GiveUp(o) => o,
        other => panic!("expected GiveUp, got {other:?}"),
    }
}

#[test]
fn default_retryable_statuses_are_retried() {
    for status in [408, 425, 429, 500, 502, 503, 504] {
        let mut sim = Sim::get(no_jitter());
        sim.start();
        sim.status(status);
        assert!(
            matches!(sim.poll(), Decision::Wait { .. }),
            "{status} should be retried"
        );
    }
}

#[test]
fn other_statuses_are_returned_at_once() {
    for status in [200, 201, 204, 301, 400, 401, 403, 404, 409, 422, 501, 505] {
        let mut sim = Sim::get(no_jitter());
        sim.start();
        sim.status(status);
        let o = returned(sim.poll());
        assert_eq!(o.attempts, 1);
        assert_eq!(o.reason, StopReason::FinalStatus);
        assert_eq!(o.last, Some(AttemptOutcome::Response(status)));
    }
}

#[test]
fn configured_statuses_replace_the_defaults() {
    let policy = Policy::builder()
        .retryable_statuses(&[409])
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.status(409);
    assert!(matches!(sim.poll(), Decision::Wait { .. }));
    sim.wait();
    sim.start();
    sim.status(503);
    assert_eq!(returned(sim.poll()).reason, StopReason::FinalStatus);
}

#[test]
fn max_attempts_counts_the_first_attempt_and_returns_the_last_response() {
    let mut sim = Sim::get(Policy::builder().max_attempts(3).build().unwrap());
    for expected in 1..=3 {
        let (attempt, _) = sim.start();
        assert_eq!(attempt, expected);
        sim.status(503);
        if expected < 3 {
            sim.wait();
        }
    }
    let o = returned(sim.poll());
    assert_eq!(o.attempts, 3);
    assert_eq!(o.reason, StopReason::Attempts);
    assert_eq!(o.last, Some(AttemptOutcome::Response(503)));
}

#[test]
fn exponential_backoff_doubles_from_base_up_to_cap() {
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .max_attempts(7)
        .max_elapsed(Duration::from_secs(60))
        .backoff(Backoff::exponential(millis(300), Duration::from_secs(2)))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    let mut waits = Vec::new();
    for _ in 0..6 {
        sim.start();
        sim.status(503);
        waits.push(sim.wait());
    }
    assert_eq!(
        waits,
        [300, 600, 1200, 2000, 2000, 2000].map(millis).to_vec()
    );
}

#[test]
fn linear_and_constant_backoff_follow_their_formulas() {
    for (backoff, expected) in [
        (
            Backoff::linear(millis(100), millis(250)),
            [100, 200, 250].map(millis),
        ),
        (Backoff::constant(millis(70)), [70, 70, 70].map(millis)),
    ] {
        let policy = Policy::builder()
            .jitter(Jitter::None)
            .backoff(backoff)
            .build()
            .unwrap();
        let mut sim = Sim::get(policy);
        let mut waits = Vec::new();
        for _ in 0..3 {
            sim.start();
            sim.status(500);
            waits.push(sim.wait());
        }
        assert_eq!(waits, expected.to_vec());
    }
}

#[test]
fn jittered_waits_stay_within_their_bounds() {
    let base = millis(100);
    let cap = millis(1_000);
    for jitter in [Jitter::Full, Jitter::Equal, Jitter::Decorrelated] {
        for seed in 0..50 {
            let policy = Policy::builder()
                .jitter(jitter)
                .max_attempts(8)
                .max_elapsed(Duration::from_secs(600))
                .backoff(Backoff::exponential(base, cap))
                .build()
                .unwrap();
            let mut sim = Sim::seeded(policy, Request::new(Method::Get), seed);
            let mut previous = base;
            for retry in 1..=7u32 {
                sim.start();
                sim.status(503);
                let d = Backoff::exponential(base, cap).delay(retry);
                let w = sim.wait();
                let (lo, hi) = match jitter {
                    Jitter::Full => (Duration::ZERO, d),
                    Jitter::Equal => (d / 2, d),
                    _ => (base, (previous * 3).min(cap)),
                };
                assert!(
                    w >= lo && w <= hi,
                    "{jitter:?} retry {retry}: {w:?} not in [{lo:?}, {hi:?}]"
                );
                assert!(w <= cap);
                previous = w;
            }
        }
    }
}

#[test]
fn deadline_stops_a_wait_that_would_end_past_it_and_keeps_the_response() {
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .max_elapsed(millis(1_000))
        .backoff(Backoff::constant(millis(600)))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.advance(millis(10));
    sim.status(503);
    sim.wait(); // 10 + 600 = 610 < 1000
    sim.start();
    sim.advance(millis(10));
    sim.status(502); // 620 + 600 >= 1000: not waited
    let o = returned(sim.poll());
    assert_eq!(o.reason, StopReason::Deadline);
    assert_eq!(o.last, Some(AttemptOutcome::Response(502)));
    assert_eq!(o.elapsed, millis(620));
}

#[test]
fn retry_after_longer_than_the_remaining_time_is_not_waited() {
    let policy = Policy::builder()
        .max_elapsed(millis(5_000))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(Response::new(429).retry_after(b"10"));
    let o = returned(sim.poll());
    assert_eq!(o.reason, StopReason::Deadline);
    assert_eq!(o.elapsed, Duration::ZERO);
}

#[test]
fn attempt_timeout_never_runs_past_the_deadline() {
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .max_elapsed(millis(1_000))
        .attempt_timeout(millis(800))
        .backoff(Backoff::constant(millis(100)))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    let (_, first) = sim.start();
    assert_eq!(first, millis(800));
    sim.advance(millis(500));
    sim.status(503);
    sim.wait(); // now 600
    let (_, second) = sim.start();
    assert_eq!(second, millis(400), "bounded by the 1 s deadline");
}

#[test]
fn an_attempt_past_its_timeout_counts_as_a_timeout_and_is_retried() {
    let policy = Policy::builder()
        .attempt_timeout(millis(200))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    let Decision::AwaitResponse { timeout_at, .. } = sim.poll() else {
        panic!("expected the attempt in flight");
    };
    assert_eq!(timeout_at, Instant::from_millis(200));
    sim.now = timeout_at;
    let Decision::Wait { reason, .. } = sim.poll() else {
        panic!("expected a retry after the timeout");
    };
    assert_eq!(
        reason.cause,
        Some(AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout)))
    );
    // The late response of the timed-out attempt is refused, not mistaken for the next one.
    assert_eq!(
        sim.machine
            .handle(sim.now, Event::Response(Response::new(200))),
        Err(MisuseError::NoAttemptInFlight)
    );
}

#[test]
fn no_attempt_starts_at_or_after_the_deadline() {
    let policy = Policy::builder().max_elapsed(millis(100)).build().unwrap();
    let mut machine = RetryMachine::new(
        policy,
        Request::new(Method::Get),
        rand_pcg::Pcg64Mcg::seed_from_u64(1),
        Instant::ZERO,
    );
    let o = gave_up(machine.poll(Instant::from_millis(100)));
    assert_eq!(
        (o.attempts, o.reason, o.last),
        (0, StopReason::Deadline, None)
    );
}

#[test]
fn get_head_options_are_retried_by_default_put_and_delete_only_when_added() {
    for method in [Method::Get, Method::Head, Method::Options] {
        let mut sim = Sim::new(no_jitter(), Request::new(method));
        sim.start();
        sim.status(503);
        assert!(matches!(sim.poll(), Decision::Wait { .. }), "{method}");
    }
    for method in [Method::Put, Method::Delete] {
        let mut sim = Sim::new(no_jitter(), Request::new(method));
        sim.start();
        sim.status(503);
        assert_eq!(
            returned(sim.poll()).reason,
            StopReason::NotIdempotent,
            "{method}"
        );

        let added = Policy::builder().add_retry_method(method).build().unwrap();
        let mut sim = Sim::new(added, Request::new(method));
        sim.start();
        sim.status(503);
        assert!(
            matches!(sim.poll(), Decision::Wait { .. }),
            "{method} added"
        );
    }
}

#[test]
fn post_and_patch_are_retried_with_an_idempotency_key_unless_the_policy_says_otherwise() {
    use NonIdempotent::{Never, ServerDeduplicatesWithoutKey, WithIdempotencyKey};
    for method in [Method::Post, Method::Patch] {
        for (choice, key, expected) in [
            (WithIdempotencyKey, true, None),
            (
                WithIdempotencyKey,
                false,
                Some(StopReason::NoIdempotencyKey),
            ),
            (Never, true, Some(StopReason::NotIdempotent)),
            (Never, false, Some(StopReason::NotIdempotent)),
            (ServerDeduplicatesWithoutKey, true, None),
            (ServerDeduplicatesWithoutKey, false, None),
        ] {
            let policy = Policy::builder().non_idempotent(choice).build().unwrap();
            let mut sim = Sim::new(policy, Request::new(method).with_idempotency_key(key));
            sim.start();
            sim.status(503);
            let context = format!("{method} {choice:?} key={key}");
            match (sim.poll(), expected) {
                (Decision::Wait { .. }, None) => {}
                (Decision::Return(o), Some(reason)) => assert_eq!(o.reason, reason, "{context}"),
                (other, _) => panic!("{context}: expected {expected:?}, got {other:?}"),
            }
        }
    }
}

#[test]
fn the_default_policy_retries_a_post_that_carries_a_key() {
    // The key alone is the opt-in: no policy setting is needed (the POST trap).
    let mut sim = Sim::new(
        Policy::default(),
        Request::new(Method::Post).with_idempotency_key(true),
    );
    sim.start();
    sim.fail(ErrorKind::ConnectionReset);
    assert!(matches!(sim.poll(), Decision::Wait { .. }));
}

#[test]
fn post_is_not_added_as_a_plain_retry_method() {
    assert!(Policy::builder()
        .add_retry_method(Method::Post)
        .build()
        .is_err());
}

#[test]
fn errors_before_sending_are_retried_for_any_method() {
    for kind in [
        ErrorKind::Dns,
        ErrorKind::ConnectionRefused,
        ErrorKind::ConnectTimeout,
    ] {
        let mut sim = Sim::new(no_jitter(), Request::new(Method::Post));
        sim.start();
        sim.fail(kind);
        assert!(matches!(sim.poll(), Decision::Wait { .. }), "{kind}");
    }
}

#[test]
fn errors_after_sending_are_retried_only_for_retryable_methods() {
    for kind in [
        ErrorKind::ConnectionReset,
        ErrorKind::BrokenPipe,
        ErrorKind::UnexpectedEof,
        ErrorKind::Timeout,
        ErrorKind::Protocol,
    ] {
        let mut get = Sim::get(no_jitter());
        get.start();
        get.fail(kind);
        assert!(matches!(get.poll(), Decision::Wait { .. }), "GET {kind}");

        let mut post = Sim::new(no_jitter(), Request::new(Method::Post));
        post.start();
        post.fail(kind);
        let o = gave_up(post.poll());
        assert_eq!(o.reason, StopReason::NoIdempotencyKey, "POST {kind}");
        assert_eq!(o.last, Some(AttemptOutcome::Error(AttemptError::new(kind))));
    }
}

#[test]
fn permanent_errors_are_never_retried() {
    for kind in [ErrorKind::Tls, ErrorKind::InvalidRequest] {
        let mut sim = Sim::get(no_jitter());
        sim.start();
        sim.fail(kind);
        assert_eq!(gave_up(sim.poll()).reason, StopReason::PermanentError);
    }
}

#[test]
fn the_caller_can_override_an_errors_class() {
    let mut sim = Sim::new(no_jitter(), Request::new(Method::Post));
    sim.start();
    let e = AttemptError::new(ErrorKind::Other).with_class(ErrorClass::NotSent);
    sim.machine.handle(sim.now, Event::Error(e)).unwrap();
    assert!(matches!(sim.poll(), Decision::Wait { .. }));

    let mut sim = Sim::get(no_jitter());
    sim.start();
    let e = AttemptError::new(ErrorKind::ConnectionReset).with_class(ErrorClass::Permanent);
    sim.machine.handle(sim.now, Event::Error(e)).unwrap();
    assert_eq!(gave_up(sim.poll()).reason, StopReason::PermanentError);
}

#[test]
fn abort_gives_up_from_every_state_and_nothing_is_sent_after() {
    // Before the first attempt, in flight, during a wait.
    for stage in 0..3 {
        let mut sim = Sim::get(no_jitter());
        if stage >= 1 {
            sim.start();
        }
        if stage == 2 {
            sim.status(503);
            assert!(matches!(sim.poll(), Decision::Wait { .. }));
        }
        sim.machine.handle(sim.now, Event::Abort).unwrap();
        for _ in 0..3 {
            sim.advance(Duration::from_secs(100));
            let o = gave_up(sim.poll());
            assert_eq!(o.reason, StopReason::Aborted);
        }
        assert_eq!(
            sim.machine.handle(sim.now, Event::AttemptStarted),
            Err(MisuseError::NoSendPending)
        );
    }
}

#[test]
fn abort_is_told_apart_from_a_timeout() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.fail(ErrorKind::Aborted);
    let o = gave_up(sim.poll());
    assert_eq!(o.reason, StopReason::Aborted);
    assert_eq!(
        o.last,
        Some(AttemptOutcome::Error(AttemptError::new(ErrorKind::Aborted)))
    );
}

#[test]
fn abort_after_the_end_changes_nothing() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.status(200);
    sim.machine.handle(sim.now, Event::Abort).unwrap();
    assert_eq!(returned(sim.poll()).reason, StopReason::FinalStatus);
}

#[test]
fn retry_after_seconds_is_a_floor_with_a_bounded_spread() {
    for seed in 0..100 {
        let mut sim = Sim::seeded(Policy::default(), Request::new(Method::Get), seed);
        sim.start();
        sim.respond(Response::new(503).retry_after(b"2"));
        let Decision::Wait { delay, reason, .. } = sim.poll() else {
            panic!("expected a wait");
        };
        assert_eq!(reason.source, DelaySource::RetryAfter);
        assert!(
            delay >= Duration::from_secs(2) && delay <= millis(2_200),
            "{delay:?}"
        );
    }
}

#[test]
fn retry_after_spread_of_zero_waits_exactly_the_servers_value() {
    let mut sim = Sim::get(no_spread());
    sim.start();
    sim.respond(Response::new(429).retry_after(b"1.25"));
    assert_eq!(sim.wait(), millis(1_250));
}

#[test]
#[cfg(feature = "std")] // HTTP-dates are parsed by `httpdate`, a std crate
fn retry_after_date_is_measured_against_the_responses_date_not_a_skewed_clock() {
    let mut sim = Sim::get(no_spread());
    sim.start();
    sim.respond(
        Response::new(429)
            .retry_after(b"Sun, 06 Nov 1994 08:49:40 GMT")
            .date(b"Sun, 06 Nov 1994 08:49:37 GMT")
            // The client's clock is an hour behind: it must not matter.
            .wall_clock(UnixTime::from_secs(784_111_777 - 3_600)),
    );
    assert_eq!(sim.wait(), Duration::from_secs(3));
}

#[test]
#[cfg(feature = "std")] // HTTP-dates are parsed by `httpdate`, a std crate
fn retry_after_date_falls_back_to_the_wall_clock_without_a_date() {
    let mut sim = Sim::get(no_spread());
    sim.start();
    sim.respond(
        Response::new(503)
            .retry_after(b"Sun, 06 Nov 1994 08:49:42 GMT")
            .wall_clock(UnixTime::from_secs(784_111_777)),
    );
    assert_eq!(sim.wait(), Duration::from_secs(5));
}

#[test]
#[cfg(feature = "std")] // HTTP-dates are parsed by `httpdate`, a std crate
fn retry_after_date_without_any_reference_falls_back_to_backoff() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.respond(Response::new(503).retry_after(b"Sun, 06 Nov 1994 08:49:42 GMT"));
    let Decision::Wait { delay, reason, .. } = sim.poll() else {
        panic!("expected a wait");
    };
    assert_eq!((delay, reason.source), (millis(300), DelaySource::Backoff));
}

#[test]
#[cfg(feature = "std")] // HTTP-dates are parsed by `httpdate`, a std crate
fn retry_after_date_in_the_past_means_retry_now() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.respond(
        Response::new(503)
            .retry_after(b"Sun, 06 Nov 1994 08:49:30 GMT")
            .date(b"Sun, 06 Nov 1994 08:49:37 GMT"),
    );
    assert!(matches!(sim.poll(), Decision::Send { attempt: 2, .. }));
}

#[test]
fn malformed_retry_after_falls_back_to_backoff() {
    for junk in [
        &b"-1"[..],
        b"1e3",
        b"NaN",
        b"0x10",
        b"soon",
        b"",
        b"1.",
        b"\xff\xfe",
    ] {
        let mut sim = Sim::get(no_jitter());
        sim.start();
        sim.respond(Response::new(503).retry_after(junk));
        let Decision::Wait { delay, reason, .. } = sim.poll() else {
            panic!("expected a wait for {junk:?}");
        };
        assert_eq!(
            (delay, reason.source),
            (millis(300), DelaySource::Backoff),
            "{junk:?}"
        );
    }
}

#[test]
fn retry_after_above_the_ceiling_returns_the_response_at_once() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(3_600))
        .max_retry_after(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(Response::new(429).retry_after(b"61"));
    let o = returned(sim.poll());
    assert_eq!(o.reason, StopReason::RetryAfterAboveMax);
    assert_eq!(o.last, Some(AttemptOutcome::Response(429)));
}

#[test]
fn retry_after_above_the_ceiling_is_clamped_when_configured() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(3_600))
        .max_retry_after(Duration::from_secs(60))
        .retry_after_above_max(RetryAfterAboveMax::Clamp)
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(Response::new(429).retry_after(b"18446744073709551616"));
    let Decision::Wait { delay, reason, .. } = sim.poll() else {
        panic!("expected a clamped wait");
    };
    assert_eq!(
        (delay, reason.source),
        (Duration::from_secs(60), DelaySource::RetryAfterClamped)
    );
}

#[test]
fn time_going_backwards_is_clamped_to_the_latest_time_seen() {
    let mut sim = Sim::get(no_jitter());
    sim.advance(millis(500));
    sim.start();
    sim.status(503);
    let Decision::Wait { until, .. } = sim.poll() else {
        panic!("expected a wait");
    };
    assert_eq!(until, Instant::from_millis(800));
    // An earlier `now` does not move the wait, nor shorten it.
    assert_eq!(
        sim.machine.poll(Instant::ZERO),
        sim.machine.poll(Instant::from_millis(500))
    );
}

#[test]
fn misplaced_events_are_errors_not_panics() {
    let mut sim = Sim::get(no_jitter());
    assert_eq!(
        sim.machine
            .handle(sim.now, Event::Response(Response::new(200))),
        Err(MisuseError::NoAttemptInFlight)
    );
    sim.start();
    assert_eq!(
        sim.machine.handle(sim.now, Event::AttemptStarted),
        Err(MisuseError::NoSendPending)
    );
    sim.status(200);
    assert_eq!(
        sim.machine
            .handle(sim.now, Event::Error(AttemptError::new(ErrorKind::Other))),
        Err(MisuseError::NoAttemptInFlight)
    );
    assert_eq!(returned(sim.poll()).reason, StopReason::FinalStatus);
}

#[test]
fn a_terminal_decision_repeats_forever() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.status(404);
    let first = sim.poll();
    for _ in 0..5 {
        sim.advance(Duration::from_secs(1));
        assert_eq!(sim.poll(), first);
    }
    assert!(sim.machine.next_deadline().is_none());
}

struct DenyAll;
impl Budget for DenyAll {
    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        false
    }
}

#[test]
fn a_retry_the_budget_denies_ends_with_reason_budget_and_the_last_response() {
    let mut m = RetryMachine::with_budget(
        no_jitter(),
        Request::new(Method::Get),
        rand_pcg::Pcg64Mcg::seed_from_u64(3),
        DenyAll,
        Instant::ZERO,
    );
    assert!(matches!(m.poll(Instant::ZERO), Decision::Send { .. }));
    m.handle(Instant::ZERO, Event::AttemptStarted).unwrap();
    m.handle(Instant::ZERO, Event::Response(Response::new(503)))
        .unwrap();
    let o = returned(m.poll(Instant::ZERO));
    assert_eq!(
        (o.reason, o.last),
        (StopReason::Budget, Some(AttemptOutcome::Response(503)))
    );
}

#[test]
fn the_same_seed_and_events_give_the_same_decisions() {
    let run = |seed| {
        let mut sim = Sim::seeded(Policy::default(), Request::new(Method::Get), seed);
        let mut decisions = Vec::new();
        for _ in 0..3 {
            sim.start();
            sim.status(503);
            decisions.push(sim.poll());
            if matches!(decisions.last(), Some(Decision::Wait { .. })) {
                sim.wait();
            }
        }
        decisions
    };
    assert_eq!(run(11), run(11));
    assert_ne!(run(11), run(12), "a different seed draws different jitter");
}

#[test]
fn abort_at_the_deadline_is_reported_as_aborted() {
    // Found by the property test: the caller's abort wins over a bound no decision has
    // reported yet.
    let policy = Policy::builder().max_elapsed(millis(100)).build().unwrap();
    let mut sim = Sim::get(policy);
    sim.advance(millis(100));
    sim.machine.handle(sim.now, Event::Abort).unwrap();
    assert_eq!(gave_up(sim.poll()).reason, StopReason::Aborted);
}

#[derive(Default)]
struct CountingBudget {
    ends: core::cell::Cell<u32>,
}
impl Budget for CountingBudget {
    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        true
    }
    fn on_attempt_end(&self, _now: Instant, _success: bool) {
        self.ends.set(self.ends.get() + 1);
    }
}

#[test]
fn the_budget_hears_of_server_outcomes_but_not_of_aborts_or_permanent_errors() {
    for (kind, told) in [
        (ErrorKind::Aborted, 0),
        (ErrorKind::Tls, 0),
        (ErrorKind::ConnectionReset, 1),
        (ErrorKind::ConnectionRefused, 1),
    ] {
        let budget = CountingBudget::default();
        let mut m = RetryMachine::with_budget(
            no_jitter(),
            Request::new(Method::Get),
            rand_pcg::Pcg64Mcg::seed_from_u64(3),
            &budget,
            Instant::ZERO,
        );
        let _ = m.poll(Instant::ZERO);
        m.handle(Instant::ZERO, Event::AttemptStarted).unwrap();
        m.handle(Instant::ZERO, Event::Error(AttemptError::new(kind)))
            .unwrap();
        assert_eq!(budget.ends.get(), told, "{kind}");
    }
}

#[test]
fn the_retry_after_spread_never_costs_a_retry_the_servers_value_allows() {
    // Default policy: 15 s deadline, 1 s spread. A 503 with `Retry-After: 9.5` at 4.9 s fits
    // with 0.6 s to spare, whatever the spread draws.
    for seed in 0..200 {
        let mut sim = Sim::seeded(Policy::default(), Request::new(Method::Get), seed);
        sim.start();
        sim.advance(millis(4_900));
        sim.respond(Response::new(503).retry_after(b"9.5"));
        match sim.poll() {
            Decision::Wait { until, delay, .. } => {
                assert!(delay >= millis(9_500), "seed {seed}: {delay:?}");
                assert!(until < sim.machine.deadline(), "seed {seed}: {until:?}");
            }
            other => panic!("seed {seed}: the server's value fits, yet {other:?}"),
        }
    }
}

#[test]
fn a_rejected_event_changes_nothing() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.status(503); // now waiting
    let before = format!("{:?}", sim.machine);
    let far = Instant::from_secs(1_000_000);
    for event in [
        Event::Response(Response::new(200)),
        Event::Error(AttemptError::new(ErrorKind::Timeout)),
    ] {
        assert_eq!(
            sim.machine.handle(far, event),
            Err(MisuseError::NoAttemptInFlight)
        );
        assert_eq!(
            format!("{:?}", sim.machine),
            before,
            "{event:?} changed the machine"
        );
    }
    // An attempt in flight is not timed out by a refused `AttemptStarted` at a later time.
    let mut sim = Sim::get(no_jitter());
    sim.start();
    let before = format!("{:?}", sim.machine);
    assert_eq!(
        sim.machine.handle(far, Event::AttemptStarted),
        Err(MisuseError::NoSendPending)
    );
    assert_eq!(format!("{:?}", sim.machine), before);
    assert!(matches!(
        sim.machine.poll(Instant::ZERO),
        Decision::AwaitResponse { attempt: 1, .. }
    ));
}

#[test]
fn a_response_in_hand_wins_over_a_timeout_no_decision_reported() {
    let policy = Policy::builder().max_attempts(1).build().unwrap();
    let mut sim = Sim::get(policy);
    let (_, timeout) = sim.start();
    // The client hands over a 200 just as the attempt's timeout passes; no poll in between.
    sim.advance(timeout);
    sim.status(200);
    let outcome = returned(sim.poll());
    assert_eq!(outcome.reason, StopReason::FinalStatus);
    assert_eq!(outcome.last, Some(AttemptOutcome::Response(200)));
}

#[test]
fn a_response_after_a_reported_timeout_is_refused() {
    let mut sim = Sim::get(no_jitter());
    let (_, timeout) = sim.start();
    sim.advance(timeout);
    let _ = sim.poll(); // the machine reports the timeout
    assert_eq!(
        sim.machine
            .handle(sim.now, Event::Response(Response::new(200))),
        Err(MisuseError::NoAttemptInFlight)
    );
}

#[test]
fn a_body_that_cannot_be_sent_again_is_never_retried() {
    // A streamed body is gone once sent (or handed to the client): even a 503, or an error
    // before sending, ends the operation with its own reason and the last response or error.
    let request = Request::new(Method::Put).with_replayable_body(false);
    let policy = Policy::builder()
        .add_retry_method(Method::Put)
        .build()
        .unwrap();
    let mut sim = Sim::new(policy, request);
    sim.start();
    sim.status(503);
    let outcome = returned(sim.poll());
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, StopReason::BodyNotReplayable)
    );
    assert_eq!(outcome.reason.as_str(), "body_not_replayable");

    let mut sim = Sim::new(policy, request);
    sim.start();
    sim.fail(ErrorKind::ConnectionRefused);
    let outcome = gave_up(sim.poll());
    assert_eq!(outcome.reason, StopReason::BodyNotReplayable);

    // A final status is still the answer.
    let mut sim = Sim::new(policy, request);
    sim.start();
    sim.status(200);
    assert_eq!(returned(sim.poll()).reason, StopReason::FinalStatus);
}

/// The wait after `response` to a first attempt, and where its length came from.
fn wait_after(policy: Policy, response: Response<'_>) -> (Duration, DelaySource) {
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(response);
    match sim.poll() {
        Decision::Wait { delay, reason, .. } => (delay, reason.source),
        other => panic!("expected a wait, got {other:?}"),
    }
}

#[test]
fn rate_limit_reset_is_a_floor_when_there_is_no_retry_after() {
    let secs = Duration::from_secs;
    let cases: [(Response<'_>, Duration); 5] = [
        (
            Response::new(429).rate_limit(br#""default";r=0;t=1"#),
            secs(1),
        ),
        (
            Response::new(429)
                .rate_limit(br#""day";r=0"#)
                .rate_limit_policy(br#""day";q=100;w=2"#),
            secs(2),
        ),
        (
            // On a 503 a reset is a floor only when its remaining field says the quota is out.
            Response::new(503)
                .rate_limit_remaining(b"0")
                .rate_limit_reset(b"3"),
            secs(3),
        ),
        (
            Response::new(429).x_rate_limit_reset_after(b"1.5"),
            millis(1_500),
        ),
        (
            Response::new(429)
                .x_rate_limit_reset(b"1700000004")
                .wall_clock(UnixTime::from_secs(1_700_000_000)),
            secs(4),
        ),
    ];
    for (response, floor) in cases {
        for seed in 0..20 {
            let mut sim = Sim::seeded(Policy::default(), Request::new(Method::Get), seed);
            sim.start();
            sim.respond(response);
            let Decision::Wait { delay, reason, .. } = sim.poll() else {
                panic!("expected a wait after {response:?}");
            };
            assert_eq!(reason.source, DelaySource::RateLimitReset, "{response:?}");
            // The same spread as Retry-After: U[0, min(1 s, floor / 10)].
            assert!(
                delay >= floor && delay <= floor + floor / 10,
                "{delay:?} after {response:?}"
            );
        }
    }
}

#[test]
fn retry_after_wins_over_the_rate_limit_fields() {
    let response = Response::new(429)
        .retry_after(b"2")
        .rate_limit(br#""default";r=0;t=9"#)
        .rate_limit_reset(b"8")
        .x_rate_limit_reset_after(b"7");
    assert_eq!(
        wait_after(no_spread(), response),
        (Duration::from_secs(2), DelaySource::RetryAfter)
    );
    // A malformed Retry-After is absent: the rate-limit field applies.
    let response = response.retry_after(b"soon");
    assert_eq!(
        wait_after(no_spread(), response),
        (Duration::from_secs(9), DelaySource::RateLimitReset)
    );
}

#[test]
fn rate_limit_fields_are_tried_in_the_documented_order() {
    let all = Response::new(429)
        .rate_limit(br#""default";r=0;t=4"#)
        .rate_limit_reset(b"3")
        .x_rate_limit_reset_after(b"2")
        .x_rate_limit_reset(b"1")
        .wall_clock(UnixTime::EPOCH);
    let secs = |s| (Duration::from_secs(s), DelaySource::RateLimitReset);
    assert_eq!(wait_after(no_spread(), all), secs(4));
    let all = all.rate_limit(b"junk;");
    assert_eq!(wait_after(no_spread(), all), secs(3));
    let all = all.rate_limit_reset(b"-3");
    assert_eq!(wait_after(no_spread(), all), secs(2));
    let all = all.x_rate_limit_reset_after(b"");
    assert_eq!(wait_after(no_spread(), all), secs(1));
}

#[test]
#[cfg(feature = "std")] // the `Date` reference is an HTTP-date, parsed by `httpdate`
fn x_rate_limit_reset_is_unix_time_against_the_date_unless_the_policy_says_seconds() {
    // Sun, 06 Nov 1994 08:49:37 GMT is 784111777; the client's clock is an hour behind.
    let response = Response::new(429)
        .x_rate_limit_reset(b"784111780")
        .date(b"Sun, 06 Nov 1994 08:49:37 GMT")
        .wall_clock(UnixTime::from_secs(784_111_777 - 3_600));
    assert_eq!(
        wait_after(no_spread(), response),
        (Duration::from_secs(3), DelaySource::RateLimitReset)
    );
    let seconds = Policy::builder()
        .retry_after_spread(Duration::ZERO)
        .x_rate_limit_reset(backstop_core::XRateLimitReset::DelaySeconds)
        .max_elapsed(Duration::from_secs(3_600))
        .build()
        .unwrap();
    let response = Response::new(429).x_rate_limit_reset(b"5");
    assert_eq!(
        wait_after(seconds, response),
        (Duration::from_secs(5), DelaySource::RateLimitReset)
    );
    // A Unix time without a `Date` or a wall clock is absent: the backoff applies.
    assert_eq!(wait_after(no_jitter(), response).1, DelaySource::Backoff);
}

#[test]
fn rate_limit_reset_above_the_ceiling_gives_up_or_is_clamped_like_retry_after() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(3_600))
        .max_retry_after(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(Response::new(429).rate_limit(br#""day";r=0;t=86400"#));
    let o = returned(sim.poll());
    assert_eq!(o.reason, StopReason::RetryAfterAboveMax);
    let clamp = Policy::builder()
        .max_elapsed(Duration::from_secs(3_600))
        .max_retry_after(Duration::from_secs(60))
        .retry_after_above_max(RetryAfterAboveMax::Clamp)
        .build()
        .unwrap();
    assert_eq!(
        wait_after(clamp, Response::new(429).rate_limit_reset(b"86400")),
        (Duration::from_secs(60), DelaySource::RateLimitResetClamped)
    );
}

#[test]
fn rate_limit_reset_longer_than_the_remaining_time_is_not_waited() {
    let mut sim = Sim::get(Policy::default()); // 15 s deadline
    sim.start();
    sim.advance(Duration::from_secs(5));
    sim.respond(
        Response::new(503)
            .x_rate_limit_remaining(b"0")
            .x_rate_limit_reset_after(b"10"),
    );
    let o = returned(sim.poll());
    assert_eq!(o.reason, StopReason::Deadline);
    assert_eq!(o.elapsed, Duration::from_secs(5));
}

#[test]
fn malformed_rate_limit_fields_fall_back_to_backoff() {
    for junk in [
        &b"r=0;t=1"[..],
        br#""default";r=0;t=-1"#,
        br#""default";r=0;t=1.5"#,
        br#""default";r=0;t=1,"#,
        br#""default";r=1;t=1"#,
        b"\xff",
    ] {
        let response = Response::new(429)
            .rate_limit(junk)
            .rate_limit_reset(junk)
            .x_rate_limit_reset_after(junk)
            .x_rate_limit_reset(junk)
            .wall_clock(UnixTime::EPOCH);
        assert_eq!(
            wait_after(no_jitter(), response),
            (millis(300), DelaySource::Backoff),
            "{junk:?}"
        );
    }
}

#[test]
fn rate_limit_fields_are_ignored_when_the_policy_opts_out_or_the_status_is_final() {
    let off = Policy::builder()
        .jitter(Jitter::None)
        .rate_limit_fields(false)
        .build()
        .unwrap();
    let response = Response::new(429).rate_limit(br#""default";r=0;t=1"#);
    assert_eq!(
        wait_after(off, response),
        (millis(300), DelaySource::Backoff)
    );
    // A 404 is final whatever its fields say (a 403 is the exception: with an exhausted quota
    // it is a rate-limit answer, see `rate_limited_403.rs`).
    let mut sim = Sim::get(Policy::default());
    sim.start();
    sim.respond(Response::new(404).rate_limit(br#""default";r=0;t=1"#));
    assert_eq!(returned(sim.poll()).reason, StopReason::FinalStatus);
}

#[test]
fn retry_after_on_a_final_status_changes_nothing_and_is_on_the_outcome() {
    for status in [301, 302, 303, 307, 308, 400, 404] {
        let mut sim = Sim::get(Policy::default());
        sim.start();
        sim.respond(Response::new(status).retry_after(b"7"));
        let o = returned(sim.poll());
        assert_eq!((o.attempts, o.reason), (1, StopReason::FinalStatus));
        assert_eq!(o.retry_after, Some(Duration::from_secs(7)), "{status}");
    }
    // Only the last response's, and only when the last outcome is a response.
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.respond(Response::new(503).retry_after(b"0.1"));
    sim.wait();
    sim.start();
    sim.fail(ErrorKind::ConnectionRefused);
    let mut terminal = None;
    // Bounded: the machine stops within its attempts; 1,000 decisions is far beyond.
    for _ in 0..1_000 {
        match sim.poll() {
            Decision::Wait { until, .. } => sim.now = until,
            Decision::Send { .. } => {
                sim.start();
                sim.status(200);
            }
            d => {
                terminal = d.outcome().copied();
                break;
            }
        }
    }
    let o = terminal.expect("the machine stops within 1,000 decisions");
    assert_eq!(
        (o.last, o.retry_after),
        (Some(AttemptOutcome::Response(200)), None)
    );
}

#[test]
fn the_machine_never_exceeds_the_worst_case() {
    let policies = [
        Policy::default(),
        Policy::builder()
            .max_attempts(6)
            .max_elapsed(Duration::from_secs(3_600))
            .attempt_timeout(Duration::from_secs(2))
            .max_retry_after(Duration::from_secs(5))
            .retry_after_above_max(RetryAfterAboveMax::Clamp)
            .build()
            .unwrap(),
        Policy::builder()
            .max_attempts(3)
            .max_elapsed(Duration::from_secs(60))
            .backoff(Backoff::constant(Duration::from_secs(9)))
            .jitter(Jitter::None)
            .build()
            .unwrap(),
    ];
    for policy in policies {
        let worst = policy.worst_case();
        for (slow, server) in [(false, &b"3600"[..]), (true, b"4"), (true, b"junk")] {
            let mut sim = Sim::get(policy);
            let mut longest_wait = Duration::ZERO;
            // The worst server: every attempt answers 503 (or hangs until its timeout).
            let mut terminal = None;
            // Bounded: the machine stops within its attempts; 1,000 decisions is far beyond.
            for _ in 0..1_000 {
                match sim.poll() {
                    Decision::Send { timeout, .. } => {
                        sim.start();
                        if slow {
                            sim.advance(timeout);
                        } else {
                            sim.respond(Response::new(503).retry_after(server));
                        }
                    }
                    Decision::AwaitResponse { timeout_at, .. } => sim.now = timeout_at,
                    Decision::Wait { until, delay, .. } => {
                        longest_wait = longest_wait.max(delay);
                        sim.now = until;
                    }
                    d => {
                        terminal = d.outcome().copied();
                        break;
                    }
                }
            }
            let o = terminal.expect("the machine stops within 1,000 decisions");
            assert!(o.attempts <= worst.attempts, "{o:?} {worst:?}");
            assert!(o.elapsed <= worst.elapsed, "{o:?} {worst:?}");
            assert!(longest_wait <= worst.wait, "{longest_wait:?} {worst:?}");
        }
    }
}
