//! The ways of making one GET that the adapter-overhead measurements compare: bare ureq with no
//! timeouts and with the adapter's timeouts, and `backstop::ureq` with and without an
//! [`Abort`]. Used by the benchmark (`tests/benches/adapters.rs`) and by the instruction-count
//! probe (`tests/examples/callgrind_probe.rs`), so both measure exactly the same calls.

use backstop::Policy;
use backstop::{Abort, Retrier};

/// One way of making a GET.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Bare ureq, `agent.get(url).call()`, ureq's defaults (no timeouts at all).
    Bare,
    /// Bare ureq configured and called as the adapter's client does it for an attempt with the
    /// policy's timeout to an IP-address host: that timeout on connect, send and receive
    /// (request head, body, response head), statuses as responses, `Agent::run`.
    SameTimeouts,
    /// `backstop::ureq`, default policy.
    Adapter,
    /// `backstop::ureq` with an [`Abort`] handle on the request.
    AdapterWithAbort,
    /// `backstop::ureq` reading the body inside the attempt (`ReadBody::up_to(1 MiB)` on the
    /// request), then the caller's read of the bytes in memory.
    AdapterReadingBody,
    /// As [`Way::AdapterReadingBody`], the caller taking the bytes read
    /// ([`backstop::body::BodyBytes`]) instead of reading the body again.
    AdapterTakingBodyBytes,
    /// `backstop::ureq` with `resume_bodies`: the caller reads the resumable body.
    AdapterResumingBody,
}

impl Way {
    /// Every way, in a fixed order (index with `way as usize`).
    pub const ALL: [Way; 7] = [
        Way::Bare,
        Way::SameTimeouts,
        Way::Adapter,
        Way::AdapterWithAbort,
        Way::AdapterReadingBody,
        Way::AdapterTakingBodyBytes,
        Way::AdapterResumingBody,
    ];

    /// A short name for command lines and reports.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Way::Bare => "bare",
            Way::SameTimeouts => "same",
            Way::Adapter => "adapter",
            Way::AdapterWithAbort => "abort",
            Way::AdapterReadingBody => "read",
            Way::AdapterTakingBodyBytes => "bytes",
            Way::AdapterResumingBody => "resume",
        }
    }

    /// The way called `name`, if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Way> {
        Way::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// A client for every [`Way`], each with its own connection pool.
pub struct Getters {
    bare: ureq::Agent,
    same: ureq::Agent,
    client: backstop::ureq::Client,
    resuming: backstop::ureq::Client,
    abort: Abort,
}

impl Default for Getters {
    fn default() -> Self {
        Getters::new()
    }
}

impl Getters {
    /// New clients (new pools, no connections yet).
    #[must_use]
    pub fn new() -> Self {
        let t = Some(Policy::default().attempt_timeout());
        Getters {
            bare: ureq::Agent::new_with_defaults(),
            same: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(t)
                .timeout_send_request(t)
                .timeout_send_body(t)
                .timeout_recv_response(t)
                .build()
                .into(),
            client: backstop::ureq::Client::new(Retrier::default()),
            resuming: backstop::ureq::Client::new(Retrier::default()).resume_bodies(),
            abort: Abort::new(),
        }
    }

    /// One GET of `url` made `way`, with its whole body read (`Bytes` over the `Vec` read, no copy).
    ///
    /// # Errors
    ///
    /// The client's error, or a bad URL.
    pub fn get(&self, way: Way, url: &str) -> Result<bytes::Bytes, Box<dyn std::error::Error>> {
        Ok(bytes::Bytes::from(match way {
            Way::Bare => self.bare.get(url).call()?.body_mut().read_to_vec()?,
            Way::SameTimeouts => self
                .same
                .run(http::Request::get(url).body(())?)?
                .body_mut()
                .read_to_vec()?,
            Way::Adapter => self
                .client
                .run(http::Request::get(url).body(())?)?
                .response
                .body_mut()
                .read_to_vec()?,
            Way::AdapterWithAbort => self
                .client
                .run({
                    let mut request = http::Request::get(url).body(())?;
                    request.extensions_mut().insert(self.abort.clone());
                    request
                })?
                .response
                .body_mut()
                .read_to_vec()?,
            Way::AdapterReadingBody => self
                .client
                .run(reading(url)?)?
                .response
                .body_mut()
                .read_to_vec()?,
            Way::AdapterTakingBodyBytes => {
                let mut done = self.client.run(reading(url)?)?;
                let bytes = done
                    .response
                    .extensions_mut()
                    .remove::<backstop::body::BodyBytes>();
                return Ok(bytes.ok_or("the body was not read in the attempt")?.0);
            }
            // ureq's `read_to_vec` stops at 10 MB, as on the other ways.
            Way::AdapterResumingBody => self
                .resuming
                .run(http::Request::get(url).body(())?)?
                .response
                .body_mut()
                .read_to_vec()?,
        }))
    }
}

/// A GET of `url` whose body is read inside the attempt (`ReadBody::up_to(1 MiB)`).
fn reading(url: &str) -> Result<http::Request<()>, http::Error> {
    let mut request = http::Request::get(url).body(())?;
    request
        .extensions_mut()
        .insert(backstop::body::ReadBody::up_to(1 << 20));
    Ok(request)
}
