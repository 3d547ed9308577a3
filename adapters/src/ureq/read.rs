//! The bounded read on the calling thread: a response's whole body, inside its attempt.
//!
//! Rule: the read is part of the attempt. It ends by the attempt's end (the connection's
//! transport cuts every wait for input to it, as for a drain), the abort interrupts it, and
//! a body over the limit or cut short is a [`BodyError`] inside ureq's I/O error: the
//! attempt's failure, of the body's kind.

use std::io::{self, Read};
use std::time::Instant;

use crate::abort::Abort;
use crate::body::{BodyBytes, BodyError};
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
    let (mut parts, mut body) = response.into_parts();
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
    let mut bytes = Vec::new();
    let read = {
        let _by = ReadBy::set(by);
        interruptible(abort, || {
            // One byte over the limit tells a body at the limit from a longer one.
            let over = limit.saturating_add(1);
            let reader = body.with_config().limit(over).reader();
            read_all(reader.take(over), declared, &mut bytes)
        })
    };
    let received = bytes.len() as u64;
    match read {
        Err(e) if is_timeout(&e) => return Err(ureq::Error::Io(e)),
        Err(e) => return Err(cut(received, Some(e))),
        Ok(()) if received > limit => return Err(too_large(received, parts)),
        Ok(()) if declared.is_some_and(|n| n != received) => return Err(cut(received, None)),
        Ok(()) => {}
    }
    let mut builder = Body::builder();
    if let Some(mime) = body.mime_type() {
        builder = builder.mime_type(mime);
    }
    if let Some(charset) = body.charset() {
        builder = builder.charset(charset);
    }
    let bytes = bytes::Bytes::from(bytes);
    parts.extensions.insert(BodyBytes(bytes.clone()));
    Ok(Response::from_parts(
        parts,
        builder.reader(InMemory { bytes, at: 0 }),
    ))
}

/// Reads `reader` to its end into `bytes`: a buffer the size of the `declared` length, zeroed
/// once, then grown by doubling for a body longer than declared or of no declared length.
fn read_all(mut reader: impl Read, declared: Option<u64>, bytes: &mut Vec<u8>) -> io::Result<()> {
    let first = declared.map_or(0, |n| usize::try_from(n).unwrap_or(0));
    bytes.resize(first, 0);
    let mut filled = 0;
    let result = loop {
        if filled == bytes.len() {
            // Full: a short read tells the end from more to come without growing the buffer.
            let mut probe = [0u8; 32];
            match reader.read(&mut probe) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    let grown = (bytes.len().saturating_mul(2))
                        .max(filled + n)
                        .max(8 * 1024);
                    bytes.resize(grown, 0);
                    bytes[filled..filled + n].copy_from_slice(&probe[..n]);
                    filled += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
            continue;
        }
        match reader.read(&mut bytes[filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    bytes.truncate(filled);
    result
}

/// The body read, handed to the caller.
struct InMemory {
    bytes: bytes::Bytes,
    at: usize,
}

impl Read for InMemory {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        let mut n = rest.len().min(buf.len());
        // std's `read_to_end` (ureq's `read_to_vec`) doubles its read size after a read that
        // fills 8 KiB or more, and zeroes a read's whole buffer first: a fill one byte short
        // keeps the read at the end of the body, which zeroes a buffer for nothing, at 8 KiB.
        if n == buf.len() && n >= 8 * 1024 {
            n -= 1;
        }
        buf[..n].copy_from_slice(&rest[..n]);
        self.at += n;
        Ok(n)
    }
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
