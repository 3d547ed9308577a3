//! The classic retry demo: 503 with `Retry-After: 0.1` twice, then 200 with a JSON body. The client
//! waits as told (virtual time) and gets the 200 on its third attempt.

use std::time::Duration;

use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn seed_demo_gets_200_on_the_third_attempt_after_waiting_as_told() {
    for_each_adapter(|adapter| {
        let busy = Reply::status(503)
            .header("Content-Type", "application/json")
            .header("Retry-After", "0.1")
            .body(r#"{"error":"temporary_failure"}"#);
        let server = Server::start([
            busy.clone().into(),
            busy.into(),
            Reply::status(200)
                .header("Content-Type", "application/json")
                .body(r#"{"message":"ok","attempt":3}"#)
                .into(),
        ]);
        let request = TestRequest::get(server.url("/data"));
        let run = adapter.run(&Retrier::default().seed(1), request, Clock::Virtual);

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&br#"{"message":"ok","attempt":3}"#[..]));
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::FinalStatus)
        );
        // Two waits of at least 0.1 s each (the server's value is a floor), at most 10 % more;
        // virtual time skips from when a wait starts, microseconds after it was decided.
        assert!(
            run.skipped >= Duration::from_millis(199),
            "{adapter:?}: {run:?}"
        );
        assert!(
            run.skipped <= Duration::from_millis(230),
            "{adapter:?}: {run:?}"
        );
        assert_eq!(server.requests(), 3);
    });
}
