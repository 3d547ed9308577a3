//! gRFC A6's `retryPolicy` and `hedgingPolicy`, validated into a [`Policy`].
//!
//! Rule (gRFC A6 "Retry Policy Capabilities", "Hedging Policy", "Validation of retryPolicy"):
//! `maxAttempts` counts the original call, must be at least 2, and above 5 is treated as 5;
//! `initialBackoff` and `maxBackoff` must be above zero, `backoffMultiplier` above zero, and
//! `retryableStatusCodes` must not be empty. The `n`-th retry waits `random(0,
//! min(initialBackoff * backoffMultiplier^(n-1), maxBackoff))` (full jitter). A hedging policy
//! sends up to `maxAttempts` copies `hedgingDelay` apart; an answer whose code is in
//! `nonFatalStatusCodes` sends the next copy at once, any other ends the call.
//!
//! A6 retries every method its policy names: writing the policy is the service owner's word that
//! the call may be sent again, so the policy retries a POST (every gRPC call is one) without
//! an `Idempotency-Key`. The call's deadline is the request's `grpc-timeout` when it has one,
//! else the policy's `timeout` (A6's per-method `timeout`; 15 s, backstop's default, unless
//! set); it bounds every attempt too, since A6 has no attempt timeout of its own.

use core::time::Duration;

use super::code::{Code, CodeSet};
use crate::backoff::{Backoff, Multiplier};
use crate::hedge::{Hedging, A6_MAX_ATTEMPTS};
use crate::jitter::Jitter;
use crate::non_idempotent::NonIdempotent;
use crate::policy::{ConfigError, Policy};
use crate::status::{ResponseClass, StatusSet};

/// What an A6 policy does when an answer's code comes back: the codes it retries (or, hedging,
/// that are non-fatal) and the [`Policy`] the machines run.
///
/// ```
/// use backstop_core::grpc::{Code, RetryPolicy};
/// use backstop_core::ResponseClass;
/// use core::time::Duration;
///
/// let a6 = RetryPolicy::builder()
///     .max_attempts(4)
///     .initial_backoff(Duration::from_millis(100))
///     .max_backoff(Duration::from_secs(1))
///     .backoff_multiplier(2.0)
///     .retryable_status_codes(&[Code::Unavailable])
///     .build()?;
/// assert_eq!(a6.policy().max_attempts(), 4);
/// assert_eq!(a6.class(Code::Unavailable), ResponseClass::Retryable);
/// assert_eq!(a6.class(Code::Internal), ResponseClass::FinalError);
/// assert_eq!(a6.class(Code::Ok), ResponseClass::ByStatus);
/// # Ok::<(), backstop_core::grpc::PolicyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    policy: Policy,
    retried: CodeSet,
    /// What it was built from, for [`Self::with_timeout`].
    source: Source,
}

/// The builder a [`RetryPolicy`] came from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    Retry(RetryPolicyBuilder),
    Hedging(HedgingPolicyBuilder),
}

impl RetryPolicy {
    /// A builder for A6's `retryPolicy`: every field but the timeout is required.
    pub const fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            max_attempts: None,
            initial_backoff: None,
            max_backoff: None,
            backoff_multiplier: None,
            codes: CodeSet::EMPTY,
            timeout: None,
        }
    }

    /// A builder for A6's `hedgingPolicy`: `max_attempts` is required, `hedging_delay` is 0
    /// (every copy at once) and `non_fatal_status_codes` empty unless set, as A6 says.
    pub const fn hedging_builder() -> HedgingPolicyBuilder {
        HedgingPolicyBuilder {
            max_attempts: None,
            delay: Duration::ZERO,
            codes: CodeSet::EMPTY,
            timeout: None,
        }
    }

    /// The same policy with the call's deadline `timeout` (a request's `grpc-timeout`).
    ///
    /// ```
    /// use backstop_core::grpc::{Code, RetryPolicy};
    /// use core::time::Duration;
    ///
    /// let a6 = RetryPolicy::hedging_builder().max_attempts(2).build()?;
    /// let short = a6.with_timeout(Duration::from_millis(250))?;
    /// assert_eq!(short.policy().max_elapsed(), Duration::from_millis(250));
    /// # Ok::<(), backstop_core::grpc::PolicyError>(())
    /// ```
    pub fn with_timeout(&self, timeout: Duration) -> Result<RetryPolicy, PolicyError> {
        match self.source {
            Source::Retry(b) => b.timeout(timeout).build(),
            Source::Hedging(b) => b.timeout(timeout).build(),
        }
    }

    /// The policy the machines run.
    #[must_use]
    pub const fn policy(&self) -> Policy {
        self.policy
    }

    /// The codes retried (`retryableStatusCodes`) or, hedging, that are not fatal
    /// (`nonFatalStatusCodes`).
    #[must_use]
    pub const fn retried_codes(&self) -> CodeSet {
        self.retried
    }

    /// How the machines classify an answer with `code`: `OK` by its HTTP status (a success),
    /// a retried code [`Retryable`](ResponseClass::Retryable), any other
    /// [`FinalError`](ResponseClass::FinalError) (returned, and neither a success nor a
    /// failure to a budget: A6's throttle counts only `OK` and the retried codes).
    #[must_use]
    pub const fn class(&self, code: Code) -> ResponseClass {
        if self.retried.contains(code) {
            ResponseClass::Retryable
        } else if matches!(code, Code::Ok) {
            ResponseClass::ByStatus
        } else {
            ResponseClass::FinalError
        }
    }
}

