//! A rate-limit reset is a floor only when the quota it belongs to is exhausted: with quota
//! left the wait is the backoff, and a Unix reset long before the reference is malformed, not
//! "now".

use core::time::Duration;

use backstop_core::{Decision, DelaySource, Policy, Response, StopReason, UnixTime};

mod support;
use support::{no_jitter, no_spread, Sim};

const NOW: u64 = 1_700_000_000;

/// What the machine decides after `response` to a first GET.
fn after(policy: Policy, response: Response<'_>) -> Decision {
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(response);
    sim.poll()
}

/// The backoff wait after a bare response of `status`.
fn backoff_after(status: u16) -> Decision {
    after(no_jitter(), Response::new(status))
}

fn backoff() -> Decision {
    backoff_after(503)
}

#[test]
fn quota_left_means_no_floor() {
    let fifty_minutes = (NOW + 3_000).to_string();
    let cases = [
        // GitHub-style quota fields on every response, here on a 503.
        Response::new(503)
            .x_rate_limit_remaining(b"4999")
            .x_rate_limit_reset(fifty_minutes.as_bytes())
            .wall_clock(UnixTime::from_secs(NOW)),
        Response::new(503)
            .rate_limit_remaining(b"99")
            .rate_limit_reset(b"10"),
        // A `RateLimit` member with quota left: the IETF field says there is no floor, and
        // the legacy fields are not consulted.
        Response::new(503)
            .rate_limit(br#""default";r=50;t=10"#)
            .x_rate_limit_reset_after(b"10"),
        // Even on a 429, a remaining field that says quota is left wins.
        Response::new(429)
            .rate_limit_remaining(b"7")
            .rate_limit_reset(b"10"),
        Response::new(429)
            .x_rate_limit_remaining(b" 12 ")
            .x_rate_limit_reset_after(b"10"),
    ];
    for response in cases {
        assert_eq!(
            after(no_jitter(), response),
            backoff_after(response.status),
            "{response:?}"
        );
    }
}

#[test]
fn a_reset_is_a_floor_when_its_quota_is_exhausted() {
    let source_and_delay = |d: Decision| match d {
        Decision::Wait { delay, reason, .. } => Some((delay, reason.source)),
        _ => None,
    };
    let floor = |s| Some((Duration::from_secs(s), DelaySource::RateLimitReset));
    // The matching remaining field is 0, on any retryable status.
    let zero = Response::new(503)
        .rate_limit_remaining(b"0")
        .rate_limit_reset(b"3");
    assert_eq!(source_and_delay(after(no_spread(), zero)), floor(3));
    let zero = Response::new(503)
        .x_rate_limit_remaining(b"0")
        .x_rate_limit_reset_after(b"4");
    assert_eq!(source_and_delay(after(no_spread(), zero)), floor(4));
    // Absent on a 429: the status says the quota is gone.
    let absent = Response::new(429).rate_limit_reset(b"5");
    assert_eq!(source_and_delay(after(no_spread(), absent)), floor(5));
    // Absent on a 503: nothing says the quota is gone, so the backoff applies.
    let unknown = Response::new(503).rate_limit_reset(b"5");
    assert_eq!(after(no_jitter(), unknown), backoff());
    // Each reset goes with its own remaining field.
    let mixed = Response::new(503)
        .rate_limit_remaining(b"9")
        .rate_limit_reset(b"8")
        .x_rate_limit_remaining(b"0")
        .x_rate_limit_reset_after(b"2");
    assert_eq!(source_and_delay(after(no_spread(), mixed)), floor(2));
}

#[test]
fn a_zero_reset_with_quota_left_is_the_backoff_not_retry_now() {
    let response = Response::new(503)
        .rate_limit_remaining(b"97")
        .rate_limit_reset(b"0");
    let d = after(no_jitter(), response);
    assert_eq!(d, backoff());
    assert!(matches!(d, Decision::Wait { delay, .. } if delay > Duration::ZERO));
    let response = Response::new(429)
        .rate_limit(br#""default";r=97;t=0"#)
        .rate_limit_reset(b"0")
        .x_rate_limit_reset_after(b"0");
    assert!(
        matches!(after(no_jitter(), response), Decision::Wait { delay, .. } if delay > Duration::ZERO)
    );
}

#[test]
fn an_implausible_unix_reset_is_absent() {
    // `X-RateLimit-Reset: 30` read as Unix time is a moment in 1970: malformed.
    let ancient = Response::new(429)
        .x_rate_limit_reset(b"30")
        .wall_clock(UnixTime::from_secs(NOW));
    assert_eq!(after(no_jitter(), ancient), backoff_after_429());
    // A reset that passed less than a day ago is "the quota is back": no wait.
    let an_hour_ago = (NOW - 3_600).to_string();
    let recent = Response::new(429)
        .x_rate_limit_reset(an_hour_ago.as_bytes())
        .wall_clock(UnixTime::from_secs(NOW));
    assert!(matches!(
        after(no_jitter(), recent),
        Decision::Send { attempt: 2, .. }
    ));
    // The threshold is one day before the reference, inclusive.
    let a_day_ago = (NOW - 86_400).to_string();
    let edge = Response::new(429)
        .x_rate_limit_reset(a_day_ago.as_bytes())
        .wall_clock(UnixTime::from_secs(NOW));
    assert!(matches!(
        after(no_jitter(), edge),
        Decision::Send { attempt: 2, .. }
    ));
    let past_a_day = (NOW - 86_401).to_string();
    let beyond = Response::new(429)
        .x_rate_limit_reset(past_a_day.as_bytes())
        .wall_clock(UnixTime::from_secs(NOW));
    assert_eq!(after(no_jitter(), beyond), backoff_after_429());
}

fn backoff_after_429() -> Decision {
    backoff_after(429)
}

#[test]
fn github_quota_fields_on_a_503_do_not_stop_the_retries() {
    // The issue's report: `x-ratelimit-reset` 50 minutes away on a 503 ended the operation with
    // `retry_after_above_max`.
    let reset = (NOW + 3_000).to_string();
    let mut sim = Sim::get(Policy::default());
    sim.start();
    sim.respond(
        Response::new(503)
            .x_rate_limit_remaining(b"4999")
            .x_rate_limit_reset(reset.as_bytes())
            .wall_clock(UnixTime::from_secs(NOW)),
    );
    let d = sim.poll();
    assert!(
        !matches!(d.outcome(), Some(o) if o.reason == StopReason::RetryAfterAboveMax),
        "{d:?}"
    );
}
