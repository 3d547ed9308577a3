//! The server-directed delay of a response, and the wait it makes: shared by the retry and the
//! hedging machines.
//!
//! Rule: a `Retry-After` (a delay, or an HTTP-date against the response's `Date`, else the
//! client's wall clock) is a floor; without one, on a retryable status, a rate-limit field's
//! reset is. The wait is the floor plus a spread of our own, within the ceiling
//! (`max_retry_after`: above it the policy clamps or gives up) and, when the floor alone fits,
//! before the deadline.
//!
//! A gRPC pushback (`grpc-retry-pushback-ms`, gRFC A6) on a retryable response replaces all of
//! this: its value is the exact wait (no spread; the same ceiling and deadline), or it stops
//! the retries.
//!
//! A 403 is final, except as a rate-limit answer: GitHub (and APIs that copied it) answer an
//! exhausted quota with `403` as well as `429`, with `X-RateLimit-Remaining: 0` and
//! `X-RateLimit-Reset`, and a secondary limit with `403` and a `Retry-After`. So a 403 whose
//! quota is exhausted (the rule of [`crate::rate_limit`]: `r=0`, or a remaining field of `0`,
//! with a reset) or that carries a usable `Retry-After` is pushback, a 429 in all but its
//! number: retried after it when the policy retries a 429, final when it does not; any other 403 (a refusal, which says nothing of when to come back) stays final.

use core::time::Duration;

use rand_core::Rng;

use crate::decision::DelaySource;
use crate::event::Response;
use crate::grpc::Pushback;
use crate::jitter::uniform_nanos;
use crate::policy::{Policy, RetryAfterAboveMax};
use crate::rate_limit::reset_delay;
use crate::retry_after::{parse_http_date, parse_retry_after, RetryAfter};
use crate::status::ResponseClass;
use crate::time::nanos_saturating;

/// Whether `response` is retryable under `policy`: the caller's class, else the policy's
/// status set, else, for a 403, whether it is a rate-limit answer ([`rate_limit_answer`])
/// while the policy retries a 429: such a 403 is a 429, retried or final as a 429 is.
/// The usual response pays one comparison more than the status set.
#[inline]
pub(crate) fn is_retryable(policy: &Policy, response: &Response<'_>) -> bool {
    let status = response.status;
    match response.class {
        ResponseClass::ByStatus => {
            policy.retries_status(status)
                || (status == 403
                    && policy.retries_status(429)
                    && rate_limit_answer(policy, response))
        }
        class => class == ResponseClass::Retryable,
    }
}

/// Whether a 403 is a rate-limit answer (see the module docs): the policy reads the
/// rate-limit fields, and the response has a usable `Retry-After` or an exhausted quota's
/// reset. Out of line: only a 403 asks.
#[cold]
#[inline(never)]
pub(crate) fn rate_limit_answer(policy: &Policy, response: &Response<'_>) -> bool {
    policy.rate_limit_fields()
        && (retry_after_delay(response).is_some()
            || reset_delay(response, policy.x_rate_limit_reset()).is_some())
}

/// The delay of a response's usable `Retry-After`, if it has one.
pub(crate) fn retry_after_delay(response: &Response<'_>) -> Option<Duration> {
    match parse_retry_after(response.retry_after?)? {
        RetryAfter::Delay(d) => Some(d),
        date @ RetryAfter::Date(_) => {
            let reference = response
                .date
                .and_then(parse_http_date)
                .or(response.wall_clock)?;
            Some(date.delay_from(reference))
        }
    }
}

/// What a response tells the overload-control objects (an origin [`Gate`](crate::Gate) and a
/// [`RateLimiter`](crate::RateLimiter)): the gate's back-off (a `Retry-After` on a 429, a 503
/// or a 403 that is a rate-limit answer, else, on a retryable status, an exhausted
/// quota's reset, cut at `max_retry_after`) and whether the server throttled the client (a
/// 429 or such a 403, or a 503 with a usable `Retry-After`). Shared by the retry and the
/// hedging machines, so both report an answer alike.
pub(crate) fn pushback(
    policy: &Policy,
    response: &Response<'_>,
    retryable: bool,
) -> (Option<Duration>, bool) {
    let status = response.status;
    // A 403 that is a rate-limit answer is a 429 (pushback, retried or not), unless the
    // caller's classification made it final.
    let too_many = match status {
        429 => true,
        403 => {
            (retryable || response.class == ResponseClass::ByStatus)
                && rate_limit_answer(policy, response)
        }
        _ => false,
    };
    let retry_after = if too_many || status == 503 {
        retry_after_delay(response)
    } else {
        None
    };
    let throttled = retry_after.is_some() || too_many;
    let exhausted = || {
        if reads_reset(policy, response, retryable) {
            reset_delay(response, policy.x_rate_limit_reset())
        } else {
            None
        }
    };
    let back_off = retry_after
        .or_else(exhausted)
        .map(|d| d.min(policy.max_retry_after()));
    (back_off, throttled)
}

