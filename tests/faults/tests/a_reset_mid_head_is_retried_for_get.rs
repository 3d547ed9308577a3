//! The kernel resets an established connection while the response head is on its way: the
//! server has sent the status line, the client's ACK of it is answered with an RST, the
//! attempt fails with `ConnectionReset` and a GET is retried; the link is healed before the
//! retry, which gets the whole response. On every front door.
//!
//! The fault is installed while the request waits at the server ([`Reply::hold`]); the
//! status line goes out alone and the rest of the head 200 ms later ([`Reply::split_head`]),
//! so the RST lands between the two. The heal follows the first RST at once, on the real
//! clock, inside the 300 ms before the retry.

use std::time::Duration;

use backstop::classify::{AttemptOutcome, ErrorClass};
use backstop::{Backoff, ErrorKind, EventKind, Jitter, Policy, Retrier};
use backstop_faults::{FaultNet, Reply, Server};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::events::recorded;
use backstop_tests::TestRequest;

#[test]
fn a_connection_reset_mid_head_fails_the_attempt_and_a_get_is_retried_after_the_heal() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let policy = Policy::builder()
        .max_attempts(3)
        .attempt_timeout(Duration::from_secs(3))
        .backoff(Backoff::constant(Duration::from_millis(300)))
        .jitter(Jitter::None)
        .build()
        .expect("a valid policy");
    for_each_adapter(|adapter| {
        let script = [
            Reply::status(200)
                .body(*b"first")
                .hold()
                .split_head(Duration::from_millis(200)),
            Reply::status(200).body(*b"second"),
        ];
        let server = net
            .serve(|| Server::start_on(net.server_ip().into(), script))
            .expect("entered the namespace")
            .expect("bound in the namespace");
        let (retrier, events) = recorded(Retrier::new(policy));
        let run = std::thread::scope(|scope| {
            let faulter = scope.spawn(|| {
                assert!(server.wait_for_requests(1, Duration::from_secs(5)));
                net.reset_established().expect("installed");
                server.release();
                let resets = net
                    .wait_for_faulted_packets(1, Duration::from_secs(5))
                    .expect("counted");
                net.heal().expect("healed");
                resets
            });
            let run = adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Real);
            let resets = faulter.join().expect("the faulter ran");
            assert!(resets >= 1, "{adapter:?}: nothing was reset");
            run
        });

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"second"[..]), "{adapter:?}");
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
            Some((ErrorKind::ConnectionReset, ErrorClass::MaybeSent)),
            "{adapter:?}: {:?}",
            events.all()
        );
        assert_eq!(server.requests(), 2, "{adapter:?}");
        assert!(run.real < Duration::from_secs(5), "{adapter:?}: {run:?}");
    });
}
