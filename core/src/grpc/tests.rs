//! The A6 rules through both machines: grpc-go's `test/retry_test.go` cases as vectors.

use core::time::Duration;

use rand_core::SeedableRng;

use super::{Code, Pushback, RetryPolicy};
use crate::{
    Decision, DelaySource, Event, HedgeDecision, HedgeEvent, HedgeMachine, Instant, Method,
    Request, Response, RetryMachine, StopReason, TokenBucket,
};

type Rng = rand_pcg::Pcg64Mcg;

const NONE: &[&[u8]] = &[];
const MINUS_ONE: &[&[u8]] = &[b"-1"];
const ONE_SECOND: &[&[u8]] = &[b"1000"];
const FIVE_SECONDS: &[&[u8]] = &[b"5000"];

fn rng() -> Rng {
    Rng::seed_from_u64(41)
}

/// grpc-go's retry policy in `TestRetryThrottling` and `TestRetryStreaming`.
fn grpc_go_policy() -> RetryPolicy {
    let built = RetryPolicy::builder()
        .max_attempts(4)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(10))
        .backoff_multiplier(1.0)
        .retryable_status_codes(&[Code::Unavailable])
        .build();
    assert!(built.is_ok(), "{built:?}");
    built.unwrap_or_else(|_| unreachable!())
}

/// A Trailers-Only answer with `code` (and the pushback values, if any), classified by `a6`.
fn answer<'a>(a6: &RetryPolicy, code: Code, pushback: &[&'a [u8]]) -> Response<'a> {
    let r = Response::new(200).class(a6.class(code));
    match Pushback::from_values(pushback.iter().copied()) {
        Some(p) => r.pushback(p),
        None => r,
    }
}

/// Runs one call on virtual time: each attempt gets the next answer of `server`. The last
/// answer's code, the decisions' stop reason, and the waits.
fn call<'a>(
    a6: &RetryPolicy,
    budget: &TokenBucket,
    server: &mut dyn FnMut() -> (Code, &'a [&'a [u8]]),
) -> (Code, StopReason, [Option<(Duration, DelaySource)>; 5]) {
    let mut now = Instant::ZERO;
    let request = Request::new(Method::Post);
    let mut m = RetryMachine::with_budget(a6.policy(), request, rng(), budget, now);
    let (mut last, mut waits, mut n) = (Code::Unknown, [None; 5], 0);
    for _ in 0..20 {
        match m.poll(now) {
            Decision::Send { .. } => {
                assert!(m.handle(now, Event::AttemptStarted).is_ok());
                let (code, pushback) = server();
                last = code;
                now = now.saturating_add(Duration::from_millis(1));
                let event = Event::Response(answer(a6, code, pushback));
                assert!(m.handle(now, event).is_ok());
            }
            Decision::Wait {
                until,
                delay,
                reason,
                ..
            } => {
                if let Some(w) = waits.get_mut(n) {
                    *w = Some((delay, reason.source));
                }
                n += 1;
                now = until;
            }
            Decision::Return(o) | Decision::GiveUp(o) => return (last, o.reason, waits),
            other => unreachable!("unexpected {other:?}"),
        }
    }
    unreachable!("the call did not end in 20 decisions");
}

