//! # backstop-ureq
//!
//! Blocking HTTP retries over [ureq 3](https://docs.rs/ureq): the backstop retry loop
//! (`backstop-driver`) run on the calling thread, with ureq as the client.
//!
//! - **Timeouts**: each attempt's timeout (already bounded by the overall deadline) becomes
//!   ureq's per-request global timeout.
//! - **Abort**: [`Abort::abort`] from any thread interrupts the wait between attempts at once
//!   and the request in flight by shutting down that operation's socket (ureq 3.5's per-
//!   connection shutdown handles); other operations on the same [`Client`] carry on. A TCP
//!   connect in progress is not interruptible (ureq's limit): it is bounded by the attempt
//!   timeout.
//! - **Bodies**: the request body is replayed per attempt; a discarded response is dropped
//!   (closing its connection) before the next attempt; the returned response's body is unread.
//! - **Statuses**: every status comes back as a response (`http_status_as_error(false)` on
//!   every request), so the retry policy sees 429 and 503.
//!
//! ```
//! use backstop_ureq::{Client, Retrier, RetryRequest};
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/hello", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     for (stream, answer) in listener.incoming().zip([
//! #         "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
//! #         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
//! #     ]) {
//! #         let mut stream = stream.unwrap();
//! #         let mut buf = [0; 1024];
//! #         let _ = stream.read(&mut buf);
//! #         let _ = stream.write_all(answer.as_bytes());
//! #     }
//! # });
//!
//! let client = Client::new(Retrier::new(backstop::Policy::default()));
//! let mut done = client.run(RetryRequest::get(url.parse()?))?;
//! assert_eq!(done.response.status(), 200);
//! assert_eq!(done.outcome.attempts, 2);
//! assert_eq!(done.response.body_mut().read_to_string()?, "ok");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod abortable;
mod classify;

pub use backstop_driver::{
    Abort, Metrics, Retried, Retrier, RetryError, RetryEvent, RetryRequest, Runtime, StdRuntime,
    VirtualTime,
};
pub use classify::error_kind;

use backstop_driver::run;
use ureq::unversioned::resolver::DefaultResolver;
use ureq::Agent;

use crate::abortable::{AbortConnector, AttemptScope};

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<ureq::Body>, RetryError<ureq::Error>>;

/// A blocking retrying client: a ureq [`Agent`] (with its connection pool), a [`Retrier`] and
/// a [`Runtime`] (the real clock by default; [`VirtualTime`] in tests).
#[derive(Debug, Clone)]
pub struct Client<RT = StdRuntime> {
    agent: Agent,
    retrier: Retrier,
    runtime: RT,
}

impl Client<StdRuntime> {
    /// A client with ureq's default configuration.
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        Client::with_config(retrier, Agent::config_builder().build())
    }

    /// A client with a ureq configuration of the caller's (its `http_status_as_error` is
    /// overridden per request: statuses are the retry policy's business).
    #[must_use]
    pub fn with_config(retrier: Retrier, config: ureq::config::Config) -> Self {
        Client {
            agent: Agent::with_parts(
                config,
                AbortConnector::default(),
                DefaultResolver::default(),
            ),
            retrier,
            runtime: StdRuntime::new(),
        }
    }
}

impl<RT: Runtime> Client<RT> {
    /// The same client on another clock and sleep (for example [`VirtualTime`]).
    #[must_use]
    pub fn with_runtime<R2: Runtime>(self, runtime: R2) -> Client<R2> {
        Client {
            agent: self.agent,
            retrier: self.retrier,
            runtime,
        }
    }

    /// The underlying agent.
    #[must_use]
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &RT {
        &self.runtime
    }

    /// Runs one operation on this thread until the policy is satisfied or it is aborted.
    ///
    /// # Errors
    ///
    /// [`RetryError`] when the operation ends without a response: aborted, timed out, or the
    /// last attempt's ureq error. A final error status (the last 503, a 404) is `Ok`: look at
    /// the response's status and [`Retried::outcome`].
    pub fn run(&self, request: RetryRequest) -> Result {
        let abort = request.abort_handle().cloned();
        let agent = &self.agent;
        futures_lite::future::block_on(run(
            &self.retrier,
            &self.runtime,
            request,
            error_kind,
            |attempt| {
                let abort = abort.clone();
                async move {
                    let (parts, body) = attempt.request.into_parts();
                    let request = agent
                        .configure_request(http_request(parts, &body))
                        .timeout_global(Some(attempt.timeout))
                        .http_status_as_error(false)
                        .build();
                    match abort {
                        Some(abort) => AttemptScope::run(&abort, || agent.run(request)),
                        None => agent.run(request),
                    }
                }
            },
        ))
    }
}

fn http_request(parts: ureq::http::request::Parts, body: &[u8]) -> ureq::http::Request<&[u8]> {
    ureq::http::Request::from_parts(parts, body)
}
