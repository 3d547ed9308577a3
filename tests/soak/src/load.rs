//! Throughput of the async adapters (the tower layer over hyper-util on tokio, and over
//! `backstop::smol::HttpService` on smol) beside their bare clients and, on tokio, beside
//! tower's own `Retry` + `Timeout`, at a fixed concurrency against a healthy loopback server,
//! and the memory an operation in flight holds.
//!
//! Rule: the same operations, the same server, the same executor for both sides; the ways run
//! in alternating rounds, so a slow moment of the shared machine falls on both.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop::Retrier;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use tower::ServiceExt;

use crate::{bare, clients, peers};

/// One way of making the load's GETs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// hyper-util on tokio.
    TokioBare,
    /// hyper-util on tokio, each GET under `tokio::time::timeout` with the default policy's
    /// attempt timeout (the timer an adapter's attempt also carries).
    TokioBareTimeout,
    /// `backstop::tower`'s layer over hyper-util on tokio (its connector with a connect
    /// timeout: [`clients::tower_tokio`]).
    TokioTower,
    /// tower's own `Retry` over its own `Timeout` of the same attempt timeout, over hyper-util
    /// on tokio ([`peers::tower_retry_timeout`]): the peer a tower user has, under the same load.
    /// Its client is the bare ways' (hyper-util's defaults); the layer's connector also bounds
    /// the connect, which a pooled keep-alive load does not reach after its first GETs.
    TokioTowerRetryTimeout,
    /// `backstop::smol::HttpService` called directly (its pool), on smol.
    SmolBare,
    /// The same, each GET raced against an `async-io` timer of the attempt timeout.
    SmolBareTimeout,
    /// `backstop::tower`'s layer over `backstop::smol::HttpService` on smol
    /// ([`clients::tower_smol`]).
    SmolTower,
}

impl Way {
    /// The way's name on the load command's line (`--ways`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Way::TokioBare => "tokio-bare",
            Way::TokioBareTimeout => "tokio-bare-timeout",
            Way::TokioTower => "tokio-tower",
            Way::TokioTowerRetryTimeout => "tokio-tower-retry-timeout",
            Way::SmolBare => "smol-bare",
            Way::SmolBareTimeout => "smol-bare-timeout",
            Way::SmolTower => "smol-tower",
        }
    }

    /// The way named `name` ([`Way::name`]), if any.
    #[must_use]
    pub fn named(name: &str) -> Option<Way> {
        Way::ALL.into_iter().find(|way| way.name() == name)
    }

    /// Every way, in the order of their declaration: a way's `as usize` is its place here
    /// (checked when this compiles), which the load binary indexes its results by.
    pub const ALL: [Way; 7] = [
        Way::TokioBare,
        Way::TokioBareTimeout,
        Way::TokioTower,
        Way::TokioTowerRetryTimeout,
        Way::SmolBare,
        Way::SmolBareTimeout,
        Way::SmolTower,
    ];
}

// `Way::ALL[i] as usize == i`, for every `i`.
const _: () = {
    let mut i = 0;
    while i < Way::ALL.len() {
        assert!(
            Way::ALL[i] as usize == i,
            "Way::ALL is out of declaration order"
        );
        i += 1;
    }
};

