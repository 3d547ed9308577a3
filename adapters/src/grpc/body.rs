//! The request body, buffered for replay up to a per-call limit.
//!
//! Rule (gRFC A6 "Memory Management (Buffering)"): a call is retried only while its request
//! messages are buffered; a call whose messages exceed the per-RPC buffer limit (grpc-java's
//! default, 1 MiB) is committed and never retried. The buffer takes the messages the body has
//! ready when the call starts: a unary request, or a client stream made ahead (an iterator).
//! A body that is still being produced (a stream fed while the call runs, as a bidirectional
//! call's often is) is not waited for, which could deadlock a client that waits for the
//! server's answer before sending more: it is sent once, as is, and never retried.

use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};

/// grpc-java's per-RPC buffer limit (`perRpcBufferLimit`): 1 MiB.
pub const DEFAULT_PER_RPC_BUFFER_LIMIT: usize = 1 << 20;

/// A request body each attempt can take: the buffered messages (cloned for each attempt), or
/// the body as it came, for its one attempt.
#[derive(Clone)]
pub(crate) enum AttemptBody {
    /// Every message of the call, buffered.
    Buffered(Bytes),
    /// The part read before the buffer gave up, and the rest as it comes: taken by the first
    /// attempt (the call is never retried, so no other comes).
    Once(Arc<Mutex<Option<Unbuffered>>>),
}

impl AttemptBody {
    /// The body for one attempt, as tonic's channel takes it.
    pub(crate) fn into_tonic(self) -> tonic::body::Body {
        match self {
            AttemptBody::Buffered(bytes) => {
                tonic::body::Body::new(http_body_util::Full::new(bytes))
            }
            AttemptBody::Once(cell) => {
                let taken = cell.lock().ok().and_then(|mut c| c.take());
                match taken {
                    Some(unbuffered) => tonic::body::Body::new(unbuffered),
                    None => tonic::body::Body::empty(),
                }
            }
        }
    }
}

/// Why a body was not buffered whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotBuffered {
    /// Its messages exceed the per-call limit.
    OverLimit,
    /// It was still being produced when the call started.
    Streaming,
}

/// Reads `body` into a buffer while it has data ready, up to `limit` bytes: the whole body
/// (replayable), or what was read and the rest (sent once), with why. Never waits: a body
/// with nothing ready is polled with a waker that does nothing (the attempt that sends it
/// polls it again with its own).
pub(crate) fn buffer(
    mut body: tonic::body::Body,
    limit: usize,
) -> (AttemptBody, Option<NotBuffered>) {
    let mut read = Read::default();
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let polled = Pin::new(&mut body).poll_frame(&mut cx);
        let frame = match polled {
            Poll::Ready(None) => return (AttemptBody::Buffered(read.freeze()), None),
            Poll::Pending => return read.unbuffered(None, body, NotBuffered::Streaming),
            Poll::Ready(Some(Err(status))) => {
                // Its attempt sends the error on, as the body would have.
                return read.unbuffered(Some(Err(status)), body, NotBuffered::Streaming);
            }
            Poll::Ready(Some(Ok(frame))) => frame,
        };
        match frame.into_data() {
            Ok(data) if read.len() + data.len() <= limit => read.push(data),
            Ok(data) => {
                return read.unbuffered(Some(Ok(Frame::data(data))), body, NotBuffered::OverLimit);
            }
            // A request's trailers (gRPC sends none): not buffered, sent as they came.
            Err(frame) => return read.unbuffered(Some(Ok(frame)), body, NotBuffered::Streaming),
        }
    }
}

/// The data read so far: one chunk as it came (the usual unary request, no copy), or several
/// joined.
#[derive(Default)]
struct Read {
    first: Option<Bytes>,
    joined: Option<BytesMut>,
}

impl Read {
    fn len(&self) -> usize {
        match (&self.first, &self.joined) {
            (_, Some(j)) => j.len(),
            (Some(f), None) => f.len(),
            (None, None) => 0,
        }
    }

    fn push(&mut self, data: Bytes) {
        if let Some(joined) = &mut self.joined {
            joined.extend_from_slice(&data);
        } else if let Some(first) = self.first.take() {
            let mut joined = BytesMut::with_capacity(first.len() + data.len());
            joined.extend_from_slice(&first);
            joined.extend_from_slice(&data);
            self.joined = Some(joined);
        } else {
            self.first = Some(data);
        }
    }

    fn freeze(self) -> Bytes {
        match (self.first, self.joined) {
            (_, Some(j)) => j.freeze(),
            (Some(f), None) => f,
            (None, None) => Bytes::new(),
        }
    }

    fn unbuffered(
        self,
        next: Option<Result<Frame<Bytes>, tonic::Status>>,
        rest: tonic::body::Body,
        why: NotBuffered,
    ) -> (AttemptBody, Option<NotBuffered>) {
        let read = self.freeze();
        let unbuffered = Unbuffered {
            read: (!read.is_empty()).then_some(read),
            next,
            rest,
        };
        (
            AttemptBody::Once(Arc::new(Mutex::new(Some(unbuffered)))),
            Some(why),
        )
    }
}

/// A body sent once: what was read, the frame (or error) the buffer stopped at, then the rest.
pub(crate) struct Unbuffered {
    read: Option<Bytes>,
    next: Option<Result<Frame<Bytes>, tonic::Status>>,
    rest: tonic::body::Body,
}

impl Body for Unbuffered {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        if let Some(read) = self.read.take() {
            return Poll::Ready(Some(Ok(Frame::data(read))));
        }
        if let Some(next) = self.next.take() {
            return Poll::Ready(Some(next));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn block_on<F: core::future::Future>(f: F) -> F::Output {
        futures_lite::future::block_on(f)
    }

    #[test]
    fn a_ready_body_within_the_limit_is_buffered_whole() {
        let body = tonic::body::Body::new(http_body_util::Full::new(Bytes::from_static(b"hello")));
        let (buffered, why) = buffer(body, 5);
        assert_eq!(why, None);
        let again = block_on(buffered.clone().into_tonic().collect());
        assert_eq!(
            again.ok().map(|c| c.to_bytes()),
            Some(Bytes::from_static(b"hello"))
        );
        let twice = block_on(buffered.into_tonic().collect());
        assert_eq!(
            twice.ok().map(|c| c.to_bytes()),
            Some(Bytes::from_static(b"hello"))
        );
    }

    #[test]
    fn a_body_over_the_limit_is_sent_whole_once() {
        let body = tonic::body::Body::new(http_body_util::Full::new(Bytes::from_static(b"hello")));
        let (once, why) = buffer(body, 4);
        assert_eq!(why, Some(NotBuffered::OverLimit));
        let sent = block_on(once.clone().into_tonic().collect());
        assert_eq!(
            sent.ok().map(|c| c.to_bytes()),
            Some(Bytes::from_static(b"hello"))
        );
        // A second attempt has nothing to send: the call is never retried.
        let second = block_on(once.into_tonic().collect());
        assert_eq!(second.ok().map(|c| c.to_bytes()), Some(Bytes::new()));
    }
}
