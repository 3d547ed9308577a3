//! A URL the client cannot serve (a scheme it does not speak, a port out of range, no host) is
//! an invalid request on every adapter: nothing reaches a server, and it is returned at once,
//! never retried. Only a refusal or a DNS failure the classifier positively identifies is
//! "not sent"; an error it does not know was never taken for one.

use backstop::Retrier;
use backstop::{ErrorKind, StopReason};
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock, Failure, Run};
use backstop_tests::middleware::{block_on, default_tls, reqwest_client, Clock as StackClock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;
use bytes::Bytes;
use http_body_util::Full;
use tower::ServiceExt;

/// Why `run` is not an invalid request returned at once (at most the one attempt whose client
/// refused it), or `None`.
fn not_refused_at_once(run: &Run) -> Option<String> {
    match run.result {
        Err(Failure::Failed { kind, outcome })
            if kind == ErrorKind::InvalidRequest
                && outcome.attempts <= 1
                && outcome.reason == StopReason::PermanentError =>
        {
            None
        }
        _ => Some(format!("{:?}: {run:?}", run.adapter)),
    }
}

#[test]
fn an_unsupported_scheme_is_an_invalid_request_on_every_adapter() {
    let server = Server::always(Reply::status(200));
    let url = server.url("/orders").replacen("http://", "ftp://", 1);
    let mut wrong = Vec::new();
    for_each_adapter(|adapter| {
        let run = adapter.run(&Retrier::default(), TestRequest::get(&url), Clock::Virtual);
        wrong.extend(not_refused_at_once(&run));
    });
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn a_port_out_of_range_is_an_invalid_request_on_every_adapter() {
    // `http` takes both (it reads a port's digits nowhere); hyper-util and ureq would send
    // them to port 80.
    for url in [
        "http://127.0.0.1:99999/orders",
        "http://127.0.0.1:80a/orders",
    ] {
        port_refused_on_every_adapter(url);
    }
}

/// Checks that `url`, whose port is no TCP port, is refused unsent by every adapter.
fn port_refused_on_every_adapter(url: &str) {
    let mut wrong = Vec::new();
    for_each_adapter(|adapter| {
        if adapter == Adapter::Reqwest {
            // reqwest parses the URL itself (the `url` crate): its builder refuses it before
            // the middleware runs, so nothing is sent.
            let clock = StackClock::new(backstop::tokio::TokioRuntime::new());
            let error = block_on(async {
                let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
                client.get(url).send().await
            })
            .expect_err("a port out of range");
            if !matches!(&error, reqwest_middleware::Error::Reqwest(e) if e.is_builder()) {
                wrong.push(format!("Reqwest: {error:?}"));
            }
            return;
        }
        let run = adapter.run(&Retrier::default(), TestRequest::get(url), Clock::Virtual);
        wrong.extend(not_refused_at_once(&run));
    });
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_uri_without_a_host_is_an_invalid_request_on_every_adapter_that_takes_one() {
    // reqwest cannot make a request without a host; the others take an `http::Uri`.
    let mut wrong = Vec::new();
    for adapter in [Adapter::Ureq, Adapter::TowerSmol, Adapter::TowerTokio] {
        let run = adapter.run(
            &Retrier::default(),
            TestRequest::get("/orders"),
            Clock::Virtual,
        );
        wrong.extend(not_refused_at_once(&run));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn https_to_a_hyper_util_client_without_tls_is_an_invalid_request_behind_the_tower_layer() {
    // hyper-util's plain `HttpConnector` serves `http://` only: it refuses the URL before
    // connecting, every time.
    let server = Server::always(Reply::status(200));
    let url = server.url("/orders").replacen("http://", "https://", 1);
    let clock = StackClock::new(backstop::tokio::TokioRuntime::new());
    let result = block_on(async {
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<Full<Bytes>>();
        let client = tower::ServiceBuilder::new()
            .layer(backstop::tower::RetryLayer::new(
                Retrier::default(),
                clock.clone(),
            ))
            .service(http);
        let request = http::Request::get(&url)
            .body(Full::new(Bytes::new()))
            .expect("a request");
        client.oneshot(request).await
    });
    let Err(backstop::RetryError::Failed { kind, outcome, .. }) = result else {
        panic!("expected a failure, got {result:?}");
    };
    assert_eq!(
        (kind, outcome.attempts, outcome.reason),
        (ErrorKind::InvalidRequest, 1, StopReason::PermanentError)
    );
    assert_eq!(server.connections(), 0);
}
