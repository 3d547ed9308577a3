//! An [`OriginGate`](super::OriginGate)'s configuration: the reopening spread, the recheck of
//! callers awaiting a probe, the seed of the spread, and the optional failure-ratio trip.

use core::time::Duration;

use super::reopening::Reopening;

/// The most buckets of a failure-ratio window ([`FailureRatio::MAX_BUCKETS`]).
pub(super) const MAX_BUCKETS: u8 = 16;

/// A day: the longest spread, recheck, window and break.
pub(crate) const DAY: Duration = Duration::from_secs(86_400);

/// How an [`OriginGate`](super::OriginGate) behaves. Every value has a default; the gate
/// checks them when it is built ([`OriginGate::new`](super::OriginGate::new)).
///
/// | setting | default | meaning |
/// |---|---|---|
/// | [`spread`](Self::spread) | 1 s | callers told the gate is closed return over `[until, until + min(spread, closing / 10)]`, each at its own instant |
/// | [`await_probe_recheck`](Self::await_probe_recheck) | 50 ms | a caller that finds a probe in flight asks again after `U[recheck, 2 × recheck]` |
/// | [`seed`](Self::seed) | none: the driver's randomness | where the spread sequence starts, so that processes told the same instant do not return together either |
/// | [`failure_ratio`](Self::failure_ratio) | off | a circuit breaker for servers that fail without a back-off signal ([`FailureRatio`]) |
/// | [`reopening`](Self::reopening) | [`Reopening::Linear`] over 10 s | how operations go through once the probe succeeded: a slow start from the pace measured while closed |
///
/// ```
/// use backstop_core::{FailureRatio, GateConfig, OriginGate};
/// use core::time::Duration;
///
/// let config = GateConfig::new()
///     .spread(Duration::from_millis(500))
///     .await_probe_recheck(Duration::from_millis(20))
///     .seed(0x5eed)
///     .failure_ratio(FailureRatio::new()); // Polly's defaults
/// let gate = OriginGate::new(config)?;
/// assert_eq!(gate.config(), config);
/// # Ok::<(), backstop_core::GateConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GateConfig {
    pub(super) spread: Duration,
    pub(super) recheck: Duration,
    pub(super) seed: Option<u64>,
    pub(super) failure_ratio: Option<FailureRatio>,
    pub(super) reopening: Reopening,
}

impl GateConfig {
    /// The defaults: a 1 s spread, a 50 ms recheck, no seed (the driver's randomness), no
    /// failure-ratio trip, a linear slow start over 10 s.
    #[must_use]
    pub const fn new() -> Self {
        GateConfig {
            spread: Duration::from_secs(1),
            recheck: Duration::from_millis(50),
            seed: None,
            failure_ratio: None,
            reopening: Reopening::DEFAULT,
        }
    }

    /// The most a caller's reopening instant is spread past the closing's end (0 to 1 day;
    /// default 1 s). The spread of one closing is `min(spread, length / 10)`, `length` being
    /// the back-off signal (or the break) that set its end, as the machine spreads a
    /// `Retry-After` wait
    /// ([`PolicyBuilder::retry_after_spread`](crate::PolicyBuilder::retry_after_spread)).
    /// Zero: every caller is told the closing's end itself.
    #[must_use]
    pub const fn spread(mut self, d: Duration) -> Self {
        self.spread = d;
        self
    }

    /// How long a caller that finds another operation's probe in flight waits before asking
    /// again, at least (1 ns to 1 day; default 50 ms): it is told
    /// [`AwaitProbe`](crate::GateAdmission::AwaitProbe) at `now + U[recheck, 2 × recheck]`.
    #[must_use]
    pub const fn await_probe_recheck(mut self, d: Duration) -> Self {
        self.recheck = d;
        self
    }

    /// Where the gate's sequence of spread offsets starts: for runs that must be reproducible
    /// (tests, simulations). Two gates with the same seed and the same calls give the same
    /// answers, in this process or in another.
    ///
    /// Without one (the default), each gate must start at a point of its own, or processes
    /// told the same instant (a `Retry-After` date, a quota's reset) send their first callers
    /// back together. The core reads no randomness: the driver supplies it. backstop's
    /// `OriginGates` seeds every gate it makes from the operating system's generator; a gate
    /// built by [`OriginGate::new`](super::OriginGate::new) without a seed starts at 0, so a
    /// driver that builds its own gates passes a random seed here.
    #[must_use]
    pub const fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The seed given to [`seed`](Self::seed), if any (`None`: the driver seeds the gate).
    #[must_use]
    pub const fn fixed_seed(&self) -> Option<u64> {
        self.seed
    }

