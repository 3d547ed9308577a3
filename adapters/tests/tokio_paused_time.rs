//! The tokio adapter reads `tokio::time::Instant`: with the clock paused, a 30 s
//! `Retry-After` passes in no real time, and the decisions see the full 30 s.

#![cfg(feature = "tokio")]

#[path = "common/request.rs"]
mod request;
use request::*;

use std::time::Duration;

use backstop::tokio::{run, Retrier};
use backstop::StopReason;

#[test]
fn paused_tokio_clock_drives_the_waits() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let real = std::time::Instant::now();
    let mut statuses = [503_u16, 200].into_iter();
    let policy = backstop::Policy::builder()
        .max_elapsed(Duration::from_secs(120))
        .build()
        .expect("policy");
    let done = rt
        .block_on(run(
            &Retrier::new(policy),
            &backstop::tokio::TokioRuntime::new(),
            get("http://example.invalid/"),
            |_attempt| {
                let status = statuses.next().unwrap_or(500);
                async move {
                    http::Response::builder()
                        .status(status)
                        .header("retry-after", "30")
                        .body(())
                        .map_err(std::io::Error::other)
                }
            },
        ))
        .expect("a response");
    assert_eq!(done.response.status(), 200);
    assert_eq!(
        (done.outcome.attempts, done.outcome.reason),
        (2, StopReason::FinalStatus)
    );
    assert!(
        done.outcome.elapsed >= Duration::from_secs(30),
        "{:?}",
        done.outcome
    );
    assert!(real.elapsed() < Duration::from_secs(5));
}
