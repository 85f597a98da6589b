//! This runtime's Ed25519 keys: generated at first start into a directory,
//! one file per key, rotatable; a rotated key keeps verifying until its
//! expiry, written beside it.
//!
//! Directory layout (docs/LINEAGE.md "Keys on disk"):
//! - `<key id>.key`: the 32-byte secret seed, base64 (standard), mode 0600;
//! - `<key id>.expires`: for a rotated key only, its expiry in ms since the epoch;
//! - `current`: the id of the key that signs.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use super::{Claims, Fault, LineageError, Token, valid_name};

/// A key's id: the first 8 bytes of sha256(public key), shown as 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub [u8; 8]);

impl KeyId {
    /// The id of `key`.
    pub fn of(key: &VerifyingKey) -> Self {
        let digest = Sha256::digest(key.as_bytes());
        let mut id = [0; 8];
        id.copy_from_slice(&digest[..8]);
        Self(id)
    }

    /// Parses 16 hex digits.
    pub fn parse(s: &str) -> Option<Self> {
        let bytes = hex::decode(s).ok()?;
        Some(Self(bytes.try_into().ok()?))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// A public key of this runtime, to hand to peers (`[[trust]] public_key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyInfo {
    /// Its id.
    pub id: KeyId,
    /// The 32-byte public key, base64 (standard).
    pub public_key: String,
    /// None for the current key; for a rotated one, when it stops verifying.
    pub expires_ms: Option<u64>,
    /// A staged key: it signs after the next rotation (give it to peers now).
    pub staged: bool,
}

struct LocalKey {
    id: KeyId,
    key: SigningKey,
    expires_ms: Option<u64>,
}

/// This runtime's name and signing keys: the last one signs, the others
/// (rotated) only verify until they expire.
pub struct KeyRing {
    name: String,
    keys: Vec<LocalKey>,
    /// The next signing key, made ahead ([`KeyRing::stage`]) so that peers
    /// trust it before it signs; it signs nothing until [`KeyRing::rotate`].
    staged: Option<LocalKey>,
    dir: Option<PathBuf>,
    /// The token version of the trees it starts (`[lineage] token_version`).
    version: u8,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // never the secrets
        f.debug_struct("KeyRing").field("name", &self.name).field("current", &self.current_id()).finish()
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

fn fresh_secret() -> io::Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| io::Error::other(format!("no randomness for a new key: {e}")))?;
    Ok(seed)
}

impl KeyRing {
    /// A ring in memory with one key from `seed` (tests, benches, a process
    /// that keeps no keys on disk).
    pub fn from_seed(name: impl Into<String>, seed: [u8; 32]) -> io::Result<Self> {
        let name = name.into();
        if !valid_name(&name) {
            return Err(invalid(format!(
                "'{}' is not a runtime name: 1-64 letters, digits, '.', '_' or '-'",
                name.escape_debug()
            )));
        }
        let key = SigningKey::from_bytes(&seed);
        Ok(Self {
            name,
            keys: vec![LocalKey { id: KeyId::of(&key.verifying_key()), key, expires_ms: None }],
            staged: None,
            dir: None,
            version: 2,
        })
    }

    /// A ring in memory with a fresh random key.
    pub fn generate(name: impl Into<String>) -> io::Result<Self> {
        Self::from_seed(name, fresh_secret()?)
    }

