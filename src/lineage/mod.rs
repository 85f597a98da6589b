//! Signed, attenuating delegation lineage (docs/LINEAGE.md; the process
//! boundary of docs/DESIGN.md#boundaries).
//!
//! When a delegation crosses a process, the next process must not believe
//! what the caller declares (depth, path, deadline, budget, tools, user). A
//! lineage [`Token`] is a chain of blocks, one per hop. Each block states the
//! hop's full [`Claims`] and is made by the runtime that sent the hop; its
//! Ed25519 signature covers a hash of every block before it and its own
//! claims, and a runtime signs only the last of its consecutive blocks
//! (token version 2: one signature per hop out of a process). The
//! receiver [`verify`]s the chain offline against the public keys it trusts
//! ([`TrustStore`]) and checks that every block *attenuates* its predecessor
//! (depth + 1, max depth ≤, fan-out ≤, deadline ≤, budget ≤, tools ⊆, same
//! user and tree, parent = previous request, path = previous path + one
//! link, issued by the runtime the previous hop was addressed to). The
//! verifier does not trust the attenuator: a peer holding a valid, trusted
//! key still cannot sign a hop that widens anything, because the relation is
//! checked between the signed claims themselves.
//!
//! **Why a chain of Ed25519 blocks and not biscuit-auth.** Both verify offline
//! against public keys. Biscuit attenuates by adding Datalog *checks*; facts
//! that later blocks state are, by design, not visible to the authorizer, so
//! "the next hop's budget is 800" cannot be read from an attenuation block
//! without third-party blocks and a trusted-key scope per block, and the
//! rules above (depth = previous + 1, path = previous path + one link) become
//! Datalog a second implementation must reproduce exactly. Its build pulls
//! in protobuf, a Datalog engine and a parser: 39 s for the crate alone on
//! this 2-core machine, against 6 s for `ed25519-dalek` (a small, widely used
//! crate). With explicit claims per block, the attenuation rules are a dozen
//! comparisons, the format is specified in one page (docs/LINEAGE.md) and
//! verification costs one signature check per runtime the token passed.
//!
//! Keys: [`KeyRing`] holds this runtime's Ed25519 keys (generated at first
//! start into a directory, rotatable; old keys verify until they expire).
//! Errors: [`LineageError`] names a [`Fault`], which maps to a stable
//! [`ErrorCode`]: `LINEAGE_INVALID` (not a valid lineage),
//! `UNAUTHENTICATED` (a signature or key that is not trusted),
//! `DELEGATION_NOT_ALLOWED` (a peer acting beyond its `may_call` or starting
//! a tree it may not), `DEADLINE_EXCEEDED` (the token's deadline passed) and
//! `LINEAGE_MISMATCH` (an envelope that disagrees with its token,
//! [`check_envelope`]).

mod authority;
mod claims;
mod envelope;
mod hop;
mod keys;
mod reply;
mod token;
mod trust;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_keys;

use std::fmt;

use crate::protocol::{DelegationError, ErrorCode};

pub use crate::config::TrustEntry;
pub use authority::Authority;
pub use claims::{Claims, Field, Link};
pub use envelope::check_envelope;
pub use hop::{Hop, Relay};
pub use keys::{KeyId, KeyRing, PublicKeyInfo};
pub use reply::ReplyCheck;
pub use token::{MAX_BLOCKS, MAX_CLAIMS_LEN, MAX_TEXT_LEN, Token, Verified, verify};
pub use trust::TrustStore;

/// What is wrong with a token, a hop or an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The text or the bytes are not a lineage token (`LINEAGE_INVALID`).
    Malformed,
    /// The text is longer than [`MAX_TEXT_LEN`], or has too many blocks (`LINEAGE_INVALID`).
    TooLarge,
    /// A block's claims are not well formed: unsorted tools, a path that does
    /// not match the depth, a bad name (`LINEAGE_INVALID`).
    Form,
    /// The first block is not a root: a parent, a depth above 0, a tree id
    /// that is not its request id (`LINEAGE_INVALID`).
    NotRoot,
    /// A block widens its predecessor in this field (`LINEAGE_INVALID`).
    Widens(Field),
    /// The last hop is addressed to another runtime (`LINEAGE_INVALID`).
    WrongAudience,
    /// A block is signed with a key no trust entry holds (`UNAUTHENTICATED`).
    UntrustedKey,
    /// A block's key expired (a rotated key past its grace) (`UNAUTHENTICATED`).
    KeyExpired,
    /// A block names an issuer other than the one its key belongs to (`UNAUTHENTICATED`).
    WrongIssuer,
    /// A block's signature does not verify (`UNAUTHENTICATED`).
    BadSignature,
    /// The issuer may not call that agent here, or may not start a tree (`DELEGATION_NOT_ALLOWED`).
    NotAllowed,
    /// The token's deadline has passed (`DEADLINE_EXCEEDED`).
    Expired,
    /// The envelope disagrees with the token in this field (`LINEAGE_MISMATCH`).
    Mismatch(&'static str),
    /// A delegation below a root came without a token, or an agent that may
    /// not start a tree for that user tried to (`LINEAGE_INVALID`).
    Missing,
    /// This runtime's own keys cannot be read or made (`AGENT_UNAVAILABLE`).
    Keys,
}

impl Fault {
    /// The stable code this fault is answered with.
    pub fn code(self) -> ErrorCode {
        match self {
            Self::Malformed
            | Self::TooLarge
            | Self::Form
            | Self::NotRoot
            | Self::Widens(_)
            | Self::WrongAudience
            | Self::Missing => ErrorCode::LineageInvalid,
            Self::UntrustedKey | Self::KeyExpired | Self::WrongIssuer | Self::BadSignature => {
                ErrorCode::Unauthenticated
            }
            Self::NotAllowed => ErrorCode::DelegationNotAllowed,
            Self::Expired => ErrorCode::DeadlineExceeded,
            Self::Mismatch(_) => ErrorCode::LineageMismatch,
            Self::Keys => ErrorCode::AgentUnavailable,
        }
    }
}

/// A refused token, hop or envelope: the fault and a message for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineageError {
    /// What is wrong.
    pub fault: Fault,
    /// What happened, for the caller and the audit record.
    pub message: String,
}

impl LineageError {
    pub(crate) fn new(fault: Fault, message: impl Into<String>) -> Self {
        Self { fault, message: message.into() }
    }

    /// The stable code this error is answered with.
    pub fn code(&self) -> ErrorCode {
        self.fault.code()
    }
}

impl fmt::Display for LineageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message)
    }
}

impl std::error::Error for LineageError {}

impl From<LineageError> for DelegationError {
    fn from(e: LineageError) -> Self {
        DelegationError::new(e.code(), e.message)
    }
}

/// Now, in milliseconds since the Unix epoch: the clock of tokens' absolute deadlines and key expiries.
pub fn now_ms() -> u64 {
    u64::try_from(crate::store::now_ms()).unwrap_or(0)
}

/// Whether `name` can name a runtime: 1 to 64 ASCII letters, digits, `.`, `_` or `-`.
pub(crate) use crate::config::valid_runtime_name as valid_name;
