//! AWS's adaptive client rate limiter (the SDKs' "adaptive" retry mode): a token bucket whose
//! rate follows a CUBIC curve after the server throttles the client. The rule, and where
//! backstop departs from the SDKs, are on [`AdaptiveRateLimiter`].

mod cubic;

pub use cubic::Cubic;

use core::hint::spin_loop;
use core::sync::atomic::Ordering;
use core::time::Duration;

use portable_atomic::{AtomicBool, AtomicU64};

use super::RateLimiter;
use crate::time::Instant;

/// Nanoseconds per half-second measurement bucket.
const BUCKET_NANOS: u64 = 500_000_000;
/// Nanoseconds per second, as a float.
const NANOS_PER_SEC: f64 = 1e9;

/// How far below one token the bucket may be and still give it: the refill's float error at
/// the instant a refusal names (a few ulps), far below a nanosecond's refill.
const TOKEN_SLACK: f64 = 1e-9;
/// `last_refill` before the first refill (the SDKs' `None`: the first refill only notes the
/// time).
const NEVER: u64 = u64::MAX;

/// Seconds since the caller's epoch.
const fn secs(t: Instant) -> f64 {
    t.nanos() as f64 / NANOS_PER_SEC
}

/// AWS's adaptive client rate limiter: off until the server first throttles the client, then
/// a token bucket whose rate follows a [`Cubic`] curve. Shared by every operation it paces
/// (`&AdaptiveRateLimiter` and `Arc<AdaptiveRateLimiter>` are [`RateLimiter`]s); `Send`,
/// `Sync`, allocation-free, usable in a `static`. See the rule below the example.
///
/// ```
/// use backstop_core::{AdaptiveRateLimiter, Instant, RateLimiter};
///
/// static LIMITER: AdaptiveRateLimiter = AdaptiveRateLimiter::new();
///
/// // Off until the first throttle: every attempt goes at once.
/// let t = Instant::from_millis(100);
/// assert!((0..100).all(|_| LIMITER.acquire(t).is_ok()));
/// LIMITER.on_response(t, false);
/// assert!(!LIMITER.is_enabled());
///
/// // A throttle turns it on; the bucket starts (nearly) empty and fills at 0.5 token/s.
/// let t = Instant::from_millis(200);
/// LIMITER.on_response(t, true);
/// assert_eq!(LIMITER.enabled_at(), Some(t));
/// assert_eq!(LIMITER.fill_rate(), 0.5);
/// let until = LIMITER.acquire(t).unwrap_err(); // the bucket is (nearly) empty
/// assert_eq!(LIMITER.acquire(t), Err(until)); // a refusal takes nothing
/// assert!(until <= Instant::from_millis(2_200)); // at most 1 / fill_rate away
/// assert_eq!(LIMITER.acquire(until), Ok(())); // the token is there when it said
/// assert!(LIMITER.acquire(until).is_err()); // and it was taken
/// ```
///
/// # The rule
///
/// - Every response counts towards the measured send rate, in half-second buckets: with
///   `b = floor(2t) / 2` seconds, `count += 1`, and when `b > last_b`,
///   `measured = 0.8 * count / (b - last_b) + 0.2 * measured`, `count = 0`, `last_b = b`.
/// - A throttle at `t` restarts the [`Cubic`] curve ([`Cubic::throttle`]) from
///   `r = min(measured, fill_rate)` (from `measured` while the limiter is off) and gives
///   `beta * r` (`beta` 0.7); the limiter is on from the first throttle on, for good. Any
///   other response gives the curve's rate at `t` ([`Cubic::success`]). Which responses are
///   throttles is the caller's call (the machine says a 429 and a 503 with `Retry-After`).
/// - The new rate is that, but never more than twice the measured rate. The bucket is
///   refilled at the old rate up to `t`, then `fill_rate = max(new, 0.5)`,
///   `max_capacity = max(new, 1)`, and the bucket is cut to `max_capacity`. It starts empty
///   and fills at `fill_rate` up to `max_capacity` from the first response on.
/// - While the limiter is on, every attempt, the first one too, takes one token
///   ([`acquire`](RateLimiter::acquire)). Without a whole token it takes nothing and says
///   when to ask again: when the bucket will hold a token, `(1 - capacity) / fill_rate` from
///   now (at most 2 s), rounded up to the next nanosecond; the first to ask after that gets
///   the token, and another caller is told again. The driver combines this wait with a
///   `Retry-After` floor by `max`, and gives up at once when its policy fails fast or the
///   wait passes its deadline.
///
/// # Where it departs from the SDKs, on purpose
///
/// - A refusal takes nothing (smithy-rs#4632 took the token and returned the wait, so the
///   bucket went negative and each waiter's wait grew with the number waiting), and nothing is
///   reserved: no wait is ever longer than one token's time, `1 / fill_rate`.
/// - Every attempt costs one token, retries too, and the bucket holds at least one, so a token
///   always fits (smithy-rs#4749: a retry cost above the bucket's size waited forever).
/// - The retry budget is a separate object the machine informs of every attempt itself, so
///   the limiter being on does not stop it refilling (aws-sdk-go-v2#3550).
/// - Time is [`Instant`] nanoseconds: the buckets are whole half-seconds of it (integers,
///   not `floor` of a float), refills use integer differences, and a `now` earlier than the
///   last refill (a caller preempted between reading its clock and calling) refills nothing
///   instead of draining the bucket.
///
/// # Observing it
///
/// [`measured_rate`](Self::measured_rate), [`fill_rate`](Self::fill_rate),
/// [`capacity`](Self::capacity) and [`max_capacity`](Self::max_capacity) read the values as
/// the last call left them, each on its own (one atomic load, no lock), for graphs.
/// [`is_enabled`](Self::is_enabled) and [`enabled_at`](Self::enabled_at) tell a driver when
/// the limiter switched on (exactly one `on_response` call does it), and
/// [`throttles`](Self::throttles) counts the throttles it was told of; an operation waited on
/// the limiter exactly when [`acquire`](RateLimiter::acquire) returned `Err`.
///
/// # Concurrency
///
/// The state is a dozen numbers that change together, so every call but the readers above,
/// and `acquire` while the limiter is off (one atomic load), holds a small spin lock (an
/// `AtomicBool`, spinning with [`core::hint::spin_loop`]). It is held only across a few
/// loads, float operations and stores of the limiter's own fields: never across a call out, an
/// allocation or anything that can block, so a caller waits at most for another caller's few
/// dozen instructions, unless the holder is preempted. Do not call it from an interrupt
/// handler that may interrupt a caller on the same core (the handler would spin forever);
/// the fields are atomics (`portable-atomic`), so the code stays free of `unsafe`. An
/// `acquire` racing with the throttle that switches the limiter on may still go without a
/// token, as if it had come just before.
pub struct AdaptiveRateLimiter {
    /// The spin lock over every field below but `beta`.
    locked: AtomicBool,
    enabled: AtomicBool,
    enabled_at: AtomicU64,
    throttles: AtomicU64,
    // f64 fields, as bits.
    fill_rate: AtomicU64,
    max_capacity: AtomicU64,
    capacity: AtomicU64,
    measured: AtomicU64,
    last_max: AtomicU64,
    last_throttle: AtomicU64,
    // Nanoseconds, half-second buckets and a count.
    last_refill: AtomicU64,
    last_bucket: AtomicU64,
    count: AtomicU64,
    beta: f64,
}

