//! Hostile `Retry-After` values, through every adapter: numbers that overflow, signs, `NaN`, hex,
//! a 64 KiB value, invalid UTF-8, several fields at once, and dates far in the future, before
//! 1970 and in the past. None may crash the client, make it wait unboundedly, or lose the
//! server's answer: a malformed value is ignored (the backoff applies and the retry gets the
//! 200), a huge one gives up at once and hands back the 503 untouched, a past date retries now.

use std::time::Duration;

use backstop::Retrier;
use backstop::{Policy, StopReason};
use backstop_tests::adapters::{assert_bounded, for_each_adapter, Adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// What the client must do with a 503 carrying the value, when the next answer is a 200.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Ignore it (the backoff applies) and retry: the 200, on the second attempt.
    Retried,
    /// A date in the past: retry at once, the 200 on the second attempt.
    RetriedNow,
    /// Give up at once: the 503, untouched, after one attempt.
    ReturnedAtOnce,
}

fn values() -> Vec<(&'static str, Vec<Vec<u8>>, Expect)> {
    use Expect::{Retried, RetriedNow, ReturnedAtOnce};
    let one = |v: &[u8]| vec![v.to_vec()];
    vec![
        ("1e30", one(b"1e30"), Retried),
        ("2^64", one(b"18446744073709551616"), ReturnedAtOnce),
        ("-1", one(b"-1"), Retried),
        ("NaN", one(b"NaN"), Retried),
        ("0x10", one(b"0x10"), Retried),
        ("64 KiB of digits", one(&[b'9'; 64 * 1024]), ReturnedAtOnce),
        ("invalid UTF-8", one(b"\xff\xfe1\x80"), Retried),
        (
            "several fields",
            vec![b"1".to_vec(), b"3600".to_vec()],
            Retried,
        ),
        (
            "year 9999",
            one(b"Fri, 31 Dec 9999 23:59:59 GMT"),
            ReturnedAtOnce,
        ),
        (
            "before 1970",
            one(b"Wed, 31 Dec 1969 23:59:59 GMT"),
            Retried,
        ),
        (
            "in the past",
            one(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            RetriedNow,
        ),
    ]
}

#[test]
fn hostile_retry_after_values_never_crash_hang_or_lose_the_response() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(5))
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .expect("policy");
    for (name, fields, expect) in values() {
        for_each_adapter(|adapter| {
            let mut reply = Reply::status(503).body("busy");
            for field in &fields {
                reply = reply.header("Retry-After", field);
            }
            let server = Server::start([reply.into(), Reply::status(200).body("ok").into()]);
            let request = TestRequest::get(server.url("/hostile"));
            let retrier = Retrier::new(policy).seed(1);
            let run = adapter.run(&retrier, request, Clock::Virtual);

            let context = format!("{adapter:?}, Retry-After {name}: {run:?}");
            assert_bounded(&run, &policy, &context);
            let outcome = run.outcome();
            match (expect, adapter) {
                // ureq refuses a response head above its 64 KiB limit: a protocol error,
                // retried like any other for a GET, and the retry gets the 200.
                (Expect::ReturnedAtOnce, Adapter::Ureq) if fields[0].len() > 60_000 => {
                    assert_eq!(run.status(), Some(200), "{context}");
                    assert_eq!(outcome.attempts, 2, "{context}");
                }
                (Expect::Retried | Expect::RetriedNow, _) => {
                    let waited = run.skipped;
                    if expect == Expect::RetriedNow {
                        assert_eq!(waited, Duration::ZERO, "{context}");
                    } else {
                        // The first retry's backoff, not whatever the value might have meant.
                        assert!(waited <= Duration::from_millis(300), "{context}");
                    }
                    assert_eq!(run.status(), Some(200), "{context}");
                    assert_eq!(run.body(), Some(&b"ok"[..]), "{context}");
                    assert_eq!(
                        (outcome.attempts, outcome.reason),
                        (2, StopReason::FinalStatus),
                        "{context}"
                    );
                    assert_eq!(server.requests(), 2, "{context}");
                }
                (Expect::ReturnedAtOnce, _) => {
                    assert_eq!(run.status(), Some(503), "{context}");
                    assert_eq!(run.body(), Some(&b"busy"[..]), "{context}");
                    assert_eq!(
                        (outcome.attempts, outcome.reason),
                        (1, StopReason::RetryAfterAboveMax),
                        "{context}"
                    );
                    assert_eq!(server.requests(), 1, "{context}");
                    assert!(run.real < Duration::from_secs(2), "{context}");
                }
            }
        });
    }
}
