//! Signed answers. A worker (`switchboard worker`, the `queue` backend)
//! signs each answer it publishes with its runtime's lineage key, over the
//! delegation's id and a hash of the answer's bytes; the runtime that sent
//! the delegation checks the signature against the `[[trust]]` entry of the
//! backend's `peer` and ignores an answer that does not carry one: anyone
//! who may publish on the reply subject could otherwise answer in the
//! workers' name.
//!
//! The signature travels beside the answer (a message header), as
//! base64url without padding of the 8-byte key id and the 64-byte Ed25519
//! signature over `"switchboard-reply/1" 0x00`, the 16 bytes of the
//! delegation's id and sha256 of the answer's bytes (docs/LINEAGE.md
//! "Signed answers").

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signature;
use sha2::{Digest, Sha256};

use super::{Fault, KeyId, KeyRing, LineageError, TrustStore};
use crate::protocol::RequestId;

/// What every answer's signature input starts with.
const DOMAIN: &[u8] = b"switchboard-reply/1\0";

/// How an answer's signature stood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyCheck {
    /// Signed by a trusted key of the expected peer.
    Signed,
    /// Not checked: no `[[trust]]` entry names the peer (its own keys do not
    /// count: a worker fleet may share this runtime's name with keys of its own).
    Unchecked,
}

fn input(id: RequestId, body: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(DOMAIN.len() + 16 + 32);
    input.extend_from_slice(DOMAIN);
    input.extend_from_slice(id.0.as_bytes());
    input.extend_from_slice(&Sha256::digest(body));
    input
}

/// The signature of answer `body` to delegation `id`, made with `ring`'s signing key.
pub(crate) fn sign(ring: &KeyRing, id: RequestId, body: &[u8]) -> Result<String, LineageError> {
    let (key_id, signature) = ring.sign_bytes(&input(id, body))?;
    let mut bytes = key_id.0.to_vec();
    bytes.extend_from_slice(&signature);
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Checks that answer `body` to delegation `id` was signed by `peer`: the
/// signature must be there, decode, be made with a key `trust` holds under
/// `peer`'s name that has not expired at `now_ms`, and verify.
pub(crate) fn check(
    trust: &TrustStore,
    peer: &str,
    id: RequestId,
    body: &[u8],
    signature: Option<&str>,
    now_ms: u64,
) -> Result<(), LineageError> {
    let text = signature.ok_or_else(|| {
        LineageError::new(Fault::BadSignature, format!("the answer is not signed, and '{peer}' signs its answers"))
    })?;
    let bytes = URL_SAFE_NO_PAD
        .decode(text.trim())
        .ok()
        .filter(|b| b.len() == 72)
        .ok_or_else(|| LineageError::new(Fault::Malformed, "an answer's signature is 72 bytes of base64url"))?;
    let key_id = KeyId(bytes[..8].try_into().unwrap_or_default());
    let signer = trust.signer(key_id, now_ms, format_args!("the answer"))?;
    if signer.name != peer {
        return Err(LineageError::new(
            Fault::WrongIssuer,
            format!("the answer is signed by '{}', not by '{peer}'", signer.name),
        ));
    }
    let signature: [u8; 64] = bytes[8..].try_into().unwrap_or([0; 64]);
    signer
        .key
        .verify_strict(&input(id, body), &Signature::from_bytes(&signature))
        .map_err(|_| LineageError::new(Fault::BadSignature, "the answer's signature does not verify"))
}
