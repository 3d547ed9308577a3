//! Issue 21's pushback experiment: 100 clients at 10 requests/s each against a server that
//! answers `503` with `Retry-After: 10` for 10 s, then recovers; without an origin gate, with
//! one [`OriginGate`] per client, and with one gate shared by all, each gate variant under
//! three reopening rules ([`Reopening`]): at once (no slow start), linear over 10 s (the
//! default) and doubling every second (TCP's slow start). Issue 27's goal: the outage stays
//! quiet and the recovery is no herd, at most 1.5 times the steady load per 100 ms in the
//! first 3 s after it.
//!
//! The clients and their operations are [`open_loop`]'s: client `c` starts a `GET` every
//! 100 ms at its own seeded phase, each a real [`RetryMachine`](backstop_core::RetryMachine)
//! with the default [`Policy`] (4 attempts, 5 s per attempt, 15 s in all, `Retry-After`
//! honoured as a floor plus a spread of `min(1 s, value / 10)`, ceiling 60 s). The server
//! answers every request that arrives in `[outage_start, outage_start + outage)` with
//! `503 Retry-After: 10`, every other one with `200`. The gates have the default
//! configuration (spread 1 s, await-probe recheck 50 ms) but for the reopening rule, each
//! seeded from the run's seed (as `OriginGates` seeds each from the operating system).

use core::time::Duration;

use backstop_core::{Gate, GateConfig, NoGate, NoRateLimiter, OriginGate, Policy, Reopening};

use crate::net::{mix, MS};
use crate::open_loop::{self, nanos, Answer, Setup, Trace, SEC};

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

    /// The steady offered load per [`BIN_NS`]: every client's first attempts.
    #[must_use]
    pub fn steady_per_bin(&self) -> f64 {
        f64::from(self.clients) * BIN_NS as f64 / self.interval.as_nanos() as f64
    }

    /// The operations the clients start: each client one per interval from its phase, which
    /// is below one interval.
    #[must_use]
    pub fn operations(&self) -> u32 {
        let per_client = nanos(self.duration).div_ceil(nanos(self.interval).max(1));
        self.clients
            .saturating_mul(u32::try_from(per_client).unwrap_or(u32::MAX))
    }
}

/// The most a gate variant's peak per 100 ms in the first 3 s after the recovery may be, as
/// a multiple of the steady offered load (issue 27's recovery goal).
pub const RECOVERY_PEAK: f64 = 1.5;

/// The doubling interval of the [`Reopening::Doubling`] rows: a second, TCP's shape on the
/// time scale of the spread.
pub const DOUBLING_EVERY: Duration = Duration::from_secs(1);

/// A reopening rule's name in tables and figures.
#[must_use]
pub fn rule_name(rule: Reopening) -> String {
    let default = if rule == Reopening::DEFAULT {
        " (default)"
    } else {
        ""
    };
    let name = match rule {
        Reopening::AtOnce => "at once".to_owned(),
        Reopening::Linear { ramp } => format!("linear {} s", ramp.as_secs_f64()),
        Reopening::Doubling { every } => format!("doubling every {} s", every.as_secs_f64()),
        other => format!("{other:?}"),
    };
    format!("{name}{default}")
}

/// Which gate the clients' operations consult, and how it reopens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// No gate: each operation honours its own `Retry-After`, nothing more.
    NoGate,
    /// One [`OriginGate`] per client, shared by that client's operations.
    PerClient(Reopening),
    /// One [`OriginGate`] shared by every client's operations.
    Shared(Reopening),
}

impl Variant {
    /// Every variant, in table order: no gate, then both gate variants under each rule.
    pub const ALL: [Variant; 7] = [
        Variant::NoGate,
        Variant::PerClient(Reopening::AtOnce),
        Variant::Shared(Reopening::AtOnce),
        Variant::PerClient(Reopening::DEFAULT),
        Variant::Shared(Reopening::DEFAULT),
        Variant::PerClient(Reopening::Doubling {
            every: DOUBLING_EVERY,
        }),
        Variant::Shared(Reopening::Doubling {
            every: DOUBLING_EVERY,
        }),
    ];

    /// The name used in tables and figures.
    #[must_use]
    pub fn name(self) -> String {
        match self {
            Variant::NoGate => "no gate".to_owned(),
            Variant::PerClient(rule) => format!("gate per client, {}", rule_name(rule)),
            Variant::Shared(rule) => format!("one shared gate, {}", rule_name(rule)),
        }
    }

