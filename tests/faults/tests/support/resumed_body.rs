//! A resumable body read through backstop's front doors while the kernel faults its
//! connection: shared by the scenarios that cut a body mid-way and check it resumes.
//!
//! The server's first reply stands after [`BEFORE_THE_FAULT`] bytes of a [`TOTAL`]-byte
//! resumable body until the test has installed its fault ([`Server::release`]); the reply to
//! every resume is the same representation, unpaused.

use std::error::Error;
use std::time::Duration;

use backstop::body::BodyError;
use backstop::{ErrorKind, EventKind, Retrier};
use backstop_faults::{body, FaultNet, Progress, Reply, Server};
use backstop_tests::middleware::{block_on, default_tls};

/// The body's length.
pub const TOTAL: usize = 4 << 20;
/// The bytes the client has when the fault is installed.
pub const BEFORE_THE_FAULT: usize = 1 << 20;

/// The front doors whose bodies resume by themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontDoor {
    /// `backstop::reqwest::RetryMiddleware::resume_bodies`, over a reqwest client with this
    /// connect timeout.
    Reqwest {
        /// reqwest's own `connect_timeout`.
        connect_timeout: Duration,
    },
    /// `backstop::ureq::Client::resume_bodies` (its connects time out with the attempt).
    Ureq,
}

/// The body as the caller read it, and how it ended (the `BodyError`'s kind; `Other` for an
/// error without one).
#[derive(Debug)]
pub struct Read {
    pub status: u16,
    pub bytes: Vec<u8>,
    pub end: Result<(), ErrorKind>,
}

impl FrontDoor {
    /// Both front doors, reqwest's connects timing out after 300 ms.
    pub const ALL: [FrontDoor; 2] = [
        FrontDoor::Reqwest {
            connect_timeout: Duration::from_millis(300),
        },
        FrontDoor::Ureq,
    ];

    /// GETs `url` through this front door under `retrier` and reads the body to its end or
    /// its error, counting into `progress` as it goes. Bounded: the operation's attempts and
    /// its idle timeout bound every wait.
    pub fn get(self, retrier: Retrier, url: &str, progress: &Progress) -> Read {
        match self {
            FrontDoor::Reqwest { connect_timeout } => {
                reqwest_get(retrier, connect_timeout, url, progress)
            }
            FrontDoor::Ureq => ureq_get(retrier, url, progress),
        }
    }
}

fn reqwest_get(
    retrier: Retrier,
    connect_timeout: Duration,
    url: &str,
    progress: &Progress,
) -> Read {
    let http = default_tls()
        .reqwest(reqwest::Client::builder().connect_timeout(connect_timeout))
        .build()
        .expect("a reqwest client");
    let client = reqwest_middleware::ClientBuilder::new(http.clone())
        .with(backstop::reqwest::RetryMiddleware::new(retrier).resume_bodies(http))
        .build();
    block_on(async {
        let mut response = client.get(url).send().await.expect("a response");
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        let end = loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    bytes.extend_from_slice(&chunk);
                    progress.count(chunk.len());
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(kind_of(&e)),
            }
        };
        Read { status, bytes, end }
    })
}

fn ureq_get(retrier: Retrier, url: &str, progress: &Progress) -> Read {
    let client = backstop::ureq::Client::new(retrier).resume_bodies();
    let request = http::Request::get(url).body(()).expect("a request");
    let done = client.run(request).expect("a response");
    let status = done.response.status().as_u16();
    let read = progress.read_to_end(done.response.into_body().into_reader());
    Read {
        status,
        bytes: read.bytes,
        end: read.end.map_err(|e| kind_of(&e)),
    }
}

/// The kind of the `BodyError` in `e`'s chain (an `io::Error`'s inner error included).
fn kind_of(e: &(dyn Error + 'static)) -> ErrorKind {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(body) = e.downcast_ref::<BodyError>() {
            return body.kind();
        }
        let inner = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn Error + 'static));
        next = inner.or_else(|| e.source());
    }
    ErrorKind::Other
}

/// A server in `net`'s namespace: the first reply stands at [`BEFORE_THE_FAULT`], the
/// resumes' replies do not.
pub fn serve(net: &FaultNet) -> Server {
    let first = Reply::status(200)
        .body(body::pattern(TOTAL))
        .resumable()
        .pause_body_at(BEFORE_THE_FAULT);
    let resumes = Reply::status(200).body(body::pattern(TOTAL)).resumable();
    net.serve(|| Server::start_on(net.server_ip().into(), [first, resumes]))
        .expect("entered the namespace")
        .expect("bound in the namespace")
}

/// Whether `read` is the whole body, byte-exact.
pub fn is_whole(read: &Read) -> bool {
    read.bytes == body::pattern(TOTAL)
}

/// The `BodyResumed` events: attempt, offset and cause of each.
pub fn resumes(events: &[EventKind]) -> Vec<(u32, u64, ErrorKind)> {
    events
        .iter()
        .filter_map(|e| match *e {
            EventKind::BodyResumed {
                attempt,
                offset,
                cause,
                ..
            } => Some((attempt, offset, cause)),
            _ => None,
        })
        .collect()
}

/// The offset of request `i`'s `Range: bytes=N-`, and its `If-Range`.
pub fn range_of(server: &Server, i: usize) -> (Option<u64>, Option<String>) {
    let recorded = server.recorded();
    let request = recorded.get(i);
    let from = request
        .and_then(|r| r.field("range"))
        .and_then(|r| r.strip_prefix("bytes=")?.strip_suffix('-')?.parse().ok());
    let if_range = request.and_then(|r| r.field("if-range")).map(str::to_owned);
    (from, if_range)
}

/// The strong validator the server gives the body.
pub fn etag() -> String {
    body::strong_etag(&body::pattern(TOTAL))
}
