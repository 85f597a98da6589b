//! Group commit for the SQL store. Every write of the delegation path
//! (sessions, messages, facts, tree nodes, audit records) goes to one writer
//! task. Whenever it is free, the writer takes all the writes that queued up
//! while it was busy and commits them in one transaction: N concurrent
//! delegations cost one sync of the log, not N. Each caller still gets its
//! answer only once its own write is committed, so "durable before it is
//! acknowledged" holds exactly as with a commit per write.
//!
//! A batch that fails (a constraint, a full disk) is retried one write per
//! transaction, so one bad write fails alone and the others still land.
//!
//! With an anchor file configured, a batch that appended audit records
//! writes its new head there after the commit and before its callers are
//! answered (see [`super::anchor`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Connection as _};
use tokio::sync::{mpsc, oneshot};

use super::a2a_state::{A2aEventRecord, A2aTaskRecord};
use super::anchor::{Advanced, AnchorFile};
use super::audit::{AuditEntry, AuditHead, AuditRecord, GENESIS};
use super::backend_err;
use super::idem::{KeyClaim, KeyOp};
use super::journal::{STEP_INSERT, STEP_UPSERT};
use super::signature::task_signature;
use super::{
    Claim, Conversation, DelegationRecord, Durability, Fact, KeyAnswer, Message, Session, StoreError, StoreResult,
    TreeStep,
};

/// The most writes committed together.
pub(super) const MAX_BATCH: usize = 512;
/// Writes waiting for the writer; callers wait for room beyond this.
const QUEUE: usize = 8192;

/// An arbitrary, fixed key for the audit chain's advisory lock (PostgreSQL).
pub(super) const AUDIT_LOCK: i64 = 0x5357_4244_4155_4454; // "SWBDAUDT"

pub(super) enum Write {
    Session(Session),
    Messages(Vec<Message>),
    Facts(Vec<Fact>),
    Delegation(Box<DelegationRecord>),
    Audit(AuditRecord),
    /// A step of a durable tree (journal.rs).
    Step(Box<TreeStep>),
    /// A finished delegation: its conversation, tree node and audit record together.
    Finish(Box<Finish>),
    /// An A2A task's version and its stream events (a2a_state.rs). Its
    /// statements run one by one after the batch's other rows: whether the
    /// version was kept (a newer one may be on file) is its answer.
    A2a(Box<A2aChange>),
    /// An idempotency key's claim, kept answer or release (idem.rs): a kept
    /// answer or a release is a row of the batch; claims run after the
    /// batch's rows, in order, and each answers.
    Key(Box<KeyOp>),
}

/// A finished delegation's writes, and whether the commit must sync for them.
pub(super) struct Finish {
    pub(super) record: DelegationRecord,
    pub(super) audit: AuditRecord,
    pub(super) conversation: Conversation,
    pub(super) durability: Durability,
}

/// A change of an A2A task: its version, its new events, and whether the
/// commit must sync for it.
pub(super) struct A2aChange {
    pub(super) task: Option<A2aTaskRecord>,
    pub(super) events: Vec<A2aEventRecord>,
    pub(super) durability: Durability,
}

impl Write {
    /// Whether the commit that holds this write must sync the log before it
    /// returns. Every write must but these, which a commit holding nothing
    /// else makes without a sync (SQLite: `synchronous = NORMAL` for that
    /// transaction; PostgreSQL: `synchronous_commit = off`):
    ///
    /// - a step's start (or a resume's count of it): a step in state
    ///   `running`, written before its agent runs so that a restart finds
    ///   the tree;
    /// - a blocking A2A send's task, `working`, written before its turn runs
    ///   ([`Durability::WithNext`]);
    /// - that send's delegation's end ([`Durability::WithNext`]), followed at
    ///   once by the task's last version, which syncs.
    ///
    /// Such a write survives the process's crash as soon as it is
    /// acknowledged (the database, or the operating system, has it), and a
    /// power failure once the next synced commit returns: the log is written
    /// in order, so syncing it syncs every commit before. Nobody is answered
    /// on such a write before a synced commit follows it, so nothing
    /// acknowledged to a caller ever waits for a sync that has not happened.
    /// What a power failure can take is work whose caller has had no answer
    /// yet, as if the failure had come a moment earlier.
    pub(super) fn syncs(&self) -> bool {
        match self {
            Write::Step(step) => step.state != super::StepState::Running,
            Write::A2a(change) => change.durability == Durability::Now,
            Write::Finish(finish) => finish.durability == Durability::Now,
            Write::Key(op) => op.syncs(),
            _ => true,
        }
    }
}

