//! A representation served with byte ranges, and faults at byte offsets of its body.
//!
//! Ranges follow RFC 9110 §14 for the one form a resuming client sends, `Range: bytes=N-`. A
//! range request without `If-Range`, or whose `If-Range` matches the current validator
//! (§13.1.5: an entity-tag by strong comparison, §8.8.3.2; an HTTP-date equal to
//! `Last-Modified`), gets `206 Partial Content` with `Content-Range: bytes N-(len-1)/len`
//! (§14.4), or `416 Range Not Satisfiable` with `Content-Range: bytes */len` when `N >= len`
//! (§15.5.17). Any other `Range` form, and an `If-Range` that does not match, get `200` and the
//! whole representation (§14.2).
//!
//! Faults are scripted per request: the first [`Fault`] applies to the first request a
//! [`Served`] answers, the second to the second, and requests past the list are served
//! cleanly. The representation can change from a given request on
//! ([`Served::new_version_from`]), so a resumed request meets a new validator.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use httpdate::HttpDate;

use super::conn::Conn;
use super::{reason, Recorded, State};

/// A selected representation (RFC 9110 §3.2): its bytes as sent, and its validators.
#[derive(Clone, PartialEq, Eq)]
pub struct Representation {
    body: Bytes,
    etag: Option<String>,
    last_modified: Option<HttpDate>,
    gzip: bool,
}

impl fmt::Debug for Representation {
    /// The body's length, not its bytes (a test's representation may be megabytes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Representation")
            .field("len", &self.body.len())
            .field("etag", &self.etag)
            .field("last_modified", &self.last_modified)
            .field("gzip", &self.gzip)
            .finish()
    }
}

impl Representation {
    /// A representation of `body`, without validators.
    #[must_use]
    pub fn new(body: impl Into<Bytes>) -> Self {
        Representation {
            body: body.into(),
            etag: None,
            last_modified: None,
            gzip: false,
        }
    }

    /// Sets a strong entity-tag: `ETag: "opaque"`.
    #[must_use]
    pub fn strong_etag(mut self, opaque: &str) -> Self {
        self.etag = Some(format!("\"{opaque}\""));
        self
    }

    /// Sets a weak entity-tag: `ETag: W/"opaque"`. It never matches an `If-Range`, which
    /// compares entity-tags strongly.
    #[must_use]
    pub fn weak_etag(mut self, opaque: &str) -> Self {
        self.etag = Some(format!("W/\"{opaque}\""));
        self
    }

    /// Sets `Last-Modified` (to the whole second, as an HTTP-date carries it).
    #[must_use]
    pub fn last_modified(mut self, at: SystemTime) -> Self {
        self.last_modified = Some(HttpDate::from(at));
        self
    }

    /// Encodes the bytes with gzip and labels them `Content-Encoding: gzip`. The encoded bytes
    /// are the representation (RFC 9110 §8.4): its length, its ranges and the faults' offsets
    /// count them.
    #[must_use]
    pub fn gzip(mut self) -> Self {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let encoded = encoder
            .write_all(&self.body)
            .and_then(|()| encoder.finish())
            .expect("gzip into a Vec cannot fail: writing to memory does not");
        self.body = encoded.into();
        self.gzip = true;
        self
    }

    /// The bytes as sent (gzip-encoded after [`Self::gzip`]).
    #[must_use]
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The `ETag` field value (`"abc"` or `W/"abc"`), if any.
    #[must_use]
    pub fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    /// Whether an `If-Range` field value names this representation (RFC 9110 §13.1.5).
    fn matches_if_range(&self, value: &[u8]) -> bool {
        let Ok(value) = std::str::from_utf8(value) else {
            return false;
        };
        let value = value.trim();
        if value.starts_with('"') || value.starts_with("W/") {
            // Strong comparison: neither tag weak, and the same characters.
            let strong = |tag: &str| !tag.starts_with("W/");
            return strong(value)
                && self
                    .etag
                    .as_deref()
                    .is_some_and(|e| strong(e) && e == value);
        }
        match (self.last_modified, value.parse::<HttpDate>()) {
            (Some(last_modified), Ok(date)) => last_modified == date,
            _ => false,
        }
    }
}

