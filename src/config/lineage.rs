//! `[lineage]` and `[[trust]]`: this runtime's name and signing keys for
//! delegation lineage tokens, and the peer runtimes whose keys it trusts
//! (issue 16; the tokens themselves are `crate::lineage`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[lineage]`: who this runtime is when it signs a hop, and where its keys live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineageConfig {
    /// This runtime's name: the `issuer` of the hops it signs and the
    /// `audience` a token sent to it must name (1-64 letters, digits, `.`, `_`, `-`).
    #[serde(default = "default_name")]
    pub name: String,
    /// The directory of its Ed25519 keys, made (0700) with a first key at
    /// first use. A relative path is relative to the working directory.
    #[serde(default = "default_key_dir")]
    pub key_dir: PathBuf,
    /// How long a rotated key keeps verifying, in hours (default: 7 days).
    #[serde(default = "default_keep_hours")]
    pub keep_rotated_keys_hours: u64,
    /// The format of the tokens this runtime starts (docs/LINEAGE.md): 2,
    /// the default, signs once per runtime; 1 signs every block, and is
    /// what Switchboards before 2026-11-28 read (set it while such peers
    /// still receive from this one). A token received is extended in its
    /// own version.
    #[serde(default = "default_token_version")]
    pub token_version: u8,
}

impl Default for LineageConfig {
    fn default() -> Self {
        Self {
            name: default_name(),
            key_dir: default_key_dir(),
            keep_rotated_keys_hours: default_keep_hours(),
            token_version: default_token_version(),
        }
    }
}

fn default_token_version() -> u8 {
    2
}

/// A runtime's name: 1-64 letters, digits, `.`, `_` or `-`.
pub(crate) fn valid_runtime_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

fn default_name() -> String {
    "switchboard".into()
}

fn default_key_dir() -> PathBuf {
    PathBuf::from("switchboard-keys")
}

fn default_keep_hours() -> u64 {
    7 * 24
}

/// One trusted peer key, as configured:
///
/// ```toml
/// [[trust]]
/// name = "runtime-b"
/// public_key = "base64 of the 32-byte Ed25519 public key"
/// may_call = ["byte-doc"]      # our agents it may call; "*" for any
/// may_start_trees = false      # whether its root tokens are accepted
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustEntry {
    /// The peer runtime's name: the `issuer` its hops carry.
    pub name: String,
    /// Its Ed25519 public key, 32 bytes in base64 (standard).
    pub public_key: String,
    /// Our agents it may call as the last hop of a token; `"*"` for any.
    #[serde(default)]
    pub may_call: Vec<String>,
    /// Whether a token may start (have its root block signed) at this peer.
    #[serde(default)]
    pub may_start_trees: bool,
    /// When the key stops being trusted, in ms since the epoch; None: never.
    #[serde(default)]
    pub expires_ms: Option<u64>,
}
