//! Issue 21's pushback experiment: 100 clients at 10 requests/s each against a server that
//! answers `503` with `Retry-After: 10` for 10 s, then recovers; without an origin gate, with
//! one [`OriginGate`] per client, and with one gate shared by all.
//!
//! The clients and their operations are [`open_loop`]'s: client `c` starts a `GET` every
//! 100 ms at its own seeded phase, each a real [`RetryMachine`](backstop_core::RetryMachine)
//! with the default [`Policy`] (4 attempts, 5 s per attempt, 15 s in all, `Retry-After`
//! honoured as a floor plus a spread of `min(1 s, value / 10)`, ceiling 60 s). The server
//! answers every request that arrives in `[outage_start, outage_start + outage)` with
//! `503 Retry-After: 10`, every other one with `200`. The gates have the default
//! configuration (spread 1 s, await-probe recheck 50 ms), each seeded from the run's seed.

use core::time::Duration;
use std::collections::BTreeMap;

use backstop_core::{Gate, GateConfig, NoGate, NoRateLimiter, OriginGate, Policy};

use crate::net::{mix, MS};
use crate::open_loop::{self, Answer, Setup, Trace, SEC};

/// The width of one bin of the arrivals-over-time series.
pub const BIN_NS: u64 = 100 * MS;

/// The experiment's fixed numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of clients.
    pub clients: u32,
    /// The time between two operations of one client.
    pub interval: Duration,
    /// When the outage starts.
    pub outage_start: Duration,
    /// How long it lasts.
    pub outage: Duration,
    /// Operations start in `[0, duration)`.
    pub duration: Duration,
    /// Fixes the phases, the network, every operation's jitter and the gates' seeds.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            clients: 100,
            interval: Duration::from_millis(100),
            outage_start: Duration::from_secs(5),
            outage: Duration::from_secs(10),
            duration: Duration::from_secs(30),
            seed: 2021,
        }
    }
}

impl Config {
    /// The outage `[start, end)` in nanoseconds.
    #[must_use]
    pub fn window(&self) -> (u64, u64) {
        let start = nanos(self.outage_start);
        (start, start + nanos(self.outage))
    }

    /// Where the series over time ends: the last operation's deadline, and a second.
    #[must_use]
    pub fn series_end(&self) -> u64 {
        nanos(self.duration) + nanos(Policy::default().max_elapsed()) + SEC
    }
}

/// Which gate the clients' operations consult.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// No gate: each operation honours its own `Retry-After`, nothing more.
    NoGate,
    /// One [`OriginGate`] per client, shared by that client's operations.
    PerClient,
    /// One [`OriginGate`] shared by every client's operations.
    Shared,
}

impl Variant {
    /// Every variant, in table order.
    pub const ALL: [Variant; 3] = [Variant::NoGate, Variant::PerClient, Variant::Shared];

