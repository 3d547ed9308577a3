//! Every front door puts each resend's `AttemptNumber` in that attempt's request extensions,
//! where a layer, middleware or transport below backstop reads it (to record OpenTelemetry's
//! `http.request.resend_count` itself): none on the first attempt (`AttemptNumber::of` reads
//! it as 1), then 2, for a 503 retried into a 200. Under hedging,
//! the reqwest middleware hands its caller the extensions the winning copy went down the chain
//! with.

use std::sync::{Arc, Mutex};

use backstop::runtime::VirtualTime;
use backstop::transport::AttemptNumber;
use backstop::Retrier;
use backstop_tests::middleware::{block_on, default_tls, tower_request};
use backstop_tests::server::{Reply, Server};
use tower::ServiceExt;

fn server() -> Server {
    Server::start([
        Reply::status(503).header("Retry-After", "0").into(),
        Reply::status(200).body("ok").into(),
    ])
}

/// What the layer below saw: each attempt's number, `None` where there was none.
type Seen = Arc<Mutex<Vec<Option<u32>>>>;

fn saw(seen: &Seen, number: Option<&AttemptNumber>) {
    seen.lock().expect("lock").push(number.map(|n| n.0));
}

#[test]
fn a_tower_service_below_the_layer_sees_each_attempts_number() {
    let server = server();
    let seen = Seen::default();
    let below = seen.clone();
    let status = block_on(async move {
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
        let client = tower::ServiceBuilder::new()
            .layer(backstop::tower::RetryLayer::new(Retrier::default(), clock))
            .map_request(move |request: http::Request<_>| {
                saw(&below, request.extensions().get::<AttemptNumber>());
                request
            })
            .service(http);
        let url = server.url("/");
        let response = client
            .oneshot(tower_request(http::Method::GET, &url))
            .await
            .expect("a response");
        response.status().as_u16()
    });
    assert_eq!(status, 200);
    assert_eq!(*seen.lock().expect("lock"), [None, Some(2)]);
}

/// A reqwest middleware after backstop's that notes each attempt's number, and puts it in the
/// extensions it sends on (as [`WentAs`]: which copy of a hedged request it is).
struct Below(Seen);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Below {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let number = extensions.get::<AttemptNumber>().copied();
        saw(&self.0, number.as_ref());
        if let Some(number) = number {
            extensions.insert(WentAs(number.0));
        }
        next.run(request, extensions).await
    }
}

/// The attempt (or copy) a reqwest middleware after backstop's saw, noted in the extensions
/// it sends on.
#[derive(Clone, Debug, PartialEq)]
struct WentAs(u32);

#[test]
fn a_reqwest_middleware_after_backstops_sees_each_attempts_number() {
    let server = server();
    let seen = Seen::default();
    let below = Below(seen.clone());
    let status = block_on(async move {
        let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
        let http = default_tls()
            .reqwest(reqwest::Client::builder())
            .build()
            .expect("a reqwest client");
        let client = reqwest_middleware::ClientBuilder::new(http)
            .with(backstop::reqwest::RetryMiddleware::new(Retrier::default()).with_runtime(clock))
            .with(below)
            .build();
        let response = client
            .get(server.url("/"))
            .send()
            .await
            .expect("a response");
        response.status().as_u16()
    });
    assert_eq!(status, 200);
    assert_eq!(*seen.lock().expect("lock"), [None, Some(2)]);
}

#[test]
fn a_ureq_middleware_sees_each_attempts_number() {
    let server = server();
    let seen = Seen::default();
    let below = seen.clone();
    let config = ureq::Agent::config_builder()
        .middleware(
            move |request: http::Request<ureq::SendBody>,
                  next: ureq::middleware::MiddlewareNext| {
                saw(&below, request.extensions().get::<AttemptNumber>());
                next.handle(request)
            },
        )
        .build();
    let client = backstop::ureq::Client::with_config(Retrier::default(), config);
    let request = http::Request::get(server.url("/"))
        .body(())
        .expect("a request");
    let response = client.run(request).expect("a response");
    assert_eq!(response.response.status(), 200);
    assert_eq!(*seen.lock().expect("lock"), [None, Some(2)]);
}

#[test]
fn a_transport_given_to_run_sees_each_attempts_number() {
    let seen = Seen::default();
    let clock = VirtualTime::new(backstop::runtime::StdRuntime::new());
    let retrier = Retrier::default();
    let request = http::Request::get("http://127.0.0.1:9/")
        .body(())
        .expect("a request");
    let transport = |attempt: backstop::Attempt<()>| {
        saw(&seen, attempt.request.extensions().get::<AttemptNumber>());
        let status = if attempt.number == 1 { 503 } else { 200 };
        let response = http::Response::builder()
            .status(status)
            .header("Retry-After", "0")
            .body(())
            .expect("a response");
        async move { Ok::<_, std::io::Error>(response) }
    };
    let done = futures_lite::future::block_on(backstop::run(&retrier, &clock, request, transport))
        .expect("a response");
    assert_eq!(done.response.status(), 200);
    assert_eq!(*seen.lock().expect("lock"), [None, Some(2)]);
}

#[test]
fn a_hedged_reqwest_request_hands_the_caller_the_winning_copys_extensions() {
    // The first copy is never answered; the second, sent after 50 ms, is at once.
    let server = Server::start([
        backstop_tests::server::Action::HangUntilClosed,
        Reply::status(200).body("fast").into(),
    ]);
    let policy = backstop::Policy::builder()
        .attempt_timeout(std::time::Duration::from_secs(10))
        .hedging(backstop::Hedging::fixed(std::time::Duration::from_millis(50)).max_attempts(2))
        .build()
        .expect("a valid policy");
    let (status, went) = block_on(async move {
        let http = default_tls()
            .reqwest(reqwest::Client::builder())
            .build()
            .expect("a reqwest client");
        let client = reqwest_middleware::ClientBuilder::new(http)
            .with(backstop::reqwest::RetryMiddleware::new(Retrier::new(
                policy,
            )))
            .with(Below(Seen::default()))
            .build();
        let request = client.get(server.url("/")).build().expect("a request");
        let mut extensions = http::Extensions::new();
        let response = client
            .execute_with_extensions(request, &mut extensions)
            .await
            .expect("a response");
        (
            response.status().as_u16(),
            extensions.get::<WentAs>().cloned(),
        )
    });
    assert_eq!(status, 200);
    // The caller's extensions are the winner's (copy 2's), not the cancelled copy's.
    assert_eq!(went, Some(WentAs(2)));
}
