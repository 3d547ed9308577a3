//! HTTPS scenarios on every adapter: the same uniform [`Run`] as [`crate::adapters`], with the
//! client trusting what the scenario says (a private CA made at test time, see
//! [`crate::certs`]), handed to each client through its own TLS API ([`Trust`]).
//!
//! An adapter joins by being listed in [`HTTPS_ADAPTERS`] and given an arm in
//! [`run_https`] that builds its client with the configuration.

use std::time::Duration;

use backstop::Retrier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::adapters::{send, Adapter, Clock, Failure, Run};
use crate::request::TestRequest;

/// The adapters that speak HTTPS: all of them.
pub const HTTPS_ADAPTERS: [Adapter; 4] = Adapter::ALL;

/// What a client trusts, handed to each client through its own TLS API: a rustls
/// `ClientConfig` (smol, tokio, and hyper-rustls under tower), ureq's `TlsConfig`, reqwest's
/// `Certificate`s. The default trusts no certificate at all (for plain-HTTP scenarios).
#[derive(Clone, Default)]
pub struct Trust {
    /// The trusted CAs' certificates in PEM; `None`: nothing is trusted.
    ca_pem: Option<String>,
}

impl Trust {
    /// Trusts the CA in `pem` and nothing else.
    #[must_use]
    pub fn only_ca(pem: &str) -> Self {
        Trust {
            ca_pem: Some(pem.to_owned()),
        }
    }

    /// The CAs' certificates, as rustls reads them from PEM.
    fn certificates(&self) -> Vec<CertificateDer<'static>> {
        let pem = self.ca_pem.as_deref().unwrap_or_default();
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .expect("the CA's PEM is valid")
    }

    /// rustls' configuration (for smol, tokio and tower): a root store of the CAs alone.
    ///
    /// # Panics
    ///
    /// If the PEM holds an invalid certificate.
    #[must_use]
    pub fn rustls(&self) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        for cert in self.certificates() {
            roots.add(cert).expect("rustls takes the CA");
        }
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth()
    }

    /// ureq's TLS configuration: the CAs as its only roots.
    ///
    /// # Panics
    ///
    /// If the PEM holds an invalid certificate.
    #[must_use]
    pub fn ureq(&self) -> ureq::tls::TlsConfig {
        let certs: Vec<_> = self
            .certificates()
            .iter()
            .map(|c| ureq::tls::Certificate::from_der(c).to_owned())
            .collect();
        ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
            .build()
    }

    /// `builder` trusting the CAs alone, with reqwest's own `Certificate`s, on ring (installed
    /// as the process default: reqwest is built with `rustls-no-provider`).
    ///
    /// # Panics
    ///
    /// If reqwest refuses the PEM.
    pub fn reqwest(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let certs = match &self.ca_pem {
            Some(pem) => reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .expect("reqwest reads the CA's PEM"),
            None => Vec::new(),
        };
        builder.tls_certs_only(certs)
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

/// Runs one operation through a new client of `adapter` built with `tls`, on virtual time
/// (waits between attempts take no real time; attempts are real HTTPS on loopback).
///
/// # Panics
///
/// If a tokio runtime cannot be built.
#[must_use]
pub fn run_https(
    adapter: Adapter,
    retrier: &Retrier,
    request: TestRequest,
    trust: &Trust,
) -> HttpsRun {
    let started = std::time::Instant::now();
    let ((result, error), skipped) = send(adapter, retrier, &request, Clock::Virtual, trust);
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
