//! `Policy::worst_case` bounds every path that runs an operation under a policy, the paths that
//! retry instead of hedging included: a `RetryMachine` under a hedging policy (what `run` and
//! the blocking clients do) follows the policy's retry settings, and stays within the bound.

use core::time::Duration;

use backstop_core::{
    Decision, Event, Hedging, Instant, Method, Policy, Request, Response, RetryMachine,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A worst-case server: what it is, each attempt's latency, which attempts time out, and
/// what the others answer.
type Server<'a> = (&'a str, Duration, &'a dyn Fn(u32) -> bool, Response<'a>);

/// What a prompt driver saw: attempts sent, time taken, the longest wait.
struct Run {
    attempts: u32,
    elapsed: Duration,
    longest_wait: Duration,
}

/// Drives a GET to its end as a prompt driver: attempt `n` times out when `times_out(n)`, else
/// answers `response` after `latency`.
fn drive(
    policy: Policy,
    seed: u64,
    latency: Duration,
    times_out: impl Fn(u32) -> bool,
    response: Response<'_>,
) -> Run {
    let rng = Pcg64Mcg::seed_from_u64(seed);
    let mut m = RetryMachine::new(policy, Request::new(Method::Get), rng, Instant::ZERO);
    let mut now = Instant::ZERO;
    let mut longest_wait = Duration::ZERO;
    for _ in 0..1_000 {
        match m.poll(now) {
            Decision::Send {
                attempt, timeout, ..
            } => {
                m.handle(now, Event::AttemptStarted).expect("a send is due");
                if times_out(attempt) || latency >= timeout {
                    now = now.saturating_add(timeout);
                } else {
                    now = now.saturating_add(latency);
                    m.handle(now, Event::Response(response))
                        .expect("the attempt is in flight");
                }
            }
            Decision::AwaitResponse { timeout_at, .. } => now = timeout_at,
            Decision::Wait { until, delay, .. } => {
                longest_wait = longest_wait.max(delay);
                now = until;
            }
            Decision::Return(o) | Decision::GiveUp(o) => {
                return Run {
                    attempts: o.attempts,
                    elapsed: o.elapsed,
                    longest_wait,
                }
            }
            other => panic!("a decision this driver does not know: {other:?}"),
        }
    }
    panic!("the operation did not end");
}

#[test]
fn worst_case_bounds_the_retry_machine_under_a_hedging_policy() {
    // Two copies 10 ms apart when hedged; retried, the defaults' four attempts with backoff and
    // `Retry-After` waits.
    let policy = Policy::builder()
        .hedging(Hedging::fixed(ms(10)).max_attempts(2))
        .attempt_timeout(ms(1_000))
        .max_elapsed(Duration::from_secs(30))
        .max_retry_after(ms(1_000))
        .build()
        .unwrap();
    let worst = policy.worst_case();
    let cases: [Server<'_>; 4] = [
        ("fast 503s", ms(100), &|_| false, Response::new(503)),
        (
            "503s with Retry-After: 1",
            ms(100),
            &|_| false,
            Response::new(503).retry_after(b"1"),
        ),
        ("timeouts", ms(0), &|_| true, Response::new(503)),
        (
            "timeouts and 503s",
            ms(900),
            &|n| n % 2 == 1,
            Response::new(503).retry_after(b"1"),
        ),
    ];
    for (what, latency, times_out, response) in cases {
        for seed in 0..50 {
            let run = drive(policy, seed, latency, times_out, response);
            assert!(
                run.attempts <= worst.attempts,
                "{what}: {} attempts, the bound says {}",
                run.attempts,
                worst.attempts
            );
            assert!(
                run.elapsed <= worst.elapsed,
                "{what}: took {:?}, the bound says {:?}",
                run.elapsed,
                worst.elapsed
            );
            assert!(
                run.longest_wait <= worst.wait,
                "{what}: waited {:?}, the bound says {:?}",
                run.longest_wait,
                worst.wait
            );
        }
    }
    // The retrying path really retries under the policy's retry settings.
    let run = drive(policy, 1, ms(0), |_| true, Response::new(503));
    assert_eq!(run.attempts, policy.max_attempts());
}
