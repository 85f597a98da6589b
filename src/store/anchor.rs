//! The audit head outside the database (`[audit] anchor_file`): after each
//! batch that appended audit records commits, the SQL store's writer puts the
//! new head in a small JSON file, `{"seq":N,"hash":"…","updated_at":ms}`,
//! written to a temporary file in the same directory, synced and renamed over
//! the old one. Someone who can write the database but not this file cannot
//! delete the end of the log and rewrite `audit_head` to match unseen.
//!
//! The file is written after the commit, so a crash in between leaves it one
//! batch behind; [`audit::verify_anchor_file`] accepts that. The writer never
//! moves the file back or sideways: when a batch goes on from a head other
//! than the file's and the log does not hold the file's head (records were
//! deleted or replaced behind the store's back), the file is kept as the
//! evidence and the mismatch is logged.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::audit::{self, AuditEntry, AuditHead, ChainReport};
use crate::util::lock;

/// The most of an anchor file that is read; a head is under 200 bytes.
const MAX_BYTES: u64 = 4096;

/// The anchor file the SQL store's writer keeps.
#[derive(Debug)]
pub struct AnchorFile {
    path: PathBuf,
    /// The head this process wrote last: a batch that goes on from it
    /// writes without reading the file first.
    last: Mutex<Option<AuditHead>>,
}

/// The directory `path` is in ("." for a bare file name).
fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Checks that `path` names a file in an existing directory, and is not a directory itself.
pub fn check_path(path: &Path) -> Result<(), String> {
    if path.file_name().is_none() {
        return Err(format!("'{}' does not name a file", path.display()));
    }
    if path.is_dir() {
        return Err(format!("'{}' is a directory; name a file in it", path.display()));
    }
    let dir = dir_of(path);
    if !dir.is_dir() {
        return Err(format!("the directory '{}' of '{}' does not exist", dir.display(), path.display()));
    }
    Ok(())
}

/// The head in the anchor file at `path`; None when there is no file.
pub fn read(path: &Path) -> Result<Option<AuditHead>, String> {
    let mut text = String::new();
    match File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the anchor file {}: {e}", path.display())),
        Ok(f) => f
            .take(MAX_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the anchor file {}: {e}", path.display()))?,
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        format!("the anchor file {} does not hold an audit head {{\"seq\",\"hash\"}}: {e}", path.display())
    })
}

