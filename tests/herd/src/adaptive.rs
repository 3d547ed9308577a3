//! Issue 21's adaptive experiment: 10 clients, each wanting 50 requests/s, against a server
//! that admits 100 requests/s and answers `429` above it; retrying only, and retrying behind
//! AWS's adaptive client rate limiter.
//!
//! The clients and their operations are [`open_loop`]'s: client `c` starts a `GET` every
//! 20 ms at its own seeded phase, each a real [`RetryMachine`](backstop_core::RetryMachine)
//! with the default [`Policy`] (4 attempts, 5 s per attempt, 15 s in all, exponential backoff
//! from 300 ms capped at 5 s with full jitter; 429 is retryable). The server is a token bucket
//! of [`Config::server_rate`] tokens per second holding at most [`Config::server_burst`],
//! full at the start: a request that finds a whole token takes it and gets `200`, any other
//! gets `429` without `Retry-After` (so no server-directed wait, and no gate: the runs have
//! none). With the limiter, each client has its own [`RateLimiter`] shared by its operations,
//! as each AWS SDK client has its own; the machine tells it of every response (a 429 as a
//! throttle) and asks it for a token before every attempt, the first one too.
//!
//! The rates are measured over `[warmup, warmup + measure)` at the server: the send rate is
//! every arrival (first attempts and retries), the 429 share their share of it.

use core::time::Duration;

use backstop_core::{AdaptiveRateLimiter, NoGate, NoRateLimiter, Policy, RateLimiter};

use crate::net::MS;
use crate::open_loop::{self, nanos, Answer, Setup, Trace, SEC};

/// The width of one bin of the send-rate-over-time series.
pub const BIN_NS: u64 = SEC;
/// How often the limiters' fill rates are sampled.
pub const SAMPLE_NS: u64 = 100 * MS;

/// The experiment's fixed numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Number of clients.
    pub clients: u32,
    /// The time between two operations of one client (20 ms: 50 per second).
    pub interval: Duration,
    /// The server's token bucket: tokens per second.
    pub server_rate: f64,
    /// The server's token bucket: the most tokens it holds (the burst it admits).
    pub server_burst: f64,
    /// How long before the measurement starts.
    pub warmup: Duration,
    /// How long the measurement lasts; operations stop starting at its end.
    pub measure: Duration,
    /// Fixes the phases, the network and every operation's jitter.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clients: 10,
            interval: Duration::from_millis(20),
            server_rate: 100.0,
            server_burst: 10.0,
            warmup: Duration::from_secs(10),
            measure: Duration::from_secs(60),
            seed: 2021,
        }
    }
}

impl Config {
    /// The measurement window `[start, end)` in nanoseconds.
    #[must_use]
    pub fn window(&self) -> (u64, u64) {
        let start = nanos(self.warmup);
        (start, start + nanos(self.measure))
    }

    /// Where the series over time end: the last operation's deadline, and a second.
    #[must_use]
    pub fn series_end(&self) -> u64 {
        self.window().1 + nanos(Policy::default().max_elapsed()) + SEC
    }
}

/// How the clients pace their sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Retries only (no limiter).
    RetryOnly,
    /// Retries behind one adaptive rate limiter per client (AWS's semantics).
    Adaptive,
    /// Retries behind one adaptive rate limiter shared by all ten clients (one process).
    AdaptiveShared,
}

impl Variant {
    /// Every variant, in table order.
    pub const ALL: [Variant; 3] = [
        Variant::RetryOnly,
        Variant::Adaptive,
        Variant::AdaptiveShared,
    ];

    /// The name used in tables and figures.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Variant::RetryOnly => "retry only",
            Variant::Adaptive => "retry + adaptive limiter per client",
            Variant::AdaptiveShared => "retry + one shared adaptive limiter",
        }
    }
}

/// A limiter the experiment can watch.
pub trait Watched: RateLimiter {
    /// Its fill rate in tokens per second, once it is on.
    fn watched_fill_rate(&self) -> Option<f64>;
}

impl Watched for NoRateLimiter {
    fn watched_fill_rate(&self) -> Option<f64> {
        None
    }
}

impl Watched for AdaptiveRateLimiter {
    fn watched_fill_rate(&self) -> Option<f64> {
        self.is_enabled().then(|| self.fill_rate())
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The variant.
    pub variant: Variant,
    /// Requests reaching the server per second in the window (first attempts and retries).
    pub send_rate: f64,
    /// The share of them answered `429`.
    pub share_429: f64,
    /// `200`s per second in the window.
    pub successes_per_s: f64,
    /// Operations started in the window.
    pub ops: u32,
    /// Of them, those that ended with a `200`.
    pub succeeded: u32,
    /// Of them, by stop reason ([`StopReason::as_str`](backstop_core::StopReason::as_str)),
    /// in name order.
    pub stops: Vec<(&'static str, u32)>,
    /// Of them, the attempts they sent, per operation.
    pub attempts_per_op: f64,
    /// Of them, the waits the limiter imposed per operation.
    pub held_per_op: f64,
    /// Arrivals at the server per [`BIN_NS`] bin, from 0 to [`Config::series_end`].
    pub per_second: Vec<u32>,
    /// The `429`s among them.
    pub per_second_429: Vec<u32>,
    /// Every [`SAMPLE_NS`] while operations start: the time in seconds, and the mean and the
    /// sum of the fill rates of the limiters that are on (`None` before the first is).
    pub fill: Vec<(f64, Option<(f64, f64)>)>,
    /// The limiters' fill rate summed over the clients' limiters, averaged over the window's
    /// samples in which a limiter was on (`None`: none ever was).
    pub fill_sum: Option<f64>,
}

/// The server: a token bucket, full at the start.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: u64,
}

impl Bucket {
    fn answer(&mut self, t: u64) -> Answer<'static> {
        self.tokens = (self.tokens + (t - self.at) as f64 / SEC as f64 * self.rate).min(self.burst);
        self.at = t;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Answer::status(200)
        } else {
            Answer::status(429)
        }
    }
}