    /// Turns the failure-ratio trip on (it is off by default): see [`FailureRatio`].
    #[must_use]
    pub const fn failure_ratio(mut self, trip: FailureRatio) -> Self {
        self.failure_ratio = Some(trip);
        self
    }

    /// How operations go through once the probe succeeded (default [`Reopening::DEFAULT`]):
    /// see [`Reopening`].
    #[must_use]
    pub const fn reopening(mut self, reopening: Reopening) -> Self {
        self.reopening = reopening;
        self
    }

    /// The reopening rule.
    #[must_use]
    pub const fn reopening_rule(&self) -> Reopening {
        self.reopening
    }

    /// The failure-ratio trip, if it is on.
    #[must_use]
    pub const fn trip(&self) -> Option<FailureRatio> {
        self.failure_ratio
    }
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig::new()
    }
}

/// The optional failure-ratio trip: a classic circuit breaker for servers that fail without
/// saying anything (no `Retry-After`, no quota).
///
/// Rule (Polly v8's circuit breaker, whose defaults these are): the gate closes for
/// `break_duration` when, within a sliding `window` of `buckets` buckets, the attempts that
/// ended failed number at least `ratio_per_mille / 1000` of the attempts that ended, and at
/// least `minimum_throughput` attempts ended; then one half-open probe decides (a failed probe
/// closes it for another `break_duration`). Results of attempts started before the gate last
/// opened update the counts only: they neither trip the gate nor reopen it. The counts start
/// afresh when the gate opens.
///
/// | setting | default (Polly v8) |
/// |---|---|
/// | [`ratio_per_mille`](Self::ratio_per_mille) | 100 (a ratio of 0.1) |
/// | [`minimum_throughput`](Self::minimum_throughput) | 100 |
/// | [`window`](Self::window) | 30 s |
/// | [`buckets`](Self::buckets) | 10 (3 s each) |
/// | [`break_duration`](Self::break_duration) | 5 s |
///
/// ```
/// use backstop_core::{FailureRatio, GateConfig, OriginGate};
/// use core::time::Duration;
///
/// // Break for 10 s when half of at least 20 attempts in the last 10 s failed.
/// let trip = FailureRatio::new()
///     .ratio_per_mille(500)
///     .minimum_throughput(20)
///     .window(Duration::from_secs(10))
///     .break_duration(Duration::from_secs(10));
/// let gate = OriginGate::new(GateConfig::new().failure_ratio(trip))?;
/// assert_eq!(gate.config().trip(), Some(trip));
/// # Ok::<(), backstop_core::GateConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FailureRatio {
    pub(super) ratio_per_mille: u16,
    pub(super) minimum_throughput: u32,
    pub(super) window: Duration,
    pub(super) buckets: u8,
    pub(super) break_duration: Duration,
}

impl FailureRatio {
    /// The most buckets the window can be divided into: the gate's fixed-size state holds
    /// this many.
    pub const MAX_BUCKETS: u8 = MAX_BUCKETS;

    /// Polly v8's defaults: a ratio of 0.1, 100 attempts at least, a 30 s window in 10
    /// buckets, a 5 s break.
    #[must_use]
    pub const fn new() -> Self {
        FailureRatio {
            ratio_per_mille: 100,
            minimum_throughput: 100,
            window: Duration::from_secs(30),
            buckets: 10,
            break_duration: Duration::from_secs(5),
        }
    }

    /// The failure ratio that trips the gate, in thousandths (1 to 1000; default 100, a ratio
    /// of 0.1).
    #[must_use]
    pub const fn ratio_per_mille(mut self, ratio: u16) -> Self {
        self.ratio_per_mille = ratio;
        self
    }

    /// The attempts that must have ended in the window before the ratio can trip the gate (at
    /// least 1; default 100).
    #[must_use]
    pub const fn minimum_throughput(mut self, n: u32) -> Self {
        self.minimum_throughput = n;
        self
    }

