//! Raw bytes into a scenario: a policy, a request, a seed, a start time and the steps a driver
//! takes. Every input decodes (past the end, zeros are read), so the fuzzer wastes nothing.

use core::time::Duration;
use std::time::UNIX_EPOCH;

use backstop_core::{
    AttemptError, Backoff, ErrorClass, ErrorKind, Instant, Jitter, Method, NonIdempotent, Policy,
    PolicyBuilder, Request, ResponseClass, RetryAfterAboveMax, StatusSet, UnixTime,
    XRateLimitReset,
};

use crate::Bytes;

/// The most steps one input drives.
const MAX_STEPS: usize = 256;

/// A decoded input.
#[derive(Debug)]
pub struct Scenario {
    /// The policy, or why `build` refused it.
    pub policy: Result<Policy, backstop_core::ConfigError>,
    /// The request's method and whether it carries a usable `Idempotency-Key` (built from
    /// `idempotency_key` by `Request::with_idempotency_key_value`).
    pub request: Request,
    /// The raw `Idempotency-Key` value the request carries, if any: a real key, or an empty or
    /// blank one (which is no key).
    pub idempotency_key: Option<Vec<u8>>,
    /// The RNG's seed.
    pub seed: u64,
    /// When the machine is created.
    pub start: Instant,
    /// What the driver does, in order.
    pub steps: Vec<Step>,
}

/// One thing a driver does: move time (perhaps backwards), then poll or feed an event.
#[derive(Debug)]
pub struct Step {
    pub(super) time: TimeStep,
    pub(super) action: Action,
}

#[derive(Debug)]
pub enum TimeStep {
    Same,
    Nanos(u32),
    Millis(u16),
    Secs(u16),
    BackMillis(u16),
    BackSecs(u16),
    NextDeadline,
    JustBeforeNextDeadline,
    Deadline,
    JustBeforeDeadline,
    Far(u64),
    Absolute(u64),
    Max,
}

/// The raw rate-limit fields of a response.
#[derive(Clone, Debug, Default)]
#[allow(missing_docs)] // each is the raw value of the field of the same name
pub struct RateLimitFields {
    pub rate_limit: Option<Vec<u8>>,
    pub rate_limit_policy: Option<Vec<u8>>,
    pub rate_limit_reset: Option<Vec<u8>>,
    pub x_rate_limit_reset_after: Option<Vec<u8>>,
    pub x_rate_limit_reset: Option<Vec<u8>>,
    pub rate_limit_remaining: Option<Vec<u8>>,
    pub x_rate_limit_remaining: Option<Vec<u8>>,
}

#[derive(Debug)]
// A response carries seven optional fields; boxing them would only slow the decoder.
#[allow(clippy::large_enum_variant)]
pub enum Action {
    Poll,
    Started,
    Response {
        status: u16,
        retry_after: Option<Vec<u8>>,
        date: Option<Vec<u8>>,
        wall_clock: Option<UnixTime>,
        rate_limit: RateLimitFields,
        /// The caller's word on it (mostly none: the status set decides).
        class: ResponseClass,
    },
    Error(AttemptError),
    TimePassed,
    Abort,
}

impl Scenario {
    /// Decodes any bytes (past the end of `data`, zeros are read).
    pub fn decode(data: &[u8]) -> Scenario {
        let mut r = Bytes::new(data);
        let (builder, set) = decode_policy_and_bits(&mut r);
        // A hedging policy, which this machine ignores (it retries under the policy's retry
        // settings, as `run` and the blocking clients do), but `worst_case` must still bound.
        let hedging = (set & HEDGING_BIT != 0)
            .then(|| crate::hedge::decode_hedging(&mut r))
            .flatten();
        let builder = match hedging {
            Some(h) => builder.hedging(h),
            None => builder,
        };
        let policy = builder.build();
        let (request, idempotency_key) = decode_request(&mut r);
        let seed = r.u64();
        let start = Instant::from_duration(decode_duration(&mut r));
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
            steps,
        }
    }
}

/// The bit of the policy's settings byte that, in a retry scenario only, says a hedging policy
/// follows the policy (the hedging scenario decodes its own after the policy).
const HEDGING_BIT: u16 = 8192;

/// The retry policy's settings (every builder setting but hedging).
pub(crate) fn decode_policy(r: &mut Bytes<'_>) -> PolicyBuilder {
    decode_policy_and_bits(r).0
}

