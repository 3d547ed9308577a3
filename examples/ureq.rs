//! `cargo run --example ureq`: blocking retries over ureq 3.5 (`backstop` with `ureq`).
//! The local server answers `503` with `Retry-After: 1` once, then `200`.

#[path = "common/local_server.rs"]
mod local_server;

use backstop::ureq::{Client, Retrier};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = local_server::serve(&["503 Service Unavailable\r\nRetry-After: 1", "200 OK"])?;

    let client = Client::new(Retrier::default()); // the defaults: Policy::default()
    let mut done = client.run(http::Request::get(&url).body(())?)?;

    let body = done.response.body_mut().read_to_string()?;
    println!("{} {body:?}", done.response.status());
    println!(
        "{} attempts, {:?}",
        done.outcome.attempts, done.outcome.reason
    );
    Ok(())
}
