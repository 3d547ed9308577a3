//! `cargo run --release -p backstop-herd --bin hedge [-- --seed S --requests N --warmup W --out DIR]`:
//! runs the hedging experiment, prints its tables and checks, and writes them with the SVG
//! figures.

use std::path::PathBuf;
use std::time::Instant as WallClock;

use backstop_herd::hedging::Config;
use backstop_herd::{cli, hedge_outputs};

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

fn main() {
    let args = cli::or_exit(args());
    let t0 = WallClock::now();
    let outcomes = hedge_outputs::run(&args.config);
    let checks = hedge_outputs::checks(&outcomes);
    let md = hedge_outputs::markdown(&args.config, &outcomes, &checks);
    print!("{md}");

    let written = hedge_outputs::write(&args.out, &args.config, &outcomes, &md);
    let held = checks.iter().all(|(_, ok)| *ok);
    // The one wall-clock read: how long the run took, printed, written to no file.
    cli::finish(&args.out, t0, written, held, "some checks failed");
}
