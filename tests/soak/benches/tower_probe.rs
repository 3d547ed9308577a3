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
//! - `backstop`: `backstop::tower::RetryLayer` with `Retrier::default()` on `TokioRuntime`
//!   over that client, called the same way.
//!
//! ```sh
//! cargo bench -p backstop-soak --bench tower_probe               # wall time, every way
//! cargo bench -p backstop-soak --bench tower_probe -- --cpu      # the thread's CPU time
//! cargo bench -p backstop-soak --bench tower_probe -- --ways bare-timeout,backstop --quick
//! cargo bench -p backstop-soak --bench tower_probe -- --only backstop 1000
//! cargo bench -p backstop-soak --bench tower_probe -- --sizes    # the layer's boxed future
//! tests/soak/benches/tower_callgrind.sh                          # instructions per GET
//! ```
//!
//! The ways alternate GET by GET (rotating order, reversed every other round) in blocks with
//! new clients; medians, and means below the 90th percentile, side by side from one run.
//! `-- --only WAY N` makes N GETs one way alone, for `strace -c -f` or callgrind. The CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) counts what a GET costs the client thread, kernel included,
//! whether or not it waited for the server: on a shared machine its overheads move by a point
//! or two between runs, the wall time's by ten.

#![allow(clippy::print_stdout, clippy::unwrap_used)]
// One call, the thread's CPU clock, which std does not expose.
#![allow(unsafe_code)]

#[path = "common/interleaved.rs"]
mod interleaved;

use std::future::Ready;
use std::time::{Duration, Instant};

use backstop::tokio::TokioRuntime;
use backstop::tower::RetryLayer;
use backstop::{Policy, Retrier};
use backstop_soak::bare::{self, TokioClient};
use backstop_soak::clients;
use backstop_soak::poll_server::PollServer;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use tower::{Layer, ServiceExt};

/// The ways, by name; the first is the reference of the overhead column.
const WAYS: [&str; 5] = [
    "bare",
    "bare-timeout",
    "tower-retry",
    "backstop",
    "backstop-gates",
];

type Req = http::Request<Empty<Bytes>>;

/// tower's retry policy as a user writes one: an error or a 5xx is retried, up to 3 times
/// more, at once; a 200 never is.
#[derive(Clone)]
struct NeverA200 {
    retries_left: u32,
}

impl<B, E> tower::retry::Policy<Req, http::Response<B>, E> for NeverA200 {
    type Future = Ready<()>;

    fn retry(
        &mut self,
        _: &mut Req,
        result: &mut Result<http::Response<B>, E>,
    ) -> Option<Self::Future> {
        let retryable = match result {
            Ok(response) => response.status().is_server_error(),
            Err(_) => true,
        };
        if retryable && self.retries_left > 0 {
            self.retries_left -= 1;
            Some(std::future::ready(()))
        } else {
            None
        }
    }

    fn clone_request(&mut self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}

enum Way {
    Bare(TokioClient),
    BareTimeout(TokioClient, Duration),
    TowerRetry(tower::retry::Retry<NeverA200, TokioClient>),
    Backstop(backstop::tower::Retry<TokioClient, TokioRuntime>),
}

/// The way named `name`, with a new client. Call it inside the runtime.
fn way(name: &str) -> Way {
    let client = bare::tokio_client();
    match name {
        "bare" => Way::Bare(client),
        "bare-timeout" => Way::BareTimeout(client, Policy::default().attempt_timeout()),
        "tower-retry" => Way::TowerRetry(tower::retry::Retry::new(
            NeverA200 { retries_left: 3 },
            client,
        )),
        "backstop" => {
            Way::Backstop(RetryLayer::new(Retrier::default(), TokioRuntime::new()).layer(client))
        }
        // The same with an origin gate per origin and the adaptive limiter, neither acting.
        "backstop-gates" => {
            let gates = backstop::OriginGates::new(backstop::GateConfig::new()).unwrap();
            let retrier = Retrier::default()
                .origin_gates(std::sync::Arc::new(gates))
                .rate_limiter(std::sync::Arc::new(backstop::AdaptiveRateLimiter::new()));
            Way::Backstop(RetryLayer::new(retrier, TokioRuntime::new()).layer(client))
        }
        other => panic!("no way named {other}; the ways: {WAYS:?}"),
    }
}

async fn get(way: &Way, uri: &http::Uri) -> u16 {
    let request = clients::get(uri);
    let response = match way {
        Way::Bare(c) => c.request(request).await.unwrap(),
        Way::BareTimeout(c, t) => tokio::time::timeout(*t, c.request(request))
            .await
            .unwrap()
            .unwrap(),
        Way::TowerRetry(s) => s.clone().oneshot(request).await.unwrap(),
        Way::Backstop(s) => s.clone().oneshot(request).await.unwrap(),
    };
    let status = response.status().as_u16();
    response.into_body().collect().await.unwrap();
    status
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).map(|i| i + 1);
    let server = PollServer::start();
    let uri: http::Uri = format!("http://{}/ok", server.addr).parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if flag("--sizes").is_some() {
        rt.block_on(async {
            let Way::Backstop(mut s) = way("backstop") else {
                unreachable!()
            };
            let future = tower::Service::call(&mut s, clients::get(&uri));
            println!("backstop's call future: {} bytes", size_of_val(&*future));
            assert_eq!(future.await.unwrap().status(), 200);
        });
        return;
    }
    if let Some(i) = flag("--only") {
        let n: usize = args[i + 1].parse().unwrap();
        rt.block_on(async {
            let w = way(&args[i]);
            for _ in 0..n {
                assert_eq!(get(&w, &uri).await, 200);
            }
        });
        return;
    }
    let names: Vec<&str> = match flag("--ways") {
        Some(i) => args[i].split(',').collect(),
        None => WAYS.to_vec(),
    };
    let cpu = flag("--cpu").is_some();
    let (blocks, per_block) = if flag("--quick").is_some() {
        (5, 400)
    } else {
        (20, 2_000)
    };
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
    interleaved::report("tower", 14, &names, samples, cpu);
}
