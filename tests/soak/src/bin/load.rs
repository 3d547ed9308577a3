//! The load test: `cargo run --release -p backstop-soak --bin load [operations] [concurrency]
//! [rounds] [--ways a,b,..]` (defaults: 20,000 operations at concurrency 64, 3 rounds, every
//! way). Each round runs every chosen way once, in a rotating order, against one healthy
//! loopback server; prints each way's median throughput, the adapters' ratio to their bare
//! client (where both ran) and of tower's own `Retry` + `Timeout` (`tokio-tower-retry-timeout`)
//! to bare + timeout and to backstop's layer, the size of an operation in flight, and the open
//! descriptors before and after. `--ways tokio-bare-timeout,tokio-tower` runs the pair
//! alone: more rounds in the same time, and nothing else's state between them.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;

use backstop_soak::faulty_server::{FaultyServer, Mix};
use backstop_soak::load::{self, Way};
use backstop_soak::process;

const USAGE: &str = "usage: load [operations] [concurrency] [rounds] [--ways a,b,..]";

/// What the command line asked for, or why it cannot be run.
struct Args {
    operations: usize,
    concurrency: usize,
    rounds: usize,
    ways: Vec<Way>,
}

impl Args {
    /// Reads `args` (without the program's name); a number that does not parse, a zero, a
    /// fourth number, an unknown option, an unknown or repeated way or a second `--ways` is an
    /// error, not a default.
    fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut numbers = Vec::new();
        let mut chosen: Option<Vec<Way>> = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "--ways" {
                if chosen.is_some() {
                    return Err("--ways given twice".to_owned());
                }
                let list = args.next().ok_or("--ways needs a list of ways")?;
                let mut ways = Vec::new();
                for name in list.split(',') {
                    let way = Way::named(name).ok_or_else(|| {
                        let known: Vec<_> = Way::ALL.iter().map(|w| w.name()).collect();
                        format!("no way named {name:?}; the ways: {}", known.join(", "))
                    })?;
                    if ways.contains(&way) {
                        return Err(format!("way {name:?} named twice"));
                    }
                    ways.push(way);
                }
                chosen = Some(ways);
            } else if arg.starts_with("--") {
                return Err(format!("unknown option {arg:?}"));
            } else {
                let n = arg
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("{arg:?} is not a positive whole number"))?;
                numbers.push(n);
            }
        }
        if numbers.len() > 3 {
            return Err(format!("{} numbers given; at most 3", numbers.len()));
        }
        let number = |i: usize, default: usize| numbers.get(i).copied().unwrap_or(default);
        Ok(Args {
            operations: number(0, 20_000),
            concurrency: number(1, 64),
            rounds: number(2, 3),
            ways: chosen.unwrap_or_else(|| Way::ALL.to_vec()),
        })
    }
}

