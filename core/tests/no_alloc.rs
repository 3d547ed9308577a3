//! A whole operation (policy, machine, retries with Retry-After and backoff, the final outcome)
//! allocates nothing: a counting global allocator proves it.
#![allow(unsafe_code)] // a global allocator cannot be written without it

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use backstop_core::{Decision, Event, Instant, Method, Policy, Request, Response, RetryMachine};
use rand_core::SeedableRng;

struct Counting;

thread_local! {
    // Counts only this thread's allocations, so the test harness's own threads don't interfere.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn a_whole_operation_allocates_nothing() {
    // Prove the counter counts: a Vec allocates.
    let before = allocations();
    let v: Vec<u8> = Vec::with_capacity(16);
    drop(v);
    assert!(
        allocations() > before,
        "the counting allocator is not in use"
    );

    let before = allocations();
    let policy = Policy::builder().max_attempts(5).build().expect("valid");
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
    let mut now = Instant::ZERO;
    let mut m = RetryMachine::new(policy, Request::new(Method::Get), rng, now);
    let answers: [(u16, Option<&[u8]>); 4] = [
        (503, Some(b"0.1")),
        (429, Some(b"Sun, 06 Nov 1994 08:49:38 GMT")),
        (500, None),
        (200, None),
    ];
    let mut i = 0;
    let outcome = loop {
        match m.poll(now) {
            Decision::Send { .. } => {
                m.handle(now, Event::AttemptStarted).expect("send pending");
                let (status, ra) = answers[i];
                i += 1;
                let mut r = Response::new(status).date(b"Sun, 06 Nov 1994 08:49:37 GMT");
                if let Some(ra) = ra {
                    r = r.retry_after(ra);
                }
                m.handle(now, Event::Response(r)).expect("in flight");
            }
            Decision::Wait { until, .. } => now = until,
            Decision::Return(o) | Decision::GiveUp(o) => break o,
            other => panic!("unexpected {other:?}"),
        }
    };
    let during = allocations() - before;
    assert_eq!(outcome.attempts, 4);
    assert_eq!(during, 0, "the operation allocated {during} times");
}

#[test]
fn a_hedged_operation_with_a_tracker_allocates_nothing() {
    use backstop_core::{HedgeMachine, Hedging, LatencyTracker, RatioBudget};
    use core::time::Duration;

    // Made before counting: a static would be too, and the test measures the operation.
    let tracker = LatencyTracker::new(Duration::from_secs(30));
    let budget = RatioBudget::new(10, 10, Duration::from_secs(10)).expect("valid");
    let before = allocations();
    let policy = Policy::builder()
        .hedging(Hedging::fixed(Duration::from_millis(10)).max_attempts(3))
        .build()
        .expect("valid");
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let now = Instant::ZERO;
    let mut m = HedgeMachine::with_budget(
        policy,
        Request::new(Method::Get),
        rng,
        &budget,
        &tracker,
        now,
    );
    // Copy 1 stalls, copy 2 gets a 503 with Retry-After, copy 3 answers 200: copy 1 is
    // cancelled.
    let outcome = stall_503_then_200(&mut m, now);
    assert_eq!(allocations(), before, "the hedged operation allocated");
    assert_eq!((outcome.winner, outcome.cancelled), (Some(3), 1));
}

