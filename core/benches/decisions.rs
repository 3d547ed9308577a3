//! The cost of one decision in a retry cycle, of `Retry-After` parsing beside `httpdate`, and
//! of `RateLimit` parsing.
//!
//! Run with `cargo bench -p backstop-core`.

use core::time::Duration;

use backstop_core::{
    parse_rate_limit, parse_retry_after, Decision, Event, Instant, Method, Policy, Request,
    Response, RetryMachine,
};
use divan::{black_box, Bencher};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn main() {
    divan::main();
}

/// A machine with attempt 1 in flight, under a policy that never runs out within a bench.
fn in_flight() -> RetryMachine<Pcg64Mcg> {
    let policy = Policy::builder()
        .max_attempts(u32::MAX)
        .max_elapsed(Duration::from_secs(1_000_000))
        .build()
        .expect("valid policy");
    let mut m = RetryMachine::new(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(1),
        Instant::ZERO,
    );
    let _ = m.poll(Instant::ZERO);
    m.handle(Instant::ZERO, Event::AttemptStarted)
        .expect("send pending");
    m
}

// Small samples keep the prepared machines in cache: the figure is the decision, not a miss.

/// Response in (503, no Retry-After), wait out: backoff and full jitter.
#[divan::bench(sample_size = 32, sample_count = 2_000)]
fn decision_503_to_backoff_wait(bencher: Bencher) {
    bencher.with_inputs(in_flight).bench_local_refs(|m| {
        m.handle(
            Instant::ZERO,
            Event::Response(Response::new(black_box(503))),
        )
        .expect("in flight");
        black_box(m.poll(Instant::ZERO))
    });
}

/// Response in (503, `Retry-After: 0.1`), wait out: parsing, ceiling, spread.
#[divan::bench(sample_size = 32, sample_count = 2_000)]
fn decision_503_retry_after_to_wait(bencher: Bencher) {
    bencher.with_inputs(in_flight).bench_local_refs(|m| {
        let r = Response::new(503).retry_after(black_box(b"0.1"));
        m.handle(Instant::ZERO, Event::Response(r))
            .expect("in flight");
        black_box(m.poll(Instant::ZERO))
    });
}

/// Response in (429, `RateLimit: "default";r=0;t=1`, no Retry-After), wait out: the
/// rate-limit floor through the same ceiling and spread.
#[divan::bench(sample_size = 32, sample_count = 2_000)]
fn decision_429_rate_limit_to_wait(bencher: Bencher) {
    bencher.with_inputs(in_flight).bench_local_refs(|m| {
        let r = Response::new(429).rate_limit(black_box(br#""default";r=0;t=1"#));
        m.handle(Instant::ZERO, Event::Response(r))
            .expect("in flight");
        black_box(m.poll(Instant::ZERO))
    });
}

/// A whole retry cycle in steady state: send, started, 503 in, wait out, time passes.
#[divan::bench]
fn retry_cycle_send_503_wait(bencher: Bencher) {
    let mut m = in_flight();
    let mut now = Instant::ZERO;
    bencher.bench_local(|| {
        m.handle(now, Event::Response(Response::new(black_box(503))))
            .expect("in flight");
        if let Decision::Wait { until, .. } = m.poll(now) {
            now = until;
        }
        let d = m.poll(now);
        m.handle(now, Event::AttemptStarted).expect("send pending");
        black_box(d)
    });
}

const SECONDS: [&str; 2] = ["120", "0.1"];

#[divan::bench(args = SECONDS)]
fn retry_after_delay_seconds(value: &str) -> Option<backstop_core::RetryAfter> {
    parse_retry_after(black_box(value.as_bytes()))
}

const DATES: [&str; 3] = [
    "Sun, 06 Nov 1994 08:49:37 GMT",
    "Sunday, 06-Nov-94 08:49:37 GMT",
    "Sun Nov  6 08:49:37 1994",
];

#[divan::bench(args = DATES)]
fn retry_after_http_date_backstop(value: &str) -> Option<backstop_core::RetryAfter> {
    parse_retry_after(black_box(value.as_bytes()))
}

/// What a caller of `httpdate` pays on raw header bytes: the UTF-8 check, then the parse.
#[divan::bench(args = DATES)]
fn retry_after_http_date_httpdate_on_bytes(value: &str) -> Option<std::time::SystemTime> {
    let text = core::str::from_utf8(black_box(value.as_bytes())).ok()?;
    httpdate::parse_http_date(text).ok()
}

/// `httpdate` on a `&str` that is already known to be valid.
#[divan::bench(args = DATES)]
fn retry_after_http_date_httpdate_alone(value: &str) -> Option<std::time::SystemTime> {
    httpdate::parse_http_date(black_box(value)).ok()
}

/// The same output as backstop's (the time since the Unix epoch) from `httpdate` on raw bytes:
/// the UTF-8 check, the parse, and `SystemTime::duration_since(UNIX_EPOCH)`.
#[divan::bench(args = DATES)]
fn retry_after_http_date_httpdate_to_unix_time(value: &str) -> Option<core::time::Duration> {
    let text = core::str::from_utf8(black_box(value.as_bytes())).ok()?;
    httpdate::parse_http_date(text)
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
}

const RATE_LIMITS: [&str; 3] = [
    r#""default";r=0;t=10"#,
    r#""burst";r=5;t=1, "day";r=0;t=3600;pk=:cHsdsRa894==:"#,
    r#""day";r=0"#,
];

/// The `RateLimit` field alone (the third shape falls back to `RateLimit-Policy`'s window).
#[divan::bench(args = RATE_LIMITS)]
fn rate_limit_field(value: &str) -> Option<Duration> {
    parse_rate_limit(
        black_box(value.as_bytes()),
        black_box(Some(br#""hour";q=100;w=3600, "day";q=1000;w=86400"#)),
    )
}
