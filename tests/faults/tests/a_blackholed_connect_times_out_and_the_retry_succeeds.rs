//! The kernel drops the first attempt's SYN: its connect never completes, backstop reports
//! `ConnectTimeout` (nothing was sent) and retries; the link is healed meanwhile, and the
//! second attempt gets the response. On every front door.
//!
//! The heal lands as soon as the first SYN was dropped, long before TCP would retransmit it
//! (Linux's first SYN retransmission is 1 s after the SYN, past the 300 ms attempt
//! timeout), so the first attempt still times out and the second connects.

use std::time::Duration;

use backstop::classify::{AttemptOutcome, ErrorClass};
use backstop::{ErrorKind, EventKind, Policy, Retrier};
use backstop_faults::{FaultNet, Reply, Server};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::events::recorded;
use backstop_tests::TestRequest;

#[test]
fn a_blackholed_connect_is_a_connect_timeout_and_the_retry_after_the_heal_succeeds() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let policy = Policy::builder()
        .max_attempts(3)
        .attempt_timeout(Duration::from_millis(300))
        .build()
        .expect("a valid policy");
    for_each_adapter(|adapter| {
        let server = net
            .serve(|| Server::start_on(net.server_ip().into(), [Reply::status(200).body(*b"ok")]))
            .expect("entered the namespace")
            .expect("bound in the namespace");
        net.blackhole_new().expect("blackholed");
        let (retrier, events) = recorded(Retrier::new(policy));
        let run = std::thread::scope(|scope| {
            let healer = scope.spawn(|| {
                let dropped = net
                    .wait_for_faulted_packets(1, Duration::from_secs(5))
                    .expect("counted");
                net.heal().expect("healed");
                dropped
            });
            let run = adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Virtual);
            let dropped = healer.join().expect("the healer ran");
            assert!(dropped >= 1, "{adapter:?}: no SYN was dropped");
            run
        });

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"ok"[..]), "{adapter:?}");
        assert_eq!(run.outcome().attempts, 2, "{adapter:?}: {run:?}");
        let first = events.all().into_iter().find_map(|e| match e {
            EventKind::AttemptEnded {
                attempt: 1,
                result: AttemptOutcome::Error(error),
                ..
            } => Some((error.kind, error.class)),
            _ => None,
        });
        assert_eq!(
            first,
            Some((ErrorKind::ConnectTimeout, ErrorClass::NotSent)),
            "{adapter:?}: {:?}",
            events.all()
        );
        // The blackholed connection never reached the server; the retry's did.
        assert_eq!(
            (server.connections(), server.requests()),
            (1, 1),
            "{adapter:?}"
        );
        assert!(run.real < Duration::from_secs(5), "{adapter:?}: {run:?}");
    });
}
