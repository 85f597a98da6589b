//! The token: its binary layout, its text encoding, the signature of each
//! block and the verification of the chain (docs/LINEAGE.md).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer, SigningKey};

use super::{Claims, Fault, KeyId, LineageError, TrustStore};

/// Longest token text accepted or produced, in characters.
pub const MAX_TEXT_LEN: usize = 8192;
/// Most blocks (hops) in a token.
pub const MAX_BLOCKS: usize = 16;
/// Longest claims of one block, in bytes.
pub const MAX_CLAIMS_LEN: usize = 4096;
/// The format version: the token's first byte.
const VERSION: u8 = 1;
/// What every signature input starts with.
const DOMAIN: &[u8] = b"switchboard-lineage/1\0";

#[derive(Debug, Clone, PartialEq, Eq)]
struct Block {
    claims: Vec<u8>,
    key_id: KeyId,
    signature: [u8; 64],
}

/// A lineage token: one signed block per hop, the root first. Decoding
/// checks only the layout; [`Token::verify`] checks everything else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Token {
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

/// What block `i` signs: the domain, the previous block's signature (64 zero
/// bytes for the root), the key id, the claims' length (u16 big-endian) and the claims.
fn signing_input(prev: Option<&[u8; 64]>, key_id: KeyId, claims: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(DOMAIN.len() + 64 + 8 + 2 + claims.len());
    input.extend_from_slice(DOMAIN);
    input.extend_from_slice(prev.unwrap_or(&[0; 64]));
    input.extend_from_slice(&key_id.0);
    // claims are at most MAX_CLAIMS_LEN bytes: the length fits
    input.extend_from_slice(&u16::try_from(claims.len()).unwrap_or(u16::MAX).to_be_bytes());
    input.extend_from_slice(claims);
    input
}

/// Parses and verifies a token's text in one step: [`Token::decode`] then [`Token::verify`].
pub fn verify(text: &str, trusted: &TrustStore, now_ms: u64) -> Result<Verified, LineageError> {
    Token::decode(text)?.verify(trusted, now_ms)
}

impl Token {
    /// This token with one more block: `claims` signed with `key`.
    pub(crate) fn push(mut self, claims: &Claims, key: &SigningKey, key_id: KeyId) -> Result<Token, LineageError> {
        if self.blocks.len() >= MAX_BLOCKS {
            return Err(LineageError::new(Fault::TooLarge, format!("a token has at most {MAX_BLOCKS} hops")));
        }
        let bytes = serde_json::to_vec(claims).map_err(|e| malformed(format!("claims do not serialize: {e}")))?;
        if bytes.len() > MAX_CLAIMS_LEN {
            return Err(LineageError::new(
                Fault::TooLarge,
                format!("a hop's claims are at most {MAX_CLAIMS_LEN} bytes"),
            ));
        }
        let input = signing_input(self.blocks.last().map(|b| &b.signature), key_id, &bytes);
        let signature = key.sign(&input).to_bytes();
        self.blocks.push(Block { claims: bytes, key_id, signature });
        if self.encoded_len() > MAX_TEXT_LEN {
            return Err(LineageError::new(
                Fault::TooLarge,
                format!("the token would exceed {MAX_TEXT_LEN} characters"),
            ));
        }
        Ok(self)
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![VERSION, u8::try_from(self.blocks.len()).unwrap_or(u8::MAX)];
        for b in &self.blocks {
            out.extend_from_slice(&u16::try_from(b.claims.len()).unwrap_or(u16::MAX).to_be_bytes());
            out.extend_from_slice(&b.claims);
            out.extend_from_slice(&b.key_id.0);
            out.extend_from_slice(&b.signature);
        }
        out
    }

    fn encoded_len(&self) -> usize {
        let bytes = 2 + self.blocks.iter().map(|b| 2 + b.claims.len() + 8 + 64).sum::<usize>();
        (bytes * 4).div_ceil(3)
    }

    /// The text form: base64url without padding, at most [`MAX_TEXT_LEN`] characters.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.to_bytes())
    }

    /// Parses the text form. Refuses (never panics on) anything but a
    /// well-laid-out token: too long, not base64url, another version, no or
    /// too many blocks, a length running past the end, trailing bytes.
    pub fn decode(text: &str) -> Result<Token, LineageError> {
        if text.len() > MAX_TEXT_LEN {
            return Err(LineageError::new(
                Fault::TooLarge,
                format!("a lineage token is at most {MAX_TEXT_LEN} characters"),
            ));
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
        if header[0] != VERSION {
            return Err(malformed(format!("lineage token version {} is not 1", header[0])));
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
            let mut signature = [0; 64];
            signature.copy_from_slice(take(64)?);
            blocks.push(Block { claims, key_id: KeyId(key_id), signature });
        }
        if !rest.is_empty() {
            return Err(malformed("the lineage token has bytes after its last block"));
        }
        Ok(Token { blocks })
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
    /// "Verification", in that order) and returns the last hop's claims.
    pub fn verify(&self, trusted: &TrustStore, now_ms: u64) -> Result<Verified, LineageError> {
        let mut prev: Option<(Claims, &[u8; 64])> = None;
        for (i, block) in self.blocks.iter().enumerate() {
            let peer = trusted.peer(block.key_id).ok_or_else(|| {
                LineageError::new(
                    Fault::UntrustedKey,
                    format!("block {i} is signed with key {}, which is not trusted", block.key_id),
                )
            })?;
            if peer.expires_ms.is_some_and(|e| now_ms >= e) {
                return Err(LineageError::new(
                    Fault::KeyExpired,
                    format!("block {i}'s key {} has expired", block.key_id),
                ));
            }
            let input = signing_input(prev.as_ref().map(|p| p.1), block.key_id, &block.claims);
            let signature = Signature::from_bytes(&block.signature);
            if peer.key.verify_strict(&input, &signature).is_err() {
                return Err(LineageError::new(Fault::BadSignature, format!("block {i}'s signature does not verify")));
            }
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
                Some((p, _)) => claims.check_attenuates(p)?,
            }
            prev = Some((claims, &block.signature));
        }
        let (claims, _) = prev.ok_or_else(|| malformed("the token has no block"))?;
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