/// [`decode_policy`], and the bits that said which settings follow.
fn decode_policy_and_bits(r: &mut Bytes<'_>) -> (PolicyBuilder, u16) {
    let set = r.u16();
    let mut b = Policy::builder();
    if set & 1 != 0 {
        b = b.max_attempts(match r.u8() {
            255 => r.u32(),
            n => u32::from(n % 12),
        });
    }
    if set & 2 != 0 {
        b = b.max_elapsed(decode_duration(r));
    }
    if set & 4 != 0 {
        b = b.attempt_timeout(decode_duration(r));
    }
    if set & 8 != 0 {
        b = b.backoff(match r.below(3) {
            0 => Backoff::exponential(decode_duration(r), decode_duration(r)),
            1 => Backoff::linear(decode_duration(r), decode_duration(r)),
            _ => Backoff::constant(decode_duration(r)),
        });
    }
    if set & 16 != 0 {
        b = b.jitter(match r.below(4) {
            0 => Jitter::None,
            1 => Jitter::Full,
            2 => Jitter::Equal,
            _ => Jitter::Decorrelated,
        });
    }
    if set & 32 != 0 {
        b = match r.below(3) {
            0 => b.retryable_status_set(StatusSet::EMPTY),
            1 => {
                let n = usize::from(r.below(8));
                let codes: Vec<u16> = (0..n).map(|_| decode_status(r)).collect();
                b.retryable_statuses(&codes)
            }
            _ => b.retryable_status_set(StatusSet::DEFAULT_RETRYABLE),
        };
    }
    if set & 64 != 0 {
        let mask = r.u8();
        let methods: Vec<Method> = ALL_METHODS
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << (i % 8)) != 0)
            .map(|(_, m)| *m)
            .collect();
        b = if r.bool() {
            b.retry_only_methods(&methods)
        } else {
            methods.iter().fold(b, |b, m| b.add_retry_method(*m))
        };
    }
    if set & 128 != 0 {
        let all = NonIdempotent::ALL;
        b = b.non_idempotent(all[usize::from(r.u8()) % all.len()]);
    }
    if set & 256 != 0 {
        b = b.max_retry_after(decode_duration(r));
    }
    if set & 512 != 0 {
        b = b.retry_after_above_max(if r.bool() {
            RetryAfterAboveMax::Clamp
        } else {
            RetryAfterAboveMax::GiveUp
        });
    }
    if set & 1024 != 0 {
        b = b.retry_after_spread(decode_duration(r));
    }
    if set & 2048 != 0 {
        b = b.rate_limit_fields(r.bool());
    }
    if set & 4096 != 0 {
        b = b.x_rate_limit_reset(if r.bool() {
            XRateLimitReset::DelaySeconds
        } else {
            XRateLimitReset::UnixTime
        });
    }
    (b, set)
}

/// Idempotent ones first, so that most masks build.
const ALL_METHODS: [Method; 10] = [
    Method::Get,
    Method::Head,
    Method::Options,
    Method::Trace,
    Method::Put,
    Method::Delete,
    Method::Post,
    Method::Patch,
    Method::Connect,
    Method::Other,
];

/// The method, from one byte whose top values also mark the body as one that cannot be sent
/// again (so older corpus files decode as before but for that rare flag), then the key.
pub(crate) fn decode_request(r: &mut Bytes<'_>) -> (Request, Option<Vec<u8>>) {
    let b = r.u8();
    // One byte, as when this was a bool: odd carries a field, its upper bits say which value
    // (mostly a real key, else the empty and blank values that are no key).
    let k = r.u8();
    let key: Option<&[u8]> = (k & 1 == 1).then(|| match (k >> 1) % 8 {
        0..=3 => &b"8e03978e-40d5-43e8-bc93-6894a57f9324"[..],
        4 => b" k ",
        5 => b"",
        6 => b"  ",
        _ => b"\t \r\n\x0b\x0c",
    });
    let request = Request::new(ALL_METHODS[usize::from(b % 10)])
        .with_replayable_body(b < 240)
        .with_idempotency_key_value(key);
    (request, key.map(<[u8]>::to_vec))
}

