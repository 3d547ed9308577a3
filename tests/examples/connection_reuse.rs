//! Connections, TLS handshakes and wall time of one 503, 503, 200 operation over https on
//! loopback, per adapter, with the discarded bodies dropped (every retry on a new connection,
//! as before draining) and drained (the default): `cargo run --release -p backstop-tests
//! --example connection_reuse [RUNS]` (default 41 runs per cell).
//!
//! Method: a private CA and a server certificate made with rcgen; the scripted TLS server
//! answers 503 (`Retry-After: 0`, a 16-byte JSON body), 503, 200. Each run makes a new client
//! (as an operation in a fresh process would: no connection to start from) on virtual time, so
//! the waits between attempts take no real time and the wall time is the attempts' own: TCP
//! connects, TLS handshakes, exchanges, and the drains. Runs alternate between the two modes
//! and the four adapters, so that drift on the machine falls on every cell alike. The server
//! counts accepted connections; each one is a full TLS handshake (no session resumption across
//! clients).

use std::time::Duration;

use backstop::transport::DrainLimits;
use backstop::Retrier;
use backstop_tests::adapters::Adapter;
use backstop_tests::certs::TestCa;
use backstop_tests::https::{run_https, Trust};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(41);
    let ca = TestCa::new();
    let trust = Trust::only_ca(ca.pem());
    let cert = ca.server_cert(&["127.0.0.1"]);
    let modes = [
        ("dropped", DrainLimits::OFF),
        ("drained", DrainLimits::DEFAULT),
    ];
    // [adapter][mode] -> (connections, wall time) per run.
    let mut cells = vec![vec![(Vec::new(), Vec::new()); modes.len()]; Adapter::ALL.len()];
    for _ in 0..runs {
        for (a, adapter) in Adapter::ALL.into_iter().enumerate() {
            for (m, (_, limits)) in modes.iter().enumerate() {
                let (connections, wall) = one_operation(adapter, *limits, &trust, &cert);
                cells[a][m].0.push(connections);
                cells[a][m].1.push(wall);
            }
        }
    }
    println!("503, 503, 200 over https on loopback, {runs} runs per cell, medians");
    println!("| adapter | discarded body | connections (= TLS handshakes) / operation | wall time / operation |");
    println!("|---|---|---|---|");
    for (a, adapter) in Adapter::ALL.into_iter().enumerate() {
        for (m, (mode, _)) in modes.iter().enumerate() {
            let (connections, wall) = &mut cells[a][m];
            println!(
                "| {adapter:?} | {mode} | {} (min {}, max {}) | {:.2?} |",
                median(connections),
                connections.iter().min().unwrap_or(&0),
                connections.iter().max().unwrap_or(&0),
                median(wall),
            );
        }
    }
}

/// One operation on a fresh server and client: the connections the server accepted, and the
/// operation's wall time.
fn one_operation(
    adapter: Adapter,
    limits: DrainLimits,
    trust: &Trust,
    cert: &backstop_tests::certs::ServerCert,
) -> (usize, Duration) {
    let busy = Reply::status(503)
        .header("Retry-After", "0")
        .header("Content-Type", "application/json")
        .body(r#"{"error":"busy"}"#);
    let script: [Action; 3] = [
        busy.clone().into(),
        busy.into(),
        Reply::status(200).body("ok").into(),
    ];
    let server = Server::start_tls(script, cert);
    let request = TestRequest::get(server.url("/data"));
    let retrier = Retrier::default().drain(limits);
    let https = run_https(adapter, &retrier, request, trust);
    assert_eq!(https.run.status(), Some(200), "{adapter:?}: {https:?}");
    (server.connections(), https.run.real)
}

fn median<T: Ord + Copy + Default>(values: &mut [T]) -> T {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}
