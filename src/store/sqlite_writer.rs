//! The writer of an SQLite file: a thread of its own holding one synchronous
//! connection (rusqlite on the same SQLite library sqlx links), in WAL mode
//! with `synchronous = FULL`, its statements prepared once and kept.
//!
//! It is the group commit of [`super::writer`], without sqlx's hop to a
//! worker thread for every statement: whenever the thread is free it takes
//! every write that queued up meanwhile, applies them in one `BEGIN
//! IMMEDIATE` transaction (a row per statement execution, which on a
//! prepared statement costs microseconds), commits (one sync of the log) and
//! only then answers each caller. So "durable before it is acknowledged"
//! holds exactly as with the sqlx writer: a caller's answer is sent after
//! the `COMMIT` that synced its rows returned. A batch of nothing but
//! writes that wait for the next sync (steps' starts, a blocking A2A send's
//! task and delegation's end) commits with `synchronous = NORMAL` (written,
//! not synced: see [`Write::syncs`]); the next synced commit syncs it with
//! its own.
//!
//! The audit chain is sealed inside the transaction from the head it reads
//! there, as before; `BEGIN IMMEDIATE` takes SQLite's write lock up front,
//! so another process sharing the file cannot append in between. The anchor
//! file is moved after the commit and before the callers are answered.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension, ToSql, TransactionBehavior};
use tokio::sync::mpsc;

use super::a2a_state::{A2aEventRecord, A2aTaskRecord, EVENT_INSERT, EVENT_TRIM, TASK_UPSERT, trims};
use super::anchor::{Advanced, AnchorFile};
use super::backend_err;
use super::idem::{self, KeyClaim};
use super::writer::{
    AUDIT, HEAD, HEAD_READ, Job, LOG_TAIL, MAX_BATCH, Plan, STEP_WRITE, Stats, Table, Val, Write, Writer, Written,
    anchor_span, report_kept,
};
use super::{Claim, StoreError, StoreResult};

impl ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Val::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Val::Opt(Some(t)) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Val::Opt(None) => ToSqlOutput::Owned(Value::Null),
            Val::Int(i) => ToSqlOutput::Owned(Value::Integer(*i)),
        })
    }
}

/// Opens a connection to the SQLite file at `path` (which the migrations
/// created): WAL, every commit synced, a writer waiting up to 10 s for
/// another process's write lock.
fn open(path: &Path) -> StoreResult<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Backend(format!("cannot open the database ({}): {e}", path.display())))?;
    let setup = || -> rusqlite::Result<()> {
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous = FULL")?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(())
    };
    setup().map_err(|e| StoreError::Backend(format!("cannot set up the database ({}): {e}", path.display())))?;
    Ok(conn)
}

/// The writer of the SQLite file at `path`: a thread of its own holding a
/// synchronous connection to it, and a checkpointer thread beside it.
pub(super) fn writer(path: &Path, anchor: Option<Arc<AnchorFile>>) -> StoreResult<Writer> {
    let conn = open(path)?;
    conn.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES).map_err(backend_err)?;
    // room for one signal: commits made while a checkpoint runs ask for one more, not one each
    let (committed, commits) = std::sync::mpsc::sync_channel::<()>(1);
    checkpointer(open(path)?, commits)?;
    Writer::start(|queue, stats| spawn(conn, queue, stats, anchor, committed))
}

fn spawn(
    conn: Connection,
    queue: mpsc::Receiver<Job>,
    stats: Arc<Stats>,
    anchor: Option<Arc<AnchorFile>>,
    committed: std::sync::mpsc::SyncSender<()>,
) -> StoreResult<()> {
    std::thread::Builder::new()
        .name("switchboard-sqlite-writer".into())
        .spawn(move || run(conn, queue, &stats, anchor.as_ref(), &committed))
        .map(drop)
        .map_err(|e| StoreError::Backend(format!("cannot start the store's writer thread: {e}")))
}

/// The least time between two of the checkpointer's copies: the commits
/// of that time are copied together.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(20);
/// Log pages at which the writer's own commit checkpoints (SQLite's default is 1,000).
const AUTOCHECKPOINT_PAGES: i64 = 4_000;

