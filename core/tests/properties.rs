//! Properties of the machine over arbitrary valid policies and arbitrary event sequences
//! (DESIGN.md "Testing"): attempts never exceed the maximum; no wait exceeds its bound; nothing
//! follows a terminal decision; no send after abort; non-idempotent requests are never retried
//! without opt-in and key; the deadline is never passed; the next deadline is `None` or later
//! than `now`; the same seed and events give the same decisions.

use core::time::Duration;

use backstop::{
    AttemptError, Backoff, Decision, ErrorClass, ErrorKind, Event, Instant, Jitter, Method, Policy,
    Request, Response, RetryAfterAboveMax, RetryMachine, StopReason, UnixTime,
};
use proptest::prelude::*;
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

const RETRY_AFTER: [&[u8]; 11] = [
    b"0",
    b"0.1",
    b"1",
    b"3",
    b"120",
    b"1e3",
    b"-1",
    b"18446744073709551616",
    b"Sun, 06 Nov 1994 08:49:40 GMT",
    b"Sun, 06 Nov 1994 08:59:37 GMT",
    b"\xff\x00junk",
];
const STATUSES: [u16; 10] = [200, 204, 404, 408, 425, 429, 500, 503, 504, 999];

const METHODS: [Method; 6] = [
    Method::Get,
    Method::Head,
    Method::Put,
    Method::Delete,
    Method::Post,
    Method::Patch,
];

#[derive(Clone, Debug)]
enum Step {
    Poll,
    Started,
    Response {
        status: usize,
        retry_after: Option<usize>,
        date: bool,
        wall_clock: Option<u64>,
    },
    Error(usize, Option<usize>),
    TimePassed,
    Abort,
    /// Move the caller's clock by this many milliseconds (negative: backwards).
    Clock(i64),
    /// Follow the machine: sleep until its next deadline.
    SleepUntilDeadline,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Poll),
        4 => Just(Step::Started),
        4 => (0..STATUSES.len(), proptest::option::of(0..RETRY_AFTER.len()), any::<bool>(),
              proptest::option::of(784_111_000u64..784_112_500))
            .prop_map(|(status, retry_after, date, wall_clock)| Step::Response { status, retry_after, date, wall_clock }),
        2 => (0..ErrorKind::ALL.len(), proptest::option::of(0..5usize)).prop_map(|(k, c)| Step::Error(k, c)),
        1 => Just(Step::TimePassed),
        1 => Just(Step::Abort),
        3 => (-2_000i64..8_000).prop_map(Step::Clock),
        3 => Just(Step::SleepUntilDeadline),
    ]
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        (1u32..7, 1u64..20_000, 1u64..6_000),
        (0usize..3, 0u64..2_000, 0u64..6_000, 0usize..4),
        (0u64..30_000, any::<bool>(), 0u64..2_000),
        (any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(
                (attempts, elapsed, timeout),
                (kind, base, extra, jitter),
                (max_ra, clamp, spread),
                (opt_in, put),
            )| {
                let backoff = match kind {
                    0 => Backoff::exponential(ms(base), ms(base + extra)),
                    1 => Backoff::linear(ms(base), ms(base + extra)),
                    _ => Backoff::constant(ms(base)),
                };
                let jitter = [
                    Jitter::None,
                    Jitter::Full,
                    Jitter::Equal,
                    Jitter::Decorrelated,
                ][jitter];
                let mut b = Policy::builder()
                    .max_attempts(attempts)
                    .max_elapsed(ms(elapsed))
                    .attempt_timeout(ms(timeout))
                    .backoff(backoff)
                    .jitter(jitter)
                    .max_retry_after(ms(max_ra))
                    .retry_after_spread(ms(spread))
                    .retry_non_idempotent(opt_in);
                if clamp {
                    b = b.retry_after_above_max(RetryAfterAboveMax::Clamp);
                }
                if put {
                    b = b.retry_method(Method::Put);
                }
                b.build().expect("the strategy only builds valid policies")
            },
        )
}