/// What a served response says in `Accept-Ranges` (RFC 9110 §14.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AcceptRanges {
    /// `Accept-Ranges: bytes`, and range requests are honoured.
    #[default]
    Bytes,
    /// `Accept-Ranges: none`, and range requests get `200` and the whole representation.
    None,
    /// No `Accept-Ranges` field; range requests are still honoured (a client may ask for a
    /// range without being told it can).
    Absent,
}

/// What goes wrong with one request's answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Nothing: the answer is sent whole and the connection kept.
    #[default]
    None,
    /// Send the head and the first `n` bytes of the body (all of it if shorter), then reset
    /// the connection (RST). Bytes still unsent when the RST goes are lost with it: on
    /// loopback a write of up to the client's receive window is already delivered.
    ResetAt(usize),
    /// Send the head and the first `n` bytes of the body, then close (FIN): the body ends
    /// short of its `Content-Length`.
    CloseAt(usize),
    /// Send the head and the first `n` bytes of the body, then nothing for the duration (less
    /// if the server is dropped first), then close.
    StallAt(usize, Duration),
    /// Answer a satisfiable range request `bytes=N-` with a `206` whose `Content-Range` (and
    /// body) start one byte early, at `N - 1` (one byte late for `N = 0`).
    WrongContentRange,
    /// Answer a range request with `200` and the whole representation, ignoring `Range` and
    /// `If-Range`.
    IgnoreRange,
    /// Answer `416` with `Content-Range: bytes */len`, whatever the request.
    Always416,
}

/// A throttled body: `chunk` bytes at a time, `gap` between chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Throttle {
    chunk: usize,
    gap: Duration,
}

/// A representation served with range support and scripted faults: the description behind
/// [`super::Action::Serve`].
///
/// ```
/// use std::io::Read;
/// use backstop_tests::server::{Action, Fault, Representation, Served, Server};
///
/// let served = Served::new(Representation::new(vec![7; 4096]).strong_etag("v1"))
///     .faults([Fault::ResetAt(1000)]);
/// let server = Server::always(Action::Serve(served));
///
/// // The first GET gets 1000 bytes of the body, then a reset.
/// let mut first = ureq::get(server.url("/file")).call()?;
/// let mut got = Vec::new();
/// assert!(first.body_mut().as_reader().read_to_end(&mut got).is_err());
/// assert_eq!(got.len(), 1000);
///
/// // Resumed from there, with the validator it came with: a 206 with the other 3096.
/// let mut rest = ureq::get(server.url("/file"))
///     .header("Range", "bytes=1000-")
///     .header("If-Range", "\"v1\"")
///     .call()?;
/// assert_eq!(rest.status(), 206);
/// assert_eq!(rest.headers()["content-range"], "bytes 1000-4095/4096");
/// assert_eq!(rest.body_mut().read_to_vec()?.len(), 3096);
///
/// let resumed = &server.recorded()[1];
/// assert_eq!(resumed.header("if-range"), Some(&b"\"v1\""[..]));
/// # Ok::<(), ureq::Error>(())
/// ```
///
/// Clones share the count of requests answered, so the fault script runs once across them.
#[derive(Clone, Debug)]
pub struct Served {
    /// The representation served until a later version takes over.
    first: Representation,
    /// Each later version, with the 0-based request it is served from, in that order.
    later: Vec<(usize, Representation)>,
    faults: Vec<Fault>,
    accept_ranges: AcceptRanges,
    date: Option<HttpDate>,
    headers: Vec<(String, Vec<u8>)>,
    throttle: Option<Throttle>,
    answered: Arc<AtomicUsize>,
}

