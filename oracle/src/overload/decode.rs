//! Raw bytes into an overload scenario: the retry scenario's policy (every builder setting)
//! with the overload section on top (which shared objects, their configuration, whether first
//! attempts fail fast, how many operations), then each operation's request and start, then the
//! steps, each naming the operation it drives. Every input decodes (past the end, zeros are
//! read).

use core::time::Duration;

use backstop_core::{
    AdaptiveRateLimiter, ConfigError, FailureRatio, GateConfig, Instant, Policy, Reopening, Request,
};

use crate::machine::{
    decode_action, decode_duration, decode_policy, decode_request, decode_time_step, Action,
    TimeStep,
};
use crate::Bytes;

/// The most steps one input drives, over all its operations.
const MAX_STEPS: usize = 256;

/// The most operations one input runs at once.
pub const MAX_OPERATIONS: usize = 4;

/// A decoded overload input.
#[derive(Debug)]
pub struct Scenario {
    /// The policy of every operation (`fail_fast_when_paused` decoded with the objects), or
    /// why `build` refused it.
    pub policy: Result<Policy, ConfigError>,
    /// The origin gate the operations share, if any, as decoded (perhaps invalid).
    pub gate: Option<GateSetup>,
    /// The `AdaptiveRateLimiter` the operations share, if any.
    pub limiter: Option<LimiterSetup>,
    /// The operations, 1 to [`MAX_OPERATIONS`].
    pub operations: Vec<Operation>,
    /// What the driver does, in order, each step to one operation.
    pub steps: Vec<Step>,
}

/// An origin gate's configuration, with the trip's settings as decoded (the configuration
/// has no getters for them).
#[derive(Clone, Copy, Debug)]
pub struct GateSetup {
    /// The configuration given to `OriginGate::new`.
    pub config: GateConfig,
    /// The reopening spread.
    pub spread: Duration,
    /// The await-probe recheck.
    pub recheck: Duration,
    /// The failure-ratio trip, if on.
    pub trip: Option<Trip>,
    /// How the gate reopens after a successful probe.
    pub reopening: Reopening,
}

/// A failure-ratio trip's settings.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)] // each is the `FailureRatio` setting of the same name
pub struct Trip {
    pub ratio_per_mille: u16,
    pub minimum_throughput: u32,
    pub window: Duration,
    pub buckets: u8,
    pub break_duration: Duration,
}

/// How the limiter is built.
#[derive(Clone, Copy, Debug, Default)]
pub struct LimiterSetup {
    /// `with_start`: created at the first operation's start (else measuring from 0).
    pub start: Option<Instant>,
    /// `with_beta` (any value: it is cut into `[0, 1]`, a NaN keeps 0.7).
    pub beta: Option<f64>,
}

impl LimiterSetup {
    /// The limiter.
    pub(crate) fn build(&self) -> AdaptiveRateLimiter {
        let mut limiter = AdaptiveRateLimiter::new();
        if let Some(start) = self.start {
            limiter = limiter.with_start(start);
        }
        if let Some(beta) = self.beta {
            limiter = limiter.with_beta(beta);
        }
        limiter
    }
}

/// One operation: a machine of its own, on the shared objects.
#[derive(Debug)]
pub struct Operation {
    /// The request, as the retry scenario decodes it.
    pub request: Request,
    /// The raw `Idempotency-Key` value the request carries, if any.
    pub idempotency_key: Option<Vec<u8>>,
    /// The RNG's seed.
    pub seed: u64,
    /// When the machine is created (every machine exists from the start of the run; one
    /// created later is one whose clock starts later).
    pub start: Instant,
}

/// One thing the driver does to one operation: move the shared clock (perhaps backwards),
/// then poll or feed an event.
#[derive(Debug)]
pub struct Step {
    pub(super) operation: usize,
    pub(super) time: TimeStep,
    pub(super) action: Action,
}

impl Scenario {
    /// Decodes any bytes (past the end of `data`, zeros are read).
    pub fn decode(data: &[u8]) -> Scenario {
        let mut r = Bytes::new(data);
        let builder = decode_policy(&mut r);
        // Bits 0-1: the objects (1 a gate, 2 a limiter, else both); 2: fail fast; 3-4: one to
        // four operations; 5: a gate configuration follows (else the defaults); 6: a
        // limiter's (else the defaults).
        let o = r.u8();
        let policy = builder.fail_fast_when_paused(o & 4 != 0).build();
        let (gate, limiter) = match o & 3 {
            1 => (true, false),
            2 => (false, true),
            _ => (true, true),
        };
        let n = 1 + usize::from((o >> 3) & 3);
        let gate = gate.then(|| {
            if o & 32 != 0 {
                decode_gate(&mut r)
            } else {
                GateSetup::default()
            }
        });
        let limiter_byte = (limiter && o & 64 != 0).then(|| r.u8());
        let seed = r.u64();
        let start = Instant::from_duration(decode_duration(&mut r));
        let limiter = limiter.then(|| match limiter_byte {
            Some(b) => LimiterSetup {
                start: (b & 1 != 0).then_some(start),
                beta: (b & 2 != 0).then(|| match b >> 2 {
                    0 => f64::NAN,
                    1 => -1.0,
                    2 => 2.0,
                    3 => f64::INFINITY,
                    n => f64::from(n - 4) / 50.0,
                }),
            },
            None => LimiterSetup::default(),
        });
        let operations = (0..n)
            .map(|k| {
                let (request, idempotency_key) = decode_request(&mut r);
                let start = if k == 0 {
                    start
                } else {
                    start.saturating_add(decode_offset(&mut r))
                };
                Operation {
                    request,
                    idempotency_key,
                    seed: seed.wrapping_add(k as u64),
                    start,
                }
            })
            .collect();
        let mut steps = Vec::new();
        while !r.is_empty() && steps.len() < MAX_STEPS {
            let operation = if n > 1 { usize::from(r.u8()) % n } else { 0 };
            steps.push(Step {
                operation,
                time: decode_time_step(&mut r),
                action: decode_action(&mut r),
            });
        }
        Scenario {
            policy,
            gate,
            limiter,
            operations,
            steps,
        }
    }
}

