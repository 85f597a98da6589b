//! A runtime's [`Authority`]: its signing keys and the peers it trusts, as
//! configured (`[lineage]`, `[[trust]]`). It verifies the tokens that come
//! in and signs the hops that go out.
//!
//! The key directory is opened at first use (a runtime that never sends nor
//! receives a token makes no key), and read again when another process
//! (`switchboard keys --rotate`) changed which key signs: a rotation takes
//! effect in a running service within a second, without a restart, and the
//! old key keeps verifying until it expires.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::{Claims, Fault, Hop, KeyRing, LineageError, Relay, ReplyCheck, Token, TrustStore, now_ms};
use crate::config::{LineageConfig, TrustEntry};
use crate::protocol::RequestId;
use crate::util::lock;

/// How often the key directory is looked at for a rotation.
const RECHECK: Duration = Duration::from_secs(1);

/// This runtime's keys and trusted peers.
pub struct Authority {
    name: String,
    dir: PathBuf,
    peers: Vec<TrustEntry>,
    token_version: u8,
    state: RwLock<Option<Opened>>,
    checked: Mutex<Option<Instant>>,
}

#[derive(Clone)]
struct Opened {
    ring: Arc<KeyRing>,
    trust: Arc<TrustStore>,
    current: Option<String>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").field("name", &self.name).field("dir", &self.dir).finish_non_exhaustive()
    }
}

fn unusable(dir: &std::path::Path, e: impl std::fmt::Display) -> LineageError {
    LineageError::new(Fault::Keys, format!("lineage.key_dir '{}': {e}", dir.display()))
}

impl Authority {
    /// The authority `config` and `peers` describe; the peers' keys are
    /// checked now, the key directory is opened when first needed.
    pub fn new(config: &LineageConfig, peers: &[TrustEntry]) -> Result<Self, String> {
        TrustStore::from_entries(config.name.clone(), peers)?;
        Ok(Self {
            name: config.name.clone(),
            dir: config.key_dir.clone(),
            peers: peers.to_vec(),
            token_version: config.token_version,
            state: RwLock::new(None),
            checked: Mutex::new(None),
        })
    }

    /// This runtime's name: the issuer of its hops, the audience of hops to it.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn current_file(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("current")).ok().map(|s| s.trim().to_string())
    }

    fn open(&self) -> Result<Opened, LineageError> {
        let ring = KeyRing::open(&self.dir, self.name.clone(), now_ms())
            .map_err(|e| unusable(&self.dir, e))?
            .with_token_version(self.token_version);
        let mut trust = TrustStore::from_entries(self.name.clone(), &self.peers).map_err(|e| unusable(&self.dir, e))?;
        trust.trust_ring(&ring).map_err(|e| unusable(&self.dir, e))?;
        Ok(Opened { ring: Arc::new(ring), trust: Arc::new(trust), current: self.current_file() })
    }

    /// The keys and trust in force: opened at first use, opened again when
    /// the directory's `current` key changed (looked at once a second).
    /// Opening is serialized: two first uses at once must not each make a
    /// first key, or one of them would sign with a key nobody keeps.
    fn opened(&self) -> Result<Opened, LineageError> {
        let mut checked = lock(&self.checked);
        let due = checked.is_none_or(|t| t.elapsed() >= RECHECK);
        let held = self.state.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(o) = held
            && (!due || o.current == self.current_file())
        {
            if due {
                *checked = Some(Instant::now());
            }
            return Ok(o);
        }
        let o = self.open()?;
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = Some(o.clone());
        *checked = Some(Instant::now());
        Ok(o)
    }

    /// Verifies a token sent to this runtime: its chain, against the peers'
    /// keys and our own; the token and its last hop's claims.
    pub fn verify(&self, text: &str) -> Result<(Token, Claims), LineageError> {
        let token = Token::decode(text)?;
        let verified = token.verify(&self.opened()?.trust, now_ms())?;
        Ok((token, verified.claims))
    }

    /// The signature of answer `body` to delegation `id`, with this
    /// runtime's signing key (a worker's answers; see `lineage::reply`).
    pub fn sign_reply(&self, id: RequestId, body: &[u8]) -> Result<String, LineageError> {
        super::reply::sign(&self.opened()?.ring, id, body)
    }

    /// Whether this runtime checks the answers of the runtime `peer`: a
    /// `[[trust]]` entry names it (its own keys do not count: a worker fleet
    /// may share its name with keys of its own).
    pub fn checks_answers_of(&self, peer: &str) -> bool {
        self.peers.iter().any(|t| t.name == peer)
    }

    /// Checks that answer `body` to delegation `id` was signed by the runtime
    /// `peer`: required when a `[[trust]]` entry names `peer`.
    pub fn check_reply(
        &self,
        peer: &str,
        id: RequestId,
        body: &[u8],
        signature: Option<&str>,
    ) -> Result<ReplyCheck, LineageError> {
        if !self.checks_answers_of(peer) {
            return Ok(ReplyCheck::Unchecked);
        }
        super::reply::check(&self.opened()?.trust, peer, id, body, signature, now_ms())?;
        Ok(ReplyCheck::Signed)
    }

    /// The token that relays `hop`'s delegation to another runtime (see [`Hop::relay`]).
    pub fn relay(&self, hop: &Hop, next: Relay<'_>) -> Result<String, LineageError> {
        Ok(hop.relay(&self.opened()?.ring, next)?.encode())
    }
}
