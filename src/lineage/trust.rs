//! The public keys this runtime trusts, per peer (`[[trust]]` entries), and
//! its own.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha256};

use super::{Fault, KeyId, KeyRing, LineageError, valid_name};
use crate::config::TrustEntry;
use crate::protocol::AgentSlug;
use crate::util::lock;

/// A trusted key with what its holder may do.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub(crate) name: String,
    pub(crate) key: VerifyingKey,
    may_call: Vec<String>,
    pub(crate) may_start_trees: bool,
    pub(crate) expires_ms: Option<u64>,
}

impl Peer {
    pub(crate) fn may_call(&self, target: &str) -> bool {
        self.may_call.iter().any(|a| a == "*" || a == target)
    }
}

/// The keys a runtime verifies lineage tokens against, by key id, and its own
/// name: the audience a token's last hop must be addressed to.
#[derive(Debug, Clone)]
pub struct TrustStore {
    local: String,
    peers: HashMap<KeyId, Peer>,
    /// Signatures verified already, shared by the store's clones.
    seen: Arc<SeenSignatures>,
}

/// The signatures a store has verified, each as the SHA-256 of the key, the
/// signature and the signed bytes: a block that comes again (every later
/// hop of a tree carries the blocks of its first runtimes, and a fan-out
/// sends the same prefix several times) is not verified again. Ed25519
/// verification is a pure function of those three, so a hit answers as the
/// verification would; whether the key is still trusted (and unexpired) is
/// asked every time, before this. At most [`SEEN_MAX`] are kept; a full set
/// is emptied.
#[derive(Default)]
struct SeenSignatures {
    digests: Mutex<HashSet<[u8; 32]>>,
    /// Ed25519 verifications actually run (the misses).
    verified: AtomicU64,
}

/// Signatures a store remembers (32 bytes each).
const SEEN_MAX: usize = 4096;

/// How many it holds, not the digests themselves (up to [`SEEN_MAX`] of them).
impl fmt::Debug for SeenSignatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeenSignatures")
            .field("held", &lock(&self.digests).len())
            .field("verified", &self.verified.load(Ordering::Relaxed))
            .finish()
    }
}

impl TrustStore {
    /// An empty store for the runtime named `local`.
    pub fn new(local: impl Into<String>) -> Self {
        Self { local: local.into(), peers: HashMap::new(), seen: Arc::default() }
    }

    /// A store with `entries`; the error names the first bad entry.
    pub fn from_entries(local: impl Into<String>, entries: &[TrustEntry]) -> Result<Self, String> {
        let mut store = Self::new(local);
        for (i, e) in entries.iter().enumerate() {
            store.add(e).map_err(|m| format!("trust[{i}] ('{}'): {m}", e.name.escape_debug()))?;
        }
        Ok(store)
    }

    /// Trusts one more key; refuses a bad name, key or `may_call` entry.
    pub fn add(&mut self, entry: &TrustEntry) -> Result<KeyId, String> {
        if !valid_name(&entry.name) {
            return Err("name must be 1-64 letters, digits, '.', '_' or '-'".into());
        }
        let key = parse_public_key(&entry.public_key)?;
        if let Some(bad) = entry.may_call.iter().find(|a| *a != "*" && AgentSlug::parse(a.as_str()).is_err()) {
            return Err(format!("may_call: '{}' is not an agent slug or \"*\"", bad.escape_debug()));
        }
        let id = KeyId::of(&key);
        self.peers.insert(
            id,
            Peer {
                name: entry.name.clone(),
                key,
                may_call: entry.may_call.clone(),
                may_start_trees: entry.may_start_trees,
                expires_ms: entry.expires_ms,
            },
        );
        Ok(id)
    }

    /// Trusts this runtime's own keys (a hop it sends to itself, a root it
    /// starts): any agent, trees allowed, each until its expiry.
    pub fn trust_ring(&mut self, ring: &KeyRing) -> Result<(), String> {
        for k in ring.public_keys() {
            self.add(&TrustEntry {
                name: ring.name().to_string(),
                public_key: k.public_key,
                may_call: vec!["*".into()],
                may_start_trees: true,
                expires_ms: k.expires_ms,
            })?;
        }
        Ok(())
    }

    /// This runtime's name.
    pub fn local(&self) -> &str {
        &self.local
    }

    pub(crate) fn peer(&self, id: KeyId) -> Option<&Peer> {
        self.peers.get(&id)
    }

    /// The peer whose key `id` signed `what` (a token's block, an answer):
    /// refused when no entry holds that key (`UNAUTHENTICATED`) or it has
    /// expired at `now_ms`.
    pub(crate) fn signer(&self, id: KeyId, now_ms: u64, what: fmt::Arguments<'_>) -> Result<&Peer, LineageError> {
        let peer = self.peer(id).ok_or_else(|| {
            LineageError::new(Fault::UntrustedKey, format!("{what} is signed with key {id}, which is not trusted"))
        })?;
        if peer.expires_ms.is_some_and(|e| now_ms >= e) {
            return Err(LineageError::new(Fault::KeyExpired, format!("{what}'s key {id} has expired")));
        }
        Ok(peer)
    }

    /// Whether `signature` by `peer`'s key over `input` verifies (strictly):
    /// answered from the signatures verified before when it is one of them.
    pub(crate) fn signature_verifies(&self, peer: &Peer, input: &[u8], signature: &[u8; 64]) -> bool {
        let mut h = Sha256::new();
        h.update(peer.key.as_bytes());
        h.update(signature);
        h.update(input);
        let digest: [u8; 32] = h.finalize().into();
        if lock(&self.seen.digests).contains(&digest) {
            return true;
        }
        self.seen.verified.fetch_add(1, Ordering::Relaxed);
        if peer.key.verify_strict(input, &Signature::from_bytes(signature)).is_err() {
            return false;
        }
        let mut seen = lock(&self.seen.digests);
        if seen.len() >= SEEN_MAX {
            seen.clear();
        }
        seen.insert(digest);
        true
    }

    /// Ed25519 verifications this store has run (signatures it had not seen).
    pub fn signatures_verified(&self) -> u64 {
        self.seen.verified.load(Ordering::Relaxed)
    }
}

fn parse_public_key(text: &str) -> Result<VerifyingKey, String> {
    let bytes: [u8; 32] = STANDARD
        .decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("public_key must be 32 bytes in base64")?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| "public_key is not an Ed25519 public key")?;
    if key.is_weak() {
        return Err("public_key is a weak (small-order) Ed25519 key".into());
    }
    Ok(key)
}
