//! Through the reqwest middleware and the tower layer: a 503 with `Retry-After: 1`, then a 200.
//! The 200 comes back with the operation's outcome in its extensions, and the wait before the
//! retry was at least the second the server asked for (on virtual time: no real second passes).

use std::time::Duration;

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

#[test]
fn a_503_with_retry_after_is_waited_out_and_the_200_returned() {
    for stack in Stack::ALL {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "1").into(),
            Reply::status(200).body("ok").into(),
        ]);
        let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
        let url = server.url("/data");
        let (result, _) = stack.send(
            &Retrier::default(),
            &clock,
            &default_tls(),
            http::Method::GET,
            &url,
            &[],
        );
        let answer = result.expect("a response");
        assert_eq!(answer.status, 200, "{stack:?}");
        assert_eq!(answer.body.as_deref(), Ok(&b"ok"[..]), "{stack:?}");
        assert_eq!(
            (answer.outcome.attempts, answer.outcome.reason),
            (2, StopReason::FinalStatus),
            "{stack:?}"
        );
        assert!(
            clock.skipped() >= Duration::from_secs(1),
            "{stack:?}: {:?}",
            clock.skipped()
        );
        assert_eq!(server.requests(), 2, "{stack:?}");
    }
}
