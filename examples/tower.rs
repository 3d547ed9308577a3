//! `cargo run --example tower`: the tower layer over hyper-util's client on tokio (`backstop`
//! with `tower` and `tokio`). The local server answers `503` (`Retry-After: 1`), then `200`.

#[path = "common/local_server.rs"]
mod local_server;

use backstop::tokio::TokioRuntime;
use backstop::tower::RetryLayer;
use backstop::{Outcome, Retrier};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use tower::{ServiceBuilder, ServiceExt};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = local_server::serve(&["503 Service Unavailable\r\nRetry-After: 1", "200 OK"])?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    runtime.block_on(async {
        let http = Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http::<Full<bytes::Bytes>>();
        let layer = RetryLayer::new(Retrier::default(), TokioRuntime::new());
        let client = ServiceBuilder::new().layer(layer).service(http);
        let request = http::Request::get(&url).body(Full::default())?;
        let response = client.oneshot(request).await?;
        let outcome = response.extensions().get::<Outcome>().copied();
        println!(
            "{} after {:?}",
            response.status(),
            outcome.map(|o| o.attempts)
        );
        Ok(())
    })
}
