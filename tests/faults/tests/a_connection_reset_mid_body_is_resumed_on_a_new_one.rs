//! The kernel resets the body's connection mid-body (the client's next ACK is answered with
//! an RST): the read fails at once, and the body resumes by itself on a new connection from
//! the bytes the caller had (`Range: bytes=N-`, `If-Range`) and arrives whole. On the reqwest
//! and ureq front doors.
//!
//! The reset matches the first connection alone (its client port,
//! [`FaultNet::reset_connection`]), so the resume's connection goes through without a heal
//! racing it. The client may have read a few bytes past the pause before the RST landed: the
//! resume starts wherever the caller stood, which the event and the `Range` both say.

use std::time::Duration;

use backstop::{ErrorKind, Policy, Retrier};
use backstop_faults::{FaultNet, Progress};
use backstop_tests::events::recorded;

#[path = "support/resumed_body.rs"]
mod support;
use support::{FrontDoor, BEFORE_THE_FAULT, TOTAL};

#[test]
fn a_body_whose_connection_is_reset_resumes_on_a_new_connection_and_arrives_whole() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let policy = Policy::builder()
        .max_attempts(3)
        .body_idle_timeout(Duration::from_secs(3))
        .build()
        .expect("a valid policy");
    for door in FrontDoor::ALL {
        let server = support::serve(&net);
        let (retrier, events) = recorded(Retrier::new(policy));
        let progress = Progress::new();
        let (read, resets) = std::thread::scope(|scope| {
            let reader = scope.spawn(|| door.get(retrier, &server.url("/big"), &progress));
            assert!(
                progress.wait_for(BEFORE_THE_FAULT as u64, Duration::from_secs(5)),
                "{door:?}: the bytes before the fault"
            );
            let port = server.recorded()[0].peer.port();
            net.reset_connection(port).expect("installed");
            server.release();
            let resets = net
                .wait_for_faulted_packets(1, Duration::from_secs(5))
                .expect("counted");
            (reader.join().expect("the reader ran"), resets)
        });
        net.heal().expect("healed");

        assert!(resets >= 1, "{door:?}: nothing was reset");
        assert_eq!((read.status, read.end), (200, Ok(())), "{door:?}");
        assert!(support::is_whole(&read), "{door:?}: the body, byte-exact");
        let resumed = support::resumes(&events.all());
        let [(2, offset, ErrorKind::BodyCut)] = resumed[..] else {
            panic!("{door:?}: one resume, of a cut: {:?}", events.all());
        };
        assert!(
            offset >= BEFORE_THE_FAULT as u64 && offset < TOTAL as u64,
            "{door:?}: resumed at {offset}"
        );
        assert_eq!(server.requests(), 2, "{door:?}");
        assert_eq!(
            support::range_of(&server, 1),
            (Some(offset), Some(support::etag())),
            "{door:?}: the resume asks for the rest from where the caller stood"
        );
        let recorded = server.recorded();
        assert_ne!(
            recorded[1].peer, recorded[0].peer,
            "{door:?}: a new connection"
        );
    }
}