/// Runs `variant`'s clients with `limiters` (one per client, or one shared by all; a
/// [`NoRateLimiter`] for retrying only).
///
/// # Panics
///
/// If `limiters` is empty, or the machine misbehaves.
#[must_use]
pub fn run_with<L: Watched>(config: &Config, variant: Variant, limiters: &[L]) -> Outcome {
    let (_, end) = config.window();
    let setup = Setup {
        clients: config.clients,
        clients_per_process: 1,
        interval: config.interval,
        horizon: Duration::from_nanos(end),
        policy: Policy::default(),
        seed: config.seed,
        sample_every: Some(Duration::from_nanos(SAMPLE_NS)),
    };
    let mut bucket = Bucket {
        rate: config.server_rate,
        burst: config.server_burst,
        tokens: config.server_burst,
        at: 0,
    };
    let mut fill = Vec::new();
    let trace = open_loop::run(
        &setup,
        &[NoGate],
        limiters,
        |t| bucket.answer(t),
        |t, limiters: &[L]| {
            let on: Vec<f64> = limiters
                .iter()
                .filter_map(Watched::watched_fill_rate)
                .collect();
            let sum = on.iter().sum::<f64>();
            let both = (!on.is_empty()).then(|| (sum / on.len() as f64, sum));
            fill.push((t, both));
        },
    );
    summarise(config, variant, &trace, fill)
}

/// Runs one variant.
#[must_use]
pub fn run(config: &Config, variant: Variant) -> Outcome {
    match variant {
        Variant::RetryOnly => run_with(config, variant, &[NoRateLimiter]),
        Variant::Adaptive => {
            let limiters: Vec<AdaptiveRateLimiter> = (0..config.clients)
                .map(|_| AdaptiveRateLimiter::new())
                .collect();
            run_with(config, variant, &limiters)
        }
        Variant::AdaptiveShared => run_with(config, variant, &[AdaptiveRateLimiter::new()]),
    }
}

fn summarise(
    config: &Config,
    variant: Variant,
    trace: &Trace,
    fill: Vec<(u64, Option<(f64, f64)>)>,
) -> Outcome {
    let (start, end) = config.window();
    let secs = config.measure.as_secs_f64();
    let arrivals = f64::from(trace.arrivals_in(start, end, |_| true));
    let throttled = f64::from(trace.arrivals_in(start, end, |a| a.status == 429));
    let ok = f64::from(trace.arrivals_in(start, end, |a| a.status == 200));
    let ops: Vec<&open_loop::Op> = trace
        .ops
        .iter()
        .filter(|o| (start..end).contains(&o.started))
        .collect();
    let n = ops.len().max(1) as f64;
    let in_window: Vec<f64> = fill
        .iter()
        .filter(|(t, _)| (start..end).contains(t))
        .filter_map(|&(_, f)| f.map(|(_, sum)| sum))
        .collect();
    let series_end = config.series_end();
    Outcome {
        variant,
        send_rate: arrivals / secs,
        share_429: throttled / arrivals.max(1.0),
        successes_per_s: ok / secs,
        ops: u32::try_from(ops.len()).unwrap_or(u32::MAX),
        succeeded: u32::try_from(ops.iter().filter(|o| o.succeeded()).count()).unwrap_or(u32::MAX),
        stops: open_loop::stops(ops.iter().copied()),
        attempts_per_op: ops
            .iter()
            .map(|o| f64::from(o.outcome.attempts))
            .sum::<f64>()
            / n,
        held_per_op: ops.iter().map(|o| f64::from(o.held)).sum::<f64>() / n,
        per_second: trace.arrivals_per_bin(BIN_NS, series_end, |_| true),
        per_second_429: trace.arrivals_per_bin(BIN_NS, series_end, |a| a.status == 429),
        fill: fill
            .into_iter()
            .map(|(t, f)| (t as f64 / SEC as f64, f))
            .collect(),
        fill_sum: (!in_window.is_empty())
            .then(|| in_window.iter().sum::<f64>() / in_window.len() as f64),
    }
}

/// The goals, checked against measured outcomes: each entry is the statement and
/// whether it holds.
#[must_use]
pub fn checks(outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let get = |v: Variant| outcomes.iter().find(|o| o.variant == v);
    let (Some(retry), Some(adaptive)) = (get(Variant::RetryOnly), get(Variant::Adaptive)) else {
        return vec![(
            "the retry-only and adaptive variants were run".to_owned(),
            false,
        )];
    };
    let (lower, ratio) = if adaptive.share_429 > 0.0 {
        let ratio = retry.share_429 / adaptive.share_429;
        (format!("{ratio:.1}x lower"), ratio)
    } else if retry.share_429 > 0.0 {
        ("none at all with the limiter".to_owned(), f64::INFINITY)
    } else {
        ("none in either".to_owned(), 1.0)
    };
    vec![
        (
            format!(
                "retry + adaptive limiter: aggregate send rate {:.1} requests/s within [70, 105]",
                adaptive.send_rate
            ),
            (70.0..=105.0).contains(&adaptive.send_rate),
        ),
        (
            format!(
                "429 share {:.1} % with retries only, {:.2} % with the limiter: {lower} (at least 5x)",
                100.0 * retry.share_429,
                100.0 * adaptive.share_429
            ),
            ratio >= 5.0,
        ),
    ]
}