/// Builds an A6 `retryPolicy` ([`RetryPolicy::builder`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct RetryPolicyBuilder {
    max_attempts: Option<u32>,
    initial_backoff: Option<Duration>,
    max_backoff: Option<Duration>,
    backoff_multiplier: Option<f64>,
    codes: CodeSet,
    timeout: Option<Duration>,
}

impl RetryPolicyBuilder {
    /// `maxAttempts`: the attempts, the original included (at least 2; above 5 means 5).
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// `initialBackoff`: the first retry's delay bound (above zero).
    pub const fn initial_backoff(mut self, d: Duration) -> Self {
        self.initial_backoff = Some(d);
        self
    }

    /// `maxBackoff`: the largest delay bound (above zero).
    pub const fn max_backoff(mut self, d: Duration) -> Self {
        self.max_backoff = Some(d);
        self
    }

    /// `backoffMultiplier`: the growth from one retry to the next (above zero).
    pub const fn backoff_multiplier(mut self, m: f64) -> Self {
        self.backoff_multiplier = Some(m);
        self
    }

    /// `retryableStatusCodes`: the codes retried (at least one).
    pub const fn retryable_status_codes(mut self, codes: &[Code]) -> Self {
        self.codes = CodeSet::from_codes(codes);
        self
    }

    /// The method config's `timeout`: the call's deadline when its request carries no
    /// `grpc-timeout` (15 s unless set).
    pub const fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Validates the policy by A6's rules.
    pub fn build(self) -> Result<RetryPolicy, PolicyError> {
        let max_attempts = attempts(self.max_attempts)?;
        let initial = self
            .initial_backoff
            .ok_or(PolicyError::Missing("initialBackoff"))?;
        let max = self.max_backoff.ok_or(PolicyError::Missing("maxBackoff"))?;
        if initial.is_zero() {
            return Err(PolicyError::NotPositive("initialBackoff"));
        }
        if max.is_zero() {
            return Err(PolicyError::NotPositive("maxBackoff"));
        }
        let m = self
            .backoff_multiplier
            .ok_or(PolicyError::Missing("backoffMultiplier"))?;
        let multiplier = Multiplier::new(m).ok_or(PolicyError::NotPositive("backoffMultiplier"))?;
        if self.codes.is_empty() {
            return Err(PolicyError::NoRetryableStatusCodes);
        }
        // A6's delay is `min(initialBackoff * m^(n-1), maxBackoff)`: an initial backoff above
        // the largest is the largest.
        let backoff = Backoff::geometric(initial.min(max), multiplier, max);
        let policy = base(self.timeout)
            .max_attempts(max_attempts)
            .backoff(backoff)
            .jitter(Jitter::Full)
            .build()
            .map_err(PolicyError::Policy)?;
        Ok(RetryPolicy {
            policy,
            retried: self.codes,
            source: Source::Retry(self),
        })
    }
}

/// Builds an A6 `hedgingPolicy` ([`RetryPolicy::hedging_builder`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct HedgingPolicyBuilder {
    max_attempts: Option<u32>,
    delay: Duration,
    codes: CodeSet,
    timeout: Option<Duration>,
}

impl HedgingPolicyBuilder {
    /// `maxAttempts`: the copies, the original included (at least 2; above 5 means 5).
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// `hedgingDelay`: the time between one copy and the next (0: all at once).
    pub const fn hedging_delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    /// `nonFatalStatusCodes`: the codes after which the next copy goes at once; any other code
    /// ends the call.
    pub const fn non_fatal_status_codes(mut self, codes: &[Code]) -> Self {
        self.codes = CodeSet::from_codes(codes);
        self
    }

    /// The method config's `timeout` (see [`RetryPolicyBuilder::timeout`]).
    pub const fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Validates the policy by A6's rules.
    pub fn build(self) -> Result<RetryPolicy, PolicyError> {
        let max_attempts = attempts(self.max_attempts)?;
        let policy = base(self.timeout)
            .max_attempts(max_attempts)
            .hedging(Hedging::fixed(self.delay).max_attempts(max_attempts))
            .build()
            .map_err(PolicyError::Policy)?;
        Ok(RetryPolicy {
            policy,
            retried: self.codes,
            source: Source::Hedging(self),
        })
    }
}

