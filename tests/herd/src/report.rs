//! The tables, as Markdown.

use core::fmt::Write as _;

use crate::contention::{self, Strategy};
use crate::hedging;
use crate::overload::Outcome;

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
