//! Small helpers every layer may use: poison-tolerant locking and the one way
//! Switchboard builds outgoing HTTP clients.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering the data if a panicking thread poisoned it: the
/// state guarded this way stays consistent because every update is a single step.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes `ring` the process's TLS crypto provider; every HTTP client needs
/// one (the OTLP exporter's too). A second call changes nothing.
#[cfg(any(feature = "remote", feature = "otel"))]
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client for agents' backends (remote Switchboards, model servers): rustls
/// on `ring`, sane connect and idle timeouts.
#[cfg(feature = "remote")]
pub fn http_client() -> Result<reqwest::Client, String> {
    install_tls();
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .pool_idle_timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}