/// Runs `operations` GETs of `uri` at `concurrency` made `way`; the time it took. Each call
/// builds its own runtime (two tokio workers; one smol executor thread) and client.
///
/// # Panics
///
/// If a GET fails (the server is healthy: a failure is a bug worth stopping for).
#[must_use]
pub fn run(way: Way, uri: &http::Uri, operations: usize, concurrency: usize) -> Duration {
    let next = Arc::new(AtomicUsize::new(0));
    let timeout = backstop::Policy::default().attempt_timeout();
    let take = move |next: &AtomicUsize| next.fetch_add(1, Ordering::Relaxed) < operations;
    match way {
        Way::TokioBare | Way::TokioBareTimeout | Way::TokioTower | Way::TokioTowerRetryTimeout => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let bare = Arc::new(bare::tokio_client());
            let adapter = clients::tower_tokio(Retrier::default());
            let peer = peers::tower_retry_timeout(bare::tokio_client(), timeout);
            let started = Instant::now();
            rt.block_on(async {
                let tasks: Vec<_> = (0..concurrency)
                    .map(|_| {
                        let (next, uri, bare, adapter, peer) = (
                            next.clone(),
                            uri.clone(),
                            bare.clone(),
                            adapter.clone(),
                            peer.clone(),
                        );
                        tokio::spawn(async move {
                            while take(&next) {
                                if way == Way::TokioBare {
                                    bare::tokio_get(&bare, &uri).await.expect("a bare GET");
                                } else if way == Way::TokioBareTimeout {
                                    tokio::time::timeout(timeout, bare::tokio_get(&bare, &uri))
                                        .await
                                        .expect("in time")
                                        .expect("a bare GET");
                                } else if way == Way::TokioTowerRetryTimeout {
                                    stack_get(&peer, &uri).await;
                                } else {
                                    stack_get(&adapter, &uri).await;
                                }
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.expect("a load task");
                }
            });
            started.elapsed()
        }
        Way::SmolBare | Way::SmolBareTimeout | Way::SmolTower => {
            let bare = bare::smol_service();
            let adapter = clients::tower_smol(Retrier::default());
            let ex = smol::LocalExecutor::new();
            let started = Instant::now();
            smol::block_on(ex.run(async {
                let tasks: Vec<_> = (0..concurrency)
                    .map(|_| {
                        let (next, bare, adapter) = (&next, &bare, &adapter);
                        ex.spawn(async move {
                            while take(next) {
                                if way == Way::SmolBare {
                                    bare::smol_get(bare, uri).await.expect("a bare GET");
                                } else if way == Way::SmolBareTimeout {
                                    futures_lite::future::or(
                                        async { Some(bare::smol_get(bare, uri).await) },
                                        async {
                                            smol::Timer::after(timeout).await;
                                            None
                                        },
                                    )
                                    .await
                                    .expect("in time")
                                    .expect("a bare GET");
                                } else {
                                    stack_get(adapter, uri).await;
                                }
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await;
                }
            }));
            started.elapsed()
        }
    }
}

/// One GET of `uri` through a clone of the tower `stack` (backstop's layer, or tower's own
/// `Retry` + `Timeout`), its body read.
///
/// # Panics
///
/// If the GET or its body fails.
async fn stack_get<S, B>(stack: &S, uri: &http::Uri)
where
    S: tower::Service<http::Request<Empty<Bytes>>, Response = http::Response<B>> + Clone,
    S::Error: core::fmt::Debug,
    B: http_body::Body,
    B::Error: core::fmt::Debug,
{
    let response = stack
        .clone()
        .oneshot(clients::get(uri))
        .await
        .expect("a GET through the stack");
    response.into_body().collect().await.expect("a body");
}

/// The size in bytes of what an operation in flight holds: the tower layer's future over
/// each async client (boxed: the size of the allocation the box holds, the layer's loop and
/// the attempt in it), and the shared driver's loop (`backstop::run`) with a send that holds
/// nothing. Making the futures sends nothing (they are never polled).
#[must_use]
pub fn future_sizes() -> [(&'static str, usize); 3] {
    let uri: http::Uri = "http://127.0.0.1:1/".parse().expect("a URI");
    // The layer is always ready, and its `call` only boxes the operation's loop: nothing runs
    // until the future is polled.
    let mut tokio_client = clients::tower_tokio(Retrier::default());
    let mut smol_client = clients::tower_smol(Retrier::default());
    let retrier = Retrier::default();
    let runtime = backstop::runtime::StdRuntime::new();
    let tokio_future = tower::Service::call(&mut tokio_client, clients::get(&uri));
    let smol_future = tower::Service::call(&mut smol_client, clients::get(&uri));
    let request = http::Request::get(uri).body(()).expect("a GET");
    let driver_future = backstop::run(&retrier, &runtime, request, |_attempt| {
        core::future::ready(Ok::<http::Response<()>, std::io::Error>(
            http::Response::new(()),
        ))
    });
    [
        (
            "backstop::tower::RetryLayer over hyper-util (tokio), boxed",
            boxed_size(&tokio_future),
        ),
        (
            "backstop::tower::RetryLayer over smol::HttpService, boxed",
            boxed_size(&smol_future),
        ),
        ("backstop::run (empty send)", size_of_val(&driver_future)),
    ]
}

/// The size of the operation a tower layer's future holds in its box.
fn boxed_size<R>(future: &backstop::tower::RetryFuture<R>) -> usize {
    size_of_val::<dyn core::future::Future<Output = _> + Send>(&**future)
}
