//! backstop's retry decision side by side with the delay computations of the Rust retry crates
//! users choose among: one run, one table.
//!
//! Run with `cargo bench -p backstop-peers`.
//!
//! The peers compute less than backstop does: backon, backoff and retry-policies return a delay
//! (backon and backoff from an iterator or a stateful object, retry-policies from the number of
//! past retries); tower's `Policy::retry` is whatever the caller writes, measured here as the
//! usual one: a `TpsBudget` withdrawal and the next `ExponentialBackoff` sleep. backstop's cycle
//! is the whole decision of a driver between two attempts: a send is due, the attempt starts, a
//! 503 comes in (status, method, `Retry-After`, attempt count, deadline, budget), and the wait
//! with its jitter comes out.

use core::time::Duration;

use backstop_core::{
    Decision, Event, Instant, Method, Policy, RatioBudget, Request, Response, RetryMachine,
};
use divan::{black_box, Bencher};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn main() {
    divan::main();
}

/// A policy that never runs out within a bench: the cycle repeats in a steady state.
fn endless_policy() -> Policy {
    Policy::builder()
        .max_attempts(u32::MAX)
        .max_elapsed(Duration::from_secs(u64::MAX / 4_000_000_000))
        .build()
        .expect("valid policy")
}

/// One retry cycle: the send that is due, the attempt started, `response` in, the wait out.
/// Time moves to the end of the wait, so the next cycle's send is due. The same work as
/// `examples/cycle_probe.rs` (which callgrind counts): both decisions are kept observable
/// through a reference, and the caller builds the response in the cycle from an opaque status.
/// Inlined into each bench's closure, as the probe's loop body is one function: otherwise the
/// response is built by the closure and copied into this function's frame.
#[inline(always)]
fn cycle<B: backstop_core::Budget>(
    m: &mut RetryMachine<Pcg64Mcg, B>,
    now: &mut Instant,
    response: Response<'_>,
) -> Decision {
    let send = m.poll(*now);
    black_box(&send);
    debug_assert!(matches!(send, Decision::Send { .. }), "{send:?}");
    m.handle(*now, Event::AttemptStarted)
        .expect("a send is due");
    m.handle(*now, Event::Response(response))
        .expect("an attempt is in flight");
    let wait = m.poll(*now);
    black_box(&wait);
    if let Decision::Wait { until, .. } = wait {
        *now = until;
    }
    wait
}

mod backstop_cycle {
    use super::*;

    /// 503 without `Retry-After`: capped exponential backoff, full jitter, no budget.
    #[divan::bench]
    fn status_503_backoff(bencher: Bencher) {
        let mut m = RetryMachine::new(
            endless_policy(),
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(1),
            Instant::ZERO,
        );
        let mut now = Instant::ZERO;
        bencher.bench_local(|| cycle(&mut m, &mut now, Response::new(black_box(503))));
    }

    /// The same with a shared ratio budget (deposits on every operation, a withdrawal per
    /// retry), which is what a fleet would run with.
    #[divan::bench]
    fn status_503_backoff_ratio_budget(bencher: Bencher) {
        ratio_budget_cycles(bencher, Duration::from_secs(10));
    }

    /// The same with a one-day window: the cycle's waits (at most 5 s) stay in one slot
    /// (2.4 h) for thousands of cycles, so this is the budget's cost without slot rotations.
    #[divan::bench]
    fn status_503_backoff_ratio_budget_one_slot(bencher: Bencher) {
        ratio_budget_cycles(bencher, Duration::from_secs(86_400));
    }

    /// 503 cycles with a ratio budget over `window`.
    fn ratio_budget_cycles(bencher: Bencher, window: Duration) {
        let budget = RatioBudget::new(20, 1_000_000, window).expect("valid");
        let mut m = RetryMachine::with_budget(
            endless_policy(),
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(1),
            &budget,
            Instant::ZERO,
        );
        let mut now = Instant::ZERO;
        bencher.bench_local(|| cycle(&mut m, &mut now, Response::new(black_box(503))));
    }

    /// 503 with `Retry-After: 1` (delay-seconds): parsing, ceiling, spread.
    #[divan::bench]
    fn status_503_retry_after_seconds(bencher: Bencher) {
        let mut m = RetryMachine::new(
            endless_policy(),
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(1),
            Instant::ZERO,
        );
        let mut now = Instant::ZERO;
        bencher.bench_local(|| {
            cycle(
                &mut m,
                &mut now,
                Response::new(black_box(503)).retry_after(b"1"),
            )
        });
    }

