//! With `ReadBody`, a response's body is read inside its attempt, on every front door: a body
//! that breaks off (a reset, an early end against `Content-Length`) is the attempt's failure,
//! `BodyCut`, retried under the same rules and the same count as a failure of the head; a body
//! over the limit is `BodyTooLarge`, never truncated and never retried; a POST without an
//! `Idempotency-Key` whose body breaks off is not retried.

use backstop::body::ReadBody;
use backstop::{ErrorKind, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::server::{Action, Fault, Representation, Served, Server};
use backstop_tests::TestRequest;

/// 16 KiB that tell every offset apart.
fn content() -> Vec<u8> {
    (0..16 * 1024u32).map(|i| (i % 251) as u8).collect()
}

fn reading(limit: u64) -> Retrier {
    Retrier::default().seed(7).read_body(ReadBody::up_to(limit))
}

fn served(faults: impl IntoIterator<Item = Fault>) -> Server {
    let representation = Representation::new(content()).strong_etag("v1");
    Server::always(Action::Serve(Served::new(representation).faults(faults)))
}

#[test]
fn a_reset_mid_body_is_retried_and_the_caller_gets_the_whole_body() {
    for_each_adapter(|adapter| {
        let server = served([Fault::ResetAt(5000)]);
        let run = adapter.run(
            &reading(1 << 20),
            TestRequest::get(server.url("/data")),
            Clock::Virtual,
        );
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&content()[..]), "{adapter:?}");
        assert_eq!(run.outcome().attempts, 2, "{adapter:?}");
        assert_eq!(run.outcome().reason, StopReason::FinalStatus, "{adapter:?}");
        assert_eq!(server.requests(), 2, "{adapter:?}");
    });
}

#[test]
fn an_early_end_against_content_length_is_retried() {
    for_each_adapter(|adapter| {
        let server = served([Fault::CloseAt(7000), Fault::CloseAt(100)]);
        let run = adapter.run(
            &reading(1 << 20),
            TestRequest::get(server.url("/data")),
            Clock::Virtual,
        );
        assert_eq!(run.body(), Some(&content()[..]), "{adapter:?}: {run:?}");
        assert_eq!(run.outcome().attempts, 3, "{adapter:?}");
        assert_eq!(server.requests(), 3, "{adapter:?}");
    });
}

#[test]
fn a_body_that_breaks_off_on_every_attempt_ends_as_body_cut_after_the_attempts() {
    for_each_adapter(|adapter| {
        let server = served([Fault::CloseAt(3000); 8]);
        let run = adapter.run(
            &reading(1 << 20),
            TestRequest::get(server.url("/data")),
            Clock::Virtual,
        );
        let Err(Failure::Failed { kind, outcome }) = run.result else {
            panic!("{adapter:?}: {run:?}");
        };
        assert_eq!(kind, ErrorKind::BodyCut, "{adapter:?}");
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (4, StopReason::Attempts)
        );
        assert_eq!(server.requests(), 4, "{adapter:?}");
    });
}

#[test]
fn a_body_over_the_limit_is_body_too_large_and_not_retried() {
    for_each_adapter(|adapter| {
        let server = served([]);
        let run = adapter.run(
            &reading(1000),
            TestRequest::get(server.url("/data")),
            Clock::Virtual,
        );
        let Err(Failure::Failed { kind, outcome }) = run.result else {
            panic!("{adapter:?}: {run:?}");
        };
        assert_eq!(kind, ErrorKind::BodyTooLarge, "{adapter:?}");
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::PermanentError),
            "{adapter:?}"
        );
        assert_eq!(server.requests(), 1, "{adapter:?}");
    });
}

