//! The load test: `cargo run --release -p backstop-soak --bin load [operations] [concurrency]
//! [rounds] [--ways a,b,..]` (defaults: 20,000 operations at concurrency 64, 3 rounds, every
//! way). Each round runs every chosen way once, in a rotating order, against one healthy
//! loopback server; prints each way's median throughput, the adapters' ratio to their bare
//! client (where both ran), the size of an operation in flight, and the open descriptors
//! before and after. `--ways tokio-bare-timeout,tokio-tower` runs the pair alone: more
//! rounds in the same time, and nothing else's state between them.

#![allow(clippy::print_stdout)]

use std::time::Duration;

use backstop_soak::faulty_server::{FaultyServer, Mix};
use backstop_soak::load::{self, Way};
use backstop_soak::process;

fn main() {
    let mut numbers = Vec::new();
    let mut ways = Way::ALL.to_vec();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--ways" {
            let list = args.next().unwrap_or_default();
            ways = list
                .split(',')
                .map(|name| {
                    Way::named(name).unwrap_or_else(|| {
                        let known: Vec<_> = Way::ALL.iter().map(|w| w.name()).collect();
                        panic!("no way named {name:?}; the ways: {}", known.join(", "))
                    })
                })
                .collect();
        } else {
            numbers.push(arg.parse::<usize>().ok());
        }
    }
    let number = |i: usize, default: usize| numbers.get(i).copied().flatten().unwrap_or(default);
    let operations = number(0, 20_000);
    let concurrency = number(1, 64);
    let rounds = number(2, 3);
    let server = FaultyServer::start(Mix::healthy());
    let uri: http::Uri = server.url("/load").parse().expect("a URI");
    // A warm-up round creates the process-wide state (smol's reactor) before the baseline.
    for way in Way::ALL {
        let _ = load::run(way, &uri, 500, concurrency);
    }
    let _ = server.wait_idle(Duration::from_secs(5));
    let fds_before = process::open_fds();
    let mut took: [Vec<Duration>; 6] = Default::default();
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
            println!("{:<20} {r:>9.0} operations/s", way.name());
        }
    }
    let versus = |adapter: Option<f64>, other: Option<f64>| match (adapter, other) {
        (Some(a), Some(o)) => format!("{:+.1} %", (a / o - 1.0) * 100.0),
        _ => "(not run)".to_owned(),
    };
    for (name, bare, timed, adapter) in [
        ("tower over hyper-util on tokio", 0, 1, 2),
        ("tower over smol::HttpService", 3, 4, 5),
    ] {
        if rates[adapter].is_none() {
            continue;
        }
        println!(
            "{name}: backstop {} throughput against the bare client, {} against it with a timeout",
            versus(rates[adapter], rates[bare]),
            versus(rates[adapter], rates[timed]),
        );
    }
    for (name, size) in load::future_sizes() {
        println!("in flight: {name} future {size} bytes");
    }
    println!(
        "descriptors: {fds_before:?} before, {fds_after:?} after; server connections all ended: {idle}"
    );
}
