//! Hedged requests: a second copy of a request that has not answered in time.
//!
//! Rule: retries fix errors; hedging fixes slowness. Under a policy with
//! [`PolicyBuilder::hedging`](crate::PolicyBuilder::hedging), the tower layer and the reqwest
//! middleware send a second copy of a request that has not answered within the delay (fixed,
//! or adaptive: a percentile of the latencies the retrier's [`LatencyTracker`] saw), take the
//! first final answer and drop the other copies. Dropping a copy cancels its request: on
//! HTTP/1.1 its connection is closed (the server may still do the work), on HTTP/2 its stream
//! is reset. Only a request whose method may be sent again by itself, with a body that can be
//! sent again, is hedged ([`Policy::hedges`](crate::Policy::hedges)): a POST or PATCH with an
//! `Idempotency-Key` is retried instead, because its server answers a concurrent repeat of the
//! key with 409 Conflict, which would win over the copy that did the work; every copy after
//! the first is paid for by the retrier's [`budget`](crate::Retrier::budget), so retries and
//! hedges share one limit. The response's extensions hold a [`HedgeOutcome`] (which copy won,
//! how many were cancelled or suppressed) beside its [`Outcome`](crate::Outcome); the events
//! report each copy ([`EventKind::CopySent`](crate::EventKind::CopySent),
//! [`EventKind::CopyCancelled`](crate::EventKind::CopyCancelled)). [`run`](crate::run) and
//! blocking ureq do not hedge (a [`Transport`](crate::Transport) and a ureq call carry one
//! request at a time): they retry under the same policy's retry settings.
//!
//! ```
//! # #[cfg(all(feature = "tower", feature = "tokio"))] {
//! use backstop::tokio::TokioRuntime;
//! use backstop::tower::RetryLayer;
//! use backstop::{HedgeOutcome, Hedging, Policy, Retrier};
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use std::time::Duration;
//! use tower::{ServiceBuilder, ServiceExt};
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/report", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     for (i, stream) in listener.incoming().take(2).enumerate() {
//! #         let mut stream = stream.unwrap();
//! #         let mut buf = [0; 1024];
//! #         let _ = stream.read(&mut buf);
//! #         // The first copy never gets an answer: its stream stays open, unanswered.
//! #         if i == 0 { std::mem::forget(stream); continue }
//! #         let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfast");
//! #     }
//! # });
//!
//! // A second copy after 50 ms without an answer.
//! let policy = Policy::builder()
//!     .hedging(Hedging::fixed(Duration::from_millis(50)))
//!     .build()?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
//!         .build_http::<Full<Bytes>>();
//!     let client = ServiceBuilder::new()
//!         .layer(RetryLayer::new(Retrier::new(policy), TokioRuntime::new()))
//!         .service(http);
//!     let response = client.oneshot(http::Request::get(&url).body(Full::default())?).await?;
//!     let hedged = *response.extensions().get::<HedgeOutcome>().expect("hedged");
//!     assert_eq!((hedged.winner, hedged.cancelled), (Some(2), 1));
//!     assert_eq!(response.into_body().collect().await?.to_bytes(), "fast");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[doc(inline)]
pub use backstop_core::{
    CancelReason, HedgeDelay, HedgeOutcome, HedgeTrigger, Hedging, HedgingError, LatencyTracker,
    A6_MAX_ATTEMPTS, MAX_COPIES,
};