/// The limiter's state, copied out of its atomics under the lock and written back.
#[derive(Clone, Copy, Debug)]
struct State {
    enabled: bool,
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    measured: f64,
    cubic: Cubic,
    last_refill: u64,
    last_bucket: u64,
    count: u64,
}

impl State {
    /// The bucket refilled at the current rate up to `now`.
    fn refill(&mut self, now: u64) {
        if self.last_refill != NEVER {
            let dt = now.saturating_sub(self.last_refill) as f64 / NANOS_PER_SEC;
            self.capacity = self.max_capacity.min(self.capacity + dt * self.fill_rate);
            self.last_refill = self.last_refill.max(now);
        } else {
            self.last_refill = now;
        }
    }

    /// One response towards the measured rate.
    fn measure(&mut self, now: u64) {
        let bucket = now / BUCKET_NANOS;
        self.count = self.count.saturating_add(1);
        if bucket > self.last_bucket {
            let span = (bucket - self.last_bucket) as f64 * 0.5;
            let rate = self.count as f64 / span;
            self.measured = AdaptiveRateLimiter::SMOOTH * rate
                + (1.0 - AdaptiveRateLimiter::SMOOTH) * self.measured;
            self.count = 0;
            self.last_bucket = bucket;
        }
    }

    /// A response at `now`.
    fn on_response(&mut self, now: Instant, throttled: bool) {
        self.measure(now.nanos());
        let t = secs(now);
        let calculated = if throttled {
            let rate = if self.enabled {
                self.measured.min(self.fill_rate)
            } else {
                self.measured
            };
            self.enabled = true;
            self.cubic.throttle(rate, t)
        } else {
            self.cubic.success(t)
        };
        let new = calculated.min(AdaptiveRateLimiter::MAX_RATE_FACTOR * self.measured);
        self.refill(now.nanos());
        // `f64::max` ignores a NaN: the rate and the capacity keep their floors whatever the
        // curve gives.
        self.fill_rate = new.max(AdaptiveRateLimiter::MIN_FILL_RATE);
        self.max_capacity = new.max(AdaptiveRateLimiter::MIN_CAPACITY);
        self.capacity = self.capacity.min(self.max_capacity);
    }

