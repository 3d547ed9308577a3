//! Throughput of the async adapters beside their bare clients, at a fixed concurrency against
//! a healthy loopback server, and the memory an operation in flight holds.
//!
//! Rule: the same operations, the same server, the same executor for both sides; the ways run
//! in alternating rounds, so a slow moment of the shared machine falls on both.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop::{Retrier, RetryRequest};
use http_body_util::BodyExt;

use crate::bare;

/// One way of making the load's GETs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// hyper-util on tokio.
    TokioBare,
    /// hyper-util on tokio, each GET under `tokio::time::timeout` with the default policy's
    /// attempt timeout (the timer an adapter's attempt also carries).
    TokioBareTimeout,
    /// `backstop::tokio`.
    TokioAdapter,
    /// hyper over smol, a connection per request.
    SmolBare,
    /// The same, each GET raced against an `async-io` timer of the attempt timeout.
    SmolBareTimeout,
    /// `backstop::smol`.
    SmolAdapter,
}

impl Way {
    /// Every way.
    pub const ALL: [Way; 6] = [
        Way::TokioBare,
        Way::TokioBareTimeout,
        Way::TokioAdapter,
        Way::SmolBare,
        Way::SmolBareTimeout,
        Way::SmolAdapter,
    ];
}

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
        Way::TokioBare | Way::TokioBareTimeout | Way::TokioAdapter => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let bare = Arc::new(bare::tokio_client());
            let adapter = Arc::new(backstop::tokio::Client::new(Retrier::default()));
            let started = Instant::now();
            rt.block_on(async {
                let tasks: Vec<_> = (0..concurrency)
                    .map(|_| {
                        let (next, uri, bare, adapter) =
                            (next.clone(), uri.clone(), bare.clone(), adapter.clone());
                        tokio::spawn(async move {
                            while take(&next) {
                                if way == Way::TokioBare {
                                    bare::tokio_get(&bare, &uri).await.expect("a bare GET");
                                } else if way == Way::TokioBareTimeout {
                                    tokio::time::timeout(timeout, bare::tokio_get(&bare, &uri))
                                        .await
                                        .expect("in time")
                                        .expect("a bare GET");
                                } else {
                                    let r = adapter
                                        .run(RetryRequest::get(uri.clone()))
                                        .await
                                        .expect("an adapter GET");
                                    r.response.into_body().collect().await.expect("a body");
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
        Way::SmolBare | Way::SmolBareTimeout | Way::SmolAdapter => {
            let adapter = backstop::smol::Client::new(Retrier::default());
            let ex = smol::LocalExecutor::new();
            let started = Instant::now();
            smol::block_on(ex.run(async {
                let tasks: Vec<_> = (0..concurrency)
                    .map(|_| {
                        let (next, adapter) = (&next, &adapter);
                        ex.spawn(async move {
                            while take(next) {
                                if way == Way::SmolBare {
                                    bare::smol_get(uri).await.expect("a bare GET");
                                } else if way == Way::SmolBareTimeout {
                                    futures_lite::future::or(
                                        async { Some(bare::smol_get(uri).await) },
                                        async {
                                            smol::Timer::after(timeout).await;
                                            None
                                        },
                                    )
                                    .await
                                    .expect("in time")
                                    .expect("a bare GET");
                                } else {
                                    let r = adapter
                                        .run(RetryRequest::get(uri.clone()))
                                        .await
                                        .expect("an adapter GET");
                                    r.response.into_body().collect().await.expect("a body");
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

/// The size in bytes of what an operation in flight holds: the adapter's `run` future
/// (tokio, smol), and the shared driver's loop (`backstop::run`) with a send that
/// holds nothing.
#[must_use]
pub fn future_sizes() -> [(&'static str, usize); 3] {
    let uri: http::Uri = "http://127.0.0.1:1/".parse().expect("a URI");
    let tokio_client = backstop::tokio::Client::new(Retrier::default());
    let smol_client = backstop::smol::Client::new(Retrier::default());
    let retrier = Retrier::default();
    let runtime = backstop::StdRuntime::new();
    let tokio_future = tokio_client.run(RetryRequest::get(uri.clone()));
    let smol_future = smol_client.run(RetryRequest::get(uri.clone()));
    let driver_future = backstop::run(&retrier, &runtime, RetryRequest::get(uri), |_attempt| {
        core::future::ready(Ok::<http::Response<()>, std::io::Error>(
            http::Response::new(()),
        ))
    });
    [
        ("backstop::tokio::Client::run", size_of_val(&tokio_future)),
        ("backstop::smol::Client::run", size_of_val(&smol_future)),
        ("backstop::run (empty send)", size_of_val(&driver_future)),
    ]
}
