//! With `RetryMiddleware::resume_bodies`, a GET's body resumes by itself after a cut, an early
//! end or a stall (RFC 9110 §14, §13.1.5): `Range: bytes=N-` after the N bytes the caller read,
//! `If-Range` with the strong validator, accepted only as a `206` exactly at N. A changed
//! representation, a wrong range, a weak validator: never spliced, never guessed.

use core::time::Duration;

use backstop::body::BodyError;
use backstop::reqwest::RetryMiddleware;
use backstop::{ErrorKind, Policy, Retrier};
use backstop_tests::middleware::{block_on, default_tls};
use backstop_tests::server::{Action, Fault, Representation, Served, Server};
use http_body_util::BodyExt;

/// 64 KiB that tell every offset apart.
fn content() -> Vec<u8> {
    (0..64 * 1024u32).map(|i| (i % 251) as u8).collect()
}

fn v1() -> Representation {
    Representation::new(content()).strong_etag("v1")
}

fn client(policy: Policy) -> reqwest_middleware::ClientWithMiddleware {
    let http = default_tls()
        .reqwest(reqwest::Client::builder())
        .build()
        .expect("a reqwest client");
    let retrier = Retrier::new(policy).seed(7);
    reqwest_middleware::ClientBuilder::new(http.clone())
        .with(RetryMiddleware::new(retrier).resume_bodies(http))
        .build()
}

/// The GET's status, and its body as the caller reads it frame by frame: every byte handed
/// over, and how it ended (the body's own error, if any).
fn get(policy: Policy, url: &str) -> (u16, Vec<u8>, Result<(), ErrorKind>) {
    block_on(async {
        let response = client(policy).get(url).send().await.expect("a response");
        let status = response.status().as_u16();
        let mut body = reqwest::Body::from(response);
        let mut read = Vec::new();
        // Bounded: the body ends, or fails, within its operation's attempts.
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => read.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
                Err(e) => return (status, read, Err(kind_of(&e))),
            }
        }
        (status, read, Ok(()))
    })
}

/// The kind of the `BodyError` in a body error's chain (`Other`: none, the client's own
/// error reached the caller).
fn kind_of(e: &(dyn std::error::Error + 'static)) -> ErrorKind {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(body) = e.downcast_ref::<BodyError>() {
            return body.kind();
        }
        next = e.source();
    }
    ErrorKind::Other
}

fn range_of(server: &Server, i: usize) -> (Option<String>, Option<String>) {
    let recorded = server.recorded();
    let field = |name| {
        recorded[i]
            .header(name)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    (field("range"), field("if-range"))
}

#[test]
fn a_reset_mid_body_resumes_from_the_bytes_handed_over() {
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::ResetAt(20_000)]),
    ));
    let (status, body, end) = get(Policy::default(), &server.url("/file"));
    assert_eq!((status, end), (200, Ok(())));
    assert!(body == content(), "the whole representation, byte-exact");
    assert_eq!(server.requests(), 2);
    let (range, if_range) = range_of(&server, 1);
    let range = range.expect("a Range on the resume");
    let from: usize = range
        .strip_prefix("bytes=")
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse().ok())
        .expect("bytes=N-");
    assert!(from > 0 && from <= 20_000, "{range}");
    assert_eq!(if_range.as_deref(), Some("\"v1\""));
    let (first, _) = range_of(&server, 0);
    assert_eq!(first, None, "the first request asks for the whole body");
}

#[test]
fn an_early_end_against_content_length_resumes() {
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::CloseAt(10_000), Fault::CloseAt(30_000)]),
    ));
    let (_, body, end) = get(Policy::default(), &server.url("/file"));
    assert_eq!(end, Ok(()));
    assert!(body == content());
    assert_eq!(server.requests(), 3);
}

#[test]
fn a_stall_past_the_idle_timeout_resumes() {
    let policy = Policy::builder()
        .body_idle_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::StallAt(10_000, Duration::from_secs(3))]),
    ));
    let (_, body, end) = get(policy, &server.url("/file"));
    assert_eq!(end, Ok(()));
    assert!(body == content());
    assert_eq!(server.requests(), 2);
}

#[test]
fn a_representation_that_changed_is_never_spliced() {
    let v2 = Representation::new(vec![9u8; 64 * 1024]).strong_etag("v2");
    let server = Server::always(Action::Serve(
        Served::new(v1())
            .faults([Fault::CloseAt(10_000)])
            .new_version_from(2, v2),
    ));
    let (_, body, end) = get(Policy::default(), &server.url("/file"));
    assert_eq!(end, Err(ErrorKind::BodyChanged));
    assert!(
        content().starts_with(&body),
        "only bytes of the first version"
    );
    assert_eq!(server.requests(), 2);
}

#[test]
fn a_206_at_the_wrong_offset_or_a_200_to_the_range_is_refused() {
    for fault in [Fault::WrongContentRange, Fault::IgnoreRange] {
        let server = Server::always(Action::Serve(
            Served::new(v1()).faults([Fault::CloseAt(10_000), fault]),
        ));
        let (_, body, end) = get(Policy::default(), &server.url("/file"));
        assert_eq!(end, Err(ErrorKind::BodyChanged), "{fault:?}");
        assert!(content().starts_with(&body), "{fault:?}");
    }
}