impl PartialEq for Served {
    /// The same description, however many requests each has answered.
    fn eq(&self, other: &Self) -> bool {
        (
            &self.first,
            &self.later,
            &self.faults,
            self.accept_ranges,
            self.date,
            &self.headers,
            self.throttle,
        ) == (
            &other.first,
            &other.later,
            &other.faults,
            other.accept_ranges,
            other.date,
            &other.headers,
            other.throttle,
        )
    }
}

impl Eq for Served {}

impl Served {
    /// Serves `representation` with `200` (or `206`/`416` for a range), `Accept-Ranges: bytes`,
    /// no faults and no `Date`.
    #[must_use]
    pub fn new(representation: Representation) -> Self {
        Served {
            first: representation,
            later: Vec::new(),
            faults: Vec::new(),
            accept_ranges: AcceptRanges::Bytes,
            date: None,
            headers: Vec::new(),
            throttle: None,
            answered: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Scripts the faults: the first for the first request answered, and so on; requests past
    /// the script are served cleanly.
    #[must_use]
    pub fn faults(mut self, faults: impl IntoIterator<Item = Fault>) -> Self {
        self.faults = faults.into_iter().collect();
        self
    }

    /// Serves `representation` from the `request`-th request answered (counting from 1) on:
    /// the representation changed, and so did its validators.
    #[must_use]
    pub fn new_version_from(mut self, request: usize, representation: Representation) -> Self {
        self.later.push((request.saturating_sub(1), representation));
        self.later.sort_by_key(|(from, _)| *from);
        self
    }

    /// Sets what `Accept-Ranges` says, and so whether ranges are honoured.
    #[must_use]
    pub fn accept_ranges(mut self, accept_ranges: AcceptRanges) -> Self {
        self.accept_ranges = accept_ranges;
        self
    }

    /// Sends `Date: at` with every answer.
    #[must_use]
    pub fn date(mut self, at: SystemTime) -> Self {
        self.date = Some(HttpDate::from(at));
        self
    }

    /// Adds a header to every answer (any bytes as value).
    #[must_use]
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Sends each body `chunk` bytes at a time (at least one), waiting `gap` (real time)
    /// between chunks, so a client can read some bytes before the rest arrive.
    #[must_use]
    pub fn throttle(mut self, chunk: usize, gap: Duration) -> Self {
        self.throttle = Some(Throttle {
            chunk: chunk.max(1),
            gap,
        });
        self
    }

    /// Requests answered so far, by this description and its clones.
    #[must_use]
    pub fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }

    /// Answers `request` on `stream`; returns whether the connection is kept for the next.
    pub(super) fn respond(&self, request: &Recorded, stream: &mut Conn, state: &State) -> bool {
        let ordinal = self.answered.fetch_add(1, Ordering::SeqCst);
        let fault = self.faults.get(ordinal).copied().unwrap_or_default();
        let answer = self.answer(request, self.version(ordinal), fault);
        let sent = match fault {
            Fault::ResetAt(n) | Fault::CloseAt(n) | Fault::StallAt(n, _) => {
                n.min(answer.body.len())
            }
            _ => answer.body.len(),
        };
        if stream.write_all(&answer.head).is_err()
            || !self.send_body(&answer.body[..sent], stream, state)
        {
            return false;
        }
        match fault {
            Fault::ResetAt(_) => {
                // The caller's return drops the stream: the last close sends the RST.
                stream.reset_on_close();
                false
            }
            Fault::CloseAt(_) => {
                stream.shutdown();
                false
            }
            Fault::StallAt(_, stall) => {
                state.sleep(stall);
                stream.shutdown();
                false
            }
            _ => true,
        }
    }

    /// The representation current at the `ordinal`-th request (0-based).
    fn version(&self, ordinal: usize) -> &Representation {
        self.later
            .iter()
            .rev()
            .find(|(from, _)| *from <= ordinal)
            .map_or(&self.first, |(_, r)| r)
    }

    /// The answer `request` gets from `representation` under `fault`.
    fn answer(&self, request: &Recorded, representation: &Representation, fault: Fault) -> Answer {
        let full = &representation.body;
        let len = full.len();
        let (status, content_range, body) =
            match (fault, self.range(request, representation, fault)) {
                (Fault::Always416, _) => (416, format!("bytes */{len}"), Bytes::new()),
                (_, Some(start)) if start >= len => (416, format!("bytes */{len}"), Bytes::new()),
                (_, Some(start)) => {
                    let start = match fault {
                        Fault::WrongContentRange if start > 0 => start - 1,
                        Fault::WrongContentRange => 1.min(len - 1),
                        _ => start,
                    };
                    (
                        206,
                        format!("bytes {start}-{}/{len}", len - 1),
                        full.slice(start..),
                    )
                }
                (_, None) => (200, String::new(), full.clone()),
            };
        let head = self.head(status, &content_range, body.len(), representation);
        if request.method.eq_ignore_ascii_case("HEAD") {
            return Answer {
                head,
                body: Bytes::new(),
            };
        }
        Answer { head, body }
    }

    /// The start `N` of the `Range: bytes=N-` to honour, if any.
    fn range(
        &self,
        request: &Recorded,
        representation: &Representation,
        fault: Fault,
    ) -> Option<usize> {
        if fault == Fault::IgnoreRange || self.accept_ranges == AcceptRanges::None {
            return None;
        }
        let start = open_ended_start(request.header("range")?)?;
        match request.header("if-range") {
            Some(validator) if !representation.matches_if_range(validator) => None,
            _ => Some(start),
        }
    }

    /// The response head: status line, framing, range, validators, then the extra headers.
    /// A `416` carries no content, so no `Content-Encoding`.
    fn head(
        &self,
        status: u16,
        content_range: &str,
        content_length: usize,
        representation: &Representation,
    ) -> Vec<u8> {
        let mut fields = vec![("Content-Length", content_length.to_string())];
        if !content_range.is_empty() {
            fields.push(("Content-Range", content_range.to_owned()));
        }
        match self.accept_ranges {
            AcceptRanges::Bytes => fields.push(("Accept-Ranges", "bytes".to_owned())),
            AcceptRanges::None => fields.push(("Accept-Ranges", "none".to_owned())),
            AcceptRanges::Absent => {}
        }
        if let Some(etag) = &representation.etag {
            fields.push(("ETag", etag.clone()));
        }
        if let Some(last_modified) = representation.last_modified {
            fields.push(("Last-Modified", last_modified.to_string()));
        }
        if representation.gzip && status != 416 {
            fields.push(("Content-Encoding", "gzip".to_owned()));
        }
        if let Some(date) = self.date {
            fields.push(("Date", date.to_string()));
        }
        let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status)).into_bytes();
        let extra = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()));
        for (name, value) in fields.iter().map(|(n, v)| (*n, v.as_bytes())).chain(extra) {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    /// Writes `body`, throttled if asked; returns whether every byte was written.
    fn send_body(&self, body: &[u8], stream: &mut Conn, state: &State) -> bool {
        let Some(Throttle { chunk, gap }) = self.throttle else {
            return stream.write_all(body).is_ok();
        };
        for (i, bytes) in body.chunks(chunk).enumerate() {
            if (i > 0 && state.sleep(gap)) || stream.write_all(bytes).is_err() {
                return false;
            }
        }
        true
    }
}

/// One request's answer: the head, and the body bytes to send (a fault may cut them short).
struct Answer {
    head: Vec<u8>,
    body: Bytes,
}

/// `N` of `bytes=N-` (RFC 9110 §14.1.2; the unit is case-insensitive). Every other form
/// (a closed range, a suffix, several ranges, another unit) is `None`.
fn open_ended_start(range: &[u8]) -> Option<usize> {
    let range = std::str::from_utf8(range).ok()?.trim();
    let (unit, spec) = range.split_once('=')?;
    let digits = spec.trim().strip_suffix('-')?;
    if !unit.trim().eq_ignore_ascii_case("bytes")
        || digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests;
