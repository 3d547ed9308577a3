//! `RetryLayer::resume_bodies`: under the tower layer (over hyper-util on tokio, and over
//! `backstop::smol::HttpService` on smol), a GET's body resumes by itself after a cut or a
//! stall, through the operation's clone of the inner service, under the same rules as the
//! other front doors (see `a_streaming_body_resumes_after_a_cut.rs`).

use core::time::Duration;

use backstop::body::BodyError;
use backstop::smol::SmolRuntime;
use backstop::tokio::TokioRuntime;
use backstop::tower::{ResumeBody, RetryLayer};
use backstop::{ErrorKind, Policy, Retrier};
use backstop_tests::middleware::{block_on, default_tls, hyper_client};
use backstop_tests::server::{Action, Fault, Representation, Served, Server};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tower::ServiceExt;

fn content() -> Vec<u8> {
    (0..64 * 1024u32).map(|i| (i % 251) as u8).collect()
}

fn v1() -> Representation {
    Representation::new(content()).strong_etag("v1")
}

fn request(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// Reads `body` frame by frame: the bytes handed over, and how it ended.
async fn read(mut body: ResumeBody) -> (Vec<u8>, Result<(), ErrorKind>) {
    let mut read = Vec::new();
    // Bounded: the body ends, or fails, within its operation's attempts.
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => read.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
            Err(e) => {
                let kind = e
                    .downcast_ref::<BodyError>()
                    .map_or(ErrorKind::Other, BodyError::kind);
                return (read, Err(kind));
            }
        }
    }
    (read, Ok(()))
}

/// The tower layer's two runtimes.
const RUNTIMES: [Runtime; 2] = [Runtime::Tokio, Runtime::Smol];

#[derive(Clone, Copy, Debug)]
enum Runtime {
    /// Over hyper-util, on tokio.
    Tokio,
    /// Over `backstop::smol::HttpService`, on smol.
    Smol,
}

/// One GET through the tower layer on `runtime`: what the caller read.
fn get(runtime: Runtime, policy: Policy, url: &str) -> (Vec<u8>, Result<(), ErrorKind>) {
    let retrier = Retrier::new(policy).seed(7);
    match runtime {
        Runtime::Tokio => block_on(async {
            let service = tower::ServiceBuilder::new()
                .layer(RetryLayer::new(retrier.clone(), TokioRuntime::new()).resume_bodies())
                .service(hyper_client::<Full<Bytes>>(&default_tls(), &retrier));
            let response = service.oneshot(request(url)).await.expect("a response");
            read(response.into_body()).await
        }),
        Runtime::Smol => smol::block_on(async {
            let service = tower::ServiceBuilder::new()
                .layer(RetryLayer::new(retrier.clone(), SmolRuntime::new()).resume_bodies())
                .service(backstop::smol::HttpService::<Full<Bytes>>::default());
            let response = service.oneshot(request(url)).await.expect("a response");
            read(response.into_body()).await
        }),
    }
}

#[test]
fn a_reset_or_an_early_end_resumes_on_both_runtimes() {
    for runtime in RUNTIMES {
        for fault in [Fault::ResetAt(20_000), Fault::CloseAt(20_000)] {
            let server = Server::always(Action::Serve(Served::new(v1()).faults([fault])));
            let (body, end) = get(runtime, Policy::default(), &server.url("/file"));
            assert_eq!(end, Ok(()), "{runtime:?} {fault:?}");
            assert!(body == content(), "{runtime:?} {fault:?}: byte-exact");
            assert_eq!(server.requests(), 2, "{runtime:?} {fault:?}: one resume");
            let recorded = server.recorded();
            assert_eq!(recorded[1].header("if-range"), Some(&b"\"v1\""[..]));
            assert!(recorded[1].header("range").is_some());
        }
    }
}

#[test]
fn a_stall_resumes_and_a_changed_representation_is_refused() {
    let policy = Policy::builder()
        .body_idle_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    for runtime in RUNTIMES {
        let stall = Fault::StallAt(10_000, Duration::from_secs(3));
        let server = Server::always(Action::Serve(Served::new(v1()).faults([stall])));
        let (body, end) = get(runtime, policy, &server.url("/file"));
        assert_eq!(end, Ok(()), "{runtime:?}");
        assert!(body == content(), "{runtime:?}");

        let v2 = Representation::new(vec![9u8; 64 * 1024]).strong_etag("v2");
        let server = Server::always(Action::Serve(
            Served::new(v1())
                .faults([Fault::CloseAt(10_000)])
                .new_version_from(2, v2),
        ));
        let (body, end) = get(runtime, Policy::default(), &server.url("/file"));
        assert_eq!(end, Err(ErrorKind::BodyChanged), "{runtime:?}");
        assert!(content().starts_with(&body), "{runtime:?}");
    }
}
