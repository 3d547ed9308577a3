//! The seed's demo, in Rust: `cargo run --example demo`.
//!
//! Without arguments it starts a local server that answers 503 with `Retry-After: 0.1` twice and
//! then 200 with a JSON body, sends one GET through the blocking ureq adapter, and prints every
//! attempt, every wait with its reason, and the final status and body.
//!
//! With `--url URL` it retries that URL instead and prints one JSON line per event plus a
//! summary line. Flags: `--method M` [GET], `--max-attempts N` [4], `--max-elapsed SECS` [15],
//! `--attempt-timeout SECS` [5], `--idempotency-key KEY|auto` (and, for POST/PATCH, opts in to
//! retrying them), `--body TEXT`.

use std::process::ExitCode;
use std::time::Duration;

use backstop::{Backoff, Policy};
use backstop_driver::{EventKind, Retrier, RetryEvent, RetryRequest};
use backstop_tests::server::{Reply, Server};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.is_empty() {
        seed_demo()
    } else {
        parse(&args).and_then(|options| any_url(&options))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("demo: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The seed's scenario: 503, 503, 200 from a local server.
fn seed_demo() -> Result<(), String> {
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
            .body(r#"{"message":"Запит успішно виконано","attempt":3}"#)
            .into(),
    ]);
    // The seed's settings: 4 attempts, backoff 100 ms..1 s, 5 s in total, 1 s per attempt.
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
    let retrier = Retrier::new(policy).on_event(print_human);
    let url = server.url("/data");
    println!("GET {url} (server answers 503 + Retry-After: 0.1 twice, then 200)");
    let request = RetryRequest::get(url).name("seed-demo");
    let client = backstop_ureq::Client::new(retrier);
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
            "  wait {delay:.1?} before attempt {next_attempt} (because of {cause}; length from {})",
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
            "-h" | "--help" => {
                return Err("usage: demo [--url URL [--method M] [--max-attempts N] \
                     [--max-elapsed SECS] [--attempt-timeout SECS] \
                     [--idempotency-key KEY|auto] [--body TEXT]]"
                    .to_owned())
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
fn any_url(o: &Options) -> Result<(), String> {
    let policy = Policy::builder()
        .max_attempts(o.max_attempts)
        .max_elapsed(o.max_elapsed)
        .attempt_timeout(o.attempt_timeout)
        .retry_non_idempotent(o.idempotency_key.is_some())
        .build()
        .map_err(|e| e.to_string())?;
    let retrier = Retrier::new(policy).on_event(|e| println!("{}", json_line(e)));
    let uri: http::Uri = o.url.parse().map_err(|e| format!("--url: {e}"))?;
    let mut request = RetryRequest::new(o.method.clone(), uri).name("demo");
    if let Some(body) = &o.body {
        request = request.body(body.clone());
    }
    match o.idempotency_key.as_deref() {
        Some("auto") => request = request.generate_idempotency_key(),
        Some(key) => {
            let value = http::HeaderValue::from_str(key).map_err(|e| e.to_string())?;
            request = request.idempotency_key(value);
        }
        None => {}
    }
    let client = backstop_ureq::Client::new(retrier);
    match client.run(request) {
        Ok(done) => {
            println!(
                r#"{{"summary":true,"status":{},"attempts":{},"elapsed_ms":{:.3},"reason":"{}"}}"#,
                done.response.status().as_u16(),
                done.outcome.attempts,
                done.outcome.elapsed.as_secs_f64() * 1e3,
                done.outcome.reason
            );
            Ok(())
        }
        Err(e) => {
            let o = e.outcome();
            println!(
                r#"{{"summary":true,"error":"{}","attempts":{},"elapsed_ms":{:.3},"reason":"{}"}}"#,
                json_escape(&e.to_string()),
                o.attempts,
                o.elapsed.as_secs_f64() * 1e3,
                o.reason
            );
            Err("no response".to_owned())
        }
    }
}

fn json_line(e: &RetryEvent<'_>) -> String {
    let head = format!(
        r#""operation":"{}","method":"{}","url":"{}""#,
        json_escape(e.operation),
        json_escape(e.method),
        json_escape(e.url)
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    match e.kind {
        EventKind::AttemptEnded {
            attempt,
            result,
            took,
            elapsed,
        } => format!(
            r#"{{"event":"attempt",{head},"attempt":{attempt},"result":"{result}","took_ms":{:.3},"elapsed_ms":{:.3}}}"#,
            ms(took),
            ms(elapsed)
        ),
        EventKind::WaitStarted {
            next_attempt,
            delay,
            cause,
            source,
            elapsed,
        } => format!(
            r#"{{"event":"wait",{head},"next_attempt":{next_attempt},"delay_ms":{:.3},"cause":"{cause}","source":"{}","elapsed_ms":{:.3}}}"#,
            ms(delay),
            source.as_str(),
            ms(elapsed)
        ),
        EventKind::WaitEnded {
            next_attempt,
            slept,
            elapsed,
        } => format!(
            r#"{{"event":"waited",{head},"next_attempt":{next_attempt},"slept_ms":{:.3},"elapsed_ms":{:.3}}}"#,
            ms(slept),
            ms(elapsed)
        ),
        EventKind::Finished { outcome } => format!(
            r#"{{"event":"finished",{head},"attempts":{},"reason":"{}","last":"{}","elapsed_ms":{:.3}}}"#,
            outcome.attempts,
            outcome.reason,
            outcome
                .last
                .map_or_else(String::new, |last| last.to_string()),
            ms(outcome.elapsed)
        ),
        _ => format!(r#"{{"event":"other",{head}}}"#),
    }
}

fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
