//! A retry budget earns its deposit when an operation's first attempt is sent, not when its
//! machine is created: an operation that never sent anything (turned away by a closed gate,
//! aborted before its first attempt, out of time) earns no retries for the others.

use core::time::Duration;

use backstop_core::{
    AttemptOutcome, Budget, Decision, Event, Gate, GateConfig, GateSignal, HedgeDecision,
    HedgeEvent, HedgeMachine, Hedging, Instant, Method, NoLatencies, OriginGate, Policy,
    RatioBudget, Request, Response, StopReason,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

mod support;
use support::gated_with_budget as retry_machine;

const CAUSE: AttemptOutcome = AttemptOutcome::Response(503);

fn budget() -> RatioBudget {
    RatioBudget::new(10, 0, Duration::from_secs(60)).expect("a valid budget")
}

/// A gate closed from 0 to 100 s by a server's back-off.
fn closed_gate() -> OriginGate {
    let gate = OriginGate::new(GateConfig::new()).expect("a valid gate");
    gate.on_attempt_end(
        Instant::ZERO,
        GateSignal {
            started: Instant::ZERO,
            back_off: Some(Duration::from_secs(100)),
            failed: true,
            probe: false,
        },
    );
    gate
}

#[test]
fn operations_that_never_sent_anything_earn_no_retries() {
    let budget = budget();
    let gate = closed_gate();
    let now = Instant::from_secs(1);
    // 1,000 operations turned away by the closed gate: failing fast, or with a deadline
    // before the reopening.
    let fail_fast = Policy::builder()
        .fail_fast_when_paused(true)
        .build()
        .unwrap();
    let short = Policy::builder()
        .max_elapsed(Duration::from_secs(10))
        .build()
        .unwrap();
    for i in 0..1_000 {
        let policy = if i % 2 == 0 { fail_fast } else { short };
        let mut m = retry_machine(policy, &budget, &gate, now, i);
        match m.poll(now) {
            Decision::GiveUp(o) => {
                assert_eq!((o.reason, o.attempts), (StopReason::OriginPaused, 0));
            }
            other => panic!("expected the operation turned away, got {other:?}"),
        }
    }
    // 1,000 more, dropped or aborted before their first attempt.
    for i in 0..1_000 {
        let mut m = retry_machine(Policy::default(), &budget, &gate, now, i);
        if i % 2 == 0 {
            m.handle(now, Event::Abort).unwrap();
            assert!(matches!(m.poll(now), Decision::GiveUp(o) if o.attempts == 0));
        }
    }
    assert_eq!(
        budget.available_centi(now),
        0,
        "operations that sent nothing earned retries"
    );
    assert!(!budget.try_retry(now, CAUSE));
}

#[test]
fn an_operation_earns_its_deposit_when_its_first_attempt_is_sent() {
    let budget = budget();
    let gate = OriginGate::new(GateConfig::new()).expect("a valid gate");
    let t0 = Instant::from_secs(1);
    let mut m = retry_machine(Policy::default(), &budget, &gate, t0, 1);
    assert_eq!(budget.available_centi(t0), 0, "nothing sent yet");
    let t1 = Instant::from_secs(2);
    assert!(matches!(m.poll(t1), Decision::Send { attempt: 1, .. }));
    m.handle(t1, Event::AttemptStarted).unwrap();
    assert_eq!(
        budget.available_centi(t1),
        10,
        "a tenth of a retry per operation"
    );
    // An attempt's end deposits nothing more (the 503's retry is denied: a tenth is not one).
    m.handle(t1, Event::Response(Response::new(503))).unwrap();
    assert!(matches!(m.poll(t1), Decision::Return(o) if o.reason == StopReason::Budget));
    assert_eq!(budget.available_centi(t1), 10);
}

#[test]
fn a_hedged_operation_earns_its_deposit_when_its_first_copy_is_sent() {
    let budget = budget();
    let policy = Policy::builder()
        .hedging(Hedging::fixed(Duration::from_millis(10)))
        .build()
        .unwrap();
    let t0 = Instant::from_secs(1);
    // Aborted before its first copy: nothing earned.
    for seed in 0..100 {
        let mut m = HedgeMachine::with_budget(
            policy,
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(seed),
            &budget,
            NoLatencies,
            t0,
        );
        m.handle(t0, HedgeEvent::Abort).unwrap();
        assert!(matches!(m.poll(t0), HedgeDecision::GiveUp(o) if o.outcome.attempts == 0));
    }
    assert_eq!(
        budget.available_centi(t0),
        0,
        "aborted operations earned retries"
    );
    let mut m = HedgeMachine::with_budget(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(1),
        &budget,
        NoLatencies,
        t0,
    );
    assert_eq!(budget.available_centi(t0), 0, "nothing sent yet");
    let t1 = Instant::from_secs(2);
    assert!(matches!(m.poll(t1), HedgeDecision::Send { copy: 1, .. }));
    m.handle(t1, HedgeEvent::Started { copy: 1 }).unwrap();
    assert_eq!(
        budget.available_centi(t1),
        10,
        "a tenth of a retry per operation"
    );
}