    /// The gates' reopening rule (`None` without a gate).
    #[must_use]
    pub const fn rule(self) -> Option<Reopening> {
        match self {
            Variant::NoGate => None,
            Variant::PerClient(rule) | Variant::Shared(rule) => Some(rule),
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

/// The gate of client `c` (or of all, `c = None`) under `seed`, reopening by `rule`.
///
/// # Panics
///
/// If `rule` is out of range (the rules of [`Variant::ALL`] are not).
#[must_use]
pub fn gate(seed: u64, c: Option<u32>, rule: Reopening) -> OriginGate {
    let seed = match c {
        Some(c) => mix(seed, &[3, u64::from(c)]),
        None => mix(seed, &[3]),
    };
    OriginGate::new(GateConfig::new().seed(seed).reopening(rule)).expect("a valid reopening rule")
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
        Variant::PerClient(rule) => {
            let gates: Vec<OriginGate> = (0..config.clients)
                .map(|c| gate(config.seed, Some(c), rule))
                .collect();
            let trace = simulate(config, &gates);
            let closes = gates.iter().map(OriginGate::closes).sum();
            let reopens = gates.iter().map(OriginGate::reopens).sum();
            (trace, closes, reopens)
        }
        Variant::Shared(rule) => {
            let g = gate(config.seed, None, rule);
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
    let during = trace.durations_s(start, end);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Outcome {
        variant,
        in_outage: trace.arrivals_in(start, end, |_| true),
        total: count(trace.arrivals.len()),
        ops: count(trace.ops.len()),
        succeeded: count(trace.ops.iter().filter(|o| o.succeeded()).count()),
        stops: trace.stops(),
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
/// statement and whether it holds. `outcomes` holds one per [`Variant::ALL`]. The outage
/// bounds hold for every rule; the recovery goal is checked for the default rule (the other
/// rules are there to show why it was chosen).
#[must_use]
pub fn checks(config: &Config, outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let get = |v: Variant| outcomes.iter().find(|o| o.variant == v);
    let Some(none) = get(Variant::NoGate) else {
        return vec![("every variant was run".to_owned(), false)];
    };
    // Every operation started during the outage sends its first attempt into it.
    let offered =
        f64::from(config.clients) * config.outage.as_secs_f64() / config.interval.as_secs_f64();
    let mut checks = vec![(
        format!(
            "no gate: {} requests during the outage, about the {offered:.0} first attempts (within 5 %)",
            none.in_outage
        ),
        (f64::from(none.in_outage) - offered).abs() <= 0.05 * offered,
    )];
    let rules: Vec<Reopening> = Variant::ALL.iter().filter_map(|v| v.rule()).collect();
    for (i, &rule) in rules.iter().enumerate() {
        if rules[..i].contains(&rule) {
            continue;
        }
        let (Some(per), Some(shared)) = (get(Variant::PerClient(rule)), get(Variant::Shared(rule)))
        else {
            return vec![("every variant was run".to_owned(), false)];
        };
        checks.push((
            format!(
                "{}: {} requests during the outage, at most 2 per client ({})",
                per.variant.name(),
                per.in_outage,
                2 * config.clients
            ),
            per.in_outage <= 2 * config.clients,
        ));
        checks.push((
            format!(
                "{}: {} requests during the outage, fewer than per client ({}) and at most {}",
                shared.variant.name(),
                shared.in_outage,
                per.in_outage,
                config.clients / 2
            ),
            shared.in_outage < per.in_outage && shared.in_outage <= config.clients / 2,
        ));
    }
    let steady = config.steady_per_bin();
    for o in outcomes
        .iter()
        .filter(|o| o.variant.rule() == Some(Reopening::DEFAULT))
    {
        checks.push((
            format!(
                "{}: peak {} per 100 ms in the first 3 s after the recovery, {:.2}x the steady {steady:.0} (goal: at most {RECOVERY_PEAK}x)",
                o.variant.name(),
                o.peak_3s,
                f64::from(o.peak_3s) / steady
            ),
            f64::from(o.peak_3s) <= RECOVERY_PEAK * steady,
        ));
    }
    let expected = config.operations();
    let ended = |o: &Outcome| o.stops.iter().map(|&(_, n)| n).sum::<u32>();
    let final_status = |o: &Outcome| {
        o.stops
            .iter()
            .find(|&&(r, _)| r == "final_status")
            .map_or(0, |&(_, n)| n)
    };
    checks.push((
        format!(
            "none lost: in every variant all {expected} operations ended, with a 200 or by giving up with a stop reason, each counted"
        ),
        outcomes.len() == Variant::ALL.len()
            && outcomes.iter().all(|o| {
                o.ops == expected && ended(o) == expected && final_status(o) == o.succeeded
            }),
    ));
    checks
}
