//! Measured, not asserted: where backstop::reqwest's cost per request goes, beside bare reqwest
//! and the steps it adds. Each way is one GET answered 200 at once on loopback, body read, on
//! one current-thread tokio runtime (as `per_request`'s reqwest family):
//!
//! - `bare`: reqwest alone;
//! - `middleware-pass`: a reqwest-middleware client with one middleware that calls the next;
//! - `middleware-timeout`: the same middleware racing the call against `tokio::time::timeout`
//!   (5 s, the default attempt timeout): what the timer an attempt carries costs alone;
//! - `reqwest-retry`: `RetryTransientMiddleware`, as in `per_request`;
//! - `reqwest-own-retry`: reqwest 0.13's own retry, no middleware and no extra crate:
//!   `ClientBuilder::retry(reqwest::retry::for_host(<the server's host>))` with at most 3
//!   retries of a 5xx, a 408, a 429 or an error (reqwest's default budget, 20 % extra load);
//! - `backon`: backon's `Retryable` around the GET (3 retries of a 5xx at once, sleeping on
//!   tokio), as in `per_request`;
//! - `backstop`: `backstop::reqwest`'s `RetryMiddleware` with `Retrier::default()`;
//! - `backstop-no-timer`: the same on a runtime whose attempt timer never fires nor registers:
//!   backstop without the timer (a measurement only: it drops a guarantee);
//! - `backstop-hedging`, `backstop-gates`, `backstop-events`, `backstop-budget`: the middleware
//!   with one feature on (`common/features.rs`): a hedging policy whose backup (after 1 s) a
//!   fast 200 never sends, origin gates and the adaptive limiter not acting, one event
//!   observer, a `RatioBudget`.
//!
//! Not in the default set, for the bounded read (issue 38), each a GET of a 64 KiB body
//! (`/64k`), read whole: `bare-64k` (reqwest and its own `bytes()`), `backstop-64k` (backstop,
//! then the caller's `bytes()`), `backstop-read-64k` (backstop with
//! `Retrier::read_body(ReadBody::up_to(1 MiB))`, then the caller's `bytes()` of the body in
//! memory): `tests/soak/benches/reqwest_callgrind.sh bare-64k backstop-64k backstop-read-64k`;
//! and 1 MiB (`/1m`, with a strong `ETag`): `bare-1m`, `backstop-1m`, `backstop-resume-1m`
//! (the body read through the resumable body).
//!
//! ```sh
//! cargo bench -p backstop-soak --bench reqwest_probe               # wall time, every way
//! cargo bench -p backstop-soak --bench reqwest_probe -- --cpu      # the thread's CPU time
//! cargo bench -p backstop-soak --bench reqwest_probe -- --ways bare,backstop --quick
//! cargo bench -p backstop-soak --bench reqwest_probe -- --sizes    # the futures, per way
//! cargo bench -p backstop-soak --bench reqwest_probe -- --allocs   # allocations per GET
//! tests/soak/benches/reqwest_callgrind.sh                          # instructions per GET
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

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop::runtime::{Epoch, Runtime, Sleep};
use backstop::Retrier;
use backstop_soak::peers::{self, PeerError};
use backstop_soak::poll_server::PollServer;
use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

/// The ways, by name; the first is the reference of the overhead column.
const WAYS: [&str; 12] = [
    "bare",
    "middleware-pass",
    "middleware-timeout",
    "reqwest-retry",
    "reqwest-own-retry",
    "backon",
    "backstop",
    "backstop-no-timer",
    "backstop-hedging",
    "backstop-gates",
    "backstop-events",
    "backstop-budget",
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

/// Notes the size of the next middleware's future (the box reqwest-middleware allocates) in
/// [`BOXED`].
struct Size;

/// The size [`Size`] saw last.
static BOXED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[async_trait::async_trait]
impl Middleware for Size {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let future = next.run(request, extensions);
        BOXED.store(size_of_val(&*future), std::sync::atomic::Ordering::Relaxed);
        future.await
    }
}

/// tokio's clock with a sleep that never resolves: backstop without the attempt's timer.
#[derive(Clone, Copy)]
struct NoTimer(tokio::time::Instant);

impl Runtime for NoTimer {
    fn now(&self) -> backstop::runtime::Instant {
        backstop::runtime::Instant::from_duration(
            tokio::time::Instant::now().saturating_duration_since(self.0),
        )
    }

    fn sleep_until(&self, _: backstop::runtime::Instant) -> Sleep {
        Box::pin(std::future::pending())
    }
}

enum Way {
    /// A reqwest client called directly (bare, or with its own retry).
    Bare(reqwest::Client),
    Middleware(ClientWithMiddleware),
    Backon(reqwest::Client),
}

/// reqwest's own retry for `host`, as close to the peers' policy as it goes: at most 3
/// retries, of a 5xx, a 408, a 429 or an error; reqwest's default budget.
fn own_retry(host: &str) -> reqwest::Client {
    let policy = reqwest::retry::for_host(host.to_owned())
        .max_retries_per_request(3)
        .classify_fn(|rr| match rr.status() {
            Some(s) if s.is_server_error() || s == 408 || s == 429 => rr.retryable(),
            Some(_) => rr.success(),
            None => rr.retryable(),
        });
    reqwest::Client::builder().retry(policy).build().unwrap()
}

