//! `backstop::ureq::Client::resume_bodies`: the blocking front door's GET body resumes by
//! itself after a cut, an early end or a stall, under the same rules as reqwest's (see
//! `a_streaming_body_resumes_after_a_cut.rs`): a `206` exactly at the bytes read, the strong
//! validator in `If-Range`, the same operation's count and deadline.

use std::io::Read;
use std::time::Duration;

use backstop::body::BodyError;
use backstop::ureq::Client;
use backstop::{ErrorKind, Policy, Retrier};
use backstop_tests::server::{Action, Fault, Representation, Served, Server};

fn content() -> Vec<u8> {
    (0..64 * 1024u32).map(|i| (i % 251) as u8).collect()
}

fn v1() -> Representation {
    Representation::new(content()).strong_etag("v1")
}

/// The GET's body as the caller reads it, and how it ended (the `BodyError`'s kind; `Other`
/// for an error without one).
fn get(policy: Policy, url: &str) -> (Vec<u8>, Result<(), ErrorKind>) {
    let client = Client::new(Retrier::new(policy).seed(7)).resume_bodies();
    let done = client
        .run(http::Request::get(url).body(()).unwrap())
        .expect("a response");
    let mut reader = done.response.into_body().into_reader();
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    // Bounded: the body ends, or fails, within its operation's attempts.
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return (read, Ok(())),
            Ok(n) => read.extend_from_slice(&buf[..n]),
            Err(e) => {
                let kind = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<BodyError>())
                    .map_or(ErrorKind::Other, BodyError::kind);
                return (read, Err(kind));
            }
        }
    }
}

fn serve(faults: impl IntoIterator<Item = Fault>) -> Server {
    Server::always(Action::Serve(Served::new(v1()).faults(faults)))
}

#[test]
fn a_reset_or_an_early_end_resumes_from_the_bytes_read() {
    for fault in [Fault::ResetAt(20_000), Fault::CloseAt(20_000)] {
        let server = serve([fault]);
        let (body, end) = get(Policy::default(), &server.url("/file"));
        assert_eq!(end, Ok(()), "{fault:?}");
        assert!(body == content(), "{fault:?}: byte-exact");
        assert_eq!(server.requests(), 2, "{fault:?}");
        let recorded = server.recorded();
        assert_eq!(recorded[1].header("if-range"), Some(&b"\"v1\""[..]));
        let range = String::from_utf8_lossy(recorded[1].header("range").unwrap()).into_owned();
        assert!(
            range.starts_with("bytes=") && range.ends_with('-'),
            "{range}"
        );
        assert_eq!(
            recorded[0].header("accept-encoding"),
            Some(&b"identity"[..])
        );
    }
}

#[test]
fn a_stall_past_the_idle_timeout_resumes() {
    let policy = Policy::builder()
        .body_idle_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let server = serve([Fault::StallAt(10_000, Duration::from_secs(3))]);
    let (body, end) = get(policy, &server.url("/file"));
    assert_eq!(end, Ok(()));
    assert!(body == content());
    assert_eq!(server.requests(), 2);
}

#[test]
fn a_changed_representation_or_a_wrong_range_is_never_spliced() {
    let v2 = Representation::new(vec![9u8; 64 * 1024]).strong_etag("v2");
    let changed = Served::new(v1())
        .faults([Fault::CloseAt(10_000)])
        .new_version_from(2, v2);
    let wrong = Served::new(v1()).faults([Fault::CloseAt(10_000), Fault::WrongContentRange]);
    for served in [changed, wrong] {
        let server = Server::always(Action::Serve(served));
        let (body, end) = get(Policy::default(), &server.url("/file"));
        assert_eq!(end, Err(ErrorKind::BodyChanged));
        assert!(content().starts_with(&body));
    }
}

#[test]
fn without_a_strong_validator_nothing_is_resumed() {
    let server = Server::always(Action::Serve(
        Served::new(Representation::new(content()).weak_etag("v1"))
            .faults([Fault::CloseAt(10_000)]),
    ));
    let (body, end) = get(Policy::default(), &server.url("/file"));
    assert!(end.is_err());
    assert!(body.len() <= 10_000);
    assert_eq!(server.requests(), 1);
}

#[test]
fn the_resumes_are_the_operations_attempts() {
    let server = serve([Fault::CloseAt(10_000); 8]);
    let (body, end) = get(Policy::default(), &server.url("/file"));
    assert_eq!(end, Err(ErrorKind::BodyCut));
    assert!(content().starts_with(&body));
    assert_eq!(server.requests(), 4);
}