    /// 503 with an HTTP-date `Retry-After` and the response's `Date`: two date parses.
    #[divan::bench]
    fn status_503_retry_after_http_date(bencher: Bencher) {
        let mut m = RetryMachine::new(
            endless_policy(),
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(1),
            Instant::ZERO,
        );
        let mut now = Instant::ZERO;
        bencher.bench_local(|| {
            let r = Response::new(black_box(503))
                .retry_after(b"Sun, 06 Nov 1994 08:49:38 GMT")
                .date(b"Sun, 06 Nov 1994 08:49:37 GMT");
            cycle(&mut m, &mut now, r)
        });
    }
}

mod peers {
    use super::*;

    /// backon 1.x: `ExponentialBuilder` with jitter, no limit on the number of retries, the
    /// iterator's `next()` (its default 1 s base, 60 s cap).
    #[divan::bench]
    fn backon_exponential_jitter_next(bencher: Bencher) {
        use backon::BackoffBuilder;
        let mut it = backon::ExponentialBuilder::default()
            .with_jitter()
            .without_max_times()
            .with_jitter_seed(1)
            .build();
        bencher.bench_local(|| black_box(it.next()));
    }

    /// backoff 0.4: `ExponentialBackoff::default()` (its 15-minute elapsed limit reads the
    /// clock on every call), `next_backoff()`.
    #[divan::bench]
    fn backoff_exponential_next_backoff(bencher: Bencher) {
        use backoff::backoff::Backoff;
        let mut b = backoff::ExponentialBackoff::default();
        bencher.bench_local(|| black_box(b.next_backoff()));
    }

    /// retry-policies 0.4 (under reqwest-retry): `ExponentialBackoff` with its default full
    /// jitter, `should_retry` for retries 0 to 9 in turn.
    #[divan::bench]
    fn retry_policies_exponential_should_retry(bencher: Bencher) {
        use retry_policies::RetryPolicy;
        let policy = retry_policies::policies::ExponentialBackoff::builder()
            .build_with_max_retries(u32::MAX);
        let start = std::time::SystemTime::now();
        let mut n = 0u32;
        bencher.bench_local(|| {
            n = (n + 1) % 10;
            black_box(policy.should_retry(start, black_box(n)))
        });
    }

    /// tower 0.5: a `Policy::retry` as tower's docs suggest writing it for a 503: withdraw from
    /// a `TpsBudget`, then the next `ExponentialBackoff` sleep (created, not awaited; a tokio
    /// runtime must be entered to create it, no I/O happens).
    #[divan::bench]
    fn tower_policy_retry_tps_budget_backoff(bencher: Bencher) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let _guard = rt.enter();
        let mut policy = tower_policy::BudgetBackoff::new();
        let mut req = ();
        bencher.bench_local(|| {
            let mut result: Result<u16, ()> = Ok(black_box(503));
            black_box(tower::retry::Policy::retry(
                &mut policy,
                &mut req,
                &mut result,
            ))
        });
    }

    /// tower 0.5: the budget alone (`TpsBudget::withdraw` and `deposit`), the policy returning a
    /// ready future: what tower costs before any backoff.
    #[divan::bench]
    fn tower_tps_budget_withdraw_deposit(bencher: Bencher) {
        use tower::retry::budget::Budget;
        let budget = tower::retry::budget::TpsBudget::default();
        bencher.bench_local(|| {
            budget.deposit();
            black_box(budget.withdraw())
        });
    }
}

mod tower_policy {
    use std::sync::Arc;

    use tower::retry::backoff::{
        Backoff, ExponentialBackoff, ExponentialBackoffMaker, MakeBackoff,
    };
    use tower::retry::budget::{Budget, TpsBudget};
    use tower::util::rng::HasherRng;

    /// A policy retrying 5xx within a shared budget, waiting tower's exponential backoff.
    pub struct BudgetBackoff {
        budget: Arc<TpsBudget>,
        backoff: ExponentialBackoff<HasherRng>,
    }

    impl BudgetBackoff {
        pub fn new() -> Self {
            // Generous: the budget never runs dry in a bench (10,000 retries a second).
            let budget = Arc::new(TpsBudget::new(
                core::time::Duration::from_secs(10),
                10_000,
                1000.0,
            ));
            let mut maker = ExponentialBackoffMaker::new(
                core::time::Duration::from_millis(300),
                core::time::Duration::from_secs(5),
                1.0,
                HasherRng::default(),
            )
            .expect("valid backoff");
            BudgetBackoff {
                budget,
                backoff: maker.make_backoff(),
            }
        }
    }

    impl tower::retry::Policy<(), u16, ()> for BudgetBackoff {
        type Future = tokio::time::Sleep;

        fn retry(&mut self, _req: &mut (), result: &mut Result<u16, ()>) -> Option<Self::Future> {
            match result {
                Ok(status) if *status < 500 => {
                    self.budget.deposit();
                    None
                }
                _ => self.budget.withdraw().then(|| self.backoff.next_backoff()),
            }
        }

        fn clone_request(&mut self, _req: &()) -> Option<()> {
            Some(())
        }
    }
}
