//! # backstop::ureq
//!
//! Blocking HTTP retries over [ureq 3](https://docs.rs/ureq): the backstop retry loop
//! (`backstop`) run on the calling thread, with ureq as the client.
//!
//! - **Timeouts**: ureq enforces each attempt's timeout (already bounded by the overall
//!   deadline) with its own settings, made from that timeout for every attempt: resolving a
//!   host name, connecting (TLS included), sending the request head, sending its body, and
//!   receiving the response head each get the attempt's timeout. ureq starts a phase's budget
//!   when the previous phase ends, so a peer that stalls in several phases in turn (a slow
//!   accept, then a slow answer) stretches an attempt by one timeout per phase it stalls in; a
//!   silent server, the usual case, stalls in one. No attempt starts after the deadline. Not
//!   `timeout_global`, which would also bound the response body, read by the caller after
//!   `run` returns: that is the caller's to bound. A host that is an IP address gets no
//!   resolve timeout: ureq then resolves it on the calling thread, where nothing can block,
//!   instead of on a new thread per request.
//! - **Abort**: [`Abort::abort`] from any thread interrupts the wait between attempts at once
//!   and the request in flight by shutting down that operation's sockets (ureq 3.5's per-
//!   connection shutdown handles); other operations on the same [`Client`] carry on. A TCP
//!   connect in progress is not interruptible (ureq's limit): it is bounded by the attempt
//!   timeout.
//! - **No hedging**: a ureq call blocks its thread until its answer, so copies in flight at
//!   once would take a thread each; under a policy with
//!   [`hedging`](crate::PolicyBuilder::hedging) this client retries, with the policy's retry
//!   settings, and the async front doors (the tower layer, the reqwest middleware) hedge.
//! - **Requests**: [`Client::run`] takes an `http::Request<B>` (ureq 3's own request type) whose
//!   body ureq can send and that clones: `()`, `&str`, `String`, `&[u8]`, `Vec<u8>`. An
//!   [`Abort`], an [`OperationName`] and a [`Policy`](crate::Policy) for this request alone go
//!   in its extensions.
//! - **Bodies**: the request body is replayed per attempt (cloned). Before the next attempt, a
//!   discarded response's body is read to its end when it is small and quick (the retrier's
//!   `DrainLimits`: 64 KiB within 250 ms by default), so that ureq's pool hands its connection
//!   to the next attempt (no new TCP or TLS handshake); a longer or slower one is dropped,
//!   closing its connection. The returned response's body is unread: it is the caller's.
//! - **HTTPS** (with the `rustls` feature): ureq's own rustls stack (on `ring`) with its
//!   default roots, Mozilla's. TLS is configured with ureq's own API: [`Client::with_tls`] takes
//!   a `ureq::tls::TlsConfig` (see [Trusting a private CA](#trusting-a-private-ca)), and
//!   [`Client::with_config`] a whole ureq configuration. A TLS failure (a rejected
//!   certificate, a failed handshake, no common protocol version) is `ErrorKind::Tls`:
//!   permanent, never retried, and [`HttpError`]'s text names the cause. An unknown host is
//!   `ErrorKind::Dns`, as on the other adapters.
//! - **Statuses**: every status comes back as a response (`http_status_as_error(false)` on
//!   every request), so the retry policy sees 429 and 503.
//!
//! ```
//! use backstop::ureq::{Client, Retrier};
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
//! let mut done = client.run(http::Request::get(url).body(())?)?;
//! assert_eq!(done.response.status(), 200);
//! assert_eq!(done.outcome.attempts, 2);
//! assert_eq!(done.response.body_mut().read_to_string()?, "ok");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Trusting a private CA
//!
//! ```
//! # #[cfg(feature = "rustls")] {
//! # // A private CA, a certificate it signs for 127.0.0.1, and one HTTPS answer on loopback.
//! # let ca_key = rcgen::KeyPair::generate()?;
//! # let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
//! # ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
//! # let ca_pem = ca.self_signed(&ca_key)?.pem();
//! # let key = rcgen::KeyPair::generate()?;
//! # let cert = rcgen::CertificateParams::new(["127.0.0.1".to_owned()])?
//! #     .signed_by(&key, &rcgen::Issuer::new(ca, ca_key))?;
//! # let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
//! # let server = rustls::ServerConfig::builder()
//! #     .with_no_client_auth()
//! #     .with_single_cert(vec![cert.der().clone()], key.into())?;
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("https://{}/", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     let (tcp, _) = listener.accept().unwrap();
//! #     let connection = rustls::ServerConnection::new(std::sync::Arc::new(server)).unwrap();
//! #     let mut tls = rustls::StreamOwned::new(connection, tcp);
//! #     let _ = std::io::Read::read(&mut tls, &mut [0; 4096]);
//! #     let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
//! #     let _ = std::io::Write::write_all(&mut tls, ok);
//! #     tls.conn.send_close_notify();
//! #     let _ = std::io::Write::flush(&mut tls);
//! # });
//! use backstop::ureq::{Client, Retrier};
//! use ureq::tls::{Certificate, RootCerts, TlsConfig};
//!
//! // ureq's own API: the private CA's PEM (here `ca_pem`, e.g. `std::fs::read("ca.pem")?`) as
//! // the roots. `RootCerts::PlatformVerifier` trusts the platform's instead (ureq's
//! // `platform-verifier` feature).
//! let ca = Certificate::from_pem(ca_pem.as_bytes())?;
//! let tls = TlsConfig::builder()
//!     .root_certs(RootCerts::new_with_certs(&[ca]))
//!     .build();
//!
//! let client = Client::with_tls(Retrier::default(), tls);
//! let done = client.run(http::Request::get(url).body(())?)?;
//! assert_eq!(done.response.status(), 200);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod abort;
mod classify;
mod drain;
mod read;
mod resolve;
mod resume;

pub use crate::runtime::{Runtime, StdRuntime, VirtualTime};
pub use crate::{
    http, Abort, Metrics, OperationName, Retried, Retrier, RetryError, RetryEvent, StatusError,
};
pub use classify::{error_kind, HttpError};

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::cell::RefCell;
use std::net::IpAddr;

use crate::body::ReadBody;
use crate::last_origin;
use crate::request::Attempt;
use crate::run::run;
use crate::transport::DrainLimits;
use crate::transport::Transport;
use backstop_core::ErrorKind;
use ureq::config::ConfigBuilder;
use ureq::http::{Request, Response};
use ureq::typestate::AgentScope;
use ureq::{Agent, AsSendBody, Body};

use crate::ureq::abort::{interruptible, AbortConnector};
use crate::ureq::resolve::MarkedResolver;

/// What [`Client::run`] returns.
pub type Result = core::result::Result<Retried<Body>, RetryError<HttpError>>;

/// A blocking retrying client: a ureq [`Agent`] (with its connection pool), a [`Retrier`] and
/// a [`Runtime`] (the real clock by default; [`VirtualTime`] in tests).
#[derive(Debug, Clone)]
pub struct Client<RT = StdRuntime> {
    agent: Agent,
    retrier: Retrier,
    runtime: RT,
    /// The attempt timeout the agent's configuration already applies to every phase but
    /// resolving, with `http_status_as_error(false)`: an attempt with that timeout to an
    /// IP-address host needs no configuration of its own.
    agent_timeout: Option<Duration>,
    /// A GET's body resumes by itself ([`Client::resume_bodies`]).
    resume: bool,
}

impl Client<StdRuntime> {
    /// A client with ureq's default configuration, plus the policy's attempt timeout on every
    /// phase of an exchange up to the response head (see [`classify`](crate::classify)).
    ///
    /// With the `rustls` feature it speaks `https://` too, through ureq's own
    /// rustls stack, trusting its default roots (Mozilla's); see [`Client::with_tls`] for a
    /// private CA.
    #[must_use]
    pub fn new(retrier: Retrier) -> Self {
        Client::timed(retrier, |config| config)
    }

    /// [`Client::new`] with ureq's TLS settings of the caller's, made with ureq's own API: the
    /// module docs trust a private CA with them.
    #[cfg(feature = "rustls")]
    #[must_use]
    pub fn with_tls(retrier: Retrier, tls: ureq::tls::TlsConfig) -> Self {
        Client::timed(retrier, |config| config.tls_config(tls))
    }

    /// A client whose agent applies the policy's attempt timeout to every phase up to the
    /// response head, with ureq's other settings as `configure` leaves them.
    fn timed(
        retrier: Retrier,
        configure: impl FnOnce(ConfigBuilder<AgentScope>) -> ConfigBuilder<AgentScope>,
    ) -> Self {
        let t = Some(retrier.policy().attempt_timeout());
        let config = configure(Agent::config_builder())
            .http_status_as_error(false)
            .timeout_connect(t)
            .timeout_send_request(t)
            .timeout_send_body(t)
            .timeout_recv_response(t)
            .build();
        Client {
            agent_timeout: t,
            ..Client::with_config(retrier, config)
        }
    }

    /// A client with a ureq configuration of the caller's. Each attempt overrides its
    /// timeouts up to the response head (with the attempt's) and its `http_status_as_error`
    /// (statuses are the retry policy's business).
    ///
    /// It takes a configuration, not a whole `ureq::Agent`: the agent is built with
    /// backstop's connector and resolver around ureq's own, which let an [`Abort`] shut the
    /// operation's sockets mid-request and tell a connect that timed out (never sent) from
    /// a read that did. An agent built elsewhere has neither.
    #[must_use]
    pub fn with_config(retrier: Retrier, config: ureq::config::Config) -> Self {
        Client {
            agent: Agent::with_parts(config, AbortConnector::default(), MarkedResolver::default()),
            retrier,
            runtime: StdRuntime::new(),
            agent_timeout: None,
            resume: false,
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
            resume: self.resume,
        }
    }

    /// Makes the body of every GET's `200` resume by itself after a failure (a reset, an end
    /// short of its `Content-Length`, a stall past the policy's
    /// [`body_idle_timeout`](crate::Policy::body_idle_timeout)), as RFC 9110 allows: each
    /// resume is an attempt of the same operation (the same count, budget, deadline, gates
    /// and abort) through this client, with `Range: bytes=N-` after the N bytes the caller has
    /// read and `If-Range` with the first response's strong validator, and it goes on only
    /// with a `206` exactly at N. Anything else ends the body with a
    /// [`BodyError`](crate::body::BodyError) inside the read's `io::Error`.
    ///
    /// Only a `200` with a strong `ETag` (or a `Last-Modified` RFC 9110 takes as strong), a
    /// `Content-Length` and no `Accept-Ranges: none` resumes. A GET without an
    /// `Accept-Encoding` of its own is sent with `Accept-Encoding: identity` (a body ureq
    /// decodes could not be resumed at the right offset); one with a `Range` of its own, or
    /// under [`ReadBody`], does not resume.
    ///
    /// ```
    /// use backstop::ureq::Client;
    /// use backstop::Retrier;
    ///
    /// let client = Client::new(Retrier::default()).resume_bodies();
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn resume_bodies(mut self) -> Self {
        self.resume = true;
        self
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

    /// Runs one operation on this thread until the policy is satisfied or it is aborted: each
    /// attempt sends a copy of `request` (its body cloned). An [`Abort`] in its extensions
    /// interrupts the operation, waits and request in flight alike.
    ///
    /// # Errors
    ///
    /// [`RetryError`] when the operation ends without a response: aborted, timed out, nothing
    /// sent (a paused origin turned it away), or the last attempt's ureq error. A final error status (the last 503, a 404) is `Ok`: look at
    /// the response's status and [`Retried::outcome`].
    pub fn run<B: AsSendBody + Clone>(&self, mut request: Request<B>) -> Result
    where
        RT: Clone + Send + Sync + 'static,
    {
        let abort = request.extensions().get::<Abort>().cloned();
        let target = Target::of(request.uri());
        let read = request.extensions().get::<ReadBody>().copied();
        let resumes = self.resume
            && request.method() == http::Method::GET
            && !request.headers().contains_key(http::header::RANGE)
            && read
                .unwrap_or(self.retrier.read_body_limit())
                .max_bytes()
                .is_none();
        let resumed = resumes.then(|| resume::head_of(&mut request));
        let exchanges = Exchanges {
            client: self,
            abort: abort.as_ref(),
            target,
            read: read.unwrap_or(self.retrier.read_body_limit()).max_bytes(),
        };
        let mut operation = pin!(run(&self.retrier, &self.runtime, request, exchanges));
        // The attempts block, so an operation that needs no wait between attempts (the usual
        // one) ends within its first poll: that poll needs no waker. One that waits goes on
        // under `block_on`, whose first poll hands every timer and listener its own waker.
        let result = match operation
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(result) => result,
            Poll::Pending => futures_lite::future::block_on(operation),
        };
        match (result, resumed) {
            (Ok(done), Some(head)) => {
                let abort = abort.clone();
                Ok(resume::resumable(
                    self,
                    head,
                    target.named_host,
                    abort,
                    done,
                ))
            }
            (result, _) => result,
        }
    }

    /// One blocking exchange up to the response head, within `timeout` per phase (ureq's own
    /// timeouts) and interrupted by `abort`. `named_host`: the request's host is a name, not an
    /// IP address.
    fn exchange<S: AsSendBody>(
        &self,
        request: Request<S>,
        timeout: Duration,
        named_host: bool,
        abort: Option<&Abort>,
    ) -> core::result::Result<Response<Body>, ureq::Error> {
        if self.agent_timeout == Some(timeout) && !named_host {
            // The agent's own timeouts are the attempt's: the request goes as it is.
            return interruptible(abort, || self.agent.run(request));
        }
        let t = Some(timeout);
        let request = self
            .agent
            .configure_request(request)
            .http_status_as_error(false)
            .timeout_resolve(t.filter(|_| named_host))
            .timeout_connect(t)
            .timeout_send_request(t)
            .timeout_send_body(t)
            .timeout_recv_response(t)
            .build();
        interruptible(abort, || self.agent.run(request))
    }
}

/// One operation's attempts through a [`Client`], interrupted by its abort.
struct Exchanges<'c, RT> {
    client: &'c Client<RT>,
    abort: Option<&'c Abort>,
    /// What the request's URI says about every attempt.
    target: Target,
    /// The limit of each response's body, when the attempt reads it.
    read: Option<u64>,
}

