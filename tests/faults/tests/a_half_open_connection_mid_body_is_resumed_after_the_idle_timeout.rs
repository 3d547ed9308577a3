//! The kernel drops every packet of the body's connection mid-body, for good: the connection
//! goes half-open, no byte and no error arrive. backstop's idle timeout tells the stall, and
//! the body resumes by itself on a new connection (`Range: bytes=N-` after the N bytes read,
//! `If-Range` with the strong validator) and arrives whole. On the reqwest and ureq front
//! doors.
//!
//! The fault matches the first connection alone (its client port, [`FaultNet::drop_connection`]):
//! with every packet dropped, the resume's connection would be dropped too, and a heal would
//! let TCP's retransmissions revive the stalled connection instead.

use std::time::{Duration, Instant};

use backstop::{ErrorKind, Policy, Retrier};
use backstop_faults::{FaultNet, Progress};
use backstop_tests::events::recorded;

#[path = "support/resumed_body.rs"]
mod support;
use support::{FrontDoor, BEFORE_THE_FAULT};

const IDLE: Duration = Duration::from_millis(500);

#[test]
fn a_body_whose_connection_goes_half_open_is_resumed_once_idle_and_arrives_whole() {
    let Some(net) = FaultNet::for_test() else {
        return;
    };
    let policy = Policy::builder()
        .max_attempts(3)
        .body_idle_timeout(IDLE)
        .build()
        .expect("a valid policy");
    for door in FrontDoor::ALL {
        let server = support::serve(&net);
        let (retrier, events) = recorded(Retrier::new(policy));
        let progress = Progress::new();
        let (read, took) = std::thread::scope(|scope| {
            let reader = scope.spawn(|| door.get(retrier, &server.url("/big"), &progress));
            assert!(
                progress.wait_for(BEFORE_THE_FAULT as u64, Duration::from_secs(5)),
                "{door:?}: the bytes before the fault"
            );
            // The silence the idle timeout measures starts at the last byte before the fault.
            let stalled_from = progress.last_read().unwrap_or_else(Instant::now);
            let port = server.recorded()[0].peer.port();
            net.drop_connection(port).expect("installed");
            server.release();
            let read = reader.join().expect("the reader ran");
            (read, stalled_from.elapsed())
        });
        let dropped = net.faulted_packets().expect("counted");
        net.heal().expect("healed");

        assert_eq!((read.status, read.end), (200, Ok(())), "{door:?}");
        assert!(support::is_whole(&read), "{door:?}: the body, byte-exact");
        let offset = BEFORE_THE_FAULT as u64;
        assert_eq!(
            support::resumes(&events.all()),
            [(2, offset, ErrorKind::BodyStalled)],
            "{door:?}: {:?}",
            events.all()
        );
        assert_eq!(server.requests(), 2, "{door:?}");
        assert_eq!(
            support::range_of(&server, 1),
            (Some(offset), Some(support::etag())),
            "{door:?}: the resume asks for the rest of the same representation"
        );
        assert_eq!(support::range_of(&server, 0), (None, None), "{door:?}");
        let recorded = server.recorded();
        assert_ne!(
            recorded[1].peer, recorded[0].peer,
            "{door:?}: a new connection"
        );
        assert!(
            dropped >= 1,
            "{door:?}: the connection's packets were dropped"
        );
        // The stall was told by the idle timeout (no error came from the network): the rest
        // of the body came after it, soon after.
        assert!(
            took >= IDLE,
            "{door:?}: the rest arrived {took:?} after the fault"
        );
        assert!(
            took < IDLE + Duration::from_secs(3),
            "{door:?}: the rest arrived {took:?} after the fault"
        );
    }
}
