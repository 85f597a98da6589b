//! The audit record and its hash chain: each entry carries the hash of the
//! previous one, so any edit, deletion or reordering is detected by `verify`.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::protocol::RequestId;

/// The hash before the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One delegation, refused or not. Objectives are stored redacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// The delegation's id.
    pub request_id: RequestId,
    /// The id of its tree's root.
    pub root_id: RequestId,
    /// Who delegated: an agent's slug, or `user`.
    pub origin: String,
    /// The agent that was asked.
    pub target: String,
    /// The user the delegation ran for.
    pub user_id: String,
    /// What the agent was asked to do, PII redacted.
    pub objective: String,
    /// `success`, `partial`, `failed` or `refused`.
    pub outcome: String,
    /// The error code when it did not succeed; None otherwise.
    pub error_code: Option<String>,
    /// Milliseconds the delegation took, retries included.
    pub duration_ms: u64,
    /// Tokens used by the delegation and its subtree.
    pub tokens: u32,
    /// When the delegation started, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// A record as stored: its place in the log and its links in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Position in the log, from 1, without gaps.
    pub seq: u64,
    /// The record itself.
    #[serde(flatten)]
    pub record: AuditRecord,
    /// The previous entry's hash ([`GENESIS`] for the first).
    pub prev_hash: String,
    /// This entry's hash: see [`AuditRecord::hash`].
    pub hash: String,
}

impl AuditRecord {
    /// sha256 over the previous hash, the sequence number and the record's fields.
    pub fn hash(&self, seq: u64, prev_hash: &str) -> String {
        let mut h = Sha256::new();
        h.update(prev_hash.as_bytes());
        h.update(seq.to_be_bytes());
        // serde_json writes struct fields in declaration order: a stable encoding.
        h.update(serde_json::to_vec(self).unwrap_or_default());
        hex::encode(h.finalize())
    }

    /// The entry this record makes at `seq` after `prev_hash`.
    pub fn seal(self, seq: u64, prev_hash: &str) -> AuditEntry {
        let hash = self.hash(seq, prev_hash);
        AuditEntry { seq, record: self, prev_hash: prev_hash.to_string(), hash }
    }
}

/// The result of checking a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainReport {
    /// Entries checked.
    pub records: usize,
    /// Whether the whole chain verifies.
    pub valid: bool,
    /// The first entry that does not verify, and why.
    pub broken_at: Option<u64>,
    /// Why the chain breaks there; None when it is valid.
    pub reason: Option<String>,
}

/// Verifies the chain from the genesis hash.
pub fn verify(entries: &[AuditEntry]) -> ChainReport {
    let mut prev = GENESIS.to_string();
    for (i, e) in entries.iter().enumerate() {
        let expected_seq = i as u64 + 1;
        let fail = |reason: String| ChainReport {
            records: entries.len(),
            valid: false,
            broken_at: Some(e.seq),
            reason: Some(reason),
        };
        if e.seq != expected_seq {
            return fail(format!(
                "sequence {} where {expected_seq} was expected (a record is missing or out of order)",
                e.seq
            ));
        }
        if e.prev_hash != prev {
            return fail("prev_hash does not match the previous record's hash".into());
        }
        if e.record.hash(e.seq, &e.prev_hash) != e.hash {
            return fail("the record's content does not match its hash (it was altered)".into());
        }
        prev = e.hash.clone();
    }
    ChainReport { records: entries.len(), valid: true, broken_at: None, reason: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u64) -> AuditRecord {
        AuditRecord {
            request_id: RequestId::new(),
            root_id: RequestId::new(),
            origin: "prime-boss".into(),
            target: "byte-doc".into(),
            user_id: "u".into(),
            objective: format!("objective {n}"),
            outcome: "success".into(),
            error_code: None,
            duration_ms: n,
            tokens: 10,
            created_at: 0,
        }
    }

    fn chain(n: u64) -> Vec<AuditEntry> {
        let mut prev = GENESIS.to_string();
        (1..=n)
            .map(|i| {
                let e = record(i).seal(i, &prev);
                prev = e.hash.clone();
                e
            })
            .collect()
    }

    #[test]
    fn an_intact_chain_verifies() {
        assert!(verify(&chain(5)).valid);
        assert!(verify(&[]).valid);
    }

    #[test]
    fn an_altered_record_breaks_the_chain_at_that_record() {
        let mut c = chain(5);
        c[2].record.outcome = "failed".into();
        let r = verify(&c);
        assert!(!r.valid);
        assert_eq!(r.broken_at, Some(3));
    }

    #[test]
    fn a_deleted_record_is_detected() {
        let mut c = chain(5);
        c.remove(1);
        let r = verify(&c);
        assert!(!r.valid);
        assert_eq!(r.broken_at, Some(3));
    }
}
