//! HTTPS scenarios on every adapter: the same uniform [`Run`] as [`crate::adapters`], with the
//! client trusting what the scenario says (a private CA made at test time, see
//! [`crate::certs`]), in each client's own form ([`Trust`]).
//!
//! An adapter joins by being listed in [`HTTPS_ADAPTERS`] and given an arm in
//! [`run_https`] that builds its client with the configuration.

use std::time::Duration;

use backstop::{
    Retried, Retrier, RetryError, RetryRequest, Roots, StdRuntime, TlsBuilder, VirtualTime,
};

use crate::adapters::{hyper_answer, stack_run, ureq_answer, Adapter, Answer, Clock, Failure, Run};

/// The adapters that speak HTTPS: all of them.
pub const HTTPS_ADAPTERS: [Adapter; 5] = Adapter::ALL;

/// What a client trusts, in each client's form: a rustls `ClientConfig` (smol, tokio, reqwest,
/// tower) and ureq's TLS settings.
#[derive(Clone)]
pub struct Trust {
    rustls: rustls::ClientConfig,
    ureq: ureq::tls::TlsConfig,
}

impl Trust {
    /// Trusts the CA in `pem` and nothing else.
    ///
    /// # Panics
    ///
    /// If `pem` holds no valid certificate.
    #[must_use]
    pub fn only_ca(pem: &str) -> Self {
        Trust {
            rustls: TlsBuilder::new()
                .roots(Roots::Custom)
                .ca_pem(pem)
                .build()
                .expect("a TLS configuration"),
            ureq: backstop::ureq::tls_config(Roots::Custom, Some(pem.as_bytes()))
                .expect("ureq's TLS configuration"),
        }
    }

    /// The rustls configuration (for smol, tokio, reqwest and tower).
    #[must_use]
    pub fn rustls(&self) -> &rustls::ClientConfig {
        &self.rustls
    }
}

impl core::fmt::Debug for Trust {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Trust").finish_non_exhaustive()
    }
}

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
/// If a tokio runtime cannot be built.
#[must_use]
pub fn run_https(
    adapter: Adapter,
    retrier: &Retrier,
    request: RetryRequest,
    trust: &Trust,
) -> HttpsRun {
    let started = std::time::Instant::now();
    let tls = &trust.rustls;
    let ((result, error), skipped) = match adapter {
        Adapter::Ureq => {
            let client = backstop::ureq::Client::with_tls(retrier.clone(), trust.ureq.clone())
                .with_runtime(VirtualTime::new(StdRuntime::new()));
            let result = client.run(request);
            let error = failed_text(&result);
            ((ureq_answer(result), error), client.runtime().skipped())
        }
        Adapter::Smol => smol::block_on(async {
            let client = backstop::smol::Client::with_tls(retrier.clone(), tls.clone())
                .with_runtime(VirtualTime::new(backstop::smol::SmolRuntime::new()));
            let result = answer(client.run(request).await).await;
            (result, client.runtime().skipped())
        }),
        Adapter::Tokio => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(async {
                let client = backstop::tokio::Client::with_tls(retrier.clone(), tls.clone())
                    .with_runtime(VirtualTime::new(backstop::tokio::TokioRuntime::new()));
                let result = answer(client.run(request).await).await;
                (result, client.runtime().skipped())
            }),
        Adapter::Reqwest | Adapter::Tower => {
            stack_run(adapter, retrier, request, Clock::Virtual, tls.clone())
        }
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
    let error = failed_text(&result);
    (hyper_answer(result).await, error)
}

/// The `Display` of the client's error, when the operation failed with one.
fn failed_text<T, E: std::fmt::Display>(result: &Result<T, RetryError<E>>) -> Option<String> {
    match result {
        Err(RetryError::Failed { error, .. }) => Some(error.to_string()),
        _ => None,
    }
}

/// A generous bound on one HTTPS scenario's real time: a hang, not a slow machine, exceeds it.
pub const TERMINATES_WITHIN: Duration = Duration::from_secs(20);

/// Checks that `https` stopped at its TLS handshake: one attempt, `ErrorKind::Tls`, stopped as
/// a permanent error, its text naming `cause` (for example `certificate rejected:
/// UnknownIssuer`), nothing sent to `server` and no second connection.
///
/// # Panics
///
/// When any of that does not hold (the test fails).
pub fn assert_rejected_at_the_handshake(
    adapter: Adapter,
    https: &HttpsRun,
    server: &crate::server::Server,
    cause: &str,
) {
    let run = &https.run;
    let Err(Failure::Failed { kind, outcome }) = run.result else {
        panic!("{adapter:?}: {https:?}");
    };
    assert_eq!(kind, backstop::ErrorKind::Tls, "{adapter:?}");
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, backstop::StopReason::PermanentError),
        "{adapter:?}"
    );
    let text = https.error.clone().unwrap_or_default();
    assert!(text.contains(cause), "{adapter:?}: {text}");
    assert_eq!(server.requests(), 0, "{adapter:?}: nothing was sent");
    assert_eq!(server.connections(), 1, "{adapter:?}: no second attempt");
    assert!(run.real < TERMINATES_WITHIN, "{adapter:?}: {:?}", run.real);
}
