//! Which POST and PATCH requests are retried once they may have reached the server.
//!
//! Rule (RFC 9110 §9.2.2; IETF httpapi `Idempotency-Key` draft): a non-idempotent request may
//! have had its effect even when no answer came back, so sending it again is safe only when the
//! server deduplicates it. A caller attaches an `Idempotency-Key` only to an API that
//! deduplicates by it: the key is the caller's opt-in, and by default it is enough.

use crate::decision::StopReason;
use crate::method::Method;

/// Which requests with a non-idempotent method (POST, PATCH) are retried once they may have
/// reached the server (after a retryable status, a reset, a time-out). A failure before
/// sending (DNS, a refused connection) is retried for any method, whatever this says.
///
/// ```
/// use backstop_core::{Method, NonIdempotent, Policy};
///
/// let default = Policy::default();
/// assert_eq!(default.non_idempotent(), NonIdempotent::WithIdempotencyKey);
/// assert!(default.may_retry(Method::Post, true)); // the key is the opt-in
/// assert!(!default.may_retry(Method::Post, false));
///
/// let never = Policy::builder().non_idempotent(NonIdempotent::Never).build()?;
/// assert!(!never.may_retry(Method::Post, true));
/// # Ok::<(), backstop_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NonIdempotent {
    /// Never retried, key or not: the first response or error is final
    /// ([`StopReason::NotIdempotent`]).
    Never,
    /// Retried when the request carries an `Idempotency-Key` (the default): sending one is the
    /// caller's opt-in. Without one the first response or error is final, and the reason says
    /// so ([`StopReason::NoIdempotencyKey`]).
    #[default]
    WithIdempotencyKey,
    /// Retried with or without a key. Only for a server known to deduplicate these requests by
    /// other means (a request ID in the body, a natural key): anywhere else a retry may repeat
    /// the effect, a second order or a second payment.
    ServerDeduplicatesWithoutKey,
}

impl NonIdempotent {
    /// Every choice, for tests and tools that go through them all.
    pub const ALL: &'static [NonIdempotent] = &[
        NonIdempotent::Never,
        NonIdempotent::WithIdempotencyKey,
        NonIdempotent::ServerDeduplicatesWithoutKey,
    ];

    /// Why a request with `method` may not be sent again once it may have reached the server,
    /// under this choice and with the idempotent `listed` methods; `None` when it may.
    pub(crate) const fn refusal(
        self,
        method: Method,
        listed: bool,
        has_idempotency_key: bool,
    ) -> Option<StopReason> {
        if listed {
            return None;
        }
        if !method.needs_idempotency_key() {
            return Some(StopReason::NotIdempotent);
        }
        match self {
            NonIdempotent::Never => Some(StopReason::NotIdempotent),
            NonIdempotent::WithIdempotencyKey if !has_idempotency_key => {
                Some(StopReason::NoIdempotencyKey)
            }
            NonIdempotent::WithIdempotencyKey | NonIdempotent::ServerDeduplicatesWithoutKey => None,
        }
    }
}