fn main() {
    let Args {
        operations,
        concurrency,
        rounds,
        ways,
    } = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            eprintln!("load: {why}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let server = FaultyServer::start(Mix::healthy());
    let uri: http::Uri = server.url("/load").parse().expect("a URI");
    // A warm-up round creates the process-wide state (smol's reactor) before the baseline.
    for way in Way::ALL {
        let _ = load::run(way, &uri, 500, concurrency);
    }
    let _ = server.wait_idle(Duration::from_secs(5));
    let fds_before = process::open_fds();
    let mut took: [Vec<Duration>; Way::ALL.len()] = Default::default();
    for round in 0..rounds {
        for k in 0..ways.len() {
            let way = ways[(round + k) % ways.len()];
            took[way as usize].push(load::run(way, &uri, operations, concurrency));
        }
    }
    let idle = server.wait_idle(Duration::from_secs(10));
    let mut fds_after = process::open_fds();
    for _ in 0..200 {
        if fds_after == fds_before {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        fds_after = process::open_fds();
    }
    println!("load: {operations} GETs at concurrency {concurrency}, {rounds} alternating rounds, median round");
    // A way that did not run has no rate.
    let rate = |d: &mut Vec<Duration>| {
        d.sort();
        let median = d.get(d.len() / 2)?;
        Some(operations as f64 / median.as_secs_f64())
    };
    let rates: Vec<Option<f64>> = took.iter_mut().map(rate).collect();
    for (way, r) in Way::ALL.iter().zip(&rates) {
        if let Some(r) = r {
            println!("{:<26} {r:>9.0} operations/s", way.name());
        }
    }
    // A comparison is printed only when both of its ways ran (`--ways` may leave one out).
    let versus = |of: Option<f64>, against: Option<f64>, what: &str| match (of, against) {
        (Some(a), Some(o)) => Some(format!("{:+.1} % against {what}", (a / o - 1.0) * 100.0)),
        _ => None,
    };
    let at = |way: Way| rates[way as usize];
    let tokio = "tower over hyper-util on tokio";
    for (name, bare, timed, adapter) in [
        (
            tokio,
            Way::TokioBare,
            Way::TokioBareTimeout,
            Way::TokioTower,
        ),
        (
            "tower over smol::HttpService",
            Way::SmolBare,
            Way::SmolBareTimeout,
            Way::SmolTower,
        ),
    ] {
        let phrases: Vec<String> = [
            versus(at(adapter), at(bare), "the bare client"),
            versus(at(adapter), at(timed), "the bare client with a timeout"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !phrases.is_empty() {
            println!("{name}: backstop's throughput {}", phrases.join(", "));
        }
    }
    let peer = Way::TokioTowerRetryTimeout;
    let own = "tower's own Retry + Timeout";
    if let Some(p) = versus(
        at(peer),
        at(Way::TokioBareTimeout),
        "the bare client with a timeout",
    ) {
        println!("{tokio}: {own}'s throughput {p}");
    }
    if let Some(p) = versus(at(Way::TokioTower), at(peer), own) {
        println!("{tokio}: backstop's throughput {p}");
    }
    for (name, size) in load::future_sizes() {
        println!("in flight: {name} future {size} bytes");
    }
    println!(
        "descriptors: {fds_before:?} before, {fds_after:?} after; server connections all ended: {idle}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        Args::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn numbers_given_are_taken_and_missing_ones_default() {
        let args = parse(&["500", "8", "--ways", "tokio-bare-timeout,tokio-tower"]).unwrap();
        assert_eq!(
            (args.operations, args.concurrency, args.rounds),
            (500, 8, 3)
        );
        assert_eq!(
            args.ways,
            [
                Way::named("tokio-bare-timeout").unwrap(),
                Way::named("tokio-tower").unwrap()
            ]
        );
        let args = parse(&[]).unwrap();
        assert_eq!(
            (args.operations, args.concurrency, args.rounds),
            (20_000, 64, 3)
        );
        assert_eq!(args.ways, Way::ALL);
    }

    #[test]
    fn bad_input_is_an_error_not_a_default() {
        for (bad, why) in [
            (&["20k"][..], "\"20k\" is not a positive whole number"),
            (&["0"], "\"0\" is not a positive whole number"),
            (&["100", "-1"], "\"-1\" is not a positive whole number"),
            (&["1", "2", "3", "4"], "4 numbers given; at most 3"),
            (&["--way", "x"], "unknown option \"--way\""),
            (&["--ways"], "--ways needs a list of ways"),
            (&["--ways", "tokio"], "no way named \"tokio\""),
            (
                &["--ways", "tokio-bare,tokio-bare"],
                "way \"tokio-bare\" named twice",
            ),
            (
                &["--ways", "tokio-bare", "--ways", "smol-bare"],
                "--ways given twice",
            ),
        ] {
            match parse(bad) {
                Ok(_) => panic!("{bad:?} was taken"),
                Err(err) => assert!(err.contains(why), "{bad:?}: {err}"),
            }
        }
    }
}