/// grpc-go's `TestRetryThrottling`: `maxTokens` 10, `tokenRatio` 0.5; the server answers OK on
/// the calls numbered below and UNAVAILABLE otherwise. Each row: the code the caller gets and
/// the server's count of attempts (from 0) when the call ends.
#[test]
fn grpc_go_throttling_table() {
    let a6 = grpc_go_policy();
    let budget = TokenBucket::new(10, 500);
    assert!(budget.is_ok());
    let budget = budget.unwrap_or_else(|_| unreachable!());
    let ok_at = [0, 3, 6, 10, 11, 12, 13, 14, 16, 18];
    let rows = [
        (Code::Ok, 0),
        (Code::Ok, 3),
        (Code::Ok, 6),
        (Code::Unavailable, 8), // the first attempt is retried; the second is throttled
        (Code::Unavailable, 9),
        (Code::Ok, 10),
        (Code::Ok, 11),
        (Code::Ok, 12),
        (Code::Ok, 13),
        (Code::Ok, 14),
        (Code::Ok, 16),
        (Code::Unavailable, 17),
    ];
    let mut i: i32 = -1;
    for (row, (code, count)) in rows.into_iter().enumerate() {
        let mut server = || {
            i += 1;
            let c = if ok_at.contains(&i) {
                Code::Ok
            } else {
                Code::Unavailable
            };
            (c, NONE)
        };
        let (got, reason, _) = call(&a6, &budget, &mut server);
        assert_eq!((got, i), (code, count), "row {row} ({reason})");
        if code == Code::Unavailable {
            assert_eq!(reason, StopReason::Budget, "row {row}");
        }
    }
}

/// grpc-go's `TestRetryStreaming` pushback cases: `-1`, `xxx` and two values stop at once;
/// `1000` makes the retry wait exactly one second.
#[test]
fn grpc_go_pushback_cases_through_the_retry_machine() {
    let a6 = grpc_go_policy();
    let budget = TokenBucket::new(10, 500).unwrap_or_else(|_| unreachable!());
    let stops: [&[&[u8]]; 3] = [&[b"-1"], &[b"xxx"], &[b"100", b"10"]];
    for pushback in stops {
        let mut attempts = 0;
        let mut server = || {
            attempts += 1;
            (Code::Unavailable, pushback)
        };
        let (code, reason, _) = call(&a6, &budget, &mut server);
        assert_eq!(
            (code, reason, attempts),
            (Code::Unavailable, StopReason::ServerPushback, 1),
            "{pushback:?}"
        );
    }
    let mut attempts = 0;
    let mut server = || {
        attempts += 1;
        if attempts == 1 {
            (Code::Unavailable, ONE_SECOND)
        } else {
            (Code::Ok, NONE)
        }
    };
    let (code, reason, waits) = call(&a6, &budget, &mut server);
    assert_eq!(
        (code, reason, attempts),
        (Code::Ok, StopReason::FinalStatus, 2)
    );
    assert_eq!(
        waits[0],
        Some((Duration::from_secs(1), DelaySource::ServerPushback))
    );
}

#[test]
/// A code not retried stays final; its pushback "do not retry" still counts as a failure to
/// the throttle (gRFC A6, as grpc-go counts it).
fn a_pushback_that_stops_an_answer_not_retried_is_a_failure_to_the_throttle() {
    let a6 = grpc_go_policy();
    let budget = TokenBucket::new(10, 500).unwrap_or_else(|_| unreachable!());
    let mut server = || (Code::Internal, MINUS_ONE);
    let (code, reason, _) = call(&a6, &budget, &mut server);
    assert_eq!((code, reason), (Code::Internal, StopReason::FinalStatus));
    assert_eq!(budget.tokens_milli(), 9_000);
}

#[test]
fn a_pushback_past_the_deadline_ends_the_call_at_once() {
    let a6 = RetryPolicy::builder()
        .max_attempts(3)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_millis(10))
        .backoff_multiplier(2.0)
        .retryable_status_codes(&[Code::ResourceExhausted])
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap_or_else(|e| unreachable!("{e}"));
    let budget = TokenBucket::new(10, 500).unwrap_or_else(|_| unreachable!());
    let mut server = || (Code::ResourceExhausted, FIVE_SECONDS);
    let (_, reason, waits) = call(&a6, &budget, &mut server);
    assert_eq!((reason, waits[0]), (StopReason::Deadline, None));
}

