//! Through the reqwest middleware and the tower layer: a POST without `Idempotency-Key` that
//! gets a 503 is not retried (it may have had effects); the 503 comes back with the reason.
//! The same POST with a key, under a policy that opts in, is retried with the same key.

use backstop::{Policy, StopReason};
use backstop_driver::{Retrier, VirtualTime};
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

fn opted_in() -> Retrier {
    Retrier::new(
        Policy::builder()
            .retry_non_idempotent(true)
            .build()
            .expect("policy"),
    )
}

#[test]
fn a_post_without_a_key_is_sent_once_and_its_503_returned() {
    for stack in Stack::ALL {
        let server = Server::start([Reply::status(503).into(), Reply::status(201).into()]);
        let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
        let url = server.url("/orders");
        let (result, _) = stack.send(
            &opted_in(),
            &clock,
            default_tls(),
            http::Method::POST,
            &url,
            &[],
        );
        let answer = result.expect("the 503 is returned");
        assert_eq!(answer.status, 503, "{stack:?}");
        assert_eq!(
            (answer.outcome.attempts, answer.outcome.reason),
            (1, StopReason::NotIdempotent),
            "{stack:?}"
        );
        assert_eq!(server.requests(), 1, "{stack:?}");
    }
}

#[test]
fn a_post_with_a_key_is_retried_when_the_policy_opts_in() {
    for stack in Stack::ALL {
        let server = Server::start([Reply::status(503).into(), Reply::status(201).into()]);
        let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
        let url = server.url("/orders");
        let (result, _) = stack.send(
            &opted_in(),
            &clock,
            default_tls(),
            http::Method::POST,
            &url,
            &[("idempotency-key", "k-1")],
        );
        let answer = result.expect("a response");
        assert_eq!(
            (answer.status, answer.outcome.attempts),
            (201, 2),
            "{stack:?}"
        );
        let keys: Vec<_> = server
            .recorded()
            .iter()
            .map(|r| r.header("idempotency-key").map(<[u8]>::to_vec))
            .collect();
        assert_eq!(keys, vec![Some(b"k-1".to_vec()); 2], "{stack:?}");
    }
}