    /// One token at `now`, or when the bucket will hold one.
    fn acquire(&mut self, now: Instant) -> Result<(), Instant> {
        self.refill(now.nanos());
        // A refusal names the instant the refill reaches one token; the refill's float error
        // may leave it an ulp short there, which must not cost another wait.
        if self.capacity >= 1.0 - TOKEN_SLACK {
            // Never below zero.
            self.capacity = (self.capacity - 1.0).max(0.0);
            return Ok(());
        }
        let wait = (1.0 - self.capacity) / self.fill_rate * NANOS_PER_SEC;
        // Rounded up (past the float error of the refill); `as` saturates.
        let wait = (wait as u64).saturating_add(1);
        // From the refill's time: a lagging `now` refilled nothing past it.
        Err(Instant::from_nanos(self.last_refill.saturating_add(wait)))
    }
}

/// Holds the spin lock; releases it when dropped.
struct Locked<'a>(&'a AtomicBool);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

const fn bits(v: f64) -> AtomicU64 {
    AtomicU64::new(v.to_bits())
}

fn load(v: &AtomicU64) -> f64 {
    f64::from_bits(v.load(Ordering::Relaxed))
}

fn store(v: &AtomicU64, x: f64) {
    v.store(x.to_bits(), Ordering::Relaxed);
}

impl AdaptiveRateLimiter {
    /// The measured rate's smoothing: each half-second's rate weighs 0.8, the past 0.2.
    pub const SMOOTH: f64 = 0.8;

    /// The measurement buckets: half a second.
    pub const BUCKET: Duration = Duration::from_millis(500);

    /// The lowest fill rate: half a token per second.
    pub const MIN_FILL_RATE: f64 = 0.5;

    /// The smallest bucket: one token.
    pub const MIN_CAPACITY: f64 = 1.0;

    /// The new rate never exceeds twice the measured rate.
    pub const MAX_RATE_FACTOR: f64 = 2.0;

    /// A limiter that is off, with the SDKs' constants, measuring from the caller's epoch
    /// ([`Instant::ZERO`]; see [`with_start`](Self::with_start)).
    #[must_use]
    pub const fn new() -> Self {
        AdaptiveRateLimiter {
            locked: AtomicBool::new(false),
            enabled: AtomicBool::new(false),
            enabled_at: AtomicU64::new(0),
            throttles: AtomicU64::new(0),
            fill_rate: bits(Self::MIN_FILL_RATE),
            max_capacity: bits(Self::MIN_CAPACITY),
            capacity: bits(0.0),
            measured: bits(0.0),
            last_max: bits(0.0),
            last_throttle: bits(0.0),
            last_refill: AtomicU64::new(NEVER),
            last_bucket: AtomicU64::new(0),
            count: AtomicU64::new(0),
            beta: Cubic::BETA,
        }
    }

    /// The same limiter created at `start`, as the SDKs create theirs at the clock's current
    /// time: the first measurement bucket starts at `floor(start)` seconds, and the curve
    /// before the first throttle counts from `start`.
    #[must_use]
    pub const fn with_start(mut self, start: Instant) -> Self {
        // `floor(start)` seconds, in half-second buckets.
        self.last_bucket = AtomicU64::new(start.nanos() / 1_000_000_000 * 2);
        self.last_throttle = bits(secs(start));
        self
    }

    /// The same limiter with the decrease factor `beta` on a throttle instead of 0.7 (see
    /// [`Cubic::with_beta`]: cut into `[0, 1]`).
    #[must_use]
    pub const fn with_beta(mut self, beta: f64) -> Self {
        self.beta = Cubic::new(0.0, 0.0).with_beta(beta).beta();
        self
    }

    /// The measured send rate (responses per second, smoothed), as the last response left it.
    #[must_use]
    pub fn measured_rate(&self) -> f64 {
        load(&self.measured)
    }

