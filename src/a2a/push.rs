//! A2A push notifications: the config operations (create, get, list,
//! delete; owner-checked like tasks) and their delivery.
//!
//! Delivery: every status and artifact event of a task is stored, numbered,
//! before it is sent (`a2a_task_events`); when a task's events are stored,
//! the service tells the [`Pusher`], which POSTs each event after a
//! config's cursor to its webhook, in order, off the call path: one
//! delivery loop per task at a time, at most [`MAX_DELIVERING`] tasks at
//! once, each event claimed in the store (the cursor moves by
//! compare-and-set) before it is sent, so processes sharing a database never
//! both send it. Timeouts, connection errors, 429 and 5xx are retried with
//! a doubling backoff (`[a2a.push] max_attempts`, `retry_base_ms`); any
//! other answer is not. A delivery that finally fails is logged and counted
//! in the store (`failures`, `last_error`); the next event still goes.
//!
//! Each POST carries the event as the body (`application/a2a+json`), the
//! config's token as `X-A2A-Notification-Token`, its authentication as
//! `Authorization: {scheme} {credentials}`, and `X-Switchboard-Signature`:
//! a JWS (RFC 7515, compact, detached payload) signed with Ed25519
//! (`EdDSA`), whose protected header has the key id (`kid`), the time
//! (`iat`, seconds) and the task and event; the payload is the body. The
//! public key is published as a JWKS at `/.well-known/jwks.json`.
//!
//! SSRF: a webhook's URL must be http(s); its host is resolved and every
//! address checked: only a globally routable address that is not this host's
//! own may be reached (push_targets.rs: IANA's special-purpose registries,
//! the IPv6 forms that carry an IPv4 address, the host's interfaces), unless
//! `[a2a.push] allow_private` lists it. Checked at create time and again
//! before every POST, which connects only to the address that was checked
//! (the resolution is pinned), so a DNS answer that changes meanwhile cannot
//! redirect it; redirects are not followed, proxies not used.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::push_targets::{blocked, host_addresses};
use crate::config::{A2aPushConfig, IpRange};
use crate::protocol::a2a::error::{A2aError, Kind};
use crate::protocol::a2a::types::TaskPushNotificationConfig;
use crate::store::{A2aEventRecord, A2aPushConfigRecord, MAX_PUSH_CONFIGS_PER_TASK, Store, TaskKeeper, now_ms};
use crate::util::lock;

/// The header that carries a delivery's signature.
pub(crate) const SIGNATURE_HEADER: &str = "X-Switchboard-Signature";
/// The header that carries a config's token.
pub(crate) const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// Where the service publishes the keys that sign deliveries.
pub(crate) const JWKS_PATH: &str = "/.well-known/jwks.json";
/// Tasks whose events are delivered at once.
pub(super) const MAX_DELIVERING: usize = 32;
/// Tasks with deliveries pending, at most; a task over this waits for its next event.
const MAX_PENDING: usize = 10_000;

/// Delivery counts since the service started.
#[derive(Debug, Default)]
pub(super) struct PushStats {
    /// Events delivered (a 2xx answer).
    pub delivered: AtomicU64,
    /// POSTs tried again (a timeout, a connection error, 429 or 5xx).
    pub retried: AtomicU64,
    /// Deliveries that finally failed (recorded in the store).
    pub failed: AtomicU64,
}

/// The key that signs deliveries.
pub(crate) struct PushKey {
    key: SigningKey,
    kid: String,
}