/// Whether `response` may set a server-directed floor ([`server_floor`]): it has a
/// `Retry-After`, or a rate-limit reset the policy reads ([`reads_reset`]). The usual
/// response has neither, and the machines keep the parsers out of its way.
#[inline]
pub(crate) fn may_set_floor(policy: &Policy, response: &Response<'_>, retryable: bool) -> bool {
    response.retry_after.is_some()
        || response.pushback.is_some()
        || reads_reset(policy, response, retryable)
}

/// Whether the policy reads `response`'s rate-limit reset: on a retryable status, with the
/// rate-limit fields on, when it has a field that may carry one.
#[inline]
fn reads_reset(policy: &Policy, response: &Response<'_>, retryable: bool) -> bool {
    retryable && policy.rate_limit_fields() && has_reset_field(response)
}

/// Whether a response has a field that may carry a rate-limit reset.
#[inline]
fn has_reset_field(r: &Response<'_>) -> bool {
    r.rate_limit.is_some()
        || r.rate_limit_reset.is_some()
        || r.x_rate_limit_reset_after.is_some()
        || r.x_rate_limit_reset.is_some()
}

/// Whether a retryable `response`'s gRPC pushback says not to retry.
#[inline]
pub(crate) fn pushback_stops(response: &Response<'_>, retryable: bool) -> bool {
    retryable && matches!(response.pushback, Some(Pushback::Stop))
}

/// The response's `Retry-After` delay (for the outcome), and its server-directed floor and
/// where it comes from: on a retryable status its gRPC pushback, else the `Retry-After`, else,
/// on a retryable status, its rate-limit fields.
pub(crate) fn server_floor(
    policy: &Policy,
    response: &Response<'_>,
    retryable: bool,
) -> (Option<Duration>, Option<(Duration, DelaySource)>) {
    let retry_after = retry_after_delay(response);
    if let (true, Some(Pushback::Delay(d))) = (retryable, response.pushback) {
        return (retry_after, Some((d, DelaySource::ServerPushback)));
    }
    if let Some(d) = retry_after {
        return (retry_after, Some((d, DelaySource::RetryAfter)));
    }
    if !retryable || !policy.rate_limit_fields() {
        return (None, None);
    }
    let reset = reset_delay(response, policy.x_rate_limit_reset())
        .map(|d| (d, DelaySource::RateLimitReset));
    (None, reset)
}

/// The wait for a server-directed `floor`, with `room` nanoseconds left before the deadline:
/// the floor plus a spread, within the ceiling. `None` means the floor is above the ceiling and
/// the policy gives up.
pub(crate) fn floored_wait<R: Rng>(
    policy: &Policy,
    rng: &mut R,
    room: u64,
    (floor, source): (Duration, DelaySource),
) -> Option<(Duration, DelaySource)> {
    let max = policy.max_retry_after();
    let (floor, source) = if floor <= max {
        (floor, source)
    } else {
        match policy.retry_after_above_max() {
            RetryAfterAboveMax::Clamp => (max, source.clamped()),
            _ => return None,
        }
    };
    // The spread is ours, not the server's: it never takes a wait past the ceiling, nor past
    // the deadline when the server's value alone would fit before it. In nanoseconds: the room
    // before the deadline fits a u64, and it bounds the spread, so saturating a larger floor or
    // ceiling changes no result (and no random draw).
    if matches!(
        source,
        DelaySource::ServerPushback | DelaySource::ServerPushbackClamped
    ) {
        // The server's exact wait: no spread of ours.
        return Some((floor, source));
    }
    let floor_nanos = nanos_saturating(floor);
    let room = room.saturating_sub(floor_nanos).saturating_sub(1);
    let spread = nanos_saturating(policy.retry_after_spread())
        .min(floor_nanos / 10)
        .min(nanos_saturating(max).saturating_sub(floor_nanos))
        .min(room);
    Some((
        floor.saturating_add(Duration::from_nanos(uniform_nanos(rng, spread))),
        source,
    ))
}
