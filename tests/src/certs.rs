//! Certificates made at test time with rcgen: a private CA and the server certificates it
//! signs, or a self-signed one that nothing trusts. No key is ever written to the repository.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A private certificate authority.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl core::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The key stays out of any output.
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new CA with a fresh key.
    ///
    /// # Panics
    ///
    /// If rcgen cannot make a key or sign (a broken build, not an input).
    #[must_use]
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names to check");
        params
            .distinguished_name
            .push(DnType::CommonName, "backstop test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("rcgen makes a key");
        let cert = params.self_signed(&key).expect("rcgen signs");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA's certificate in PEM, to trust it.
    #[must_use]
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A server certificate for `names` (host names or IP addresses), signed by this CA.
    ///
    /// # Panics
    ///
    /// If a name is not a valid DNS name or IP address.
    #[must_use]
    pub fn server_cert(&self, names: &[&str]) -> ServerCert {
        let params = leaf_params(names);
        let key = KeyPair::generate().expect("rcgen makes a key");
        let cert = params.signed_by(&key, &self.issuer).expect("rcgen signs");
        ServerCert::new(cert.der().clone(), &key)
    }
}

impl Default for TestCa {
    fn default() -> Self {
        TestCa::new()
    }
}

/// A server's certificate chain and private key.
#[derive(Clone)]
pub struct ServerCert {
    chain: Vec<CertificateDer<'static>>,
    key_pkcs8: Vec<u8>,
}

impl core::fmt::Debug for ServerCert {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerCert").finish_non_exhaustive()
    }
}

impl ServerCert {
    /// A self-signed certificate for `names`: no client trusts it.
    ///
    /// # Panics
    ///
    /// If a name is not a valid DNS name or IP address.
    #[must_use]
    pub fn self_signed(names: &[&str]) -> Self {
        let key = KeyPair::generate().expect("rcgen makes a key");
        let cert = leaf_params(names).self_signed(&key).expect("rcgen signs");
        ServerCert::new(cert.der().clone(), &key)
    }

    fn new(cert: CertificateDer<'static>, key: &KeyPair) -> Self {
        ServerCert {
            chain: vec![cert],
            key_pkcs8: key.serialize_der(),
        }
    }

    /// A rustls server configuration presenting this certificate (TLS 1.2 and 1.3, on ring).
    ///
    /// # Panics
    ///
    /// If rustls refuses the certificate or key it was just handed by rcgen.
    #[must_use]
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_pkcs8.clone()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default versions")
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), key)
            .expect("rcgen's certificate and key match");
        Arc::new(config)
    }
}

fn leaf_params(names: &[&str]) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("valid DNS names or IP addresses");
    params
        .distinguished_name
        .push(DnType::CommonName, "backstop test server");
    params
}
