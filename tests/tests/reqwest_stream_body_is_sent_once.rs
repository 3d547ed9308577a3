//! Through the reqwest middleware: a request whose body is a stream cannot be replayed. It is
//! sent once, whole, and never again: not after a 503 (the 503 comes back) and not after a
//! refused connection (the stream went with the first attempt); never re-sent empty. The
//! outcome, on the response or the error, says `BodyNotReplayable`.

use backstop::runtime::VirtualTime;
use backstop::{ErrorKind, StopReason};
use backstop::{Retrier, RetryError};
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

fn stream(text: &'static str) -> reqwest::Body {
    // `Body::wrap` makes a streaming body: `try_clone` is `None`.
    reqwest::Body::wrap(String::from(text))
}

#[test]
fn a_streamed_body_is_sent_once_and_the_503_returned_with_its_reason() {
    let server = Server::start([Reply::status(503).into(), Reply::status(200).into()]);
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let url = server.url("/upload");
    let response = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        client.get(&url).body(stream("payload")).send().await
    })
    .expect("the 503 is returned");
    assert_eq!(response.status(), 503);
    let outcome = response.extensions().get::<backstop::Outcome>().copied();
    assert_eq!(
        outcome.map(|o| (o.attempts, o.reason)),
        Some((1, StopReason::BodyNotReplayable))
    );
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1, "sent once");
    assert_eq!(recorded[0].body, b"payload", "sent whole");
}

#[test]
fn a_replayable_body_is_retried() {
    let server = Server::start([Reply::status(503).into(), Reply::status(200).into()]);
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let url = server.url("/upload");
    let response = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        client.get(&url).body("payload").send().await
    })
    .expect("a response");
    assert_eq!(response.status(), 200);
    let outcome = response.extensions().get::<backstop::Outcome>().copied();
    assert_eq!(
        outcome.map(|o| (o.attempts, o.reason)),
        Some((2, StopReason::FinalStatus))
    );
    let bodies: Vec<_> = server.recorded().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies, vec![b"payload".to_vec(); 2]);
}

#[test]
fn a_streamed_body_is_not_retried_after_a_refused_connection() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let error = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        let url = format!("http://127.0.0.1:{port}/upload");
        client.post(url).body(stream("payload")).send().await
    })
    .expect_err("nobody listens");
    let Some(RetryError::Failed { kind, outcome, .. }) = backstop::reqwest::retry_error(&error)
    else {
        panic!("{error:?}");
    };
    assert_eq!(*kind, ErrorKind::ConnectionRefused);
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, StopReason::BodyNotReplayable)
    );
}
