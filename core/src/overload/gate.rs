//! The origin gate of issue 21: [`OriginGate`], whose documentation holds the rules.

mod config;
mod reopening;

use config::MAX_BUCKETS;
pub use config::{FailureRatio, GateConfig, GateConfigError};
pub use reopening::Reopening;
use reopening::SLOWEST_START;

use core::num::NonZeroU64;
use core::sync::atomic::Ordering;
use core::time::Duration;

use portable_atomic::{AtomicBool, AtomicU64, AtomicU8};

use super::{Ask, Gate, GateAdmission, GateSignal, Slot};
use crate::time::{nanos_saturating, Instant};

/// 2^64 / φ, SplitMix64's increment: successive tickets step the offset by the golden ratio.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Why an [`OriginGate`] is closed (or half-open).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GateCloseReason {
    /// The server said to back off: `Retry-After` on a 429 or 503 (or on a 403 that is a
    /// rate-limit answer), or an exhausted rate-limit quota with its reset.
    BackOff,
    /// The failure-ratio trip: too many of the window's attempts failed.
    FailureRatio,
    /// A half-open probe failed without a back-off signal, with the failure-ratio trip on.
    FailedProbe,
}

impl GateCloseReason {
    const fn code(self) -> u8 {
        match self {
            GateCloseReason::BackOff => 0,
            GateCloseReason::FailureRatio => 1,
            GateCloseReason::FailedProbe => 2,
        }
    }

    const fn from_code(code: u8) -> Self {
        match code {
            1 => GateCloseReason::FailureRatio,
            2 => GateCloseReason::FailedProbe,
            _ => GateCloseReason::BackOff,
        }
    }
}

/// What an [`OriginGate`] is doing at an instant, for graphs and events.
///
/// ```
/// use backstop_core::{Gate, GateCloseReason, GateSignal, GateState, Instant, OriginGate};
/// use core::time::Duration;
///
/// let gate = OriginGate::default();
/// let t = Instant::from_secs(10);
/// assert_eq!(gate.state(t), GateState::Open);
/// let signal = GateSignal {
///     started: t,
///     back_off: Some(Duration::from_secs(2)),
///     failed: true,
///     probe: false,
/// };
/// gate.on_attempt_end(t, signal);
/// assert_eq!(
///     gate.state(t),
///     GateState::Closed {
///         until: Instant::from_secs(12),
///         spread: Duration::from_millis(200), // a tenth of the 2 s signal
///         reason: GateCloseReason::BackOff,
///     }
/// );
/// assert_eq!(
///     gate.state(Instant::from_secs(12)),
///     GateState::HalfOpen { probe_lease: None, reason: GateCloseReason::BackOff }
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GateState {
    /// Every attempt is admitted.
    Open,
    /// No attempt is admitted before `until`; callers return over `[until, until + spread]`.
    Closed {
        /// The closing's end.
        until: Instant,
        /// The most a caller's reopening instant is spread past `until`.
        spread: Duration,
        /// Why the gate closed.
        reason: GateCloseReason,
    },
    /// The closing has ended: the next caller is the probe, unless one is in flight.
    HalfOpen {
        /// When the lease of the probe in flight ends, if one is in flight.
        probe_lease: Option<Instant>,
        /// Why the gate closed.
        reason: GateCloseReason,
    },
    /// The probe succeeded at `since`: callers go one at a time, at a growing pace
    /// ([`Reopening`]).
    Reopening {
        /// When the probe's success started the reopening.
        since: Instant,
        /// The next free slot (at or before now: the next caller goes at once).
        next_slot: Instant,
    },
}

