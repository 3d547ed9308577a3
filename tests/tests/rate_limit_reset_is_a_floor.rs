//! A 429 whose only signal is the `RateLimit` field (`"default";r=0;t=1`: the quota is spent,
//! it resets in a second): every adapter, the reqwest middleware and the tower layer wait at
//! least that second (on virtual time: the wait decided is at least a second, and no real
//! second passes), then get the 200.

use std::time::Duration;

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

const RATE_LIMIT: &str = r#""default";r=0;t=1"#;

fn server() -> Server {
    Server::start([
        Reply::status(429).header("RateLimit", RATE_LIMIT).into(),
        Reply::status(200).body("ok").into(),
    ])
}

#[test]
fn a_429_with_only_a_rate_limit_reset_is_waited_out_on_every_adapter() {
    for_each_adapter(|adapter| {
        let server = server();
        let request = TestRequest::get(server.url("/"));
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"ok"[..]));
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::FinalStatus)
        );
        assert!(
            run.skipped >= Duration::from_secs(1),
            "{adapter:?} waited {:?}",
            run.skipped
        );
        assert!(run.real < Duration::from_secs(1), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 2);
    });
}

#[test]
fn a_429_with_only_a_rate_limit_reset_is_waited_out_through_reqwest_and_tower() {
    for tower in [false, true] {
        let server = server();
        let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
        let url = server.url("/");
        let retrier = Retrier::default();
        let (result, _) = block_on(async {
            if tower {
                let client = tower_client(&retrier, &clock, &default_tls());
                tower_answer(client, tower_request(http::Method::GET, &url)).await
            } else {
                let client = reqwest_client(&retrier, &clock, &default_tls());
                reqwest_answer(client.request(reqwest::Method::GET, &url).send().await).await
            }
        });
        let answer = result.expect("a response");
        assert_eq!(answer.status, 200, "tower: {tower}");
        assert_eq!(answer.outcome.attempts, 2);
        assert!(
            clock.skipped() >= Duration::from_secs(1),
            "tower: {tower}, waited {:?}",
            clock.skipped()
        );
        assert_eq!(server.requests(), 2);
    }
}