pub(super) enum Written {
    Done,
    Audit(Box<AuditEntry>),
    /// An A2A task's version: whether it was written.
    Task(bool),
    /// An idempotency key's claim: how the key stands.
    Claim(Claim),
    /// A step that was not written: the row under its id is another
    /// caller's, or another replica took it over (the store tells which).
    Unwritten,
}

pub(super) struct Job {
    pub(super) write: Write,
    pub(super) reply: oneshot::Sender<StoreResult<Written>>,
}

/// The handle through which the store's writes reach the writer task.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
    stats: Arc<Stats>,
}

/// How many writes the writer committed, in how many transactions.
#[derive(Debug, Default)]
pub(super) struct Stats {
    writes: AtomicU64,
    commits: AtomicU64,
    synced: AtomicU64,
    /// Pages written to SQLite's log; PostgreSQL's are not counted.
    log_pages: AtomicU64,
    counts_pages: std::sync::atomic::AtomicBool,
}

/// Writes committed and the transactions they took; `writes / commits` is
/// the mean group size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStats {
    /// Writes committed.
    pub writes: u64,
    /// Transactions they were committed in.
    pub commits: u64,
    /// Of those, the ones that synced the log before they returned. The
    /// others held nothing but writes that wait for the next synced commit
    /// (steps' starts, and a blocking A2A send's task and delegation's end:
    /// `docs/DURABILITY.md`).
    pub synced: u64,
    /// SQLite: the database pages those transactions wrote to the log
    /// (each page a commit changed, whole; the checkpoint copies them into
    /// the database file again). None on PostgreSQL, whose pages are its
    /// server's.
    pub log_pages: Option<u64>,
}

impl Stats {
    /// Counts a commit of `writes`, which synced the log if any of them must ([`Write::syncs`]).
    pub(super) fn counted<'a>(&self, writes: impl Iterator<Item = &'a Write>) {
        let (mut n, mut synced) = (0, false);
        for w in writes {
            n += 1;
            synced |= w.syncs();
        }
        self.writes.fetch_add(n, Ordering::Relaxed);
        self.commits.fetch_add(1, Ordering::Relaxed);
        if synced {
            self.synced.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// From now on the log's pages are counted ([`Stats::paged`]): SQLite's writer, as it starts.
    pub(super) fn count_pages(&self) {
        self.counts_pages.store(true, Ordering::Relaxed);
    }

    /// Counts `pages` written to the log (SQLite's writer, after each commit).
    pub(super) fn paged(&self, pages: u64) {
        self.log_pages.fetch_add(pages, Ordering::Relaxed);
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the store's writer has stopped (its runtime shut down)".into())
}

impl Writer {
    /// Starts the writer task on the current tokio runtime.
    pub(super) fn spawn(pool: AnyPool, postgres: bool, anchor: Option<Arc<AnchorFile>>) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let stats = Arc::new(Stats::default());
        tokio::spawn(run(pool, postgres, queue, stats.clone(), anchor));
        Self { jobs, stats }
    }

    /// A writer whose jobs are taken by whatever `start` starts with the
    /// queue and the counts (the SQLite file's writer thread).
    pub(super) fn start(start: impl FnOnce(mpsc::Receiver<Job>, Arc<Stats>) -> StoreResult<()>) -> StoreResult<Self> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let stats = Arc::new(Stats::default());
        start(queue, stats.clone())?;
        Ok(Self { jobs, stats })
    }

    pub(super) fn stats(&self) -> WriteStats {
        WriteStats {
            writes: self.stats.writes.load(Ordering::Relaxed),
            commits: self.stats.commits.load(Ordering::Relaxed),
            synced: self.stats.synced.load(Ordering::Relaxed),
            log_pages: self
                .stats
                .counts_pages
                .load(Ordering::Relaxed)
                .then(|| self.stats.log_pages.load(Ordering::Relaxed)),
        }
    }

    /// Queues `write` and waits until it is committed.
    pub(super) async fn write(&self, write: Write) -> StoreResult<Written> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { write, reply }).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

async fn run(
    pool: AnyPool,
    postgres: bool,
    mut queue: mpsc::Receiver<Job>,
    stats: Arc<Stats>,
    anchor: Option<Arc<AnchorFile>>,
) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    let mut held = None;
    while queue.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        match commit(&pool, &mut held, postgres, jobs.iter().map(|j| &j.write)).await {
            Ok(written) => {
                stats.counted(jobs.iter().map(|j| &j.write));
                anchored(&pool, &mut held, anchor.as_ref(), &written).await;
                for (job, w) in jobs.drain(..).zip(written) {
                    let _ = job.reply.send(Ok(w));
                }
            }
            Err(e) if jobs.len() == 1 => {
                let _ = jobs.remove(0).reply.send(Err(e));
            }
            Err(_) => {
                for job in jobs.drain(..) {
                    let one = commit(&pool, &mut held, postgres, std::iter::once(&job.write)).await;
                    if let Ok(written) = &one {
                        stats.counted(std::iter::once(&job.write));
                        anchored(&pool, &mut held, anchor.as_ref(), written).await;
                    }
                    let _ = job.reply.send(one.map(|mut w| w.remove(0)));
                }
            }
        }
    }
}

