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

impl ChainReport {
    fn intact(records: usize) -> Self {
        Self { records, valid: true, broken_at: None, reason: None }
    }

    fn broken(records: usize, at: u64, reason: String) -> Self {
        Self { records, valid: false, broken_at: Some(at), reason: Some(reason) }
    }
}

/// The chain's head as the store anchors it: the last sequence number and
/// hash, written in the same transaction as every append, beside the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHead {
    /// The last record's sequence number.
    pub seq: u64,
    /// The last record's hash.
    pub hash: String,
}

/// Verifies the chain on its own: every record links to the one before, in
/// sequence from 1. Records deleted from the end go unseen here; use
/// [`verify_anchored`] with the store's head to catch those too.
pub fn verify(entries: &[AuditEntry]) -> ChainReport {
    let mut prev = GENESIS.to_string();
    for (i, e) in entries.iter().enumerate() {
        let expected_seq = i as u64 + 1;
        let fail = |at: u64, reason: String| ChainReport::broken(entries.len(), at, reason);
        if e.seq > expected_seq {
            return fail(
                expected_seq,
                format!("record {expected_seq} is missing: the next one on file is {} (records were deleted)", e.seq),
            );
        }
        if e.seq != expected_seq {
            return fail(e.seq, format!("sequence {} where {expected_seq} was expected (out of order)", e.seq));
        }
        if e.prev_hash != prev {
            return fail(e.seq, "prev_hash does not match the previous record's hash".into());
        }
        if e.record.hash(e.seq, &e.prev_hash) != e.hash {
            return fail(e.seq, "the record's content does not match its hash (it was altered)".into());
        }
        prev = e.hash.clone();
    }
    ChainReport::intact(entries.len())
}

/// Verifies the chain and that it ends where the anchored head says: records
/// deleted from the end are named by the first missing sequence number.
pub fn verify_anchored(entries: &[AuditEntry], head: Option<&AuditHead>) -> ChainReport {
    let report = verify(entries);
    if !report.valid {
        return report;
    }
    let last = entries.last().map(|e| (e.seq, e.hash.as_str()));
    let fail = |at: u64, reason: String| ChainReport::broken(entries.len(), at, reason);
    match (head, last) {
        (None, None) => report,
        (None, Some((seq, _))) => fail(seq, "the log has records but its anchored head is missing".into()),
        (Some(h), None) => fail(1, format!("records 1 to {} are missing: the anchored head is at {}", h.seq, h.seq)),
        (Some(h), Some((seq, _))) if seq < h.seq => fail(
            seq + 1,
            format!(
                "records {} to {} are missing: the log ends at {seq}, its anchored head at {}",
                seq + 1,
                h.seq,
                h.seq
            ),
        ),
        (Some(h), Some((seq, _))) if seq > h.seq => {
            fail(h.seq + 1, format!("records after the anchored head ({}) were written around the store", h.seq))
        }
        (Some(h), Some((seq, hash))) if hash != h.hash => {
            fail(seq, format!("record {seq} does not match the anchored head's hash (it was replaced)"))
        }
        _ => report,
    }
}