pub(crate) fn decode_duration(r: &mut Bytes<'_>) -> Duration {
    match r.below(10) {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(u64::from(r.u16())),
        2 => Duration::from_millis(u64::from(r.u16())),
        3 => Duration::from_millis(u64::from(r.u8()) * 10),
        4 => Duration::from_secs(u64::from(r.u8())),
        5 => Duration::from_secs(u64::from(r.u16())),
        6 => Duration::from_nanos(r.u64()),
        7 => Duration::new(r.u64(), r.u32() % 1_000_000_000),
        8 => Duration::MAX,
        _ => Duration::from_secs(u64::from(r.u32())),
    }
}

const RETRYABLE: [u16; 7] = [408, 425, 429, 500, 502, 503, 504];
const COMMON: [u16; 13] = [
    200, 201, 204, 301, 304, 400, 401, 403, 404, 409, 410, 418, 422,
];

fn decode_status(r: &mut Bytes<'_>) -> u16 {
    match r.below(4) {
        0 => RETRYABLE[usize::from(r.below(7))],
        1 => r.u16(),
        2 => COMMON[usize::from(r.below(13))],
        _ => 100 + r.u16() % 500,
    }
}

pub(crate) fn decode_time_step(r: &mut Bytes<'_>) -> TimeStep {
    match r.below(14) {
        0 | 1 => TimeStep::Same,
        2 => TimeStep::Nanos(r.u32()),
        3 => TimeStep::Millis(r.u16()),
        4 => TimeStep::Secs(r.u16()),
        5 => TimeStep::BackMillis(r.u16()),
        6 => TimeStep::BackSecs(r.u16()),
        7 => TimeStep::NextDeadline,
        8 => TimeStep::JustBeforeNextDeadline,
        9 => TimeStep::Deadline,
        10 => TimeStep::JustBeforeDeadline,
        11 => TimeStep::Far(r.u64()),
        12 => TimeStep::Absolute(r.u64()),
        _ => TimeStep::Max,
    }
}

/// A retry scenario's action: poll, start, a response, an error, a timer or an abort.
pub(crate) fn decode_action(r: &mut Bytes<'_>) -> Action {
    match r.below(8) {
        0 | 1 => Action::Poll,
        2 => Action::Started,
        3 | 4 => decode_response(r),
        5 => Action::Error(decode_error(r)),
        6 => Action::TimePassed,
        _ => Action::Abort,
    }
}

/// A response: any status, `Retry-After`/`Date` bytes, wall clock, rate-limit fields and class
/// (an [`Action::Response`]; the hedging oracle reads its copies' answers with it too).
pub(crate) fn decode_response(r: &mut Bytes<'_>) -> Action {
    Action::Response {
        status: decode_status(r),
        retry_after: r.bool().then(|| decode_header(r)),
        date: r.bool().then(|| decode_header(r)),
        wall_clock: r.bool().then(|| decode_wall_clock(r)),
        rate_limit: decode_rate_limit(r),
        class: match r.below(8) {
            0 => ResponseClass::Retryable,
            1 => ResponseClass::Final,
            _ => ResponseClass::ByStatus,
        },
    }
}

/// A network error of any kind, mostly with an explicit class (an override), else the kind's
/// own.
pub(crate) fn decode_error(r: &mut Bytes<'_>) -> AttemptError {
    let kinds = ErrorKind::ALL;
    let error = AttemptError::new(kinds[usize::from(r.u8()) % kinds.len()]);
    match ErrorClass::ALL.get(usize::from(r.below(8))) {
        Some(&class) => error.with_class(class),
        None => error,
    }
}