    /// The sliding window's length (1 ms to 1 day; default 30 s). It is divided into
    /// [`buckets`](Self::buckets) of `window / buckets` (rounded down to a nanosecond), and
    /// slides a bucket at a time.
    #[must_use]
    pub const fn window(mut self, d: Duration) -> Self {
        self.window = d;
        self
    }

    /// The buckets the window is divided into (1 to [`Self::MAX_BUCKETS`], 16; default 10).
    #[must_use]
    pub const fn buckets(mut self, n: u8) -> Self {
        self.buckets = n;
        self
    }

    /// How long a trip (or a failed half-open probe) closes the gate (1 ns to 1 day; default
    /// 5 s).
    #[must_use]
    pub const fn break_duration(mut self, d: Duration) -> Self {
        self.break_duration = d;
        self
    }

    pub(super) const fn check(&self) -> Result<(), GateConfigError> {
        if self.ratio_per_mille == 0 || self.ratio_per_mille > 1000 {
            return Err(GateConfigError::RatioOutOfRange(self.ratio_per_mille));
        }
        if self.minimum_throughput == 0 {
            return Err(GateConfigError::ZeroMinimumThroughput);
        }
        if self.buckets == 0 || self.buckets > MAX_BUCKETS {
            return Err(GateConfigError::BucketsOutOfRange(self.buckets));
        }
        if self.window.as_nanos() < 1_000_000 || self.window.as_nanos() > DAY.as_nanos() {
            return Err(GateConfigError::WindowOutOfRange);
        }
        if self.break_duration.is_zero() || self.break_duration.as_nanos() > DAY.as_nanos() {
            return Err(GateConfigError::BreakOutOfRange);
        }
        Ok(())
    }
}

impl Default for FailureRatio {
    fn default() -> Self {
        FailureRatio::new()
    }
}

/// Why an [`OriginGate`](super::OriginGate) could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GateConfigError {
    /// The spread was longer than a day.
    SpreadOutOfRange,
    /// The await-probe recheck was zero (callers would ask again at once, forever) or longer
    /// than a day.
    RecheckOutOfRange,
    /// [`FailureRatio`]: the ratio was 0 or above 1000 thousandths.
    RatioOutOfRange(u16),
    /// [`FailureRatio`]: the minimum throughput was 0.
    ZeroMinimumThroughput,
    /// [`FailureRatio`]: the bucket count was 0 or above [`FailureRatio::MAX_BUCKETS`].
    BucketsOutOfRange(u8),
    /// [`FailureRatio`]: the window was shorter than 1 ms or longer than a day.
    WindowOutOfRange,
    /// [`FailureRatio`]: the break was zero or longer than a day.
    BreakOutOfRange,
    /// [`Reopening`]: the ramp or the doubling interval was shorter than 1 ms or longer than a
    /// day.
    ReopeningOutOfRange,
}

impl core::fmt::Display for GateConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GateConfigError::SpreadOutOfRange => {
                f.write_str("the gate's reopening spread must be at most 1 day")
            }
            GateConfigError::RecheckOutOfRange => {
                f.write_str("the gate's await-probe recheck must be between 1 nanosecond and 1 day")
            }
            GateConfigError::RatioOutOfRange(r) => write!(
                f,
                "the failure ratio is {r} per mille: it must be 1 to 1000"
            ),
            GateConfigError::ZeroMinimumThroughput => {
                f.write_str("the failure-ratio trip's minimum throughput must be at least 1")
            }
            GateConfigError::BucketsOutOfRange(n) => write!(
                f,
                "the failure-ratio window has {n} buckets: it must have 1 to {MAX_BUCKETS}"
            ),
            GateConfigError::WindowOutOfRange => {
                f.write_str("the failure-ratio window must be between 1 millisecond and 1 day")
            }
            GateConfigError::BreakOutOfRange => {
                f.write_str("the failure-ratio break must be between 1 nanosecond and 1 day")
            }
            GateConfigError::ReopeningOutOfRange => f.write_str(
                "the gate's reopening ramp or doubling interval must be between 1 millisecond and 1 day",
            ),
        }
    }
}

impl core::error::Error for GateConfigError {}
