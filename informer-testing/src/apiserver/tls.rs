//! The server's TLS identity and client credentials, as a real cluster's: a CA made at
//! start-up, a serving certificate it signs for `127.0.0.1` and `localhost`, and a random
//! bearer token per server.
//!
//! Generating keys costs a few milliseconds, so the CA and serving certificate are made
//! once per process and shared by every server in it; each server gets its own token.
//! The handshake itself runs in the connection's task, never in the accept loop.

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// A CA and the serving configuration its certificate signs.
pub(crate) struct Identity {
    /// The CA certificate, PEM (what a kubeconfig's `certificate-authority-data` holds,
    /// base64-encoded).
    pub ca_pem: String,
    /// The CA certificate, DER (what `kube::Config::root_cert` takes).
    pub ca_der: Vec<u8>,
    /// Accepts TLS connections with the serving certificate.
    pub acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").finish_non_exhaustive()
    }
}

fn generate() -> Result<Identity, String> {
    let fail = |what: &str, err: &dyn std::fmt::Display| format!("{what}: {err}");
    let ca_key = KeyPair::generate().map_err(|e| fail("generate the CA key", &e))?;
    let mut ca_params =
        CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("CA parameters", &e))?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "informer-testing-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .map_err(|e| fail("sign the CA certificate", &e))?;
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().map_err(|e| fail("generate the serving key", &e))?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(|e| fail("serving certificate parameters", &e))?;
    params
        .distinguished_name
        .push(DnType::CommonName, "informer-testing-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let server_cert = params
        .signed_by(&server_key, &issuer)
        .map_err(|e| fail("sign the serving certificate", &e))?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = vec![server_cert.der().clone(), ca_cert.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| fail("TLS versions", &e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| fail("TLS serving configuration", &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Identity {
        ca_pem: ca_cert.pem(),
        ca_der: CertificateDer::as_ref(ca_cert.der()).to_vec(),
        acceptor: TlsAcceptor::from(Arc::new(config)),
    })
}

/// The process's identity, made on first use.
pub(crate) fn identity() -> Result<&'static Identity, String> {
    static IDENTITY: OnceLock<Result<Identity, String>> = OnceLock::new();
    IDENTITY
        .get_or_init(generate)
        .as_ref()
        .map_err(Clone::clone)
}

/// A random bearer token (32 bytes, URL-safe base64).
pub(crate) fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether an `Authorization` header carries `token` (`Bearer <token>`, scheme in any case).
pub(crate) fn authorized(header: Option<&str>, token: &str) -> bool {
    let Some((scheme, value)) = header.and_then(|h| h.trim().split_once(' ')) else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer")
        && constant_time_eq(value.trim().as_bytes(), token.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
