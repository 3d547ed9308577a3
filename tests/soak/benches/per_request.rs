//! Measured, not asserted: what one operation costs through each adapter beside its bare
//! client, on loopback, for a GET answered 200 at once and for one answered 503, 503 (with
//! `Retry-After: 0`), then 200, where the bare side retries in a plain loop.
//!
//! `cargo bench -p backstop-soak --bench per_request` (add `-- --quick` for a short run, and
//! `-- --family reqwest` for one family: ureq, tokio, smol or reqwest).
//! The families: `backstop::ureq` beside a ureq agent with the same timeouts; on tokio,
//! `backstop::tower`'s layer over hyper-util's pooled client beside that client called
//! directly; on smol, the layer over `backstop::smol::HttpService` beside that service called
//! directly; `backstop::reqwest`'s middleware beside bare reqwest.
//! Bare and backstop alternate operation by operation (the order flips each round) against one
//! busy-polling server thread, in blocks with new clients; medians and ratios from one run.
//! reqwest's family adds its peers, reqwest-retry and backon, each a row against bare reqwest
//! (the "wrapped" column), the five ways taking every order in turn.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use backstop::Retrier;
use backstop_soak::peers::{self, PeerError};
use backstop_soak::poll_server::PollServer;
use backstop_soak::{bare, clients};
use http_body_util::BodyExt;
use tower::ServiceExt;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--family NAME` (ureq, tokio, smol or reqwest) runs that family alone.
    let only = args
        .iter()
        .position(|a| a == "--family")
        .and_then(|i| args.get(i + 1));
    let runs = |family: &str| only.is_none_or(|f| f == family);
    let per_block = if quick { 100 } else { 1_000 };
    let blocks = 10;
    let server = PollServer::start();
    println!(
        "== per request on loopback, {} operations per way and case, alternating, medians",
        per_block * blocks
    );
    println!(
        "{:<26} {:<14} {:>12} {:>12} {:>10}",
        "client", "case", "bare", "wrapped", "overhead"
    );
    for case in [Case::Ok, Case::TwoUnavailable] {
        if runs("ureq") {
            let [bare, ours] = ureq_family(&server, case, blocks, per_block);
            print_row("ureq", case, bare, ours);
        }
        if runs("tokio") {
            let [bare, ours] = tokio_family(&server, case, blocks, per_block);
            print_row("tower/hyper-util on tokio", case, bare, ours);
        }
        if runs("smol") {
            let [bare, ours] = smol_family(&server, case, blocks, per_block);
            print_row("tower/HttpService on smol", case, bare, ours);
        }
        if runs("reqwest") {
            let [bare, ours, retry, backon, backon_no_zero] =
                reqwest_family(&server, case, blocks, per_block);
            print_row("reqwest", case, bare.clone(), ours);
            print_row("reqwest + reqwest-retry", case, bare.clone(), retry);
            print_row("reqwest + backon", case, bare.clone(), backon);
            print_row("reqwest + backon, 0 no-op", case, bare, backon_no_zero);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    /// 200 at once.
    Ok,
    /// 503, 503 (`Retry-After: 0`), 200.
    TwoUnavailable,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Ok => "200",
            Case::TwoUnavailable => "503, 503, 200",
        }
    }
}

fn print_row(client: &str, case: Case, bare: Vec<Duration>, ours: Vec<Duration>) {
    let (b, o) = (median(bare), median(ours));
    println!(
        "{client:<26} {:<14} {:>9.1} us {:>9.1} us {:>+9.1} %",
        case.name(),
        b.as_secs_f64() * 1e6,
        o.as_secs_f64() * 1e6,
        (o.as_secs_f64() / b.as_secs_f64() - 1.0) * 100.0
    );
}

fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    d[d.len() / 2]
}

/// The URI of one way's operations: `/ok`, or `/seq/{way}`, whose requests the server answers
/// 503, 503, 200 in turn (a sequence per path, so the two ways never share one).
fn uri(server: &PollServer, case: Case, way: &str) -> http::Uri {
    match case {
        Case::Ok => format!("http://{}/ok", server.addr),
        Case::TwoUnavailable => format!("http://{}/seq/{way}", server.addr),
    }
    .parse()
    .unwrap()
}

fn ureq_family(
    server: &PollServer,
    case: Case,
    blocks: usize,
    per_block: usize,
) -> [Vec<Duration>; 2] {
    let (bare_uri, our_uri) = (uri(server, case, "ureq-bare"), uri(server, case, "ureq"));
    let mut samples: [Vec<Duration>; 2] = Default::default();
    for _ in 0..blocks {
        let agent = bare::ureq_agent();
        let client = backstop::ureq::Client::new(Retrier::default());
        let bare_op = || bare::until_not_503(3, || bare::ureq_get(&agent, &bare_uri)).unwrap();
        let our_op = || {
            let request = http::Request::get(our_uri.clone()).body(()).unwrap();
            let mut r = client.run(request).unwrap();
            r.response.body_mut().read_to_vec().unwrap();
            r.response.status().as_u16()
        };
        for _ in 0..20 {
            assert_eq!(bare_op(), 200);
            assert_eq!(our_op(), 200);
        }
        for round in 0..per_block {
            for k in 0..2 {
                let which = (round + k) % 2;
                let t = Instant::now();
                let status = if which == 0 { bare_op() } else { our_op() };
                samples[which].push(t.elapsed());
                assert_eq!(status, 200);
            }
        }
    }
    samples
}

fn tokio_family(
    server: &PollServer,
    case: Case,
    blocks: usize,
    per_block: usize,
) -> [Vec<Duration>; 2] {
    let (bare_uri, our_uri) = (uri(server, case, "tokio-bare"), uri(server, case, "tokio"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut samples: [Vec<Duration>; 2] = Default::default();
    for _ in 0..blocks {
        rt.block_on(async {
            let agent = bare::tokio_client();
            let client = clients::tower_tokio(Retrier::default());
            let bare_op = || async {
                let mut status = bare::tokio_get(&agent, &bare_uri).await.unwrap();
                for _ in 1..3 {
                    if status != 503 {
                        break;
                    }
                    status = bare::tokio_get(&agent, &bare_uri).await.unwrap();
                }
                status
            };
            let our_op = || async {
                let r = client
                    .clone()
                    .oneshot(clients::get(&our_uri))
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                r.into_body().collect().await.unwrap();
                status
            };
            for _ in 0..20 {
                assert_eq!(bare_op().await, 200);
                assert_eq!(our_op().await, 200);
            }
            for round in 0..per_block {
                for k in 0..2 {
                    let which = (round + k) % 2;
                    let t = Instant::now();
                    let status = if which == 0 {
                        bare_op().await
                    } else {
                        our_op().await
                    };
                    samples[which].push(t.elapsed());
                    assert_eq!(status, 200);
                }
            }
        });
    }
    samples
}

fn smol_family(
    server: &PollServer,
    case: Case,
    blocks: usize,
    per_block: usize,
) -> [Vec<Duration>; 2] {
    let (bare_uri, our_uri) = (uri(server, case, "smol-bare"), uri(server, case, "smol"));
    let mut samples: [Vec<Duration>; 2] = Default::default();
    for _ in 0..blocks {
        smol::block_on(async {
            let service = bare::smol_service();
            let client = clients::tower_smol(Retrier::default());
            let bare_op = || async {
                let mut status = bare::smol_get(&service, &bare_uri).await.unwrap();
                for _ in 1..3 {
                    if status != 503 {
                        break;
                    }
                    status = bare::smol_get(&service, &bare_uri).await.unwrap();
                }
                status
            };
            let our_op = || async {
                let r = client
                    .clone()
                    .oneshot(clients::get(&our_uri))
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                r.into_body().collect().await.unwrap();
                status
            };
            for _ in 0..20 {
                assert_eq!(bare_op().await, 200);
                assert_eq!(our_op().await, 200);
            }
            for round in 0..per_block {
                for k in 0..2 {
                    let which = (round + k) % 2;
                    let t = Instant::now();
                    let status = if which == 0 {
                        bare_op().await
                    } else {
                        our_op().await
                    };
                    samples[which].push(t.elapsed());
                    assert_eq!(status, 200);
                }
            }
        });
    }
    samples
}

/// Every order of `n` ways (Heap's algorithm): rounds take them in turn, so each way takes each
/// place, and follows each other way, about equally often.
fn orders(n: usize) -> Vec<Vec<usize>> {
    fn heap(k: usize, a: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if k <= 1 {
            out.push(a.clone());
            return;
        }
        for i in 0..k - 1 {
            heap(k - 1, a, out);
            if k % 2 == 0 {
                a.swap(i, k - 1);
            } else {
                a.swap(0, k - 1);
            }
        }
        heap(k - 1, a, out);
    }
    let mut out = Vec::new();
    heap(n, &mut (0..n).collect(), &mut out);
    out
}

/// Five ways on one current-thread tokio runtime: bare reqwest (backon's attempt, the same
/// code, in a plain loop of up to three attempts while 503), backstop::reqwest, reqwest-retry, backon as shipped, and backon with a
/// sleeper that skips zero waits. Every retry here is meant to be immediate: backstop's through
/// the server's `Retry-After: 0` (a zero delay, which its loop does not sleep), the peers'
/// through zero-delay policies. reqwest-retry and backon's tokio sleeper still sleep on tokio's
/// timer for a zero delay, which waits for its next millisecond tick; the last way shows
/// backon's loop without that. Rounds take the ways in every order in turn.
fn reqwest_family(
    server: &PollServer,
    case: Case,
    blocks: usize,
    per_block: usize,
) -> [Vec<Duration>; 5] {
    use backon::{ConstantBuilder, Retryable};
    use reqwest_retry::{policies::ExponentialBackoff, RetryTransientMiddleware};
    let urls = [
        "reqwest-bare",
        "reqwest",
        "reqwest-retry",
        "reqwest-backon",
        "reqwest-backon-no-zero",
    ]
    .map(|way| uri(server, case, way).to_string());
    let orders = orders(5);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for _ in 0..blocks {
        rt.block_on(async {
            let agent = reqwest::Client::new();
            let ours = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
                .with(backstop::reqwest::RetryMiddleware::new(Retrier::default()))
                .build();
            // Three retries, as asked of the incumbent; bounds of zero, so no wait (jitter of
            // zero is zero), where its default would wait a second or more.
            let policy = ExponentialBackoff::builder()
                .retry_bounds(Duration::ZERO, Duration::ZERO)
                .build_with_max_retries(3);
            let retry = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
                .with(RetryTransientMiddleware::new_with_policy(policy))
                .build();
            let backon_client = reqwest::Client::new();
            let backon_no_zero_client = reqwest::Client::new();
            let our_op = || async {
                let r = ours.get(&urls[1]).send().await.unwrap();
                let status = r.status().as_u16();
                r.bytes().await.unwrap();
                status
            };
            let retry_op = || async {
                let r = retry.get(&urls[2]).send().await.unwrap();
                let status = r.status().as_u16();
                r.bytes().await.unwrap();
                status
            };
            // One attempt of backon's: a 5xx is an error it retries.
            let attempt = peers::reqwest_attempt;
            let bare_op = || async {
                let mut status = 0;
                for _ in 0..3 {
                    status = match attempt(&agent, &urls[0]).await {
                        Ok(s) | Err(PeerError::Status(s)) => s,
                        Err(e) => panic!("{e}"),
                    };
                    if status != 503 {
                        break;
                    }
                }
                status
            };
            let no_wait = ConstantBuilder::new()
                .with_delay(Duration::ZERO)
                .with_max_times(3);
            let backon_op = || async {
                (|| attempt(&backon_client, &urls[3]))
                    .retry(no_wait)
                    .when(|e| matches!(e, PeerError::Status(_)))
                    .await
                    .map_err(|e| e.to_string())
                    .unwrap()
            };
            let backon_no_zero_op = || async {
                (|| attempt(&backon_no_zero_client, &urls[4]))
                    .retry(no_wait)
                    .sleep(|d: Duration| async move {
                        if !d.is_zero() {
                            tokio::time::sleep(d).await;
                        }
                    })
                    .when(|e| matches!(e, PeerError::Status(_)))
                    .await
                    .map_err(|e| e.to_string())
                    .unwrap()
            };
            for _ in 0..20 {
                assert_eq!(bare_op().await, 200);
                assert_eq!(our_op().await, 200);
                assert_eq!(retry_op().await, 200);
                assert_eq!(backon_op().await, 200);
                assert_eq!(backon_no_zero_op().await, 200);
            }
            for round in 0..per_block {
                for &which in &orders[round % orders.len()] {
                    let t = Instant::now();
                    let status = match which {
                        0 => bare_op().await,
                        1 => our_op().await,
                        2 => retry_op().await,
                        3 => backon_op().await,
                        _ => backon_no_zero_op().await,
                    };
                    samples[which].push(t.elapsed());
                    assert_eq!(status, 200);
                }
            }
        });
    }
    samples
}
