//! The tables, as Markdown.

use core::fmt::Write as _;

use crate::adaptive;
use crate::contention::{self, Strategy};
use crate::fleet;
use crate::hedging;
use crate::net::MS;
use crate::open_loop::SEC;
use crate::overload::Outcome;
use crate::pushback;

/// Part 1 at one N: every strategy's calls and completion time.
#[must_use]
pub fn contention_table(results: &[contention::Result]) -> String {
    let mut s = String::from(
        "| strategy | runs | calls (mean) | calls p5 | calls p95 | time ms (mean) | time p5 | time p95 |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.0} | {:.0} | {:.1} | {:.0} | {:.0} |",
            r.strategy.name(),
            r.runs,
            r.calls.mean,
            r.calls.p5,
            r.calls.p95,
            r.time_ms.mean,
            r.time_ms.p5,
            r.time_ms.p95
        );
    }
    s
}

/// Part 1 over N: one column per strategy, the mean of `value`.
#[must_use]
pub fn sweep_table(
    results: &[contention::Result],
    what: &str,
    value: impl Fn(&contention::Result) -> f64,
) -> String {
    let mut s = String::from("| N | runs |");
    for st in Strategy::ALL {
        let _ = write!(s, " {} {what} |", st.name());
    }
    s.push_str("\n|---:|---:|");
    s.push_str(&"---:|".repeat(Strategy::ALL.len()));
    s.push('\n');
    let mut ns: Vec<u32> = results.iter().map(|r| r.clients).collect();
    ns.sort_unstable();
    ns.dedup();
    for n in ns {
        let row: Vec<&contention::Result> = Strategy::ALL
            .iter()
            .filter_map(|&st| results.iter().find(|r| r.clients == n && r.strategy == st))
            .collect();
        let runs = row.first().map_or(0, |r| r.runs);
        let _ = write!(s, "| {n} | {runs} |");
        for r in row {
            let _ = write!(s, " {:.0} |", value(r));
        }
        s.push('\n');
    }
    s
}

/// Part 2: one row per scenario and client.
#[must_use]
pub fn overload_table(outcomes: &[Outcome]) -> String {
    let mut s = String::from(
        "| scenario | client | amplification | goodput (ok/s) | success, ops in event | success, all ops | recovery (s) |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for o in outcomes {
        let recovery = o
            .recovery_s
            .map_or_else(|| "never".to_owned(), |r| format!("{r:.1}"));
        let _ = writeln!(
            s,
            "| {} | {} | {:.2}x | {:.0} | {:.1}% | {:.1}% | {} |",
            o.scenario.name(),
            o.client.name(),
            o.amplification,
            o.goodput,
            100.0 * o.success_share,
            100.0 * o.success_share_all,
            recovery
        );
    }
    s
}

/// A list of checks, each marked as holding or not.
#[must_use]
pub fn checks(items: &[(String, bool)]) -> String {
    let mut s = String::new();
    for (what, ok) in items {
        let _ = writeln!(s, "- [{}] {what}", if *ok { "x" } else { " " });
    }
    s
}

/// The hedging experiment: one row per case, the user-visible latency's percentiles and the
/// extra leaf requests.
#[must_use]
pub fn hedge_table(outcomes: &[hedging::Outcome]) -> String {
    let mut s = String::from(
        "| case | p50 ms | p95 ms | p99 ms | p99.9 ms | extra % |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for o in outcomes {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |",
            o.case.name,
            o.percentile(0.50),
            o.percentile(0.95),
            o.percentile(0.99),
            o.percentile(0.999),
            o.extra_percent()
        );
    }
    s
}

/// The hedging experiment's load: per case, the mean hedging delay, the extra leaf requests
/// in all and in the worst `window` bins, and the copies the budget denied.
#[must_use]
pub fn hedge_load_table(outcomes: &[hedging::Outcome], window: usize) -> String {
    let mut s = format!(
        "| case | mean delay ms | p99.9 ms | extra % | worst {window} s extra % | copies denied |\n\
         |---|---:|---:|---:|---:|---:|\n"
    );
    for o in outcomes {
        let delay = o
            .mean_delay_ms()
            .map_or_else(|| "none".to_owned(), |d| format!("{d:.2}"));
        let _ = writeln!(
            s,
            "| {} | {delay} | {:.1} | {:.2} | {:.2} | {} |",
            o.case.name,
            o.percentile(0.999),
            o.extra_percent(),
            o.worst_window_percent(window),
            o.denied
        );
    }
    s
}

/// The stop reasons of some outcomes, as columns: every reason any of them has, in name
/// order.
fn reasons<'a>(stops: impl Iterator<Item = &'a [(&'static str, u32)]>) -> Vec<&'static str> {
    let mut all: Vec<&'static str> = stops.flat_map(|s| s.iter().map(|&(r, _)| r)).collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn count(stops: &[(&'static str, u32)], reason: &str) -> u32 {
    stops
        .iter()
        .find(|&&(r, _)| r == reason)
        .map_or(0, |&(_, n)| n)
}