/// A gate for one origin (scheme, host, port): a server's back-off signal pauses every
/// operation to that origin, the callers return spread over the reopening, and one probe
/// tests the server before the others go.
///
/// Shared by reference (`&OriginGate` and `Arc<OriginGate>` are gates), `Send + Sync`,
/// allocation-free, driven only by the `now` it is given; [`OriginGate::new`] is a `const fn`,
/// so a gate can be a `static`. The rules:
///
/// - **One gate per origin** (scheme, host, port), shared by every operation to it: the driver
///   keeps one per origin it talks to (or is given one); the gate knows nothing of origins.
/// - **Closes** when an attempt's end carries a back-off signal ([`GateSignal::back_off`]: a
///   `Retry-After` on a 429 or 503 (or a 403 that is a rate-limit answer), or an exhausted
///   quota's reset, as the machine reads and
///   cuts it): closed until `now + back_off`. A later signal that reaches further extends the
///   closing; one that ends sooner does not shorten it. A zero back-off does not close an open
///   gate (there is nothing to wait for).
/// - **While closed** ([`GateAdmission::Closed`]): every caller is told its own reopening
///   instant in `[until, until + spread]`, `spread` being `min(`[`GateConfig::spread`]`,
///   length / 10)` for the signal of `length` that set `until`. No caller is admitted before
///   `until`.
/// - **Half-open** from `until` on: the first caller to ask is the probe
///   ([`GateAdmission::Probe`]); while its answer is outstanding and its `lease` runs, the others
///   are told to ask again ([`GateAdmission::AwaitProbe`]) after `U[recheck, 2 × recheck]`
///   ([`GateConfig::await_probe_recheck`]). A probe whose lease ran out without an answer (its
///   operation was dropped, say) is replaced by the next caller.
/// - **The probe's answer:** another back-off signal closes the gate again (until `now +
///   back_off`); a success reopens it at a pace that starts at the rate operations asked
///   while it was closed (each counted once, [`Ask::returning`]) and grows until the gate is
///   open for all ([`Reopening`]: a slow start, so that the recovering server is not handed
///   the whole backlog at once). While reopening, the gate answers signals as an open gate
///   does. A failure without a back-off signal (a 500, a reset connection) closes it again for the break when the failure-ratio trip is on (a
///   circuit breaker's half-open failure, as in Polly), and opens it when the trip is off:
///   without the trip the gate honours only what the server says, and a failure without a
///   back-off is the retry policy's business.
/// - **Failure-ratio trip** (off by default; [`FailureRatio`]): an open gate closes for the
///   break when the window's failures reach the ratio over at least the minimum throughput;
///   then one half-open probe. Results of attempts started before the gate last opened update
///   the counts only. Back-off signals close the gate whenever their attempt started: the
///   server's word is dated by its response.
///
/// ## The spread without a random number generator
///
/// Every `Closed` and `AwaitProbe` answer takes the next ticket `k` of a per-gate counter; the
/// caller's offset within a span `s` is `⌊x_k · (s + 1) / 2^64⌋` with `x_k = seed + k · γ
/// (mod 2^64)`, γ = `0x9e3779b97f4a7c15` (2^64 / φ): SplitMix64's Weyl sequence, without the
/// output mix. The offsets are the golden-ratio (Kronecker) sequence, whose first `n` points
/// (from any `k`) cut the span into gaps of at most three lengths, the smallest never much
/// below `0.38 · s / n` (the three-gap theorem): callers are spread nearly evenly, where
/// independent draws would put two of 40 callers in the same millisecond of a 1 s spread
/// about half the time. The answers depend only on the configuration and the sequence of calls
/// (with their `now`s), so a run on virtual time is reproducible. [`GateConfig::seed`] rotates
/// the sequence, so that processes seeded differently do not return in step: without a seed
/// the gate starts at 0, which every process shares, so a driver gives each gate a seed drawn
/// from its own randomness unless the run must be reproducible (backstop's `OriginGates` does).
///
/// ## Concurrency
///
/// An open gate admits with one atomic load. Everything else (closing, probing, the
/// failure-ratio window) happens under a small spin lock (an `AtomicBool`), held for a few
/// loads and stores (and at most [`FailureRatio::MAX_BUCKETS`] bucket updates): the fields it
/// guards are atomics accessed `Relaxed` inside it, ordered by the lock's acquire and release,
/// so the crate stays free of `unsafe`. A thread preempted while holding the lock makes the others
/// spin until it runs again: on a single-core target with preemptive priorities, do not share
/// a gate between an interrupt handler and the code it interrupts. On targets without
/// compare-and-swap the lock goes through `portable-atomic` (the `critical-section` feature).
///
/// ## Example
///
/// ```
/// use backstop_core::{Ask, Gate, GateAdmission, GateSignal, Instant, OriginGate};
/// use core::time::Duration;
///
/// let gate = OriginGate::default();
/// let ask = Ask::new(Duration::from_secs(10)); // a probe's lease
/// let t0 = Instant::from_secs(100);
/// assert_eq!(gate.admit(t0, ask), GateAdmission::Open);
/// // A 429 with `Retry-After: 30` closes the gate for every operation to the origin.
/// gate.on_attempt_end(t0, GateSignal {
///     started: t0,
///     back_off: Some(Duration::from_secs(30)),
///     failed: true,
///     probe: false,
/// });
/// let until = Instant::from_secs(130);
/// let (GateAdmission::Closed(a), GateAdmission::Closed(b)) =
///     (gate.admit(t0, ask), gate.admit(t0, ask))
/// else {
///     unreachable!("the gate is closed")
/// };
/// // Each caller returns at its own instant within [until, until + 1 s].
/// assert!(a >= until && b >= until && a != b);
/// assert!(a <= until.saturating_add(Duration::from_secs(1)));
/// // At the reopening, the first caller is the probe, the others await its answer.
/// let later = a.max(b);
/// assert_eq!(gate.admit(later, ask), GateAdmission::Probe);
/// assert!(matches!(gate.admit(later, ask), GateAdmission::AwaitProbe(_)));
/// // The probe succeeds: the gate reopens at the pace the closing measured (two callers
/// // in 30 s: one a second at first, the most slow a start gets), growing from there.
/// gate.on_attempt_end(later, GateSignal {
///     started: later,
///     back_off: None,
///     failed: false,
///     probe: true,
/// });
/// assert_eq!(gate.admit(later, ask), GateAdmission::Open);
/// let GateAdmission::Paced(slot) = gate.admit(later, ask) else {
///     unreachable!("the next slot is a second away")
/// };
/// assert_eq!(slot.at, later.saturating_add(Duration::from_secs(1)));
/// // Its holder goes at its slot.
/// assert_eq!(gate.admit(slot.at, ask.holding(Some(slot))), GateAdmission::Open);
/// assert_eq!((gate.closes(), gate.reopens()), (1, 1));
/// ```
#[derive(Debug)]
pub struct OriginGate {
    config: GateConfig,
    spread: u64,
    recheck: u64,
    trip: Option<Trip>,
    /// `true` while the gate is open: the lock-free fast path of [`Gate::admit`].
    open: AtomicBool,
    /// The spin lock around every field below.
    lock: AtomicBool,
    /// The closing's end, in nanoseconds (meaningful while not `open`).
    until: AtomicU64,
    /// The closing's spread, in nanoseconds.
    reopen_spread: AtomicU64,
    /// Why the gate closed ([`GateCloseReason::code`]).
    reason: AtomicU8,
    /// The end of the lease of the probe in flight: a probe is in flight while `now` is
    /// before it (0: none).
    probe_until: AtomicU64,
    /// When the probe of `probe_until` was admitted: what tells it from a later probe when it
    /// is handed back ([`Gate::probe_not_sent`]).
    probe_admitted: AtomicU64,
    /// When the gate last opened (0 at first): results of attempts started before it update
    /// the failure counts only.
    opened_at: AtomicU64,
    /// The next ticket of the spread sequence.
    tickets: AtomicU64,
    /// When the closing began (from open or reopening), and how many operations were told
    /// `Closed` since, each counted once ([`Ask::returning`]): the starting pace of the
    /// reopening.
    closed_at: AtomicU64,
    askers: AtomicU64,
    /// `true` while reopening at a pace (then `open` is `false`).
    pacing: AtomicBool,
    /// When the reopening began, its next free slot and its starting interval.
    pace_from: AtomicU64,
    next_slot: AtomicU64,
    first_interval: AtomicU64,
    closes: AtomicU64,
    reopens: AtomicU64,
    buckets: [Bucket; MAX_BUCKETS as usize],
}

