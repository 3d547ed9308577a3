//! How an origin gate lets operations back once its probe succeeded: a slow start.
//!
//! Rule: a server that has just recovered gets back about what it was taking before it pushed
//! back, and more only as time shows it keeps answering; never the backlog of everything the
//! gate held, at once (the thundering herd at the worst moment). The starting pace is measured,
//! not configured: the rate at which operations asked the gate while it was closed.

use core::time::Duration;

use super::config::{GateConfigError, DAY};
use crate::time::nanos_saturating;

/// The longest interval between two admissions at the start of a reopening: a gate that few
/// operations asked while it was closed still admits at least one a second.
pub(super) const SLOWEST_START: u64 = 1_000_000_000;

/// How an [`OriginGate`](super::OriginGate) lets operations through once its probe succeeded.
///
/// With a pace ([`Linear`](Self::Linear), the default, or [`Doubling`](Self::Doubling)), the
/// gate admits one operation at a time, each at its own *slot*: the first slot is the
/// probe's success, the next ones follow at an interval that starts at the closing's measured
/// pace (its length divided by the operations that asked while it was closed, each counted
/// once however often it asked, those held over from an earlier closing or from the reopening
/// the closing cut short included; at most 1 s) and shrinks as the reopening ages. A caller asking before the next free slot is told that
/// slot ([`GateAdmission::Paced`](crate::GateAdmission::Paced)) and holds it; a slot at or
/// past the caller's deadline is not given (the operation gives up at once, with
/// `origin_paused`). The gate is open again for all, without pace, at the first caller that
/// finds no slot ahead of it once the pace has doubled. A back-off signal during the
/// reopening closes the gate again, as from open; the slots it had given are void.
///
/// | variant | pace `t` after the probe's success, `r₀` the starting pace | open for all |
/// |---|---|---|
/// | [`AtOnce`](Self::AtOnce) | no pace: every caller at once (the gate before slow start) | at the probe's success |
/// | [`Linear`](Self::Linear) (default, `ramp` 10 s) | `r₀ · (1 + t / ramp)`: Envoy's slow-start mode with an aggression of 1 | from `t = ramp`, with no caller waiting |
/// | [`Doubling`](Self::Doubling) | `r₀ · 2^⌊t / every⌋`: TCP's slow start, a doubling per interval | from `t = every`, with no caller waiting |
///
/// ```
/// use backstop_core::{GateConfig, OriginGate, Reopening};
/// use core::time::Duration;
///
/// let gentle = GateConfig::new().reopening(Reopening::linear(Duration::from_secs(30)));
/// assert_eq!(OriginGate::new(gentle)?.config().reopening_rule(),
///            Reopening::Linear { ramp: Duration::from_secs(30) });
/// assert_eq!(GateConfig::new().reopening_rule(), Reopening::default());
/// # Ok::<(), backstop_core::GateConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reopening {
    /// Every operation at once when the probe succeeds: no slow start.
    AtOnce,
    /// The pace grows by the starting pace every `ramp` (1 ms to 1 day).
    Linear {
        /// The time in which the pace grows by its starting value.
        ramp: Duration,
    },
    /// The pace doubles every `every` (1 ms to 1 day).
    Doubling {
        /// The time between two doublings.
        every: Duration,
    },
}

impl Reopening {
    /// The default: [`Linear`](Self::Linear) over 10 s, so that the first 3 s after the probe
    /// carry at most 1.3 times the starting pace.
    pub const DEFAULT: Reopening = Reopening::Linear {
        ramp: Duration::from_secs(10),
    };

    /// [`Reopening::Linear`] with `ramp`.
    #[must_use]
    pub const fn linear(ramp: Duration) -> Self {
        Reopening::Linear { ramp }
    }

    /// [`Reopening::Doubling`] with `every`.
    #[must_use]
    pub const fn doubling(every: Duration) -> Self {
        Reopening::Doubling { every }
    }

    pub(super) const fn check(&self) -> Result<(), GateConfigError> {
        let d = match self {
            Reopening::AtOnce => return Ok(()),
            Reopening::Linear { ramp } => ramp,
            Reopening::Doubling { every } => every,
        };
        if d.as_nanos() < 1_000_000 || d.as_nanos() > DAY.as_nanos() {
            return Err(GateConfigError::ReopeningOutOfRange);
        }
        Ok(())
    }

    /// Whether the gate paces its reopening at all.
    pub(super) const fn paces(&self) -> bool {
        !matches!(self, Reopening::AtOnce)
    }

    /// The interval after a slot `elapsed` nanoseconds into the reopening, `first` being the
    /// starting interval (at least 1 ns).
    pub(super) fn interval(&self, first: u64, elapsed: u64) -> u64 {
        let first = first.max(1);
        let interval = match *self {
            Reopening::AtOnce => 0,
            Reopening::Linear { ramp } => {
                let ramp = nanos_saturating(ramp).max(1);
                (u128::from(first) * u128::from(ramp) / (u128::from(ramp) + u128::from(elapsed)))
                    as u64
            }
            Reopening::Doubling { every } => {
                let doublings = elapsed / nanos_saturating(every).max(1);
                first.checked_shr(doublings.min(63) as u32).unwrap_or(0)
            }
        };
        interval.max(1)
    }

    /// Whether the pace has doubled `elapsed` nanoseconds into the reopening.
    pub(super) fn doubled(&self, elapsed: u64) -> bool {
        match *self {
            Reopening::AtOnce => true,
            Reopening::Linear { ramp: d } | Reopening::Doubling { every: d } => {
                elapsed >= nanos_saturating(d)
            }
        }
    }
}

impl Default for Reopening {
    fn default() -> Self {
        Reopening::DEFAULT
    }
}
