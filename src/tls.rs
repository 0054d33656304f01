//! TLS for the HTTPS clients studioflow makes (fetching an OAuth issuer's keys, `studioflow client`
//! reaching a server): reqwest over rustls with the ring crypto provider, and the platform's root
//! certificates. reqwest is built without a provider of its own, so every client is made after
//! [`install`]; this module makes no connection itself.

use std::sync::Once;

/// Makes ring the process's rustls crypto provider, once; later calls do nothing. Call it before
/// building a `reqwest::Client`, which otherwise panics for want of a provider.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means another provider is installed already, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
