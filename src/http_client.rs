//! The one way Switchboard builds outgoing HTTP clients: rustls on `ring`
//! (installed once as the process's crypto provider), sane connect timeouts.

use std::time::Duration;

/// Makes `ring` the process's TLS crypto provider; every HTTP client needs
/// one (the OTLP exporter's too). A second call changes nothing.
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client for agents' backends (remote Switchboards, model servers).
pub fn client() -> Result<reqwest::Client, String> {
    install_tls();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}
