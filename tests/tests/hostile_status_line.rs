//! A status line the client cannot parse, through every adapter. It is a protocol error, which
//! may have reached the server: a GET is retried and gets the 200 on the second attempt; a
//! server that only ever sends garbage ends the operation within its bounds, with that error as
//! the last outcome. Nothing panics, nothing hangs.

use std::time::Duration;

use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{assert_bounded, for_each_adapter, Clock, Failure};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

/// Bytes a server sends instead of a response, and the error every adapter reports for them.
fn garbage() -> Vec<(&'static str, Vec<u8>, ErrorKind)> {
    let protocol = |name, bytes: &[u8]| (name, bytes.to_vec(), ErrorKind::Protocol);
    vec![
        protocol(
            "letters for a status",
            b"HTTP/1.1 abc Broken\r\nContent-Length: 0\r\n\r\n",
        ),
        protocol(
            "four-digit status",
            b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
        ),
        protocol("binary", b"\x00\xff\xfe\x01garbage\r\n\r\n"),
        protocol("not HTTP", b"SSH-2.0-OpenSSH_9.6\r\n"),
        (
            "cut-off status line",
            b"HTTP/1.1 50".to_vec(),
            ErrorKind::UnexpectedEof,
        ),
    ]
}

fn policy() -> Policy {
    Policy::builder()
        .max_elapsed(Duration::from_secs(5))
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .expect("policy")
}

#[test]
fn an_unparsable_status_line_is_retried_and_the_retry_answers() {
    let policy = policy();
    for (name, bytes, _) in garbage() {
        for_each_adapter(|adapter| {
            let server = Server::start([
                Action::Raw(bytes.clone()),
                Reply::status(200).body("ok").into(),
            ]);
            let request = TestRequest::get(server.url("/"));
            let run = adapter.run(&Retrier::new(policy).seed(2), request, Clock::Virtual);

            let context = format!("{adapter:?}, {name}: {run:?}");
            assert_bounded(&run, &policy, &context);
            assert_eq!(run.status(), Some(200), "{context}");
            assert_eq!(run.body(), Some(&b"ok"[..]), "{context}");
            let outcome = run.outcome();
            assert_eq!(
                (outcome.attempts, outcome.reason),
                (2, StopReason::FinalStatus),
                "{context}"
            );
            assert_eq!(server.requests(), 2, "{context}");
        });
    }
}

#[test]
fn a_server_that_only_sends_garbage_ends_with_the_error() {
    let policy = policy();
    for (name, bytes, expected) in garbage() {
        for_each_adapter(|adapter| {
            let server = Server::always(Action::Raw(bytes.clone()));
            let request = TestRequest::get(server.url("/"));
            let run = adapter.run(&Retrier::new(policy).seed(3), request, Clock::Virtual);

            let context = format!("{adapter:?}, {name}: {run:?}");
            assert_bounded(&run, &policy, &context);
            let Err(Failure::Failed { kind, outcome }) = run.result else {
                panic!("expected the protocol error: {context}");
            };
            assert_eq!(kind, expected, "{context}");
            assert_eq!(
                (outcome.attempts, outcome.reason),
                (policy.max_attempts(), StopReason::Attempts),
                "{context}"
            );
            assert_eq!(server.requests(), outcome.attempts as usize, "{context}");
        });
    }
}
