//! The POST trap, closed: an `Idempotency-Key` is the caller's opt-in, so a POST that carries
//! one is retried under the default policy. Without one, the first answer is final and the
//! reason says why (`no_idempotency_key`), in the events and in the error text. The policy can
//! still forbid such retries outright, or allow them without a key for a server that
//! deduplicates by other means.

use std::sync::{Arc, Mutex};

use backstop::Retrier;
use backstop::{NonIdempotent, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock, Failure};
use backstop_tests::middleware::{block_on, default_tls, reqwest_client};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

fn busy_then_created() -> Server {
    Server::start([Reply::status(503).into(), Reply::status(201).into()])
}

fn policy(choice: NonIdempotent) -> Retrier {
    Retrier::new(
        Policy::builder()
            .non_idempotent(choice)
            .build()
            .expect("policy"),
    )
}

#[test]
fn a_post_with_a_key_is_retried_under_the_default_policy_with_the_same_key() {
    for_each_adapter(|adapter| {
        let server = busy_then_created();
        let request = TestRequest::post(server.url("/orders"))
            .body("{}")
            .idempotency_key("k-1");
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

        assert_eq!(run.status(), Some(201), "{adapter:?}: {run:?}");
        // The server saw the 503 and the 201. Under load, ureq may first try the 503's pooled
        // connection after the server closed it: an attempt that reached no server (a third
        // attempt, on a new connection), which this policy may retry like any other.
        assert_eq!(server.requests(), 2, "{adapter:?}: {run:?}");
        let attempts = run.outcome().attempts;
        assert!(
            attempts == 2 || (adapter == Adapter::Ureq && attempts == 3),
            "{adapter:?}: {run:?}"
        );
        let keys: Vec<_> = server
            .recorded()
            .iter()
            .map(|r| r.header("idempotency-key").map(<[u8]>::to_vec))
            .collect();
        assert_eq!(keys, vec![Some(b"k-1".to_vec()); 2], "{adapter:?}");
    });
}

#[test]
fn a_post_without_a_key_returns_its_503_and_says_the_key_is_missing() {
    for_each_adapter(|adapter| {
        let server = busy_then_created();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let retrier = Retrier::default().on_event(move |e| {
            sink.lock().expect("events").push(e.to_string());
        });
        let request = TestRequest::post(server.url("/orders")).body("{}");
        let run = adapter.run(&retrier, request, Clock::Virtual);

        assert_eq!(run.status(), Some(503), "{adapter:?}: {run:?}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::NoIdempotencyKey),
            "{adapter:?}"
        );
        let events = events.lock().expect("events");
        let last = events.last().expect("a finished event");
        assert!(
            last.contains("finished") && last.contains("no_idempotency_key"),
            "{adapter:?}: {events:?}"
        );
        assert_eq!(server.requests(), 1, "{adapter:?}");
    });
}

#[test]
fn the_policy_forbids_them_outright_or_allows_them_without_a_key() {
    for_each_adapter(|adapter| {
        let server = busy_then_created();
        let keyed = TestRequest::post(server.url("/orders")).idempotency_key("k-2");
        let run = adapter.run(&policy(NonIdempotent::Never), keyed, Clock::Virtual);
        assert_eq!(run.status(), Some(503), "{adapter:?}: {run:?}");
        assert_eq!(
            run.outcome().reason,
            StopReason::NotIdempotent,
            "{adapter:?}"
        );

        let server = busy_then_created();
        let bare = TestRequest::post(server.url("/orders"));
        let retrier = policy(NonIdempotent::ServerDeduplicatesWithoutKey);
        let run = adapter.run(&retrier, bare, Clock::Virtual);
        assert_eq!(run.status(), Some(201), "{adapter:?}: {run:?}");
        // The server saw the 503 and the 201. Under load, ureq may first try the 503's pooled
        // connection after the server closed it: an attempt that reached no server (a third
        // attempt, on a new connection), which this policy may retry like any other.
        assert_eq!(server.requests(), 2, "{adapter:?}: {run:?}");
        let attempts = run.outcome().attempts;
        assert!(
            attempts == 2 || (adapter == Adapter::Ureq && attempts == 3),
            "{adapter:?}: {run:?}"
        );
    });
}

