//! The token: its binary layout, its text encoding, the signature of each
//! block and the verification of the chain (docs/LINEAGE.md).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signer, SigningKey};
use sha2::{Digest, Sha256};

use super::{Claims, Fault, KeyId, LineageError, TrustStore};

/// Longest token text accepted or produced, in characters.
pub const MAX_TEXT_LEN: usize = 8192;
/// Most blocks (hops) in a token.
pub const MAX_BLOCKS: usize = 16;
/// Longest claims of one block, in bytes.
pub const MAX_CLAIMS_LEN: usize = 4096;
/// The format version this runtime makes unless told otherwise
/// (`[lineage] token_version`): the token's first byte. Version 1 tokens
/// (every block signed, each over the previous signature) are still
/// verified and extended, as version 1.
const VERSION: u8 = 2;
const VERSION_1: u8 = 1;
/// What every signature input starts with, by version.
const DOMAIN: &[u8] = b"switchboard-lineage/2\0";
const DOMAIN_1: &[u8] = b"switchboard-lineage/1\0";

#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    claims: Vec<u8>,
    key_id: KeyId,
    /// None (version 2 only): the next block is signed with the same key,
    /// and its signature covers this block.
    signature: Option<[u8; 64]>,
}

/// A lineage token: one block per hop, the root first. Decoding checks only
/// the layout; [`Token::verify`] checks everything else.
///
/// In version 2 a runtime signs only the last of its consecutive blocks:
/// each block's signature input holds a hash of every block before it, so
/// one signature vouches for the run of blocks the same key made. A hop
/// that leaves a process costs one signature and one verification, however
/// many levels of the tree ran in that process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    version: u8,
    blocks: Vec<Block>,
}

/// A token that verified: the claims of its last hop, and who signed that hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The effective claims: the last hop's.
    pub claims: Claims,
    /// The key that signed the last hop.
    pub key_id: KeyId,
    /// How many hops the token has.
    pub hops: usize,
}

fn malformed(message: impl Into<String>) -> LineageError {
    LineageError::new(Fault::Malformed, message)
}

fn too_large(message: impl Into<String>) -> LineageError {
    LineageError::new(Fault::TooLarge, message)
}

/// The fixed part of a signature input: the key id, the claims' length
/// (u16 big-endian) and the claims.
fn block_input(input: &mut Vec<u8>, key_id: KeyId, claims: &[u8]) {
    input.extend_from_slice(&key_id.0);
    // claims are at most MAX_CLAIMS_LEN bytes: the length fits
    input.extend_from_slice(&u16::try_from(claims.len()).unwrap_or(u16::MAX).to_be_bytes());
    input.extend_from_slice(claims);
}

/// Parses and verifies a token's text in one step: [`Token::decode`] then [`Token::verify`].
pub fn verify(text: &str, trusted: &TrustStore, now_ms: u64) -> Result<Verified, LineageError> {
    Token::decode(text)?.verify(trusted, now_ms)
}

impl Token {
    /// A token with no block yet: version 1 when `version` is 1, else 2.
    pub(crate) fn empty(version: u8) -> Token {
        Token { version: if version == VERSION_1 { VERSION_1 } else { VERSION }, blocks: Vec::new() }
    }

    /// What each block signs, root first.
    ///
    /// Version 2: the domain, a 32-byte link (zeros for block 0; for block
    /// `i + 1`, sha256 of block `i`'s input followed by its signature, or by
    /// nothing when it is unsigned), the key id, the claims' length and the
    /// claims. Version 1: the domain, the previous block's signature (64
    /// zero bytes for the root), the key id, the length and the claims.
    fn signing_inputs(&self) -> Vec<Vec<u8>> {
        let mut inputs: Vec<Vec<u8>> = Vec::with_capacity(self.blocks.len());
        for (i, b) in self.blocks.iter().enumerate() {
            let mut input = Vec::with_capacity(DOMAIN.len() + 64 + 8 + 2 + b.claims.len());
            if self.version == VERSION_1 {
                let prev = i.checked_sub(1).and_then(|p| self.blocks[p].signature);
                input.extend_from_slice(DOMAIN_1);
                input.extend_from_slice(&prev.unwrap_or([0; 64]));
            } else {
                input.extend_from_slice(DOMAIN);
                let link = match (i.checked_sub(1), inputs.last()) {
                    (Some(p), Some(prev)) => {
                        let mut h = Sha256::new();
                        h.update(prev);
                        if let Some(sig) = &self.blocks[p].signature {
                            h.update(sig);
                        }
                        h.finalize().into()
                    }
                    _ => [0; 32],
                };
                input.extend_from_slice(&link);
            }
            block_input(&mut input, b.key_id, &b.claims);
            inputs.push(input);
        }
        inputs
    }

