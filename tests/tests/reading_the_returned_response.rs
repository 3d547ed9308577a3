//! The returned response, read with the async adapters' helpers: `json`, `text` and `bytes`
//! over real HTTP, and `error_for_status`, whose error keeps the last response and the outcome.

use backstop::StopReason;
use backstop::{Retrier, RetryRequest, VirtualTime};
use backstop_tests::server::{Reply, Server};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

#[test]
fn json_text_and_bytes_read_the_whole_body() {
    let json = r#"{"order":42,"state":"créée"}"#;
    let server = Server::always(Reply::status(200).body(json));
    let client = backstop::tokio::Client::new(Retrier::default());
    rt().block_on(async {
        let done = client.run(RetryRequest::get(server.url("/o"))).await;
        let value: serde_json::Value = done.expect("a response").json().await.expect("JSON");
        assert_eq!(value, serde_json::json!({"order": 42, "state": "créée"}));

        let done = client.run(RetryRequest::get(server.url("/o"))).await;
        assert_eq!(done.expect("a response").text().await.expect("text"), json);

        let done = client.run(RetryRequest::get(server.url("/o"))).await;
        let bytes = done.expect("a response").bytes().await.expect("bytes");
        assert_eq!(&bytes[..], json.as_bytes());
    });
    // smol's client hands back the same kind of body.
    let client = backstop::smol::Client::new(Retrier::default());
    let text = smol::block_on(async {
        let done = client.run(RetryRequest::get(server.url("/o"))).await;
        done.expect("a response").text().await.expect("text")
    });
    assert_eq!(text, json);
}

#[test]
fn json_of_the_wrong_shape_is_an_error_that_names_no_content() {
    let server = Server::always(Reply::status(200).body("not json: SECRET"));
    let client = backstop::tokio::Client::new(Retrier::default());
    let error = rt().block_on(async {
        let done = client.run(RetryRequest::get(server.url("/"))).await;
        done.expect("a response")
            .json::<serde_json::Value>()
            .await
            .expect_err("not JSON")
    });
    let text = error.to_string();
    assert!(
        text.starts_with("the response body is not the JSON expected"),
        "{text}"
    );
    assert!(!text.contains("SECRET"), "{text}");
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
        let body = http_body_util::BodyExt::collect(error.response.into_body()).await;
        assert_eq!(&body.expect("the body").to_bytes()[..], b"still down");
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
