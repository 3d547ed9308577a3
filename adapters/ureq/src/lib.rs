//! # backstop-ureq
//!
//! Blocking HTTP retries over [ureq 3](https://docs.rs/ureq): the backstop retry loop
//! (`backstop-driver`) run on the calling thread, with ureq as the client.
//!
//! - **Timeouts**: each attempt's timeout (already bounded by the overall deadline) bounds
//!   the whole exchange up to the response head. A watchdog thread (one per client, started
//!   on first use) shuts the attempt's socket down when the timeout has passed, whatever phase
//!   it is in (sending the request or its body, waiting for the head), so a server that stalls
//!   in several phases in turn cannot stretch an attempt. What a shutdown cannot interrupt has
//!   ureq's own timeout: the TCP connect, and the resolution of a host name. Reads and writes
//!   get no socket timeout, which would cost ureq a `setsockopt` call for each (about 0.9 us
//!   per request on loopback); should the watchdog thread fail to start, ureq's per-phase
//!   timeouts are set instead. Not ureq's `timeout_global`, which would time reads and writes
//!   out the same costly way. The resolve timeout makes ureq resolve a host name on a new
//!   thread (about 40 us per request); a host that is an IP address is not resolved at all:
//!   the adapter's resolver takes the address from the URI (ureq's default resolver formats
//!   and parses it back). The response body, read by the caller after `run` returns, is not
//!   bounded by the attempt timeout.
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
mod resolve;
mod watchdog;

pub use backstop_driver::{
    Abort, Metrics, Retried, Retrier, RetryError, RetryEvent, RetryRequest, Runtime, StdRuntime,
    VirtualTime,
};
pub use classify::error_kind;

use backstop_driver::run;
use ureq::http::Method;
use ureq::{Agent, AsSendBody};

use std::sync::Arc;

use crate::abortable::{AbortConnector, AttemptScope};
use crate::watchdog::Watchdog;

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<ureq::Body>, RetryError<ureq::Error>>;

/// A blocking retrying client: a ureq [`Agent`] (with its connection pool), a [`Retrier`] and
/// a [`Runtime`] (the real clock by default; [`VirtualTime`] in tests).
#[derive(Debug, Clone)]
pub struct Client<RT = StdRuntime> {
    agent: Agent,
    retrier: Retrier,
    runtime: RT,
    /// The attempt timeout already set on the agent (as its resolve and connect timeouts),
    /// and `http_status_as_error(false)`: an attempt with that timeout needs no per-request
    /// config while the watchdog runs.
    agent_timeout: Option<core::time::Duration>,
    /// Stops an attempt whose phases together outlast its timeout.
    watchdog: Arc<Watchdog>,
}

impl Client<StdRuntime> {
    /// A client with ureq's default configuration, plus the policy's attempt timeout as the
    /// resolve and connect timeouts (a per-request configuration then only needs to be made
    /// for an attempt cut short by the deadline). The watchdog bounds the rest
    /// of the exchange: no socket timeout is set, which would cost ureq a `setsockopt` call
    /// per read and write (about 0.9 us per request on loopback, measured).
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        let t = retrier.policy().attempt_timeout();
        let config = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_resolve(Some(t))
            .timeout_connect(Some(t))
            .build();
        Client {
            agent_timeout: Some(t),
            ..Client::with_config(retrier, config)
        }
    }

    /// A client with a ureq configuration of the caller's (its `http_status_as_error` is
    /// overridden per request: statuses are the retry policy's business).
    #[must_use]
    pub fn with_config(retrier: Retrier, config: ureq::config::Config) -> Self {
        Client {
            agent: Agent::with_parts(
                config,
                AbortConnector::default(),
                resolve::Resolver::default(),
            ),
            retrier,
            runtime: StdRuntime::new(),
            agent_timeout: None,
            watchdog: Arc::default(),
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
            agent_timeout: self.agent_timeout,
            watchdog: self.watchdog,
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
        let agent_timeout = self.agent_timeout;
        let watchdog = &*self.watchdog;
        let operation = core::pin::pin!(run(
            &self.retrier,
            &self.runtime,
            request,
            error_kind,
            |attempt| {
                // Borrowed: the handle outlives the loop, no reference count per attempt.
                let abort = abort.as_ref();
                async move {
                    // The loop's clock reading plus the timeout: no second reading. A clock
                    // that is not the real one (virtual time) gives none: read it here.
                    let deadline = std::time::Instant::now().checked_add(attempt.timeout);
                    let (parts, body) = attempt.request.into_parts();
                    let timeouts = Timeouts {
                        attempt: attempt.timeout,
                        // The agent's configuration serves when it already holds this timeout.
                        agent_serves: agent_timeout == Some(attempt.timeout),
                    };
                    let bodiless = matches!(
                        parts.method,
                        Method::GET
                            | Method::HEAD
                            | Method::DELETE
                            | Method::OPTIONS
                            | Method::TRACE
                    );
                    if body.is_empty() && bodiless {
                        // No body and no `Content-Length: 0` for GET, HEAD, DELETE, ...
                        let request = ureq::http::Request::from_parts(parts, ());
                        send(agent, request, timeouts, deadline, abort, watchdog)
                    } else {
                        let request = ureq::http::Request::from_parts(parts, &body[..]);
                        send(agent, request, timeouts, deadline, abort, watchdog)
                    }
                }
            },
        ));
        block_on(operation)
    }
}

