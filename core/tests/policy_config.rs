//! Configuration that cannot be meant is refused; configuration that is odd but can be meant is
//! built, and `worst_case()` says what it costs.

use core::time::Duration;

use backstop_core::{
    AttemptOutcome, Backoff, ConfigError, Decision, ErrorKind, Jitter, Method, Policy, Request,
    Response, RetryAfterAboveMax, StatusSet, StopReason,
};

mod support;
use support::Sim;

#[test]
fn a_success_or_informational_status_cannot_be_retryable() {
    for code in [100, 101, 199, 200, 201, 204, 299] {
        assert_eq!(
            Policy::builder().retryable_statuses(&[503, code]).build(),
            Err(ConfigError::StatusNotAnError(code)),
            "{code}"
        );
        let set = StatusSet::try_from_codes(&[code, 503]).unwrap();
        assert_eq!(
            Policy::builder().retryable_status_set(set).build(),
            Err(ConfigError::StatusNotAnError(code)),
            "{code} through a prepared set"
        );
    }
    let message = ConfigError::StatusNotAnError(200).to_string();
    assert!(
        message.contains("200") && message.contains("success"),
        "{message}"
    );
    // The lowest error-ish statuses are still accepted: 3xx is odd, not always a mistake.
    for code in [300, 304, 400, 599] {
        assert!(
            Policy::builder()
                .retryable_statuses(&[code])
                .build()
                .is_ok(),
            "{code}"
        );
    }
}

#[test]
fn no_backoff_with_unbounded_attempts_is_built_and_worst_case_says_so() {
    // tests/herd runs exactly this on purpose (the "no backoff" herd): it can be meant.
    let policy = Policy::builder()
        .max_attempts(u32::MAX)
        .backoff(Backoff::constant(Duration::ZERO))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let worst = policy.worst_case();
    assert_eq!(worst.attempts, u32::MAX);
    assert_eq!(worst.elapsed, policy.max_elapsed());
}

#[test]
fn a_zero_retry_after_ceiling_gives_up_on_any_server_wait_or_clamps_it_to_nothing() {
    let give_up = Policy::builder()
        .max_retry_after(Duration::ZERO)
        .build()
        .unwrap();
    let mut sim = Sim::get(give_up);
    sim.start();
    sim.respond(Response::new(503).retry_after(b"1"));
    let o = *sim.poll().outcome().unwrap();
    assert_eq!(o.reason, StopReason::RetryAfterAboveMax);
    // `Retry-After: 0` fits under a zero ceiling.
    let mut sim = Sim::get(give_up);
    sim.start();
    sim.respond(Response::new(503).retry_after(b"0"));
    assert!(matches!(sim.poll(), Decision::Send { attempt: 2, .. }));

    let clamp = Policy::builder()
        .max_retry_after(Duration::ZERO)
        .retry_after_above_max(RetryAfterAboveMax::Clamp)
        .build()
        .unwrap();
    let mut sim = Sim::get(clamp);
    sim.start();
    sim.respond(Response::new(503).retry_after(b"30"));
    assert!(matches!(sim.poll(), Decision::Send { attempt: 2, .. }));
    // The backoff's cap still bounds the longest wait.
    assert_eq!(clamp.worst_case().wait, clamp.backoff().cap());
}

#[test]
fn an_attempt_timeout_above_max_elapsed_is_cut_at_the_deadline() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(2))
        .attempt_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    let (_, timeout) = sim.start();
    assert_eq!(timeout, Duration::from_secs(2));
    assert_eq!(policy.worst_case().elapsed, Duration::from_secs(2));
}

#[test]
fn an_empty_status_set_retries_only_errors() {
    let policy = Policy::builder().retryable_statuses(&[]).build().unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.status(503);
    assert_eq!(
        sim.poll().outcome().unwrap().reason,
        StopReason::FinalStatus
    );
    let mut sim = Sim::get(policy);
    sim.start();
    sim.fail(ErrorKind::ConnectionReset);
    assert!(!matches!(
        sim.poll(),
        Decision::GiveUp(_) | Decision::Return(_)
    ));
}

#[test]
fn an_empty_method_set_retries_only_what_was_never_sent() {
    let policy = Policy::builder().retry_only_methods(&[]).build().unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.status(503);
    assert_eq!(
        sim.poll().outcome().unwrap().reason,
        StopReason::NotIdempotent
    );
    let mut sim = Sim::get(policy);
    sim.start();
    sim.fail(ErrorKind::ConnectionRefused);
    assert!(!matches!(
        sim.poll(),
        Decision::GiveUp(_) | Decision::Return(_)
    ));
    // A POST with its key is still the caller's opt-in.
    let mut sim = Sim::new(
        policy,
        Request::new(Method::Post).with_idempotency_key(true),
    );
    sim.start();
    sim.status(503);
    assert!(!matches!(
        sim.poll(),
        Decision::GiveUp(_) | Decision::Return(_)
    ));
    let _ = AttemptOutcome::Response(503);
}

#[test]
fn the_body_idle_timeout_is_checked_against_the_deadline() {
    use backstop_core::{ConfigError, Policy};
    use core::time::Duration;

    assert_eq!(
        Policy::default().body_idle_timeout(),
        Duration::from_secs(5)
    );
    // The default follows a shorter deadline: it never makes a policy inconsistent.
    let short = Policy::builder()
        .max_elapsed(Duration::from_secs(2))
        .build()
        .unwrap();
    assert_eq!(short.body_idle_timeout(), Duration::from_secs(2));
    for idle in [Duration::ZERO, Duration::from_secs(3)] {
        let built = Policy::builder()
            .max_elapsed(Duration::from_secs(2))
            .body_idle_timeout(idle)
            .build();
        assert_eq!(
            built,
            Err(ConfigError::BodyIdleTimeout {
                idle,
                max_elapsed: Duration::from_secs(2)
            })
        );
        assert!(built.unwrap_err().to_string().contains("body_idle_timeout"));
    }
    let set = Policy::builder()
        .body_idle_timeout(Duration::from_millis(750))
        .build()
        .unwrap();
    assert_eq!(set.body_idle_timeout(), Duration::from_millis(750));
}
