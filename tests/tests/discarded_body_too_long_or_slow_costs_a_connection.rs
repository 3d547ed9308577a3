//! A discarded body that is over the drain limit, or that trickles past the drain's time, is
//! dropped: its connection is closed, the next attempt opens a new one, and nothing else
//! changes (the operation still returns the 200, its body intact).

use std::time::Duration;

use backstop::transport::DrainLimits;
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock, Run};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

fn busy() -> Reply {
    Reply::status(503).header("Retry-After", "1")
}

fn assert_two_connections(run: &Run, server: &Server) {
    let adapter = run.adapter;
    assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
    assert_eq!(run.body(), Some(&b"done"[..]), "{adapter:?}");
    assert_eq!(
        (run.outcome().attempts, run.outcome().reason),
        (2, StopReason::FinalStatus),
        "{adapter:?}"
    );
    assert_eq!(server.requests(), 2, "{adapter:?}");
    assert_eq!(server.connections(), 2, "{adapter:?}");
}

#[test]
fn a_discarded_body_over_the_limit_is_dropped_and_costs_one_new_connection() {
    let retrier = Retrier::default().drain(DrainLimits::new(1024, Duration::from_secs(1)));
    for_each_adapter(|adapter| {
        // Far over the limit: hyper, which reads ahead, cannot have it all in hand.
        let server = Server::start([
            busy().body(vec![b'x'; 1 << 20]).into(),
            Reply::status(200).body("done").into(),
        ]);
        let request = TestRequest::get(server.url("/data"));
        let run = adapter.run(&retrier, request, Clock::Virtual);
        assert_two_connections(&run, &server);
    });
}

#[test]
fn a_discarded_body_at_the_limit_is_read_and_its_connection_reused() {
    let retrier = Retrier::default().drain(DrainLimits::new(1024, Duration::from_secs(1)));
    for_each_adapter(|adapter| {
        let server = Server::start([
            busy().body(vec![b'x'; 1024]).into(),
            Reply::status(200).body("done").into(),
        ]);
        let request = TestRequest::get(server.url("/data"));
        let run = adapter.run(&retrier, request, Clock::Virtual);
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(server.connections(), 1, "{adapter:?}");
    });
}

#[test]
fn a_discarded_body_that_trickles_is_dropped_after_the_drain_time() {
    let drain_time = Duration::from_millis(200);
    let retrier = Retrier::default().drain(DrainLimits::new(1024, drain_time));
    for_each_adapter(|adapter| {
        // 20 bytes, 100 ms apart: two seconds, ten times the drain's time.
        let server = Server::start([
            Action::TrickleBody {
                reply: busy().body([b'x'; 20]),
                gap: Duration::from_millis(100),
            },
            Reply::status(200).body("done").into(),
        ]);
        let request = TestRequest::get(server.url("/data"));
        let run = adapter.run(&retrier, request, Clock::Virtual);
        assert_two_connections(&run, &server);
        // The drain waited for its time, and no longer (generous: a hang would take 2 s+).
        assert!(run.real >= drain_time, "{adapter:?}: {:?}", run.real);
        assert!(
            run.real < Duration::from_millis(1500),
            "{adapter:?}: {:?}",
            run.real
        );
    });
}