    /// The name used in tables and figures.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Variant::NoGate => "no gate",
            Variant::PerClient => "gate per client",
            Variant::Shared => "one shared gate",
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The variant.
    pub variant: Variant,
    /// Requests that reached the server during the outage (first attempts and retries).
    pub in_outage: u32,
    /// Requests that reached the server in all.
    pub total: u32,
    /// Operations started.
    pub ops: u32,
    /// Operations that ended with a `200`.
    pub succeeded: u32,
    /// Operations by stop reason ([`StopReason::as_str`](backstop_core::StopReason::as_str)),
    /// in name order.
    pub stops: Vec<(&'static str, u32)>,
    /// Arrivals at the server per [`BIN_NS`] bin, from 0 to [`Config::series_end`].
    pub per_bin: Vec<u32>,
    /// The most arrivals in one bin of the first second after the server recovered.
    pub peak_1s: u32,
    /// The same over the first 3 s.
    pub peak_3s: u32,
    /// Arrivals in the first second after the server recovered.
    pub first_second: u32,
    /// The mean time from start to end of the operations started during the outage, in
    /// seconds.
    pub outage_ops_mean_s: f64,
    /// The longest of them, in seconds.
    pub outage_ops_max_s: f64,
    /// Waits the gate imposed ([`DelaySource::OriginPaused`](backstop_core::DelaySource)).
    pub held: u64,
    /// Closings of the gates, summed over them.
    pub closes: u64,
    /// Reopenings of the gates, summed over them.
    pub reopens: u64,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The gate of client `c` (or of all, `c = None`) under `seed`.
///
/// # Panics
///
/// Never: the default configuration is valid.
#[must_use]
pub fn gate(seed: u64, c: Option<u32>) -> OriginGate {
    let seed = match c {
        Some(c) => mix(seed, &[3, u64::from(c)]),
        None => mix(seed, &[3]),
    };
    OriginGate::new(GateConfig::new().seed(seed)).expect("the default gate is valid")
}

fn simulate<G: Gate>(config: &Config, gates: &[G]) -> Trace {
    let (start, end) = config.window();
    let setup = Setup {
        clients: config.clients,
        clients_per_process: 1,
        interval: config.interval,
        horizon: config.duration,
        policy: Policy::default(),
        seed: config.seed,
        sample_every: None,
    };
    let server = |t: u64| {
        if (start..end).contains(&t) {
            Answer {
                status: 503,
                retry_after: Some(b"10"),
            }
        } else {
            Answer::status(200)
        }
    };
    open_loop::run(&setup, gates, &[NoRateLimiter], server, |_, _| {})
}

/// Runs one variant.
#[must_use]
pub fn run(config: &Config, variant: Variant) -> Outcome {
    let (trace, closes, reopens) = match variant {
        Variant::NoGate => (simulate(config, &[NoGate]), 0, 0),
        Variant::PerClient => {
            let gates: Vec<OriginGate> = (0..config.clients)
                .map(|c| gate(config.seed, Some(c)))
                .collect();
            let trace = simulate(config, &gates);
            let closes = gates.iter().map(OriginGate::closes).sum();
            let reopens = gates.iter().map(OriginGate::reopens).sum();
            (trace, closes, reopens)
        }
        Variant::Shared => {
            let g = gate(config.seed, None);
            let trace = simulate(config, core::slice::from_ref(&g));
            (trace, g.closes(), g.reopens())
        }
    };
    summarise(config, variant, &trace, closes, reopens)
}

fn summarise(
    config: &Config,
    variant: Variant,
    trace: &Trace,
    closes: u64,
    reopens: u64,
) -> Outcome {
    let (start, end) = config.window();
    let per_bin = trace.arrivals_per_bin(BIN_NS, config.series_end(), |_| true);
    let first = (end / BIN_NS) as usize;
    let peak = |secs: usize| {
        per_bin
            .get(first..first + secs * (SEC / BIN_NS) as usize)
            .unwrap_or_default()
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
    };
    let mut stops = BTreeMap::new();
    for op in &trace.ops {
        *stops.entry(op.outcome.reason.as_str()).or_insert(0u32) += 1;
    }
    let during: Vec<f64> = trace
        .ops
        .iter()
        .filter(|o| (start..end).contains(&o.started))
        .map(|o| (o.ended - o.started) as f64 / SEC as f64)
        .collect();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Outcome {
        variant,
        in_outage: trace.arrivals_in(start, end, |_| true),
        total: count(trace.arrivals.len()),
        ops: count(trace.ops.len()),
        succeeded: count(trace.ops.iter().filter(|o| o.succeeded()).count()),
        stops: stops.into_iter().collect(),
        peak_1s: peak(1),
        peak_3s: peak(3),
        first_second: trace.arrivals_in(end, end + SEC, |_| true),
        per_bin,
        outage_ops_mean_s: during.iter().sum::<f64>() / during.len().max(1) as f64,
        outage_ops_max_s: during.iter().copied().fold(0.0, f64::max),
        held: trace.ops.iter().map(|o| u64::from(o.held)).sum(),
        closes,
        reopens,
    }
}

/// The experiment's expectations, checked against measured outcomes: each entry is the
/// statement and whether it holds. `outcomes` holds one per [`Variant::ALL`].
#[must_use]
pub fn checks(config: &Config, outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let get = |v: Variant| outcomes.iter().find(|o| o.variant == v);
    let (Some(none), Some(per), Some(shared)) = (
        get(Variant::NoGate),
        get(Variant::PerClient),
        get(Variant::Shared),
    ) else {
        return vec![("every variant was run".to_owned(), false)];
    };
    // Every operation started during the outage sends its first attempt into it.
    let offered =
        f64::from(config.clients) * config.outage.as_secs_f64() / config.interval.as_secs_f64();
    vec![
        (
            format!(
                "no gate: {} requests during the outage, about the {offered:.0} first attempts (within 5 %)",
                none.in_outage
            ),
            (f64::from(none.in_outage) - offered).abs() <= 0.05 * offered,
        ),
        (
            format!(
                "gate per client: {} requests during the outage, at most 2 per client ({})",
                per.in_outage,
                2 * config.clients
            ),
            per.in_outage <= 2 * config.clients,
        ),
        (
            format!(
                "one shared gate: {} requests during the outage, fewer than per client ({}) and at most {}",
                shared.in_outage,
                per.in_outage,
                config.clients / 2
            ),
            shared.in_outage < per.in_outage && shared.in_outage <= config.clients / 2,
        ),
        (
            format!(
                "every operation ended with a 200 in every variant ({}, {}, {} of {})",
                none.succeeded, per.succeeded, shared.succeeded, none.ops
            ),
            [none, per, shared]
                .iter()
                .all(|o| o.succeeded == o.ops && o.ops == none.ops),
        ),
    ]
}
