//! backstop's `tracing` events come at levels a busy service can leave on: a first-try success
//! logs at DEBUG only; a wait before a retry (a zero one, `Retry-After: 0`, included) and an
//! operation that needed retries are INFO; one that gave up is WARN. Every duration is a whole
//! number of microseconds. On every adapter.

use backstop::Retrier;
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::traced::{Capture, Line};
use backstop_tests::TestRequest;
use tracing::Level;

/// The backstop events of one operation against `replies`.
fn traced(adapter: Adapter, replies: Vec<Reply>) -> Vec<Line> {
    let server = Server::start(replies.into_iter().map(Into::into));
    let capture = Capture::default();
    let run = capture.during(|| {
        adapter.run(
            &Retrier::default(),
            TestRequest::get(server.url("/")),
            Clock::Virtual,
        )
    });
    let lines: Vec<Line> = capture
        .lines()
        .into_iter()
        .filter(|l| l.target == "backstop")
        .collect();
    assert!(!lines.is_empty(), "{adapter:?}: no event: {run:?}");
    for line in &lines {
        assert!(
            line.floats.is_empty(),
            "{adapter:?}: a duration that is not whole microseconds: {line:?}"
        );
    }
    lines
}

fn finished(adapter: Adapter, lines: &[Line]) -> Line {
    lines
        .iter()
        .find(|l| l.message == "operation finished")
        .unwrap_or_else(|| panic!("{adapter:?}: no end: {lines:?}"))
        .clone()
}

#[test]
fn a_first_try_success_logs_at_debug_only() {
    for_each_adapter(|adapter| {
        let lines = traced(adapter, vec![Reply::status(200).body("ok")]);
        assert!(
            lines.iter().all(|l| l.level == Level::DEBUG),
            "{adapter:?}: {lines:?}"
        );
        let end = finished(adapter, &lines);
        assert!(end.fields.contains("attempts=1 "), "{adapter:?}: {end:?}");
        assert!(end.fields.contains("elapsed_us="), "{adapter:?}: {end:?}");
    });
}

#[test]
fn a_zero_wait_and_a_retried_success_are_info() {
    for_each_adapter(|adapter| {
        let lines = traced(
            adapter,
            vec![
                Reply::status(503).header("Retry-After", "0"),
                Reply::status(200).body("ok"),
            ],
        );
        let wait = lines
            .iter()
            .find(|l| l.message == "retrying after a wait")
            .unwrap_or_else(|| panic!("{adapter:?}: no wait event: {lines:?}"));
        assert_eq!(wait.level, Level::INFO, "{adapter:?}: {wait:?}");
        assert!(wait.fields.contains("delay_us=0 "), "{adapter:?}: {wait:?}");
        assert!(
            wait.fields.contains("source=\"retry_after\""),
            "{adapter:?}: {wait:?}"
        );
        let end = finished(adapter, &lines);
        assert_eq!(end.level, Level::INFO, "{adapter:?}: {end:?}");
        assert!(end.fields.contains("attempts=2 "), "{adapter:?}: {end:?}");
    });
}

#[test]
fn an_operation_that_gave_up_is_a_warning() {
    for_each_adapter(|adapter| {
        let lines = traced(
            adapter,
            (0..4)
                .map(|_| Reply::status(503).header("Retry-After", "0"))
                .collect(),
        );
        let end = finished(adapter, &lines);
        assert_eq!(end.level, Level::WARN, "{adapter:?}: {end:?}");
        assert!(
            end.fields.contains("reason=\"attempts\""),
            "{adapter:?}: {end:?}"
        );
    });
}

#[test]
fn a_first_try_success_logs_at_debug_only_with_the_rate_limiter_on() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Reply::status(429).header("Retry-After", "0").into(),
            Reply::status(200).body("ok").into(),
            Reply::status(200).body("ok").into(),
        ]);
        let limiter = std::sync::Arc::new(backstop::AdaptiveRateLimiter::new());
        let retrier = Retrier::default().rate_limiter(limiter.clone());
        // The 429 turns the limiter on, for good.
        let first = adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Virtual);
        assert_eq!(first.status(), Some(200), "{adapter:?}: {first:?}");
        assert!(limiter.is_enabled(), "{adapter:?}");

        let capture = Capture::default();
        let run = capture
            .during(|| adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Virtual));
        assert_eq!(run.outcome().attempts, 1, "{adapter:?}: {run:?}");
        let lines: Vec<Line> = capture
            .lines()
            .into_iter()
            .filter(|l| l.target == "backstop")
            .collect();
        assert!(!lines.is_empty(), "{adapter:?}");
        assert!(
            lines.iter().all(|l| l.level == Level::DEBUG),
            "{adapter:?}: {lines:?}"
        );
    });
}

#[test]
fn a_post_that_was_not_retried_says_why_at_info_once() {
    for_each_adapter(|adapter| {
        let server = Server::always(Reply::status(503));
        let capture = Capture::default();
        let run = capture.during(|| {
            adapter.run(
                &Retrier::default(),
                TestRequest::post(server.url("/orders")).body("{}"),
                Clock::Virtual,
            )
        });
        assert_eq!(run.status(), Some(503), "{adapter:?}: {run:?}");
        let lines: Vec<Line> = capture
            .lines()
            .into_iter()
            .filter(|l| l.target == "backstop")
            .collect();
        let info: Vec<&Line> = lines.iter().filter(|l| l.level == Level::INFO).collect();
        assert_eq!(info.len(), 1, "{adapter:?}: {lines:?}");
        assert!(
            info[0].fields.contains("reason=\"no_idempotency_key\""),
            "{adapter:?}: {:?}",
            info[0]
        );
    });
}

#[test]
fn no_event_line_carries_an_empty_operation_name() {
    for_each_adapter(|adapter| {
        let lines = traced(
            adapter,
            vec![
                Reply::status(503).header("Retry-After", "0"),
                Reply::status(200).body("ok"),
            ],
        );
        for line in &lines {
            assert!(!line.fields.contains("operation="), "{adapter:?}: {line:?}");
        }
    });
}
