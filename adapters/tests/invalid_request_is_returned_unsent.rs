//! A request the builder could not make (a URL that does not parse, a header value with a
//! newline) comes back from `run` as `RetryError::InvalidRequest`: no attempt, nothing sent,
//! no event, and the text names the part without its value.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use backstop::StopReason;
use backstop::{run, Retrier, RetryError, RetryRequest, StdRuntime};
use futures_lite::future;

/// Runs `request` with an attempt function that counts its calls; returns the result, the
/// attempts made and the events seen.
fn run_counting(request: RetryRequest) -> (Result<(), RetryError<std::io::Error>>, u32, u32) {
    let events = Arc::new(AtomicU32::new(0));
    let seen = events.clone();
    let retrier = Retrier::default().on_event(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let sent = AtomicU32::new(0);
    let result = future::block_on(run(&retrier, &StdRuntime::new(), request, |_attempt| {
        sent.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, std::io::Error>(http::Response::new(())) }
    }));
    let calls = sent.load(Ordering::SeqCst);
    (result.map(|_| ()), calls, events.load(Ordering::SeqCst))
}

#[test]
fn a_url_that_does_not_parse_is_an_invalid_request_and_nothing_is_sent() {
    let (result, sent, events) =
        run_counting(RetryRequest::get("http://exa mple.com/?token=s3cret"));
    let Err(RetryError::InvalidRequest { error, outcome }) = result else {
        panic!("{result:?}");
    };
    assert!(error.is_uri(), "{error}");
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (0, StopReason::PermanentError)
    );
    assert_eq!((sent, events), (0, 0));
    let text = RetryError::<std::io::Error>::InvalidRequest { error, outcome }.to_string();
    assert!(text.starts_with("nothing sent: invalid URL"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}

#[test]
fn a_header_value_with_a_newline_is_an_invalid_request_without_its_value() {
    let request = RetryRequest::get("http://127.0.0.1:1/")
        .header("authorization", "Bearer s3cret\r\nX-Injected: 1")
        .header("x-ok", "fine");
    let (result, sent, _) = run_counting(request);
    let Err(RetryError::InvalidRequest { error, .. }) = result else {
        panic!("{result:?}");
    };
    assert!(error.is_header() && !error.is_uri(), "{error}");
    assert_eq!(sent, 0);
    assert!(!error.to_string().contains("s3cret"), "{error}");
}

#[test]
fn the_first_mistake_is_the_one_reported() {
    let request = RetryRequest::post("not a url").header("bad name", "v");
    assert!(request.error().is_some_and(|e| e.is_uri()));
}

#[test]
fn a_string_a_str_and_a_uri_all_make_the_same_request() {
    let uri: http::Uri = "http://127.0.0.1:8080/a?b=c".parse().expect("uri");
    for request in [
        RetryRequest::get("http://127.0.0.1:8080/a?b=c"),
        RetryRequest::get(String::from("http://127.0.0.1:8080/a?b=c")),
        RetryRequest::get(uri.clone()),
    ] {
        assert!(request.error().is_none());
        assert_eq!(request.uri(), &uri);
    }
    let (result, sent, _) = run_counting(
        RetryRequest::get(uri).header(http::header::ACCEPT, http::HeaderValue::from_static("*/*")),
    );
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(sent, 1);
}
