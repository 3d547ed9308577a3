//! Reading a discarded response's body to its end, so that the client can reuse the
//! connection for the next attempt.
//!
//! Rule (RFC 9112 §9.3, persistent connections): a connection carries the next request only
//! once the previous response has been read in full. A retryable response (a 503, a 429) is
//! usually small: reading it costs a few microseconds, while closing the connection costs the
//! next attempt a new TCP and TLS handshake, and the server, which has just said it is
//! overloaded, one more connection. A large or slow body is not worth waiting for: it is
//! dropped and its connection closed, as a client does by default.

use core::future::poll_fn;
use core::pin::pin;
use core::time::Duration;

use bytes::Buf;
use http_body::Body;

/// How much of a discarded response's body the loop reads so that the client can reuse the
/// connection: at most [`max_bytes`](Self::max_bytes), within at most
/// [`max_time`](Self::max_time) (and never more than half the time left before the deadline,
/// nor past the end of the wait before the next attempt, during which it runs).
/// A body that is longer, announces a longer `Content-Length`, or is slower is dropped and its
/// connection closed. The returned response's body is never touched: it is the caller's.
///
/// Set on the [`Retrier`](crate::Retrier) with [`Retrier::drain`](crate::Retrier::drain).
///
/// ```
/// use std::time::Duration;
/// use backstop::transport::DrainLimits;
/// use backstop::Retrier;
///
/// let limits = DrainLimits::default();
/// assert_eq!((limits.max_bytes(), limits.max_time()), (64 * 1024, Duration::from_millis(250)));
/// // Larger error pages from a server far away:
/// let retrier = Retrier::default().drain(DrainLimits::new(1 << 20, Duration::from_secs(1)));
/// // Never drain: every retry opens a new connection.
/// let closing = Retrier::default().drain(DrainLimits::OFF);
/// # drop((retrier, closing));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrainLimits {
    max_bytes: u64,
    max_time: Duration,
}

impl DrainLimits {
    /// 64 KiB within 250 ms: an error page, not a download; about the time a new connection
    /// with a TLS handshake takes across a continent, so that waiting never costs more than
    /// what it saves.
    pub const DEFAULT: DrainLimits = DrainLimits {
        max_bytes: 64 * 1024,
        max_time: Duration::from_millis(250),
    };

    /// Never drain: a discarded response is dropped and its connection closed.
    pub const OFF: DrainLimits = DrainLimits {
        max_bytes: 0,
        max_time: Duration::ZERO,
    };

    /// At most `max_bytes` within at most `max_time`. Zero for either turns draining off.
    #[must_use]
    pub const fn new(max_bytes: u64, max_time: Duration) -> Self {
        DrainLimits {
            max_bytes,
            max_time,
        }
    }

    /// The most body bytes read.
    #[must_use]
    pub const fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The longest time spent reading.
    #[must_use]
    pub const fn max_time(&self) -> Duration {
        self.max_time
    }

    /// Whether these limits never drain anything.
    #[must_use]
    pub fn is_off(&self) -> bool {
        self.max_bytes == 0 || self.max_time.is_zero()
    }

    /// These limits with the time shortened to at most `time`.
    #[must_use]
    pub(crate) fn within(self, time: Duration) -> Self {
        DrainLimits {
            max_time: self.max_time.min(time),
            ..self
        }
    }
}

impl Default for DrainLimits {
    fn default() -> Self {
        DrainLimits::DEFAULT
    }
}

/// Reads `body` to its end unless it holds more than `limits.max_bytes()`; stops at the first
/// error. The drain function for any [`http_body::Body`] (hyper's `Incoming`, among others),
/// a [`Transport::drain`](crate::Transport::drain) can use; the loop bounds its time.
///
/// Returns whether the body was read to its end.
///
/// ```
/// use backstop::transport::{drain_body, DrainLimits};
/// use http_body_util::Full;
///
/// let short = Full::new(bytes::Bytes::from_static(b"busy"));
/// assert!(futures_lite::future::block_on(drain_body(short, DrainLimits::default())));
/// let long = Full::new(bytes::Bytes::from(vec![0_u8; 100]));
/// assert!(!futures_lite::future::block_on(drain_body(long, DrainLimits::new(99, std::time::Duration::from_secs(1)))));
/// ```
pub async fn drain_body<B: Body>(body: B, limits: DrainLimits) -> bool {
    let mut body = pin!(body);
    let mut read = 0_u64;
    // Bounded: each pass reads one frame, and the byte count ends the loop past the limit.
    loop {
        if body.is_end_stream() {
            return true;
        }
        match poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            None => return true,
            Some(Err(_)) => return false,
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let n = u64::try_from(data.remaining()).unwrap_or(u64::MAX);
                    read = read.saturating_add(n);
                    if read > limits.max_bytes {
                        return false;
                    }
                }
            }
        }
    }
}

/// Whether a response's `Content-Length` already says its body is over the limit.
pub(crate) fn announced_too_long(headers: &http::HeaderMap, limits: DrainLimits) -> bool {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > limits.max_bytes)
}