impl Default for GateSetup {
    fn default() -> Self {
        let config = GateConfig::new();
        GateSetup {
            config,
            spread: Duration::from_secs(1),
            recheck: Duration::from_millis(50),
            trip: None,
            reopening: Reopening::DEFAULT,
        }
    }
}

impl GateSetup {
    /// Whether `OriginGate::new` must accept it, by the documented ranges.
    pub(crate) fn valid(&self) -> bool {
        const DAY: Duration = Duration::from_secs(86_400);
        let trip = self.trip.is_none_or(|t| {
            (1..=1000).contains(&t.ratio_per_mille)
                && t.minimum_throughput >= 1
                && (1..=FailureRatio::MAX_BUCKETS).contains(&t.buckets)
                && (Duration::from_millis(1)..=DAY).contains(&t.window)
                && (Duration::from_nanos(1)..=DAY).contains(&t.break_duration)
        });
        let reopening = match self.reopening {
            Reopening::Linear { ramp: d } | Reopening::Doubling { every: d } => {
                (Duration::from_millis(1)..=DAY).contains(&d)
            }
            _ => true,
        };
        self.spread <= DAY
            && (Duration::from_nanos(1)..=DAY).contains(&self.recheck)
            && trip
            && reopening
    }
}

/// Mostly short offsets: the operations start together or close to each other.
fn decode_offset(r: &mut Bytes<'_>) -> Duration {
    match r.below(4) {
        0 => Duration::ZERO,
        1 => Duration::from_millis(u64::from(r.u16())),
        2 => Duration::from_secs(u64::from(r.u8())),
        _ => decode_duration(r),
    }
}

/// Mostly valid settings near the edges that matter (no spread, short rechecks, a trip that
/// a few failures reach), sometimes any, invalid ones included.
pub(crate) fn decode_gate(r: &mut Bytes<'_>) -> GateSetup {
    let spread = match r.below(4) {
        0 => Duration::ZERO,
        1 => Duration::from_millis(u64::from(r.u8()) * 4),
        2 => Duration::from_secs(1),
        _ => decode_duration(r),
    };
    let recheck = match r.below(4) {
        0 => Duration::from_millis(u64::from(r.u8())),
        1 => Duration::from_millis(50),
        2 => Duration::from_nanos(1 + u64::from(r.u8())),
        _ => decode_duration(r),
    };
    let seed = match r.below(4) {
        0 => 0,
        1 => u64::from(r.u8()),
        _ => r.u64(),
    };
    let trip = r.bool().then(|| Trip {
        ratio_per_mille: match r.u8() {
            n @ 0..=199 => (u16::from(n) % 10 + 1) * 100,
            n @ 200..=249 => u16::from(n - 199) * 20,
            _ => r.u16(),
        },
        minimum_throughput: match r.u8() {
            n @ 0..=247 => 1 + u32::from(n % 8),
            _ => r.u32(),
        },
        window: match r.below(4) {
            0 => Duration::from_secs(30),
            1 => Duration::from_millis(u64::from(r.u16())),
            2 => Duration::from_secs(u64::from(r.u8())),
            _ => decode_duration(r),
        },
        buckets: r.below(20),
        break_duration: match r.below(4) {
            0 => Duration::from_millis(u64::from(r.u16())),
            1 => Duration::from_secs(u64::from(r.u8())),
            2 => Duration::from_secs(5),
            _ => decode_duration(r),
        },
    });
    // Short ramps, so that a reopening reaches its end within a scenario's steps.
    let reopening = match r.below(4) {
        0 => Reopening::DEFAULT,
        1 => Reopening::AtOnce,
        2 => Reopening::linear(Duration::from_millis(u64::from(r.u16()))),
        _ => Reopening::doubling(Duration::from_millis(u64::from(r.u16()))),
    };
    let mut config = GateConfig::new()
        .spread(spread)
        .await_probe_recheck(recheck)
        .seed(seed)
        .reopening(reopening);
    if let Some(t) = trip {
        config = config.failure_ratio(
            FailureRatio::new()
                .ratio_per_mille(t.ratio_per_mille)
                .minimum_throughput(t.minimum_throughput)
                .window(t.window)
                .buckets(t.buckets)
                .break_duration(t.break_duration),
        );
    }
    GateSetup {
        config,
        spread,
        recheck,
        trip,
        reopening,
    }
}