#[test]
fn a_final_grpc_error_is_neither_a_success_nor_a_failure_to_the_throttle() {
    let a6 = grpc_go_policy();
    let budget = TokenBucket::new(10, 500).unwrap_or_else(|_| unreachable!());
    let mut unavailable = || (Code::Unavailable, MINUS_ONE);
    let _ = call(&a6, &budget, &mut unavailable);
    assert_eq!(budget.tokens_milli(), 9_000);
    let mut internal = || (Code::Internal, NONE);
    let _ = call(&a6, &budget, &mut internal);
    assert_eq!(budget.tokens_milli(), 9_000);
    let mut ok = || (Code::Ok, NONE);
    let _ = call(&a6, &budget, &mut ok);
    assert_eq!(budget.tokens_milli(), 9_500);
}

/// A6's "Summary of Retry and Hedging Logic": after a retry a pushback timed fails, the retry
/// delay resets to the initial backoff (no jitter here, so every wait is exact).
#[test]
fn the_backoff_starts_over_after_a_pushback() {
    use crate::{Backoff, Jitter, Multiplier, Policy};
    let a6 = grpc_go_policy();
    let ms = Duration::from_millis;
    let ten = Multiplier::new(10.0).unwrap_or_else(|| unreachable!());
    let policy = Policy::builder()
        .max_attempts(5)
        .max_elapsed(Duration::from_secs(600))
        .attempt_timeout(Duration::from_secs(600))
        .non_idempotent(crate::NonIdempotent::ServerDeduplicatesWithoutKey)
        .backoff(Backoff::geometric(ms(100), ten, Duration::from_secs(100)))
        .jitter(Jitter::None)
        .build()
        .unwrap_or_else(|e| unreachable!("{e}"));
    let mut now = Instant::ZERO;
    let mut m = RetryMachine::new(policy, Request::new(Method::Post), rng(), now);
    let answers: [&[&[u8]]; 5] = [NONE, NONE, &[b"50"], NONE, NONE];
    let mut answers = answers.into_iter();
    let mut waits = [Duration::ZERO; 4];
    let mut n = 0;
    for _ in 0..20 {
        match m.poll(now) {
            Decision::Send { .. } => {
                assert!(m.handle(now, Event::AttemptStarted).is_ok());
                let pushback = answers.next().unwrap_or(NONE);
                let event = Event::Response(answer(&a6, Code::Unavailable, pushback));
                assert!(m.handle(now, event).is_ok());
            }
            Decision::Wait { until, delay, .. } => {
                if let Some(w) = waits.get_mut(n) {
                    *w = delay;
                }
                n += 1;
                now = until;
            }
            _ => break,
        }
    }
    // 100 ms, 1 s, the pushback's 50 ms, then 100 ms again (not 10 s), and 1 s.
    assert_eq!(waits, [ms(100), ms(1_000), ms(50), ms(100)]);
}

fn hedging(delay: Duration) -> RetryPolicy {
    RetryPolicy::hedging_builder()
        .max_attempts(3)
        .hedging_delay(delay)
        .non_fatal_status_codes(&[Code::Unavailable])
        .build()
        .unwrap_or_else(|e| unreachable!("{e}"))
}

/// Polls until the machine asks for a send, answering nothing; the copy it sends.
fn next_send(m: &mut HedgeMachine<Rng>, now: Instant) -> Option<u32> {
    match m.poll(now) {
        HedgeDecision::Send { copy, .. } => {
            assert!(m.handle(now, HedgeEvent::Started { copy }).is_ok());
            Some(copy)
        }
        _ => None,
    }
}

#[test]
fn a_hedged_call_sends_no_copy_after_a_pushback_that_stops() {
    let a6 = hedging(Duration::from_secs(1));
    let now = Instant::ZERO;
    let mut m = HedgeMachine::new(a6.policy(), Request::new(Method::Post), rng(), now);
    assert_eq!(next_send(&mut m, now), Some(1));
    let response = answer(&a6, Code::Unavailable, &[b"-1"]);
    assert!(m
        .handle(now, HedgeEvent::Response { copy: 1, response })
        .is_ok());
    match m.poll(now) {
        HedgeDecision::Return(o) | HedgeDecision::GiveUp(o) => {
            assert_eq!(o.outcome.reason, StopReason::ServerPushback);
            assert_eq!(o.outcome.attempts, 1);
        }
        other => unreachable!("{other:?}"),
    }
}

