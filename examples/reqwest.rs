//! `cargo run --example reqwest`: reqwest 0.13 with backstop's middleware (`backstop` with
//! `reqwest`). The local server answers `503` with `Retry-After: 1` once, then `200`.

#[path = "common/local_server.rs"]
mod local_server;

use backstop::reqwest::reqwest_middleware::ClientBuilder;
use backstop::reqwest::{Retrier, RetryMiddleware};
use backstop::Outcome;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = local_server::serve(&["503 Service Unavailable\r\nRetry-After: 1", "200 OK"])?;
    // This workspace builds reqwest on rustls without a default crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    runtime.block_on(async {
        let client = ClientBuilder::new(reqwest::Client::new())
            .with(RetryMiddleware::new(Retrier::default()))
            .build();
        let response = client.get(&url).send().await?;
        let outcome = response.extensions().get::<Outcome>().copied();
        println!("{} {:?}", response.status(), response.text().await?);
        if let Some(o) = outcome {
            println!("{} attempts, {:?}", o.attempts, o.reason);
        }
        Ok(())
    })
}
