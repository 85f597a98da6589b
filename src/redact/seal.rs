//! A vault sealed for the journal: a tree's token ↔ value table, encrypted
//! (ChaCha20-Poly1305) under a key that lives outside the store, so that a
//! tree resumed after a restart gives the user their values back while the
//! database (and its backups) holds only tokens and ciphertext. Without the
//! key (a lost or another key file, a runtime with a key of its own) a
//! sealed vault does not open: the tokens stay tokens, never another value.

use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

use super::Vault;
use super::vault::VaultParts;

/// What a sealed vault starts with: the format's version.
const PREFIX: &str = "v1.";
const NONCE_LEN: usize = 12;

/// The key vaults are sealed with.
#[derive(Clone)]
pub struct SealKey(Key);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// A key of this process only: what it seals opens in this process only.
    pub fn random() -> Self {
        Self(random_bytes::<32>().into())
    }

    /// The key in `path` (64 hex digits), made (0600, its directory 0700)
    /// when there is no file yet. Two processes that make it at once end up
    /// with the same key: the first one's.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        for _ in 0..50 {
            match std::fs::read_to_string(path) {
                Ok(text) if text.trim().is_empty() => {} // being written by another process
                Ok(text) => return Self::parse(text.trim()).map_err(|e| format!("pii seal key file '{shown}': {e}")),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Self::create(path).map_err(|e| format!("pii seal key file '{shown}': cannot create it: {e}"))?;
                    continue;
                }
                Err(e) => return Err(format!("pii seal key file '{shown}': {e}")),
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(format!("pii seal key file '{shown}' stays empty; remove it to make a new key"))
    }

    fn parse(text: &str) -> Result<Self, String> {
        let bytes = hex::decode(text).map_err(|_| "it must hold 64 hex digits (32 bytes)".to_string())?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| "it must hold 64 hex digits (32 bytes)".to_string())?;
        Ok(Self(key.into()))
    }

    fn create(path: &Path) -> std::io::Result<()> {
        // the directories it makes are its own (0700); one that exists is left as it is
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut make = std::fs::DirBuilder::new();
            make.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                make.mode(0o700);
            }
            make.create(dir)?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = match options.open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()), // another process made it
            Err(e) => return Err(e),
        };
        file.write_all(hex::encode(random_bytes::<32>()).as_bytes())?;
        file.sync_all()
    }

    /// `vault` sealed: `v1.` and the base64 of a fresh nonce and the ciphertext.
    pub fn seal(&self, vault: &Vault) -> String {
        self.seal_bytes(&serde_json::to_vec(&vault.parts()).unwrap_or_default())
    }

    /// `value` with every text sealed (ciphertext, as a vault is): for what
    /// must come back exactly as it was and holds a person's data or a
    /// credential (a push config's webhook and token), where a token in
    /// place of a value would break it. [`SealKey::open_text`] reads one back.
    pub fn sealed<T: super::Texts>(&self, mut value: T) -> super::Redacted<T> {
        value.texts(&mut |text| match text {
            super::Text::Plain(s) | super::Text::Json(s) => *s = self.seal_bytes(s.as_bytes()),
            super::Text::Value(v) => *v = serde_json::Value::String(self.seal_bytes(v.to_string().as_bytes())),
        });
        super::Redacted::made(value)
    }

    /// A text [`SealKey::sealed`] sealed, None when another key sealed it or it is damaged.
    pub fn open_text(&self, sealed: &str) -> Option<String> {
        String::from_utf8(self.open_bytes(sealed)?).ok()
    }

    fn seal_bytes(&self, plain: &[u8]) -> String {
        let nonce = random_bytes::<NONCE_LEN>();
        let sealed = ChaCha20Poly1305::new(&self.0).encrypt(&Nonce::from(nonce), plain).expect("sealing in memory");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{PREFIX}{}", B64.encode(out))
    }

    /// The vault `sealed` holds, None when it was sealed with another key or is damaged.
    pub fn open(&self, sealed: &str) -> Option<Vault> {
        Vault::from_parts(serde_json::from_slice::<VaultParts>(&self.open_bytes(sealed)?).ok()?)
    }

    fn open_bytes(&self, sealed: &str) -> Option<Vec<u8>> {
        let bytes = B64.decode(sealed.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, body) = bytes.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
        ChaCha20Poly1305::new(&self.0).decrypt(&Nonce::from(nonce), body).ok()
    }
}

/// `N` bytes from the operating system's random source (which does not fail on the systems this runs on).
fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Redactor;

    #[test]
    fn a_sealed_vault_opens_with_its_key_only_and_restores_the_same_values() {
        let redactor = Redactor::new();
        let mut vault = Vault::new();
        let text = redactor.redact("Mail Ann@Example.com or call (415) 555-2671; not <EMAIL_7>", &mut vault);
        let key = SealKey::random();
        let sealed = key.seal(&vault);
        // the values themselves ('-' and '@' are not base64: no match by chance)
        assert!(
            sealed.starts_with(PREFIX)
                && !sealed.contains("555-2671")
                && !sealed.to_lowercase().contains("ann@example.com")
        );
        let opened = key.open(&sealed).unwrap();
        assert_eq!(opened.restore(&text), vault.restore(&text));
        assert!(opened.restore(&text).contains("Ann@Example.com"), "{}", opened.restore(&text));
        // the same value gets the same token after opening; a reserved literal stays reserved
        let mut again = opened;
        let more = redactor.redact("ann@example.com and bob@example.com", &mut again);
        assert!(more.starts_with("<EMAIL_1> and <EMAIL_2>"), "{more}");
        assert!(!more.contains("<EMAIL_7>"));

        assert!(SealKey::random().open(&sealed).is_none(), "another key opens nothing");
        let mut damaged = sealed.clone();
        damaged.pop();
        assert!(key.open(&damaged).is_none() && key.open("garbage").is_none() && key.open("v1.").is_none());
    }

    #[test]
    fn a_key_file_is_made_once_and_read_back_and_a_bad_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys").join("pii-seal.key");
        let first = SealKey::from_file(&path).unwrap();
        let vault = {
            let mut v = Vault::new();
            Redactor::new().redact("ann@example.com", &mut v);
            v
        };
        let sealed = first.seal(&vault);
        assert!(SealKey::from_file(&path).unwrap().open(&sealed).is_some(), "the same key, read back");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            let made = dir.path().join("keys");
            assert_eq!(std::fs::metadata(&made).unwrap().permissions().mode() & 0o777, 0o700, "the directory it made");
            // a directory that exists keeps its mode
            let shared = dir.path().join("srv");
            std::fs::create_dir(&shared).unwrap();
            std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
            SealKey::from_file(&shared.join("pii-seal.key")).unwrap();
            assert_eq!(std::fs::metadata(&shared).unwrap().permissions().mode() & 0o777, 0o755);
        }
        std::fs::write(&path, "not hex").unwrap();
        let e = SealKey::from_file(&path).unwrap_err();
        assert!(e.contains("64 hex digits") && e.contains("pii-seal.key"), "{e}");
    }
}
