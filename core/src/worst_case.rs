//! The bounds of one operation, computed from the policy alone, before anything is sent.
//!
//! Rule (a bound a user can plan with is one that holds whatever the server does): the machine
//! starts at most `max_attempts` attempts; every wait it decides ends before the `max_elapsed`
//! deadline and is at most the backoff's cap or the server-directed ceiling
//! (`max_retry_after`); every attempt's timeout is at most `attempt_timeout` and ends by the
//! deadline. So the time an operation's decisions account for (its attempts, each cut at its
//! timeout, and its waits) is at most the attempts' timeouts plus the waits between them, and
//! never more than `max_elapsed`. A driver that acts on each decision as it comes finishes
//! within that time; a slow driver (one that starts an attempt late) adds only its own delay,
//! and never sends past the deadline.

use core::time::Duration;

use crate::hedge::{HedgeDelay, Hedging};
use crate::policy::Policy;

/// The most an operation under a [`Policy`] can cost: see [`Policy::worst_case`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WorstCase {
    /// The most requests one operation sends (the first attempt included), by any path.
    pub attempts: u32,
    /// The longest the operation takes when its driver acts on each decision as it comes:
    /// every attempt's timeout plus every wait between attempts, within `max_elapsed`.
    pub elapsed: Duration,
    /// The longest single wait between two attempts that the policy decides (for hedging,
    /// also the hedging delay or a server-directed wait after an answer). An origin gate's or a
    /// rate limiter's hold ([`RetryMachine::with_overload`](crate::RetryMachine::with_overload))
    /// is bounded by the deadline only.
    pub wait: Duration,
    /// The most requests in flight at once: 1 when retrying, the copies allowed when hedging.
    pub in_flight: u32,
}

impl Policy {
    /// The most requests one operation can send, the longest it can take, and the longest
    /// single wait, whatever the server answers.
    ///
    /// ```
    /// use backstop_core::Policy;
    /// use core::time::Duration;
    ///
    /// let worst = Policy::default().worst_case();
    /// assert_eq!(worst.attempts, 4);
    /// // 4 attempts of 5 s and 3 waits of up to 60 s (the Retry-After ceiling), within 15 s.
    /// assert_eq!(worst.elapsed, Duration::from_secs(15));
    /// // A wait ends before the deadline.
    /// assert_eq!(worst.wait, Duration::from_secs(15) - Duration::from_nanos(1));
    /// ```
    ///
    /// Under [`hedging`](Self::hedging) the copies may all be in flight at once; a copy starts
    /// at most the longer of the hedging delay and an attempt timeout plus the ceiling after the
    /// previous one (an adaptive delay is bounded by `max_elapsed` only), and ends by the
    /// deadline. The paths that retry instead of hedging ([`RetryMachine`](crate::RetryMachine),
    /// which follows the policy's retry settings and ignores its hedging) run under the same
    /// policy, so the bound is the larger of the two, field by field: it holds whichever path
    /// runs the operation.
    ///
    /// ```
    /// use backstop_core::{Hedging, Policy};
    /// use core::time::Duration;
    ///
    /// let policy = Policy::builder()
    ///     .hedging(Hedging::fixed(Duration::from_millis(10)).max_attempts(3))
    ///     .build()?;
    /// let worst = policy.worst_case();
    /// assert_eq!((worst.attempts, worst.in_flight), (4, 3)); // retried: 4 attempts, one at a time
    /// assert_eq!(worst.elapsed, Duration::from_secs(15));
    /// # Ok::<(), backstop_core::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn worst_case(&self) -> WorstCase {
        let retried = self.retried_worst_case();
        let Some(hedging) = self.hedging() else {
            return retried;
        };
        let hedged = self.hedged_worst_case(hedging);
        WorstCase {
            attempts: max_u32(retried.attempts, hedged.attempts),
            elapsed: max(retried.elapsed, hedged.elapsed),
            wait: max(retried.wait, hedged.wait),
            in_flight: max_u32(retried.in_flight, hedged.in_flight),
        }
    }

    /// [`Self::worst_case`] when retrying: the policy's retry settings.
    const fn retried_worst_case(&self) -> WorstCase {
        let attempts = self.max_attempts();
        let max_elapsed = self.max_elapsed();
        let cap = self.backoff().cap();
        let ceiling = self.max_retry_after();
        let wait = if cap.as_nanos() > ceiling.as_nanos() {
            cap
        } else {
            ceiling
        };
        // A wait ends strictly before the deadline.
        let wait = min(wait, max_elapsed.saturating_sub(Duration::from_nanos(1)));
        let timeouts = self.attempt_timeout().saturating_mul(attempts);
        let waits = wait.saturating_mul(attempts.saturating_sub(1));
        WorstCase {
            attempts,
            elapsed: min(timeouts.saturating_add(waits), max_elapsed),
            wait,
            in_flight: 1,
        }
    }

    /// [`Self::worst_case`] under hedging.
    const fn hedged_worst_case(&self, hedging: Hedging) -> WorstCase {
        let copies = hedging.attempts();
        let max_elapsed = self.max_elapsed();
        let timeout = self.attempt_timeout();
        let after_answer = timeout.saturating_add(self.max_retry_after());
        let gap = match hedging.delay() {
            HedgeDelay::Fixed(d) if d.as_nanos() > after_answer.as_nanos() => d,
            HedgeDelay::Fixed(_) => after_answer,
            HedgeDelay::Adaptive { .. } => max_elapsed,
        };
        let wait = match hedging.delay() {
            HedgeDelay::Fixed(d) if d.as_nanos() > self.max_retry_after().as_nanos() => d,
            HedgeDelay::Fixed(_) => self.max_retry_after(),
            HedgeDelay::Adaptive { .. } => max_elapsed,
        };
        let last_start = gap.saturating_mul(copies.saturating_sub(1));
        WorstCase {
            attempts: copies,
            elapsed: min(last_start.saturating_add(timeout), max_elapsed),
            wait: min(wait, max_elapsed.saturating_sub(Duration::from_nanos(1))),
            in_flight: copies,
        }
    }
}

const fn max(a: Duration, b: Duration) -> Duration {
    if a.as_nanos() > b.as_nanos() {
        a
    } else {
        b
    }
}

const fn max_u32(a: u32, b: u32) -> u32 {
    if a > b {
        a
    } else {
        b
    }
}

const fn min(a: Duration, b: Duration) -> Duration {
    if a.as_nanos() < b.as_nanos() {
        a
    } else {
        b
    }
}
