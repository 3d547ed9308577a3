//! No `Debug` of backstop's shows a secret: the `Attempt` handed to the attempt function, the `Retried` response, the `RetryError` and the response hook's `ResponseView`
//! leave out the URL's userinfo, query and fragment, every header value (`Authorization`,
//! `Cookie`, `Set-Cookie`, the raw `Idempotency-Key`) and the body.

use std::sync::Mutex;

use backstop::runtime::{StdRuntime, VirtualTime};
use backstop::{run, Retrier, RetryError};
use bytes::Bytes;
use futures_lite::future;

const SECRETS: [&str; 7] = [
    "SECRET-PASSWORD",
    "SECRET-QUERY",
    "SECRET-FRAGMENT",
    "SECRET-AUTH",
    "SECRET-COOKIE",
    "SECRET-KEY",
    "SECRET-BODY",
];

fn secret_request() -> http::Request<Bytes> {
    // `http` keeps no fragment: the URI parser drops it.
    http::Request::post(
        "http://alice:SECRET-PASSWORD@127.0.0.1:1/v1/orders?token=SECRET-QUERY#SECRET-FRAGMENT",
    )
    .header("authorization", "Bearer SECRET-AUTH")
    .header("cookie", "session=SECRET-COOKIE")
    .header("idempotency-key", "SECRET-KEY")
    .body(Bytes::from_static(b"SECRET-BODY"))
    .expect("a valid request")
}

fn assert_no_secret(text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[test]
fn an_attempts_and_a_returned_responses_debug_show_no_secret() {
    let seen = Mutex::new(Vec::new());
    let result = future::block_on(run(
        &Retrier::default(),
        &VirtualTime::new(StdRuntime::new()),
        secret_request(),
        |attempt: backstop::Attempt| {
            seen.lock().expect("lock").push(format!("{attempt:?}"));
            let response = http::Response::builder()
                .header("set-cookie", "session=SECRET-COOKIE")
                .body("SECRET-BODY")
                .expect("a valid response");
            async { Ok::<_, std::io::Error>(response) }
        },
    ));
    let attempts = seen.into_inner().expect("lock");
    assert_eq!(attempts.len(), 1);
    assert_no_secret(&attempts[0]);
    assert!(attempts[0].contains("idempotency-key"), "{}", attempts[0]);
    let returned = format!("{result:?}");
    assert_no_secret(&returned);
    assert!(returned.contains("set-cookie"), "{returned}");
}

#[test]
fn a_retry_errors_debug_leaves_out_the_clients_error_text() {
    // A client whose error text carries the URL, as reqwest's does.
    let result = future::block_on(run(
        &Retrier::new(
            backstop::Policy::builder()
                .max_attempts(1)
                .build()
                .expect("a policy"),
        ),
        &VirtualTime::new(StdRuntime::new()),
        secret_request(),
        |_attempt| async {
            Err::<http::Response<()>, _>(std::io::Error::other(
                "error sending request for url (http://127.0.0.1:1/?token=SECRET-QUERY)",
            ))
        },
    ));
    let error = result.expect_err("the attempt failed");
    assert!(matches!(error, RetryError::Failed { .. }));
    assert_no_secret(&format!("{error:?}"));
    assert_no_secret(&error.to_string());
}

#[test]
fn the_response_hooks_view_shows_no_secret() {
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let hook_saw = seen.clone();
    let retrier = Retrier::default().classify_response(move |view| {
        hook_saw.lock().expect("lock").push(format!("{view:?}"));
        backstop::classify::ResponseClass::ByStatus
    });
    let result = future::block_on(run(
        &retrier,
        &VirtualTime::new(StdRuntime::new()),
        secret_request(),
        |_attempt| {
            let response = http::Response::builder()
                .header("set-cookie", "session=SECRET-COOKIE")
                .body(())
                .expect("a valid response");
            async { Ok::<_, std::io::Error>(response) }
        },
    ));
    assert!(result.is_ok(), "{result:?}");
    let views = seen.lock().expect("lock").clone();
    assert_eq!(views.len(), 1, "the hook sees each response once");
    assert_no_secret(&views[0]);
    for shown in ["POST", "http://127.0.0.1:1/v1/orders", "set-cookie", "200"] {
        assert!(
            views[0].contains(shown),
            "{shown} missing from {}",
            views[0]
        );
    }
}
