//! The retry cycle of the peers benchmark, run `N` times (first argument) for an instruction
//! count. Setup cancels when two runs are subtracted:
//!
//! ```text
//! cargo build --profile bench -p backstop-peers --example cycle_probe
//! valgrind --tool=callgrind target/release/examples/cycle_probe 200000   # "Collected" minus
//! valgrind --tool=callgrind target/release/examples/cycle_probe 100000   # this, / 100000
//! ```
//!
//! `cycle_probe N --ratio-budget` runs the same cycle with a shared `RatioBudget` (20%, a
//! reserve of 1,000,000 retries a second so it never denies, a 10 s window), as the peers
//! bench's `status_503_backoff_ratio_budget` does; `cycle_probe N --ratio-budget-day` uses a
//! one-day window instead, so that the cycle's waits (at most 5 s) stay in one slot for
//! thousands of cycles (the slot-rotation path out of the count). Any other argument after `N`
//! is a `Retry-After` value.
//!
//! Add `--dump-instr=yes` to see where they go. `backon_probe` is the same for backon's
//! `next()`. The count includes this loop's own work, about 25 instructions a cycle: the
//! opaque status, keeping each decision observable with `black_box` on a reference to it,
//! summing the waits. The loop is the bench's `status_503_backoff` closure: the response is
//! built before the cycle (as the closure's argument is), and the plain 503 runs in a loop of
//! its own, without the per-cycle test of the `Retry-After` option. Until session 6 of
//! `docs/PERFORMANCE.md` the response was built after `AttemptStarted` and the option was
//! tested in every cycle (session 6's machine counts 149 in that loop, 140 in this one); until
//! session 5 the decisions were passed to `black_box` by value, which copied each 40-byte
//! `Decision` once more.

#![allow(clippy::print_stdout)]

use core::time::Duration;

use backstop_core::{
    Budget, Decision, Event, Instant, Method, Policy, RatioBudget, Request, Response, RetryMachine,
    Unlimited,
};
use rand_core::SeedableRng;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut retry_after = None;
    let mut window = None;
    for arg in std::env::args().skip(2) {
        match arg.as_str() {
            "--ratio-budget" => window = Some(Duration::from_secs(10)),
            "--ratio-budget-day" => window = Some(Duration::from_secs(86_400)),
            _ => retry_after = Some(arg),
        }
    }
    match window {
        None => with_response(n, retry_after.as_deref(), Unlimited),
        Some(window) => {
            let budget = RatioBudget::new(20, 1_000_000, window).expect("a valid budget");
            with_response(n, retry_after.as_deref(), &budget);
        }
    }
}

/// The cycles with a plain 503, or one with `retry_after`: two loops, so that the plain one
/// is the bench's `status_503_backoff` (whose response has no field to test).
fn with_response<B: Budget>(n: u64, retry_after: Option<&str>, budget: B) {
    match retry_after {
        None => run(n, budget, Response::new),
        Some(v) => run(n, budget, |status| {
            Response::new(status).retry_after(v.as_bytes())
        }),
    }
}

fn run<'a, B: Budget>(n: u64, budget: B, response: impl Fn(u16) -> Response<'a>) {
    let policy = Policy::builder()
        .max_attempts(u32::MAX)
        .max_elapsed(Duration::from_secs(u64::MAX / 4_000_000_000))
        .build()
        .expect("valid policy");
    let mut m = RetryMachine::with_budget(
        policy,
        Request::new(Method::Get),
        rand_pcg::Pcg64Mcg::seed_from_u64(1),
        budget,
        Instant::ZERO,
    );
    let mut now = Instant::ZERO;
    let mut total = Duration::ZERO;
    for _ in 0..n {
        // Built first, as the bench's closure builds its argument before the cycle.
        let r = response(core::hint::black_box(503));
        let send = m.poll(now);
        core::hint::black_box(&send);
        m.handle(now, Event::AttemptStarted).expect("a send is due");
        m.handle(now, Event::Response(r)).expect("in flight");
        let wait = m.poll(now);
        if let Decision::Wait { until, delay, .. } = *core::hint::black_box(&wait) {
            now = until;
            total += delay;
        }
    }
    println!("{n} cycles, {total:?} waited");
}