#[test]
fn an_operation_through_a_gate_and_a_rate_limiter_allocates_nothing() {
    use backstop_core::{AdaptiveRateLimiter, GateConfig, OriginGate, Unlimited};

    let gate = OriginGate::new(GateConfig::new()).expect("valid");
    let limiter = AdaptiveRateLimiter::new();
    let before = allocations();
    let policy = Policy::builder().max_attempts(4).build().expect("valid");
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
    let mut now = Instant::ZERO;
    let mut m = RetryMachine::with_overload(
        policy,
        Request::new(Method::Get),
        rng,
        Unlimited,
        &gate,
        &limiter,
        now,
    );
    // A 429 with Retry-After closes the gate and turns the limiter on; the retry waits for
    // both, then succeeds.
    let mut answers = [429u16, 200].into_iter();
    let outcome = loop {
        match m.poll(now) {
            Decision::Send { .. } => {
                m.handle(now, Event::AttemptStarted).expect("admitted");
                let status = answers.next().expect("two answers");
                let response = Response::new(status).retry_after(b"1");
                m.handle(now, Event::Response(response)).expect("in flight");
            }
            Decision::Wait { until, .. } => now = until,
            Decision::Return(o) | Decision::GiveUp(o) => break o,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(
        allocations(),
        before,
        "the gated, paced operation allocated"
    );
    assert_eq!((outcome.attempts, outcome.last.is_some()), (2, true));
    assert!(limiter.is_enabled());
    assert_eq!(gate.closes(), 1);
}

#[test]
fn a_hedged_operation_through_a_gate_and_a_rate_limiter_allocates_nothing() {
    use backstop_core::{
        AdaptiveRateLimiter, GateConfig, HedgeMachine, Hedging, LatencyTracker, OriginGate,
        RatioBudget,
    };
    use core::time::Duration;

    let tracker = LatencyTracker::new(Duration::from_secs(30));
    let budget = RatioBudget::new(10, 10, Duration::from_secs(10)).expect("valid");
    let gate = OriginGate::new(GateConfig::new()).expect("valid");
    let limiter = AdaptiveRateLimiter::new();
    let before = allocations();
    let policy = Policy::builder()
        .hedging(Hedging::fixed(Duration::from_millis(10)).max_attempts(3))
        .build()
        .expect("valid");
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let now = Instant::ZERO;
    let mut m = HedgeMachine::with_overload(
        policy,
        Request::new(Method::Get),
        rng,
        &budget,
        &tracker,
        &gate,
        &limiter,
        now,
    );
    // Copy 1 stalls, copy 2 gets a 503 with Retry-After (the gate closes, the limiter turns
    // on), copy 3 waits for both, is the gate's probe and answers 200: copy 1 is cancelled.
    let outcome = stall_503_then_200(&mut m, now);
    assert_eq!(
        allocations(),
        before,
        "the gated, paced hedged operation allocated"
    );
    assert_eq!((outcome.winner, outcome.cancelled), (Some(3), 1));
    assert!(limiter.is_enabled());
    assert_eq!((gate.closes(), gate.reopens()), (1, 1));
}

/// Drives a hedged operation of three copies to its end: copy 1 stalls, copy 2 gets a 503 with
/// `Retry-After: 0.05`, copy 3 answers 200.
fn stall_503_then_200<R, B, L, G, RL>(
    m: &mut backstop_core::HedgeMachine<R, B, L, G, RL>,
    mut now: Instant,
) -> backstop_core::HedgeOutcome
where
    R: rand_core::Rng,
    B: backstop_core::Budget,
    L: backstop_core::Latencies,
    G: backstop_core::Gate,
    RL: backstop_core::RateLimiter,
{
    use backstop_core::{HedgeDecision, HedgeEvent};

    // Bounded: a hedged GET ends within a few decisions; a machine that did not would fail
    // here, not spin.
    for _ in 0..1_000 {
        match m.poll(now) {
            HedgeDecision::Send { copy, .. } => {
                m.handle(now, HedgeEvent::Started { copy }).expect("due");
                if copy == 2 {
                    let response = Response::new(503).retry_after(b"0.05");
                    m.handle(now, HedgeEvent::Response { copy, response })
                        .expect("in flight");
                } else if copy == 3 {
                    let response = Response::new(200);
                    m.handle(now, HedgeEvent::Response { copy, response })
                        .expect("in flight");
                }
            }
            HedgeDecision::Cancel { copy, .. } => {
                m.handle(now, HedgeEvent::Cancelled { copy })
                    .expect("asked");
            }
            HedgeDecision::Wait { until, .. } => now = until,
            HedgeDecision::Return(o) | HedgeDecision::GiveUp(o) => return o,
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the hedged GET did not end within 1,000 decisions")
}
