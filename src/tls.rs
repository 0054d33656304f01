//! TLS for the clients studioflow makes (fetching an OAuth issuer's keys, `studioflow client`
//! reaching a server, a connection to PostgreSQL with `sslmode=require`): rustls with the ring
//! crypto provider, and the platform's root certificates. reqwest is built without a provider of
//! its own, so every client is made after [`install`]; this module makes no connection itself.

use std::sync::{Arc, Once};

/// Makes ring the process's rustls crypto provider, once; later calls do nothing. Call it before
/// building a `reqwest::Client`, which otherwise panics for want of a provider.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means another provider is installed already, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client configuration that verifies a server's certificate and name against the platform's
/// roots and `extra_root` (a PEM file of certificates, for a private CA); for connections that are
/// not reqwest's (PostgreSQL's).
pub fn verifying_client(extra_root: Option<&std::path::Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls_pki_types::pem::PemObject;
    install();
    let extra = match extra_root {
        Some(path) => rustls_pki_types::CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("reading the certificates in {}: {e}", path.display()))?,
        None => Vec::new(),
    };
    if extra_root.is_some() && extra.is_empty() {
        return Err(format!("{} holds no PEM certificate", extra_root.map(|p| p.display().to_string()).unwrap_or_default()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone()).map_err(|e| format!("the platform's certificates: {e}"))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}
