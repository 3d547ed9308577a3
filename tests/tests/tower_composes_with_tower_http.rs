//! The tower layer composes with tower-http: a `SetRequestHeader` layer inside the retry layer
//! stamps every attempt, and the retried request reaches the server with it each time.

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};
use http::header::{HeaderName, HeaderValue};
use tower::ServiceExt;
use tower_http::set_header::SetRequestHeaderLayer;

#[test]
fn a_tower_http_layer_inside_the_retry_layer_runs_on_every_attempt() {
    let server = Server::start([Reply::status(503).into(), Reply::status(200).into()]);
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let url = server.url("/data");
    let status = block_on(async {
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let client = tower::ServiceBuilder::new()
            .layer(backstop::tower::RetryLayer::new(
                Retrier::default(),
                clock.clone(),
            ))
            .layer(SetRequestHeaderLayer::overriding(
                HeaderName::from_static("x-client"),
                HeaderValue::from_static("backstop"),
            ))
            .service(http);
        let response = client
            .oneshot(tower_request(http::Method::GET, &url))
            .await
            .expect("a response");
        response.status().as_u16()
    });
    assert_eq!(status, 200);
    let stamps: Vec<_> = server
        .recorded()
        .iter()
        .map(|r| r.header("x-client").map(<[u8]>::to_vec))
        .collect();
    assert_eq!(stamps, vec![Some(b"backstop".to_vec()); 2]);
}
