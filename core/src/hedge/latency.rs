//! Recent latencies, for an adaptive hedging delay.
//!
//! Rule (Finagle's backup requests): the delay is a high percentile of the latencies seen over
//! a sliding window, so that only the slowest `max_extra_load` of the operations get a second
//! copy. Each operation records one sample: its first copy's latency as far as the operation
//! saw it, from that copy's send to its timeout or the operation's end, whichever came first.
//! An operation hedged on the delay records at least the delay, one that was not records what
//! its first copy alone took, so the share of samples at or above the delay bounds the share
//! of operations hedged: the percentile of the first copies is kept, where the backups'
//! latencies (each measured from its own, later send) would pull it down and the extra load
//! above its bound. The tracker is fixed-size and lock-free, fed with `now` like every input
//! of the machine.

use core::time::Duration;

use portable_atomic::{AtomicU32, AtomicU64, Ordering};

use crate::time::Instant;

/// A source of recent latencies that a [`HedgeMachine`](crate::HedgeMachine) reads (its delay)
/// and feeds (one sample per operation that sent a copy: its first copy's latency, cut at the
/// operation's end). Shared: `&self` methods, like a [`Budget`](crate::Budget).
pub trait Latencies {
    /// The smallest recorded latency that at least `percentile` % of the samples in the window
    /// ending at `now` do not exceed, or `None` with fewer than `min_samples` samples.
    fn quantile(&self, now: Instant, percentile: u8, min_samples: u32) -> Option<Duration>;

    /// Records one latency, observed at `now`.
    fn record(&self, now: Instant, latency: Duration);
}

/// No latencies: an adaptive delay never sends a copy on a delay (only after a non-final
/// answer). The source of a machine built for a fixed delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoLatencies;

impl Latencies for NoLatencies {
    fn quantile(&self, _: Instant, _: u8, _: u32) -> Option<Duration> {
        None
    }
    fn record(&self, _: Instant, _: Duration) {}
}

impl<L: Latencies + ?Sized> Latencies for &L {
    fn quantile(&self, now: Instant, percentile: u8, min_samples: u32) -> Option<Duration> {
        (**self).quantile(now, percentile, min_samples)
    }
    fn record(&self, now: Instant, latency: Duration) {
        (**self).record(now, latency);
    }
}

#[cfg(feature = "std")]
impl<L: Latencies + ?Sized> Latencies for std::sync::Arc<L> {
    fn quantile(&self, now: Instant, percentile: u8, min_samples: u32) -> Option<Duration> {
        (**self).quantile(now, percentile, min_samples)
    }
    fn record(&self, now: Instant, latency: Duration) {
        (**self).record(now, latency);
    }
}

/// Values below this many microseconds have a bucket each.
const LINEAR: u64 = 16;
/// Sub-buckets per power of two above `LINEAR`: 3 bits, so a bucket is at most 12.5 % wide.
const SUB_BITS: u32 = 3;
/// Powers of two covered: up to 2^36 µs (about 19 hours); longer latencies share the last
/// bucket.
const TOP_EXPONENT: u32 = 36;
/// Buckets per slot.
const BUCKETS: usize = LINEAR as usize + ((TOP_EXPONENT - 4) << SUB_BITS) as usize;
/// Slots in the window: the window slides by a quarter at a time.
const SLOTS: usize = 4;

/// The bucket of a latency in microseconds: log-linear (16 linear buckets, then 8 per power
/// of two).
const fn bucket(micros: u64) -> usize {
    if micros < LINEAR {
        return micros as usize;
    }
    let exponent = 63 - micros.leading_zeros();
    if exponent >= TOP_EXPONENT {
        return BUCKETS - 1;
    }
    let sub = (micros >> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    LINEAR as usize + (((exponent - 4) << SUB_BITS) as usize) + sub as usize
}

/// The largest latency in microseconds that falls in bucket `b`: a quantile reads the upper
/// edge, so the delay is never shorter than the percentile (the extra load stays under its
/// bound).
const fn bucket_upper(b: usize) -> u64 {
    if b < LINEAR as usize {
        return b as u64;
    }
    let k = (b - LINEAR as usize) as u64;
    let exponent = 4 + (k >> SUB_BITS);
    let sub = k & ((1 << SUB_BITS) - 1);
    let width = 1u64 << (exponent - SUB_BITS as u64);
    (1u64 << exponent) + (sub + 1) * width - 1
}

/// One slot of the window: the counts of the samples recorded during one quarter of it.
#[derive(Debug)]
struct Slot {
    /// Which quarter of time the counts belong to, plus one (0: never used).
    epoch: AtomicU64,
    counts: [AtomicU32; BUCKETS],
}

impl Slot {
    const fn new() -> Self {
        Slot {
            epoch: AtomicU64::new(0),
            counts: [const { AtomicU32::new(0) }; BUCKETS],
        }
    }
}

/// A fixed-size, lock-free histogram of recent latencies over a sliding window (four slots of
/// a quarter window each, log-linear buckets at most 12.5 % wide), shared by every operation
/// of a client: the [`Latencies`] an adaptive [`Hedging`](crate::Hedging) delay reads.
///
/// It holds about 4.4 KB and allocates nothing. A quantile reads the upper edge of its
/// bucket, so an adaptive delay is never shorter than the percentile it stands for. When a
/// slot is reused for a new quarter, a sample recorded by another thread during the reset may
/// be lost: the histogram is a statistic, not a ledger.
///
/// ```
/// use backstop_core::{Instant, Latencies, LatencyTracker};
/// use core::time::Duration;
///
/// static LATENCIES: LatencyTracker = LatencyTracker::new(Duration::from_secs(30));
///
/// let now = Instant::from_secs(1);
/// for ms in 1..=100 {
///     LATENCIES.record(now, Duration::from_millis(ms));
/// }
/// let p95 = LATENCIES.quantile(now, 95, 100).unwrap();
/// assert!(p95 >= Duration::from_millis(95) && p95 < Duration::from_millis(107));
/// assert_eq!(LATENCIES.quantile(now, 95, 101), None); // not enough samples yet
/// // Thirty seconds later the window holds none of them.
/// assert_eq!(LATENCIES.quantile(Instant::from_secs(31), 95, 1), None);
/// ```
#[derive(Debug)]
pub struct LatencyTracker {
    slots: [Slot; SLOTS],
    /// A slot's span in nanoseconds (a quarter of the window, at least 1).
    slot_nanos: u64,
}

impl LatencyTracker {
    /// A tracker whose window is `window` long (Finagle's default is 30 s), sliding by a
    /// quarter at a time.
    #[must_use]
    pub const fn new(window: Duration) -> Self {
        let nanos = window.as_nanos() / SLOTS as u128;
        let slot_nanos = if nanos == 0 {
            1
        } else if nanos > u64::MAX as u128 {
            u64::MAX
        } else {
            nanos as u64
        };
        LatencyTracker {
            slots: [const { Slot::new() }; SLOTS],
            slot_nanos,
        }
    }

    /// The epoch (plus one) of the quarter `now` falls in.
    fn epoch(&self, now: Instant) -> u64 {
        (now.nanos() / self.slot_nanos).saturating_add(1)
    }

    /// The samples in the window ending at `now`.
    #[must_use]
    pub fn samples(&self, now: Instant) -> u32 {
        let current = self.epoch(now);
        self.live(current)
            .map(|slot| {
                slot.counts
                    .iter()
                    .map(|c| c.load(Ordering::Relaxed))
                    .fold(0u32, u32::saturating_add)
            })
            .fold(0, u32::saturating_add)
    }

    /// The slots whose quarter lies in the window ending in quarter `current`.
    fn live(&self, current: u64) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(move |slot| {
            let e = slot.epoch.load(Ordering::Acquire);
            e != 0 && e <= current && current - e < SLOTS as u64
        })
    }
}

