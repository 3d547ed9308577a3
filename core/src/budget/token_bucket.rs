//! gRPC-style retry throttling: a token bucket that switches retries off while most attempts
//! fail.
//!
//! Rule (gRFC A6 "Retry throttling"): the bucket starts full at `max_tokens`; every failed
//! attempt takes 1 token, every successful one adds `token_ratio`; a retry is allowed only
//! while the bucket holds more than `max_tokens / 2`. Tokens never leave `[0, max_tokens]`.
//!
//! A failure is a retryable status or a transient error; a success, a 2xx or 3xx answer. A
//! final answer that is neither (a 404, a 501 the policy does not retry) leaves the tokens
//! as they are, as in grpc-java, where a status not in `retryableStatusCodes`
//! changes nothing and only `OK` adds `token_ratio`.
//! Tokens are counted in thousandths (gRPC's `token_ratio` has three decimals), in one atomic.
//!
//! Charged per failed attempt, when it ends: a retry itself costs nothing, so a retry that is
//! granted and never sent (an abort during its wait) has nothing to give back.

use core::sync::atomic::Ordering;

use portable_atomic::AtomicU64;

use super::{Budget, BudgetConfigError};
use crate::decision::AttemptOutcome;
use crate::time::Instant;

/// Thousandths of a token per token.
const MILLI: u64 = 1_000;

/// A gRPC-style retry throttle (gRFC A6). Shared by reference (`&TokenBucket` and
/// `Arc<TokenBucket>` are budgets); lock-free.
///
/// ```
/// use backstop_core::{AttemptOutcome, Budget, Instant, TokenBucket};
///
/// // gRPC's example: 10 tokens, each success earns 0.1 token.
/// let bucket = TokenBucket::new(10, 100)?;
/// let (now, cause) = (Instant::ZERO, AttemptOutcome::Response(503));
/// for _ in 0..5 {
///     bucket.on_attempt_end(now, false); // five failures: 10 -> 5 tokens
/// }
/// assert!(!bucket.try_retry(now, cause)); // 5 is not more than half of 10
/// bucket.on_attempt_end(now, true); // a success: 5.1 tokens
/// assert!(bucket.try_retry(now, cause));
/// assert_eq!(bucket.tokens_milli(), 5_100);
/// # Ok::<(), backstop_core::BudgetConfigError>(())
/// ```
#[derive(Debug)]
pub struct TokenBucket {
    max_milli: u64,
    ratio_milli: u64,
    tokens_milli: AtomicU64,
}

impl TokenBucket {
    /// A full bucket of `max_tokens` (1 to 1,000,000; gRPC allows up to 1000) in which every
    /// success adds `token_ratio_milli / 1000` tokens (at least 1, i.e. 0.001 token).
    pub const fn new(max_tokens: u32, token_ratio_milli: u32) -> Result<Self, BudgetConfigError> {
        if max_tokens == 0 || max_tokens > 1_000_000 {
            return Err(BudgetConfigError::MaxTokensOutOfRange(max_tokens));
        }
        if token_ratio_milli == 0 {
            return Err(BudgetConfigError::ZeroTokenRatio);
        }
        let max_milli = max_tokens as u64 * MILLI;
        Ok(TokenBucket {
            max_milli,
            ratio_milli: token_ratio_milli as u64,
            tokens_milli: AtomicU64::new(max_milli),
        })
    }

    /// The bucket's size, in tokens.
    #[must_use]
    pub const fn max_tokens(&self) -> u32 {
        (self.max_milli / MILLI) as u32
    }

    /// The tokens in the bucket now, in thousandths of a token.
    #[must_use]
    pub fn tokens_milli(&self) -> u64 {
        self.tokens_milli.load(Ordering::Relaxed)
    }
}

impl Budget for TokenBucket {
    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        // Retrying spends nothing here: the failure that caused it already took its token.
        self.tokens_milli.load(Ordering::Relaxed) * 2 > self.max_milli
    }

    fn on_attempt_end(&self, _now: Instant, success: bool) {
        let (max, ratio) = (self.max_milli, self.ratio_milli);
        // `fetch_update` retries the compare-and-swap until it lands, so no update is lost;
        // the closure always returns `Some`, so the result is always `Ok`.
        let _ = self
            .tokens_milli
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(if success {
                    t.saturating_add(ratio).min(max)
                } else {
                    t.saturating_sub(MILLI)
                })
            });
    }
}