/// The failure-ratio trip in the integers the gate computes with.
#[derive(Clone, Copy, Debug)]
struct Trip {
    ratio_per_mille: u64,
    minimum_throughput: u64,
    bucket_nanos: NonZeroU64,
    buckets: u64,
    break_nanos: u64,
}

/// One bucket of the failure-ratio window: its bucket number (time since the epoch in bucket
/// lengths) and its counts (failures in the high 32 bits, attempts in the low 32), both
/// guarded by the gate's lock.
#[derive(Debug)]
struct Bucket {
    number: AtomicU64,
    counts: AtomicU64,
}

impl Bucket {
    const fn new() -> Self {
        Bucket {
            number: AtomicU64::new(0),
            counts: AtomicU64::new(0),
        }
    }
}

/// The gate's lock, released when dropped.
struct Locked<'a>(&'a AtomicBool);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl OriginGate {
    /// A gate, open, with `config` checked.
    ///
    /// ```
    /// use backstop_core::{GateConfig, GateConfigError, OriginGate};
    /// use core::time::Duration;
    ///
    /// static GATE: OriginGate = match OriginGate::new(GateConfig::new()) {
    ///     Ok(gate) => gate,
    ///     Err(_) => panic!("the defaults are valid"),
    /// };
    /// let zero_recheck = GateConfig::new().await_probe_recheck(Duration::ZERO);
    /// assert_eq!(
    ///     OriginGate::new(zero_recheck).err(),
    ///     Some(GateConfigError::RecheckOutOfRange)
    /// );
    /// # let _ = &GATE;
    /// ```
    pub const fn new(config: GateConfig) -> Result<Self, GateConfigError> {
        if config.spread.as_nanos() > config::DAY.as_nanos() {
            return Err(GateConfigError::SpreadOutOfRange);
        }
        if config.recheck.is_zero() || config.recheck.as_nanos() > config::DAY.as_nanos() {
            return Err(GateConfigError::RecheckOutOfRange);
        }
        if let Err(e) = config.reopening.check() {
            return Err(e);
        }
        let trip = match config.failure_ratio {
            None => None,
            Some(f) => {
                if let Err(e) = f.check() {
                    return Err(e);
                }
                // At least 1 ms / 16 buckets: never zero.
                let per_bucket = (f.window.as_nanos() / f.buckets as u128) as u64;
                let Some(bucket_nanos) = NonZeroU64::new(per_bucket) else {
                    return Err(GateConfigError::WindowOutOfRange);
                };
                Some(Trip {
                    ratio_per_mille: f.ratio_per_mille as u64,
                    minimum_throughput: f.minimum_throughput as u64,
                    bucket_nanos,
                    buckets: f.buckets as u64,
                    break_nanos: nanos_saturating(f.break_duration),
                })
            }
        };
        Ok(OriginGate::build(config, trip))
    }

