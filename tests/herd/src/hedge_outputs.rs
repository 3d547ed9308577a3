//! What the hedging experiment writes (binary `hedge`, to `docs/hedge`): its tables and checks
//! as Markdown and its two figures, from the outcomes of every [`Case`].
//!
//! Every byte is a function of the [`Config`] and of the code (the machine, the tracker and
//! the budget it drives): nothing is read from the wall clock, and the cases run on every core
//! come back in their order. So the committed `docs/hedge` must be what the code writes; a
//! change of behaviour that moves the numbers has to regenerate it.

use std::error::Error;
use std::path::Path;

use crate::hedging::{self, claim_checks, closed_form_checks, published_checks};
use crate::hedging::{Case, Config, Outcome, BIN_NS};
use crate::parallel::parallel;
use crate::plot::{self, Axes, Corner, Line};
use crate::report;

/// The files written, in `docs/hedge` or the folder given.
pub const FILES: [&str; 3] = ["tables.md", "latency-ccdf.svg", "slowdown-load.svg"];

/// The cases run: the table's rows, then [`Case::ADAPTIVE_SLOW_UNBUDGETED`].
#[must_use]
pub fn cases() -> Vec<Case> {
    Case::ROWS
        .iter()
        .copied()
        .chain([Case::ADAPTIVE_SLOW_UNBUDGETED])
        .collect()
}

/// Runs every one of [`cases`] on every core; the outcomes come back in the cases' order.
#[must_use]
pub fn run(config: &Config) -> Vec<Outcome> {
    parallel(&cases(), |&c| hedging::run(config, c))
}

/// Every claim, checked: the experiment's, the published figures' and the closed form's.
#[must_use]
pub fn checks(outcomes: &[Outcome]) -> Vec<(String, bool)> {
    let mut checks = claim_checks(outcomes);
    if let Some(none) = outcomes.iter().find(|o| o.case == Case::NONE) {
        checks.extend(published_checks(none));
    }
    checks.extend(closed_form_checks(outcomes));
    checks
}

/// The budget's window, in bins of the series over time.
fn window_bins() -> usize {
    (hedging::BUDGET_WINDOW.as_nanos() / u128::from(BIN_NS)) as usize
}

/// The tables and the checks, as the binary prints them.
#[must_use]
pub fn markdown(config: &Config, outcomes: &[Outcome], checks: &[(String, bool)]) -> String {
    let c = config;
    format!(
        "## Hedging: N = {} requests of {} leaves (seed {}, {} requests/s, {} warm-up requests)\n\n{}\n\
         ### Load: hedging delay, extra leaf requests, budget denials\n\n{}\n\
         The claims:\n\n{}",
        c.requests,
        c.fan_out,
        c.seed,
        c.rate,
        c.warmup,
        report::hedge_table(rows(outcomes)),
        report::hedge_load_table(outcomes, window_bins()),
        report::checks(checks)
    )
}

fn rows(outcomes: &[Outcome]) -> &[Outcome] {
    outcomes.get(..Case::ROWS.len()).unwrap_or_default()
}

/// Writes [`FILES`] into `dir`: `md` (from [`markdown`]) under the command that makes it,
/// and the figures.
///
/// # Errors
///
/// When a file cannot be written.
pub fn write(
    dir: &Path,
    config: &Config,
    outcomes: &[Outcome],
    md: &str,
) -> Result<(), Box<dyn Error>> {
    std::fs::create_dir_all(dir)?;
    let title = format!(
        "User-visible latency of {} requests of {} leaves: P(latency > x)",
        config.requests, config.fan_out
    );
    plot::lines(
        &dir.join("latency-ccdf.svg"),
        Axes {
            title: &title,
            x: "latency x (ms, log scale)",
            y: "P(latency > x) (log scale)",
            log_x: true,
            log_y: true,
            legend: Corner::UpperRight,
        },
        &rows(outcomes)
            .iter()
            .map(|o| Line {
                label: o.case.name.to_owned(),
                points: ccdf(&o.latencies_ms),
            })
            .collect::<Vec<_>>(),
    )?;
    plot::lines(
        &dir.join("slowdown-load.svg"),
        Axes {
            title: "Every leaf 5x slower from t = 0: extra leaf requests per second",
            x: "time since the slowdown (s)",
            y: "extra leaf requests (% of the leaves started)",
            log_x: false,
            log_y: false,
            legend: Corner::UpperRight,
        },
        &slowdown_lines(outcomes),
    )?;
    std::fs::write(
        dir.join("tables.md"),
        format!(
            "<!-- Written by `cargo run --release -p backstop-herd --bin hedge -- --seed {} --requests {} --warmup {}`. -->\n\n{md}",
            config.seed, config.requests, config.warmup
        ),
    )?;
    Ok(())
}

/// `P(latency > x)` at log-spaced `x` from 1 ms to the slowest request, for a sorted sample.
fn ccdf(sorted_ms: &[f64]) -> Vec<(f64, f64)> {
    const STEPS_PER_DECADE: u32 = 50;
    let n = sorted_ms.len() as f64;
    let max = sorted_ms.last().copied().unwrap_or(1.0).max(1.0);
    let steps = (max.log10() * f64::from(STEPS_PER_DECADE)).ceil() as u32;
    (0..=steps)
        .map(|k| {
            let x = 10f64
                .powf(f64::from(k) / f64::from(STEPS_PER_DECADE))
                .min(max);
            let above = sorted_ms.len() - sorted_ms.partition_point(|&v| v <= x);
            (x, above as f64 / n)
        })
        // A log axis has no zero: the curve ends at the slowest request.
        .filter(|&(_, p)| p > 0.0)
        .collect()
}

/// The first two minutes of the slowdown, with and without the budget: the extra leaf
/// requests per second, in percent of the leaves started in it.
fn slowdown_lines(outcomes: &[Outcome]) -> Vec<Line> {
    outcomes
        .iter()
        .filter(|o| o.case.slowdown > 1)
        .map(|o| Line {
            label: o.case.name.to_owned(),
            points: o
                .bins
                .iter()
                .take(120)
                .enumerate()
                .map(|(b, bin)| {
                    let extra = 100.0 * bin.extra as f64 / bin.leaves.max(1) as f64;
                    (b as f64 * BIN_NS as f64 / 1e9, extra)
                })
                .collect(),
        })
        .collect()
}