    /// The bucket's fill rate (tokens per second, at least 0.5), as the last response left it.
    #[must_use]
    pub fn fill_rate(&self) -> f64 {
        load(&self.fill_rate)
    }

    /// The bucket's size (tokens, at least 1), as the last response left it.
    #[must_use]
    pub fn max_capacity(&self) -> f64 {
        load(&self.max_capacity)
    }

    /// The tokens in the bucket as the last call left them (not refilled up to any `now`);
    /// never negative.
    #[must_use]
    pub fn capacity(&self) -> f64 {
        load(&self.capacity)
    }

    /// Whether the limiter is on: the server has throttled the client at least once.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// When the limiter switched on: the `now` of the first throttle it was told of.
    #[must_use]
    pub fn enabled_at(&self) -> Option<Instant> {
        if self.is_enabled() {
            Some(Instant::from_nanos(self.enabled_at.load(Ordering::Relaxed)))
        } else {
            None
        }
    }

    /// How many throttles the limiter was told of.
    #[must_use]
    pub fn throttles(&self) -> u64 {
        self.throttles.load(Ordering::Relaxed)
    }

    /// The decrease factor on a throttle.
    #[must_use]
    pub const fn beta(&self) -> f64 {
        self.beta
    }

    /// The curve as the last response left it (read under the lock, so its numbers belong
    /// together).
    #[must_use]
    pub fn cubic(&self) -> Cubic {
        let _locked = self.lock();
        self.load().cubic
    }

    fn lock(&self) -> Locked<'_> {
        loop {
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Locked(&self.locked);
            }
            while self.locked.load(Ordering::Relaxed) {
                spin_loop();
            }
        }
    }

    /// The state (under the lock).
    fn load(&self) -> State {
        State {
            enabled: self.enabled.load(Ordering::Relaxed),
            fill_rate: load(&self.fill_rate),
            max_capacity: load(&self.max_capacity),
            capacity: load(&self.capacity),
            measured: load(&self.measured),
            cubic: Cubic::new(load(&self.last_max), load(&self.last_throttle)).with_beta(self.beta),
            last_refill: self.last_refill.load(Ordering::Relaxed),
            last_bucket: self.last_bucket.load(Ordering::Relaxed),
            count: self.count.load(Ordering::Relaxed),
        }
    }

    /// The bucket's part of the state back (under the lock).
    fn store_bucket(&self, s: &State) {
        store(&self.fill_rate, s.fill_rate);
        store(&self.max_capacity, s.max_capacity);
        store(&self.capacity, s.capacity);
        self.last_refill.store(s.last_refill, Ordering::Relaxed);
    }
}

impl core::fmt::Debug for AdaptiveRateLimiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AdaptiveRateLimiter")
            .field("enabled_at", &self.enabled_at())
            .field("measured_rate", &self.measured_rate())
            .field("fill_rate", &self.fill_rate())
            .field("capacity", &self.capacity())
            .field("max_capacity", &self.max_capacity())
            .field("throttles", &self.throttles())
            .field("beta", &self.beta)
            .finish_non_exhaustive()
    }
}

impl Default for AdaptiveRateLimiter {
    fn default() -> Self {
        AdaptiveRateLimiter::new()
    }
}

impl RateLimiter for AdaptiveRateLimiter {
    fn acquire(&self, now: Instant) -> Result<(), Instant> {
        if !self.is_enabled() {
            return Ok(());
        }
        let _locked = self.lock();
        let mut s = self.load();
        let result = s.acquire(now);
        self.store_bucket(&s);
        result
    }

    fn on_response(&self, now: Instant, throttled: bool) {
        let _locked = self.lock();
        let mut s = self.load();
        let was_enabled = s.enabled;
        s.on_response(now, throttled);
        self.store_bucket(&s);
        store(&self.measured, s.measured);
        store(&self.last_max, s.cubic.last_max());
        store(&self.last_throttle, s.cubic.last_throttle());
        self.last_bucket.store(s.last_bucket, Ordering::Relaxed);
        self.count.store(s.count, Ordering::Relaxed);
        if throttled {
            self.throttles.fetch_add(1, Ordering::Relaxed);
        }
        if s.enabled && !was_enabled {
            self.enabled_at.store(now.nanos(), Ordering::Relaxed);
            // Release: a reader that sees the limiter on sees when it switched on.
            self.enabled.store(true, Ordering::Release);
        }
    }
}