/// Checks the log against a head kept outside the database (the anchor
/// file), which catches a tail deleted together with a consistent rewrite of
/// `audit_head`. The file is written after each commit, so a crash between
/// the two leaves it behind: a head that is a record of the log with the
/// same hash passes (the records after it are the chain's to check). It fails
/// when the head is past the log's last record (naming the first missing
/// one), when the record at its sequence has another hash, and when there is
/// no file but the log has records. The chain itself is not checked here:
/// run [`verify_anchored`] first.
pub fn verify_anchor_file(entries: &[AuditEntry], file: Option<&AuditHead>) -> ChainReport {
    let fail = |at: u64, reason: String| ChainReport::broken(entries.len(), at, reason);
    let last = entries.last().map_or(0, |e| e.seq);
    let Some(f) = file else {
        return match entries.len() {
            0 => ChainReport::intact(0),
            n => fail(last, format!("the anchor file is missing while the log has {n} records")),
        };
    };
    if f.seq == 0 {
        // the empty chain's head
        return if f.hash == GENESIS {
            ChainReport::intact(entries.len())
        } else {
            fail(1, "the anchor file names record 0 with a hash other than the chain's start".into())
        };
    }
    if f.seq > last {
        let first = last + 1;
        return fail(
            first,
            format!("records {first} to {} are missing: the log ends at {last}, the anchor file at {}", f.seq, f.seq),
        );
    }
    match entries.binary_search_by_key(&f.seq, |e| e.seq) {
        Err(_) => fail(f.seq, format!("record {}, the anchor file's head, is missing", f.seq)),
        Ok(i) if entries[i].hash != f.hash => {
            fail(f.seq, format!("record {} does not match the anchor file's hash (it was replaced)", f.seq))
        }
        Ok(_) => ChainReport::intact(entries.len()),
    }
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
    fn a_deleted_record_is_named_by_its_sequence_number() {
        let mut c = chain(5);
        c.remove(1);
        let r = verify(&c);
        assert!(!r.valid);
        assert_eq!(r.broken_at, Some(2));
        assert!(r.reason.unwrap().contains("record 2 is missing"));
    }

    #[test]
    fn only_the_anchored_head_sees_records_deleted_from_the_end() {
        let c = chain(5);
        let head = AuditHead { seq: 5, hash: c[4].hash.clone() };
        assert!(verify_anchored(&c, Some(&head)).valid);
        assert!(verify(&c[..3]).valid, "the chain alone can't tell");
        let r = verify_anchored(&c[..3], Some(&head));
        assert_eq!((r.valid, r.broken_at), (false, Some(4)));
        assert!(r.reason.unwrap().contains("records 4 to 5 are missing"));
        assert_eq!(verify_anchored(&[], Some(&head)).broken_at, Some(1));
        assert_eq!(verify_anchored(&c, None).broken_at, Some(5), "a log without its head");
        let other = AuditHead { seq: 5, hash: "f".repeat(64) };
        assert_eq!(verify_anchored(&c, Some(&other)).broken_at, Some(5));
        assert!(verify_anchored(&[], None).valid);
    }

    /// A chain that goes on from `entries`' last record with other records.
    fn rewritten(entries: &[AuditEntry], to: u64) -> Vec<AuditEntry> {
        let mut out = entries.to_vec();
        let mut prev = out.last().map_or(GENESIS.to_string(), |e| e.hash.clone());
        for seq in out.len() as u64 + 1..=to {
            let mut r = record(seq);
            r.objective = format!("forged {seq}");
            let e = r.seal(seq, &prev);
            prev = e.hash.clone();
            out.push(e);
        }
        out
    }

    fn head(e: &AuditEntry) -> AuditHead {
        AuditHead { seq: e.seq, hash: e.hash.clone() }
    }

    #[test]
    fn an_anchor_file_at_the_head_or_one_batch_behind_it_passes() {
        let c = chain(5);
        assert!(verify_anchor_file(&c, Some(&head(&c[4]))).valid);
        // the process died between the commit of records 4 and 5 and the file's write
        assert!(verify_anchor_file(&c, Some(&head(&c[2]))).valid);
        let genesis = AuditHead { seq: 0, hash: GENESIS.into() };
        assert!(verify_anchor_file(&c, Some(&genesis)).valid);
        assert!(verify_anchor_file(&[], Some(&genesis)).valid);
    }

    #[test]
    fn the_anchor_file_catches_a_tail_deleted_with_audit_head_rewritten_to_match() {
        let c = chain(5);
        let file = head(&c[4]);
        let kept = &c[..3];
        let db_head = head(&kept[2]);
        assert!(verify_anchored(kept, Some(&db_head)).valid, "the database agrees with itself");
        let r = verify_anchor_file(kept, Some(&file));
        assert_eq!((r.valid, r.broken_at), (false, Some(4)));
        assert!(r.reason.unwrap().contains("records 4 to 5 are missing"));
        let r = verify_anchor_file(&[], Some(&file));
        assert_eq!((r.valid, r.broken_at), (false, Some(1)), "the whole log deleted");
    }

    #[test]
    fn the_anchor_file_catches_the_record_at_its_head_replaced() {
        let c = chain(5);
        let file = head(&c[4]);
        // deleted back to 3, then new records 4 and 5 chained from there
        let forged = rewritten(&c[..3], 5);
        assert!(verify_anchored(&forged, Some(&head(&forged[4]))).valid, "the database agrees with itself");
        let r = verify_anchor_file(&forged, Some(&file));
        assert_eq!((r.valid, r.broken_at), (false, Some(5)));
        assert!(r.reason.unwrap().contains("replaced"));
        // also when the forged log has grown past the file
        assert_eq!(verify_anchor_file(&rewritten(&c[..3], 8), Some(&file)).broken_at, Some(5));
        let bad_genesis = AuditHead { seq: 0, hash: "f".repeat(64) };
        assert!(!verify_anchor_file(&c, Some(&bad_genesis)).valid);
    }

    #[test]
    fn a_missing_anchor_file_passes_only_an_empty_log() {
        assert!(verify_anchor_file(&[], None).valid);
        let r = verify_anchor_file(&chain(2), None);
        assert_eq!((r.valid, r.broken_at), (false, Some(2)));
        assert!(r.reason.unwrap().contains("anchor file is missing"));
    }
}