#[test]
fn without_a_strong_validator_the_body_is_not_resumed() {
    for representation in [
        Representation::new(content()).weak_etag("v1"),
        Representation::new(content()),
    ] {
        let server = Server::always(Action::Serve(
            Served::new(representation).faults([Fault::CloseAt(10_000)]),
        ));
        let (_, body, end) = get(Policy::default(), &server.url("/file"));
        assert_eq!(
            end,
            Err(ErrorKind::Other),
            "the client's own cut reaches the caller"
        );
        assert!(body.len() <= 10_000);
        assert_eq!(server.requests(), 1, "no resume: never guess");
    }
}

#[test]
fn a_gzip_body_resumes_on_the_bytes_sent() {
    let representation = Representation::new(content()).strong_etag("z1").gzip();
    let sent = representation.body().clone();
    let cut = sent.len() / 2;
    let server = Server::always(Action::Serve(
        Served::new(representation).faults([Fault::CloseAt(cut)]),
    ));
    let (_, body, end) = get(Policy::default(), &server.url("/file"));
    assert_eq!(end, Ok(()));
    assert!(
        body == sent,
        "the coded bytes, whole: reqwest here does not decode"
    );
    let recorded = server.recorded();
    assert_eq!(
        recorded[0].header("accept-encoding"),
        Some(&b"identity"[..]),
        "asked for the bytes as they are"
    );
}

#[test]
fn every_resume_is_an_attempt_of_the_same_operation() {
    // Four attempts in all: the first and three resumes, each cut; then the body fails.
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::CloseAt(10_000); 8]),
    ));
    let (_, body, end) = get(Policy::default(), &server.url("/file"));
    assert_eq!(end, Err(ErrorKind::BodyCut));
    assert!(content().starts_with(&body));
    assert_eq!(server.requests(), 4, "max_attempts counts the resumes");
}

#[test]
fn the_operations_deadline_bounds_the_resumes() {
    let policy = Policy::builder()
        .max_attempts(10)
        .max_elapsed(Duration::from_millis(1_000))
        .body_idle_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::StallAt(1_000, Duration::from_secs(5)); 20]),
    ));
    let started = std::time::Instant::now();
    let (_, body, end) = get(policy, &server.url("/file"));
    assert_eq!(end, Err(ErrorKind::BodyStalled));
    assert!(content().starts_with(&body));
    // Resumes every 200 ms of silence, none after the deadline: at most 1 s / 200 ms + 1.
    assert!(
        server.requests() >= 2 && server.requests() <= 6,
        "{}",
        server.requests()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not held by the stalled server"
    );
}

#[test]
fn an_abort_ends_a_body_waiting_to_resume() {
    let abort = backstop::Abort::new();
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::StallAt(1_000, Duration::from_secs(5)); 20]),
    ));
    // An idle timeout longer than the test: the abort itself must wake the body.
    let policy = Policy::builder()
        .body_idle_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let firing = abort.clone();
    let fire = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        firing.abort();
    });
    let end = block_on(async {
        let response = client(policy)
            .get(server.url("/file"))
            .with_extension(abort)
            .send()
            .await
            .expect("a response");
        let mut body = reqwest::Body::from(response);
        // Bounded: the abort ends it.
        while let Some(frame) = body.frame().await {
            if let Err(e) = frame {
                return Err(kind_of(&e));
            }
        }
        Ok(())
    });
    fire.join().unwrap();
    assert_eq!(end, Err(ErrorKind::Aborted));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "ended by the abort, not a timer"
    );
    let sent = server.requests();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(server.requests(), sent, "nothing is sent after the abort");
}

#[test]
fn each_resume_is_reported_with_its_offset_and_its_answer() {
    use backstop::classify::AttemptOutcome;
    use backstop::EventKind;
    use std::sync::{Arc, Mutex};

    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::CloseAt(10_000)]),
    ));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    let retrier = Retrier::default()
        .seed(7)
        .on_event(move |e| into.lock().unwrap().push(e.kind));
    let http = default_tls()
        .reqwest(reqwest::Client::builder())
        .build()
        .expect("a reqwest client");
    let client = reqwest_middleware::ClientBuilder::new(http.clone())
        .with(RetryMiddleware::new(retrier).resume_bodies(http))
        .build();
    let read = block_on(async {
        let response = client.get(server.url("/file")).send().await.unwrap();
        response.bytes().await.map(|b| b.len())
    });
    assert_eq!(read.ok(), Some(content().len()));
    let seen = seen.lock().unwrap();
    let resumed = seen.iter().find_map(|k| match *k {
        EventKind::BodyResumed {
            attempt,
            offset,
            cause,
            ..
        } => Some((attempt, offset, cause)),
        _ => None,
    });
    assert_eq!(resumed, Some((2, 10_000, ErrorKind::BodyCut)), "{seen:?}");
    assert!(
        seen.iter().any(|k| matches!(
            k,
            EventKind::AttemptEnded {
                attempt: 2,
                result: AttemptOutcome::Response(206),
                ..
            }
        )),
        "{seen:?}"
    );
}

#[test]
fn a_hedged_gets_body_resumes_too() {
    let policy = Policy::builder()
        .hedging(backstop::Hedging::fixed(Duration::from_secs(2)).max_attempts(2))
        .build()
        .unwrap();
    let server = Server::always(Action::Serve(
        Served::new(v1()).faults([Fault::CloseAt(10_000)]),
    ));
    let (_, body, end) = get(policy, &server.url("/file"));
    assert_eq!(end, Ok(()));
    assert!(body == content());
    assert_eq!(
        server.requests(),
        2,
        "the first copy answered; its body resumed once"
    );
    assert!(server.recorded()[1].header("range").is_some());
}