#[test]
fn a_post_without_a_key_whose_body_breaks_off_is_not_retried() {
    for_each_adapter(|adapter| {
        // An early end, not a reset: a reset may discard the head the client had not read
        // yet, and the failure would be the head's (`ConnectionReset`, not retried either).
        let server = served([Fault::CloseAt(5000)]);
        let run = adapter.run(
            &reading(1 << 20),
            TestRequest::post(server.url("/orders")),
            Clock::Virtual,
        );
        let Err(Failure::Failed { kind, outcome }) = run.result else {
            panic!("{adapter:?}: {run:?}");
        };
        assert_eq!(kind, ErrorKind::BodyCut, "{adapter:?}");
        assert_eq!(outcome.attempts, 1, "{adapter:?}");
        assert_eq!(server.requests(), 1, "{adapter:?}");
    });
}

#[test]
fn without_read_body_the_operation_ends_at_the_head_as_before() {
    for_each_adapter(|adapter| {
        let server = served([Fault::ResetAt(5000)]);
        let run = adapter.run(
            &Retrier::default(),
            TestRequest::get(server.url("/data")),
            Clock::Virtual,
        );
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(run.outcome().attempts, 1, "{adapter:?}");
        let answer = run.result.as_ref().expect("a response");
        assert!(
            answer.body.is_err(),
            "{adapter:?}: the caller meets the cut"
        );
    });
}

/// A request's own `ReadBody` wins over the retrier's, both ways (ureq's `Client::run` reads
/// it from the request's extensions, as the loop's plan does for every front door).
#[test]
fn a_requests_own_read_body_wins_over_the_retriers() {
    let server = served([Fault::ResetAt(5000)]);
    let mut request = http::Request::get(server.url("/data")).body(()).unwrap();
    request.extensions_mut().insert(ReadBody::up_to(1 << 20));
    let client = backstop::ureq::Client::new(Retrier::default().seed(7)).with_runtime(
        backstop::runtime::VirtualTime::new(backstop::runtime::StdRuntime::new()),
    );
    let done = client.run(request).expect("read on the second attempt");
    assert_eq!(done.outcome.attempts, 2);
    let mut body = done.response.into_body();
    assert_eq!(body.read_to_vec().unwrap(), content());

    // And `OFF` on a request of a retrier that reads: the operation ends at the head.
    let server = served([Fault::CloseAt(5000)]);
    let mut request = http::Request::get(server.url("/data")).body(()).unwrap();
    request.extensions_mut().insert(ReadBody::OFF);
    let client = backstop::ureq::Client::new(reading(1 << 20));
    let done = client.run(request).expect("the head");
    assert_eq!(done.outcome.attempts, 1);
    assert!(done.response.into_body().read_to_vec().is_err());
}

/// ureq's body cannot hand its bytes back, so the front door puts them in the response's
/// extensions as `BodyBytes`: the bytes of the attempt that read the whole body (not the cut
/// one's), shared with the body, which reads the same bytes.
#[test]
fn the_ureq_front_door_hands_the_bytes_read_as_body_bytes() {
    let server = served([Fault::ResetAt(5000)]);
    let client = backstop::ureq::Client::new(reading(1 << 20)).with_runtime(
        backstop::runtime::VirtualTime::new(backstop::runtime::StdRuntime::new()),
    );
    let request = http::Request::get(server.url("/data")).body(()).unwrap();
    let mut done = client.run(request).expect("read on the second attempt");
    assert_eq!(done.outcome.attempts, 2);
    let bytes = done
        .response
        .extensions_mut()
        .remove::<backstop::body::BodyBytes>();
    assert_eq!(bytes.expect("the bytes read").0, content());
    let mut body = done.response.into_body();
    assert_eq!(body.read_to_vec().unwrap(), content());

    // Without `ReadBody`, nothing was read, and there is nothing of the kind.
    let server = served([]);
    let client = backstop::ureq::Client::new(Retrier::default());
    let request = http::Request::get(server.url("/data")).body(()).unwrap();
    let done = client.run(request).expect("the head");
    assert!(done
        .response
        .extensions()
        .get::<backstop::body::BodyBytes>()
        .is_none());
}