/// Writes `head` to `path` atomically and durably: a temporary file in the
/// same directory, synced, renamed over `path`, and the directory synced.
fn write(path: &Path, head: &AuditHead) -> std::io::Result<()> {
    let dir = dir_of(path);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    #[derive(serde::Serialize)]
    struct Body<'a> {
        seq: u64,
        hash: &'a str,
        updated_at: i64,
    }
    let body = Body { seq: head.seq, hash: &head.hash, updated_at: super::now_ms() };
    let body = serde_json::to_string(&body).map_err(std::io::Error::other)?;
    let written = File::create(&tmp).and_then(|mut f| {
        f.write_all(format!("{body}\n").as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

impl AnchorFile {
    /// The anchor file at `path`, checked with [`check_path`].
    pub fn new(path: &Path) -> Result<Self, String> {
        check_path(path)?;
        Ok(Self { path: path.to_path_buf(), last: Mutex::new(None) })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the file from `from`, the head a committed batch chained from,
    /// to `to`, its new head. A file ahead of `from`, or at `from` with
    /// another hash, is kept: records were deleted or replaced in the
    /// database, or another process sharing the file anchored a later head.
    /// An error says why the file could not be read or written.
    pub fn advance(&self, from: &AuditHead, to: &AuditHead) -> Result<Advanced, String> {
        let mut last = lock(&self.last);
        if last.as_ref() != Some(from) {
            // this process's first write, or the log moved without it: look first
            match read(&self.path)? {
                Some(f) if f.seq > from.seq || (f.seq == from.seq && f.hash != from.hash) => {
                    return Ok(Advanced::Kept(f));
                }
                _ => {}
            }
        }
        write(&self.path, to).map_err(|e| format!("cannot write the anchor file {}: {e}", self.path.display()))?;
        *last = Some(to.clone());
        Ok(Advanced::Written)
    }
}

/// What [`AnchorFile::advance`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advanced {
    /// The file holds the new head.
    Written,
    /// The file was left as it is: it holds this head, which the batch did not go on from.
    Kept(AuditHead),
}

/// Verifies the log against its anchors: the chain and `audit_head`
/// ([`audit::verify_anchored`]), then, when there is one, the anchor file
/// ([`audit::verify_anchor_file`]).
pub fn verify_anchors(entries: &[AuditEntry], head: Option<&AuditHead>, file: Option<&Path>) -> ChainReport {
    let report = audit::verify_anchored(entries, head);
    let Some(path) = file.filter(|_| report.valid) else {
        return report;
    };
    match read(path) {
        Ok(f) => {
            let mut report = audit::verify_anchor_file(entries, f.as_ref());
            if let Some(reason) = &mut report.reason {
                reason.push_str(&format!(" ({})", path.display()));
            }
            report
        }
        Err(e) => ChainReport { records: entries.len(), valid: false, broken_at: None, reason: Some(e) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::audit::GENESIS;

    fn at(seq: u64, hash: &str) -> AuditHead {
        AuditHead { seq, hash: hash.into() }
    }

    #[test]
    fn the_file_is_replaced_whole_and_holds_one_json_head() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor.json");
        let file = AnchorFile::new(&path).unwrap();
        assert_eq!(read(&path).unwrap(), None);
        assert_eq!(file.advance(&at(0, GENESIS), &at(2, "b")), Ok(Advanced::Written));
        assert_eq!(file.advance(&at(2, "b"), &at(5, "e")), Ok(Advanced::Written));
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("{\"seq\":5,\"hash\":\"e\",\"updated_at\":"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((v["seq"].as_u64(), v["hash"].as_str()), (Some(5), Some("e")));
        assert!(v["updated_at"].as_i64().unwrap() > 0);
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["anchor.json"], "no temporary file is left behind");
    }

    #[test]
    fn a_file_the_log_no_longer_goes_on_from_is_kept_as_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anchor.json");
        AnchorFile::new(&path).unwrap().advance(&at(0, GENESIS), &at(5, "e")).unwrap();
        // a new process: the database was cut back to record 3
        let file = AnchorFile::new(&path).unwrap();
        assert_eq!(file.advance(&at(3, "c"), &at(4, "x")), Ok(Advanced::Kept(at(5, "e"))));
        // or record 5 replaced
        assert_eq!(file.advance(&at(5, "forged"), &at(6, "y")), Ok(Advanced::Kept(at(5, "e"))));
        assert_eq!(read(&path).unwrap(), Some(at(5, "e")));
        // a file behind (a crash before its write) is moved on
        assert_eq!(file.advance(&at(7, "g"), &at(8, "h")), Ok(Advanced::Written));
        assert_eq!(read(&path).unwrap(), Some(at(8, "h")));
    }

    #[test]
    fn bad_paths_and_unreadable_files_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_path(dir.path()).unwrap_err().contains("is a directory"));
        assert!(check_path(&dir.path().join("missing/anchor.json")).unwrap_err().contains("does not exist"));
        assert!(check_path(Path::new("..")).unwrap_err().contains("does not name a file"));
        assert!(check_path(Path::new("anchor.json")).is_ok(), "a bare name is in the working directory");
        let path = dir.path().join("anchor.json");
        fs::write(&path, "not json").unwrap();
        assert!(read(&path).unwrap_err().contains("does not hold an audit head"));
        let r = verify_anchors(&[], None, Some(&path));
        assert!(!r.valid);
        assert!(AnchorFile::new(&path).unwrap().advance(&at(0, GENESIS), &at(1, "a")).is_err());
        assert!(verify_anchors(&[], None, Some(&dir.path().join("none.json"))).valid);
    }
}