#[test]
fn a_reset_post_without_a_key_names_the_missing_key_in_its_error_text() {
    for_each_adapter(|adapter| {
        let server = Server::always(Action::Reset);
        let run = adapter.run(
            &Retrier::default(),
            TestRequest::post(server.url("/orders")).body("{}"),
            Clock::Virtual,
        );
        let Err(Failure::Failed { outcome, .. }) = run.result else {
            panic!("{adapter:?}: {run:?}");
        };
        assert_eq!(outcome.reason, StopReason::NoIdempotencyKey, "{adapter:?}");
        assert_eq!(server.requests(), 1, "{adapter:?}");
    });
    // The text a caller logs, from a client of each kind: the blocking one and the middleware.
    let server = Server::always(Action::Reset);
    let client = backstop::ureq::Client::new(Retrier::default());
    let error = client
        .run(
            TestRequest::post(server.url("/orders"))
                .to_http()
                .map(Vec::from),
        )
        .expect_err("a reset");
    assert!(
        error.to_string().ends_with("(stopped: no_idempotency_key)"),
        "{error}"
    );
    let error = block_on(async {
        let clock = backstop::tokio::TokioRuntime::new();
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        client.post(server.url("/orders")).send().await
    })
    .expect_err("a reset");
    assert!(
        error.to_string().ends_with("(stopped: no_idempotency_key)"),
        "{error}"
    );
}

#[test]
fn the_tower_layer_can_give_each_post_a_key_of_its_own() {
    let server = busy_then_created();
    let url = server.url("/orders");
    let status = block_on(async {
        use tower::ServiceExt;
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<http_body_util::Full<bytes::Bytes>>();
        let layer = backstop::tower::RetryLayer::new(
            Retrier::default(),
            backstop::runtime::VirtualTime::new(backstop::tokio::TokioRuntime::new()),
        )
        .generate_idempotency_key();
        let client = tower::ServiceBuilder::new().layer(layer).service(http);
        let request = http::Request::post(&url)
            .body(http_body_util::Full::default())
            .expect("a request");
        client.oneshot(request).await.expect("a response").status()
    });
    assert_eq!(status, 201);
    assert_generated_key_on_both_attempts(&server);
}

#[test]
fn the_reqwest_middleware_can_give_each_post_a_key_of_its_own() {
    let server = busy_then_created();
    let url = server.url("/orders");
    let status = block_on(async {
        let http = default_tls()
            .reqwest(reqwest::Client::builder())
            .build()
            .expect("a reqwest client");
        let middleware = backstop::reqwest::RetryMiddleware::new(Retrier::default())
            .with_runtime(backstop::runtime::VirtualTime::new(
                backstop::tokio::TokioRuntime::new(),
            ))
            .generate_idempotency_key();
        let client = reqwest_middleware::ClientBuilder::new(http)
            .with(middleware)
            .build();
        client.post(&url).send().await.expect("a response").status()
    });
    assert_eq!(status, 201);
    assert_generated_key_on_both_attempts(&server);
}

/// Both attempts carried one key, a UUID the stack made.
fn assert_generated_key_on_both_attempts(server: &Server) {
    let keys: Vec<_> = server
        .recorded()
        .iter()
        .map(|r| r.header("idempotency-key").map(<[u8]>::to_vec))
        .collect();
    assert_eq!(keys.len(), 2);
    let first = keys[0].clone().expect("a generated key");
    assert_eq!(first.len(), 36, "a UUID: {first:?}");
    assert_eq!(keys[1].as_deref(), Some(&first[..]));
}
