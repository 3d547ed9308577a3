//! Prints the machine's decision trace, each line with its reason, on virtual time:
//! the classic demo (503 with `Retry-After: 0.1` twice, then 200) and two bounded failures.
//!
//! Run with `cargo run -p backstop --example trace`.

use core::time::Duration;

use backstop_core::{
    Decision, ErrorKind, Event, Instant, Method, Policy, Request, Response, RetryMachine,
};
use rand_core::SeedableRng;

/// What the scripted server does for one attempt.
enum Answer {
    Status(u16, Option<&'static str>),
    Error(ErrorKind),
}

/// Drives one operation through scripted answers, each taking `latency`, and prints each step.
fn trace(title: &str, policy: Policy, latency: Duration, answers: &[Answer]) {
    println!("== {title}");
    let rng = rand_pcg::Pcg64Mcg::seed_from_u64(2024);
    let mut now = Instant::ZERO;
    let mut machine = RetryMachine::new(policy, Request::new(Method::Get), rng, now);
    let mut answers = answers.iter();
    let at = |t: Instant| format!("t={:>8.3}s", t.as_duration().as_secs_f64());
    // Each attempt is at most three turns (send, wait, done): bounded.
    for _ in 0..3 * policy.max_attempts() + 2 {
        let decision = machine.poll(now);
        println!("{}  {decision}", at(now));
        match decision {
            Decision::Send { timeout, .. } => {
                machine
                    .handle(now, Event::AttemptStarted)
                    .expect("the machine asked for this attempt");
                match answers.next() {
                    Some(Answer::Status(status, retry_after)) => {
                        now = now.saturating_add(latency.min(timeout));
                        let mut response = Response::new(*status);
                        if let Some(value) = retry_after {
                            response = response.retry_after(value.as_bytes());
                        }
                        let shown =
                            retry_after.map_or(String::new(), |v| format!(", Retry-After: {v}"));
                        println!("{}  <- {status}{shown}", at(now));
                        machine
                            .handle(now, Event::Response(response))
                            .expect("an attempt is in flight");
                    }
                    Some(Answer::Error(kind)) => {
                        now = now.saturating_add(latency.min(timeout));
                        println!("{}  <- error: {kind}", at(now));
                        machine
                            .handle(now, Event::Error((*kind).into()))
                            .expect("an attempt is in flight");
                    }
                    None => now = now.saturating_add(timeout), // no answer: the timeout fires
                }
            }
            Decision::Wait { until, .. }
            | Decision::AwaitResponse {
                timeout_at: until, ..
            } => {
                now = until;
            }
            // Return or GiveUp: the operation is over.
            _ => break,
        }
    }
    println!();
}

fn main() {
    let ms = Duration::from_millis;
    trace(
        "The classic demo: 503 with Retry-After: 0.1 twice, then 200",
        Policy::default(),
        ms(3),
        &[
            Answer::Status(503, Some("0.1")),
            Answer::Status(503, Some("0.1")),
            Answer::Status(200, None),
        ],
    );
    trace(
        "Attempts exhausted: 503, 503, reset, 503 (the last 503 is returned)",
        Policy::default(),
        ms(20),
        &[
            Answer::Status(503, None),
            Answer::Status(503, None),
            Answer::Error(ErrorKind::ConnectionReset),
            Answer::Status(503, None),
        ],
    );
    trace(
        "Deadline: max_elapsed 2 s, and the server asks for 5 s (returned at once)",
        Policy::builder()
            .max_elapsed(Duration::from_secs(2))
            .build()
            .expect("valid policy"),
        ms(50),
        &[Answer::Status(500, None), Answer::Status(429, Some("5"))],
    );
}