/// The head a committed batch chained from and the head it left: what the
/// anchor file moves between. None when the batch appended no audit record.
pub(super) fn anchor_span(written: &[Written]) -> Option<(AuditHead, AuditHead)> {
    let mut audits = written.iter().filter_map(|w| match w {
        Written::Audit(e) => Some(e),
        Written::Done | Written::Task(_) | Written::Claim(_) | Written::Unwritten => None,
    });
    let first = audits.next()?;
    let last = audits.next_back().unwrap_or(first);
    let from = AuditHead { seq: first.seq.saturating_sub(1), hash: first.prev_hash.clone() };
    let to = AuditHead { seq: last.seq, hash: last.hash.clone() };
    Some((from, to))
}

/// Logs an anchor file that was kept at `kept` when the batch went on from
/// `from`, unless the log holds `kept` as written (`held`: the hash of the
/// log's record `kept.seq`), which is another process sharing the file
/// having anchored a later head of this same log.
pub(super) fn report_kept(anchor: &AnchorFile, kept: &AuditHead, from: &AuditHead, held: Option<String>) {
    if held.is_none_or(|hash| hash != kept.hash) {
        tracing::error!(
            "audit anchor: the anchor file {} holds record {}, which the log does not have as written (it goes on \
             from record {}): records were deleted or replaced in the database; the file is kept as the evidence",
            anchor.path().display(),
            kept.seq,
            from.seq
        );
    }
}

/// Moves the anchor file, if there is one, to the head of the audit records
/// a committed batch `written` appended. The commit stands whatever happens
/// here: a file that cannot be written, or that holds a head the log does
/// not (records deleted or replaced behind the store's back), is logged, and
/// `audit --verify` reports it.
async fn anchored(pool: &AnyPool, held: &mut Option<Held>, anchor: Option<&Arc<AnchorFile>>, written: &[Written]) {
    let Some(anchor) = anchor else { return };
    let Some((from, to)) = anchor_span(written) else { return };
    let file = anchor.clone();
    let start = from.clone();
    let kept = match tokio::task::spawn_blocking(move || file.advance(&start, &to)).await {
        Ok(Ok(Advanced::Written)) => return,
        Ok(Ok(Advanced::Kept(head))) => head,
        Ok(Err(e)) => {
            tracing::error!("audit anchor: {e}");
            return;
        }
        Err(e) => {
            tracing::error!("audit anchor: the file's write did not finish: {e}");
            return;
        }
    };
    // another process sharing the file may have anchored a later head of this same log
    let query =
        sqlx::query_as("SELECT hash FROM audit_log WHERE seq = $1").bind(i64::try_from(kept.seq).unwrap_or(i64::MAX));
    // on the connection the writer keeps, if it keeps one: its pool has no other
    let hash: Option<(String,)> = match held {
        Some(h) => query.fetch_optional(&mut *h.conn).await,
        None => query.fetch_optional(pool).await,
    }
    .unwrap_or_default();
    report_kept(anchor, &kept, &from, hash.map(|(h,)| h));
}