impl<RT: Runtime, B: AsSendBody> Transport<B> for Exchanges<'_, RT> {
    type Body = Body;
    type Error = HttpError;

    /// Blocking: the attempt completes within the loop's first poll of it.
    async fn send(
        &mut self,
        attempt: Attempt<B>,
    ) -> core::result::Result<Response<Body>, HttpError> {
        if self.target.unservable {
            let port = "the port is not a number from 0 to 65535".to_owned();
            return Err(HttpError::from(ureq::Error::BadUri(port)));
        }
        // The attempt ends by its timeout, its body's read included.
        let by = self
            .read
            .and_then(|_| std::time::Instant::now().checked_add(attempt.timeout));
        let response = self
            .client
            .exchange(
                attempt.request,
                attempt.timeout,
                self.target.named_host,
                self.abort,
            )
            .map_err(HttpError::from)?;
        match self.read {
            Some(limit) => {
                read::read_bounded(response, limit, by, self.abort).map_err(HttpError::from)
            }
            None => Ok(response),
        }
    }

    fn error_kind(&self, error: &HttpError) -> ErrorKind {
        error.kind()
    }

    /// Blocking too, bounded by the limits' time itself.
    async fn drain(&mut self, body: Body, limits: DrainLimits) {
        drain::drain(body, limits, self.abort);
    }
}