impl std::fmt::Debug for PushKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushKey").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl PushKey {
    /// The key in `file` (base64 of a 32-byte seed), made there (mode 0600)
    /// when missing; a fresh one in memory without a file.
    pub(crate) fn open(file: Option<&Path>) -> Result<Self, String> {
        let seed = match file {
            None => random_seed()?,
            Some(path) => match std::fs::read_to_string(path) {
                Ok(text) => {
                    let bytes = STANDARD
                        .decode(text.trim())
                        .map_err(|e| format!("a2a.push.key_file {}: not base64: {e}", path.display()))?;
                    bytes.try_into().map_err(|_| format!("a2a.push.key_file {}: not a 32-byte seed", path.display()))?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_seed(path)?,
                Err(e) => return Err(format!("a2a.push.key_file {}: {e}", path.display())),
            },
        };
        Ok(Self::from_seed(seed))
    }

    /// The key of `seed`.
    pub(crate) fn from_seed(seed: [u8; 32]) -> Self {
        let key = SigningKey::from_bytes(&seed);
        let kid = hex::encode(&Sha256::digest(key.verifying_key().as_bytes())[..8]);
        Self { key, kid }
    }

    #[cfg(test)]
    /// Its id (16 hex digits of sha256 of the public key).
    pub(crate) fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWKS (RFC 7517, OKP / Ed25519, RFC 8037) with the public key.
    pub(crate) fn jwks(&self) -> Value {
        json!({"keys": [{
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.key.verifying_key().as_bytes()),
            "kid": self.kid,
            "alg": "EdDSA",
            "use": "sig",
        }]})
    }

    /// The detached JWS of `body`: `BASE64URL(header)..BASE64URL(signature)`.
    pub(crate) fn sign(&self, body: &[u8], task_id: &str, seq: i64, iat: i64) -> String {
        let header = json!({"alg": "EdDSA", "kid": self.kid, "typ": "JOSE", "iat": iat, "a2aTaskId": task_id, "a2aEventSeq": seq});
        let header = URL_SAFE_NO_PAD.encode(header.to_string());
        let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(body));
        let signature = self.key.sign(input.as_bytes());
        format!("{header}..{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }
}

fn random_seed() -> Result<[u8; 32], String> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness for the push signing key: {e}"))?;
    Ok(seed)
}

fn write_seed(path: &Path) -> Result<[u8; 32], String> {
    use std::io::Write;
    let seed = random_seed()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut f) => {
            f.write_all(STANDARD.encode(seed).as_bytes())
                .map_err(|e| format!("a2a.push.key_file {}: {e}", path.display()))?;
            Ok(seed)
        }
        // another process made it first: use that one
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("a2a.push.key_file {}: {e}", path.display()))?;
            STANDARD
                .decode(text.trim())
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| format!("a2a.push.key_file {}: not a base64 32-byte seed", path.display()))
        }
        Err(e) => Err(format!("a2a.push.key_file {}: {e}", path.display())),
    }
}

/// A webhook URL that passed the check, and the address to connect to.
#[derive(Debug, Clone)]
pub(crate) struct CheckedUrl {
    /// The URL.
    pub url: reqwest::Url,
    /// Its host, when it is a name (the resolution to pin).
    pub host: Option<String>,
    /// The checked address to connect to.
    pub addr: SocketAddr,
}

/// Why a webhook URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlProblem {
    /// Not http(s), malformed, or an address that is not allowed.
    Refused(String),
    /// Its host name does not resolve (now).
    Unresolved(String),
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(m) | Self::Unresolved(m) => f.write_str(m),
        }
    }
}