/// A batch, ready to be written: its rows by table (nodes and steps merged
/// as the store would merge them) and its audit records, still to be
/// chained to the head the transaction reads. Shared by both writers.
pub(super) struct Plan<'a> {
    /// The rows of every table but `audit_log` and `tree_steps`, in the order they are written.
    pub(super) tables: Vec<(Table, Vec<Vec<Val>>)>,
    /// The steps: each with its row and the writes that answer for it.
    /// Written after the tables, so that which were written (a step under
    /// another caller's id, or taken over, is not) answers those writes.
    pub(super) steps: Vec<(crate::protocol::RequestId, Vec<Val>, Vec<usize>)>,
    /// The audit records, with the index of the write each belongs to.
    audits: Vec<(usize, &'a AuditRecord)>,
    /// The A2A writes, in order, with the index of each: applied one
    /// statement at a time, as each answers whether its version was kept.
    pub(super) a2a: Vec<(usize, Option<&'a A2aTaskRecord>, &'a [A2aEventRecord])>,
    /// The idempotency keys' claims, in order, with the index of each.
    pub(super) claims: Vec<(usize, &'a KeyClaim)>,
    /// One answer per write; an audit append's is filled in by [`Plan::seal`].
    pub(super) out: Vec<Written>,
    /// Whether the commit must sync the log before it returns ([`Write::syncs`]).
    pub(super) sync: bool,
}

impl<'a> Plan<'a> {
    pub(super) fn new(writes: impl Iterator<Item = &'a Write>) -> Self {
        let mut rows = Rows::default();
        let mut audits: Vec<(usize, &AuditRecord)> = Vec::new();
        let mut a2a = Vec::new();
        let mut claims = Vec::new();
        let mut out = Vec::new();
        let mut sync = false;
        for (i, w) in writes.enumerate() {
            out.push(Written::Done);
            sync |= w.syncs();
            match w {
                Write::Session(s) => rows.session(s),
                Write::Messages(m) => m.iter().for_each(|m| rows.message(m)),
                Write::Facts(f) => f.iter().for_each(|f| rows.fact(f)),
                Write::Delegation(r) => rows.delegation(r),
                Write::Step(step) => rows.step(i, step, true),
                Write::Audit(record) => audits.push((i, record)),
                Write::Finish(finish) => {
                    let Finish { record, audit, conversation, .. } = &**finish;
                    if let Some(s) = &conversation.new_session {
                        rows.session(s);
                    }
                    conversation.messages.iter().for_each(|m| rows.message(m));
                    conversation.facts.iter().for_each(|f| rows.fact(f));
                    if let Some(step) = &conversation.step {
                        rows.step(i, step, false);
                    }
                    if let Some(key) = &conversation.key {
                        rows.key(key);
                    }
                    rows.delegation(record);
                    audits.push((i, audit));
                }
                Write::A2a(change) => a2a.push((i, change.task.as_ref(), change.events.as_slice())),
                Write::Key(op) => match &**op {
                    KeyOp::Claim(claim) => claims.push((i, claim)),
                    KeyOp::Settle(answer) => rows.key(answer),
                },
            }
        }
        // one row per node: a later write of the same node replaces an earlier one
        let mut seen = std::collections::HashSet::new();
        let mut nodes: Vec<Vec<Val>> =
            rows.delegations.into_iter().rev().filter(|(id, _)| seen.insert(*id)).map(|(_, r)| r).collect();
        nodes.reverse();
        // one row per step: the writes of a batch merge as the store would merge them (a write
        // under the id of another caller's step in the same batch is not merged: it is refused)
        let mut merged: Vec<(TreeStep, Vec<usize>)> = Vec::new();
        let mut at: std::collections::HashMap<crate::protocol::RequestId, usize> = std::collections::HashMap::new();
        for (write, step, answers) in rows.steps {
            let answering = if answers { vec![write] } else { Vec::new() };
            match at.get(&step.request_id) {
                Some(&i) if !super::journal::owned_by(&merged[i].0, &step) => {
                    if answers {
                        out[write] = Written::Unwritten;
                    }
                }
                Some(&i) => {
                    let (before, writes) = &mut merged[i];
                    *before = super::journal::merged(before, &step);
                    writes.extend(answering);
                }
                None => {
                    at.insert(step.request_id, merged.len());
                    merged.push((step, answering));
                }
            }
        }
        let steps = merged.into_iter().map(|(s, writes)| (s.request_id, step_row(&s), writes)).collect();
        let tables = vec![
            (SESSIONS, rows.sessions),
            (MESSAGES, rows.messages),
            (FACTS, rows.facts),
            (DELEGATIONS, nodes),
            (KEEPS, rows.keeps),
            (FREES, rows.frees),
        ];
        Self { tables, steps, audits, a2a, claims, out, sync }
    }

    /// Marks the writes of the steps that were not written (their ids not in `written`).
    pub(super) fn unwritten(&mut self, steps: &[(crate::protocol::RequestId, Vec<Val>, Vec<usize>)], written: &[bool]) {
        for ((_, _, writes), &w) in steps.iter().zip(written) {
            if !w {
                for &i in writes {
                    self.out[i] = Written::Unwritten;
                }
            }
        }
    }

    /// Whether the batch appends to the audit chain.
    pub(super) fn audits(&self) -> bool {
        !self.audits.is_empty()
    }

    /// Chains the batch's audit records to `head` (the anchored head the
    /// transaction read, or the log's last row): their `audit_log` rows and
    /// the new head (sequence number, hash).
    pub(super) fn seal(&mut self, head: Option<(i64, String)>) -> (Vec<Vec<Val>>, (i64, String)) {
        let (mut seq, mut prev) = head.map_or((0, GENESIS.to_string()), |(seq, hash)| (seq as u64, hash));
        let mut entries = Vec::with_capacity(self.audits.len());
        for &(i, record) in &self.audits {
            let entry = record.clone().seal(seq + 1, &prev);
            (seq, prev) = (entry.seq, entry.hash.clone());
            entries.push(audit_row(&entry));
            self.out[i] = Written::Audit(Box::new(entry));
        }
        (entries, (seq as i64, prev))
    }
}

/// The anchored head, kept beside the log and moved with every append.
pub(super) const HEAD_READ: &str = "SELECT seq, hash FROM audit_head WHERE id = 1";
/// The log's last row: where a chain without a head goes on from.
pub(super) const LOG_TAIL: &str = "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1";

/// Applies `writes` in one transaction, a statement per table: rows of the
/// same kind go into one multi-row `INSERT` (every statement is a round trip
/// to the database's thread or server, so a batch costs a handful of them
/// rather than five per delegation). Tables have no foreign keys between
/// them, so the order across tables does not matter; within a table, rows
/// keep the order of the writes. On PostgreSQL the writer keeps its
/// connection from one batch to the next while batches follow each other
/// closely (see [`Held`]).
async fn commit<'a>(
    pool: &AnyPool,
    held: &mut Option<Held>,
    postgres: bool,
    writes: impl Iterator<Item = &'a Write>,
) -> StoreResult<Vec<Written>> {
    if held.as_ref().is_some_and(|h| h.used.elapsed() > Held::FOR) {
        *held = None;
    }
    let conn = match held {
        Some(h) => &mut h.conn,
        None => &mut held.insert(Held { conn: pool.acquire().await.map_err(backend_err)?, used: Instant::now() }).conn,
    };
    let out = commit_on(conn, postgres, writes).await;
    match held {
        // back to the pool after a failure, and always on SQLite, where the
        // writer shares its pool (one connection to a database in memory) with the readers
        Some(_) if out.is_err() || !postgres => *held = None,
        Some(h) => h.used = Instant::now(),
        None => {}
    }
    out
}

