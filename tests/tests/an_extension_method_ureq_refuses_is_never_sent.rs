//! ureq, with its default settings, refuses to write a request whose method is outside RFC
//! 9110's (`PURGE`): that refusal is an invalid request, never sent and never retried (not a
//! protocol error that may have reached the server), even for a retrier that would retry a
//! `PURGE` that was never sent. The other front doors send the method.

use backstop::{ErrorKind, NonIdempotent, Policy, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock, Failure};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

fn purge(server: &Server) -> TestRequest {
    let method = http::Method::from_bytes(b"PURGE").expect("a method");
    TestRequest::new(method, server.url("/cache/item"))
}

#[test]
fn ureq_refusing_an_extension_method_is_an_invalid_request_never_sent() {
    let server = Server::always(Reply::status(200));
    // Even a request that may be sent again is not: ureq would refuse it again.
    let policy = Policy::builder()
        .non_idempotent(NonIdempotent::ServerDeduplicatesWithoutKey)
        .build()
        .expect("a policy");
    let run = Adapter::Ureq.run(&Retrier::new(policy), purge(&server), Clock::Virtual);
    let Err(Failure::Failed { kind, outcome }) = run.result else {
        panic!("not a failure: {run:?}")
    };
    assert_eq!(kind, ErrorKind::InvalidRequest, "{run:?}");
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, StopReason::PermanentError),
        "{run:?}"
    );
    assert_eq!(server.requests(), 0);
}

#[test]
fn the_other_front_doors_send_an_extension_method() {
    for_each_adapter(|adapter| {
        if adapter == Adapter::Ureq {
            return;
        }
        let server = Server::always(Reply::status(200));
        let run = adapter.run(&Retrier::default(), purge(&server), Clock::Virtual);
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 1, "{adapter:?}");
    });
}