    /// The gate for a checked `config` and its trip.
    const fn build(config: GateConfig, trip: Option<Trip>) -> Self {
        OriginGate {
            config,
            spread: nanos_saturating(config.spread),
            recheck: nanos_saturating(config.recheck),
            trip,
            open: AtomicBool::new(true),
            lock: AtomicBool::new(false),
            until: AtomicU64::new(0),
            reopen_spread: AtomicU64::new(0),
            reason: AtomicU8::new(0),
            probe_until: AtomicU64::new(0),
            probe_admitted: AtomicU64::new(0),
            opened_at: AtomicU64::new(0),
            tickets: AtomicU64::new(0),
            closed_at: AtomicU64::new(0),
            askers: AtomicU64::new(0),
            pacing: AtomicBool::new(false),
            pace_from: AtomicU64::new(0),
            next_slot: AtomicU64::new(0),
            first_interval: AtomicU64::new(0),
            closes: AtomicU64::new(0),
            reopens: AtomicU64::new(0),
            buckets: [const { Bucket::new() }; MAX_BUCKETS as usize],
        }
    }

    /// The configuration the gate was built with.
    #[must_use]
    pub const fn config(&self) -> GateConfig {
        self.config
    }

    /// What the gate is doing at `now`. Reads only.
    ///
    /// ```
    /// use backstop_core::{GateState, Instant, OriginGate};
    ///
    /// assert_eq!(OriginGate::default().state(Instant::ZERO), GateState::Open);
    /// ```
    #[must_use]
    pub fn state(&self, now: Instant) -> GateState {
        if self.open.load(Ordering::Acquire) {
            return GateState::Open;
        }
        let _locked = self.lock();
        if self.open.load(Ordering::Relaxed) {
            return GateState::Open;
        }
        let now = now.nanos();
        if self.pacing.load(Ordering::Relaxed) {
            return GateState::Reopening {
                since: Instant::from_nanos(self.pace_from.load(Ordering::Relaxed)),
                next_slot: Instant::from_nanos(self.next_slot.load(Ordering::Relaxed)),
            };
        }
        let until = self.until.load(Ordering::Relaxed);
        let reason = GateCloseReason::from_code(self.reason.load(Ordering::Relaxed));
        if now < until {
            GateState::Closed {
                until: Instant::from_nanos(until),
                spread: Duration::from_nanos(self.reopen_spread.load(Ordering::Relaxed)),
                reason,
            }
        } else {
            let lease = self.probe_until.load(Ordering::Relaxed);
            GateState::HalfOpen {
                probe_lease: (now < lease).then_some(Instant::from_nanos(lease)),
                reason,
            }
        }
    }