/// What an operation's URI says about its attempts, read once from its authority (a plain
/// `host:port` in one pass over its bytes; anything else the slow way, with `http`'s parsers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target {
    /// The host is a name, not an IP address: an attempt resolves it within its timeout.
    named_host: bool,
    /// `http::Uri` takes `host:99999`, which ureq would send to another port: refused at the
    /// first attempt, never sent.
    unservable: bool,
}

thread_local! {
    /// The thread's last authority and what it says ([`last_origin`]): a thread that talks
    /// to one origin reads its authority once.
    static LAST_TARGET: last_origin::Slot<Target> = const { RefCell::new(None) };
}

impl Target {
    /// What `uri` says: the thread's last answer when it names the same authority, else
    /// read (and kept for the next operation).
    fn of(uri: &ureq::http::Uri) -> Self {
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Target::read(uri);
        };
        last_origin::find_or_make(&LAST_TARGET, scheme, authority.as_str(), || {
            Target::read(uri)
        })
    }

    /// What `uri` says, read from its authority.
    fn read(uri: &ureq::http::Uri) -> Self {
        let Some(authority) = uri.authority() else {
            return Target::slow(uri);
        };
        // The host, read as an IPv4 address (`Ipv4Addr`'s rule: four decimal numbers up to
        // 255 between dots, without leading zeros) until it cannot be one: the dots so far,
        // the current number and its digits.
        let mut bytes = authority.as_str().as_bytes().iter();
        let (mut ipv4, mut dots, mut number, mut digits) = (true, 0_u32, 0_u32, 0_u32);
        let has_port = loop {
            match bytes.next() {
                None => break false,
                Some(b':') => break true,
                // Userinfo, an IPv6 literal, percent-encoding: the slow way.
                Some(b'@' | b'[' | b']' | b'%') => return Target::slow(uri),
                Some(&b) if ipv4 => {
                    if b.is_ascii_digit() {
                        // Not a leading zero, not above 255.
                        ipv4 = !(digits == 1 && number == 0);
                        number = number * 10 + u32::from(b - b'0');
                        digits += 1;
                        ipv4 &= number <= 255;
                    } else {
                        ipv4 = b == b'.' && digits > 0 && dots < 3;
                        dots += 1;
                        (number, digits) = (0, 0);
                    }
                }
                Some(_) => {}
            }
        };
        let named_host = !(ipv4 && dots == 3 && digits > 0);
        // The port: ASCII digits (none: the default port), else the slow way.
        let mut port = 0_u32;
        if has_port {
            for &b in bytes {
                if !b.is_ascii_digit() {
                    return Target::slow(uri);
                }
                port = (port * 10 + u32::from(b - b'0')).min(1 << 16);
            }
        }
        Target {
            named_host,
            unservable: port > u32::from(u16::MAX),
        }
    }

    /// The facts read with `http`'s parsers.
    fn slow(uri: &ureq::http::Uri) -> Self {
        Target {
            named_host: !uri.host().is_some_and(is_ip_address),
            unservable: crate::classify::port_out_of_range(uri),
        }
    }
}