/// The pushback experiment: one row per variant, the load during and after the outage;
/// `steady` is the offered load per 100 ms.
#[must_use]
pub fn pushback_table(outcomes: &[pushback::Outcome], steady: f64) -> String {
    let mut s = format!(
        "| variant | requests during the outage | requests in all | peak per 100 ms, 1st s after recovery | peak per 100 ms, first 3 s (goal: at most {:.0}) | peak / steady | requests in the 1st s | gate waits | closings / reopenings | time to an answer, ops started in the outage (mean / max s) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        pushback::RECOVERY_PEAK * steady
    );
    for o in outcomes {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.2}x | {} | {} | {} / {} | {:.2} / {:.2} |",
            o.variant.name(),
            o.in_outage,
            o.total,
            o.peak_1s,
            o.peak_3s,
            f64::from(o.peak_3s) / steady,
            o.first_second,
            o.held,
            o.closes,
            o.reopens,
            o.outage_ops_mean_s,
            o.outage_ops_max_s
        );
    }
    s
}

/// The pushback experiment: the operations of each variant by how they ended.
#[must_use]
pub fn pushback_stops_table(outcomes: &[pushback::Outcome]) -> String {
    stops_table(
        &outcomes
            .iter()
            .map(|o| (o.variant.name(), o.ops, o.succeeded, o.stops.as_slice()))
            .collect::<Vec<_>>(),
    )
}

