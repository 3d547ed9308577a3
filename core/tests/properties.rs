//! A driver that follows every decision always finishes within the policy's bounds. The
//! machine's invariants over arbitrary event sequences are checked by the one oracle, in the
//! `backstop-oracle` crate (its `tests/properties.rs`), which the fuzzer shares.

use core::time::Duration;

use backstop_core::{
    Backoff, Decision, Event, Instant, Jitter, Method, NonIdempotent, Policy, Request, Response,
    RetryAfterAboveMax, RetryMachine,
};
use proptest::prelude::*;
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

const STATUSES: [u16; 10] = [200, 204, 404, 408, 425, 429, 500, 503, 504, 999];

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        (1u32..7, 1u64..20_000, 1u64..6_000),
        (0usize..3, 0u64..2_000, 0u64..6_000, 0usize..4),
        (0u64..30_000, any::<bool>(), 0u64..2_000),
        (0usize..3, any::<bool>()),
    )
        .prop_map(
            |(
                (attempts, elapsed, timeout),
                (kind, base, extra, jitter),
                (max_ra, clamp, spread),
                (non_idempotent, put),
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
                    .non_idempotent(NonIdempotent::ALL[non_idempotent]);
                if clamp {
                    b = b.retry_after_above_max(RetryAfterAboveMax::Clamp);
                }
                if put {
                    b = b.add_retry_method(Method::Put);
                }
                b.build().expect("the strategy only builds valid policies")
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

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
