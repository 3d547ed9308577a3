//! Raw bytes into a hedging scenario: the retry scenario's policy (every builder setting) with
//! a hedging policy on top, the request, a seed and a start time, the latencies a tracker holds
//! at the start, which budget asks are denied, then the steps a driver takes. Every input
//! decodes (past the end, zeros are read).

use core::time::Duration;

use backstop_core::{ConfigError, Hedging, Instant, Policy, Request};

use crate::machine::{
    decode_duration, decode_error, decode_policy, decode_request, decode_response,
    decode_time_step, Action as RetryAction, TimeStep,
};
use crate::Bytes;

/// The most steps one input drives.
const MAX_STEPS: usize = 256;

/// A decoded hedging input.
#[derive(Debug)]
pub struct Scenario {
    /// The policy (hedged, or not at all), or why `build` refused it.
    pub policy: Result<Policy, ConfigError>,
    /// The request, as the retry scenario decodes it.
    pub request: Request,
    /// The raw `Idempotency-Key` value the request carries, if any.
    pub idempotency_key: Option<Vec<u8>>,
    /// The RNG's seed.
    pub seed: u64,
    /// When the machine is created.
    pub start: Instant,
    /// The latency tracker's window.
    pub window: Duration,
    /// The latencies the tracker holds when the machine is created (recorded at `start`).
    pub samples: Vec<Duration>,
    /// Bit `k` set: the budget denies its `k`-th request (from 0); later ones are granted.
    pub denials: u32,
    /// What the driver does, in order.
    pub steps: Vec<Step>,
}

/// One thing a driver does: move time (perhaps backwards), then poll or feed an event.
#[derive(Debug)]
pub struct Step {
    pub(super) time: TimeStep,
    pub(super) action: Action,
}

/// Which copy an event names.
#[derive(Clone, Copy, Debug)]
pub(super) enum CopyRef {
    /// The one a driver that follows the decisions would name: the copy due to be sent (for
    /// `Started`), the `n`-th copy in flight (an answer), the `n`-th copy to drop (`Cancelled`).
    Natural(u8),
    /// This number, whatever the state (0, one past the copies, `u32::MAX`, ...).
    Raw(u32),
}

#[derive(Debug)]
// An answer carries a response's seven optional fields; boxing them would only slow the decoder.
#[allow(clippy::large_enum_variant)]
pub(super) enum Action {
    Poll,
    Started(CopyRef),
    /// A response or an error (the retry scenario's `Response`/`Error`) for a copy.
    Answer(CopyRef, RetryAction),
    Cancelled(CopyRef),
    TimePassed,
    Abort,
}

impl Scenario {
    /// Decodes any bytes (past the end of `data`, zeros are read).
    pub fn decode(data: &[u8]) -> Scenario {
        let mut r = Bytes::new(data);
        let builder = decode_policy(&mut r);
        let policy = match decode_hedging(&mut r) {
            Some(h) => builder.hedging(h),
            None => builder,
        }
        .build();
        let (request, idempotency_key) = decode_request(&mut r);
        let seed = r.u64();
        let start = Instant::from_duration(decode_duration(&mut r));
        let window = match r.below(4) {
            0 | 1 => Duration::from_secs(30),
            2 => Duration::from_secs(u64::from(r.u8())),
            _ => decode_duration(&mut r),
        };
        let samples = decode_samples(&mut r);
        let denials = match r.u8() {
            0..=159 => 0,
            _ => r.u32(),
        };
        let mut steps = Vec::new();
        while !r.is_empty() && steps.len() < MAX_STEPS {
            steps.push(Step {
                time: decode_time_step(&mut r),
                action: decode_action(&mut r),
            });
        }
        Scenario {
            policy,
            request,
            idempotency_key,
            seed,
            start,
            window,
            samples,
            denials,
            steps,
        }
    }
}

/// Mostly a hedging policy of 2 to 5 copies, fixed or adaptive; sometimes none (one copy),
/// an invalid one (which `build` must refuse) or one above A6's cap.
pub(crate) fn decode_hedging(r: &mut Bytes<'_>) -> Option<Hedging> {
    let h = r.u8();
    if h.is_multiple_of(8) {
        return None;
    }
    let hedging = if h & 8 == 0 {
        Hedging::fixed(match r.below(4) {
            0 => Duration::ZERO,
            1 => Duration::from_millis(u64::from(r.u8())),
            2 => Duration::from_millis(u64::from(r.u16())),
            _ => decode_duration(r),
        })
    } else {
        let percent = match r.u8() {
            p @ 0..=199 => p % 50 + 1,
            p => p, // mostly invalid: 0, or above 50
        };
        let min_samples = match r.below(4) {
            0 => 0,
            1 => 1,
            2 => u32::from(r.u8() % 16),
            _ => r.u32(),
        };
        Hedging::adaptive(percent).min_samples(min_samples)
    };
    let m = r.u8();
    let attempts = match m % 16 {
        0..=4 => 2,
        5..=7 => 3,
        8..=9 => 4,
        10..=11 => 5,
        12 => u32::from(m >> 4) % 2, // 0 or 1: refused
        13 => 6 + u32::from(m >> 4) % 5,
        14 => 11,
        _ => r.u32(),
    };
    let hedging = hedging.max_attempts(attempts);
    Some(if h & 16 != 0 {
        hedging.allow_above_a6_cap()
    } else {
        hedging
    })
}

/// Up to 31 latencies spread above a base, so that the adaptive delay's quantile is known.
fn decode_samples(r: &mut Bytes<'_>) -> Vec<Duration> {
    let n = r.below(32);
    if n == 0 {
        return Vec::new();
    }
    let base = Duration::from_micros(u64::from(r.u16()) * 50 + u64::from(r.u8()));
    let spread = u64::from(r.u8());
    (0..u64::from(n))
        .map(|i| base + Duration::from_millis((i * 37) % (spread + 1)))
        .collect()
}

fn decode_copy(r: &mut Bytes<'_>) -> CopyRef {
    match r.u8() {
        n @ 0..=207 => CopyRef::Natural(n),
        n @ 208..=239 => CopyRef::Raw(u32::from(n) % 12),
        _ => CopyRef::Raw(r.u32()),
    }
}

fn decode_action(r: &mut Bytes<'_>) -> Action {
    match r.below(16) {
        0..=4 => Action::Poll,
        5 | 6 => Action::Started(decode_copy(r)),
        7..=9 => {
            let copy = decode_copy(r);
            Action::Answer(copy, decode_response(r))
        }
        10 | 11 => {
            let copy = decode_copy(r);
            Action::Answer(copy, RetryAction::Error(decode_error(r)))
        }
        12 | 13 => Action::Cancelled(decode_copy(r)),
        14 => Action::TimePassed,
        _ => Action::Abort,
    }
}
