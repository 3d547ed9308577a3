//! Through the reqwest middleware and the tower layer, as through every adapter: a 503, 503,
//! 200 operation uses one connection. The discarded 503s are read to their end (small and
//! quick), so the client's pool hands the same connection to the next attempt.

use backstop::StopReason;
use backstop_driver::{Retrier, VirtualTime};
use backstop_tests::middleware::*;
use backstop_tests::server::{Action, Reply, Server};

fn script() -> [Action; 3] {
    // Large enough that the client does not read it ahead with the head.
    let busy = Reply::status(503)
        .header("Retry-After", "1")
        .body("x".repeat(32 * 1024));
    [
        busy.clone().into(),
        busy.into(),
        Reply::status(200).body("done").into(),
    ]
}

#[test]
fn a_503_503_200_operation_through_reqwest_uses_one_connection() {
    let server = Server::start(script());
    let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
    let url = server.url("/data");
    let (result, _) = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, default_tls());
        reqwest_answer(client.get(&url).send().await).await
    });
    let answer = result.expect("a response");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body.as_deref(), Ok(&b"done"[..]));
    assert_eq!(
        (answer.outcome.attempts, answer.outcome.reason),
        (3, StopReason::FinalStatus)
    );
    assert_eq!(server.requests(), 3);
    assert_eq!(server.connections(), 1);
}

#[test]
fn a_503_503_200_operation_through_tower_uses_one_connection() {
    let server = Server::start(script());
    let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
    let url = server.url("/data");
    let (result, _) = block_on(async {
        let client = tower_client(&Retrier::default(), &clock, default_tls());
        tower_answer(client, tower_request(http::Method::GET, &url)).await
    });
    let answer = result.expect("a response");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body.as_deref(), Ok(&b"done"[..]));
    assert_eq!(answer.outcome.attempts, 3);
    assert_eq!(server.requests(), 3);
    assert_eq!(server.connections(), 1);
}
