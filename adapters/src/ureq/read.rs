//! The bounded read on the calling thread: a response's whole body, inside its attempt.
//!
//! Rule: the read is part of the attempt. It ends by the attempt's end (the connection's
//! transport cuts every wait for input to it, as for a drain), the abort interrupts it, and
//! a body over the limit or cut short is a [`BodyError`] inside ureq's I/O error: the
//! attempt's failure, of the body's kind.

use std::io::{self, Read};
use std::time::Instant;

use crate::abort::Abort;
use crate::body::BodyError;
use ureq::http::Response;
use ureq::Body;

use crate::ureq::abort::interruptible;
use crate::ureq::drain::ReadBy;

/// `response` over its body read to its end, at most `limit` bytes, by `by` (the attempt's
/// end) and interrupted by `abort`; or why it could not be read.
pub(crate) fn read_bounded(
    response: Response<Body>,
    limit: u64,
    by: Option<Instant>,
    abort: Option<&Abort>,
) -> Result<Response<Body>, ureq::Error> {
    let (parts, mut body) = response.into_parts();
    // The length on the wire, which is the body's when ureq does not decode it.
    let declared = if parts.headers.contains_key(http::header::CONTENT_ENCODING) {
        None
    } else {
        crate::body::declared_length(&parts.headers)
    };
    let too_large = |received: u64, parts: http::response::Parts| {
        let e = BodyError::too_large(limit, received, parts.status, parts.headers);
        ureq::Error::Io(io::Error::other(e))
    };
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(0, parts));
    }
    let capacity = declared.map_or(0, |n| usize::try_from(n).unwrap_or(0));
    let mut bytes = Vec::with_capacity(capacity);
    let read = {
        let _by = ReadBy::set(by);
        interruptible(abort, || {
            // One byte over the limit tells a body at the limit from a longer one.
            let over = limit.saturating_add(1);
            let reader = body.with_config().limit(over).reader();
            reader.take(over).read_to_end(&mut bytes)
        })
    };
    let received = bytes.len() as u64;
    match read {
        Err(e) if is_timeout(&e) => return Err(ureq::Error::Io(e)),
        Err(e) => return Err(cut(received, Some(e))),
        Ok(_) if received > limit => return Err(too_large(received, parts)),
        Ok(_) if declared.is_some_and(|n| n != received) => return Err(cut(received, None)),
        Ok(_) => {}
    }
    let mut builder = Body::builder();
    if let Some(mime) = body.mime_type() {
        builder = builder.mime_type(mime);
    }
    if let Some(charset) = body.charset() {
        builder = builder.charset(charset);
    }
    Ok(Response::from_parts(parts, builder.data(bytes)))
}

/// The body broke off after `received` bytes.
fn cut(received: u64, source: Option<io::Error>) -> ureq::Error {
    let source = source.map(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>);
    ureq::Error::Io(io::Error::other(BodyError::cut(received, source)))
}

/// The read ran into the attempt's end: the attempt's time-out, not a body that broke off.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    ) || e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)))
}
