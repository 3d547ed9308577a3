//! The classic retry demo (503, 503, then 200 with a JSON body), in Rust: `cargo run --example demo`.
//!
//! Without arguments it starts a local server that answers 503 with `Retry-After: 0.1` twice and
//! then 200 with a JSON body, sends one GET through the blocking ureq adapter, and prints every
//! attempt, every wait with its reason, and the final status and body.
//!
//! With `--url URL` it retries that URL instead and prints one JSON line per event plus a
//! summary line. Flags: `--method M` [GET], `--max-attempts N` [4], `--max-elapsed SECS` [15],
//! `--attempt-timeout SECS` [5], `--idempotency-key KEY|auto` (and, for POST/PATCH, opts in to
//! retrying them), `--body TEXT`, `--client ureq|smol|tokio|reqwest` [ureq] (the adapter that
//! sends it: `ureq` is `backstop::ureq::Client`; `smol` is `backstop::tower::RetryLayer` over
//! `backstop::smol::HttpService` on smol; `tokio` (or its alias `tower`) is the same layer over
//! a hyper-util client on tokio, its connector with a connect timeout of half the attempt
//! timeout; `reqwest` is a reqwest client with `backstop::reqwest::RetryMiddleware`. Each takes
//! the caller's own request, the operation named by an `OperationName` in its extensions, or
//! in the middleware's for reqwest), `--ca-file PEM` (trust the CAs in this file instead of the
//! client's default roots, handed to each client through its own TLS API: ureq's `TlsConfig`,
//! `HttpService::with_tls`, hyper-rustls's `with_tls_config`, reqwest's `tls_certs_only`). An
//! error summary names a TLS failure's cause (`certificate rejected: UnknownIssuer`).
//!
//! `--repeat N --concurrency C` runs N operations, C at a time, through one client (one
//! retrier: its budget, gates and limiter shared), prints only the events of the shared objects
//! (an origin paused or reopened, the rate limiter turned on) and one summary line: operations
//! by status, errors, attempts, stop reasons, and the limiter's rates. `--origin-gate` gives the
//! retrier one gate per origin (a 429's or 503's `Retry-After` pauses every operation to it);
//! `--rate-limiter adaptive` gives it AWS's adaptive client rate limiter (off until a 429).
//! `--rate R` starts the operations at R a second (operation `k` at `k / R` s), whenever the
//! earlier ones end (open loop, as a service's callers arrive; give `--concurrency` room for
//! the operations a paused origin holds).
//!
//! `--explain` (with or without `--url`) first prints the policy's worst case
//! (`Policy::worst_case`): the most requests the operation can send, the longest it can take,
//! and the longest single wait.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use backstop::classify::TlsFailure;
use backstop::idempotency::IDEMPOTENCY_KEY;
use backstop::rustls::pki_types::pem::PemObject;
use backstop::rustls::pki_types::CertificateDer;
use backstop::smol::{HttpService, SmolRuntime};
use backstop::tokio::TokioRuntime;
use backstop::tower::{RetryLayer, ServiceError};
use backstop::{AdaptiveRateLimiter, Backoff, GateConfig, OriginGates, Outcome, Policy};
use backstop::{EventKind, OperationName, Retried, Retrier, RetryError, RetryEvent};
use backstop_tests::server::{Reply, Server};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use tower::{Layer, ServiceExt};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let explain = args.iter().any(|a| a == "--explain");
    args.retain(|a| a != "--explain");
    let result = if args.is_empty() {
        seed_demo(explain)
    } else {
        parse(&args).and_then(|options| any_url(&options, explain))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("demo: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The classic scenario: 503, 503, 200 from a local server.
fn seed_demo(explain: bool) -> Result<(), String> {
    let busy = |n: u32| {
        Reply::status(503)
            .header("Content-Type", "application/json")
            .header("Retry-After", "0.1")
            .body(format!(r#"{{"error":"temporary_failure","attempt":{n}}}"#))
    };
    let server = Server::start([
        busy(1).into(),
        busy(2).into(),
        Reply::status(200)
            .header("Content-Type", "application/json")
            .body(r#"{"message":"request completed","attempt":3}"#)
            .into(),
    ]);
    // The classic settings: 4 attempts, backoff 100 ms..1 s, 5 s in total, 1 s per attempt.
    let policy = Policy::builder()
        .max_attempts(4)
        .backoff(Backoff::exponential(
            Duration::from_millis(100),
            Duration::from_secs(1),
        ))
        .max_elapsed(Duration::from_secs(5))
        .attempt_timeout(Duration::from_secs(1))
        .build()
        .map_err(|e| e.to_string())?;
    if explain {
        let worst = policy.worst_case();
        println!(
            "worst case: at most {} requests, {:?} in all, {:?} for the longest wait",
            worst.attempts, worst.elapsed, worst.wait
        );
    }
    let retrier = Retrier::new(policy).on_event(print_human);
    let url = server.url("/data");
    println!("GET {url} (server answers 503 + Retry-After: 0.1 twice, then 200)");
    println!(
        "  (0.1 is the source tutorial's value: HTTP's delay-seconds are whole seconds, but \
         servers send fractions, so backstop reads it as 100 ms)"
    );
    let request = http::Request::get(url)
        .extension(OperationName::new("seed-demo"))
        .body(())
        .map_err(|e| e.to_string())?;
    let client = backstop::ureq::Client::new(retrier);
    let mut done = client.run(request).map_err(|e| e.to_string())?;
    let body = done
        .response
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    println!("{}", done.response.status().as_u16());
    println!("{body}");
    println!(
        "({} attempts, {:?}, reason: {}; the server saw {} requests)",
        done.outcome.attempts,
        done.outcome.elapsed,
        done.outcome.reason,
        server.requests()
    );
    Ok(())
}

fn print_human(event: &RetryEvent<'_>) {
    match event.kind {
        EventKind::AttemptEnded {
            attempt,
            result,
            took,
            ..
        } => println!("attempt {attempt}: {result} after {took:.1?}"),
        EventKind::WaitStarted {
            delay,
            cause,
            source,
            next_attempt,
            ..
        } => println!(
            "  wait {delay:.1?} before attempt {next_attempt} (because of {}; length from {})",
            cause.map_or_else(
                || "a paused origin or the rate limiter".to_owned(),
                |c| c.to_string()
            ),
            source.as_str()
        ),
        EventKind::WaitEnded { slept, .. } => println!("  slept {slept:.1?}"),
        EventKind::Finished { outcome } => println!("done: {outcome}"),
        _ => {}
    }
}

struct Options {
    url: String,
    method: http::Method,
    max_attempts: u32,
    max_elapsed: Duration,
    attempt_timeout: Duration,
    idempotency_key: Option<String>,
    body: Option<String>,
    client: Client,
    ca_file: Option<String>,
    /// Operations to run (`--repeat`), and how many at a time (`--concurrency`).
    repeat: usize,
    concurrency: usize,
    /// `--origin-gate`: one gate per origin, shared by the operations.
    origin_gate: bool,
    /// `--rate-limiter adaptive`: one adaptive limiter, shared by the operations.
    adaptive: bool,
    /// `--rate R`: operation `k` starts `k / R` seconds in (open loop), else when a worker is
    /// free.
    rate: Option<f64>,
}

/// The adapter that sends the request.
#[derive(Clone, Copy)]
enum Client {
    /// `backstop::ureq::Client`.
    Ureq,
    /// The tower layer over `backstop::smol::HttpService`, on smol.
    Smol,
    /// The tower layer over a hyper-util client, on tokio (`--client tower` too).
    Tokio,
    /// reqwest with the retry middleware.
    Reqwest,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        url: String::new(),
        method: http::Method::GET,
        max_attempts: 4,
        max_elapsed: Duration::from_secs(15),
        attempt_timeout: Duration::from_secs(5),
        idempotency_key: None,
        body: None,
        client: Client::Ureq,
        ca_file: None,
        repeat: 1,
        concurrency: 1,
        rate: None,
        origin_gate: false,
        adaptive: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        let secs = |v: String| {
            v.parse::<f64>()
                .ok()
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or(format!("{flag}: not a number of seconds: {v}"))
        };
        match flag.as_str() {
            "--url" => o.url = value()?,
            "--method" => {
                o.method = value()?
                    .to_ascii_uppercase()
                    .parse()
                    .map_err(|_| "--method: not a method".to_owned())?;
            }
            "--max-attempts" => {
                o.max_attempts = value()?
                    .parse()
                    .map_err(|_| "--max-attempts: not a number")?;
            }
            "--max-elapsed" => o.max_elapsed = secs(value()?)?,
            "--attempt-timeout" => o.attempt_timeout = secs(value()?)?,
            "--idempotency-key" => o.idempotency_key = Some(value()?),
            "--body" => o.body = Some(value()?),
            "--client" => {
                o.client = match value()?.as_str() {
                    "ureq" => Client::Ureq,
                    "smol" => Client::Smol,
                    // The tokio adapter is the tower layer over hyper-util: `tower` names it too.
                    "tokio" | "tower" => Client::Tokio,
                    "reqwest" => Client::Reqwest,
                    other => {
                        return Err(format!(
                            "--client: ureq, smol, tokio (or tower) or reqwest, not {other}"
                        ))
                    }
                }
            }
            "--ca-file" => o.ca_file = Some(value()?),
            "--repeat" => {
                o.repeat = value()?
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or("--repeat: a number of operations, at least 1")?;
            }
            "--concurrency" => {
                o.concurrency = value()?
                    .parse()
                    .ok()
                    .filter(|&n| (1..=1024).contains(&n))
                    .ok_or("--concurrency: 1 to 1024 operations at a time")?;
            }
            "--origin-gate" => o.origin_gate = true,
            "--rate" => {
                o.rate = Some(
                    value()?
                        .parse::<f64>()
                        .ok()
                        .filter(|r| *r > 0.0 && r.is_finite())
                        .ok_or("--rate: operations a second, above 0")?,
                );
            }
            "--rate-limiter" => match value()?.as_str() {
                "adaptive" => o.adaptive = true,
                "off" => o.adaptive = false,
                other => return Err(format!("--rate-limiter: adaptive or off, not {other}")),
            },
            "-h" | "--help" => {
                return Err(
                    "usage: demo [--explain] [--url URL [--method M] [--max-attempts N] \
                     [--max-elapsed SECS] [--attempt-timeout SECS] \
                     [--idempotency-key KEY|auto] [--body TEXT] \
                     [--client ureq|smol|tokio|reqwest] [--ca-file PEM] \
                     [--repeat N] [--concurrency C] [--rate R] [--origin-gate] [--rate-limiter adaptive]] \
                     (--client tower is tokio's alias: the tower layer over hyper-util)"
                        .to_owned(),
                )
            }
            other => return Err(format!("unknown flag {other} (try --help)")),
        }
    }
    if o.url.is_empty() {
        return Err("--url is required with other flags".to_owned());
    }
    Ok(o)
}

/// Retries any URL and prints JSON lines.
fn any_url(o: &Options, explain: bool) -> Result<(), String> {
    let policy = Policy::builder()
        .max_attempts(o.max_attempts)
        .max_elapsed(o.max_elapsed)
        .attempt_timeout(o.attempt_timeout)
        .build()
        .map_err(|e| e.to_string())?;
    if explain {
        let worst = policy.worst_case();
        println!(
            r#"{{"worst_case":true,"attempts":{},"elapsed_ms":{:.3},"longest_wait_ms":{:.3}}}"#,
            worst.attempts,
            worst.elapsed.as_secs_f64() * 1e3,
            worst.wait.as_secs_f64() * 1e3
        );
    }
    let mut retrier = Retrier::new(policy);
    if o.origin_gate {
        let gates = OriginGates::new(GateConfig::new()).map_err(|e| e.to_string())?;
        retrier = retrier.origin_gates(Arc::new(gates));
    }
    let limiter = o.adaptive.then(|| Arc::new(AdaptiveRateLimiter::new()));
    if let Some(limiter) = &limiter {
        retrier = retrier.rate_limiter(limiter.clone());
    }
    // One operation: every event. Many: what the gates and the limiter did, and the summary.
    let every_event = o.repeat == 1;
    let retrier = retrier.on_event(move |e| {
        let shared = matches!(
            e.kind,
            EventKind::GateClosed { .. }
                | EventKind::GateReopened { .. }
                | EventKind::RateLimiterEnabled { .. }
        );
        if every_event || shared {
            println!("{}", json_line(e));
        }
    });
    // Checked once, before anything is sent.
    request_of(o)?;
    let started = std::time::Instant::now();
    let results = send(o, retrier)?;
    if o.repeat > 1 {
        println!(
            "{}",
            totals(&results, started.elapsed(), limiter.as_deref())
        );
        return Ok(());
    }
    match results.into_iter().next() {
        Some(Ok((status, outcome))) => {
            let summary = json!({"summary": true, "status": status,
                "attempts": outcome.attempts, "elapsed_ms": outcome.elapsed.as_secs_f64() * 1e3,
                "reason": outcome.reason.as_str()});
            println!("{summary}");
            Ok(())
        }
        Some(Err((error, o))) => {
            let summary = json!({"summary": true, "error": error, "attempts": o.attempts,
                "elapsed_ms": o.elapsed.as_secs_f64() * 1e3, "reason": o.reason.as_str()});
            println!("{summary}");
            Err("no response".to_owned())
        }
        None => Err("no operation ran".to_owned()),
    }
}

/// The operation's request, made afresh for each operation (`--idempotency-key auto`: a new
/// key each).
fn request_of(o: &Options) -> Result<http::Request<Bytes>, String> {
    let uri: http::Uri = o.url.parse().map_err(|e| format!("--url: {e}"))?;
    let body = Bytes::from(o.body.clone().unwrap_or_default());
    let mut request = http::Request::builder()
        .method(o.method.clone())
        .uri(uri)
        .extension(OperationName::new("demo"))
        .body(body)
        .map_err(|e| e.to_string())?;
    let key = match o.idempotency_key.as_deref() {
        // A new key whatever the method (`backstop::idempotency::ensure_idempotency_key` gives one to POST
        // and PATCH alone), sent on every attempt.
        Some("auto") => Some(backstop::idempotency::new_idempotency_key()),
        Some(key) => Some(http::HeaderValue::from_str(key).map_err(|e| e.to_string())?),
        None => None,
    };
    if let Some(key) = key {
        request.headers_mut().insert(IDEMPOTENCY_KEY, key);
    }
    Ok(request)
}

/// The summary line of `--repeat`: operations by final status (or stop reason without a
/// response), attempts, wall time, and the limiter's rates at the end.
fn totals(results: &[Sent], wall: Duration, limiter: Option<&AdaptiveRateLimiter>) -> String {
    let mut statuses = BTreeMap::<u16, usize>::new();
    let mut reasons = BTreeMap::<String, usize>::new();
    let mut attempts = 0u64;
    let mut errors = 0usize;
    for result in results {
        let outcome = match result {
            Ok((status, outcome)) => {
                *statuses.entry(*status).or_default() += 1;
                outcome
            }
            Err((_, outcome)) => {
                errors += 1;
                outcome
            }
        };
        attempts += u64::from(outcome.attempts);
        *reasons.entry(outcome.reason.to_string()).or_default() += 1;
    }
    let statuses: BTreeMap<String, usize> = statuses
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let mut summary = json!({"summary": true, "operations": results.len(),
        "statuses": statuses, "errors": errors, "attempts": attempts, "reasons": reasons,
        "elapsed_ms": wall.as_secs_f64() * 1e3});
    if let Some(l) = limiter {
        summary["rate_limiter"] = json!({"enabled": l.is_enabled(), "fill_rate": l.fill_rate(),
            "measured_rate": l.measured_rate()});
    }
    summary.to_string()
}

/// The final status and outcome, or the error's summary text and outcome.
type Sent = Result<(u16, Outcome), (String, Outcome)>;

/// Runs `--repeat` operations, `--concurrency` at a time, through one client of the chosen
/// adapter (its retrier, budget, gates and limiter shared); with `--ca-file`, it trusts the
/// CAs in that file alone, given to the client through its own TLS API.
fn send(o: &Options, retrier: Retrier) -> Result<Vec<Sent>, String> {
    let cas = o.ca_file.as_deref().map(ca_certificates).transpose()?;
    let (n, c) = (o.repeat, o.concurrency.min(o.repeat));
    match o.client {
        Client::Ureq => {
            let client = match cas {
                Some(cas) => {
                    let cas: Vec<_> = cas
                        .iter()
                        .map(|c| ureq::tls::Certificate::from_der(c).to_owned())
                        .collect();
                    let tls = ureq::tls::TlsConfig::builder()
                        .root_certs(ureq::tls::RootCerts::new_with_certs(&cas))
                        .build();
                    backstop::ureq::Client::with_tls(retrier, tls)
                }
                None => backstop::ureq::Client::new(retrier),
            };
            let one = |request: http::Request<Bytes>| {
                // A request without a body goes with none at all, as a ureq user sends a GET.
                Ok(if request.body().is_empty() {
                    summary(client.run(request.map(|_| ())))
                } else {
                    summary(client.run(request.map(|body| body.to_vec())))
                })
            };
            on_threads(o, n, c, one)
        }
        Client::Smol => {
            let http = match cas {
                Some(cas) => HttpService::with_tls(rustls_trusting(cas)?),
                None => HttpService::new(),
            };
            let client = RetryLayer::new(retrier, SmolRuntime::new()).layer(http);
            let one = |request: http::Request<Bytes>| {
                let client = client.clone();
                async move { layer_summary(client.oneshot(request.map(Full::new)).await) }
            };
            smol::block_on(concurrently(o, n, c, one))
        }
        Client::Tokio => {
            let tls = cas.map(rustls_trusting).transpose()?;
            let client = hyper_util_client(retrier, tls);
            let one = |request: http::Request<Bytes>| {
                let client = client.clone();
                async move { layer_summary(client.oneshot(request.map(Full::new)).await) }
            };
            on_tokio(concurrently(o, n, c, one))?
        }
        Client::Reqwest => {
            let client = reqwest_client(retrier, cas)?;
            let one = |request: http::Request<Bytes>| through_reqwest(&client, request);
            on_tokio(concurrently(o, n, c, one))?
        }
    }
}

/// When operation `k` starts under `--rate` (none: at once).
fn scheduled(o: &Options, start: std::time::Instant, k: usize) -> Option<std::time::Instant> {
    o.rate
        .map(|r| start + Duration::from_secs_f64(k as f64 / r))
}

/// `n` blocking operations on `c` threads (each takes the next operation when it is done).
fn on_threads(
    o: &Options,
    n: usize,
    c: usize,
    one: impl Fn(http::Request<Bytes>) -> Result<Sent, String> + Sync,
) -> Result<Vec<Sent>, String> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(n));
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..c {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n {
                    break;
                }
                if let Some(at) = scheduled(o, start, k) {
                    std::thread::sleep(at.saturating_duration_since(std::time::Instant::now()));
                }
                let sent = request_of(o).and_then(&one);
                results
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(sent);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .collect()
}

/// `n` async operations, `c` at a time, in one task (each of `c` workers takes the next
/// operation when its own is done).
async fn concurrently<F, Fut>(o: &Options, n: usize, c: usize, one: F) -> Result<Vec<Sent>, String>
where
    F: Fn(http::Request<Bytes>) -> Fut,
    Fut: core::future::Future<Output = Result<Sent, String>>,
{
    let next = AtomicUsize::new(0);
    let start = std::time::Instant::now();
    let worker = || async {
        let mut mine = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= n {
                break;
            }
            if let Some(at) = scheduled(o, start, k) {
                // async-io's timer: it runs on any executor (its reactor has a thread of its own).
                smol::Timer::at(at).await;
            }
            mine.push(match request_of(o) {
                Ok(request) => one(request).await,
                Err(e) => Err(e),
            });
        }
        mine
    };
    let mut workers: Vec<_> = (0..c).map(|_| Box::pin(worker())).collect();
    let mut done: Vec<Option<Vec<Result<Sent, String>>>> = (0..c).map(|_| None).collect();
    // Bounded: every worker ends once the `n` operations are taken.
    futures_lite::future::poll_fn(|cx| {
        let mut pending = false;
        for (worker, done) in workers.iter_mut().zip(done.iter_mut()) {
            if done.is_none() {
                match core::future::Future::poll(worker.as_mut(), cx) {
                    core::task::Poll::Ready(results) => *done = Some(results),
                    core::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            core::task::Poll::Pending
        } else {
            core::task::Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().flatten().collect()
}

/// The CA certificates in the PEM file at `path`, read by rustls-pki-types.
fn ca_certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let cas = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("--ca-file {path}: {e}"))?;
    if cas.is_empty() {
        return Err(format!("--ca-file {path}: no CERTIFICATE in it"));
    }
    Ok(cas)
}

/// Runs `f` to its end on a current-thread tokio runtime.
fn on_tokio<T>(f: impl core::future::Future<Output = T>) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    Ok(runtime.block_on(f))
}

/// rustls trusting `cas` alone (for smol's `HttpService` and hyper-rustls).
fn rustls_trusting(
    cas: Vec<CertificateDer<'static>>,
) -> Result<backstop::rustls::ClientConfig, String> {
    let mut roots = backstop::rustls::RootCertStore::empty();
    for ca in cas {
        roots.add(ca).map_err(|e| format!("--ca-file: {e}"))?;
    }
    Ok(backstop::rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A reqwest client (rustls on ring, trusting `cas` alone when given, else reqwest's
/// default: the platform's verifier) with the retry middleware.
fn reqwest_client(
    retrier: Retrier,
    cas: Option<Vec<CertificateDer<'static>>>,
) -> Result<reqwest_middleware::ClientWithMiddleware, String> {
    // reqwest is built with `rustls-no-provider`: ring is the process default.
    let _ = backstop::rustls::crypto::ring::default_provider().install_default();
    let mut http = reqwest::Client::builder();
    if let Some(cas) = cas {
        let cas = cas.iter().map(|c| reqwest::Certificate::from_der(c));
        let cas = cas.collect::<Result<Vec<_>, _>>();
        http = http.tls_certs_only(cas.map_err(|e| format!("--ca-file: {e}"))?);
    }
    let http = http.build().map_err(|e| format!("reqwest client: {e}"))?;
    Ok(reqwest_middleware::ClientBuilder::new(http)
        .with(backstop::reqwest::RetryMiddleware::new(retrier))
        .build())
}

/// One operation through the reqwest `client`. An error that did not come from the retry
/// loop is the demo's own failure.
async fn through_reqwest(
    client: &reqwest_middleware::ClientWithMiddleware,
    mut request: http::Request<Bytes>,
) -> Result<Sent, String> {
    // The middleware reads the operation's name from the chain's extensions.
    let mut extensions = core::mem::take(request.extensions_mut());
    let request = reqwest::Request::try_from(request).map_err(|_| "--url: not for reqwest")?;
    match client
        .execute_with_extensions(request, &mut extensions)
        .await
    {
        Ok(response) => Ok(Ok((
            response.status().as_u16(),
            outcome_in(response.extensions())?,
        ))),
        Err(e) => match backstop::reqwest::retry_error(&e) {
            Some(e) => Ok(Err(failure(e))),
            None => Err("reqwest failed outside the retry loop".to_owned()),
        },
    }
}

/// A hyper-util client (http, and https trusting `tls`, else hyper-rustls's Mozilla roots)
/// behind the retry layer on tokio. Its connector gives up a connect at half the attempt
/// timeout, as `backstop::tower`'s docs ask: a connect that never completes is then
/// `ConnectTimeout` (never sent, so retried for any method), not the loop's `Timeout`.
fn hyper_util_client(
    retrier: Retrier,
    tls: Option<backstop::rustls::ClientConfig>,
) -> backstop::tower::Retry<
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    TokioRuntime,
> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(Some(retrier.policy().attempt_timeout() / 2));
    let https = hyper_rustls::HttpsConnectorBuilder::new();
    let https = match tls {
        Some(tls) => https.with_tls_config(tls),
        None => https.with_webpki_roots(),
    };
    let https = https.https_or_http().enable_http1().wrap_connector(tcp);
    let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https);
    RetryLayer::new(retrier, TokioRuntime::new()).layer(http)
}

/// The summary of the tower layer's answer: the status and the outcome in the response's
/// extensions, or the error's summary.
fn layer_summary<B>(
    result: Result<http::Response<B>, RetryError<ServiceError>>,
) -> Result<Sent, String> {
    match result {
        Ok(response) => Ok(Ok((
            response.status().as_u16(),
            outcome_in(response.extensions())?,
        ))),
        Err(e) => Ok(Err(failure(&e))),
    }
}

/// The outcome the middleware and the layer put in the last response's extensions.
fn outcome_in(extensions: &http::Extensions) -> Result<Outcome, String> {
    extensions
        .get::<Outcome>()
        .copied()
        .ok_or_else(|| "the response carries no outcome".to_owned())
}

/// The summary of a run of a ready-made client: the status, or the error's summary.
fn summary<B, E: std::error::Error + 'static>(result: Result<Retried<B>, RetryError<E>>) -> Sent {
    match result {
        Ok(done) => Ok((done.response.status().as_u16(), done.outcome)),
        Err(e) => Err(failure(&e)),
    }
}

/// The error's text with a TLS failure's cause named (never the client's own text, which may
/// hold the URL), and the outcome.
fn failure<E: std::error::Error + 'static>(e: &RetryError<E>) -> (String, Outcome) {
    let mut text = e.to_string();
    if let RetryError::Failed { error, .. } = e {
        if let Some(tls) = TlsFailure::find(error) {
            text = format!("{text}: {tls}");
        }
    }
    (text, *e.outcome())
}

fn json_line(e: &RetryEvent<'_>) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut line = match e.kind {
        EventKind::AttemptEnded {
            attempt,
            result,
            took,
            elapsed,
        } => json!({"event": "attempt", "attempt": attempt, "result": result.to_string(),
                    "took_ms": ms(took), "elapsed_ms": ms(elapsed)}),
        EventKind::WaitStarted {
            next_attempt,
            delay,
            cause,
            source,
            elapsed,
        } => json!({"event": "wait", "next_attempt": next_attempt, "delay_ms": ms(delay),
                    "cause": cause.map(|c| c.to_string()), "source": source.as_str(),
                    "elapsed_ms": ms(elapsed)}),
        EventKind::WaitEnded {
            next_attempt,
            slept,
            elapsed,
        } => json!({"event": "waited", "next_attempt": next_attempt, "slept_ms": ms(slept),
                    "elapsed_ms": ms(elapsed)}),
        EventKind::Finished { outcome } => json!({"event": "finished",
            "attempts": outcome.attempts, "reason": outcome.reason.as_str(),
            "last": outcome.last.map(|last| last.to_string()), "elapsed_ms": ms(outcome.elapsed)}),
        EventKind::GateClosed {
            attempt,
            reopens_in,
            elapsed,
        } => json!({"event": "origin_paused", "attempt": attempt,
                    "reopens_in_ms": ms(reopens_in), "elapsed_ms": ms(elapsed)}),
        EventKind::GateReopened { attempt, elapsed } => {
            json!({"event": "origin_reopened", "attempt": attempt, "elapsed_ms": ms(elapsed)})
        }
        EventKind::RateLimiterEnabled { attempt, elapsed } => {
            json!({"event": "rate_limiter_on", "attempt": attempt, "elapsed_ms": ms(elapsed)})
        }
        _ => json!({"event": "other"}),
    };
    line["operation"] = json!(e.operation);
    line["method"] = json!(e.method);
    line["url"] = json!(e.url.to_string());
    line.to_string()
}
