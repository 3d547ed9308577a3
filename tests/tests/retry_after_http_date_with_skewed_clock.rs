//! 429 with an HTTP-date `Retry-After` and a `Date` header, while the client's wall clock is an
//! hour fast: the wait is measured against the server's `Date`, so the client waits the 3 s the
//! server asked for (a client trusting its own clock would not wait at all).

use std::time::{Duration, SystemTime};

use backstop::runtime::SkewedClock;
use backstop::Retrier;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn http_date_retry_after_is_measured_against_the_servers_date_not_a_skewed_client_clock() {
    for_each_adapter(|adapter| {
        let now = SystemTime::now();
        let server = Server::start([
            Reply::status(429)
                .header("Date", httpdate::fmt_http_date(now))
                .header(
                    "Retry-After",
                    httpdate::fmt_http_date(now + Duration::from_secs(3)),
                )
                .into(),
            Reply::status(200).body("done").into(),
        ]);
        let retrier = Retrier::default()
            .seed(2)
            .wall_clock(SkewedClock::ahead(Duration::from_secs(3600)));
        let request = TestRequest::get(server.url("/limited"));
        let run = adapter.run(&retrier, request, Clock::Virtual);

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.outcome().attempts, 2);
        // 3 s from the server's own clock, plus a spread of at most 10 % (less the microseconds
        // between deciding the wait and starting it).
        assert!(
            run.skipped >= Duration::from_millis(2_995),
            "{adapter:?}: {run:?}"
        );
        assert!(
            run.skipped <= Duration::from_millis(3_400),
            "{adapter:?}: {run:?}"
        );
        assert_eq!(server.requests(), 2);
    });
}
