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

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::{AnyConnection, AnyPool, Row};
use tokio::sync::{mpsc, oneshot};

use super::audit::{AuditEntry, AuditRecord, GENESIS};
use super::{DelegationRecord, Fact, Message, Session, StoreError, StoreResult};
use crate::route::history::task_signature;

/// The most writes committed together.
const MAX_BATCH: usize = 512;
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
    /// A finished delegation: its tree node and its audit record together.
    Finish(Box<DelegationRecord>, AuditRecord),
}

pub(super) enum Written {
    Done,
    Audit(Box<AuditEntry>),
}

struct Job {
    write: Write,
    reply: oneshot::Sender<StoreResult<Written>>,
}

/// The handle through which the store's writes reach the writer task.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
    stats: Arc<Stats>,
}

/// How many writes the writer committed, in how many transactions.
#[derive(Debug, Default)]
struct Stats {
    writes: AtomicU64,
    commits: AtomicU64,
}

/// Writes committed and the transactions they took; `writes / commits` is
/// the mean group size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStats {
    pub writes: u64,
    pub commits: u64,
}

fn backend_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn stopped() -> StoreError {
    StoreError::Backend("the store's writer has stopped (its runtime shut down)".into())
}

impl Writer {
    /// Starts the writer task on the current tokio runtime.
    pub(super) fn spawn(pool: AnyPool, postgres: bool) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let stats = Arc::new(Stats::default());
        tokio::spawn(run(pool, postgres, queue, stats.clone()));
        Self { jobs, stats }
    }

    pub(super) fn stats(&self) -> WriteStats {
        WriteStats {
            writes: self.stats.writes.load(Ordering::Relaxed),
            commits: self.stats.commits.load(Ordering::Relaxed),
        }
    }

    /// Queues `write` and waits until it is committed.
    pub(super) async fn write(&self, write: Write) -> StoreResult<Written> {
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { write, reply }).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

async fn run(pool: AnyPool, postgres: bool, mut queue: mpsc::Receiver<Job>, stats: Arc<Stats>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    let counted = |n: usize| {
        stats.writes.fetch_add(n as u64, Ordering::Relaxed);
        stats.commits.fetch_add(1, Ordering::Relaxed);
    };
    while queue.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        match commit(&pool, postgres, jobs.iter().map(|j| &j.write)).await {
            Ok(written) => {
                counted(written.len());
                for (job, w) in jobs.drain(..).zip(written) {
                    let _ = job.reply.send(Ok(w));
                }
            }
            Err(e) if jobs.len() == 1 => {
                let _ = jobs.remove(0).reply.send(Err(e));
            }
            Err(_) => {
                for job in jobs.drain(..) {
                    let one = commit(&pool, postgres, std::iter::once(&job.write)).await;
                    if one.is_ok() {
                        counted(1);
                    }
                    let _ = job.reply.send(one.map(|mut w| w.remove(0)));
                }
            }
        }
    }
}

/// Applies `writes` in order in one transaction.
async fn commit<'a>(
    pool: &AnyPool,
    postgres: bool,
    writes: impl Iterator<Item = &'a Write> + Clone,
) -> StoreResult<Vec<Written>> {
    let audits = writes.clone().any(|w| matches!(w, Write::Audit(_) | Write::Finish(..)));
    let mut tx = if postgres {
        let mut tx = pool.begin().await.map_err(backend_err)?;
        if audits {
            // one chain across every server process: appends take turns
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(AUDIT_LOCK)
                .execute(&mut *tx)
                .await
                .map_err(backend_err)?;
        }
        tx
    } else {
        // take the write lock up front: the head we read stays the head
        pool.begin_with("BEGIN IMMEDIATE").await.map_err(backend_err)?
    };
    let mut head: Option<(u64, String)> = None;
    let mut out = Vec::new();
    for w in writes {
        out.push(match w {
            Write::Session(s) => {
                insert_session(&mut tx, s).await?;
                Written::Done
            }
            Write::Messages(m) => {
                insert_messages(&mut tx, m).await?;
                Written::Done
            }
            Write::Facts(f) => {
                insert_facts(&mut tx, f).await?;
                Written::Done
            }
            Write::Delegation(r) => {
                upsert_delegation(&mut tx, r).await?;
                Written::Done
            }
            Write::Audit(record) => Written::Audit(Box::new(append_audit(&mut tx, &mut head, record).await?)),
            Write::Finish(r, record) => {
                upsert_delegation(&mut tx, r).await?;
                Written::Audit(Box::new(append_audit(&mut tx, &mut head, record).await?))
            }
        });
    }
    tx.commit().await.map_err(backend_err)?;
    Ok(out)
}