/// Starts the checkpointer: a thread with a connection of its own that,
/// after the writer commits, copies the log's committed pages into the
/// database file (a PASSIVE checkpoint: it never waits for the writer),
/// off the writer's path; an idle store wakes it never.
///
/// SQLite's automatic checkpoint stays on for the writer: the commit that
/// takes the log past [`AUTOCHECKPOINT_PAGES`] copies what is not copied
/// yet and syncs the database file, so that its next transaction starts
/// the log over (only a complete checkpoint between two of the writer's
/// transactions does that, and under unbroken load only the writer's own
/// can be between them). Without the checkpointer, every 1,000 pages
/// (SQLite's default) a commit copied them all before its callers were
/// answered: about a fifth of the writer's time under load. Now it finds
/// most of them copied, four times less often (measured: +9% durable
/// delegations per second at 64 connections over the 1,000-page default
/// with the checkpointer, five interleaved runs). A copy changes nothing a
/// reader sees, and a crash in the middle of one loses nothing (the log
/// still holds every page). The thread ends, after a last checkpoint, when
/// the writer's thread does.
fn checkpointer(conn: Connection, commits: std::sync::mpsc::Receiver<()>) -> StoreResult<()> {
    let checkpoint = move || conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    std::thread::Builder::new()
        .name("switchboard-sqlite-checkpoint".into())
        .spawn(move || {
            while commits.recv().is_ok() {
                if let Err(e) = checkpoint() {
                    tracing::warn!("SQLite checkpoint: {e}");
                }
                std::thread::sleep(CHECKPOINT_EVERY);
            }
            let _ = checkpoint();
        })
        .map(drop)
        .map_err(|e| StoreError::Backend(format!("cannot start the store's checkpoint thread: {e}")))
}

fn run(
    mut conn: Connection,
    mut queue: mpsc::Receiver<Job>,
    stats: &Stats,
    anchor: Option<&Arc<AnchorFile>>,
    committed: &std::sync::mpsc::SyncSender<()>,
) {
    stats.count_pages();
    let mut jobs: Vec<Job> = Vec::with_capacity(MAX_BATCH);
    // the connection opens with synchronous = FULL
    let mut full = true;
    while let Some(job) = queue.blocking_recv() {
        jobs.push(job);
        while jobs.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        match commit(&mut conn, &mut full, jobs.iter().map(|j| &j.write)) {
            Ok(written) => {
                stats.counted(jobs.iter().map(|j| &j.write));
                anchored(&conn, anchor, &written);
                for (job, w) in jobs.drain(..).zip(written) {
                    let _ = job.reply.send(Ok(w));
                }
            }
            Err(e) if jobs.len() == 1 => {
                let _ = jobs.remove(0).reply.send(Err(e));
            }
            Err(_) => {
                // one bad write fails alone: the others go one per transaction
                for job in jobs.drain(..) {
                    let one = commit(&mut conn, &mut full, std::iter::once(&job.write));
                    if let Ok(written) = &one {
                        stats.counted(std::iter::once(&job.write));
                        anchored(&conn, anchor, written);
                    }
                    let _ = job.reply.send(one.map(|mut w| w.remove(0)));
                }
            }
        }
        stats.paged(log_pages(&conn));
        // the checkpointer copies what this batch committed (full: it is asked already)
        let _ = committed.try_send(());
    }
}

/// The pages `conn` wrote to the log since the last call: SQLite's count of
/// the dirty pages its cache wrote out (`SQLITE_DBSTATUS_CACHE_WRITE`, in
/// WAL mode the frames appended to the log), read and reset.
fn log_pages(conn: &Connection) -> u64 {
    use rusqlite::ffi;
    let (mut current, mut highest) = (0, 0);
    // SAFETY: the handle is `conn`'s, open for the whole call (borrowed), and
    // used on the thread that owns the connection; SQLite writes only the two
    // integers passed by address.
    #[allow(unsafe_code)]
    let rc = unsafe {
        ffi::sqlite3_db_status(conn.handle(), ffi::SQLITE_DBSTATUS_CACHE_WRITE, &mut current, &mut highest, 1)
    };
    if rc == ffi::SQLITE_OK { u64::try_from(current).unwrap_or(0) } else { 0 }
}

/// The one-row `INSERT` of `table` (prepared once, then cached by its text).
fn one_row(table: Table, columns: usize) -> String {
    let Table(head, tail) = table;
    let marks = vec!["?"; columns].join(", ");
    format!("{head}({marks}){tail}")
}

