//! Nothing secret is ever emitted: for a URL with userinfo and a query, and a request with
//! `Authorization`, `Cookie`, `Proxy-Authorization`, an `Idempotency-Key` and a body, every
//! event (callback, its `Display` and `Debug`, and every `tracing` field) is free of them.

use std::sync::{Arc, Mutex};

use backstop::Retrier;
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::traced::Capture;
use backstop_tests::TestRequest;
use http::{header, HeaderValue};

#[test]
fn no_event_contains_userinfo_query_headers_key_or_body() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "0").into(),
            Reply::status(200).body("fine").into(),
        ]);
        let url = server
            .url("/v1/orders?token=SECRET-QUERY#SECRET-FRAGMENT")
            .replace("http://", "http://alice:SECRET-PASSWORD@");
        let request = TestRequest::post(url)
            .name("create-order")
            .header(
                header::AUTHORIZATION,
                HeaderValue::from_static("Bearer SECRET-AUTH"),
            )
            .header(
                header::COOKIE,
                HeaderValue::from_static("session=SECRET-COOKIE"),
            )
            .header(
                header::PROXY_AUTHORIZATION,
                HeaderValue::from_static("Basic SECRET-PROXY"),
            )
            .idempotency_key(HeaderValue::from_static("SECRET-KEY"))
            .body("SECRET-BODY");
        let emitted = Arc::new(Mutex::new(Vec::new()));
        let sink = emitted.clone();
        let retrier = Retrier::default().on_event(move |e| {
            sink.lock().expect("sink lock").push(format!("{e} | {e:?}"));
        });
        let capture = Capture::default();
        let run = capture.during(|| adapter.run(&retrier, request, Clock::Virtual));

        let mut all = emitted.lock().expect("sink lock").clone();
        let mut traced: Vec<String> = capture.lines().iter().map(|l| l.text()).collect();
        if matches!(adapter, Adapter::TowerTokio | Adapter::Reqwest) {
            // reqwest and a hyper-util client behind the tower layer are the caller's, and so
            // are their logs: hyper-util's pool logs its key, userinfo included. backstop's
            // own events are checked; the logs of the clients backstop makes (ureq's agent,
            // smol's `HttpService`) are checked whole.
            traced.retain(|l| l.starts_with("backstop"));
        }
        assert!(
            traced.iter().any(|l| l.starts_with("backstop ")),
            "{adapter:?}: no tracing event from backstop: {traced:?}"
        );
        all.extend(traced);
        // The events are there, with the URL reduced to scheme, host, port and path.
        let redacted = format!("http://{}/v1/orders", server.addr());
        assert!(all.len() >= 5, "{adapter:?}: {all:?}");
        assert!(
            all.iter().any(|l| l.contains(&redacted)),
            "{adapter:?}: {all:?}"
        );
        assert!(
            all.iter().any(|l| l.contains("create-order")),
            "{adapter:?}: the operation's name is in its events: {all:?}"
        );
        for line in &all {
            assert!(
                !line.contains("SECRET") && !line.contains("alice"),
                "{adapter:?} leaked a secret: {line}"
            );
        }
        assert_eq!(run.outcome().attempts, 2, "{adapter:?}: {run:?}");
    });
}
