//! Measured, not asserted: where backstop::reqwest's cost per request goes, beside bare reqwest
//! and the steps it adds. Each way is one GET answered 200 at once on loopback, body read, on
//! one current-thread tokio runtime (as `per_request`'s reqwest family):
//!
//! - `bare`: reqwest alone;
//! - `middleware-pass`: a reqwest-middleware client with one middleware that calls the next;
//! - `middleware-timeout`: the same middleware racing the call against `tokio::time::timeout`
//!   (5 s, the default attempt timeout): what the timer an attempt carries costs alone;
//! - `reqwest-retry`: `RetryTransientMiddleware`, as in `per_request`;
//! - `backstop`: `backstop::reqwest`'s `RetryMiddleware` with `Retrier::default()`;
//! - `backstop-no-timer`: the same on a runtime whose attempt timer never fires nor registers:
//!   backstop without the timer (a measurement only: it drops a guarantee).
//!
//! ```sh
//! cargo bench -p backstop-soak --bench reqwest_probe               # wall time, every way
//! cargo bench -p backstop-soak --bench reqwest_probe -- --cpu      # the thread's CPU time
//! cargo bench -p backstop-soak --bench reqwest_probe -- --ways bare,backstop --quick
//! cargo bench -p backstop-soak --bench reqwest_probe -- --sizes    # the middlewares' futures
//! tests/soak/benches/reqwest_callgrind.sh                          # instructions per GET
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

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop::{Epoch, Retrier, Runtime, Sleep};
use backstop_soak::poll_server::PollServer;
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

/// The ways, by name; the first is the reference of the overhead column.
const WAYS: [&str; 6] = [
    "bare",
    "middleware-pass",
    "middleware-timeout",
    "reqwest-retry",
    "backstop",
    "backstop-no-timer",
];

/// Calls the rest of the chain, nothing else: the cost of one middleware layer.
struct Pass;

#[async_trait::async_trait]
impl Middleware for Pass {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        next.run(request, extensions).await
    }
}

/// Races the rest of the chain against a tokio timer.
struct Timeout(Duration);

#[async_trait::async_trait]
impl Middleware for Timeout {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        tokio::time::timeout(self.0, next.run(request, extensions))
            .await
            .unwrap()
    }
}

/// Prints the size of the next middleware's future (the box reqwest-middleware allocates).
struct Size;

#[async_trait::async_trait]
impl Middleware for Size {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let future = next.run(request, extensions);
        println!("  its future: {} bytes", size_of_val(&*future));
        future.await
    }
}

/// tokio's clock with a sleep that never resolves: backstop without the attempt's timer.
#[derive(Clone, Copy)]
struct NoTimer(tokio::time::Instant);

impl Runtime for NoTimer {
    fn now(&self) -> backstop::Instant {
        backstop::Instant::from_duration(
            tokio::time::Instant::now().saturating_duration_since(self.0),
        )
    }

    fn sleep_until(&self, _: backstop::Instant) -> Sleep {
        Box::pin(std::future::pending())
    }
}

enum Way {
    Bare(reqwest::Client),
    Middleware(ClientWithMiddleware),
}

/// The way named `name`; `sized` puts [`Size`] in front of its middleware.
fn way(name: &str, sized: bool) -> Way {
    let with = |middleware: Arc<dyn Middleware>| {
        let mut builder = ClientBuilder::new(reqwest::Client::new());
        if sized {
            builder = builder.with(Size);
        }
        Way::Middleware(builder.with_arc(middleware).build())
    };
    match name {
        "bare" => Way::Bare(reqwest::Client::new()),
        "middleware-pass" => with(Arc::new(Pass)),
        "middleware-timeout" => with(Arc::new(Timeout(
            backstop::Policy::default().attempt_timeout(),
        ))),
        "reqwest-retry" => {
            let policy = reqwest_retry::policies::ExponentialBackoff::builder()
                .retry_bounds(Duration::ZERO, Duration::ZERO)
                .build_with_max_retries(3);
            with(Arc::new(
                reqwest_retry::RetryTransientMiddleware::new_with_policy(policy),
            ))
        }
        "backstop" => with(Arc::new(backstop::reqwest::RetryMiddleware::new(
            Retrier::default(),
        ))),
        "backstop-no-timer" => with(Arc::new(
            backstop::reqwest::RetryMiddleware::new(Retrier::default()).with_runtime(NoTimer(
                tokio::time::Instant::from_std(Epoch::process().origin()),
            )),
        )),
        other => panic!("no way named {other}; the ways: {WAYS:?}"),
    }
}

async fn get(way: &Way, url: &str) -> u16 {
    let response = match way {
        Way::Bare(c) => c.get(url).send().await.unwrap(),
        Way::Middleware(c) => c.get(url).send().await.unwrap(),
    };
    let status = response.status().as_u16();
    response.bytes().await.unwrap();
    status
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().position(|a| a == name).map(|i| i + 1);
    let server = PollServer::start();
    let url = format!("http://{}/ok", server.addr);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if flag("--sizes").is_some() {
        rt.block_on(async {
            for name in &WAYS[1..] {
                println!("{name}:");
                assert_eq!(get(&way(name, true), &url).await, 200);
            }
        });
        return;
    }
    if let Some(i) = flag("--only") {
        let n: usize = args[i + 1].parse().unwrap();
        rt.block_on(async {
            let w = way(&args[i], false);
            for _ in 0..n {
                assert_eq!(get(&w, &url).await, 200);
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
            let ways: Vec<Way> = names.iter().map(|n| way(n, false)).collect();
            for w in &ways {
                for _ in 0..20 {
                    assert_eq!(get(w, &url).await, 200);
                }
            }
            for round in 0..per_block {
                for k in 0..ways.len() {
                    let which = interleaved::way_of(round, k, ways.len());
                    let t = clock();
                    assert_eq!(get(&ways[which], &url).await, 200);
                    samples[which].push(clock() - t);
                }
            }
        });
    }
    interleaved::report("reqwest", 20, &names, samples, cpu);
}
