//! The returned response over real HTTP: its body whole and unread (read with
//! `http-body-util`, parsed with `serde_json`), and `error_for_status`, whose error keeps the
//! last response and the outcome.

use backstop::StopReason;
use backstop::{Retrier, RetryRequest, VirtualTime};
use backstop_tests::server::{Reply, Server};
use http_body_util::BodyExt;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// The whole body, as `http-body-util` and `serde_json` read any `http_body::Body`.
async fn whole_body<B: BodyExt<Error: std::fmt::Debug>>(body: B) -> bytes::Bytes {
    body.collect().await.expect("the whole body").to_bytes()
}

#[test]
fn the_returned_body_is_whole_and_unread() {
    let json = r#"{"order":42,"state":"créée"}"#;
    let server = Server::always(Reply::status(200).body(json));
    let client = backstop::tokio::Client::new(Retrier::default());
    rt().block_on(async {
        let done = client.run(RetryRequest::get(server.url("/o"))).await;
        let body = whole_body(done.expect("a response").response.into_body()).await;
        let value: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(value, serde_json::json!({"order": 42, "state": "créée"}));
    });
    // smol's client hands back the same kind of body.
    let client = backstop::smol::Client::new(Retrier::default());
    let body = smol::block_on(async {
        let done = client.run(RetryRequest::get(server.url("/o"))).await;
        whole_body(done.expect("a response").response.into_body()).await
    });
    assert_eq!(&body[..], json.as_bytes());
}

#[test]
fn error_for_status_keeps_the_last_response_and_the_outcome() {
    let server = Server::always(Reply::status(503).body("still down"));
    let client = backstop::tokio::Client::new(Retrier::default())
        .with_runtime(VirtualTime::new(backstop::tokio::TokioRuntime::new()));
    rt().block_on(async {
        let done = client.run(RetryRequest::get(server.url("/"))).await;
        let error = done
            .expect("the last 503 is returned")
            .error_for_status()
            .expect_err("a 503 is an error status");
        assert_eq!(error.status(), 503);
        assert_eq!(
            (error.outcome.attempts, error.outcome.reason),
            (4, StopReason::Attempts)
        );
        assert_eq!(
            error.to_string(),
            "HTTP 503 Service Unavailable after 4 attempts (stopped: attempts)"
        );
        assert_eq!(
            &whole_body(error.response.into_body()).await[..],
            b"still down"
        );
    });

    let ok = Server::always(Reply::status(204));
    let client = backstop::tokio::Client::new(Retrier::default());
    rt().block_on(async {
        let done = client.run(RetryRequest::get(ok.url("/"))).await;
        let done = done
            .expect("a response")
            .error_for_status()
            .expect("a success");
        assert_eq!(done.response.status(), 204);
    });
}