/// A GET through backon: one attempt of its is [`peers::reqwest_attempt`], a 5xx an error it
/// retries.
async fn backon_get(client: &reqwest::Client, url: &str) -> u16 {
    use backon::{ConstantBuilder, Retryable};
    let attempt = || peers::reqwest_attempt(client, url);
    let no_wait = ConstantBuilder::new()
        .with_delay(Duration::ZERO)
        .with_max_times(3);
    attempt
        .retry(no_wait)
        .when(|e| matches!(e, PeerError::Status(_)))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The way named `name` to `host`; `sized` puts [`Size`] in front of its middleware.
fn way(name: &str, host: &str, sized: bool) -> Way {
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
        "reqwest-own-retry" => Way::Bare(own_retry(host)),
        "bare-64k" => Way::Bare(reqwest::Client::new()),
        "backstop-64k" => with(Arc::new(backstop::reqwest::RetryMiddleware::new(
            Retrier::default(),
        ))),
        "backstop-read-64k" => with(Arc::new(backstop::reqwest::RetryMiddleware::new(
            Retrier::default().read_body(backstop::body::ReadBody::up_to(1 << 20)),
        ))),
        "bare-1m" => Way::Bare(reqwest::Client::new()),
        "backstop-1m" => with(Arc::new(backstop::reqwest::RetryMiddleware::new(
            Retrier::default(),
        ))),
        "backstop-resume-1m" => with(Arc::new(
            backstop::reqwest::RetryMiddleware::new(Retrier::default())
                .resume_bodies(reqwest::Client::new()),
        )),
        "backon" => Way::Backon(reqwest::Client::new()),
        "backstop-no-timer" => with(Arc::new(
            backstop::reqwest::RetryMiddleware::new(Retrier::default()).with_runtime(NoTimer(
                tokio::time::Instant::from_std(Epoch::process().origin()),
            )),
        )),
        other => match features::retrier(other) {
            Some(retrier) => with(Arc::new(backstop::reqwest::RetryMiddleware::new(retrier))),
            None => panic!("no way named {other}; the ways: {WAYS:?}"),
        },
    }
}

/// The URL the way `name` GETs on the server at `addr`: `/64k` for the `*-64k` ways, `/1m`
/// for the `*-1m` ways.
fn url_of(name: &str, addr: std::net::SocketAddr) -> String {
    let path = if name.ends_with("-64k") {
        "64k"
    } else if name.ends_with("-1m") {
        "1m"
    } else {
        "ok"
    };
    format!("http://{addr}/{path}")
}

async fn get(way: &Way, url: &str) -> u16 {
    let response = match way {
        Way::Bare(c) => c.get(url).send().await.unwrap(),
        Way::Middleware(c) => c.get(url).send().await.unwrap(),
        Way::Backon(c) => return backon_get(c, url).await,
    };
    let status = response.status().as_u16();
    response.bytes().await.unwrap();
    status
}

fn main() {
    let args = interleaved::Args::from_env();
    let server = PollServer::start();
    let url = format!("http://{}/ok", server.addr);
    let addr = server.addr;
    let host = server.addr.ip().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let names = args.ways(&WAYS);
    if args.has("--sizes") {
        println!("== reqwest probe: the future `send()` returns, and the middleware's box");
        rt.block_on(async {
            for name in &names {
                BOXED.store(0, std::sync::atomic::Ordering::Relaxed);
                let outer = match way(name, &host, true) {
                    Way::Bare(c) => {
                        let f = c.get(&url).send();
                        let n = size_of_val(&f);
                        assert_eq!(f.await.unwrap().status(), 200);
                        n
                    }
                    Way::Middleware(c) => {
                        let f = c.get(&url).send();
                        let n = size_of_val(&f);
                        assert_eq!(f.await.unwrap().status(), 200);
                        n
                    }
                    Way::Backon(c) => {
                        let f = backon_get(&c, &url);
                        let n = size_of_val(&f);
                        assert_eq!(f.await, 200);
                        n
                    }
                };
                match BOXED.load(std::sync::atomic::Ordering::Relaxed) {
                    0 => println!("{name:<20} send() {outer:>5} B"),
                    boxed => {
                        println!("{name:<20} send() {outer:>5} B, middleware's box {boxed:>5} B")
                    }
                }
            }
        });
        return;
    }
    if args.has("--allocs") {
        let make = |name: &str| rt.block_on(async { way(name, &host, false) });
        allocs::table("reqwest", &names, make, |w, n| {
            rt.block_on(async {
                for _ in 0..n {
                    assert_eq!(get(w, &url).await, 200);
                }
            });
        });
        return;
    }
    if let Some((only, n)) = args.only() {
        rt.block_on(async {
            let w = way(only, &host, false);
            let url = url_of(only, addr);
            for _ in 0..n {
                assert_eq!(get(&w, &url).await, 200);
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
            let ways: Vec<Way> = names.iter().map(|n| way(n, &host, false)).collect();
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
