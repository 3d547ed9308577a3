//! The response body inside the operation: read into memory within the attempt, bounded.
//!
//! Rule: one count, one budget and one deadline for the head and the body together. With
//! [`ReadBody`] in force (the retrier's, [`Retrier::read_body`](crate::Retrier::read_body), or
//! the request's own in its extensions), an attempt is not over when its response's head
//! arrives: the front door reads the whole body inside the attempt, under the attempt's
//! timeout, the deadline and the abort. A body that breaks off (a reset, an end short of its
//! `Content-Length`) is the attempt's failure, of kind
//! [`ErrorKind::BodyCut`](crate::ErrorKind::BodyCut): retried under the same rules as any
//! failure after the request was sent (a GET is, a POST only with its `Idempotency-Key`),
//! paid from the same budget, reported by the same events and spans. A body longer than the
//! limit is [`ErrorKind::BodyTooLarge`](crate::ErrorKind::BodyTooLarge): never truncated,
//! never retried (the same request reads the same body), and its [`BodyError`] keeps the
//! response's head. A stalled body is the attempt's time-out.
//!
//! | front door | where the read happens | the caller's body |
//! |---|---|---|
//! | reqwest | in the middleware, per attempt | a `reqwest::Response` over the bytes read (its `bytes()` costs no I/O) |
//! | ureq | in `Client::run`, per attempt | a `ureq::Body` over the bytes read, and the bytes themselves as [`BodyBytes`] in the response's extensions (no copy) |
//! | tower | `backstop::tower::ReadBodyLayer` under the retry layer (a service's body type is its own) | `http_body_util::Full<Bytes>` |
//!
//! Every body of the attempt is read, whatever its status: a `503`'s too (the read takes the
//! place of the drain before the next attempt).
//!
//! # The resumable streaming body
//!
//! Without buffering, a GET's body can resume by itself (`resume_bodies` on each front door:
//! `backstop::reqwest::RetryMiddleware::resume_bodies`, `backstop::ureq::Client::resume_bodies`,
//! `backstop::tower::RetryLayer::resume_bodies`). After a cut, an end short of the declared
//! length, or a stall past [`Policy::body_idle_timeout`](crate::Policy::body_idle_timeout),
//! the body sends `Range: bytes=N-` (N: the bytes handed to the caller) with `If-Range`
//! carrying the first response's strong validator, and goes on only with a `206` exactly at
//! N with the same complete length, validator and coding (RFC 9110 §14, §13.1.5). Each resume
//! is an attempt of the same operation: the same count (`max_attempts`), budget, gates,
//! limiter and abort, and none starts at or after the operation's deadline; each is reported
//! ([`EventKind::BodyResumed`](crate::EventKind::BodyResumed) with its offset, then its
//! `AttemptEnded`). The first resume after progress goes at once; one after no progress
//! waits the backoff. A `200` to the resume after bytes were handed over, a wrong range, or
//! another validator ends the body with [`ErrorKind::BodyChanged`](crate::ErrorKind::BodyChanged):
//! two representations are never spliced. No strong validator, no `Content-Length`, a weak
//! `ETag` or `Accept-Ranges: none`: the body is the client's, as without `resume_bodies`.
//! A GET without an `Accept-Encoding` of its own asks for `identity`, so that N counts the
//! bytes the server sent, not bytes a client decoded.
//!
//! | how the body ends | what the caller reads |
//! |---|---|
//! | whole, or resumed to its whole length | every byte once, in order |
//! | cut, and no attempt (or no time) left | the bytes so far, then a [`BodyError`]: `BodyCut` or `BodyStalled` |
//! | another representation on the resume | the bytes of the first, then `BodyChanged` |
//! | the abort | the bytes so far, then `Aborted`; nothing is sent after it |

mod error;
mod read;
#[cfg(any(feature = "reqwest", feature = "tower"))]
mod resume;
#[cfg(any(feature = "reqwest", feature = "tower", feature = "ureq"))]
mod resumer;

pub use error::BodyError;
#[cfg(any(feature = "ureq", feature = "reqwest", feature = "tower"))]
pub(crate) use read::declared_length;
#[cfg(any(feature = "reqwest", feature = "tower"))]
pub(crate) use read::read_bounded;
pub use read::{BodyBytes, ReadBody};
#[cfg(any(feature = "reqwest", feature = "tower"))]
pub(crate) use resume::{Refetch, Refetched, ResumableBody};
#[cfg(any(feature = "reqwest", feature = "tower", feature = "ureq"))]
pub(crate) use resumer::{resumption_of, Carried};
#[cfg(feature = "ureq")]
pub(crate) use resumer::{Resumer, Step};
