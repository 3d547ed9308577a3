//! `cargo run --release -p backstop-herd --bin overload [-- --seed S --burst B --processes P --out DIR]`:
//! runs the overload-control experiments of issues 21 and 27 (pushback, the fleet and
//! adaptive), prints their tables and goals, and writes them with the SVG figures.

use std::path::PathBuf;
use std::time::Instant as WallClock;

use backstop_herd::net::MS;
use backstop_herd::open_loop::SEC;
use backstop_herd::overload_control::{self, Results};
use backstop_herd::plot::{self, Axes, Corner, Line};
use backstop_herd::{adaptive, cli, fleet, pushback};

struct Args {
    seed: u64,
    burst: f64,
    processes: u32,
    out: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        seed: 2021,
        burst: adaptive::Config::default().server_burst,
        processes: fleet::Config::default().processes,
        out: cli::docs_dir("overload"),
    };
    for (flag, value) in cli::flags()? {
        match flag.as_str() {
            "--seed" => a.seed = cli::number(&flag, &value)?,
            "--burst" => {
                a.burst = value
                    .parse::<f64>()
                    .ok()
                    .filter(|b| *b >= 1.0 && b.is_finite())
                    .ok_or_else(|| format!("{flag} {value}: a number of tokens, at least 1"))?;
            }
            "--processes" => {
                a.processes = cli::number(&flag, &value)?;
                if a.processes == 0 {
                    return Err(format!("{flag} {value}: at least one process"));
                }
            }
            "--out" => a.out = PathBuf::from(value),
            _ => {
                return Err(format!(
                    "unknown flag {flag}; flags: --seed --burst --processes --out"
                ))
            }
        }
    }
    Ok(a)
}

fn main() {
    let args = cli::or_exit(args());
    let t0 = WallClock::now();
    let push = pushback::Config {
        seed: args.seed,
        ..pushback::Config::default()
    };
    let defaults = fleet::Config::default();
    let fleet = fleet::Config {
        seed: args.seed,
        processes: args.processes,
        // The same capacity per client.
        capacity_per_bin: (u64::from(defaults.capacity_per_bin) * u64::from(args.processes)
            / u64::from(defaults.processes)) as u32,
        ..defaults
    };
    let adapt = adaptive::Config {
        seed: args.seed,
        server_burst: args.burst,
        ..adaptive::Config::default()
    };
    let results = overload_control::run(&push, &fleet, &adapt);
    let md = overload_control::markdown(&push, &fleet, &adapt, &results);
    print!("{md}");

    let written = figures(&args, &push, &fleet, &results, &md);
    cli::finish(
        &args.out,
        t0,
        written,
        results.all_hold(),
        "some goals were missed",
    );
}

/// The fill rate over time: the mean over the clients' limiters for each variant with a
/// limiter, and the sum over them for the per-client variant (one shared limiter's mean is its
/// sum).
fn fill_lines(results: &Results) -> Vec<Line> {
    let mut lines = Vec::new();
    for o in &results.adaptive {
        let series = |pick: fn((f64, f64)) -> f64| -> Vec<(f64, f64)> {
            o.fill
                .iter()
                .filter_map(|&(t, f)| f.map(|f| (t, pick(f))))
                .collect()
        };
        let mean = series(|(mean, _)| mean);
        if mean.is_empty() {
            continue;
        }
        if o.variant == adaptive::Variant::Adaptive {
            lines.push(Line {
                label: format!("{}: sum over the clients", o.variant.name()),
                points: series(|(_, sum)| sum),
            });
            lines.push(Line {
                label: format!("{}: mean over the clients", o.variant.name()),
                points: mean,
            });
        } else {
            lines.push(Line {
                label: o.variant.name().to_owned(),
                points: mean,
            });
        }
    }
    lines
}

fn figures(
    args: &Args,
    push: &pushback::Config,
    fleet: &fleet::Config,
    results: &Results,
    md: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.out)?;
    let bin_s = pushback::BIN_NS as f64 / 1e9;
    // Up to 2 s after the last operation started.
    let bins = ((push.duration.as_secs_f64() + 2.0) / bin_s) as usize;
    let title = format!(
        "Pushback: requests reaching the server per 100 ms ({} clients; 503 Retry-After: 10 from {} to {} s)",
        push.clients,
        push.outage_start.as_secs(),
        (push.outage_start + push.outage).as_secs()
    );
    plot::lines(
        &args.out.join("pushback-arrivals.svg"),
        Axes {
            title: &title,
            x: "time (s)",
            y: "requests per 100 ms",
            log_x: false,
            log_y: false,
            legend: Corner::UpperLeft,
        },
        &results
            .pushback
            .iter()
            .map(|o| Line {
                label: o.variant.name(),
                points: o
                    .per_bin
                    .iter()
                    .take(bins)
                    .enumerate()
                    .map(|(b, &n)| (b as f64 * bin_s, f64::from(n)))
                    .collect(),
            })
            .collect::<Vec<_>>(),
    )?;
    let (_, told) = fleet.window();
    let fine_s = fleet::FINE_NS as f64 / 1e9;
    let (from, to) = (
        (told - 500 * MS) / fleet::FINE_NS,
        (told + 3_000 * MS) / fleet::FINE_NS,
    );
    let title = format!(
        "Fleet: requests reaching the server per 10 ms ({} processes of {} clients; every gate told {} s)",
        fleet.processes,
        fleet.clients_per_process,
        told / SEC
    );
    plot::lines(
        &args.out.join("fleet-arrivals.svg"),
        Axes {
            title: &title,
            x: "time (s)",
            y: "requests per 10 ms (log scale)",
            log_x: false,
            log_y: true,
            legend: Corner::UpperRight,
        },
        &results
            .fleet
            .iter()
            .map(|o| Line {
                label: o.variant.name(),
                points: (from..to)
                    .filter_map(|b| {
                        let n = *o.per_fine.get(b as usize)?;
                        (n > 0).then(|| (b as f64 * fine_s, f64::from(n)))
                    })
                    .collect(),
            })
            .collect::<Vec<_>>(),
    )?;
    let second = adaptive::BIN_NS as f64 / 1e9;
    plot::lines(
        &args.out.join("adaptive-send-rate.svg"),
        Axes {
            title: "Adaptive: requests reaching the server per second (server admits 100/s)",
            x: "time (s)",
            y: "requests/s (log scale)",
            log_x: false,
            log_y: true,
            legend: Corner::UpperRight,
        },
        &results
            .adaptive
            .iter()
            .map(|o| Line {
                label: o.variant.name().to_owned(),
                points: o
                    .per_second
                    .iter()
                    .enumerate()
                    .filter(|&(_, &n)| n > 0)
                    .map(|(b, &n)| (b as f64 * second, f64::from(n) / second))
                    .collect(),
            })
            .collect::<Vec<_>>(),
    )?;
    plot::lines(
        &args.out.join("adaptive-fill-rate.svg"),
        Axes {
            title: "Adaptive: the limiters' fill rate (server admits 100/s)",
            x: "time (s)",
            y: "tokens/s",
            log_x: false,
            log_y: false,
            legend: Corner::UpperRight,
        },
        &fill_lines(results),
    )?;
    std::fs::write(
        args.out.join("tables.md"),
        format!(
            "<!-- Written by `cargo run --release -p backstop-herd --bin overload -- --seed {} --burst {} --processes {}`. -->\n\n{md}",
            args.seed, args.burst, args.processes
        ),
    )?;
    Ok(())
}