/// Mostly none (so most responses look as before), else any mix of the seven fields.
fn decode_rate_limit(r: &mut Bytes<'_>) -> RateLimitFields {
    let set = r.u8();
    if set < 128 {
        return RateLimitFields::default();
    }
    let field = |r: &mut Bytes<'_>| match r.below(4) {
        0 => {
            let n = usize::from(r.below(48));
            r.take(n).to_vec()
        }
        1 => format!("\"default\";r={};t={}", r.below(2), r.u8()).into_bytes(),
        2 => format!("\"day\";r=0, \"burst\";r={};t={}", r.below(2), r.u16()).into_bytes(),
        _ => b"\"day\";r=0".to_vec(),
    };
    // Mostly 0 (exhausted) or a count left, else anything.
    let remaining = |r: &mut Bytes<'_>| match r.below(4) {
        0 => b"0".to_vec(),
        1 => u32::from(r.u8()).to_string().into_bytes(),
        2 => [" 0", "00", "0 ", "4999"][usize::from(r.below(4))]
            .as_bytes()
            .to_vec(),
        _ => decode_header(r),
    };
    let unix = |r: &mut Bytes<'_>| match r.below(4) {
        0 => (1_700_000_000 + u64::from(r.u16()))
            .to_string()
            .into_bytes(),
        1 => u32::from(r.u8()).to_string().into_bytes(),
        _ => decode_header(r),
    };
    RateLimitFields {
        rate_limit: (set & 1 != 0).then(|| field(r)),
        rate_limit_policy: (set & 2 != 0).then(|| match r.below(2) {
            0 => format!("\"day\";q=100;w={}", r.u16()).into_bytes(),
            _ => field(r),
        }),
        rate_limit_reset: (set & 4 != 0).then(|| decode_header(r)),
        x_rate_limit_reset_after: (set & 8 != 0).then(|| decode_header(r)),
        x_rate_limit_reset: (set & 16 != 0).then(|| unix(r)),
        rate_limit_remaining: (set & 32 != 0).then(|| remaining(r)),
        x_rate_limit_remaining: (set & 64 != 0).then(|| remaining(r)),
    }
}

fn decode_wall_clock(r: &mut Bytes<'_>) -> UnixTime {
    match r.below(3) {
        0 => UnixTime::from_secs(1_700_000_000 + u64::from(r.u32())),
        1 => UnixTime::from_secs(r.u64() % (LAST_HTTP_DATE + 1)),
        _ => UnixTime::from_duration(decode_duration(r)),
    }
}

const LAST_HTTP_DATE: u64 = 253_402_300_799;

/// Hostile and malformed `Retry-After` shapes, to start the fuzzer off near the edges.
const HOSTILE: [&[u8]; 16] = [
    b"1e30",
    b"18446744073709551616",
    b"18446744073709551615",
    b"-1",
    b"NaN",
    b"0x10",
    b"",
    b" ",
    b"1.",
    b".5",
    b"+1",
    b"0.1",
    b"\xff\xfe",
    b"1, 2",
    b"Sun, 06 Nov 1994 08:49:37 GMT",
    b"Fri, 31 Dec 9999 23:59:59 GMT",
];

fn decode_header(r: &mut Bytes<'_>) -> Vec<u8> {
    let date = |r: &mut Bytes<'_>| {
        let secs = match r.below(3) {
            0 => 1_700_000_000 + u64::from(r.u32() % 1_000_000),
            _ => r.u64() % (LAST_HTTP_DATE + 1),
        };
        httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
    };
    match r.below(9) {
        0 => {
            let n = usize::from(r.below(48));
            r.take(n).to_vec()
        }
        1 => r.u64().to_string().into_bytes(),
        2 => u32::from(r.u8()).to_string().into_bytes(),
        3 => format!("{}.{}", r.u16(), r.u32()).into_bytes(),
        4 => date(r).into_bytes(),
        5 => imf_to_rfc850(&date(r)).into_bytes(),
        6 => imf_to_asctime(&date(r)).into_bytes(),
        7 => HOSTILE[usize::from(r.below(16))].to_vec(),
        _ => {
            let pad = [" ", "\t", "", "  "];
            let pad = pad[usize::from(r.below(4))];
            format!("{pad}{}{pad}", r.u8()).into_bytes()
        }
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` to `Sunday, 06-Nov-94 08:49:37 GMT`.
pub(crate) fn imf_to_rfc850(imf: &str) -> String {
    let full = match &imf[..3] {
        "Mon" => "Monday",
        "Tue" => "Tuesday",
        "Wed" => "Wednesday",
        "Thu" => "Thursday",
        "Fri" => "Friday",
        "Sat" => "Saturday",
        _ => "Sunday",
    };
    format!(
        "{full}, {}-{}-{} {} GMT",
        &imf[5..7],
        &imf[8..11],
        &imf[14..16],
        &imf[17..25]
    )
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` to `Sun Nov  6 08:49:37 1994`.
pub(crate) fn imf_to_asctime(imf: &str) -> String {
    let day = imf[5..7].trim_start_matches('0');
    format!(
        "{} {} {day:>2} {} {}",
        &imf[..3],
        &imf[8..11],
        &imf[17..25],
        &imf[12..16]
    )
}
