//! One HTTP/1 connection: hyper's `SendRequest`, and whether hyper has written the whole of
//! the last request sent on it.
//!
//! Rule (RFC 9112 §9.3): a connection carries the next request only once the previous exchange
//! is over, its request written as well as its response read. A server may answer before it
//! has read a request's body (a 413 to a large upload, say) and keep the connection open;
//! hyper then goes on writing the body, and the connection is ready for another request only
//! once the server has read the rest, which may be never. hyper's `SendRequest` cannot tell
//! that connection from one whose connection task has only yet to notice that its exchange is
//! over (it says ready a moment after the response body ends), so the connection keeps track
//! itself: a request is written once hyper has dropped its body (it has taken every frame, or
//! given the request up) and then flushed the connection's I/O, which hyper flushes only once
//! its own write buffer is empty.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::io;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use futures_lite::{AsyncRead, AsyncWrite};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::client::conn::TrySendError;

/// An HTTP/1 connection: its sender, and how far hyper has got in writing the last request.
pub(crate) struct Connection<B> {
    sender: SendRequest<RequestBody<B>>,
    written: Arc<Written>,
}

impl<B> Connection<B> {
    /// The connection whose sender is `sender`, over the I/O that `written` was made with by
    /// [`Written::track`].
    pub(crate) fn new(sender: SendRequest<RequestBody<B>>, written: Arc<Written>) -> Self {
        Connection { sender, written }
    }

    /// Waits until hyper takes a request on this connection; an error once it has closed.
    pub(crate) async fn ready(&mut self) -> hyper::Result<()> {
        self.sender.ready().await
    }

    /// Whether hyper has closed this connection.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Whether hyper has written the whole of the last request sent on this connection.
    pub(crate) fn is_written(&self) -> bool {
        self.written.is_written()
    }
}

impl<B: Body + 'static> Connection<B> {
    /// Sends `request` once hyper takes it: the response head, or hyper's error, with the
    /// request if hyper gives it back unsent.
    pub(crate) fn send(
        &mut self,
        mut request: http::Request<RequestBody<B>>,
    ) -> impl Future<Output = Result<http::Response<Incoming>, Unsent<B>>> {
        // A body given back unsent by another connection tells this one from now on.
        request.body_mut().taken = Some(Taken(self.written.clone()));
        self.written.sending();
        self.sender.try_send_request(request)
    }
}

/// hyper's error for a request it did not answer, with the request if it was not sent.
pub(crate) type Unsent<B> = TrySendError<http::Request<RequestBody<B>>>;

/// How far hyper has got in writing the last request sent on one connection.
pub(crate) struct Written(AtomicU8);

/// The request is with hyper, which may still be taking its body's frames.
const SENDING: u8 = 0;
/// hyper has dropped the body; some of it may still be in hyper's write buffer.
const BODY_TAKEN: u8 = 1;
/// hyper has flushed the connection since: the whole request has been written.
const WRITTEN: u8 = 2;

impl Written {
    /// `io`, made to tell the returned `Written` when hyper flushes it, for the [`Connection`]
    /// to be made over it.
    pub(crate) fn track<IO>(io: IO) -> (TrackedIo<IO>, Arc<Written>) {
        // Nothing sent yet: nothing left to write.
        let written = Arc::new(Written(AtomicU8::new(WRITTEN)));
        let io = TrackedIo {
            io,
            written: written.clone(),
        };
        (io, written)
    }

    fn sending(&self) {
        self.0.store(SENDING, Ordering::SeqCst);
    }

    fn is_written(&self) -> bool {
        self.0.load(Ordering::SeqCst) == WRITTEN
    }

    /// Moves from `from` to the next step; any other step stays.
    fn advance(&self, from: u8) {
        let _ = self
            .0
            .compare_exchange(from, from + 1, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// A request's body as hyper takes it: hyper dropping it tells the connection that the body
/// has been taken. Boxed, to be pinned without unsafe code: one allocation per request.
pub(crate) struct RequestBody<B> {
    body: Pin<Box<B>>,
    /// The connection the request was last sent on.
    taken: Option<Taken>,
}

impl<B> RequestBody<B> {
    pub(crate) fn new(body: B) -> Self {
        RequestBody {
            body: Box::pin(body),
            taken: None,
        }
    }
}

impl<B: Body> Body for RequestBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.get_mut().body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Dropped with the request body it is part of.
struct Taken(Arc<Written>);

impl Drop for Taken {
    fn drop(&mut self) {
        self.0.advance(SENDING);
    }
}

/// A connection's I/O, which tells its [`Written`] when hyper has flushed it.
pub(crate) struct TrackedIo<IO> {
    io: IO,
    written: Arc<Written>,
}

impl<IO: AsyncRead + Unpin> AsyncRead for TrackedIo<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }

    fn poll_read_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_read_vectored(cx, bufs)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for TrackedIo<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    /// hyper calls this only with its write buffer empty: all it has taken is written.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.io).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            this.written.advance(BODY_TAKEN);
        }
        flushed
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use bytes::Bytes;
    use futures_lite::io::{AsyncWriteExt, Cursor};
    use http_body_util::Full;

    #[test]
    fn a_request_is_written_once_its_body_is_dropped_and_then_the_io_flushed() {
        let (mut io, written) = Written::track(Cursor::new(Vec::new()));
        assert!(written.is_written(), "nothing sent, nothing to write");
        // What `Connection::send` does before hyper takes the request.
        let mut body = RequestBody::new(Full::new(Bytes::from_static(b"upload")));
        body.taken = Some(Taken(written.clone()));
        written.sending();
        futures_lite::future::block_on(async {
            io.flush().await.expect("a flush");
            assert!(!written.is_written(), "a flush while hyper holds the body");
            drop(body);
            assert!(
                !written.is_written(),
                "the body's last frame may be buffered"
            );
            io.flush().await.expect("a flush");
        });
        assert!(written.is_written());
    }
}