/// Checks a webhook URL: http(s), a host, and every address it resolves to
/// one a webhook may reach ([`blocked`], with this host's addresses read now)
/// or one `allowed` lists; the reason as an error.
pub(crate) async fn check_url(url: &str, allowed: &[IpRange]) -> Result<CheckedUrl, UrlProblem> {
    use UrlProblem::{Refused, Unresolved};
    let shown: String = url.chars().take(200).collect();
    let parsed = reqwest::Url::parse(url).map_err(|e| Refused(format!("url '{shown}' is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Refused(format!("url '{shown}': the scheme must be http or https, not '{}'", parsed.scheme())));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Refused(format!("url '{shown}' must not carry credentials; use the config's authentication")));
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    let Some(name) = parsed.host_str().filter(|h| !h.is_empty()) else {
        return Err(Refused(format!("url '{shown}' has no host")));
    };
    let (host, addrs): (Option<String>, Vec<IpAddr>) = match name.trim_matches(['[', ']']).parse::<IpAddr>() {
        Ok(ip) => (None, vec![ip]),
        Err(_) => {
            let found = tokio::time::timeout(Duration::from_secs(5), tokio::net::lookup_host((name, port)))
                .await
                .map_err(|_| Unresolved(format!("url '{shown}': resolving '{name}' timed out")))?
                .map_err(|e| Unresolved(format!("url '{shown}': '{name}' does not resolve: {e}")))?;
            let mut ips: Vec<IpAddr> = found.map(|a| a.ip()).collect();
            ips.dedup();
            if ips.is_empty() {
                return Err(Unresolved(format!("url '{shown}': '{name}' resolves to no address")));
            }
            (Some(name.to_string()), ips)
        }
    };
    let own = host_addresses().map_err(|e| Refused(format!("url '{shown}' cannot be checked: {e}")))?;
    for ip in &addrs {
        if let Some(why) = blocked(*ip, &own)
            && !allowed.iter().any(|r| r.contains(*ip))
        {
            let named = host.as_ref().map(|h| format!("'{h}' resolves to {ip}, ")).unwrap_or_default();
            return Err(Refused(format!(
                "url '{shown}': {named}{why}; webhooks reach only globally routable addresses that are not this \
                 host's own (an operator may allow some with [a2a.push] allow_private)"
            )));
        }
    }
    Ok(CheckedUrl { url: parsed, host, addr: SocketAddr::new(addrs[0], port) })
}

/// Delivers the events of tasks with push configs (see the module docs).
pub(super) struct Pusher {
    store: Arc<dyn Store>,
    /// Configs are kept sealed, events redacted (their task's vault opens them).
    keeper: TaskKeeper,
    config: A2aPushConfig,
    allowed: Vec<IpRange>,
    key: PushKey,
    /// Counts since start.
    pub stats: PushStats,
    /// Tasks with a delivery loop, and whether events came since it read them.
    busy: std::sync::Mutex<HashMap<String, bool>>,
    permits: Arc<tokio::sync::Semaphore>,
}

/// What became of one event's delivery.
enum Delivery {
    Delivered(u32),
    Failed(String),
}

impl Pusher {
    /// A pusher over `store` with `config` (a bad allowance or key file is
    /// logged and left out: nothing private is allowed, the key is a fresh one).
    pub(super) fn new(store: Arc<dyn Store>, keeper: TaskKeeper, config: &A2aPushConfig) -> Self {
        let allowed = config.allowed_ranges().unwrap_or_else(|e| {
            tracing::error!("{e}: no private address is allowed");
            Vec::new()
        });
        let key = PushKey::open(config.key_file.as_deref()).unwrap_or_else(|e| {
            tracing::error!("{e}: deliveries are signed with a fresh key instead");
            PushKey::from_seed(random_seed().unwrap_or([7; 32]))
        });
        Self {
            store,
            keeper,
            config: config.clone(),
            allowed,
            key,
            stats: PushStats::default(),
            busy: Default::default(),
            permits: Arc::new(tokio::sync::Semaphore::new(MAX_DELIVERING)),
        }
    }

    /// The key that signs deliveries.
    pub(super) fn key(&self) -> &PushKey {
        &self.key
    }

    /// Checks and completes a config a client sent: the URL (SSRF), the
    /// token and authentication (header-safe), an id when it has none.
    pub(super) async fn prepare(
        &self,
        mut c: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        if c.url.trim().is_empty() {
            return Err(A2aError::invalid_params("the push notification config needs a url"));
        }
        match check_url(c.url.trim(), &self.allowed).await {
            Ok(_) => {}
            // a name that resolves nowhere yet reaches nothing: each delivery checks it again
            Err(UrlProblem::Unresolved(why)) => tracing::info!("push config accepted although {why}"),
            Err(UrlProblem::Refused(why)) => return Err(A2aError::invalid_params(why)),
        }
        c.url = c.url.trim().to_string();
        if c.id.is_empty() {
            c.id = uuid::Uuid::new_v4().to_string();
        } else if c.id.len() > 256 || c.id.chars().any(char::is_control) {
            return Err(A2aError::invalid_params("the push notification config's id must be 1 to 256 characters"));
        }
        if c.token.len() > 4096 || reqwest::header::HeaderValue::from_str(&c.token).is_err() {
            return Err(A2aError::invalid_params("token must be printable text of at most 4096 characters"));
        }
        if let Some(a) = &c.authentication {
            let token_chars = |s: &str| {
                !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            };
            if !token_chars(&a.scheme) {
                return Err(A2aError::invalid_params(
                    "authentication.scheme must be an HTTP authentication scheme such as Bearer or Basic",
                ));
            }
            if a.credentials.len() > 8192
                || reqwest::header::HeaderValue::from_str(&format!("{} {}", a.scheme, a.credentials)).is_err()
            {
                return Err(A2aError::invalid_params("authentication.credentials must be printable text"));
            }
        }
        Ok(c)
    }

    /// Stores a prepared config of task `task_id`; its deliveries start
    /// after event `after`. At most [`MAX_PUSH_CONFIGS_PER_TASK`] per task.
    pub(super) async fn save(
        &self,
        mut c: TaskPushNotificationConfig,
        task_id: &str,
        after: i64,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        c.task_id = task_id.to_string();
        let existing = self.store.a2a_push_configs(task_id).await.map_err(store_error)?;
        if existing.len() >= MAX_PUSH_CONFIGS_PER_TASK && !existing.iter().any(|e| e.id == c.id) {
            return Err(A2aError::invalid_params(format!(
                "task '{task_id}' has {MAX_PUSH_CONFIGS_PER_TASK} push notification configs already; delete one first"
            )));
        }
        let record = A2aPushConfigRecord {
            task_id: task_id.to_string(),
            id: c.id.clone(),
            config: serde_json::to_string(&c).unwrap_or_default(),
            created_at: now_ms(),
            delivered_seq: after,
            failures: 0,
            last_error: None,
        };
        self.store.put_a2a_push_config(&self.keeper.push_config(record)).await.map_err(store_error)?;
        Ok(c)
    }

    /// The task's configs as the client sees them.
    pub(super) async fn configs(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2aError> {
        let records = self.store.a2a_push_configs(task_id).await.map_err(store_error)?;
        Ok(records
            .iter()
            .filter_map(|r| self.keeper.open_push_config(r))
            .filter_map(|c| serde_json::from_str(&c).ok())
            .collect())
    }

    /// Events of `task_id` were stored: deliver them (in the background).
    pub(super) fn notify(self: &Arc<Self>, task_id: &str) {
        {
            let mut busy = lock(&self.busy);
            if let Some(dirty) = busy.get_mut(task_id) {
                *dirty = true;
                return;
            }
            if busy.len() >= MAX_PENDING {
                tracing::warn!(
                    task = task_id,
                    "too many A2A tasks with push deliveries pending; this one waits for its next event"
                );
                return;
            }
            busy.insert(task_id.to_string(), false);
        }
        let (pusher, task) = (self.clone(), task_id.to_string());
        tokio::spawn(async move {
            let Ok(_permit) = pusher.permits.clone().acquire_owned().await else { return };
            loop {
                pusher.deliver_task(&task).await;
                let mut busy = lock(&pusher.busy);
                match busy.get_mut(&task) {
                    Some(dirty) if *dirty => *dirty = false,
                    _ => {
                        busy.remove(&task);
                        break;
                    }
                }
            }
        });
    }

    async fn deliver_task(&self, task: &str) {
        let configs = match self.store.a2a_push_configs(task).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(task, error = %e, "the push configs of an A2A task could not be read");
                return;
            }
        };
        futures::future::join_all(configs.into_iter().map(|c| self.deliver_config(task, c))).await;
    }

    /// Sends the task's events after the config's cursor, in order.
    async fn deliver_config(&self, task: &str, record: A2aPushConfigRecord) {
        let opened = self.keeper.open_push_config(&record);
        let Some(config) = opened.and_then(|c| serde_json::from_str::<TaskPushNotificationConfig>(&c).ok()) else {
            tracing::warn!(task, config = %record.id, "a stored push config could not be read (or opened with this key)");
            return;
        };
        // the events are kept redacted: the task's vault gives the webhook the values the task holds
        let vault = match self.store.a2a_task(task).await {
            Ok(Some(t)) => self.keeper.vault_of(&t),
            _ => Default::default(),
        };
        let mut cursor = record.delivered_seq;
        loop {
            let events = match self.store.a2a_events(task, cursor, 100).await {
                Ok(e) if !e.is_empty() => self.keeper.open_events(e, &vault),
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(task, error = %e, "the events of an A2A task could not be read for delivery");
                    return;
                }
            };
            for event in events {
                match self.store.claim_a2a_push(task, &record.id, cursor, event.seq).await {
                    Ok(true) => cursor = event.seq,
                    // deleted, or another process took it
                    Ok(false) => return,
                    Err(e) => {
                        tracing::warn!(task, error = %e, "a push delivery could not be claimed");
                        return;
                    }
                }
                match self.post(&config, &event).await {
                    Delivery::Delivered(tries) => {
                        self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(task, config = %record.id, seq = event.seq, tries, "A2A push notification delivered");
                    }
                    Delivery::Failed(why) => {
                        self.stats.failed.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(task, config = %record.id, seq = event.seq, error = %why, "A2A push notification not delivered");
                        let note = format!("event {}: {why}", event.seq);
                        let note = crate::redact::Redactor::default().redacted(note, &mut Default::default());
                        if let Err(e) = self.store.a2a_push_failed(task, &record.id, &note).await {
                            tracing::warn!(task, error = %e, "a failed push delivery could not be recorded");
                        }
                    }
                }
            }
        }
    }

    /// POSTs one event, with retries.
    async fn post(&self, c: &TaskPushNotificationConfig, event: &A2aEventRecord) -> Delivery {
        let attempts = self.config.max_attempts.max(1);
        let mut last = String::new();
        for attempt in 1..=attempts {
            if attempt > 1 {
                self.stats.retried.fetch_add(1, Ordering::Relaxed);
                let wait = self.config.retry_base_ms.saturating_mul(1 << (attempt - 2).min(16));
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            // checked again each time: what the name resolves to may have changed
            let checked = match check_url(&c.url, &self.allowed).await {
                Ok(c) => c,
                Err(UrlProblem::Refused(e)) => return Delivery::Failed(format!("refused: {e}")),
                Err(UrlProblem::Unresolved(e)) => {
                    last = e;
                    continue;
                }
            };
            let client = match client(&checked, Duration::from_millis(self.config.timeout_ms)) {
                Ok(c) => c,
                Err(e) => return Delivery::Failed(e),
            };
            let body = event.event.clone().into_bytes();
            let signature = self.key.sign(&body, &event.task_id, event.seq, now_ms() / 1000);
            let mut req = client
                .post(checked.url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/a2a+json")
                .header(SIGNATURE_HEADER, signature);
            if !c.token.is_empty() {
                req = req.header(TOKEN_HEADER, c.token.clone());
            }
            if let Some(a) = &c.authentication {
                req = req.header(reqwest::header::AUTHORIZATION, format!("{} {}", a.scheme, a.credentials));
            }
            match req.body(body).send().await {
                Ok(r) if r.status().is_success() => return Delivery::Delivered(attempt),
                Ok(r) if r.status().is_server_error() || r.status().as_u16() == 429 => {
                    last = format!("HTTP {}", r.status().as_u16());
                }
                Ok(r) => return Delivery::Failed(format!("HTTP {} (not retried)", r.status().as_u16())),
                Err(e) if e.is_timeout() => last = "timed out".into(),
                Err(e) => last = format!("could not connect: {e}"),
            }
        }
        Delivery::Failed(format!("{last}, after {attempts} tries"))
    }
}

/// A client that connects only to the checked address.
fn client(checked: &CheckedUrl, timeout: Duration) -> Result<reqwest::Client, String> {
    crate::util::install_tls();
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .timeout(timeout);
    if let Some(host) = &checked.host {
        b = b.resolve(host, checked.addr);
    }
    b.build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}

pub(super) fn store_error(e: crate::store::StoreError) -> A2aError {
    A2aError::new(Kind::Internal, format!("the push config store is unavailable ({e}); retry later"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn urls_are_checked_with_their_reason_and_allowances_apply() {
        let none: Vec<IpRange> = Vec::new();
        for (url, why) in [
            ("ftp://example.com/x", "scheme must be http or https"),
            ("http://127.0.0.1:9/x", "loopback"),
            ("http://[::1]:9/x", "loopback"),
            ("http://10.1.2.3/x", "private"),
            ("http://169.254.169.254/latest/meta-data", "link-local"),
            ("http://localhost:9/x", "'localhost' resolves to"),
            ("http://u:p@example.com/", "credentials"),
            ("not a url", "not a URL"),
        ] {
            let e = check_url(url, &none).await.unwrap_err().to_string();
            assert!(e.contains(why), "{url}: {e}");
        }
        let allow = vec![IpRange::parse("127.0.0.1").unwrap()];
        let ok = check_url("http://127.0.0.1:9/hook", &allow).await.unwrap();
        assert_eq!(ok.addr, "127.0.0.1:9".parse().unwrap());
        assert!(check_url("http://127.0.0.2:9/hook", &allow).await.is_err(), "only what is listed");
        let unknown = check_url("http://no-such-host.invalid/hook", &none).await.unwrap_err();
        assert!(matches!(unknown, UrlProblem::Unresolved(_)), "{unknown}");
    }

    #[tokio::test]
    async fn special_purpose_embedded_and_the_hosts_own_addresses_are_refused() {
        let none: Vec<IpRange> = Vec::new();
        for host in [
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "192.88.99.1",
            "192.0.0.170",
            "[2001:db8::1]",
            "[3fff::1]",
            "[100::1]",
            "[fec0::1]",
            "[5f00::1]",
            "[2001:2::1]",
            "[::7f00:1]",
            "[::a00:1]",
            "[2002:7f00:1::1]",
            "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
            "[64:ff9b:1::a00:1]",
            "[64:ff9b::c000:201]",
        ] {
            let url = format!("http://{host}:9/hook");
            assert!(check_url(&url, &none).await.is_err(), "{url} is not globally routable");
        }
        let own = host_addresses().unwrap();
        assert!(own.contains(&"127.0.0.1".parse().unwrap()), "the interfaces were read: {own:?}");
        for ip in own {
            let url = format!("http://{}/hook", SocketAddr::new(ip, 9));
            assert!(check_url(&url, &none).await.is_err(), "{url} is this host's own address");
        }
    }

    #[test]
    fn a_signature_verifies_with_the_published_key_and_not_for_another_body() {
        use ed25519_dalek::{Signature, Verifier, VerifyingKey};
        let key = PushKey::from_seed([3; 32]);
        let jws = key.sign(b"{\"statusUpdate\":{}}", "t1", 4, 1_700_000_000);
        let jwks = key.jwks();
        let x = URL_SAFE_NO_PAD.decode(jwks["keys"][0]["x"].as_str().unwrap()).unwrap();
        let public = VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
        let (header, sig) = jws.split_once("..").unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).unwrap()).unwrap();
        let input = |body: &[u8]| format!("{header}.{}", URL_SAFE_NO_PAD.encode(body));
        assert!(public.verify(input(b"{\"statusUpdate\":{}}").as_bytes(), &sig).is_ok());
        assert!(public.verify(input(b"{\"statusUpdate\":{\"x\":1}}").as_bytes(), &sig).is_err());
        let h: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
        assert_eq!(
            (h["alg"].as_str(), h["kid"].as_str(), h["a2aEventSeq"].as_i64()),
            (Some("EdDSA"), Some(key.kid()), Some(4))
        );
    }

    #[test]
    fn a_key_file_is_made_once_and_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("push.key");
        let one = PushKey::open(Some(&path)).unwrap();
        let two = PushKey::open(Some(&path)).unwrap();
        assert_eq!(one.kid(), two.kid());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&path, "garbage!").unwrap();
        assert!(PushKey::open(Some(&path)).unwrap_err().contains("not base64"));
    }
}