/// Applies `writes` in one transaction and commits it: synced (WAL with
/// `synchronous = FULL`) unless the batch holds nothing but writes that wait
/// for the next sync ([`Write::syncs`]), which commit with `synchronous = NORMAL` (the log
/// written, not synced: durable against the process's crash, and against
/// power loss from the next sync on). `full` is the connection's setting,
/// changed here, between transactions, only when the batch needs the other.
/// On any error the transaction rolls back whole.
fn commit<'a>(
    conn: &mut Connection,
    full: &mut bool,
    writes: impl Iterator<Item = &'a Write>,
) -> StoreResult<Vec<Written>> {
    let mut plan = Plan::new(writes);
    if plan.sync != *full {
        let pragma = if plan.sync { "PRAGMA synchronous = FULL" } else { "PRAGMA synchronous = NORMAL" };
        conn.execute_batch(pragma).map_err(backend_err)?;
        *full = plan.sync;
    }
    // take the write lock up front: the head we read stays the head
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend_err)?;
    let (mut entries, mut head_row) = (Vec::new(), Vec::new());
    if plan.audits() {
        let head_of = |sql: &str| -> rusqlite::Result<Option<(i64, String)>> {
            tx.prepare_cached(sql)?.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional()
        };
        // chain from the anchored head, not from the log's last row: records
        // deleted from the end stay a visible gap
        let mut head = head_of(HEAD_READ).map_err(backend_err)?;
        if head.is_none() {
            // no head (a new log, or one deleted): go on from the log
            head = head_of(LOG_TAIL).map_err(backend_err)?;
        }
        let (rows, (seq, prev)) = plan.seal(head);
        entries = rows;
        head_row.push(vec![Val::Int(1), Val::Int(seq), Val::Text(prev), Val::Int(super::now_ms())]);
    }
    let tables = std::mem::take(&mut plan.tables);
    for (table, rows) in tables.into_iter().chain([(AUDIT, entries), (HEAD, head_row)]) {
        let Some(first) = rows.first() else { continue };
        let mut statement = tx.prepare_cached(&one_row(table, first.len())).map_err(backend_err)?;
        for row in &rows {
            statement.execute(rusqlite::params_from_iter(row)).map_err(backend_err)?;
        }
    }
    // the steps one by one: a step not written (another caller's id, or taken over) changes no row
    let steps = std::mem::take(&mut plan.steps);
    if let Some((_, first, _)) = steps.first() {
        let mut statement = tx.prepare_cached(&one_row(STEP_WRITE, first.len())).map_err(backend_err)?;
        let mut written = Vec::with_capacity(steps.len());
        for (_, row, _) in &steps {
            written.push(statement.execute(rusqlite::params_from_iter(row)).map_err(backend_err)? == 1);
        }
        drop(statement);
        plan.unwritten(&steps, &written);
    }
    for &(i, task, events) in &plan.a2a {
        plan.out[i] = Written::Task(a2a_change(&tx, task, events).map_err(backend_err)?);
    }
    for &(i, claim) in &plan.claims {
        plan.out[i] = Written::Claim(claim_key(&tx, claim).map_err(backend_err)?);
    }
    tx.commit().map_err(backend_err)?;
    Ok(plan.out)
}

/// An A2A task's version (true when written: no newer one is on file) and
/// its events, inside the batch's transaction.
fn a2a_change(
    tx: &rusqlite::Transaction<'_>,
    task: Option<&A2aTaskRecord>,
    events: &[A2aEventRecord],
) -> rusqlite::Result<bool> {
    let mut written = false;
    if let Some(t) = task {
        let session = t.session_id.map(|s| s.to_string());
        written = tx.prepare_cached(TASK_UPSERT)?.execute(rusqlite::params![
            t.id,
            t.owner,
            t.agent,
            t.context_id,
            session,
            t.state,
            t.task,
            t.seq,
            t.updated_at,
            t.pii
        ])? == 1;
        if !written {
            let foreign: i64 = tx
                .prepare_cached(super::a2a_state::TASK_FOREIGN)?
                .query_row(rusqlite::params![t.id, t.owner, t.agent], |r| r.get(0))?;
            if foreign > 0 {
                return Ok(false);
            }
        }
    }
    for e in events {
        tx.prepare_cached(EVENT_INSERT)?.execute(rusqlite::params![e.task_id, e.seq, e.event, e.created_at])?;
    }
    for (task, upto) in trims(events) {
        tx.prepare_cached(EVENT_TRIM)?.execute(rusqlite::params![task, upto])?;
    }
    Ok(written)
}

/// An idempotency key's claim inside the batch's transaction (idem.rs).
/// In the one transaction that holds SQLite's write lock, a claim that did
/// not insert finds the row it ran into.
fn claim_key(tx: &rusqlite::Transaction<'_>, claim: &KeyClaim) -> rusqlite::Result<Claim> {
    let KeyClaim { user, key, hash, holder } = claim;
    let (id, now) = (holder.request_id.to_string(), super::now_ms());
    let params = rusqlite::params![user, key, hash, now, id, holder.owner];
    if tx.prepare_cached(idem::CLAIM)?.execute(params)? == 1 {
        return Ok(Claim::New);
    }
    let row: idem::Row = tx
        .prepare_cached(idem::READ)?
        .query_row(rusqlite::params![user, key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?;
    Ok(idem::standing(hash, row))
}

/// Moves the anchor file, if there is one, to the head a committed batch
/// left (see [`super::writer`]'s `anchored`: the commit stands whatever
/// happens here; a problem is logged and `audit --verify` reports it).
fn anchored(conn: &Connection, anchor: Option<&Arc<AnchorFile>>, written: &[Written]) {
    let Some(anchor) = anchor else { return };
    let Some((from, to)) = anchor_span(written) else { return };
    match anchor.advance(&from, &to) {
        Ok(Advanced::Written) => {}
        Ok(Advanced::Kept(kept)) => {
            // another process sharing the file may have anchored a later head of this same log
            let held: Option<String> = conn
                .query_row(
                    "SELECT hash FROM audit_log WHERE seq = ?1",
                    [i64::try_from(kept.seq).unwrap_or(i64::MAX)],
                    |r| r.get(0),
                )
                .optional()
                .unwrap_or_default();
            report_kept(anchor, &kept, &from, held);
        }
        Err(e) => tracing::error!("audit anchor: {e}"),
    }
}