    /// Whether the gate holds nothing back at `now`: replaced by a fresh, open gate, the
    /// origin's next operations would go as this gate lets them. What a driver that keeps
    /// gates in a bounded map asks before evicting one that no operation holds (an operation
    /// waiting on the gate holds it). Reads only.
    ///
    /// - **Open:** yes.
    /// - **Closed:** no, until the closing's end.
    /// - **Half-open:** yes once the closing's end plus its spread has passed (every caller
    ///   told `Closed` was told to come back by then) and no probe's lease runs. Such a gate
    ///   still holds a probe for its next caller, but the server's pause is over, and nobody
    ///   has asked since: a gate nobody asks again would stay half-open forever, and a map
    ///   full of them would keep every new origin's gate out. Evicted, the origin's next
    ///   operations go without one probe first.
    /// - **Reopening:** yes once every slot it gave is past and the pace has doubled: its next
    ///   caller would open it for all.
    ///
    /// ```
    /// use backstop_core::{Gate, GateSignal, GateState, Instant, OriginGate};
    /// use core::time::Duration;
    ///
    /// let gate = OriginGate::default();
    /// let t = Instant::from_secs(100);
    /// assert!(gate.holds_nothing_back(t));
    /// // A 429 with `Retry-After: 60`: closed for 60 s, callers spread over the 1 s after.
    /// gate.on_attempt_end(t, GateSignal {
    ///     started: t,
    ///     back_off: Some(Duration::from_secs(60)),
    ///     failed: true,
    ///     probe: false,
    /// });
    /// assert!(!gate.holds_nothing_back(Instant::from_secs(160)));
    /// // An hour later nobody has asked: half-open still, with nothing to hold back.
    /// let later = Instant::from_secs(3_700);
    /// assert!(matches!(gate.state(later), GateState::HalfOpen { probe_lease: None, .. }));
    /// assert!(gate.holds_nothing_back(later));
    /// ```
    #[must_use]
    pub fn holds_nothing_back(&self, now: Instant) -> bool {
        if self.open.load(Ordering::Acquire) {
            return true;
        }
        let _locked = self.lock();
        if self.open.load(Ordering::Relaxed) {
            return true;
        }
        let now = now.nanos();
        if self.pacing.load(Ordering::Relaxed) {
            let elapsed = now.saturating_sub(self.pace_from.load(Ordering::Relaxed));
            return self.next_slot.load(Ordering::Relaxed) <= now
                && self.config.reopening.doubled(elapsed);
        }
        let returned = self
            .until
            .load(Ordering::Relaxed)
            .saturating_add(self.reopen_spread.load(Ordering::Relaxed));
        now >= returned && now >= self.probe_until.load(Ordering::Relaxed)
    }

    /// How many times the gate has closed: from open, or again from half-open (an extension
    /// of a closing in force is not a new one). A driver compares it before and after
    /// [`Gate::on_attempt_end`] to tell that the call closed the gate.
    ///
    /// ```
    /// use backstop_core::{Gate, GateSignal, Instant, OriginGate};
    /// use core::time::Duration;
    ///
    /// let gate = OriginGate::default();
    /// let now = Instant::ZERO;
    /// let back_off = |d| GateSignal {
    ///     started: now,
    ///     back_off: Some(d),
    ///     failed: true,
    ///     probe: false,
    /// };
    /// gate.on_attempt_end(now, back_off(Duration::from_secs(5)));
    /// gate.on_attempt_end(now, back_off(Duration::from_secs(8))); // extends the closing
    /// assert_eq!(gate.closes(), 1);
    /// ```
    #[must_use]
    pub fn closes(&self) -> u64 {
        self.closes.load(Ordering::Relaxed)
    }

    /// How many times the gate has opened again (a probe's success, or its failure without a
    /// back-off signal when the failure-ratio trip is off).
    ///
    /// ```
    /// use backstop_core::{Instant, OriginGate};
    ///
    /// assert_eq!(OriginGate::default().reopens(), 0);
    /// ```
    #[must_use]
    pub fn reopens(&self) -> u64 {
        self.reopens.load(Ordering::Relaxed)
    }

