//! Issue 27's fleet: a thousand processes told the same instant.
//!
//! [`Config::processes`] processes of [`Config::clients_per_process`] open-loop clients each
//! ([`open_loop`]: a `GET` every [`Config::interval`] per client, at its own seeded phase, each
//! operation a real [`RetryMachine`](backstop_core::RetryMachine) with the default policy).
//! Each process has its own [`OriginGate`] made with the defaults (the default reopening rule)
//! and its own seed drawn from the run's seed, as `OriginGates` draws one from the operating
//! system, and its own [`AdaptiveRateLimiter::new`] (rows without a limiter tell the gate's
//! pacing from the limiter's; rows reopening [`Reopening::AtOnce`] show the fleet before slow
//! start). One origin serves them all:
//! during the outage it answers `503` with an HTTP-date `Retry-After` naming the outage's end,
//! which every process reads against its own wall clock ([`open_loop::wall_clock`]: the clocks
//! are in perfect step, the worst case for a herd), so every gate closes until the same
//! instant. Outside the outage the origin has a fixed capacity per 100 ms window
//! ([`Config::capacity_per_bin`]); a request beyond it gets `503` without `Retry-After`.

use core::time::Duration;

use backstop_core::{
    AdaptiveRateLimiter, GateConfig, NoRateLimiter, OriginGate, Policy, RateLimiter, Reopening,
};

use crate::net::{mix, MS};
use crate::open_loop::{self, nanos, Answer, Setup, Trace, SEC, UNIX_AT_ZERO};
use crate::pushback::{rule_name, RECOVERY_PEAK};

/// The bins around the reopening.
pub const FINE_NS: u64 = 10 * MS;
/// The bins after it.
pub const BIN_NS: u64 = 100 * MS;
/// The reopening window: from the instant every process was told, this long. The gate's
/// default spread (1 s) is the most a closing spreads its callers over.
pub const WINDOW_NS: u64 = SEC;
/// The most the peak per 10 ms in the reopening window may be, as a multiple of the window's
/// mean per 10 ms (issue 27's fleet goal).
pub const WINDOW_PEAK: f64 = 3.0;

/// The experiment's fixed numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of processes.
    pub processes: u32,
    /// Clients in each.
    pub clients_per_process: u32,
    /// The time between two operations of one client.
    pub interval: Duration,
    /// When the outage starts.
    pub outage_start: Duration,
    /// How long it lasts; the outage ends on a whole second (an HTTP-date's resolution).
    pub outage: Duration,
    /// Operations start in `[0, duration)`.
    pub duration: Duration,
    /// What the origin answers with a `200` per 100 ms window outside the outage.
    pub capacity_per_bin: u32,
    /// Fixes the phases, the network, every operation's jitter and the gates' seeds.
    pub seed: u64,
}

impl Default for Config {
    /// 1,000 processes of 10 clients at 10 requests/s (100,000 requests/s), a 5 s outage from
    /// 2 s, operations starting for 11 s (the 3 s after the recovery and one more), and a
    /// capacity of 1.5 times the offered load: exactly the recovery goal.
    fn default() -> Self {
        Config {
            processes: 1_000,
            clients_per_process: 10,
            interval: Duration::from_millis(100),
            outage_start: Duration::from_secs(2),
            outage: Duration::from_secs(5),
            duration: Duration::from_secs(11),
            capacity_per_bin: 15_000,
            seed: 2021,
        }
    }
}

impl Config {
    /// Number of clients.
    #[must_use]
    pub fn clients(&self) -> u32 {
        self.processes * self.clients_per_process
    }

    /// The outage `[start, end)` in nanoseconds; `end` is the instant every process is told.
    #[must_use]
    pub fn window(&self) -> (u64, u64) {
        let start = nanos(self.outage_start);
        let end = (start + nanos(self.outage)) / SEC * SEC;
        (start, end)
    }

    /// The operations the clients start.
    #[must_use]
    pub fn operations(&self) -> u32 {
        let per_client = nanos(self.duration).div_ceil(nanos(self.interval).max(1));
        self.clients()
            .saturating_mul(u32::try_from(per_client).unwrap_or(u32::MAX))
    }

    /// The steady offered load per [`BIN_NS`].
    #[must_use]
    pub fn steady_per_bin(&self) -> f64 {
        f64::from(self.clients()) * BIN_NS as f64 / self.interval.as_nanos() as f64
    }

    /// Where the series over time ends: the last operation's deadline, and a second.
    #[must_use]
    pub fn series_end(&self) -> u64 {
        nanos(self.duration) + nanos(Policy::default().max_elapsed()) + SEC
    }
}

