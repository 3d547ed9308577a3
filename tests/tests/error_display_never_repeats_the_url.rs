//! No backstop error's `Display` repeats the URL's secrets: the userinfo and the query of a
//! request that failed (refused, or refused before sending) appear in neither `RetryError`'s
//! text nor the adapter's own attempt error's, on every adapter. (The client's error kept as
//! the source may carry the URL: reqwest's does, and the reqwest middleware cuts it to scheme,
//! host, port and path, so there the whole chain is checked.)

use backstop::runtime::VirtualTime;
use backstop::{Retrier, RetryError};
use backstop_tests::adapters::{for_each_adapter, Adapter};
use backstop_tests::middleware::{
    block_on, default_tls, reqwest_client, smol_client, tower_client,
};
use backstop_tests::server::refused_url;
use bytes::Bytes;
use http_body_util::Full;
use tower::ServiceExt;

const SECRETS: [&str; 2] = ["pa55word", "s3cret"];

/// The texts of `e` and of the attempt error it holds.
fn texts<E: std::fmt::Display>(e: &RetryError<E>) -> Vec<String> {
    let mut texts = vec![e.to_string()];
    if let RetryError::Failed { error, .. } = e {
        texts.push(error.to_string());
    }
    texts
}

/// The error texts of one operation to `url` through `adapter`.
fn error_texts(adapter: Adapter, url: &str) -> Vec<String> {
    let retrier = Retrier::new(
        backstop::Policy::builder()
            .max_attempts(2)
            .build()
            .expect("policy"),
    );
    match adapter {
        Adapter::Ureq => {
            let client = backstop::ureq::Client::new(retrier)
                .with_runtime(VirtualTime::new(backstop::ureq::StdRuntime::new()));
            let request = http::Request::get(url).body(()).expect("a request");
            texts(&client.run(request).expect_err("a failure"))
        }
        Adapter::TowerSmol => smol::block_on(async {
            let clock = VirtualTime::new(backstop::smol::SmolRuntime::new());
            let client = smol_client(&retrier, &clock, &default_tls());
            let request = http::Request::get(url)
                .body(Full::new(Bytes::new()))
                .expect("a request");
            texts(&client.oneshot(request).await.expect_err("a failure"))
        }),
        Adapter::Reqwest => block_on(async {
            let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
            let client = reqwest_client(&retrier, &clock, &default_tls());
            let error = client.get(url).send().await.expect_err("a failure");
            // The attempt error here is reqwest's own (the source), which names the URL: the
            // middleware cuts it to scheme, host, port and path, so the whole chain is checked,
            // and its `Debug` too.
            let retry = backstop::reqwest::retry_error(&error).expect("the loop's error");
            let mut texts = vec![error.to_string(), retry.to_string(), format!("{error:?}")];
            let mut source = std::error::Error::source(retry);
            while let Some(e) = source {
                texts.push(e.to_string());
                texts.push(format!("{e:?}"));
                source = e.source();
            }
            texts
        }),
        Adapter::TowerTokio => block_on(async {
            let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
            let client = tower_client(&retrier, &clock, &default_tls());
            let request = http::Request::get(url)
                .body(Full::new(Bytes::new()))
                .expect("a request");
            texts(&client.oneshot(request).await.expect_err("a failure"))
        }),
    }
}

#[test]
fn no_error_display_repeats_the_urls_userinfo_or_query() {
    let refused = refused_url("/orders?token=s3cret").replacen("://", "://user:pa55word@", 1);
    let mut leaks = Vec::new();
    for_each_adapter(|adapter| {
        for url in [refused.as_str(), "/orders?token=s3cret"] {
            if adapter == Adapter::Reqwest && url.starts_with('/') {
                // reqwest cannot make a request without a host.
                continue;
            }
            for text in error_texts(adapter, url) {
                if SECRETS.iter().any(|s| text.contains(s)) {
                    leaks.push(format!("{adapter:?} {url}: {text}"));
                }
            }
        }
    });
    assert!(leaks.is_empty(), "{leaks:#?}");
}
