//! `cargo run --example smol`: the tower layer over backstop's own `HttpService` on smol
//! (`backstop` with `tower` and `smol`). The local server answers `503`
//! (`Retry-After: 1`), then `200`.

#[path = "common/local_server.rs"]
mod local_server;

use backstop::smol::{HttpService, SmolRuntime};
use backstop::tower::RetryLayer;
use backstop::{Outcome, Retrier};
use http_body_util::Full;
use tower::{Layer, ServiceExt};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = local_server::serve(&["503 Service Unavailable\r\nRetry-After: 1", "200 OK"])?;

    smol::block_on(async {
        let layer = RetryLayer::new(Retrier::default(), SmolRuntime::new());
        let client = layer.layer(HttpService::new());
        let request = http::Request::get(&url).body(Full::<bytes::Bytes>::default())?;
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