impl Latencies for LatencyTracker {
    fn quantile(&self, now: Instant, percentile: u8, min_samples: u32) -> Option<Duration> {
        let current = self.epoch(now);
        let mut counts = [0u32; BUCKETS];
        let mut total = 0u32;
        for slot in self.live(current) {
            for (sum, c) in counts.iter_mut().zip(&slot.counts) {
                let c = c.load(Ordering::Relaxed);
                *sum = sum.saturating_add(c);
                total = total.saturating_add(c);
            }
        }
        if total == 0 || total < min_samples {
            return None;
        }
        // The rank of the percentile: at least that share of the samples is at or below it.
        let percentile = u64::from(percentile.min(100));
        let rank = (u64::from(total) * percentile).div_ceil(100).max(1);
        let mut seen = 0u64;
        for (b, &c) in counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Some(Duration::from_micros(bucket_upper(b)));
            }
        }
        Some(Duration::from_micros(bucket_upper(BUCKETS - 1)))
    }

    fn record(&self, now: Instant, latency: Duration) {
        let current = self.epoch(now);
        let Some(slot) = self.slots.get((current % SLOTS as u64) as usize) else {
            return; // not reached: the index is below SLOTS
        };
        let seen = slot.epoch.load(Ordering::Acquire);
        if seen < current
            && slot
                .epoch
                .compare_exchange(seen, current, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // This thread moved the slot to the new quarter: the old counts go.
            for c in &slot.counts {
                c.store(0, Ordering::Relaxed);
            }
        } else if seen > current {
            // A sample from a quarter already reused (time passed in another thread): the
            // window has moved past it.
            return;
        }
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if let Some(count) = slot.counts.get(bucket(micros)) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_is_at_most_its_buckets_upper_edge_and_above_the_previous_one() {
        let mut v = 0u64;
        while v < (1 << 40) {
            let b = bucket(v);
            assert!(
                v <= bucket_upper(b) || b == BUCKETS - 1,
                "{v} above bucket {b}"
            );
            if b > 0 && b < BUCKETS - 1 {
                assert!(
                    v > bucket_upper(b - 1),
                    "{v} in bucket {b} not above bucket {}",
                    b - 1
                );
            }
            v = v + 1 + v / 7;
        }
    }

    #[test]
    fn a_bucket_is_at_most_an_eighth_wide() {
        for b in LINEAR as usize..BUCKETS - 1 {
            let lower = bucket_upper(b - 1) + 1;
            let upper = bucket_upper(b);
            assert!(
                (upper - lower + 1) * 8 <= lower,
                "bucket {b}: {lower}..={upper}"
            );
        }
    }

    #[test]
    fn the_window_slides_by_a_quarter() {
        let t = LatencyTracker::new(Duration::from_secs(4));
        t.record(Instant::from_secs(0), Duration::from_millis(10));
        t.record(Instant::from_secs(2), Duration::from_millis(20));
        assert_eq!(t.samples(Instant::from_secs(3)), 2);
        // At 4 s the first second's quarter has left the window; at 6 s the third's too.
        assert_eq!(t.samples(Instant::from_secs(4)), 1);
        assert_eq!(t.samples(Instant::from_secs(6)), 0);
        // A slot reused for a new quarter starts empty.
        t.record(Instant::from_secs(4), Duration::from_millis(30));
        assert_eq!(t.samples(Instant::from_secs(4)), 2);
    }
}
