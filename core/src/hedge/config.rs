//! The hedging policy: when a second copy of a request goes out, and how many may.
//!
//! Rule (gRPC gRFC A6, "hedging policy"): hedging is an alternative to retrying for an
//! operation, never both. `max_attempts` counts the original; A6 caps it at 5, and so does
//! backstop unless the cap is raised explicitly (to at most [`MAX_COPIES`]). The delay is fixed,
//! or adaptive (Finagle's backup requests): `max(1 ms, p[100 − max_extra_load])` of the recent
//! latencies a caller-owned [`LatencyTracker`](crate::LatencyTracker) holds.

use core::time::Duration;

/// A6's cap on `max_attempts` for hedging; [`Hedging::allow_above_a6_cap`] raises it.
pub const A6_MAX_ATTEMPTS: u32 = 5;

/// The most copies one hedged operation can send, whatever the policy says: the machine's
/// fixed-size state holds this many.
pub const MAX_COPIES: u32 = 10;

/// When the next copy goes out while nothing final has arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeDelay {
    /// After this long without an answer (zero: every copy at once).
    Fixed(Duration),
    /// After the `100 − max_extra_load_percent` percentile of the latencies a
    /// [`Latencies`](crate::Latencies) source recorded (at least 1 ms); no copy is sent on a
    /// delay until it holds `min_samples` samples in its window.
    Adaptive {
        /// The extra load hedging may add, in percent of the operations (1 to 50).
        max_extra_load_percent: u8,
        /// The samples the source must hold before any copy is sent on a delay.
        min_samples: u32,
    },
}

/// A hedging policy: see [`PolicyBuilder::hedging`](crate::PolicyBuilder::hedging).
///
/// ```
/// use backstop_core::{Hedging, Policy};
/// use core::time::Duration;
///
/// // A backup request after 50 ms without an answer, and a third after 100 ms (and, on the
/// // paths that retry instead, three attempts too).
/// let policy = Policy::builder()
///     .hedging(Hedging::fixed(Duration::from_millis(50)).max_attempts(3))
///     .max_attempts(3)
///     .build()?;
/// assert_eq!(policy.worst_case().attempts, 3);
/// assert_eq!(policy.worst_case().in_flight, 3);
/// # Ok::<(), backstop_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hedging {
    delay: HedgeDelay,
    max_attempts: u32,
    above_a6_cap: bool,
}

impl Hedging {
    /// Hedging with a fixed delay and two copies at most (the original and one backup).
    #[must_use]
    pub const fn fixed(delay: Duration) -> Self {
        Hedging {
            delay: HedgeDelay::Fixed(delay),
            max_attempts: 2,
            above_a6_cap: false,
        }
    }

    /// Hedging after the `100 − max_extra_load_percent` percentile of recent latencies (Finagle
    /// uses 5 %, hence the 95th percentile), once 100 samples are in the window; two copies at
    /// most.
    #[must_use]
    pub const fn adaptive(max_extra_load_percent: u8) -> Self {
        Hedging {
            delay: HedgeDelay::Adaptive {
                max_extra_load_percent,
                min_samples: 100,
            },
            max_attempts: 2,
            above_a6_cap: false,
        }
    }

    /// The copies allowed, the original included (2 to 5, or to [`MAX_COPIES`] with
    /// [`Self::allow_above_a6_cap`]).
    #[must_use]
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }

    /// Lets `max_attempts` go above A6's 5, up to [`MAX_COPIES`].
    #[must_use]
    pub const fn allow_above_a6_cap(mut self) -> Self {
        self.above_a6_cap = true;
        self
    }

    /// For an adaptive delay: the samples needed before any copy is sent on a delay.
    #[must_use]
    pub const fn min_samples(mut self, n: u32) -> Self {
        if let HedgeDelay::Adaptive {
            max_extra_load_percent,
            ..
        } = self.delay
        {
            self.delay = HedgeDelay::Adaptive {
                max_extra_load_percent,
                min_samples: n,
            };
        }
        self
    }

    /// When the next copy goes out.
    #[must_use]
    pub const fn delay(&self) -> HedgeDelay {
        self.delay
    }

    /// The copies allowed, the original included.
    #[must_use]
    pub const fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Checks the values [`PolicyBuilder::build`](crate::PolicyBuilder::build) refuses.
    pub(crate) const fn check(&self) -> Result<(), HedgingError> {
        let cap = if self.above_a6_cap {
            MAX_COPIES
        } else {
            A6_MAX_ATTEMPTS
        };
        if self.max_attempts < 2 || self.max_attempts > cap {
            return Err(HedgingError::Attempts {
                value: self.max_attempts,
                cap,
            });
        }
        if let HedgeDelay::Adaptive {
            max_extra_load_percent,
            ..
        } = self.delay
        {
            if max_extra_load_percent == 0 || max_extra_load_percent > 50 {
                return Err(HedgingError::ExtraLoad(max_extra_load_percent));
            }
        }
        Ok(())
    }
}

/// Why a hedging policy was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgingError {
    /// `max_attempts` was below 2 (nothing to hedge) or above its cap (A6's 5, or
    /// [`MAX_COPIES`] once raised).
    Attempts {
        /// The configured value.
        value: u32,
        /// The cap that applied.
        cap: u32,
    },
    /// The adaptive delay's extra load was 0 or above 50 %.
    ExtraLoad(u8),
}

impl core::fmt::Display for HedgingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HedgingError::Attempts { value, cap } if *cap == A6_MAX_ATTEMPTS => write!(
                f,
                "hedging max_attempts is {value}: it must be 2 to {cap} (gRFC A6's cap; allow_above_a6_cap raises it to {MAX_COPIES})"
            ),
            HedgingError::Attempts { value, cap } => {
                write!(f, "hedging max_attempts is {value}: it must be 2 to {cap}")
            }
            HedgingError::ExtraLoad(p) => write!(
                f,
                "hedging max_extra_load_percent is {p}: it must be 1 to 50"
            ),
        }
    }
}