/// `maxAttempts`, checked and capped at A6's 5.
fn attempts(n: Option<u32>) -> Result<u32, PolicyError> {
    match n {
        None => Err(PolicyError::Missing("maxAttempts")),
        Some(n) if n < 2 => Err(PolicyError::MaxAttemptsBelowTwo(n)),
        Some(n) => Ok(n.min(A6_MAX_ATTEMPTS)),
    }
}

/// What every A6 policy shares: the deadline bounds each attempt, every method is retried, the
/// HTTP statuses of answers that are not gRPC are classified by their code, not by a status
/// set, and a server's pushback is bounded by the deadline alone (A6 has no other ceiling).
fn base(timeout: Option<Duration>) -> crate::policy::PolicyBuilder {
    let deadline = timeout.unwrap_or(Policy::default().max_elapsed());
    Policy::builder()
        .max_elapsed(deadline)
        .attempt_timeout(deadline)
        // No ceiling below the deadline: a pushback past it ends the call at the deadline.
        .max_retry_after(Duration::MAX)
        .non_idempotent(NonIdempotent::ServerDeduplicatesWithoutKey)
        .retryable_status_set(StatusSet::EMPTY)
        .rate_limit_fields(false)
}

/// Why an A6 policy was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PolicyError {
    /// A required field (named as in the service config) is missing.
    Missing(&'static str),
    /// `maxAttempts` was below 2.
    MaxAttemptsBelowTwo(u32),
    /// A field (named as in the service config) must be above zero (and finite).
    NotPositive(&'static str),
    /// `retryableStatusCodes` was empty.
    NoRetryableStatusCodes,
    /// The policy the A6 one makes was refused (a zero `timeout`).
    Policy(ConfigError),
}

impl core::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PolicyError::Missing(field) => write!(f, "{field} is required"),
            PolicyError::MaxAttemptsBelowTwo(n) => {
                write!(f, "maxAttempts must be 2 or more, got {n}")
            }
            PolicyError::NotPositive(field) => write!(f, "{field} must be greater than zero"),
            PolicyError::NoRetryableStatusCodes => {
                f.write_str("retryableStatusCodes must not be empty")
            }
            PolicyError::Policy(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for PolicyError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> RetryPolicyBuilder {
        RetryPolicy::builder()
            .max_attempts(4)
            .initial_backoff(Duration::from_millis(10))
            .max_backoff(Duration::from_millis(10))
            .backoff_multiplier(1.0)
            .retryable_status_codes(&[Code::Unavailable])
    }

    #[test]
    fn a6_refuses_what_it_says_is_invalid() {
        let ms = Duration::from_millis;
        assert_eq!(
            valid().max_attempts(1).build(),
            Err(PolicyError::MaxAttemptsBelowTwo(1))
        );
        assert_eq!(
            valid().initial_backoff(Duration::ZERO).build(),
            Err(PolicyError::NotPositive("initialBackoff"))
        );
        assert_eq!(
            valid().max_backoff(Duration::ZERO).build(),
            Err(PolicyError::NotPositive("maxBackoff"))
        );
        for m in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(
                valid().backoff_multiplier(m).build(),
                Err(PolicyError::NotPositive("backoffMultiplier"))
            );
        }
        assert_eq!(
            valid().retryable_status_codes(&[]).build(),
            Err(PolicyError::NoRetryableStatusCodes)
        );
        assert_eq!(
            RetryPolicy::builder().build(),
            Err(PolicyError::Missing("maxAttempts"))
        );
        assert!(matches!(
            valid().timeout(Duration::ZERO).build(),
            Err(PolicyError::Policy(_))
        ));
        assert!(valid().initial_backoff(ms(20)).build().is_ok());
    }

    #[test]
    fn max_attempts_above_five_is_five() {
        let p = valid().max_attempts(100).build().map(|p| p.policy());
        assert_eq!(p.map(|p| p.max_attempts()), Ok(5));
        let h = RetryPolicy::hedging_builder().max_attempts(9).build();
        assert_eq!(h.map(|p| p.policy().max_attempts()), Ok(5));
        assert_eq!(
            RetryPolicy::hedging_builder().max_attempts(1).build(),
            Err(PolicyError::MaxAttemptsBelowTwo(1))
        );
    }

    #[test]
    fn the_a6_backoff_is_geometric_with_full_jitter() {
        let p = valid()
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_secs(1))
            .backoff_multiplier(1.5)
            .timeout(Duration::from_secs(3))
            .build()
            .map(|p| p.policy());
        let p = p.unwrap_or_default();
        assert_eq!(p.backoff().delay(3), Duration::from_millis(225));
        assert_eq!(p.jitter(), Jitter::Full);
        assert_eq!(p.max_elapsed(), Duration::from_secs(3));
        assert_eq!(p.attempt_timeout(), Duration::from_secs(3));
        assert!(p.may_retry(crate::Method::Post, false));
    }
}
