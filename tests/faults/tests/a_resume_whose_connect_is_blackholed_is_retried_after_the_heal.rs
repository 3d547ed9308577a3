//! The body's connection is reset mid-body while the kernel also drops every new connection's
//! SYN: the first resume's connect never completes and times out (reqwest's
//! `connect_timeout`; ureq's, the attempt timeout), the link is healed during the backoff, and
//! the next resume gets the rest: the body arrives whole, in three attempts of one operation.
//! On the reqwest and ureq front doors.
//!
//! Both faults go in at once ([`FaultNet::inject`]): the reset matches the first connection
//! alone (its client port), the blackhole only new connections. The heal follows the end of
//! the first resume (its `AttemptEnded` event), inside the constant 300 ms backoff before the
//! second.

use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::{Backoff, ErrorKind, EventKind, Jitter, Policy, Retrier};
use backstop_faults::{Fault, FaultNet, Progress};
use backstop_tests::events::recorded;

#[path = "support/resumed_body.rs"]
mod support;
use support::{FrontDoor, BEFORE_THE_FAULT};

/// What each attempt of the operation ended with, in order.
fn attempts(events: &[EventKind]) -> Vec<(u32, AttemptOutcome)> {
    events
        .iter()
        .filter_map(|e| match *e {
            EventKind::AttemptEnded {
                attempt, result, ..
            } => Some((attempt, result)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_resume_whose_connect_is_blackholed_times_out_and_the_next_one_after_the_heal_succeeds() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let policy = Policy::builder()
        .max_attempts(4)
        .attempt_timeout(Duration::from_secs(1))
        .backoff(Backoff::constant(Duration::from_millis(300)))
        .jitter(Jitter::None)
        .body_idle_timeout(Duration::from_secs(3))
        .build()
        .expect("a valid policy");
    for door in FrontDoor::ALL {
        let server = support::serve(&net);
        let (retrier, events) = recorded(Retrier::new(policy));
        let progress = Progress::new();
        let (read, first_resume_ended) = std::thread::scope(|scope| {
            let reader = scope.spawn(|| door.get(retrier, &server.url("/big"), &progress));
            assert!(
                progress.wait_for(BEFORE_THE_FAULT as u64, Duration::from_secs(5)),
                "{door:?}: the bytes before the fault"
            );
            let client_port = server.recorded()[0].peer.port();
            net.inject(&[Fault::ResetConnection { client_port }, Fault::BlackholeNew])
                .expect("installed");
            server.release();
            let ended = events.wait_for(Duration::from_secs(5), |e| {
                matches!(e, EventKind::AttemptEnded { attempt: 2, .. })
            });
            let faulted = net.faulted_packets().expect("counted");
            net.heal().expect("healed");
            assert!(faulted >= 2, "{door:?}: an RST and a SYN: {faulted}");
            (reader.join().expect("the reader ran"), ended)
        });

        assert!(first_resume_ended, "{door:?}: {:?}", events.all());
        assert_eq!((read.status, read.end), (200, Ok(())), "{door:?}");
        assert!(support::is_whole(&read), "{door:?}: the body, byte-exact");
        let all = events.all();
        let resumed = support::resumes(&all);
        let [(2, offset, ErrorKind::BodyCut), (3, again, ErrorKind::ConnectTimeout)] = resumed[..]
        else {
            panic!("{door:?}: a resume after the cut, another after the timeout: {all:?}");
        };
        assert_eq!(again, offset, "{door:?}: nothing arrived in between");
        let ended = attempts(&all);
        assert!(
            matches!(
                ended[..],
                [
                    (1, AttemptOutcome::Response(200)),
                    (2, AttemptOutcome::Error(e)),
                    (3, AttemptOutcome::Response(206)),
                ] if e.kind == ErrorKind::ConnectTimeout
            ),
            "{door:?}: {ended:?}"
        );
        // The blackholed connect never reached the server; the second resume's did.
        assert_eq!(
            (server.connections(), server.requests()),
            (2, 2),
            "{door:?}"
        );
        assert_eq!(
            support::range_of(&server, 1),
            (Some(offset), Some(support::etag())),
            "{door:?}"
        );
    }
}
