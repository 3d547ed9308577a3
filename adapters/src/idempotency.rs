//! The `Idempotency-Key` header: how a POST or PATCH opts in to retries.
//!
//! Rule (RFC 9110 §9.2.2; IETF httpapi `Idempotency-Key` draft): a request whose method is
//! not idempotent is repeated only when the server can tell a repeat from a new request. A
//! POST or PATCH opts in with an `Idempotency-Key`: [`new_idempotency_key`] makes one (a UUID
//! v4), [`ensure_idempotency_key`] adds one where there is none, as the layer's and the
//! middleware's `generate_idempotency_key()` do; every attempt carries the same key. Which
//! methods need one is the policy's ([`NonIdempotent`](crate::NonIdempotent)).
//!
//! A create-order POST through blocking ureq, with a name for its events and a policy of its
//! own in its extensions (see [`Retried`](crate::Retried) for what comes back, and
//! [`Retried::error_for_status`](crate::Retried::error_for_status)):
//!
//! ```
//! # #[cfg(feature = "ureq")] {
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/orders", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     for (stream, answer) in listener.incoming().zip([
//! #         "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
//! #         "HTTP/1.1 201 Created\r\nContent-Length: 8\r\nConnection: close\r\n\r\n{\"id\":7}",
//! #     ]) {
//! #         let mut stream = stream.unwrap();
//! #         let (mut seen, mut buf) = (Vec::new(), [0; 4096]);
//! #         while !seen.ends_with(b"}") { // the whole request, body included
//! #             let n = stream.read(&mut buf).unwrap();
//! #             if n == 0 { break }
//! #             seen.extend_from_slice(&buf[..n]);
//! #         }
//! #         let _ = stream.write_all(answer.as_bytes());
//! #     }
//! # });
//! use backstop::idempotency::new_idempotency_key;
//! use backstop::{OperationName, Policy};
//! use backstop::ureq::{Client, Retrier};
//!
//! // A header that does not convert is `http`'s error: nothing reaches backstop or the server.
//! let bad = http::Request::post(&url)
//!     .header("authorization", "Bearer s3cret\r\nX-Injected: yes") // a newline: invalid
//!     .body(());
//! assert!(bad.is_err());
//!
//! let mut request = http::Request::post(&url)
//!     .header("content-type", "application/json")
//!     .header("idempotency-key", new_idempotency_key()) // the opt-in
//!     .body(serde_json::to_vec(&serde_json::json!({ "sku": 42 }))?)?;
//! request.extensions_mut().insert(OperationName::new("create-order"));
//! request.extensions_mut().insert(Policy::builder().max_attempts(2).build()?); // this request's
//! let mut done = Client::new(Retrier::default())
//!     .run(request)?
//!     .error_for_status()?; // "HTTP 503 Service Unavailable after 2 attempts (stopped: attempts)"
//! let order: serde_json::Value = serde_json::from_str(&done.response.body_mut().read_to_string()?)?;
//! assert_eq!((order["id"].as_u64(), done.outcome.attempts), (Some(7), 2));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::request::{
    ensure_idempotency_key, needs_idempotency_key, new_idempotency_key, IDEMPOTENCY_KEY,
};
#[doc(inline)]
pub use backstop_core::is_idempotency_key;