/// How each process's gate reopens, and whether it has a limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// An [`AdaptiveRateLimiter::new`] per process (else none).
    pub limiter: bool,
    /// The gates' reopening rule.
    pub rule: Reopening,
}

impl Variant {
    /// Every variant, in table order: the defaults (checked), the gate's pacing alone
    /// (checked), and the gate alone before slow start ([`Reopening::AtOnce`]), for scale.
    /// (Before slow start with a limiter is left out: each process's backlog, released at
    /// once, waits on its limiter, which wakes every waiter at every token, some hundred
    /// million wake-ups for the fleet.)
    pub const ALL: [Variant; 3] = [
        Variant {
            limiter: true,
            rule: Reopening::DEFAULT,
        },
        Variant {
            limiter: false,
            rule: Reopening::DEFAULT,
        },
        Variant {
            limiter: false,
            rule: Reopening::AtOnce,
        },
    ];

    /// Whether the fleet's goals are checked on it: the default rule.
    #[must_use]
    pub fn checked(self) -> bool {
        self.rule == Reopening::DEFAULT
    }

    /// The name used in tables and figures.
    #[must_use]
    pub fn name(self) -> String {
        let limiter = if self.limiter {
            " + adaptive limiter"
        } else {
            ", no limiter"
        };
        format!("gate {}{limiter}", rule_name(self.rule))
    }
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The variant.
    pub variant: Variant,
    /// Requests that reached the server during the outage.
    pub in_outage: u32,
    /// Requests that reached the server in all.
    pub total: u32,
    /// Requests answered `503` for want of capacity.
    pub over_capacity: u32,
    /// Operations started.
    pub ops: u32,
    /// Operations that ended with a `200`.
    pub succeeded: u32,
    /// Operations by stop reason, in name order.
    pub stops: Vec<(&'static str, u32)>,
    /// Arrivals per [`FINE_NS`] from 0 to [`Config::series_end`].
    pub per_fine: Vec<u32>,
    /// Arrivals per [`BIN_NS`] from 0 to [`Config::series_end`].
    pub per_bin: Vec<u32>,
    /// The most arrivals in one 10 ms bin of the reopening window.
    pub window_peak: u32,
    /// The mean per 10 ms bin over the reopening window.
    pub window_mean: f64,
    /// The most arrivals in one 100 ms bin of the first 3 s after the recovery.
    pub peak_3s: u32,
    /// Arrivals in the first second after the recovery.
    pub first_second: u32,
    /// The mean time from start to end of the operations started during the outage (s).
    pub outage_ops_mean_s: f64,
    /// The longest of them (s).
    pub outage_ops_max_s: f64,
    /// Waits the gates or the limiters imposed, per operation.
    pub held_per_op: f64,
    /// Closings of the gates, summed.
    pub closes: u64,
    /// Reopenings of the gates, summed.
    pub reopens: u64,
}

/// An IMF-fixdate (RFC 9110, section 5.6.7) for `unix` seconds since the epoch.
#[must_use]
pub fn http_date(unix: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (a Thursday).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        secs / 3_600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The gate of process `p` under `seed`: the defaults, with a seed of its own, reopening by
/// `rule`.
///
/// # Panics
///
/// If `rule` is out of range (the rules of [`Variant::ALL`] are not).
#[must_use]
pub fn gate(seed: u64, p: u32, rule: Reopening) -> OriginGate {
    let config = GateConfig::new()
        .seed(mix(seed, &[5, u64::from(p)]))
        .reopening(rule);
    OriginGate::new(config).expect("a valid reopening rule")
}

fn simulate<L: RateLimiter>(config: &Config, gates: &[OriginGate], limiters: &[L]) -> Trace {
    let (start, end) = config.window();
    let date = http_date(UNIX_AT_ZERO + end / SEC);
    let setup = Setup {
        clients: config.clients(),
        clients_per_process: config.clients_per_process,
        interval: config.interval,
        horizon: config.duration,
        policy: Policy::default(),
        seed: config.seed,
        sample_every: None,
    };
    let (mut window, mut served) = (u64::MAX, 0u32);
    let server = |t: u64| {
        if (start..end).contains(&t) {
            return Answer {
                status: 503,
                retry_after: Some(date.as_bytes()),
            };
        }
        if t / BIN_NS != window {
            (window, served) = (t / BIN_NS, 0);
        }
        if served < config.capacity_per_bin {
            served += 1;
            Answer::status(200)
        } else {
            Answer::status(503)
        }
    };
    open_loop::run(&setup, gates, limiters, server, |_, _| {})
}

/// Runs one variant.
#[must_use]
pub fn run(config: &Config, variant: Variant) -> Outcome {
    let gates: Vec<OriginGate> = (0..config.processes)
        .map(|p| gate(config.seed, p, variant.rule))
        .collect();
    let trace = if variant.limiter {
        let limiters: Vec<AdaptiveRateLimiter> = (0..config.processes)
            .map(|_| AdaptiveRateLimiter::new())
            .collect();
        simulate(config, &gates, &limiters)
    } else {
        simulate(config, &gates, &[NoRateLimiter])
    };
    let closes = gates.iter().map(OriginGate::closes).sum();
    let reopens = gates.iter().map(OriginGate::reopens).sum();
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
    let series_end = config.series_end();
    let per_fine = trace.arrivals_per_bin(FINE_NS, series_end, |_| true);
    let per_bin = trace.arrivals_per_bin(BIN_NS, series_end, |_| true);
    let slice = |bins: &[u32], from: u64, to: u64, width: u64| -> Vec<u32> {
        bins.get((from / width) as usize..(to / width) as usize)
            .unwrap_or_default()
            .to_vec()
    };
    let window = slice(&per_fine, end, end + WINDOW_NS, FINE_NS);
    let during = trace.durations_s(start, end);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Outcome {
        variant,
        in_outage: trace.arrivals_in(start, end, |_| true),
        total: count(trace.arrivals.len()),
        over_capacity: trace.arrivals_in(end, u64::MAX, |a| a.status == 503)
            + trace.arrivals_in(0, start, |a| a.status == 503),
        ops: count(trace.ops.len()),
        succeeded: count(trace.ops.iter().filter(|o| o.succeeded()).count()),
        stops: trace.stops(),
        window_peak: window.iter().copied().max().unwrap_or(0),
        window_mean: window.iter().map(|&n| f64::from(n)).sum::<f64>() / window.len().max(1) as f64,
        peak_3s: slice(&per_bin, end, end + 3 * SEC, BIN_NS)
            .into_iter()
            .max()
            .unwrap_or(0),
        first_second: trace.arrivals_in(end, end + SEC, |_| true),
        per_fine,
        per_bin,
        outage_ops_mean_s: during.iter().sum::<f64>() / during.len().max(1) as f64,
        outage_ops_max_s: during.iter().copied().fold(0.0, f64::max),
        held_per_op: trace.ops.iter().map(|o| f64::from(o.held)).sum::<f64>()
            / trace.ops.len().max(1) as f64,
        closes,
        reopens,
    }
}

/// The fleet's goals, for the rows of the default rule ([`Variant::checked`]), and none lost
/// in any row: each statement and whether it holds.
#[must_use]
pub fn checks(config: &Config, outcomes: &[Outcome]) -> Vec<(String, bool)> {
    if outcomes.len() != Variant::ALL.len() {
        return vec![("every fleet variant was run".to_owned(), false)];
    }
    let steady = config.steady_per_bin();
    let mut checks = Vec::new();
    for o in outcomes.iter().filter(|o| o.variant.checked()) {
        checks.push((
            format!(
                "fleet, {}: peak {} per 10 ms in the reopening window (the told instant + 1 s), {:.2}x its mean {:.0} (goal: at most {WINDOW_PEAK}x)",
                o.variant.name(),
                o.window_peak,
                f64::from(o.window_peak) / o.window_mean.max(f64::MIN_POSITIVE),
                o.window_mean
            ),
            f64::from(o.window_peak) <= WINDOW_PEAK * o.window_mean,
        ));
        checks.push((
            format!(
                "fleet, {}: peak {} per 100 ms in the first 3 s after the recovery, {:.2}x the steady {steady:.0} (goal: at most {RECOVERY_PEAK}x)",
                o.variant.name(),
                o.peak_3s,
                f64::from(o.peak_3s) / steady
            ),
            f64::from(o.peak_3s) <= RECOVERY_PEAK * steady,
        ));
    }
    let expected = config.operations();
    let ended = |o: &Outcome| o.stops.iter().map(|&(_, n)| n).sum::<u32>();
    checks.push((
        format!(
            "fleet: none lost, in every row all {expected} operations ended with a 200 or a stop reason, each counted"
        ),
        outcomes
            .iter()
            .all(|o| o.ops == expected && ended(o) == expected),
    ));
    checks
}

#[cfg(test)]
mod tests {
    use backstop_core::{parse_http_date, UnixTime};

    use super::http_date;

    #[test]
    fn an_http_date_reads_back_as_its_instant() {
        for unix in [0, 784_111_777, 951_782_400, 1_700_000_007, 4_102_444_799] {
            let date = http_date(unix);
            assert_eq!(
                parse_http_date(date.as_bytes()),
                Some(UnixTime::from_secs(unix)),
                "{date}"
            );
        }
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