#[test]
fn a_hedged_call_waits_exactly_the_pushback_before_its_next_copy() {
    // Without the pushback the next copy would go at once (a non-fatal code).
    let a6 = hedging(Duration::from_secs(10));
    let now = Instant::ZERO;
    let mut m = HedgeMachine::new(a6.policy(), Request::new(Method::Post), rng(), now);
    assert_eq!(next_send(&mut m, now), Some(1));
    let response = answer(&a6, Code::Unavailable, &[b"300"]);
    assert!(m
        .handle(now, HedgeEvent::Response { copy: 1, response })
        .is_ok());
    match m.poll(now) {
        HedgeDecision::Wait { until, .. } => assert_eq!(until, Instant::from_millis(300)),
        other => unreachable!("{other:?}"),
    }
    let at = Instant::from_millis(300);
    assert!(m.handle(at, HedgeEvent::TimePassed).is_ok());
    assert_eq!(next_send(&mut m, at), Some(2));
}

/// A6's "Summary of Retry and Hedging Logic": after a pushback of `n` ms the next copy goes
/// at `n`, and the ones after it resume at `hedgingDelay` from there.
#[test]
fn hedged_copies_resume_at_the_hedging_delay_after_a_pushback() {
    let a6 = hedging(Duration::from_secs(1));
    let now = Instant::ZERO;
    let mut m = HedgeMachine::new(a6.policy(), Request::new(Method::Post), rng(), now);
    assert_eq!(next_send(&mut m, now), Some(1));
    let response = answer(&a6, Code::Unavailable, &[b"300"]);
    assert!(m
        .handle(now, HedgeEvent::Response { copy: 1, response })
        .is_ok());
    let at = Instant::from_millis(300);
    assert!(m.handle(at, HedgeEvent::TimePassed).is_ok());
    assert_eq!(next_send(&mut m, at), Some(2));
    match m.poll(at) {
        HedgeDecision::Wait { until, .. } => assert_eq!(until, Instant::from_millis(1_300)),
        other => unreachable!("{other:?}"),
    }
}

#[test]
/// A6 bounds a pushback by the call's deadline alone: 90 s within a 300-s call is waited
/// exactly (no 60-s `Retry-After` ceiling), 400 s is past the deadline and stops the call.
fn a_pushback_above_a_minute_is_waited_within_the_deadline() {
    let a6 = grpc_go_policy().with_timeout(Duration::from_secs(300));
    let a6 = a6.unwrap_or_else(|e| unreachable!("{e}"));
    let budget = TokenBucket::new(10, 500).unwrap_or_else(|_| unreachable!());
    const NINETY_SECONDS: &[&[u8]] = &[b"90000"];
    let mut attempts = 0;
    let mut server = || {
        attempts += 1;
        if attempts == 1 {
            (Code::Unavailable, NINETY_SECONDS)
        } else {
            (Code::Ok, NONE)
        }
    };
    let (code, reason, waits) = call(&a6, &budget, &mut server);
    assert_eq!((code, reason), (Code::Ok, StopReason::FinalStatus));
    assert_eq!(
        waits[0],
        Some((Duration::from_secs(90), DelaySource::ServerPushback))
    );
    const PAST_THE_DEADLINE: &[&[u8]] = &[b"400000"];
    let mut server = || (Code::Unavailable, PAST_THE_DEADLINE);
    let (code, reason, waits) = call(&a6, &budget, &mut server);
    assert_eq!(code, Code::Unavailable);
    assert_ne!(reason, StopReason::FinalStatus);
    assert_eq!(waits[0], None, "{reason:?}");
}
