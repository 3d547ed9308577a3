//! Everything a [`Policy`] is made of: the types [`PolicyBuilder`]'s methods take.
//!
//! Rule: one policy says every bound of a retry (attempts, time, which methods and statuses,
//! waits, `Retry-After`), and `build()` checks them all, returning a [`ConfigError`], never a
//! panic. The common ones are also at this crate's root; hedging has its module,
//! [`hedging`](crate::hedging).

#[doc(inline)]
pub use backstop_core::{
    Backoff, ConfigError, Jitter, Method, MethodSet, NonIdempotent, Policy, PolicyBuilder,
    RetryAfterAboveMax, StatusSet, XRateLimitReset,
};
