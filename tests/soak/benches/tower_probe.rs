//! Measured, not asserted: what backstop's tower layer costs per request, beside the bare
//! hyper-util client doing the same work and beside tower's own `Retry`. Each way is one GET
//! answered 200 at its first attempt on loopback (the in-process `PollServer`, keep-alive),
//! body read to its end, on one current-thread tokio runtime:
//!
//! - `bare`: hyper-util's pooled legacy client, `client.request(req)`;
//! - `bare-timeout`: the same in `tokio::time::timeout(policy.attempt_timeout(), ..)`, the
//!   timer every attempt of the layer carries: the bare client doing the layer's work;
//! - `tower-retry`: `tower::retry::Retry` over that client with a policy that clones the
//!   request and retries an error or a 5xx (never a 200), called as `svc.clone().oneshot(req)`;
//! - `tower-retry-timeout`: the same `Retry` over tower's own `Timeout` of the attempt timeout
//!   (`tower::timeout::Timeout`, a `tokio::time::sleep` per attempt): bare + tower `Retry`'s own
//!   + timeout's own, the work the layer does;
//! - `tower-resilience-timeout`: tower-resilience 0.13's retry layer (4 attempts, exponential
//!   backoff, an error or a 5xx retried) over the same `Timeout`: a second peer;
//! - `backstop`: `backstop::tower::RetryLayer` with `Retrier::default()` on `TokioRuntime`
//!   over that client, called the same way;
//! - `backstop-hedging`, `backstop-gates`, `backstop-events`, `backstop-budget`: the layer with
//!   one feature on (`common/features.rs`): a hedging policy whose backup (after 1 s) a fast 200
//!   never sends, origin gates and the adaptive limiter not acting, one event observer, a
//!   `RatioBudget`.
//!
//! ```sh
//! cargo bench -p backstop-soak --bench tower_probe               # wall time, every way
//! cargo bench -p backstop-soak --bench tower_probe -- --cpu      # the thread's CPU time
//! cargo bench -p backstop-soak --bench tower_probe -- --ways bare-timeout,backstop --quick
//! cargo bench -p backstop-soak --bench tower_probe -- --only backstop 1000
//! cargo bench -p backstop-soak --bench tower_probe -- --sizes    # each way's call future
//! cargo bench -p backstop-soak --bench tower_probe -- --allocs   # allocations per GET
//! tests/soak/benches/tower_callgrind.sh                          # instructions per GET
//! ```
//!
//! The ways alternate GET by GET (rotating order, reversed every other round) in blocks with
//! new clients; medians, and means below the 90th percentile, side by side from one run.
//! `-- --only WAY N` makes N GETs one way alone, for `strace -c -f` or callgrind. `--allocs`
//! counts the client thread's allocations (`common/allocs.rs`) over 1,000 GETs per way after
//! 200 of warm-up, each way alone with its own client. The CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) counts what a GET costs the client thread, kernel included,
//! whether or not it waited for the server: on a shared machine its overheads move by a point
//! or two between runs, the wall time's by ten.

#![allow(clippy::print_stdout, clippy::unwrap_used)]
// One call, the thread's CPU clock, which std does not expose.
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

use backstop::tokio::TokioRuntime;
use backstop::tower::RetryLayer;
use backstop::{Policy, Retrier};
use backstop_soak::bare::{self, TokioClient};
use backstop_soak::clients;
use backstop_soak::peers::{self, NeverA200, TowerResilienceTimeout, TowerRetryTimeout};
use backstop_soak::poll_server::PollServer;
use http_body_util::BodyExt;
use tower::{Layer, ServiceExt};

/// The ways, by name; the first is the reference of the overhead column.
const WAYS: [&str; 10] = [
    "bare",
    "bare-timeout",
    "tower-retry",
    "tower-retry-timeout",
    "tower-resilience-timeout",
    "backstop",
    "backstop-hedging",
    "backstop-gates",
    "backstop-events",
    "backstop-budget",
];

enum Way {
    Bare(TokioClient),
    BareTimeout(TokioClient, Duration),
    TowerRetry(tower::retry::Retry<NeverA200, TokioClient>),
    TowerRetryTimeout(TowerRetryTimeout),
    TowerResilienceTimeout(TowerResilienceTimeout),
    Backstop(backstop::tower::Retry<TokioClient, TokioRuntime>),
    /// The bounded read under the retry layer (`ReadBodyLayer`).
    Reading(backstop::tower::Retry<backstop::tower::ReadBodyService<TokioClient>, TokioRuntime>),
    /// `RetryLayer::resume_bodies`.
    Resuming(backstop::tower::ResumingRetry<TokioClient, TokioRuntime>),
}

/// The way named `name`, with a new client. Call it inside the runtime.
fn way(name: &str) -> Way {
    let client = bare::tokio_client();
    match name {
        "bare" => Way::Bare(client),
        "bare-timeout" => Way::BareTimeout(client, Policy::default().attempt_timeout()),
        "tower-retry" => Way::TowerRetry(tower::retry::Retry::new(NeverA200::default(), client)),
        "tower-retry-timeout" => Way::TowerRetryTimeout(peers::tower_retry_timeout(
            client,
            Policy::default().attempt_timeout(),
        )),
        "tower-resilience-timeout" => Way::TowerResilienceTimeout(peers::tower_resilience_timeout(
            client,
            Policy::default().attempt_timeout(),
        )),
        "bare-64k" | "bare-1m" => Way::Bare(client),
        "backstop-64k" | "backstop-1m" => {
            Way::Backstop(RetryLayer::new(Retrier::default(), TokioRuntime::new()).layer(client))
        }
        "backstop-read-64k" => Way::Reading(
            RetryLayer::new(Retrier::default(), TokioRuntime::new()).layer(
                backstop::tower::ReadBodyLayer::new(backstop::body::ReadBody::up_to(1 << 20))
                    .layer(client),
            ),
        ),
        "backstop-resume-1m" => Way::Resuming(
            RetryLayer::new(Retrier::default(), TokioRuntime::new())
                .resume_bodies()
                .layer(client),
        ),
        other => match features::retrier(other) {
            Some(retrier) => {
                Way::Backstop(RetryLayer::new(retrier, TokioRuntime::new()).layer(client))
            }
            None => panic!("no way named {other}; the ways: {WAYS:?}"),
        },
    }
}