/// The PostgreSQL writer's connection, kept between batches: taking it
/// from the pool costs a round trip each time (the pool checks the
/// connection before it hands it out). Kept only while batches follow each
/// other within [`Held::FOR`]: after a pause, or a failed batch, the next
/// batch takes a connection the pool has checked, so a server restarted
/// meanwhile costs no write.
struct Held {
    conn: PoolConnection<Any>,
    used: Instant,
}

impl Held {
    const FOR: Duration = Duration::from_secs(1);
}

/// `BEGIN` on PostgreSQL, in one round trip with what the transaction needs
/// first (a simple query runs its statements in order): the audit chain's
/// lock when the batch appends to it (one chain across every server
/// process: appends take turns), and no wait for the log's flush when the
/// batch holds nothing but writes that wait for the next sync ([`Write::syncs`]).
fn pg_begin(audits: bool, sync: bool) -> String {
    let mut begin = String::from("BEGIN");
    if audits {
        begin.push_str(&format!("; DO $$ BEGIN PERFORM pg_advisory_xact_lock({AUDIT_LOCK}); END $$"));
    }
    if !sync {
        begin.push_str("; SET LOCAL synchronous_commit = off");
    }
    begin
}

/// [`commit`] on the writer's connection.
async fn commit_on<'a>(
    conn: &mut AnyConnection,
    postgres: bool,
    writes: impl Iterator<Item = &'a Write>,
) -> StoreResult<Vec<Written>> {
    let mut plan = Plan::new(writes);
    let begin = if postgres {
        pg_begin(plan.audits(), plan.sync)
    } else {
        // take the write lock up front: the head we read stays the head
        "BEGIN IMMEDIATE".to_string()
    };
    let mut tx = conn.begin_with(sqlx::AssertSqlSafe(begin)).await.map_err(backend_err)?;
    let (mut entries, mut head_row) = (Vec::new(), Vec::new());
    if plan.audits() {
        // chain from the anchored head, not from the log's last row: records
        // deleted from the end stay a visible gap
        let mut head: Option<(i64, String)> =
            sqlx::query_as(HEAD_READ).fetch_optional(&mut *tx).await.map_err(backend_err)?;
        if head.is_none() {
            // no head (a new log, or one deleted): go on from the log, so the
            // service keeps recording; verify reports the missing head until then
            head = sqlx::query_as(LOG_TAIL).fetch_optional(&mut *tx).await.map_err(backend_err)?;
        }
        let (rows, (seq, prev)) = plan.seal(head);
        entries = rows;
        // the new head goes with the rows, in the same statement
        head_row.push(vec![Val::Int(1), Val::Int(seq), Val::Text(prev), Val::Int(super::now_ms())]);
    }
    let mut statements = Statements::new(postgres);
    let tables = std::mem::take(&mut plan.tables);
    for (table, rows) in tables.into_iter().chain([(AUDIT, entries), (HEAD, head_row)]) {
        statements.insert(&mut tx, table, rows).await?;
    }
    statements.flush(&mut tx).await?;
    let steps = std::mem::take(&mut plan.steps);
    if !steps.is_empty() {
        let written = write_steps(&mut tx, postgres, &steps).await?;
        let written: Vec<bool> = steps.iter().map(|(id, _, _)| written.contains(&id.to_string())).collect();
        plan.unwritten(&steps, &written);
    }
    for &(i, task, events) in &plan.a2a {
        plan.out[i] = Written::Task(super::a2a_state::put_task_with_events_on(&mut tx, task, events).await?);
    }
    for &(i, claim) in &plan.claims {
        plan.out[i] = Written::Claim(super::idem::claim_on(&mut tx, claim).await?);
    }
    tx.commit().await.map_err(backend_err)?;
    Ok(plan.out)
}

