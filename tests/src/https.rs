//! HTTPS scenarios on every adapter that takes a rustls configuration: the same uniform
//! [`Run`] as [`crate::adapters`], with the client trusting what the scenario says (a private
//! CA made at test time, see [`crate::certs`]).
//!
//! An adapter joins by being listed in [`HTTPS_ADAPTERS`] and given an arm in
//! [`run_https`] that builds its client with the configuration.

use std::time::Duration;

use backstop_driver::{Retried, Retrier, RetryError, RetryRequest, VirtualTime};

use crate::adapters::{hyper_answer, Adapter, Answer, Failure, Run};

/// The adapters whose ready-made client takes a rustls `ClientConfig`.
pub const HTTPS_ADAPTERS: [Adapter; 2] = [Adapter::Smol, Adapter::Tokio];

/// Runs `scenario` once for each adapter in [`HTTPS_ADAPTERS`].
pub fn for_each_https_adapter(mut scenario: impl FnMut(Adapter)) {
    for adapter in HTTPS_ADAPTERS {
        scenario(adapter);
    }
}

/// What one HTTPS run gave: the uniform [`Run`], and the client error's text if it failed.
#[derive(Debug)]
pub struct HttpsRun {
    /// The run.
    pub run: Run,
    /// The `Display` of the client's error, when the operation failed with one.
    pub error: Option<String>,
}

/// Runs one operation through `adapter`'s ready-made client built with `tls`, on virtual time
/// (waits between attempts take no real time; attempts are real HTTPS on loopback).
///
/// # Panics
///
/// For an adapter not in [`HTTPS_ADAPTERS`], or if a tokio runtime cannot be built.
#[must_use]
pub fn run_https(
    adapter: Adapter,
    retrier: &Retrier,
    request: RetryRequest,
    tls: &rustls::ClientConfig,
) -> HttpsRun {
    let started = std::time::Instant::now();
    let ((result, error), skipped) = match adapter {
        Adapter::Smol => smol::block_on(async {
            let client = backstop_smol::Client::with_tls(retrier.clone(), tls.clone())
                .with_runtime(VirtualTime::new(backstop_smol::SmolRuntime::new()));
            let result = answer(client.run(request).await).await;
            (result, client.runtime().skipped())
        }),
        Adapter::Tokio => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(async {
                let client = backstop_tokio::Client::with_tls(retrier.clone(), tls.clone())
                    .with_runtime(VirtualTime::new(backstop_tokio::TokioRuntime::new()));
                let result = answer(client.run(request).await).await;
                (result, client.runtime().skipped())
            }),
        Adapter::Ureq => panic!("backstop-ureq takes no rustls ClientConfig yet"),
    };
    HttpsRun {
        run: Run {
            adapter,
            result,
            skipped,
            real: started.elapsed(),
        },
        error,
    }
}

async fn answer<E: std::fmt::Display>(
    result: Result<Retried<hyper::body::Incoming>, RetryError<E>>,
) -> (Result<Answer, Failure>, Option<String>) {
    let error = match &result {
        Err(RetryError::Failed { error, .. }) => Some(error.to_string()),
        _ => None,
    };
    (hyper_answer(result).await, error)
}

/// A generous bound on one HTTPS scenario's real time: a hang, not a slow machine, exceeds it.
pub const TERMINATES_WITHIN: Duration = Duration::from_secs(20);
