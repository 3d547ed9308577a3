//! An abort from another thread while the client waits between attempts: the call returns at
//! once with "aborted" (not a timeout), and no further request reaches the server.

use std::sync::mpsc;
use std::time::Duration;

use backstop::{Abort, EventKind, Retrier};
use backstop::{Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn abort_during_the_wait_returns_aborted_and_sends_nothing_more() {
    for_each_adapter(|adapter| {
        let server = Server::always(Reply::status(503).header("Retry-After", "30"));
        let (waiting, wait_started) = mpsc::channel();
        // The 30 s wait fits in the deadline, so the loop really waits.
        let policy = Policy::builder()
            .max_elapsed(Duration::from_secs(120))
            .build()
            .expect("policy");
        let retrier = Retrier::new(policy).on_event(move |e| {
            if matches!(e.kind, EventKind::WaitStarted { .. }) {
                let _ = waiting.send(());
            }
        });
        let abort = Abort::new();
        let aborter = {
            let abort = abort.clone();
            std::thread::spawn(move || {
                let started = wait_started.recv_timeout(Duration::from_secs(10)).is_ok();
                abort.abort();
                started
            })
        };
        let request = TestRequest::get(server.url("/")).abort_on(&abort);
        let run = adapter.run(&retrier, request, Clock::Real);

        assert!(
            aborter.join().expect("aborter"),
            "{adapter:?}: the wait never started"
        );
        let Err(Failure::Aborted(outcome)) = run.result else {
            panic!("{adapter:?}: expected aborted, got {run:?}");
        };
        assert_eq!((outcome.attempts, outcome.reason), (1, StopReason::Aborted));
        assert!(run.real < Duration::from_secs(5), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 1);
    });
}