    /// This token with `claims` added, the runtime's own blocks, each signed
    /// with `key` (id `key_id`): in version 2 only the last of them is signed,
    /// and a signature of the same key on the block before them is dropped
    /// (the new one covers it); in version 1, every block. Nothing is checked
    /// but the sizes: the callers check the claims.
    pub(crate) fn sealed(&self, claims: &[&Claims], key: &SigningKey, key_id: KeyId) -> Result<Token, LineageError> {
        let mut token = self.clone();
        if token.blocks.len() + claims.len() > MAX_BLOCKS {
            return Err(too_large(format!("a token has at most {MAX_BLOCKS} hops")));
        }
        let folds = token.version != VERSION_1;
        if folds
            && !claims.is_empty()
            && let Some(last) = token.blocks.last_mut()
            && last.key_id == key_id
        {
            last.signature = None;
        }
        for (n, c) in claims.iter().enumerate() {
            let bytes = serde_json::to_vec(c).map_err(|e| malformed(format!("claims do not serialize: {e}")))?;
            if bytes.len() > MAX_CLAIMS_LEN {
                return Err(too_large(format!("a hop's claims are at most {MAX_CLAIMS_LEN} bytes")));
            }
            token.blocks.push(Block { claims: bytes, key_id, signature: None });
            if !folds || n + 1 == claims.len() {
                let input = token.signing_inputs().pop().unwrap_or_default();
                if let Some(last) = token.blocks.last_mut() {
                    last.signature = Some(key.sign(&input).to_bytes());
                }
            }
        }
        if token.encoded_len() > MAX_TEXT_LEN {
            return Err(too_large(format!("the token would exceed {MAX_TEXT_LEN} characters")));
        }
        Ok(token)
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![self.version, u8::try_from(self.blocks.len()).unwrap_or(u8::MAX)];
        for b in &self.blocks {
            out.extend_from_slice(&u16::try_from(b.claims.len()).unwrap_or(u16::MAX).to_be_bytes());
            out.extend_from_slice(&b.claims);
            out.extend_from_slice(&b.key_id.0);
            if self.version != VERSION_1 {
                out.push(u8::from(b.signature.is_some()));
            }
            if let Some(sig) = &b.signature {
                out.extend_from_slice(sig);
            }
        }
        out
    }

    fn encoded_len(&self) -> usize {
        let flag = usize::from(self.version != VERSION_1);
        let block = |b: &Block| 2 + b.claims.len() + 8 + flag + if b.signature.is_some() { 64 } else { 0 };
        let bytes = 2 + self.blocks.iter().map(block).sum::<usize>();
        (bytes * 4).div_ceil(3)
    }