/// Writes a batch's steps in one statement; the ids it wrote (a step
/// under another caller's id, or taken over by another replica, is not).
async fn write_steps(
    conn: &mut AnyConnection,
    postgres: bool,
    steps: &[(crate::protocol::RequestId, Vec<Val>, Vec<usize>)],
) -> StoreResult<std::collections::HashSet<String>> {
    use std::fmt::Write as _;
    let Table(head, tail) = STEP_WRITE;
    let mut sql = String::from(head);
    let mut n = 0;
    for (i, (_, row, _)) in steps.iter().enumerate() {
        sql.push_str(if i == 0 { "(" } else { ", (" });
        for c in 0..row.len() {
            n += 1;
            let _ = if postgres {
                write!(sql, "{}${n}", if c > 0 { ", " } else { "" })
            } else {
                write!(sql, "{}?", if c > 0 { ", " } else { "" })
            };
        }
        sql.push(')');
    }
    sql.push_str(tail);
    sql.push_str(" RETURNING request_id");
    let mut query = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql)).persistent(false);
    for (_, row, _) in steps {
        for v in row {
            query = match v {
                Val::Text(t) => query.bind(t.clone()),
                Val::Opt(t) => query.bind(t.clone()),
                Val::Int(i) => query.bind(*i),
            };
        }
    }
    Ok(query.fetch_all(&mut *conn).await.map_err(backend_err)?.into_iter().collect())
}

/// A bound value.
pub(super) enum Val {
    Text(String),
    Opt(Option<String>),
    Int(i64),
}

/// `INSERT INTO table (columns) VALUES`, and what follows the rows.
#[derive(Clone, Copy)]
pub(super) struct Table(pub(super) &'static str, pub(super) &'static str);

const SESSIONS: Table =
    Table("INSERT INTO sessions (id, user_id, agent, parent_id, created_at) VALUES ", " ON CONFLICT DO NOTHING");
const MESSAGES: Table = Table("INSERT INTO messages (id, session_id, role, content, metadata, created_at) VALUES ", "");
const FACTS: Table = Table(
    "INSERT INTO memory_facts (id, user_id, scope, fact, fact_hash, source_request, created_at) VALUES ",
    " ON CONFLICT DO NOTHING",
);
const DELEGATIONS: Table = Table(
    "INSERT INTO delegations (request_id, root_id, parent_id, user_id, origin, target, objective, \
     objective_hash, signature, status, error_code, attempts, depth, started_at, duration_ms, prompt_tokens, \
     completion_tokens, total_tokens, consult) VALUES ",
    " ON CONFLICT (request_id) DO UPDATE SET status = excluded.status, error_code = excluded.error_code, \
     attempts = excluded.attempts, duration_ms = excluded.duration_ms, \
     prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, \
     total_tokens = excluded.total_tokens \
     WHERE delegations.user_id = excluded.user_id AND delegations.root_id = excluded.root_id \
       AND delegations.origin = excluded.origin",
);
/// A step's row, one statement per step (see [`Plan::steps`]): which were written is its answer.
pub(super) const STEP_WRITE: Table = Table(STEP_INSERT, STEP_UPSERT);
/// Finished requests' answers kept under their idempotency keys (`VALUES`
/// columns are `column1`… on both databases).
const KEEPS: Table = Table(
    "UPDATE idempotency_keys SET response = v.column3 FROM (VALUES ",
    ") AS v WHERE idempotency_keys.user_id = v.column1 AND idempotency_keys.idem_key = v.column2",
);
/// Failed requests' idempotency keys, freed.
const FREES: Table =
    Table("DELETE FROM idempotency_keys WHERE response IS NULL AND (user_id, idem_key) IN (VALUES ", ")");