/// Whether a URI's host is an IP address (an IPv6 one in brackets).
fn is_ip_address(host: &str) -> bool {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::Target;

    fn target(uri: &str) -> Target {
        Target::of(&uri.parse().expect("uri"))
    }

    #[test]
    fn ip_address_hosts_are_told_from_host_names() {
        for (uri, ip) in [
            ("http://127.0.0.1:8080/", true),
            ("http://127.0.0.1/", true),
            ("http://0.0.0.0:1/", true),
            ("http://255.255.255.255:1/", true),
            ("http://[::1]:8080/", true),
            ("https://[2001:db8::1]/", true),
            ("http://u:p@127.0.0.1:8080/", true),
            ("http://localhost/", false),
            ("http://127.0.0.1.nip.io/", false),
            ("http://1password.com/", false),
            ("http://256.0.0.1/", false),
            ("http://01.2.3.4/", false),
            ("http://1.2.3/", false),
            ("http://1.2.3.4.5/", false),
            ("http://1.2.3.4./", false),
        ] {
            assert_eq!(target(uri).named_host, !ip, "{uri}");
        }
    }

    #[test]
    fn the_one_pass_agrees_with_the_parsers() {
        // Hosts of one to five dotted numbers, each one of these.
        let numbers = [
            "", "0", "00", "01", "1", "9", "10", "99", "100", "199", "255", "256", "259", "999",
            "1000", "a",
        ];
        let mut hosts: Vec<String> = numbers.iter().map(|n| (*n).to_owned()).collect();
        let mut level = hosts.clone();
        for _ in 1..4 {
            level = level
                .iter()
                .flat_map(|h| numbers.iter().map(move |n| format!("{h}.{n}")))
                .collect();
            hosts.extend(level.iter().cloned());
        }
        hosts.extend(["1.1.1.1.1", "255.255.255.255.255", "1.1.1.1."].map(str::to_owned));
        let ports = ["", ":", ":65535", ":65536", ":0065535", ":123456"];
        for host in &hosts {
            for port in ports {
                let Ok(uri) = format!("http://{host}{port}/").parse::<ureq::http::Uri>() else {
                    continue;
                };
                assert_eq!(Target::read(&uri), Target::slow(&uri), "{uri}");
            }
        }
    }

    #[test]
    fn the_threads_last_answer_is_the_one_a_read_gives() {
        // Each twice in a row (the second from the thread's cache), then after another.
        let uris = [
            "http://127.0.0.1:8080/a",
            "http://u:p@127.0.0.1:8080/b",
            "https://127.0.0.1:8080/",
            "http://example.com:8080/",
            "http://example.com:65536/",
            "http://[::1]:8080/",
            "http://127.0.0.1:8080/a",
        ];
        for uri in uris.iter().chain(uris.iter().rev()) {
            let uri: ureq::http::Uri = uri.parse().expect("uri");
            for _ in 0..2 {
                assert_eq!(Target::of(&uri), Target::slow(&uri), "{uri}");
            }
        }
    }

    #[test]
    fn ports_out_of_range_are_unservable() {
        for (uri, bad) in [
            ("http://127.0.0.1:99999/", true),
            ("http://example.com:65536/", true),
            ("http://a:b@example.com:65536/", true),
            ("http://[::1]:70000/", true),
            ("http://127.0.0.1:65535/", false),
            ("http://example.com/", false),
            ("http://example.com:/", false),
            ("http://[::1]/", false),
        ] {
            assert_eq!(target(uri).unservable, bad, "{uri}");
        }
    }
}