/// Runs the loop on this thread. On this blocking runtime every step completes within the
/// poll that starts it (the attempt blocks in ureq, a wait parks the thread inside its sleep),
/// so the whole operation usually completes in one poll, which needs no waker: the executor
/// (a parker and its waker) is set up only for an operation that did not.
fn block_on<T>(mut operation: core::pin::Pin<&mut impl core::future::Future<Output = T>>) -> T {
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    match operation.as_mut().poll(&mut cx) {
        core::task::Poll::Ready(output) => output,
        // Pending futures register the waker of every poll: the executor's replaces the noop.
        core::task::Poll::Pending => futures_lite::future::block_on(operation),
    }
}

/// An attempt's timeout, and what ureq must be told of it.
#[derive(Clone, Copy)]
struct Timeouts {
    attempt: core::time::Duration,
    /// The agent's configuration already applies `attempt`.
    agent_serves: bool,
}

/// One blocking exchange, up to the response head: stopped by `abort`, and by the watchdog
/// at `deadline` (the attempt's timeout after the loop's clock reading).
fn send<S: AsSendBody>(
    agent: &Agent,
    request: ureq::http::Request<S>,
    timeouts: Timeouts,
    deadline: Option<std::time::Instant>,
    abort: Option<&Abort>,
    watchdog: &Watchdog,
) -> core::result::Result<ureq::http::Response<ureq::Body>, ureq::Error> {
    let attempt = |watched: bool| {
        // Without the watchdog (its thread could not start, or the deadline is beyond
        // `Instant`'s range), the I/O phases need ureq's own timeouts.
        let request = if timeouts.agent_serves && watched {
            request
        } else {
            configure(agent, request, timeouts, !watched)
        };
        agent.run(request)
    };
    match AttemptScope::run(abort, watchdog, deadline, attempt) {
        (Err(_), true) => Err(ureq::Error::Timeout(ureq::Timeout::Global)),
        (result, _) => result,
    }
}

/// The attempt's timeouts as a per-request configuration: resolve and connect, which a socket
/// shutdown cannot interrupt; the send and receive phases too when no watchdog bounds them
/// (`io_phases`), else none (any of them would cost a `setsockopt` call per read and write).
///
/// Per phase, not `timeout_global`, which would bound reads and writes with socket timeouts.
/// The resolve timeout makes ureq resolve a host name on a new thread (about 40 us); a host
/// that is an IP address is not resolved at all (see `resolve`).
fn configure<S: AsSendBody>(
    agent: &Agent,
    request: ureq::http::Request<S>,
    timeouts: Timeouts,
    io_phases: bool,
) -> ureq::http::Request<S> {
    let t = Some(timeouts.attempt);
    let io = if io_phases { t } else { None };
    agent
        .configure_request(request)
        .timeout_resolve(t)
        .timeout_connect(t)
        .timeout_send_request(io)
        .timeout_send_body(io)
        .timeout_recv_response(io)
        .http_status_as_error(false)
        .build()
}

#[cfg(test)]
mod tests {
    use core::future::Future;
    use core::pin::{pin, Pin};
    use core::task::{Context, Poll, Waker};
    use std::sync::{Arc, Mutex};

    /// Pending until another thread completes it, waking the waker of the latest poll.
    #[derive(Default)]
    struct Later(Arc<Mutex<(bool, Option<Waker>)>>);

    impl Future for Later {
        type Output = u32;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            let mut state = self.0.lock().expect("lock");
            if state.0 {
                return Poll::Ready(7);
            }
            state.1 = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn an_operation_pending_after_its_first_poll_is_driven_to_the_end() {
        let later = Later::default();
        let shared = later.0.clone();
        let waker = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let mut state = shared.lock().expect("lock");
            state.0 = true;
            if let Some(w) = state.1.take() {
                w.wake();
            }
        });
        assert_eq!(super::block_on(pin!(later)), 7);
        waker.join().expect("waker thread");
    }

    #[test]
    fn a_ready_operation_completes_in_its_first_poll() {
        assert_eq!(super::block_on(pin!(async { 3 })), 3);
    }
}