    /// The ring kept in `dir`: its keys loaded (rotated ones past their expiry
    /// are deleted), or a first key generated and written when there is none.
    pub fn open(dir: &Path, name: impl Into<String>, now_ms: u64) -> io::Result<Self> {
        let mut ring = Self::from_seed(name, [0; 32])?;
        ring.keys.clear();
        create_private_dir(dir)?;
        let current = match fs::read_to_string(dir.join("current")) {
            Ok(s) => Some(
                KeyId::parse(s.trim()).ok_or_else(|| invalid(format!("{}/current: not a key id", dir.display())))?,
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let next = match fs::read_to_string(dir.join("next")) {
            Ok(s) => KeyId::parse(s.trim()).filter(|id| Some(*id) != current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "key"))
            .collect();
        entries.sort();
        for path in entries {
            let key = read_key(&path)?;
            if Some(key.id) == next {
                ring.staged = Some(key);
                continue;
            }
            let expires_ms = read_expiry(&path.with_extension("expires"))?;
            // a key that is not the signing key and has no expiry was written
            // by a rotation that stopped before `current` named it: it never
            // signed anything, so it goes (else it would verify forever)
            let unfinished = expires_ms.is_none() && current.is_some();
            if (unfinished || expires_ms.is_some_and(|e| e <= now_ms)) && Some(key.id) != current {
                fs::remove_file(&path)?;
                match fs::remove_file(path.with_extension("expires")) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
                continue;
            }
            ring.keys.push(LocalKey { expires_ms, ..key });
        }
        match current {
            Some(id) => {
                let at = ring.keys.iter().position(|k| k.id == id);
                let at =
                    at.ok_or_else(|| invalid(format!("{}/current names key {id}, which is missing", dir.display())))?;
                let mut key = ring.keys.remove(at);
                key.expires_ms = None;
                ring.keys.push(key);
            }
            None if ring.keys.is_empty() => {
                let key = SigningKey::from_bytes(&fresh_secret()?);
                ring.keys.push(LocalKey { id: KeyId::of(&key.verifying_key()), key, expires_ms: None });
                write_key(dir, &ring.keys[0])?;
                write_private(&dir.join("current"), ring.keys[0].id.to_string().as_bytes())?;
            }
            None => {
                return Err(invalid(format!("{}: keys but no 'current' file naming the signing key", dir.display())));
            }
        }
        ring.dir = Some(dir.to_path_buf());
        Ok(ring)
    }

    /// Makes a new key the signing key; the previous one keeps verifying for
    /// `keep_old_for` (e.g. 7 days). Written to the ring's directory, if any,
    /// in an order that survives a crash at any step.
    pub fn rotate(&mut self, now_ms: u64, keep_old_for: Duration) -> io::Result<KeyId> {
        let staged = self.staged.take();
        let was_staged = staged.is_some();
        let new = match staged {
            Some(k) => k,
            None => {
                let key = SigningKey::from_bytes(&fresh_secret()?);
                LocalKey { id: KeyId::of(&key.verifying_key()), key, expires_ms: None }
            }
        };
        let expires = now_ms.saturating_add(u64::try_from(keep_old_for.as_millis()).unwrap_or(u64::MAX));
        if let Some(dir) = &self.dir {
            if !was_staged {
                write_key(dir, &new)?;
            }
            if let Some(old) = self.keys.last() {
                write_private(&dir.join(format!("{}.expires", old.id)), expires.to_string().as_bytes())?;
            }
            write_private(&dir.join("current"), new.id.to_string().as_bytes())?;
            // a `next` naming the current key is ignored at open; gone is tidier
            match fs::remove_file(dir.join("next")) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        if let Some(old) = self.keys.last_mut() {
            old.expires_ms = Some(expires);
        }
        let id = new.id;
        self.keys.push(new);
        Ok(id)
    }

    /// Makes the next signing key now (or returns the one already made),
    /// without signing with it: peers add it to their `[[trust]]` first, and
    /// the [`KeyRing::rotate`] after that loses no request.
    pub fn stage(&mut self) -> io::Result<KeyId> {
        if let Some(k) = &self.staged {
            return Ok(k.id);
        }
        let key = SigningKey::from_bytes(&fresh_secret()?);
        let next = LocalKey { id: KeyId::of(&key.verifying_key()), key, expires_ms: None };
        if let Some(dir) = &self.dir {
            write_key(dir, &next)?;
            write_private(&dir.join("next"), next.id.to_string().as_bytes())?;
        }
        let id = next.id;
        self.staged = Some(next);
        Ok(id)
    }

    /// This runtime's name: the `issuer` of the hops it signs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The id of the signing key.
    pub fn current_id(&self) -> Option<KeyId> {
        self.keys.last().map(|k| k.id)
    }

    /// Every key that still verifies, the signing key last among them, then
    /// the staged key if there is one.
    pub fn public_keys(&self) -> Vec<PublicKeyInfo> {
        let staged = self.staged.iter().map(|k| (k, true));
        self.keys
            .iter()
            .map(|k| (k, false))
            .chain(staged)
            .map(|(k, staged)| PublicKeyInfo {
                id: k.id,
                public_key: STANDARD.encode(k.key.verifying_key().as_bytes()),
                expires_ms: k.expires_ms,
                staged,
            })
            .collect()
    }

    fn signer(&self) -> Result<(&SigningKey, KeyId), LineageError> {
        let k = self
            .keys
            .last()
            .ok_or_else(|| LineageError::new(Fault::UntrustedKey, "this runtime has no signing key"))?;
        Ok((&k.key, k.id))
    }

    /// `message` signed with the key that signs now, and that key's id.
    pub(crate) fn sign_bytes(&self, message: &[u8]) -> Result<(KeyId, [u8; 64]), LineageError> {
        use ed25519_dalek::Signer;
        let (key, id) = self.signer()?;
        Ok((id, key.sign(message).to_bytes()))
    }

    /// This ring, starting its trees' tokens in `version` (1; anything
    /// else is 2, the default).
    pub fn with_token_version(mut self, version: u8) -> Self {
        self.version = version;
        self
    }

    /// A token with no block yet, in the version this ring starts trees in.
    pub(crate) fn new_token(&self) -> Token {
        Token::empty(self.version)
    }

    /// The token of a tree's first hop. Refused unless `claims` is a root
    /// (no parent, depth 0, tree = request) and well formed; the issuer is
    /// set to this runtime.
    pub fn mint_root(&self, claims: Claims) -> Result<Token, LineageError> {
        let root = self.checked_root(claims)?;
        self.seal(&self.new_token(), &[&root])
    }

    /// `parent` with one more hop, `child`, signed by this runtime (the
    /// issuer is set to it). Refused, and nothing produced, when `child`
    /// widens the parent's last hop in any way or is not well formed, or when
    /// the parent's last hop was not sent to this runtime.
    pub fn attenuate(&self, parent: &Token, child: Claims) -> Result<Token, LineageError> {
        claims_of_last(parent).and_then(|prev| self.extend(parent, &prev, child))
    }

    /// [`KeyRing::attenuate`] when the parent's last claims, `prev`, are at
    /// hand (they are not parsed from the token again).
    pub(crate) fn extend(&self, parent: &Token, prev: &Claims, child: Claims) -> Result<Token, LineageError> {
        let child = self.checked_child(prev, child)?;
        self.seal(parent, &[&child])
    }

    /// `claims` as this runtime would sign them as a tree's root: the issuer
    /// set to it, the form and the root rules checked; nothing signed.
    pub(crate) fn checked_root(&self, mut claims: Claims) -> Result<Claims, LineageError> {
        claims.issuer = self.name.clone();
        claims.check_form()?;
        claims.check_root()?;
        Ok(claims)
    }

    /// `child` as this runtime would sign it after `prev`: the issuer set to
    /// it, the form checked, and that it attenuates `prev`; nothing signed.
    pub(crate) fn checked_child(&self, prev: &Claims, mut child: Claims) -> Result<Claims, LineageError> {
        child.issuer = self.name.clone();
        child.check_form()?;
        child.check_attenuates(prev)?;
        Ok(child)
    }

    /// `base` with this runtime's blocks `ours` (already checked) added and
    /// signed with the key that signs now: one signature for all of them
    /// (version 2; version 1 signs each).
    pub(crate) fn seal(&self, base: &Token, ours: &[&Claims]) -> Result<Token, LineageError> {
        let (key, id) = self.signer()?;
        base.sealed(ours, key, id)
    }
}

#[cfg(test)]
impl KeyRing {
    /// What a hostile holder of this ring can do: sign any claims after
    /// `parent` with no check at all (the issuer is left as given).
    pub(crate) fn forge(&self, parent: &Token, claims: &Claims) -> Result<Token, LineageError> {
        let (key, id) = self.signer()?;
        parent.sealed(&[claims], key, id)
    }
}

fn claims_of_last(token: &Token) -> Result<Claims, LineageError> {
    token.claims()?.pop().ok_or_else(|| LineageError::new(Fault::Malformed, "the token has no block"))
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir)
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, mode 0600.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&tmp, path)
}

fn write_key(dir: &Path, key: &LocalKey) -> io::Result<()> {
    let text = format!("{}\n", STANDARD.encode(key.key.to_bytes()));
    write_private(&dir.join(format!("{}.key", key.id)), text.as_bytes())
}

fn read_key(path: &Path) -> io::Result<LocalKey> {
    let text = fs::read_to_string(path)?;
    let bad = || invalid(format!("{}: not a base64 Ed25519 secret key of 32 bytes", path.display()));
    let seed: [u8; 32] = STANDARD.decode(text.trim()).map_err(|_| bad())?.try_into().map_err(|_| bad())?;
    let key = SigningKey::from_bytes(&seed);
    let id = KeyId::of(&key.verifying_key());
    if path.file_stem().and_then(|s| s.to_str()) != Some(id.to_string().as_str()) {
        return Err(invalid(format!("{}: the file name is not the key's id {id}", path.display())));
    }
    Ok(LocalKey { id, key, expires_ms: None })
}

fn read_expiry(path: &Path) -> io::Result<Option<u64>> {
    match fs::read_to_string(path) {
        Ok(s) => s.trim().parse().map(Some).map_err(|_| invalid(format!("{}: not a time in ms", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
