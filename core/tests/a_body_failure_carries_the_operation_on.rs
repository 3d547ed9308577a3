//! `RetryMachine::returned_at` and `body_failed`: a response's body that fails after the
//! machine returned it carries the operation on, under the same count, rules and deadline.

use core::time::Duration;

use backstop_core::{
    AttemptError, AttemptOutcome, Decision, ErrorKind, Instant, Method, MisuseError, Policy,
    Request, RetryMachine, StopReason,
};
use rand_core::SeedableRng;

type Machine = RetryMachine<rand_pcg::Pcg64Mcg>;

fn returned(policy: Policy, request: Request, attempts: u32, at: Instant) -> Machine {
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    RetryMachine::new(policy, request, rng, Instant::ZERO).returned_at(attempts, 200, at)
}

fn cut() -> AttemptError {
    AttemptError::new(ErrorKind::BodyCut)
}

#[test]
fn a_machine_carried_to_its_return_is_done_with_that_response() {
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        2,
        Instant::from_secs(1),
    );
    let Decision::Return(o) = m.poll(Instant::from_secs(2)) else {
        panic!("returned");
    };
    assert_eq!((o.attempts, o.reason), (2, StopReason::FinalStatus));
    assert_eq!(o.last, Some(AttemptOutcome::Response(200)));
    assert_eq!(o.elapsed, Duration::from_secs(1));
}

#[test]
fn a_cut_after_progress_resumes_at_once_as_the_next_attempt() {
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        1,
        Instant::from_secs(1),
    );
    let at = Instant::from_secs(3);
    m.body_failed(at, cut(), true).unwrap();
    let Decision::Send {
        attempt, timeout, ..
    } = m.poll(at)
    else {
        panic!("a resume at once");
    };
    // The deadline (15 s from the start) is the operation's: 12 s left, more than 5 s.
    assert_eq!((attempt, timeout), (2, Duration::from_secs(5)));
}

#[test]
fn a_cut_without_progress_waits_the_backoff() {
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        1,
        Instant::from_secs(1),
    );
    let at = Instant::from_secs(3);
    m.body_failed(at, cut(), false).unwrap();
    match m.poll(at) {
        Decision::Wait { until, .. } => {
            assert!(until > at && until <= at.saturating_add(Duration::from_millis(300)))
        }
        // Full jitter may draw zero.
        Decision::Send { attempt: 2, .. } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_operations_deadline_and_attempts_bound_the_resumes() {
    // Past the operation's deadline (15 s from its start): no resume.
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        1,
        Instant::from_secs(1),
    );
    m.body_failed(Instant::from_secs(16), cut(), true).unwrap();
    let Decision::GiveUp(o) = m.poll(Instant::from_secs(16)) else {
        panic!("given up");
    };
    assert_eq!(o.reason, StopReason::Deadline);
    assert_eq!(o.last, Some(AttemptOutcome::Error(cut())));

    // The last attempt's body: no attempt left.
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        4,
        Instant::from_secs(1),
    );
    m.body_failed(Instant::from_secs(2), cut(), true).unwrap();
    let Decision::GiveUp(o) = m.poll(Instant::from_secs(2)) else {
        panic!("given up");
    };
    assert_eq!((o.attempts, o.reason), (4, StopReason::Attempts));
}

#[test]
fn a_post_without_a_key_is_not_resumed_and_a_permanent_error_is_final() {
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Post),
        1,
        Instant::from_secs(1),
    );
    m.body_failed(Instant::from_secs(2), cut(), true).unwrap();
    let Decision::GiveUp(o) = m.poll(Instant::from_secs(2)) else {
        panic!("given up");
    };
    assert_eq!(o.reason, StopReason::NoIdempotencyKey);

    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        1,
        Instant::from_secs(1),
    );
    let changed = AttemptError::new(ErrorKind::BodyChanged);
    m.body_failed(Instant::from_secs(2), changed, true).unwrap();
    let Decision::GiveUp(o) = m.poll(Instant::from_secs(2)) else {
        panic!("given up");
    };
    assert_eq!(o.reason, StopReason::PermanentError);
}

#[test]
fn a_body_failure_before_any_return_is_a_misuse_that_changes_nothing() {
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let mut m = RetryMachine::new(
        Policy::default(),
        Request::new(Method::Get),
        rng,
        Instant::ZERO,
    );
    assert_eq!(
        m.body_failed(Instant::from_secs(1), cut(), true),
        Err(MisuseError::NoResponseReturned)
    );
    assert!(matches!(
        m.poll(Instant::ZERO),
        Decision::Send { attempt: 1, .. }
    ));
    // Nor twice: after the first, the machine is not done with a response.
    let mut m = returned(
        Policy::default(),
        Request::new(Method::Get),
        1,
        Instant::from_secs(1),
    );
    m.body_failed(Instant::from_secs(2), cut(), true).unwrap();
    assert_eq!(
        m.body_failed(Instant::from_secs(2), cut(), true),
        Err(MisuseError::NoResponseReturned)
    );
}