    /// The failure-ratio window's `(failures, attempts)` at `now` (both zero when the trip is
    /// off). Reads only.
    ///
    /// ```
    /// use backstop_core::{FailureRatio, Gate, GateConfig, GateSignal, Instant, OriginGate};
    ///
    /// let gate = OriginGate::new(GateConfig::new().failure_ratio(FailureRatio::new()))?;
    /// let now = Instant::ZERO;
    /// for failed in [true, false, false] {
    ///     let signal = GateSignal { started: now, back_off: None, failed, probe: false };
    ///     gate.on_attempt_end(now, signal);
    /// }
    /// assert_eq!(gate.failure_counts(now), (1, 3));
    /// # Ok::<(), backstop_core::GateConfigError>(())
    /// ```
    #[must_use]
    pub fn failure_counts(&self, now: Instant) -> (u64, u64) {
        let Some(trip) = self.trip else {
            return (0, 0);
        };
        let _locked = self.lock();
        self.window_counts(&trip, now.nanos())
    }

    fn lock(&self) -> Locked<'_> {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.lock.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
        Locked(&self.lock)
    }

    /// The next caller's offset in `[0, span]` (see the module's rules). Under the lock.
    fn offset(&self, span: u64) -> u64 {
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let x = self
            .config
            .seed
            .unwrap_or(0)
            .wrapping_add(ticket.wrapping_mul(GAMMA));
        ((x as u128 * (span as u128 + 1)) >> 64) as u64
    }

    /// The spread of a closing set by a signal of `length` nanoseconds.
    fn spread_for(&self, length: u64) -> u64 {
        self.spread.min(length / 10)
    }

    /// Closes the gate at `now` (from open, reopening or half-open) until `until`. Under the
    /// lock.
    fn close(&self, now: u64, until: u64, length: u64, reason: GateCloseReason) {
        if self.open.load(Ordering::Relaxed) || self.pacing.load(Ordering::Relaxed) {
            // A new closing: its pace is measured afresh (a probe closing it again goes on
            // measuring the same one).
            self.closed_at.store(now, Ordering::Relaxed);
            self.askers.store(0, Ordering::Relaxed);
        }
        self.pacing.store(false, Ordering::Relaxed);
        self.set_closing(until, length, reason);
        self.probe_until.store(0, Ordering::Relaxed);
        self.closes.fetch_add(1, Ordering::Relaxed);
        self.open.store(false, Ordering::Release);
    }

    /// Whether `ask` comes from an operation the closing in force has not counted yet: a new
    /// caller, the holder of a slot of the reopening the closing cut short (slots are given
    /// only while reopening, before the closing began), or one back from a hold given before
    /// the closing began. A hold given at the very instant the closing began counts as the
    /// closing's own: at worst an operation goes uncounted, and the pace is slower. Under the
    /// lock.
    fn new_in_closing(&self, ask: Ask) -> bool {
        let closed_at = self.closed_at.load(Ordering::Relaxed);
        ask.slot.is_some() || ask.returning.is_none_or(|held| held.nanos() < closed_at)
    }

    /// The closing's end, spread and reason. Under the lock.
    fn set_closing(&self, until: u64, length: u64, reason: GateCloseReason) {
        self.until.store(until, Ordering::Relaxed);
        self.reopen_spread
            .store(self.spread_for(length), Ordering::Relaxed);
        self.reason.store(reason.code(), Ordering::Relaxed);
    }

    /// Reopens the gate at `now`: at a pace, or for all at once ([`Reopening::AtOnce`]).
    /// Under the lock.
    fn reopen(&self, now: u64) {
        self.opened_at.store(now, Ordering::Relaxed);
        self.probe_until.store(0, Ordering::Relaxed);
        if self.trip.is_some() {
            for bucket in &self.buckets {
                bucket.counts.store(0, Ordering::Relaxed);
            }
        }
        self.reopens.fetch_add(1, Ordering::Relaxed);
        if self.config.reopening.paces() {
            let closed = now.saturating_sub(self.closed_at.load(Ordering::Relaxed));
            let askers = self.askers.load(Ordering::Relaxed).max(1);
            let first = (closed / askers).clamp(1, SLOWEST_START);
            self.first_interval.store(first, Ordering::Relaxed);
            self.pace_from.store(now, Ordering::Relaxed);
            self.next_slot.store(now, Ordering::Relaxed);
            self.pacing.store(true, Ordering::Relaxed);
        } else {
            self.open.store(true, Ordering::Release);
        }
    }

    /// The answer of a reopening gate at `now` to `ask` (see [`Reopening`]). Under the lock.
    fn paced(&self, now: u64, ask: Ask) -> GateAdmission {
        let reopening = self.reopens.load(Ordering::Relaxed);
        if ask.slot.is_some_and(|s| s.reopening == reopening) {
            return GateAdmission::Open;
        }
        let from = self.pace_from.load(Ordering::Relaxed);
        let slot = self.next_slot.load(Ordering::Relaxed).max(now);
        let rule = self.config.reopening;
        if slot == now && rule.doubled(now - from) {
            // No caller waits and the pace has doubled: open for all.
            self.pacing.store(false, Ordering::Relaxed);
            self.open.store(true, Ordering::Release);
            return GateAdmission::Open;
        }
        let paced = GateAdmission::Paced(Slot {
            at: Instant::from_nanos(slot),
            reopening,
        });
        if slot > now && ask.deadline.is_some_and(|d| slot >= d.nanos()) {
            // The caller cannot use it: nothing is set aside.
            return paced;
        }
        let interval = rule.interval(self.first_interval.load(Ordering::Relaxed), slot - from);
        self.next_slot
            .store(slot.saturating_add(interval), Ordering::Relaxed);
        if slot == now {
            GateAdmission::Open
        } else {
            paced
        }
    }

    /// The bucket that holds bucket number `number`.
    fn bucket(&self, trip: &Trip, number: u64) -> Option<&Bucket> {
        // `number % buckets` is below `MAX_BUCKETS`: `None` cannot happen.
        self.buckets.get((number % trip.buckets) as usize)
    }

    /// Counts an attempt that ended at `now`. Under the lock.
    fn record(&self, trip: &Trip, now: u64, failed: bool) {
        let number = now / trip.bucket_nanos;
        let Some(bucket) = self.bucket(trip, number) else {
            return;
        };
        let held = bucket.number.load(Ordering::Relaxed);
        let counts = if held == number {
            bucket.counts.load(Ordering::Relaxed)
        } else if held < number {
            // The bucket's counts have left the window: `number` takes it over.
            bucket.number.store(number, Ordering::Relaxed);
            0
        } else {
            // A `now` a whole window behind the newest bucket: its result has expired.
            return;
        };
        let failures = ((counts >> 32) as u32).saturating_add(failed as u32);
        let attempts = (counts as u32).saturating_add(1);
        bucket.counts.store(
            ((failures as u64) << 32) | attempts as u64,
            Ordering::Relaxed,
        );
    }

    /// The window's `(failures, attempts)` at `now`. Under the lock.
    fn window_counts(&self, trip: &Trip, now: u64) -> (u64, u64) {
        let newest = now / trip.bucket_nanos;
        let mut sums = (0u64, 0u64);
        for bucket in self.buckets.iter().take(trip.buckets as usize) {
            let number = bucket.number.load(Ordering::Relaxed);
            if number <= newest && newest - number < trip.buckets {
                let counts = bucket.counts.load(Ordering::Relaxed);
                sums.0 += counts >> 32;
                sums.1 += counts & u64::from(u32::MAX);
            }
        }
        sums
    }

    /// Whether the window's counts at `now` trip the gate. Under the lock.
    fn tripped(&self, trip: &Trip, now: u64) -> bool {
        let (failures, attempts) = self.window_counts(trip, now);
        attempts >= trip.minimum_throughput && failures * 1000 >= trip.ratio_per_mille * attempts
    }
}

