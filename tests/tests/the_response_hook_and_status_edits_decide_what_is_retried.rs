//! Which responses are retried, beyond the default status set, on every adapter: the
//! retrier's response hook (a 200 that says "not ready", a 404 for one endpoint, a 503 wanted
//! back at once) and the policy's `add_retryable_status` / `remove_retryable_status`.

use backstop::classify::ResponseClass;
use backstop::{Policy, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock, Run};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// The hook these scenarios share: a `200` with `X-Not-Ready` and a `404` under `/jobs/` are
/// retryable, a response under `/fail-fast/` is final, the rest is the status set's.
fn hooked() -> Retrier {
    Retrier::default().classify_response(|r| {
        let not_ready = r.headers.contains_key("x-not-ready");
        let job_pending = r.status == 404 && r.uri.path().starts_with("/jobs/");
        if not_ready || job_pending {
            ResponseClass::Retryable
        } else if r.uri.path().starts_with("/fail-fast/") {
            ResponseClass::Final
        } else {
            ResponseClass::ByStatus
        }
    })
}

/// The response came back after one request, as the final status.
fn returned_at_once(adapter: Adapter, run: &Run, server: &Server, status: u16) {
    let outcome = run.outcome();
    assert_eq!(
        (run.status(), outcome.attempts, outcome.reason),
        (Some(status), 1, StopReason::FinalStatus),
        "{adapter:?}: {run:?}"
    );
    assert_eq!(server.requests(), 1, "{adapter:?}");
}

#[test]
fn a_success_the_hook_calls_retryable_is_retried() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Reply::status(200)
                .header("X-Not-Ready", "1")
                .body("wait")
                .into(),
            Reply::status(200).body("done").into(),
        ]);
        let run = adapter.run(
            &hooked(),
            TestRequest::get(server.url("/report")),
            Clock::Virtual,
        );
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"done"[..]), "{adapter:?}");
        assert_eq!(run.outcome().attempts, 2, "{adapter:?}");
        assert_eq!(server.requests(), 2, "{adapter:?}");
    });
}

#[test]
fn a_not_found_is_retried_for_one_endpoint_only() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Reply::status(404).into(),
            Reply::status(200).body("scheduled").into(),
        ]);
        let run = adapter.run(
            &hooked(),
            TestRequest::get(server.url("/jobs/7")),
            Clock::Virtual,
        );
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.outcome().attempts, 2, "{adapter:?}");

        let elsewhere = Server::always(Reply::status(404));
        let run = adapter.run(
            &hooked(),
            TestRequest::get(elsewhere.url("/missing")),
            Clock::Virtual,
        );
        returned_at_once(adapter, &run, &elsewhere, 404);
    });
}

#[test]
fn a_service_unavailable_the_hook_calls_final_is_returned_at_once() {
    for_each_adapter(|adapter| {
        let server = Server::always(Reply::status(503).header("Retry-After", "0"));
        let run = adapter.run(
            &hooked(),
            TestRequest::get(server.url("/fail-fast/now")),
            Clock::Virtual,
        );
        returned_at_once(adapter, &run, &server, 503);
    });
}

#[test]
fn an_added_status_is_retried_and_a_removed_one_is_not() {
    for_each_adapter(|adapter| {
        let added = Retrier::new(
            Policy::builder()
                .add_retryable_status(409)
                .build()
                .expect("valid"),
        );
        let server = Server::start([Reply::status(409).into(), Reply::status(200).into()]);
        let run = adapter.run(&added, TestRequest::get(server.url("/")), Clock::Virtual);
        assert_eq!(
            (run.status(), run.outcome().attempts),
            (Some(200), 2),
            "{adapter:?}: {run:?}"
        );

        let removed = Retrier::new(
            Policy::builder()
                .remove_retryable_status(503)
                .build()
                .expect("valid"),
        );
        let server = Server::always(Reply::status(503));
        let run = adapter.run(&removed, TestRequest::get(server.url("/")), Clock::Virtual);
        returned_at_once(adapter, &run, &server, 503);
    });
}
