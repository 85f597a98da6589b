//! The hot reads of an SQLite file (a delegation's facts, sessions, recent
//! messages, its tree step, the audit head, a turn's delegation tree, an A2A
//! task's push configs), on synchronous read-only
//! connections of its own instead of sqlx's pool, whose every query is a
//! hop to the connection's worker thread and back.
//!
//! A read is a lookup on an index of a WAL database: it never waits for the
//! writer (WAL readers read the last commit) and takes microseconds, so it
//! runs right on the task that asks, like any other short computation.
//!
//! Nothing is cached: every read asks the database, so a write by another
//! process sharing the file (or by this process's writer thread) is seen by
//! the next read, as with the pool.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::backend_err;
use super::{StoreError, StoreResult};

/// Idle read connections kept for the next reads.
const IDLE: usize = 8;

/// Read-only connections to one SQLite file.
#[derive(Debug)]
pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    /// Readers of the SQLite file at `path`; the first connection is opened now, to report a file that cannot be read.
    pub(super) fn new(path: &Path) -> StoreResult<Self> {
        let readers = Self { path: path.to_path_buf(), idle: Mutex::new(Vec::new()) };
        let first = readers.open()?;
        readers.give(first);
        Ok(readers)
    }

    fn open(&self) -> StoreResult<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags)
            .map_err(|e| StoreError::Backend(format!("cannot open the database ({}): {e}", self.path.display())))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(backend_err)?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(conn)
    }

    fn take(&self) -> StoreResult<Connection> {
        let idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        match idle {
            Some(conn) => Ok(conn),
            None => self.open(),
        }
    }

    fn give(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < IDLE {
            idle.push(conn);
        }
    }

    /// Runs `read` on a read connection (a statement prepared once per connection and kept).
    pub(super) fn read<T>(&self, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> StoreResult<T> {
        let conn = self.take()?;
        let out = read(&conn).map_err(backend_err);
        self.give(conn);
        out
    }

    /// The rows `sql` (with `params`) selects, each mapped by `row`.
    pub(super) fn rows<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> StoreResult<Vec<T>> {
        self.read(|conn| conn.prepare_cached(sql)?.query_map(params, row)?.collect())
    }
}
