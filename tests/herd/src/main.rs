//! `cargo run --release -p backstop-herd [-- --seed S --runs R --sweep-runs R --out DIR]`:
//! runs the thundering-herd experiment, prints the tables and writes the SVG figures.

use std::path::PathBuf;
use std::time::Instant as WallClock;

use backstop_herd::cli;
use backstop_herd::contention::{self, shape_checks, sweep_point, Strategy};
use backstop_herd::overload::{self, claim_checks, Client, Config, Scenario, BIN_NS};
use backstop_herd::parallel::parallel;
use backstop_herd::plot::{self, Axes, Corner, Line};
use backstop_herd::report;

struct Args {
    seed: u64,
    runs: u32,
    sweep_runs: u32,
    out: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        seed: 2015,
        runs: 1_000,
        sweep_runs: 100,
        out: cli::docs_dir("herd"),
    };
    for (flag, value) in cli::flags()? {
        match flag.as_str() {
            "--seed" => a.seed = cli::number(&flag, &value)?,
            "--runs" => a.runs = cli::number(&flag, &value)?,
            "--sweep-runs" => a.sweep_runs = cli::number(&flag, &value)?,
            "--out" => a.out = PathBuf::from(value),
            _ => {
                return Err(format!(
                    "unknown flag {flag}; flags: --seed --runs --sweep-runs --out"
                ))
            }
        }
    }
    Ok(a)
}

fn main() {
    let args = cli::or_exit(args());
    let t0 = WallClock::now();
    let mut md = String::new();

    // Part 1.
    let ns: Vec<u32> = (1..=19).map(|k| k * 10).collect();
    let jobs: Vec<(Strategy, u32, u32)> = ns
        .iter()
        .flat_map(|&n| {
            let runs = if n == 100 { args.runs } else { args.sweep_runs };
            Strategy::ALL.iter().map(move |&s| (s, n, runs))
        })
        .collect();
    let sweep = parallel(&jobs, |&(s, n, runs)| sweep_point(s, n, runs, args.seed));
    let at_100: Vec<contention::Result> =
        sweep.iter().filter(|r| r.clients == 100).copied().collect();
    let shape: Vec<(String, bool)> = shape_checks(&at_100)
        .into_iter()
        .map(|(s, ok)| (s.to_owned(), ok))
        .collect();
    md.push_str(&format!(
        "## Part 1: contention at N = 100 (seed {})\n\n{}\nPublished shape:\n\n{}\n",
        args.seed,
        report::contention_table(&at_100),
        report::checks(&shape)
    ));
    md.push_str(&format!(
        "### Calls (writes) against N\n\n{}\n### Completion time (ms) against N\n\n{}\n",
        report::sweep_table(&sweep, "calls", |r| r.calls.mean),
        report::sweep_table(&sweep, "ms", |r| r.time_ms.mean),
    ));

    // Part 2.
    let config = Config::default();
    let jobs: Vec<(Scenario, Client)> = Scenario::ALL
        .iter()
        .flat_map(|&sc| Client::ALL.iter().map(move |&c| (sc, c)))
        .collect();
    let outcomes = parallel(&jobs, |&(sc, c)| overload::run(&config, sc, c, args.seed));
    let claim = claim_checks(&outcomes);
    md.push_str(&format!(
        "## Part 2: outage, overload and blip (seed {})\n\n{}\nThe claim:\n\n{}",
        args.seed,
        report::overload_table(&outcomes),
        report::checks(&claim)
    ));
    print!("{md}");

    // Figures.
    let written = figures(&args, &sweep, &outcomes, &md);
    let held = shape.iter().chain(&claim).all(|(_, ok)| *ok);
    cli::finish(&args.out, t0, written, held, "some checks failed");
}

fn figures(
    args: &Args,
    sweep: &[contention::Result],
    outcomes: &[overload::Outcome],
    md: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.out)?;
    let by_strategy = |value: &dyn Fn(&contention::Result) -> f64| -> Vec<Line> {
        Strategy::ALL
            .iter()
            .map(|&s| Line {
                label: s.name().to_owned(),
                points: sweep
                    .iter()
                    .filter(|r| r.strategy == s)
                    .map(|r| (f64::from(r.clients), value(r)))
                    .collect(),
            })
            .collect()
    };
    plot::lines(
        &args.out.join("contention-calls.svg"),
        Axes {
            title: "Part 1: writes until every client succeeded (mean)",
            x: "clients (N)",
            y: "calls",
            log_x: false,
            log_y: false,
            legend: Corner::UpperLeft,
        },
        &by_strategy(&|r| r.calls.mean),
    )?;
    plot::lines(
        &args.out.join("contention-time.svg"),
        Axes {
            title: "Part 1: time until every client succeeded (mean, log scale)",
            x: "clients (N)",
            y: "time (ms)",
            log_x: false,
            log_y: true,
            legend: Corner::UpperLeft,
        },
        &by_strategy(&|r| r.time_ms.mean),
    )?;
    for sc in Scenario::ALL {
        let lines: Vec<Line> = outcomes
            .iter()
            .filter(|o| o.scenario == sc)
            .map(|o| Line {
                label: o.client.name().to_owned(),
                points: o
                    .requests
                    .iter()
                    .enumerate()
                    .map(|(b, &n)| {
                        let per_second = 1e9 / BIN_NS as f64;
                        (b as f64 / per_second, f64::from(n) * per_second)
                    })
                    .collect(),
            })
            .collect();
        let title = format!(
            "Part 2, {}: requests reaching the server per second",
            sc.name()
        );
        plot::lines(
            &args.out.join(format!("{}-load.svg", sc.name())),
            Axes {
                title: &title,
                x: "time (s)",
                y: "requests/s",
                log_x: false,
                log_y: false,
                legend: Corner::UpperLeft,
            },
            &lines,
        )?;
    }
    std::fs::write(
        args.out.join("tables.md"),
        format!(
            "<!-- Written by `cargo run --release -p backstop-herd -- --seed {} --runs {} --sweep-runs {}`. -->\n\n{md}",
            args.seed, args.runs, args.sweep_runs
        ),
    )?;
    Ok(())
}
