//! The tail that hedging cuts, over real loopback HTTP, per async front door: `cargo run
//! --release -p backstop-tests --example hedge_stall [GETS] [CONCURRENCY]` (default 2,000 GETs,
//! 50 at a time).
//!
//! Method: the scripted server stalls every 20th request it receives for 1 s (5 %), and
//! answers every other one at once; its script counts arrivals, copies included. Each front
//! door (the tower layer over `backstop::smol::HttpService` on smol, over hyper-util on tokio,
//! the reqwest middleware on tokio) sends GETS requests from CONCURRENCY tasks through one
//! client, once under a policy without hedging and once hedged after 50 ms (two copies at
//! most). Per row: the median and 99th percentile of the wall time per GET, the requests the
//! server received beyond the GETs, and how many GETs returned a stalled copy's body (the
//! stalled copy is dropped, its connection closed, when the fast one wins). Real time: these
//! are measurements, not assertions (the assertions are `tests/hedged_requests.rs`, whose
//! stalled copy never answers).

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop::smol::SmolRuntime;
use backstop::tokio::TokioRuntime;
use backstop::{Hedging, Policy, Retrier};
use backstop_tests::middleware::{default_tls, reqwest_client, smol_client, tower_client};
use backstop_tests::server::{Action, Reply, Server};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

#[derive(Clone, Copy, Debug)]
enum Door {
    TowerSmol,
    TowerTokio,
    Reqwest,
}

/// One GET's wall time, and whether it returned the stalled body.
type Sample = (Duration, bool);

fn main() {
    let mut args = std::env::args().skip(1);
    let gets: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2_000);
    let concurrency: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(50);
    println!(
        "{gets} GETs, {concurrency} at a time; the server stalls every 20th request it receives for 1 s"
    );
    println!();
    println!("| front door | hedging | p50 ms | p99 ms | max ms | extra requests | stalled bodies returned |");
    println!("|---|---|---|---|---|---|---|");
    for door in [Door::TowerSmol, Door::TowerTokio, Door::Reqwest] {
        for hedged in [false, true] {
            let server = stalling_server(gets * 2);
            let retrier = Retrier::new(policy(hedged));
            let url = server.url("/leaf");
            let started = Instant::now();
            let mut samples = run(door, &retrier, &url, gets, concurrency);
            let took = started.elapsed();
            samples.sort();
            let slow = samples.iter().filter(|(_, slow)| *slow).count();
            println!(
                "| {door:?} | {} | {:.1} | {:.1} | {:.1} | {} ({:.1} %) | {slow} |",
                if hedged { "50 ms" } else { "off" },
                ms(percentile(&samples, 50.0)),
                ms(percentile(&samples, 99.0)),
                ms(samples.last().map_or(Duration::ZERO, |s| s.0)),
                server.requests().saturating_sub(gets),
                100.0 * server.requests().saturating_sub(gets) as f64 / gets as f64,
            );
            eprintln!("{door:?} hedged={hedged}: {took:.1?}");
        }
    }
}

fn policy(hedged: bool) -> Policy {
    let builder = Policy::builder().attempt_timeout(Duration::from_secs(5));
    let builder = if hedged {
        builder.hedging(Hedging::fixed(Duration::from_millis(50)))
    } else {
        builder
    };
    builder.build().expect("a valid policy")
}

/// A server whose `n` first arrivals stall for 1 s every 20th, and answer at once otherwise.
fn stalling_server(n: usize) -> Server {
    Server::start((0..n).map(|i| -> Action {
        if i % 20 == 0 {
            Reply::status(200)
                .body("slow")
                .delay(Duration::from_secs(1))
                .into()
        } else {
            Reply::status(200).body("fast").into()
        }
    }))
}

/// `gets` GETs of `url` from `concurrency` tasks through one client of `door`.
fn run(door: Door, retrier: &Retrier, url: &str, gets: usize, concurrency: usize) -> Vec<Sample> {
    let per_task = gets.div_ceil(concurrency);
    let url: Arc<str> = url.into();
    match door {
        Door::TowerSmol => {
            let client =
                smol_client::<_, Full<Bytes>>(retrier, &SmolRuntime::new(), &default_tls());
            let ex = smol::LocalExecutor::new();
            smol::block_on(ex.run(async {
                let tasks: Vec<_> = (0..concurrency)
                    .map(|t| {
                        let (client, url) = (client.clone(), url.clone());
                        ex.spawn(async move {
                            let mut out = Vec::new();
                            for _ in 0..per_task.min(gets.saturating_sub(t * per_task)) {
                                let started = Instant::now();
                                let request = http::Request::get(&*url)
                                    .body(Full::default())
                                    .expect("a request");
                                let body = match client.clone().oneshot(request).await {
                                    Ok(r) => r.into_body().collect().await.map(|b| b.to_bytes()),
                                    Err(e) => panic!("GET failed: {e}"),
                                };
                                out.push((started.elapsed(), body.is_ok_and(|b| b == "slow")));
                            }
                            out
                        })
                    })
                    .collect();
                let mut all = Vec::new();
                for t in tasks {
                    all.extend(t.await);
                }
                all
            }))
        }
        Door::TowerTokio | Door::Reqwest => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            rt.block_on(async {
                let tower =
                    tower_client::<_, Full<Bytes>>(retrier, &TokioRuntime::new(), &default_tls());
                let reqwest = reqwest_client(retrier, &TokioRuntime::new(), &default_tls());
                let tasks: Vec<_> = (0..concurrency)
                    .map(|t| {
                        let (tower, reqwest, url) = (tower.clone(), reqwest.clone(), url.clone());
                        tokio::spawn(async move {
                            let mut out = Vec::new();
                            for _ in 0..per_task.min(gets.saturating_sub(t * per_task)) {
                                let started = Instant::now();
                                let body = match door {
                                    Door::Reqwest => match reqwest.get(&*url).send().await {
                                        Ok(r) => r.bytes().await.ok(),
                                        Err(e) => panic!("GET failed: {e}"),
                                    },
                                    _ => {
                                        let request = http::Request::get(&*url)
                                            .body(Full::default())
                                            .expect("a request");
                                        match tower.clone().oneshot(request).await {
                                            Ok(r) => r
                                                .into_body()
                                                .collect()
                                                .await
                                                .ok()
                                                .map(|b| b.to_bytes()),
                                            Err(e) => panic!("GET failed: {e}"),
                                        }
                                    }
                                };
                                out.push((started.elapsed(), body.is_some_and(|b| b == "slow")));
                            }
                            out
                        })
                    })
                    .collect();
                let mut all = Vec::new();
                for t in tasks {
                    all.extend(t.await.expect("a task"));
                }
                all
            })
        }
    }
}

fn percentile(sorted: &[Sample], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