pub(super) const AUDIT: Table = Table(
    "INSERT INTO audit_log (seq, request_id, root_id, origin, target, user_id, objective, outcome, error_code, \
     duration_ms, tokens, created_at, prev_hash, hash) VALUES ",
    "",
);

/// The anchored head, kept beside the log and moved with every append (one row, id 1).
pub(super) const HEAD: Table = Table(
    "INSERT INTO audit_head (id, seq, hash, updated_at) VALUES ",
    " ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, updated_at = excluded.updated_at",
);

/// Bound parameters per statement: under SQLite's 32 766 and PostgreSQL's 65 535.
const MAX_PARAMS: usize = 30_000;

/// The rows of a batch, by table.
#[derive(Default)]
struct Rows {
    sessions: Vec<Vec<Val>>,
    messages: Vec<Vec<Val>>,
    facts: Vec<Vec<Val>>,
    delegations: Vec<(crate::protocol::RequestId, Vec<Val>)>,
    /// Each step with the write it came in and whether that write answers for it (a step of its own).
    steps: Vec<(usize, TreeStep, bool)>,
    keeps: Vec<Vec<Val>>,
    frees: Vec<Vec<Val>>,
}

impl Rows {
    fn key(&mut self, k: &KeyAnswer) {
        let (user, key) = (Val::Text(k.user_id.to_string()), Val::Text(k.key.clone()));
        match &k.response {
            Some(response) => self.keeps.push(vec![user, key, Val::Text(response.clone())]),
            None => self.frees.push(vec![user, key]),
        }
    }

    fn session(&mut self, s: &Session) {
        self.sessions.push(vec![
            Val::Text(s.id.to_string()),
            Val::Text(s.user_id.to_string()),
            Val::Text(s.agent.to_string()),
            Val::Opt(s.parent_id.map(|p| p.to_string())),
            Val::Int(s.created_at),
        ]);
    }

    fn message(&mut self, m: &Message) {
        let mut metadata =
            serde_json::json!({"delegated_from": m.delegated_from, "delegation_depth": m.delegation_depth});
        if m.asked {
            metadata["asked"] = true.into();
        }
        self.messages.push(vec![
            Val::Text(uuid::Uuid::now_v7().to_string()),
            Val::Text(m.session_id.to_string()),
            Val::Text(m.role.clone()),
            Val::Text(m.content.clone()),
            Val::Text(metadata.to_string()),
            Val::Int(m.created_at),
        ]);
    }

    fn fact(&mut self, f: &Fact) {
        self.facts.push(vec![
            Val::Text(uuid::Uuid::now_v7().to_string()),
            Val::Text(f.user_id.to_string()),
            Val::Text(f.scope.clone()),
            Val::Text(f.fact.clone()),
            Val::Text(hex::encode(Sha256::digest(f.fact.as_bytes()))),
            Val::Opt(f.source_request.map(|r| r.to_string())),
            Val::Int(f.created_at),
        ]);
    }

    fn delegation(&mut self, r: &DelegationRecord) {
        let signature = if r.signature.is_empty() { task_signature(&r.objective) } else { r.signature.clone() };
        self.delegations.push((
            r.request_id,
            vec![
                Val::Text(r.request_id.to_string()),
                Val::Text(r.root_id.to_string()),
                Val::Opt(r.parent_id.map(|p| p.to_string())),
                Val::Text(r.user_id.to_string()),
                Val::Text(r.origin.clone()),
                Val::Text(r.target.clone()),
                Val::Text(r.objective.clone()),
                Val::Text(r.objective_hash.clone()),
                Val::Text(signature),
                Val::Text(r.status.clone()),
                Val::Opt(r.error_code.clone()),
                Val::Int(i64::from(r.attempts)),
                Val::Int(i64::from(r.depth)),
                Val::Int(r.started_at),
                Val::Int(r.duration_ms as i64),
                Val::Int(i64::from(r.tokens.prompt)),
                Val::Int(i64::from(r.tokens.completion)),
                Val::Int(i64::from(r.tokens.total)),
                Val::Int(i64::from(r.consult)),
            ],
        ));
    }
}

impl Rows {
    fn step(&mut self, write: usize, s: &TreeStep, answers: bool) {
        self.steps.push((write, s.clone(), answers));
    }
}