/// One row of [`stops_table`]: the variant, its operations, those that ended with a `200`,
/// and its stops.
type StopsRow<'a> = (String, u32, u32, &'a [(&'static str, u32)]);

/// The operations of each row by how they ended, one column per stop reason.
fn stops_table(rows: &[StopsRow<'_>]) -> String {
    let reasons = reasons(rows.iter().map(|&(_, _, _, stops)| stops));
    let mut s = String::from("| variant | operations | ended with 200 |");
    for r in &reasons {
        let _ = write!(s, " stop: {r} |");
    }
    s.push_str("\n|---|---:|---:|");
    s.push_str(&"---:|".repeat(reasons.len()));
    s.push('\n');
    for (name, ops, succeeded, stops) in rows {
        let _ = write!(s, "| {name} | {ops} | {succeeded} |");
        for r in &reasons {
            let _ = write!(s, " {} |", count(stops, r));
        }
        s.push('\n');
    }
    s
}

/// The pushback experiment: why the default rule, in the run's numbers: each rule's worst
/// peak in the first 3 s after the recovery, against the goal.
#[must_use]
pub fn why_the_default(outcomes: &[pushback::Outcome], steady: f64) -> String {
    let mut rules: Vec<backstop_core::Reopening> = Vec::new();
    for rule in outcomes.iter().filter_map(|o| o.variant.rule()) {
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    let mut s = format!(
        "The reopening rules, by their worst peak per 100 ms in the first 3 s after the recovery (goal: at most {}x the steady load):\n\n",
        pushback::RECOVERY_PEAK
    );
    for rule in rules {
        let worst = outcomes
            .iter()
            .filter(|o| o.variant.rule() == Some(rule))
            .map(|o| o.peak_3s)
            .max()
            .unwrap_or(0);
        let gave_up: u32 = outcomes
            .iter()
            .filter(|o| o.variant.rule() == Some(rule))
            .map(|o| o.ops - o.succeeded)
            .max()
            .unwrap_or(0);
        let ratio = f64::from(worst) / steady;
        let verdict = if ratio <= pushback::RECOVERY_PEAK {
            "meets the goal"
        } else {
            "misses the goal"
        };
        let _ = writeln!(
            s,
            "- {}: {ratio:.2}x ({verdict}), at most {gave_up} operations without a 200",
            pushback::rule_name(rule),
        );
    }
    s.push_str(
        "\nReopening at once hands the recovering server the whole backlog within the gate's spread; \
         doubling starts at the measured pace but quadruples it within 3 s while the backlog lasts; \
         linear grows by a tenth of it per second, and pays with the backlog's wait \
         (operations whose slot falls past their deadline give up `origin_paused` at once).\n",
    );
    s
}

/// Values in rows of `per_row`, each row labelled with its first bin's start in ms relative
/// to `origin` (bins of `width` ns from `first`).
fn series_table(values: &[u32], first: i64, width: u64, per_row: usize) -> String {
    let mut s = String::from("| from (ms) |");
    for i in 0..per_row {
        let _ = write!(s, " +{} |", i as u64 * width / MS);
    }
    s.push_str("\n|---:|");
    s.push_str(&"---:|".repeat(per_row));
    s.push('\n');
    for (r, row) in values.chunks(per_row).enumerate() {
        let start = first + (r * per_row) as i64 * (width / MS) as i64;
        let _ = write!(s, "| {start} |");
        for v in row {
            let _ = write!(s, " {v} |");
        }
        s.push('\n');
    }
    s
}

/// The fleet: its rows, its operations by how they ended, the checked row's arrivals per
/// 10 ms at the reopening and per 100 ms after it, and the goals.
#[must_use]
pub fn fleet_section(
    config: &fleet::Config,
    outcomes: &[fleet::Outcome],
    checks_: &[(String, bool)],
) -> String {
    let steady = config.steady_per_bin();
    let (start, end) = config.window();
    let mut s = format!(
        "## Fleet (seed {}): {} processes of {} clients at {:.0} requests/s each; 503 with an HTTP-date `Retry-After` naming {} s, from {} s to {} s; capacity {} per 100 ms\n\n\
         The steady offered load is {steady:.0} requests per 100 ms. The reopening window is [{} s, {} s + 1 s).\n\n\
         | variant | requests during the outage | requests in all | answered 503 for capacity | peak per 10 ms in the window | mean per 10 ms in the window | peak / mean (goal: at most {}x) | peak per 10 ms / steady | peak per 100 ms, first 3 s (goal: at most {:.0}) | peak / steady | requests in the 1st s | waits per op | closings / reopenings | time to an answer, ops started in the outage (mean / max s) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        config.seed,
        config.processes,
        config.clients_per_process,
        1.0 / config.interval.as_secs_f64(),
        end / SEC,
        start as f64 / SEC as f64,
        end / SEC,
        config.capacity_per_bin,
        end / SEC,
        end / SEC,
        fleet::WINDOW_PEAK,
        pushback::RECOVERY_PEAK * steady,
    );
    for o in outcomes {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.1} | {:.2}x | {:.2}x | {} | {:.2}x | {} | {:.2} | {} / {} | {:.2} / {:.2} |",
            o.variant.name(),
            o.in_outage,
            o.total,
            o.over_capacity,
            o.window_peak,
            o.window_mean,
            f64::from(o.window_peak) / o.window_mean.max(f64::MIN_POSITIVE),
            f64::from(o.window_peak) * fleet::BIN_NS as f64 / fleet::FINE_NS as f64 / steady,
            o.peak_3s,
            f64::from(o.peak_3s) / steady,
            o.first_second,
            o.held_per_op,
            o.closes,
            o.reopens,
            o.outage_ops_mean_s,
            o.outage_ops_max_s
        );
    }
    s.push_str("\nOperations by how they ended:\n\n");
    s.push_str(&stops_table(
        &outcomes
            .iter()
            .map(|o| (o.variant.name(), o.ops, o.succeeded, o.stops.as_slice()))
            .collect::<Vec<_>>(),
    ));
    for o in outcomes {
        let fine = (end - 50 * MS) / fleet::FINE_NS;
        let fine = o
            .per_fine
            .get(fine as usize..fine as usize + 30)
            .unwrap_or_default();
        let bins = (end / fleet::BIN_NS) as usize;
        let bins = o.per_bin.get(bins..bins + 50).unwrap_or_default();
        let _ = write!(
            s,
            "\n{}: requests per 10 ms around the reopening (ms from {} s):\n\n{}\n\
             {}: requests per 100 ms after it:\n\n{}",
            o.variant.name(),
            end / SEC,
            series_table(fine, -50, fleet::FINE_NS, 10),
            o.variant.name(),
            series_table(bins, 0, fleet::BIN_NS, 10),
        );
    }
    let _ = write!(s, "\nThe goals:\n\n{}\n", checks(checks_));
    s
}

/// The adaptive experiment: one row per variant, the measured rates beside the goals.
#[must_use]
pub fn adaptive_table(outcomes: &[adaptive::Outcome]) -> String {
    let mut s = String::from(
        "| variant | send rate (requests/s; goal with the limiter: 70 to 105) | 429 share (goal: at least 5x lower with the limiter) | successes/s | limiters' fill rate, summed (tokens/s) |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for o in outcomes {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.2} % | {:.1} | {} |",
            o.variant.name(),
            o.send_rate,
            100.0 * o.share_429,
            o.successes_per_s,
            o.fill_sum
                .map_or_else(|| "no limiter".to_owned(), |f| format!("{f:.1}"))
        );
    }
    s
}

/// The adaptive experiment: the operations started in the window, by how they ended.
#[must_use]
pub fn adaptive_ops_table(outcomes: &[adaptive::Outcome]) -> String {
    let reasons = reasons(outcomes.iter().map(|o| o.stops.as_slice()));
    let mut s = String::from(
        "| variant | operations | ended with 200 | attempts per op | limiter waits per op |",
    );
    for r in &reasons {
        let _ = write!(s, " stop: {r} |");
    }
    s.push_str("\n|---|---:|---:|---:|---:|");
    s.push_str(&"---:|".repeat(reasons.len()));
    s.push('\n');
    for o in outcomes {
        let _ = write!(
            s,
            "| {} | {} | {} | {:.2} | {:.2} |",
            o.variant.name(),
            o.ops,
            o.succeeded,
            o.attempts_per_op,
            o.held_per_op
        );
        for r in &reasons {
            let _ = write!(s, " {} |", count(&o.stops, r));
        }
        s.push('\n');
    }
    s
}
