//! The bounded read: a response's whole body, read into memory inside its attempt.

#[cfg(any(feature = "reqwest", feature = "tower"))]
use bytes::{Buf, Bytes, BytesMut};

#[cfg(any(feature = "reqwest", feature = "tower"))]
use crate::body::BodyError;

/// Whether and how far a response's body is read into memory inside its attempt (see the
/// [module docs](crate::body)): [`Retrier::read_body`](crate::Retrier::read_body) for every
/// request of a retrier, or in a request's extensions for that request alone (which wins over
/// the retrier's, [`ReadBody::OFF`] included).
///
/// ```
/// use backstop::body::ReadBody;
/// use backstop::Retrier;
///
/// // Every response's body in memory, at most 64 KiB, before the operation ends.
/// let retrier = Retrier::default().read_body(ReadBody::up_to(64 * 1024));
/// assert_eq!(retrier.read_body_limit(), ReadBody::up_to(65_536));
///
/// // One request that streams its body anyway.
/// let mut request = http::Request::get("http://127.0.0.1:1/large").body(())?;
/// request.extensions_mut().insert(ReadBody::OFF);
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadBody(Option<u64>);

impl ReadBody {
    /// Bodies are not read by the operation: the caller reads the body, outside it (the
    /// default).
    pub const OFF: ReadBody = ReadBody(None);

    /// Every body is read inside its attempt, at most `max_bytes` of it; a longer one is
    /// [`ErrorKind::BodyTooLarge`](crate::ErrorKind::BodyTooLarge).
    #[must_use]
    pub const fn up_to(max_bytes: u64) -> Self {
        ReadBody(Some(max_bytes))
    }

    /// The limit, when bodies are read.
    #[must_use]
    pub const fn max_bytes(self) -> Option<u64> {
        self.0
    }
}

/// The body a front door read inside the attempt, in the response's extensions: the bytes
/// themselves, for a caller who wants them without reading the response's body again.
///
/// The ureq front door puts it there (its `ureq::Body` cannot hand its bytes back): taking it
/// costs no copy, and the body reads the same bytes (they are shared, not duplicated). The
/// other front doors' bodies are in memory already (reqwest's `bytes()`, tower's
/// `Full<Bytes>`), so they do not add it.
///
/// ```no_run
/// # #[cfg(feature = "ureq")] {
/// use backstop::body::{BodyBytes, ReadBody};
/// use backstop::Retrier;
///
/// let client = backstop::ureq::Client::new(Retrier::default().read_body(ReadBody::up_to(1 << 20)));
/// let mut done = client.run(http::Request::get("http://127.0.0.1:8080/").body(())?)?;
/// let body = done.response.extensions_mut().remove::<BodyBytes>().expect("read in the attempt");
/// println!("{} bytes", body.0.len());
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyBytes(pub bytes::Bytes);

/// Reads `response`'s body to its end, at most `limit` bytes: the response over the bytes
/// read, or why they could not be (a `Content-Length` over the limit is refused before any
/// byte is read; a body that ends short of its `Content-Length` without an error is cut).
#[cfg(any(feature = "reqwest", feature = "tower"))]
pub(crate) async fn read_bounded<B>(
    response: http::Response<B>,
    limit: u64,
) -> Result<http::Response<Bytes>, BodyError>
where
    B: http_body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use http_body_util::BodyExt;

    let declared = declared_length(response.headers());
    if declared.is_some_and(|n| n > limit) {
        let (head, _) = response.into_parts();
        return Err(BodyError::too_large(limit, 0, head.status, head.headers));
    }
    let (head, body) = response.into_parts();
    let mut body = core::pin::pin!(body);
    let mut read = Gathered::with_capacity(declared);
    // Bounded by the body: each pass takes one frame; the loop's timer and abort end it early.
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::cut(read.len(), Some(e.into())))?;
        let Ok(mut data) = frame.into_data() else {
            continue; // trailers: not part of the content
        };
        let chunk = data.copy_to_bytes(data.remaining());
        if read.len().saturating_add(chunk.len() as u64) > limit {
            let received = read.len().saturating_add(chunk.len() as u64);
            return Err(BodyError::too_large(
                limit,
                received,
                head.status,
                head.headers,
            ));
        }
        read.push(chunk);
    }
    if declared.is_some_and(|n| n != read.len()) {
        return Err(BodyError::cut(read.len(), None));
    }
    Ok(http::Response::from_parts(head, read.into_bytes()))
}

/// The body's `Content-Length`, when it has one valid value.
#[cfg(any(feature = "ureq", feature = "reqwest", feature = "tower"))]
pub(crate) fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    let mut values = headers.get_all(http::header::CONTENT_LENGTH).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()?.trim().parse().ok()
}

#[cfg(any(feature = "reqwest", feature = "tower"))]
/// The chunks read so far: the first kept as it is (a body in one chunk is never copied),
/// later ones gathered into one buffer.
struct Gathered {
    first: Bytes,
    rest: Option<BytesMut>,
    capacity: usize,
}

#[cfg(any(feature = "reqwest", feature = "tower"))]
impl Gathered {
    fn with_capacity(declared: Option<u64>) -> Self {
        Gathered {
            first: Bytes::new(),
            rest: None,
            capacity: declared.map_or(0, |n| usize::try_from(n).unwrap_or(0)),
        }
    }

    fn len(&self) -> u64 {
        let rest = self.rest.as_ref().map_or(0, BytesMut::len);
        (self.first.len() + rest) as u64
    }

    fn push(&mut self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        match &mut self.rest {
            Some(rest) => rest.extend_from_slice(&chunk),
            None if self.first.is_empty() => self.first = chunk,
            None => {
                let mut rest =
                    BytesMut::with_capacity(self.capacity.max(self.first.len() + chunk.len()));
                rest.extend_from_slice(&self.first);
                rest.extend_from_slice(&chunk);
                self.first = Bytes::new();
                self.rest = Some(rest);
            }
        }
    }

    fn into_bytes(self) -> Bytes {
        match self.rest {
            Some(rest) => rest.freeze(),
            None => self.first,
        }
    }
}