impl Default for OriginGate {
    /// A gate with the default configuration ([`GateConfig::new`]).
    fn default() -> Self {
        // The defaults pass every check of `new`, and have no trip.
        OriginGate::build(GateConfig::new(), None)
    }
}

impl Gate for OriginGate {
    /// Open: [`GateAdmission::Open`] (one atomic load). Closed: [`GateAdmission::Closed`] at the
    /// caller's own reopening instant. Half-open: [`GateAdmission::Probe`] for the first caller
    /// (whose lease then runs until `now + lease`; a zero lease makes no probe exclusive),
    /// [`GateAdmission::AwaitProbe`] for the others while the probe's answer is outstanding
    /// and its lease runs (`ask.lease`). Reopening: [`GateAdmission::Open`] for the holder of a
    /// slot of this reopening and for a caller that finds the next slot free, else
    /// [`GateAdmission::Paced`] with the next free slot (set aside unless it is at or past
    /// `ask.deadline`).
    fn admit(&self, now: Instant, ask: Ask) -> GateAdmission {
        if self.open.load(Ordering::Acquire) {
            return GateAdmission::Open;
        }
        let _locked = self.lock();
        if self.open.load(Ordering::Relaxed) {
            return GateAdmission::Open;
        }
        let now = now.nanos();
        if self.pacing.load(Ordering::Relaxed) {
            return self.paced(now, ask);
        }
        let until = self.until.load(Ordering::Relaxed);
        if now < until {
            if self.new_in_closing(ask) {
                self.askers.fetch_add(1, Ordering::Relaxed);
            }
            let spread = self.reopen_spread.load(Ordering::Relaxed);
            let at = until.saturating_add(self.offset(spread));
            return GateAdmission::Closed(Instant::from_nanos(at));
        }
        if now < self.probe_until.load(Ordering::Relaxed) {
            let at = now
                .saturating_add(self.recheck)
                .saturating_add(self.offset(self.recheck));
            return GateAdmission::AwaitProbe(Instant::from_nanos(at));
        }
        self.probe_until.store(
            now.saturating_add(nanos_saturating(ask.lease)),
            Ordering::Relaxed,
        );
        self.probe_admitted.store(now, Ordering::Relaxed);
        GateAdmission::Probe
    }