    /// The text form: base64url without padding, at most [`MAX_TEXT_LEN`] characters.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.to_bytes())
    }

    /// Parses the text form. Refuses (never panics on) anything but a
    /// well-laid-out token: too long, not base64url, another version, no or
    /// too many blocks, a length running past the end, a signature flag
    /// other than 0 or 1, an unsigned last block, trailing bytes.
    pub fn decode(text: &str) -> Result<Token, LineageError> {
        if text.len() > MAX_TEXT_LEN {
            return Err(too_large(format!("a lineage token is at most {MAX_TEXT_LEN} characters")));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|_| malformed("the lineage token is not base64url without padding"))?;
        let mut rest = bytes.as_slice();
        let mut take = |n: usize| -> Result<&[u8], LineageError> {
            if rest.len() < n {
                return Err(malformed("the lineage token ends too early"));
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Ok(head)
        };
        let header = take(2)?;
        let version = header[0];
        if version != VERSION && version != VERSION_1 {
            return Err(malformed(format!("lineage token version {version} is not 1 or 2")));
        }
        let count = usize::from(header[1]);
        if count == 0 || count > MAX_BLOCKS {
            return Err(malformed(format!("a lineage token has 1 to {MAX_BLOCKS} blocks, not {count}")));
        }
        let mut blocks = Vec::with_capacity(count);
        for _ in 0..count {
            let len = take(2)?;
            let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
            if len == 0 || len > MAX_CLAIMS_LEN {
                return Err(malformed(format!("a block's claims are 1 to {MAX_CLAIMS_LEN} bytes, not {len}")));
            }
            let claims = take(len)?.to_vec();
            let mut key_id = [0; 8];
            key_id.copy_from_slice(take(8)?);
            let signed = match version {
                VERSION_1 => true,
                _ => match take(1)?[0] {
                    0 => false,
                    1 => true,
                    flag => return Err(malformed(format!("a block's signature flag is 0 or 1, not {flag}"))),
                },
            };
            let signature = if signed {
                let mut signature = [0; 64];
                signature.copy_from_slice(take(64)?);
                Some(signature)
            } else {
                None
            };
            blocks.push(Block { claims, key_id: KeyId(key_id), signature });
        }
        if !rest.is_empty() {
            return Err(malformed("the lineage token has bytes after its last block"));
        }
        if blocks.last().is_some_and(|b| b.signature.is_none()) {
            return Err(malformed("the lineage token's last block is not signed"));
        }
        Ok(Token { version, blocks })
    }

    /// How many hops the token has.
    pub fn hops(&self) -> usize {
        self.blocks.len()
    }

    /// Every block's claims, root first, parsed but NOT verified.
    pub fn claims(&self) -> Result<Vec<Claims>, LineageError> {
        self.blocks.iter().enumerate().map(|(i, b)| parse_claims(i, &b.claims)).collect()
    }

    /// Verifies the chain against `trusted` at `now_ms` (docs/LINEAGE.md
    /// "Verification", in that order) and returns the last hop's claims:
    /// first every block's key and signature, then every block's claims.
    pub fn verify(&self, trusted: &TrustStore, now_ms: u64) -> Result<Verified, LineageError> {
        let inputs = self.signing_inputs();
        let mut peers = Vec::with_capacity(self.blocks.len());
        for (i, (block, input)) in self.blocks.iter().zip(&inputs).enumerate() {
            let peer = trusted.signer(block.key_id, now_ms, format_args!("block {i}"))?;
            match &block.signature {
                Some(signature) => {
                    if !trusted.signature_verifies(peer, input, signature) {
                        return Err(LineageError::new(
                            Fault::BadSignature,
                            format!("block {i}'s signature does not verify"),
                        ));
                    }
                }
                // the next block's signature covers this one only when the same key made it
                None if self.blocks.get(i + 1).is_some_and(|next| next.key_id == block.key_id) => {}
                None => {
                    return Err(LineageError::new(
                        Fault::BadSignature,
                        format!("block {i} is not signed, and the block after it is not signed with its key"),
                    ));
                }
            }
            peers.push(peer);
        }
        let mut prev: Option<Claims> = None;
        for (i, (block, peer)) in self.blocks.iter().zip(peers).enumerate() {
            let claims = parse_claims(i, &block.claims)?;
            if claims.issuer != peer.name {
                return Err(LineageError::new(
                    Fault::WrongIssuer,
                    format!("block {i} names issuer '{}' but its key belongs to '{}'", claims.issuer, peer.name),
                ));
            }
            claims.check_form()?;
            match &prev {
                None => {
                    claims.check_root()?;
                    if !peer.may_start_trees {
                        return Err(LineageError::new(
                            Fault::NotAllowed,
                            format!("'{}' may not start a tree here", peer.name),
                        ));
                    }
                }
                Some(p) => claims.check_attenuates(p)?,
            }
            prev = Some(claims);
        }
        let claims = prev.ok_or_else(|| malformed("the token has no block"))?;
        let last = self.blocks.last().ok_or_else(|| malformed("the token has no block"))?;
        if claims.audience != trusted.local() {
            return Err(LineageError::new(
                Fault::WrongAudience,
                format!("the token is addressed to '{}', not to '{}'", claims.audience, trusted.local()),
            ));
        }
        let target = claims.hop().map(|l| l.target.as_str()).unwrap_or_default();
        if !trusted.peer(last.key_id).is_some_and(|p| p.may_call(target)) {
            return Err(LineageError::new(
                Fault::NotAllowed,
                format!("'{}' may not call '{target}' here", claims.issuer),
            ));
        }
        if now_ms >= claims.deadline_ms {
            return Err(LineageError::new(Fault::Expired, "the lineage token's deadline has passed"));
        }
        Ok(Verified { claims, key_id: last.key_id, hops: self.blocks.len() })
    }
}

#[cfg(test)]
impl Token {
    /// The token without block `i` (a hostile holder cutting the chain).
    pub(crate) fn without_block(&self, i: usize) -> Token {
        let mut t = self.clone();
        if i < t.blocks.len() {
            t.blocks.remove(i);
        }
        t
    }

    /// How many of its blocks carry a signature.
    pub(crate) fn signatures(&self) -> usize {
        self.blocks.iter().filter(|b| b.signature.is_some()).count()
    }

    /// The format version.
    pub(crate) fn version(&self) -> u8 {
        self.version
    }

    /// The token with block `i`'s signature taken off.
    pub(crate) fn without_signature(&self, i: usize) -> Token {
        let mut t = self.clone();
        if let Some(b) = t.blocks.get_mut(i) {
            b.signature = None;
        }
        t
    }

    /// The token with block `i`'s claims bytes replaced, signatures kept.
    pub(crate) fn with_claims(&self, i: usize, claims: Vec<u8>) -> Token {
        let mut t = self.clone();
        if let Some(b) = t.blocks.get_mut(i) {
            b.claims = claims;
        }
        t
    }

    /// The token with blocks `i` and `j` swapped.
    pub(crate) fn swapped(&self, i: usize, j: usize) -> Token {
        let mut t = self.clone();
        t.blocks.swap(i, j);
        t
    }
}

fn parse_claims(i: usize, bytes: &[u8]) -> Result<Claims, LineageError> {
    serde_json::from_slice(bytes).map_err(|e| malformed(format!("block {i}'s claims are not valid: {e}")))
}