fn step_row(s: &TreeStep) -> Vec<Val> {
    vec![
        Val::Text(s.request_id.to_string()),
        Val::Text(s.root_id.to_string()),
        Val::Opt(s.parent_id.map(|p| p.to_string())),
        Val::Text(s.user_id.to_string()),
        Val::Text(s.target.clone()),
        Val::Text(s.state.as_str().to_string()),
        Val::Text(s.entry.clone()),
        Val::Text(s.caller.clone()),
        Val::Text(s.request.clone()),
        Val::Opt(s.response.clone()),
        Val::Int(s.deadline_at),
        Val::Int(i64::from(s.budget)),
        Val::Int(i64::from(s.attempts)),
        Val::Opt(s.reads.clone()),
        Val::Int(i64::from(s.resumes)),
        Val::Opt(s.pii.clone()),
        Val::Int(s.created_at),
        Val::Int(s.updated_at),
        Val::Opt(s.owner.clone()),
    ]
}

fn audit_row(entry: &AuditEntry) -> Vec<Val> {
    let r = &entry.record;
    vec![
        Val::Int(entry.seq as i64),
        Val::Text(r.request_id.to_string()),
        Val::Text(r.root_id.to_string()),
        Val::Text(r.origin.clone()),
        Val::Text(r.target.clone()),
        Val::Text(r.user_id.clone()),
        Val::Text(r.objective.clone()),
        Val::Text(r.outcome.clone()),
        Val::Opt(r.error_code.clone()),
        Val::Int(r.duration_ms as i64),
        Val::Int(i64::from(r.tokens)),
        Val::Int(r.created_at),
        Val::Text(entry.prev_hash.clone()),
        Val::Text(entry.hash.clone()),
    ]
}

/// The `INSERT` statements of a batch, as few as the parameter limit allows.
/// Every execution is a round trip to the database's thread (SQLite) or
/// server, and under load each costs far more than the rows it carries. On
/// SQLite all of a batch's statements go in one execution (its placeholders
/// are `?`: binding numbered ones scans the list of names, quadratic in a
/// statement of thousands). PostgreSQL takes one statement per execution, so
/// there the `INSERT`s become the data-modifying `WITH` clauses of one
/// statement (each runs once, to completion, whether or not it is read):
/// a batch's rows cost one round trip, or one per 65 535 parameters.
/// Statements are not cached: each batch size is a statement of its own.
struct Statements {
    postgres: bool,
    sql: String,
    values: Vec<Val>,
    /// `WITH` clauses in `sql` (PostgreSQL).
    clauses: usize,
}

/// Bound parameters per PostgreSQL statement.
const PG_MAX_PARAMS: usize = 65_535;

impl Statements {
    fn new(postgres: bool) -> Self {
        Self { postgres, sql: String::new(), values: Vec::new(), clauses: 0 }
    }

    async fn insert(&mut self, conn: &mut AnyConnection, table: Table, rows: Vec<Vec<Val>>) -> StoreResult<()> {
        use std::fmt::Write as _;
        let Table(head, tail) = table;
        let columns = rows.first().map_or(1, Vec::len);
        let per_statement = (MAX_PARAMS / columns).max(1);
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<Vec<Val>> = rows.by_ref().take(per_statement).collect();
            if self.postgres {
                if self.values.len() + chunk.len() * columns > PG_MAX_PARAMS {
                    self.flush(conn).await?;
                }
                self.sql.push_str(if self.clauses == 0 { "WITH " } else { ", " });
                let _ = write!(self.sql, "w{} AS (", self.clauses);
                self.clauses += 1;
            }
            self.sql.push_str(head);
            for (i, row) in chunk.into_iter().enumerate() {
                self.sql.push_str(if i == 0 { "(" } else { ", (" });
                for c in 0..columns {
                    if c > 0 {
                        self.sql.push_str(", ");
                    }
                    if self.postgres {
                        let _ = write!(self.sql, "${}", self.values.len() + c + 1);
                    } else {
                        self.sql.push('?');
                    }
                }
                self.sql.push(')');
                self.values.extend(row);
            }
            self.sql.push_str(tail);
            self.sql.push_str(if self.postgres { ")" } else { ";\n" });
        }
        Ok(())
    }

    async fn flush(&mut self, conn: &mut AnyConnection) -> StoreResult<()> {
        if self.sql.is_empty() {
            return Ok(());
        }
        if self.postgres {
            self.sql.push_str(" SELECT 1");
            self.clauses = 0;
        }
        let mut query = sqlx::query(sqlx::AssertSqlSafe(std::mem::take(&mut self.sql))).persistent(false);
        for v in self.values.drain(..) {
            query = match v {
                Val::Text(t) => query.bind(t),
                Val::Opt(t) => query.bind(t),
                Val::Int(i) => query.bind(i),
            };
        }
        query.execute(&mut *conn).await.map_err(backend_err)?;
        Ok(())
    }
}
