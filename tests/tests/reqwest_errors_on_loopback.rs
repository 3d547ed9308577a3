//! reqwest's own failures, made for real on loopback, and the kinds `backstop::reqwest` gives
//! them: a redirect loop is permanent (a retry follows the same redirects), reqwest's own
//! time-out is a time-out (retried for a GET), a body cut short is an unexpected end of file.
//! (Refused connections, unknown hosts and rejected certificates run in the shared scenarios.)

use std::time::Duration;

use backstop::classify::{AttemptError, AttemptOutcome};
use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::Failure;
use backstop_tests::middleware::{block_on, default_tls, reqwest_answer, reqwest_client};
use backstop_tests::server::{Action, Reply, Server};

#[test]
fn a_redirect_loop_is_permanent_after_one_attempt() {
    let server = Server::always(Reply::status(302).header("Location", "/loop"));
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let (result, text) = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        reqwest_answer(client.get(server.url("/loop")).send().await).await
    });
    let Err(Failure::Failed { kind, outcome }) = result else {
        panic!("expected a failure: {result:?}");
    };
    assert_eq!(kind, ErrorKind::InvalidRequest, "{text:?}");
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, StopReason::PermanentError)
    );
    // reqwest's default policy follows 10 redirects, then gives up: 11 requests, one attempt.
    assert_eq!(server.requests(), 11);
}

#[test]
fn reqwests_own_time_out_is_a_time_out_and_a_get_is_retried() {
    let server = Server::always(Action::Hang);
    let policy = Policy::builder()
        .max_attempts(2)
        .attempt_timeout(Duration::from_secs(10))
        .build()
        .expect("policy");
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let (result, text) = block_on(async {
        let http = default_tls()
            .reqwest(reqwest::Client::builder())
            .timeout(Duration::from_millis(200))
            .build()
            .expect("a reqwest client");
        let client = reqwest_middleware::ClientBuilder::new(http)
            .with(
                backstop::reqwest::RetryMiddleware::new(Retrier::new(policy))
                    .with_runtime(clock.clone()),
            )
            .build();
        reqwest_answer(client.get(server.url("/slow")).send().await).await
    });
    // A time-out ends the operation as a time-out, whoever timed the attempt.
    let Err(Failure::TimedOut(outcome)) = result else {
        panic!("expected a time-out: {result:?} {text:?}");
    };
    assert_eq!(
        outcome.last,
        Some(AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout)))
    );
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (2, StopReason::Attempts)
    );
    assert_eq!(server.requests(), 2);
}

#[test]
fn a_body_cut_short_reads_as_an_unexpected_end_of_file() {
    let server = Server::always(Action::CloseMidBody(Reply::status(200).body("0123456789")));
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let kind = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        let response = client
            .get(server.url("/cut"))
            .send()
            .await
            .expect("the head arrives whole");
        // The body is the caller's: the failure shows when it is read.
        let error = response.bytes().await.expect_err("a body cut short");
        assert!(error.is_body() || error.is_decode(), "{error:?}");
        backstop::reqwest::error_kind(&reqwest_middleware::Error::Reqwest(error))
    });
    assert_eq!(kind, ErrorKind::UnexpectedEof);
}
