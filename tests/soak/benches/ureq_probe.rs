//! Measured, not asserted: what backstop::ureq costs per request, beside bare ureq and the peer.
//! Each way is one GET answered 200 at once on loopback (the in-process `PollServer`,
//! keep-alive), body read to its end, on the calling thread:
//!
//! - `bare`: `agent.get(url).call()` with ureq's defaults (no timeouts);
//! - `bare-timeout`: ureq configured and called as the adapter does it for an attempt with the
//!   policy's attempt timeout (that timeout on connect, send and receive, statuses as
//!   responses, `Agent::run`): the bare client doing the adapter's work;
//! - `backon`: backon's `BlockingRetryable` around that call (3 retries of a 5xx at once);
//! - `backstop`: `backstop::ureq::Client::new(Retrier::default()).run(request)`;
//! - `backstop-abort`: the same with an `Abort` handle on the request;
//! - `backstop-gates`, `backstop-events`, `backstop-budget`: the client with one feature on
//!   (`common/features.rs`): origin gates and the adaptive limiter not acting, one event
//!   observer, a `RatioBudget`. (A ureq call blocks its thread: this client never hedges.)
//!
//! ```sh
//! cargo bench -p backstop-soak --bench ureq_probe               # wall time, every way
//! cargo bench -p backstop-soak --bench ureq_probe -- --cpu      # the thread's CPU time
//! cargo bench -p backstop-soak --bench ureq_probe -- --allocs   # allocations per GET
//! cargo bench -p backstop-soak --bench ureq_probe -- --only backstop 1000
//! tests/soak/benches/ureq_callgrind.sh                          # instructions per GET
//! ```
//!
//! The ways alternate GET by GET (rotating order, reversed every other round) in blocks with
//! new clients; medians, and means below the 90th percentile, side by side from one run.
//! `-- --only WAY N` makes N GETs one way alone, for `strace -c -f` or callgrind. `--allocs`
//! counts the thread's allocations (`common/allocs.rs`) over 1,000 GETs per way after 200 of
//! warm-up, each way alone with its own client. (`tests/benches/callgrind.sh` measures the same
//! bare and backstop calls against a server in another process.)

#![allow(clippy::print_stdout, clippy::unwrap_used)]
// One call, the thread's CPU clock, which std does not expose; and the counting allocator.
#![allow(unsafe_code)]

#[path = "common/allocs.rs"]
mod allocs;
#[path = "common/features.rs"]
mod features;
#[path = "common/interleaved.rs"]
mod interleaved;

#[global_allocator]
static ALLOC: allocs::Counting = allocs::Counting;

use std::time::{Duration, Instant};

use backstop::Abort;
use backstop_soak::bare;
use backstop_soak::poll_server::PollServer;

/// The ways, by name; the first is the reference of the overhead column.
const WAYS: [&str; 8] = [
    "bare",
    "bare-timeout",
    "backon",
    "backstop",
    "backstop-abort",
    "backstop-gates",
    "backstop-events",
    "backstop-budget",
];

enum Way {
    Bare(ureq::Agent),
    BareTimeout(ureq::Agent),
    Backon(ureq::Agent),
    Backstop(backstop::ureq::Client),
    BackstopAbort(backstop::ureq::Client, Abort),
}

/// The way named `name`, with a new client.
fn way(name: &str) -> Way {
    match name {
        "bare" => Way::Bare(ureq::Agent::new_with_defaults()),
        "bare-timeout" => Way::BareTimeout(bare::ureq_agent()),
        "backon" => Way::Backon(bare::ureq_agent()),
        "backstop-abort" => Way::BackstopAbort(
            backstop::ureq::Client::new(backstop::Retrier::default()),
            Abort::new(),
        ),
        other => match features::retrier(other) {
            Some(retrier) if other != "backstop-hedging" => {
                Way::Backstop(backstop::ureq::Client::new(retrier))
            }
            _ => panic!("no way named {other}; the ways: {WAYS:?}"),
        },
    }
}

/// One attempt of backon's: a 5xx is an error it retries.
enum PeerError {
    Ureq(ureq::Error),
    Status(u16),
}

fn backon_get(agent: &ureq::Agent, url: &str) -> u16 {
    use backon::{BlockingRetryable, ConstantBuilder};
    let attempt = || {
        let request = http::Request::get(url).body(()).unwrap();
        let mut r = agent.run(request).map_err(PeerError::Ureq)?;
        let status = r.status().as_u16();
        r.body_mut().read_to_vec().map_err(PeerError::Ureq)?;
        if status >= 500 {
            Err(PeerError::Status(status))
        } else {
            Ok(status)
        }
    };
    let no_wait = ConstantBuilder::new()
        .with_delay(Duration::ZERO)
        .with_max_times(3);
    attempt
        .retry(no_wait)
        .sleep(std::thread::sleep)
        .when(|e| matches!(e, PeerError::Status(_)))
        .call()
        .unwrap_or_else(|e| match e {
            PeerError::Ureq(e) => panic!("{e}"),
            PeerError::Status(s) => panic!("status {s}"),
        })
}

fn get(way: &Way, url: &str) -> u16 {
    let mut response = match way {
        Way::Bare(agent) => agent.get(url).call().unwrap(),
        Way::BareTimeout(agent) => agent
            .run(http::Request::get(url).body(()).unwrap())
            .unwrap(),
        Way::Backon(agent) => return backon_get(agent, url),
        Way::Backstop(client) => {
            client
                .run(http::Request::get(url).body(()).unwrap())
                .unwrap()
                .response
        }
        Way::BackstopAbort(client, abort) => {
            let mut request = http::Request::get(url).body(()).unwrap();
            request.extensions_mut().insert(abort.clone());
            client.run(request).unwrap().response
        }
    };
    let status = response.status().as_u16();
    response.body_mut().read_to_vec().unwrap();
    status
}

fn main() {
    let args = interleaved::Args::from_env();
    let server = PollServer::start();
    let url = format!("http://{}/ok", server.addr);
    let names = args.ways(&WAYS);
    if args.has("--allocs") {
        allocs::table("ureq", &names, way, |w, n| {
            for _ in 0..n {
                assert_eq!(get(w, &url), 200);
            }
        });
        return;
    }
    if let Some((only, n)) = args.only() {
        let w = way(only);
        for _ in 0..n {
            assert_eq!(get(&w, &url), 200);
        }
        return;
    }
    let cpu = args.has("--cpu");
    let (blocks, per_block) = args.blocks();
    let start = Instant::now();
    let clock = || interleaved::reading(cpu, start);
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for _ in 0..blocks {
        let ways: Vec<Way> = names.iter().map(|n| way(n)).collect();
        for w in &ways {
            for _ in 0..20 {
                assert_eq!(get(w, &url), 200);
            }
        }
        for round in 0..per_block {
            for k in 0..ways.len() {
                let which = interleaved::way_of(round, k, ways.len());
                let t = clock();
                assert_eq!(get(&ways[which], &url), 200);
                samples[which].push(clock() - t);
            }
        }
    }
    interleaved::report("ureq", 20, &names, samples, cpu);
}
