//! The response body, which gives its connection back to the pool once it has ended.
//!
//! Rule (RFC 9112 §9.3): a connection carries the next request only once this response has
//! been read in full. The body knows when: hyper's `Incoming` says it has ended (its last
//! frame read, or nothing to read: a `Content-Length: 0`, a `HEAD`'s, a 204's).

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;

use crate::smol::pool::Release;

/// The body of a response from [`HttpService`](crate::smol::HttpService): hyper's `Incoming`,
/// which gives its connection back to the service's pool once it has been read to its end
/// (or had nothing to read). Dropped before its end, it closes the connection.
pub struct Body {
    incoming: Incoming,
    /// The connection, until the body ends.
    lease: Option<Box<dyn Release>>,
}

impl Body {
    pub(crate) fn new(incoming: Incoming, lease: Box<dyn Release>) -> Self {
        Body {
            incoming,
            lease: Some(lease),
        }
    }

    /// Gives the connection back, once.
    fn release(&mut self) {
        if let Some(lease) = self.lease.take() {
            lease.release();
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.incoming).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.release(),
            Poll::Ready(Some(Ok(_))) if this.incoming.is_end_stream() => this.release(),
            // hyper closes a connection whose body failed.
            Poll::Ready(Some(Err(_))) => this.lease = None,
            Poll::Ready(Some(Ok(_))) | Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}

impl Drop for Body {
    /// A body that ended without being polled to its `None` (a reader that stops at
    /// `is_end_stream`, an empty body never read) still gives its connection back.
    fn drop(&mut self) {
        if self.incoming.is_end_stream() {
            self.release();
        }
    }
}

impl fmt::Debug for Body {
    // Never the content: it may be secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Body")
            .field("end_stream", &self.incoming.is_end_stream())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_and_the_service_can_cross_threads() {
        fn shared<T: Send + Sync + 'static>() {}
        shared::<Body>();
        shared::<crate::smol::HttpService>();
    }
}
