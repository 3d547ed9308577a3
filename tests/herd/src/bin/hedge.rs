//! `cargo run --release -p backstop-herd --bin hedge [-- --seed S --requests N --warmup W --out DIR]`:
//! runs the hedging experiment, prints its tables and checks, and writes them with the SVG
//! figures.

use std::path::PathBuf;
use std::time::Instant as WallClock;

use backstop_herd::cli;
use backstop_herd::hedging::{
    self, claim_checks, closed_form_checks, published_checks, Case, Config, BIN_NS,
};
use backstop_herd::parallel::parallel;
use backstop_herd::plot::{self, Axes, Corner, Line};
use backstop_herd::report;

struct Args {
    config: Config,
    out: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        config: Config::default(),
        out: cli::docs_dir("hedge"),
    };
    for (flag, value) in cli::flags()? {
        match flag.as_str() {
            "--seed" => a.config.seed = cli::number(&flag, &value)?,
            "--requests" => a.config.requests = cli::number(&flag, &value)?,
            "--warmup" => a.config.warmup = cli::number(&flag, &value)?,
            "--out" => a.out = PathBuf::from(value),
            _ => {
                return Err(format!(
                    "unknown flag {flag}; flags: --seed --requests --warmup --out"
                ))
            }
        }
    }
    if a.config.requests == 0 {
        return Err("--requests must be at least 1".to_owned());
    }
    Ok(a)
}

/// The budget's window, in bins of the series over time.
fn window_bins() -> usize {
    (hedging::BUDGET_WINDOW.as_nanos() / u128::from(BIN_NS)) as usize
}

fn main() {
    let args = cli::or_exit(args());
    let t0 = WallClock::now();
    let cases: Vec<Case> = Case::ROWS
        .iter()
        .copied()
        .chain([Case::ADAPTIVE_SLOW_UNBUDGETED])
        .collect();
    let outcomes = parallel(&cases, |&c| hedging::run(&args.config, c));
    let rows = outcomes.get(..Case::ROWS.len()).unwrap_or_default();
    let c = &args.config;
    let mut checks = claim_checks(&outcomes);
    if let Some(none) = outcomes.iter().find(|o| o.case == Case::NONE) {
        checks.extend(published_checks(none));
    }
    checks.extend(closed_form_checks(&outcomes));
    let md = format!(
        "## Hedging: N = {} requests of {} leaves (seed {}, {} requests/s, {} warm-up requests)\n\n{}\n\
         ### Load: hedging delay, extra leaf requests, budget denials\n\n{}\n\
         The claims:\n\n{}",
        c.requests,
        c.fan_out,
        c.seed,
        c.rate,
        c.warmup,
        report::hedge_table(rows),
        report::hedge_load_table(&outcomes, window_bins()),
        report::checks(&checks)
    );
    print!("{md}");

    let written = figures(&args, &outcomes, &md);
    let held = checks.iter().all(|(_, ok)| *ok);
    cli::finish(&args.out, t0, written, held, "some checks failed");
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

fn figures(
    args: &Args,
    outcomes: &[hedging::Outcome],
    md: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.out)?;
    let rows = outcomes.get(..Case::ROWS.len()).unwrap_or_default();
    let title = format!(
        "User-visible latency of {} requests of {} leaves: P(latency > x)",
        args.config.requests, args.config.fan_out
    );
    plot::lines(
        &args.out.join("latency-ccdf.svg"),
        Axes {
            title: &title,
            x: "latency x (ms, log scale)",
            y: "P(latency > x) (log scale)",
            log_x: true,
            log_y: true,
            legend: Corner::UpperRight,
        },
        &rows
            .iter()
            .map(|o| Line {
                label: o.case.name.to_owned(),
                points: ccdf(&o.latencies_ms),
            })
            .collect::<Vec<_>>(),
    )?;
    // The first two minutes of the slowdown, with and without the budget.
    let slow: Vec<Line> = outcomes
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
        .collect();
    plot::lines(
        &args.out.join("slowdown-load.svg"),
        Axes {
            title: "Every leaf 5x slower from t = 0: extra leaf requests per second",
            x: "time since the slowdown (s)",
            y: "extra leaf requests (% of the leaves started)",
            log_x: false,
            log_y: false,
            legend: Corner::UpperRight,
        },
        &slow,
    )?;
    let c = &args.config;
    std::fs::write(
        args.out.join("tables.md"),
        format!(
            "<!-- Written by `cargo run --release -p backstop-herd --bin hedge -- --seed {} --requests {} --warmup {}`. -->\n\n{md}",
            c.seed, c.requests, c.warmup
        ),
    )?;
    Ok(())
}
