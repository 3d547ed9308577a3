//! A request body made afresh for each attempt, for a body that cannot be cloned.
//!
//! Rule: a request is repeated only as it was first sent. Every front door replays a body by
//! cloning it; a stream cannot be cloned, but a factory can make the same stream again.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use http_body::{Body, Frame, SizeHint};

type Factory<B> = Arc<dyn Fn() -> B + Send + Sync>;

/// A body that cloning makes afresh: its `Clone` calls the factory, so [`run`](crate::run)
/// and the tower layer send a new, identical body on every attempt of a request whose body
/// type cannot be cloned (a boxed stream, a file read anew). The factory is called once by
/// [`new`](Self::new) and once per attempt; it must make the same bytes each time.
///
/// ```
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Full};
/// use backstop::ReplayBody;
///
/// // A boxed body is not `Clone`; behind the factory it is.
/// let body = ReplayBody::new(|| Full::new(Bytes::from_static(b"{\"sku\":42}")).boxed());
/// let again = body.clone();
/// # futures_lite::future::block_on(async {
/// assert_eq!(&again.collect().await.unwrap().to_bytes()[..], b"{\"sku\":42}");
/// # });
/// ```
pub struct ReplayBody<B> {
    make: Factory<B>,
    body: B,
}

impl<B> ReplayBody<B> {
    /// A body made by `make` now, and again by each clone.
    pub fn new(make: impl Fn() -> B + Send + Sync + 'static) -> Self {
        let body = make();
        ReplayBody {
            make: Arc::new(make),
            body,
        }
    }
}

impl<B> Clone for ReplayBody<B> {
    /// A new body from the factory (not a copy of this one, which may be half read).
    fn clone(&self) -> Self {
        ReplayBody {
            make: self.make.clone(),
            body: (self.make)(),
        }
    }
}

impl<B> fmt::Debug for ReplayBody<B> {
    // Never the body itself: it may be secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayBody").finish_non_exhaustive()
    }
}

impl<B: Body + Unpin> Body for ReplayBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
