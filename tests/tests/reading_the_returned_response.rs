//! The returned response over real HTTP: its body whole and unread (read with
//! `http-body-util` or ureq's own reader, parsed with `serde_json`), and `error_for_status`,
//! whose error keeps the last response and the outcome.

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn the_returned_body_is_whole_and_unread() {
    let json = r#"{"order":42,"state":"créée"}"#;
    let server = Server::always(Reply::status(200).body(json));
    for_each_adapter(|adapter| {
        let run = adapter.run(
            &Retrier::default(),
            TestRequest::get(server.url("/o")),
            Clock::Real,
        );
        let body = run.body().unwrap_or_else(|| panic!("{adapter:?}: {run:?}"));
        let value: serde_json::Value = serde_json::from_slice(body).expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"order": 42, "state": "créée"}),
            "{adapter:?}"
        );
    });
}

#[test]
fn error_for_status_keeps_the_last_response_and_the_outcome() {
    let server = Server::always(Reply::status(503).body("still down"));
    let client = backstop::ureq::Client::new(Retrier::default())
        .with_runtime(VirtualTime::new(backstop::runtime::StdRuntime::new()));
    let request = http::Request::get(server.url("/"))
        .body(())
        .expect("a request");
    let error = client
        .run(request)
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
    let mut response = error.response;
    assert_eq!(
        response.body_mut().read_to_string().expect("the body"),
        "still down"
    );

    let ok = Server::always(Reply::status(204));
    let request = http::Request::get(ok.url("/")).body(()).expect("a request");
    let done = client
        .run(request)
        .expect("a response")
        .error_for_status()
        .expect("a success");
    assert_eq!(done.response.status(), 204);
}