/// Runs the steps, checking every invariant after each; returns every decision seen.
fn run(policy: Policy, request: Request, seed: u64, steps: &[Step]) -> Vec<Decision> {
    let start = Instant::from_secs(1_000);
    let mut m = RetryMachine::new(policy, request, Pcg64Mcg::seed_from_u64(seed), start);
    let deadline = m.deadline();
    assert_eq!(deadline, start.saturating_add(policy.max_elapsed()));
    let retry_allowed = policy.may_retry(request.method, request.has_idempotency_key);

    let mut clock = start; // what the caller passes
    let mut seen = start; // the latest `now` the machine saw
    let mut decisions = Vec::new();
    let mut terminal: Option<Decision> = None;
    let mut aborted = false;
    let mut started = 0u32;
    let mut last_end_not_sent = false;

    for step in steps {
        let now = clock;
        let result = match *step {
            Step::Poll => Ok(()),
            Step::Started => {
                let r = m.handle(now, Event::AttemptStarted);
                if r.is_ok() {
                    if started > 0 && !retry_allowed {
                        assert!(
                            last_end_not_sent,
                            "a non-idempotent request was retried after it may have been sent"
                        );
                    }
                    started += 1;
                    last_end_not_sent = false;
                }
                r
            }
            Step::Response {
                status,
                retry_after,
                date,
                wall_clock,
            } => {
                let mut r = Response::new(STATUSES[status]);
                if let Some(i) = retry_after {
                    r = r.retry_after(RETRY_AFTER[i]);
                }
                if date {
                    r = r.date(b"Sun, 06 Nov 1994 08:49:37 GMT");
                }
                if let Some(w) = wall_clock {
                    r = r.wall_clock(UnixTime::from_secs(w));
                }
                m.handle(now, Event::Response(r))
            }
            Step::Error(k, c) => {
                let mut e = AttemptError::new(ErrorKind::ALL[k]);
                if let Some(c) = c {
                    e = e.with_class(ErrorClass::ALL[c]);
                }
                let r = m.handle(now, Event::Error(e));
                if r.is_ok() && e.class == ErrorClass::NotSent {
                    last_end_not_sent = true;
                }
                r
            }
            Step::TimePassed => m.handle(now, Event::TimePassed),
            Step::Abort => {
                let r = m.handle(now, Event::Abort);
                if terminal.is_none() {
                    aborted = true;
                }
                r
            }
            Step::Clock(delta) => {
                clock = if delta >= 0 {
                    clock.saturating_add(ms(delta.unsigned_abs()))
                } else {
                    Instant::from_duration(
                        clock.as_duration().saturating_sub(ms(delta.unsigned_abs())),
                    )
                };
                continue;
            }
            Step::SleepUntilDeadline => {
                if let Some(t) = m.next_deadline() {
                    clock = clock.max(t);
                }
                continue;
            }
        };
        // A misplaced event is an error, never a panic; either way the invariants hold.
        let _ = result;
        seen = seen.max(now); // the machine has now been fed `now`

        // After an input, the next deadline is None or later than the latest now. (A bare
        // poll feeds `now` through `poll` itself, checked below.)
        if !matches!(step, Step::Poll) {
            if let Some(t) = m.next_deadline() {
                assert!(t > seen, "next deadline {t:?} is not after now {seen:?}");
            }
        }
        assert!(
            m.attempts() <= policy.max_attempts(),
            "attempts exceed the maximum"
        );
        assert_eq!(m.attempts(), started);

        let d = m.poll(now);
        decisions.push(d);
        if let Some(t) = m.next_deadline() {
            assert!(
                t > seen,
                "after poll, next deadline {t:?} is not after now {seen:?}"
            );
        }
        if let Some(previous) = terminal {
            assert_eq!(d, previous, "a terminal decision changed");
            continue;
        }
        if aborted {
            match d {
                Decision::GiveUp(o) => assert_eq!(o.reason, StopReason::Aborted),
                other => panic!("after abort: {other:?}"),
            }
        }
        match d {
            Decision::Send {
                attempt, timeout, ..
            } => {
                assert!(attempt <= policy.max_attempts());
                assert!(seen < deadline, "a send at or after the deadline");
                assert!(
                    seen.saturating_add(timeout) <= deadline,
                    "the attempt's timeout passes the deadline"
                );
                assert!(timeout <= policy.attempt_timeout());
            }
            Decision::Wait { until, delay, .. } => {
                assert!(delay <= policy.max_wait(), "wait {delay:?} above its bound");
                assert!(until < deadline, "a wait past the deadline");
                assert!(until > seen);
            }
            Decision::AwaitResponse { timeout_at, .. } => {
                assert!(timeout_at <= deadline);
            }
            Decision::Return(o) | Decision::GiveUp(o) => {
                assert!(o.attempts <= policy.max_attempts());
                terminal = Some(d);
            }
            other => panic!("unknown decision {other:?}"),
        }
    }
    decisions
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_arbitrary_policies_and_event_sequences(
        policy in policy(),
        method in 0..METHODS.len(),
        key in any::<bool>(),
        seed in any::<u64>(),
        steps in proptest::collection::vec(step(), 0..60),
    ) {
        let request = Request::new(METHODS[method]).with_idempotency_key(key);
        let first = run(policy, request, seed, &steps);
        let second = run(policy, request, seed, &steps);
        prop_assert_eq!(first, second, "same seed and events, different decisions");
    }

    #[test]
    fn a_driver_that_follows_every_decision_always_terminates_within_bounds(
        policy in policy(),
        seed in any::<u64>(),
        statuses in proptest::collection::vec(0..STATUSES.len(), 1..12),
        latency_ms in 0u64..3_000,
    ) {
        let start = Instant::ZERO;
        let mut m = RetryMachine::new(policy, Request::new(Method::Get), Pcg64Mcg::seed_from_u64(seed), start);
        let mut now = start;
        let mut answers = statuses.iter().cycle();
        // Each loop turn either finishes, or starts an attempt, or passes a wait: bounded by
        // three turns per attempt.
        let mut outcome = None;
        for _ in 0..(3 * policy.max_attempts() as usize + 3) {
            match m.poll(now) {
                Decision::Send { timeout, .. } => {
                    m.handle(now, Event::AttemptStarted).expect("send pending");
                    let took = ms(latency_ms);
                    if took >= timeout {
                        now = now.saturating_add(timeout);
                    } else {
                        now = now.saturating_add(took);
                        let status = STATUSES[*answers.next().expect("cycle")];
                        m.handle(now, Event::Response(Response::new(status))).expect("in flight");
                    }
                }
                Decision::Wait { until, .. } => now = until,
                Decision::AwaitResponse { timeout_at, .. } => now = timeout_at,
                Decision::Return(o) | Decision::GiveUp(o) => { outcome = Some(o); break; }
                other => panic!("unknown decision {other:?}"),
            }
        }
        let o = outcome.expect("the machine finished within its bounds");
        prop_assert!(o.attempts >= 1 && o.attempts <= policy.max_attempts());
        prop_assert!(o.elapsed <= policy.max_elapsed());
    }
}
