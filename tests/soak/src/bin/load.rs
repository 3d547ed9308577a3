//! The load test: `cargo run --release -p backstop-soak --bin load [operations] [concurrency]
//! [rounds]` (defaults: 20,000 operations at concurrency 64, 3 rounds). Each round runs every
//! way once, in a rotating order, against one healthy loopback server; prints each way's
//! median throughput, the adapters' ratio to their bare client, the size of an operation in
//! flight, and the open descriptors before and after.

#![allow(clippy::print_stdout)]

use std::time::Duration;

use backstop_soak::faulty_server::{FaultyServer, Mix};
use backstop_soak::load::{self, Way};
use backstop_soak::process;

fn main() {
    let mut args = std::env::args().skip(1);
    let operations: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let concurrency: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
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
        for k in 0..Way::ALL.len() {
            let way = Way::ALL[(round + k) % Way::ALL.len()];
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
    let rate = |d: &mut Vec<Duration>| {
        d.sort();
        operations as f64 / d[d.len() / 2].as_secs_f64()
    };
    let rates: Vec<f64> = took.iter_mut().map(rate).collect();
    for (way, r) in Way::ALL.iter().zip(&rates) {
        // Padded as text: a derived `Debug` ignores the width.
        let way = format!("{way:?}");
        println!("{way:<16} {r:>9.0} operations/s");
    }
    for (name, bare, timed, adapter) in [
        ("tower over hyper-util on tokio", 0, 1, 2),
        ("tower over smol::HttpService", 3, 4, 5),
    ] {
        println!(
            "{name}: backstop {:+.1} % throughput against the bare client, {:+.1} % against it with a timeout",
            (rates[adapter] / rates[bare] - 1.0) * 100.0,
            (rates[adapter] / rates[timed] - 1.0) * 100.0
        );
    }
    for (name, size) in load::future_sizes() {
        println!("in flight: {name} future {size} bytes");
    }
    println!(
        "descriptors: {fds_before:?} before, {fds_after:?} after; server connections all ended: {idle}"
    );
}