/// The URI the way `name` GETs on the server at `addr`: `/64k` for the `*-64k` ways, `/1m`
/// (1 MiB with a strong `ETag`) for the `*-1m` ways.
fn uri_of(name: &str, addr: std::net::SocketAddr) -> http::Uri {
    let path = if name.ends_with("-64k") {
        "64k"
    } else if name.ends_with("-1m") {
        "1m"
    } else {
        "ok"
    };
    format!("http://{addr}/{path}").parse().unwrap()
}

async fn get(way: &Way, uri: &http::Uri) -> u16 {
    let request = clients::get(uri);
    let response = match way {
        Way::Reading(s) => {
            let response = s.clone().oneshot(request).await.unwrap();
            let status = response.status().as_u16();
            response.into_body().collect().await.unwrap();
            return status;
        }
        Way::Resuming(s) => {
            let response = s.clone().oneshot(request).await.unwrap();
            let status = response.status().as_u16();
            response.into_body().collect().await.unwrap();
            return status;
        }
        Way::Bare(c) => c.request(request).await.unwrap(),
        Way::BareTimeout(c, t) => tokio::time::timeout(*t, c.request(request))
            .await
            .unwrap()
            .unwrap(),
        Way::TowerRetry(s) => s.clone().oneshot(request).await.unwrap(),
        Way::TowerRetryTimeout(s) => s.clone().oneshot(request).await.unwrap(),
        Way::TowerResilienceTimeout(s) => s.clone().oneshot(request).await.unwrap(),
        Way::Backstop(s) => s.clone().oneshot(request).await.unwrap(),
    };
    let status = response.status().as_u16();
    response.into_body().collect().await.unwrap();
    status
}

fn main() {
    let args = interleaved::Args::from_env();
    let server = PollServer::start();
    let uri: http::Uri = format!("http://{}/ok", server.addr).parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let names = args.ways(&WAYS);
    if args.has("--sizes") {
        println!(
            "== tower probe: the future each way's `call` returns (backstop's: a box, its contents)"
        );
        rt.block_on(async {
            for name in &names {
                let request = clients::get(&uri);
                let (size, status) = match way(name) {
                    Way::Bare(c) => {
                        let f = c.request(request);
                        (size_of_val(&f), f.await.unwrap().status())
                    }
                    Way::BareTimeout(c, t) => {
                        let f = tokio::time::timeout(t, c.request(request));
                        (size_of_val(&f), f.await.unwrap().unwrap().status())
                    }
                    Way::TowerRetry(mut s) => {
                        let f = tower::Service::call(&mut s, request);
                        (size_of_val(&f), f.await.unwrap().status())
                    }
                    Way::TowerRetryTimeout(mut s) => {
                        let f = tower::Service::call(&mut s, request);
                        (size_of_val(&f), f.await.unwrap().status())
                    }
                    Way::TowerResilienceTimeout(mut s) => {
                        let f = tower::Service::call(&mut s, request);
                        (size_of_val(&f), f.await.unwrap().status())
                    }
                    Way::Backstop(mut s) => {
                        let f = tower::Service::call(&mut s, request);
                        (size_of_val(&*f), f.await.unwrap().status())
                    }
                    // The body ways: not part of the size table.
                    Way::Reading(_) | Way::Resuming(_) => continue,
                };
                assert_eq!(status, 200);
                println!("{name:<20} {size:>5} B");
            }
        });
        return;
    }
    if args.has("--allocs") {
        let make = |name: &str| rt.block_on(async { way(name) });
        allocs::table("tower", &names, make, |w, n| {
            rt.block_on(async {
                for _ in 0..n {
                    assert_eq!(get(w, &uri).await, 200);
                }
            });
        });
        return;
    }
    if let Some((only, n)) = args.only() {
        let uri = uri_of(only, server.addr);
        rt.block_on(async {
            let w = way(only);
            for _ in 0..n {
                assert_eq!(get(&w, &uri).await, 200);
            }
        });
        return;
    }
    let cpu = args.has("--cpu");
    let (blocks, per_block) = args.blocks();
    let start = Instant::now();
    let clock = || interleaved::reading(cpu, start);
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for _ in 0..blocks {
        rt.block_on(async {
            let ways: Vec<Way> = names.iter().map(|n| way(n)).collect();
            for w in &ways {
                for _ in 0..20 {
                    assert_eq!(get(w, &uri).await, 200);
                }
            }
            for round in 0..per_block {
                for k in 0..ways.len() {
                    let which = interleaved::way_of(round, k, ways.len());
                    let t = clock();
                    assert_eq!(get(&ways[which], &uri).await, 200);
                    samples[which].push(clock() - t);
                }
            }
        });
    }
    interleaved::report("tower", 20, &names, samples, cpu);
}