async fn insert_session(conn: &mut AnyConnection, s: &Session) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO sessions (id, user_id, agent, parent_id, created_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT DO NOTHING",
    )
    .bind(s.id.to_string())
    .bind(s.user_id.to_string())
    .bind(s.agent.to_string())
    .bind(s.parent_id.map(|p| p.to_string()))
    .bind(s.created_at)
    .execute(conn)
    .await
    .map_err(backend_err)?;
    Ok(())
}

async fn insert_messages(conn: &mut AnyConnection, messages: &[Message]) -> StoreResult<()> {
    for m in messages {
        let metadata = serde_json::json!({"delegated_from": m.delegated_from, "delegation_depth": m.delegation_depth});
        sqlx::query(
            "INSERT INTO messages (id, session_id, role, content, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(m.session_id.to_string())
        .bind(m.role.clone())
        .bind(m.content.clone())
        .bind(metadata.to_string())
        .bind(m.created_at)
        .execute(&mut *conn)
        .await
        .map_err(backend_err)?;
    }
    Ok(())
}

async fn insert_facts(conn: &mut AnyConnection, facts: &[Fact]) -> StoreResult<()> {
    for f in facts {
        sqlx::query(
            "INSERT INTO memory_facts (id, user_id, scope, fact, fact_hash, source_request, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(f.user_id.to_string())
        .bind(f.scope.clone())
        .bind(f.fact.clone())
        .bind(super::sql::hash_hex(&f.fact))
        .bind(f.source_request.map(|r| r.to_string()))
        .bind(f.created_at)
        .execute(&mut *conn)
        .await
        .map_err(backend_err)?;
    }
    Ok(())
}

async fn upsert_delegation(conn: &mut AnyConnection, r: &DelegationRecord) -> StoreResult<()> {
    let signature = if r.signature.is_empty() { task_signature(&r.objective) } else { r.signature.clone() };
    sqlx::query(
        "INSERT INTO delegations (request_id, root_id, parent_id, user_id, origin, target, objective, \
         objective_hash, signature, status, error_code, attempts, depth, started_at, duration_ms, prompt_tokens, \
         completion_tokens, total_tokens) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (request_id) DO UPDATE SET status = excluded.status, error_code = excluded.error_code, \
         attempts = excluded.attempts, duration_ms = excluded.duration_ms, \
         prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, \
         total_tokens = excluded.total_tokens",
    )
    .bind(r.request_id.to_string())
    .bind(r.root_id.to_string())
    .bind(r.parent_id.map(|p| p.to_string()))
    .bind(r.user_id.to_string())
    .bind(r.origin.clone())
    .bind(r.target.clone())
    .bind(r.objective.clone())
    .bind(r.objective_hash.clone())
    .bind(signature)
    .bind(r.status.clone())
    .bind(r.error_code.clone())
    .bind(i64::from(r.attempts))
    .bind(i64::from(r.depth))
    .bind(r.started_at)
    .bind(r.duration_ms as i64)
    .bind(i64::from(r.tokens.prompt))
    .bind(i64::from(r.tokens.completion))
    .bind(i64::from(r.tokens.total))
    .execute(conn)
    .await
    .map_err(backend_err)?;
    Ok(())
}

/// Chains `record` to the head (read once per batch, then carried along).
async fn append_audit(
    conn: &mut AnyConnection,
    head: &mut Option<(u64, String)>,
    record: &AuditRecord,
) -> StoreResult<AuditEntry> {
    let (seq, prev) = match head.take() {
        Some(h) => h,
        None => {
            let row = sqlx::query("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
                .fetch_optional(&mut *conn)
                .await
                .map_err(backend_err)?;
            match row {
                Some(row) => (
                    row.try_get::<i64, _>("seq").map_err(backend_err)? as u64,
                    row.try_get::<String, _>("hash").map_err(backend_err)?,
                ),
                None => (0, GENESIS.to_string()),
            }
        }
    };
    let entry = record.clone().seal(seq + 1, &prev);
    let r = &entry.record;
    sqlx::query(
        "INSERT INTO audit_log (seq, request_id, root_id, origin, target, user_id, objective, outcome, error_code, \
         duration_ms, tokens, created_at, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(entry.seq as i64)
    .bind(r.request_id.to_string())
    .bind(r.root_id.to_string())
    .bind(r.origin.clone())
    .bind(r.target.clone())
    .bind(r.user_id.clone())
    .bind(r.objective.clone())
    .bind(r.outcome.clone())
    .bind(r.error_code.clone())
    .bind(r.duration_ms as i64)
    .bind(i64::from(r.tokens))
    .bind(r.created_at)
    .bind(entry.prev_hash.clone())
    .bind(entry.hash.clone())
    .execute(conn)
    .await
    .map_err(backend_err)?;
    *head = Some((entry.seq, entry.hash.clone()));
    Ok(entry)
}