    /// The probe admitted at `admitted` was not sent (the rate limiter held it back, or its
    /// operation ended first): its lease goes, so the next caller may probe at once instead of
    /// waiting for the lease to run out. A later probe (admitted after this one's lease ran
    /// out, or after the gate closed and opened again) keeps its lease.
    fn probe_not_sent(&self, admitted: Instant) {
        let _locked = self.lock();
        if self.probe_admitted.load(Ordering::Relaxed) == admitted.nanos() {
            self.probe_until.store(0, Ordering::Relaxed);
        }
    }

    /// Counts the attempt (with the failure-ratio trip on), then: a back-off signal closes the
    /// gate or extends its closing; a probe's answer without one opens the gate (or, failed
    /// with the trip on, closes it for the break); a failure may trip an open gate. A probe
    /// answers the half-open it was admitted in only (`signal.started` at or after the
    /// closing's end); otherwise its result is an ordinary one.
    fn on_attempt_end(&self, now: Instant, signal: GateSignal) {
        let no_back_off = signal.back_off.is_none_or(|d| d.is_zero());
        if self.trip.is_none() && no_back_off && self.open.load(Ordering::Acquire) {
            // Nothing to count, and nothing that changes an open gate: no lock.
            return;
        }
        let now = now.nanos();
        let _locked = self.lock();
        if let Some(trip) = &self.trip {
            self.record(trip, now, signal.failed);
        }
        // A reopening gate answers signals as an open one.
        let open = self.open.load(Ordering::Relaxed) || self.pacing.load(Ordering::Relaxed);
        let until = self.until.load(Ordering::Relaxed);
        let half_open = !open && now >= until;
        let answers_probe = signal.probe && half_open && signal.started.nanos() >= until;
        // A zero back-off (`Retry-After: 0`, a date past) closes nothing, except as a probe's
        // answer: it is counted like any result below.
        if let Some(back_off) = signal.back_off.filter(|d| !d.is_zero() || answers_probe) {
            let length = nanos_saturating(back_off);
            let end = now.saturating_add(length);
            if answers_probe || (length > 0 && (open || half_open)) {
                self.close(now, end, length, GateCloseReason::BackOff);
            } else if !open && end > until {
                // A closing in force reaches further.
                self.set_closing(end, length, GateCloseReason::BackOff);
            }
            return;
        }
        if answers_probe {
            match &self.trip {
                Some(trip) if signal.failed => {
                    let end = now.saturating_add(trip.break_nanos);
                    self.close(now, end, trip.break_nanos, GateCloseReason::FailedProbe);
                }
                _ => self.reopen(now),
            }
            return;
        }
        if let (true, true, Some(trip)) = (open, signal.failed, &self.trip) {
            let fresh = signal.started.nanos() >= self.opened_at.load(Ordering::Relaxed);
            if fresh && self.tripped(trip, now) {
                let end = now.saturating_add(trip.break_nanos);
                self.close(now, end, trip.break_nanos, GateCloseReason::FailureRatio);
            }
        }
    }
}
