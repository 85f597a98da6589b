//! The SQL store: SQLite (the embedded default: a file in WAL mode, created
//! on first use, every commit synced) and PostgreSQL (for more than one
//! server process), through one code path on sqlx's `Any` driver and one set
//! of migrations. Audit appends are serialized (SQLite: `BEGIN IMMEDIATE`;
//! PostgreSQL: a transaction-scoped advisory lock), so the hash chain never
//! forks, and they are committed before the call returns.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, AssertSqlSafe, Executor, SqlSafeStr};

use super::a2a_state::{A2aTaskPage, A2aTaskQuery, A2aTaskRecord, BreakerRecord};
use super::anchor::AnchorFile;
use super::audit::{AuditEntry, AuditHead, AuditRecord};
use super::backend_err;
use super::facts_cache::{FactsCache, Listening};
use super::idem::{KeyClaim, KeyOp};
use super::rows::{AuditRow, CountsRow, DelegationRow, FactRow, MessageRow, SessionRow, convert};
use super::sqlite_read::Readers;
pub use super::writer::WriteStats;
use super::writer::{A2aChange, Finish, Write, Writer, Written};
use super::{
    Approval, ApprovalState, Claim, Conversation, DelegationRecord, Fact, Held, Holder, KeyAnswer, Message, MoneyEntry,
    MoneyPlan, Outcome, Redacted, ReplayRecord, Session, Store, StoreCounts, StoreError, StoreResult, TreeStep, now_ms,
};
use crate::protocol::{AgentSlug, RequestId, SessionId, UserId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

/// A store in SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub struct SqlStore {
    pool: AnyPool,
    backend: Backend,
    writer: Writer,
    anchor: Option<Arc<AnchorFile>>,
    /// An SQLite file's hot reads, off the pool (None for PostgreSQL and an in-memory SQLite).
    readers: Option<Arc<Readers>>,
    /// PostgreSQL's users' facts in memory, and the task that keeps them true (None on SQLite).
    facts: Option<(Arc<FactsCache>, Arc<Listening>)>,
}

/// How long a pooled connection stays trusted after its last use: one
/// idle for longer is pinged before it is handed out again (sqlx pings every
/// time by default, which under load costs a round trip per query).
const TRUSTED_FOR: std::time::Duration = std::time::Duration::from_secs(1);

fn migrator(backend: Backend) -> Migrator {
    let m = |version, name: &'static str, sql: &'static str| {
        Migration::new(version, name.into(), MigrationType::Simple, sql.into_sql_str(), false)
    };
    Migrator::with_migrations(vec![
        m(1, "init", include_str!("migrations/0001_init.sql")),
        m(2, "tokens", include_str!("migrations/0002_tokens.sql")),
        m(3, "audit_head", include_str!("migrations/0003_audit_head.sql")),
        m(4, "ledger", include_str!("migrations/0004_ledger.sql")),
        m(5, "journal", include_str!("migrations/0005_journal.sql")),
        m(6, "a2a_breakers", include_str!("migrations/0006_a2a_breakers.sql")),
        m(7, "replay", include_str!("migrations/0007_replay.sql")),
        m(8, "a2a_events", include_str!("migrations/0008_a2a_events.sql")),
        m(9, "a2a_push", include_str!("migrations/0009_a2a_push.sql")),
        m(10, "replicas", include_str!("migrations/0010_replicas.sql")),
        match backend {
            Backend::Postgres => m(11, "facts_notify", include_str!("migrations/0011_facts_notify.sql")),
            Backend::Sqlite => m(11, "facts_notify", include_str!("migrations/0011_facts_notify.sqlite.sql")),
        },
        m(12, "idempotency_holders", include_str!("migrations/0012_idempotency_holders.sql")),
        m(13, "a2a_task_vaults", include_str!("migrations/0013_a2a_task_vaults.sql")),
        match backend {
            Backend::Postgres => m(
                14,
                "analytics",
                concat!(
                    include_str!("migrations/0014_analytics.sql"),
                    include_str!("migrations/0014_analytics.postgres.sql")
                ),
            ),
            Backend::Sqlite => m(
                14,
                "analytics",
                concat!(
                    include_str!("migrations/0014_analytics.sql"),
                    include_str!("migrations/0014_analytics.sqlite.sql")
                ),
            ),
        },
        m(15, "money_entries", include_str!("migrations/0015_money_entries.sql")),
        m(16, "tree_indexes", include_str!("migrations/0016_tree_indexes.sql")),
    ])
}

/// The tree of the delegation `{mark}1` (any node of it, or its root's id),
/// the root's id found first, in one statement; `mark` is the backend's
/// parameter mark.
pub(super) fn delegation_tree_sql(mark: &str) -> String {
    let tree = super::trees::of_tree("d", "t.root");
    format!(
        "WITH t (root) AS (SELECT COALESCE((SELECT root_id FROM delegations WHERE request_id = {mark}1), {mark}1)) \
         SELECT {DELEGATION_COLUMNS} FROM t, delegations d WHERE {tree} ORDER BY d.started_at, d.request_id"
    )
}

fn audited(written: Written) -> StoreResult<AuditEntry> {
    match written {
        Written::Audit(entry) => Ok(*entry),
        _ => Err(StoreError::Backend("the writer answered an audit append without its entry".into())),
    }
}

impl SqlStore {
    /// Connects (creating an SQLite file if needed) and runs the migrations.
    /// URLs: `sqlite://PATH`, `sqlite::memory:`, `postgres://user@host:port/db`.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_anchored(url, None).await
    }

    /// [`SqlStore::connect`], and when `anchor_file` is given, the audit
    /// head is written there after every batch that appends audit records
    /// (see [`super::anchor`]); its directory must exist.
    pub async fn connect_anchored(url: &str, anchor_file: Option<&Path>) -> StoreResult<Self> {
        let anchor = anchor_file
            .map(AnchorFile::new)
            .transpose()
            .map_err(|e| StoreError::Backend(format!("audit.anchor_file: {e}")))?
            .map(Arc::new);
        sqlx::any::install_default_drivers();
        let (backend, url) = if url.starts_with("sqlite:") {
            (Backend::Sqlite, sqlite_url(url))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            if cfg!(not(feature = "postgres")) {
                return Err(StoreError::Backend(format!(
                    "cannot open '{}': this build of Switchboard leaves out PostgreSQL (the `postgres` feature)",
                    redact_url(url)
                )));
            }
            (Backend::Postgres, url.to_string())
        } else {
            return Err(StoreError::Backend(format!(
                "unsupported database URL '{}': use sqlite://PATH or postgres://USER@HOST:PORT/DB",
                url.split('@').next_back().unwrap_or(url).chars().take(60).collect::<String>()
            )));
        };
        let memory = url.contains(":memory:") || url.contains("mode=memory");
        let open = |connections: u32| {
            let mut options = AnyPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(std::time::Duration::from_secs(5))
                // a connection back from use a moment ago is not pinged again (a round
                // trip per query under load); one that sat idle is, and a dead one is dropped
                .test_before_acquire(false)
                .before_acquire(|conn, meta| {
                    Box::pin(async move {
                        if meta.idle_for >= TRUSTED_FOR {
                            sqlx::Connection::ping(conn).await?;
                        }
                        Ok(true)
                    })
                });
            if backend == Backend::Sqlite {
                options = options.after_connect(|conn, _meta| {
                    Box::pin(async move {
                        // WAL for concurrent readers; FULL: every commit reaches the disk.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = FULL").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                        Ok(())
                    })
                });
            }
            let url = url.clone();
            async move {
                options
                    .connect(&url)
                    .await
                    .map_err(|e| StoreError::Backend(format!("cannot open the database ({}): {e}", redact_url(&url))))
            }
        };
        let pool = open(match (backend, memory) {
            (Backend::Sqlite, true) => 1, // each connection would see its own database
            (Backend::Sqlite, false) => 8,
            (Backend::Postgres, _) => 16,
        })
        .await?;
        // sqlx's migration lock is a no-op on SQLite: two processes opening a
        // fresh file race, and the loser's transaction rolls back. Running
        // again finds the winner's work done.
        let migrator = migrator(backend);
        let mut tries = 0;
        loop {
            match migrator.run(&pool).await {
                Ok(()) => break,
                Err(_) if tries < 5 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100 * tries)).await;
                }
                Err(e) => return Err(StoreError::Backend(format!("migrations failed: {e}"))),
            }
        }
        // The writer has a connection of its own: under load, readers queued
        // for the pool must not hold up the commits everyone is waiting for.
        let (writer, readers) = match (backend, memory) {
            // an SQLite file: the writer thread's own synchronous connection, and read connections
            (Backend::Sqlite, false) => {
                let file = sqlite_file(&pool).await?;
                (super::sqlite_writer::writer(&file, anchor.clone())?, Some(Arc::new(Readers::new(&file)?)))
            }
            (Backend::Sqlite, true) => (Writer::spawn(pool.clone(), false, anchor.clone()), None),
            (Backend::Postgres, _) => (Writer::spawn(open(1).await?, true, anchor.clone()), None),
        };
        #[cfg(feature = "postgres")]
        let facts = (backend == Backend::Postgres).then(|| {
            let cache = Arc::new(FactsCache::default());
            (cache.clone(), Arc::new(super::facts_cache::listen(cache, url.clone())))
        });
        #[cfg(not(feature = "postgres"))]
        let facts = None;
        Ok(Self { pool, backend, writer, anchor, readers, facts })
    }

    /// Keeps or frees an idempotency key. On SQLite the writer writes it,
    /// in a batch's commit. On PostgreSQL keys (claims too) are statements
    /// of their own on pooled connections, side by side, rather than the
    /// writer's: its transaction runs statements one after another, and a
    /// round trip per key there held every other write of the batch
    /// (measured: −12% delegations a second with a key each at 64
    /// connections), while PostgreSQL flushes concurrent commits together
    /// on its own.
    async fn settle_key(&self, answer: KeyAnswer) -> StoreResult<()> {
        if self.is_postgres() {
            let mut conn = self.pool.acquire().await.map_err(backend_err)?;
            return super::idem::settle_on(&mut conn, &answer).await;
        }
        self.writer.write(Write::Key(Box::new(KeyOp::Settle(answer)))).await.map(drop)
    }

    /// Whether the backend is PostgreSQL (else SQLite).
    pub fn is_postgres(&self) -> bool {
        self.backend == Backend::Postgres
    }

    /// Writes committed so far and the transactions they took (group commit).
    pub fn write_stats(&self) -> WriteStats {
        self.writer.stats()
    }

    /// Forgets the cached facts of the users `written` are about, once their
    /// write committed: this process reads its own writes at once, without
    /// waiting for the notification the trigger sends everyone.
    fn forget_facts<'a>(&self, users: impl IntoIterator<Item = &'a UserId>) {
        if let Some((cache, _)) = &self.facts {
            users.into_iter().for_each(|u| cache.forget(u.as_str()));
        }
    }

    /// The connection pool, for operators' tools and tests.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }
}

/// The file of the SQLite database `pool` is open on, as SQLite names it
/// (so the writer's own connection opens the same file whatever the URL's
/// form).
async fn sqlite_file(pool: &AnyPool) -> StoreResult<std::path::PathBuf> {
    let file: Option<String> = sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
        .fetch_optional(pool)
        .await
        .map_err(backend_err)?;
    match file.filter(|f| !f.is_empty()) {
        Some(f) => Ok(f.into()),
        None => Err(StoreError::Backend("the SQLite database has no file (use sqlite::memory: for none)".into())),
    }
}

/// sqlx creates an SQLite file only with `mode=rwc`.
fn sqlite_url(url: &str) -> String {
    if url.contains(":memory:") || url.contains("mode=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

/// The URL without its password, for messages.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

const SESSION_COLUMNS: &str = "id, user_id, agent, parent_id, created_at";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow { id: r.get(0)?, user_id: r.get(1)?, agent: r.get(2)?, parent_id: r.get(3)?, created_at: r.get(4)? })
}

/// The columns of a [`DelegationRow`], in [`delegation_row`]'s order.
const DELEGATION_COLUMNS: &str = "request_id, root_id, parent_id, user_id, origin, target, objective, objective_hash, \
     signature, status, error_code, attempts, depth, started_at, duration_ms, prompt_tokens, completion_tokens, \
     total_tokens, consult";

fn delegation_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DelegationRow> {
    Ok(DelegationRow {
        request_id: r.get(0)?,
        root_id: r.get(1)?,
        parent_id: r.get(2)?,
        user_id: r.get(3)?,
        origin: r.get(4)?,
        target: r.get(5)?,
        objective: r.get(6)?,
        objective_hash: r.get(7)?,
        signature: r.get(8)?,
        status: r.get(9)?,
        error_code: r.get(10)?,
        attempts: r.get(11)?,
        depth: r.get(12)?,
        started_at: r.get(13)?,
        duration_ms: r.get(14)?,
        prompt_tokens: r.get(15)?,
        completion_tokens: r.get(16)?,
        total_tokens: r.get(17)?,
        consult: r.get(18)?,
    })
}

impl SqlStore {
    /// The placeholder sign of this store's hot reads: `?n` for the SQLite
    /// read connections, `$n` for sqlx.
    fn mark(&self) -> &'static str {
        if self.readers.is_some() { "?" } else { "$" }
    }

    async fn session_by_id(&self, id: SessionId) -> StoreResult<Option<Session>> {
        let m = self.mark();
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = {m}1");
        let row = match &self.readers {
            Some(readers) => readers.rows(&sql, [id.to_string()], session_row)?.into_iter().next(),
            None => sqlx::query_as::<_, SessionRow>(AssertSqlSafe(sql))
                .bind(id.to_string())
                .fetch_optional(&self.pool)
                .await
                .map_err(backend_err)?,
        };
        row.map(Session::try_from).transpose()
    }

    async fn insert_session(&self, s: &Session) -> StoreResult<()> {
        self.writer.write(Write::Session(s.clone())).await.map(drop)
    }
}

#[async_trait]
impl Store for SqlStore {
    fn write_stats(&self) -> Option<WriteStats> {
        Some(SqlStore::write_stats(self))
    }

    async fn ensure_session(
        &self,
        user: &UserId,
        agent: &AgentSlug,
        id: Option<SessionId>,
        parent: Option<SessionId>,
    ) -> StoreResult<Session> {
        let id = id.unwrap_or_default();
        if let Some(s) = self.session_by_id(id).await? {
            return if &s.user_id == user { Ok(s) } else { Err(StoreError::UserMismatch) };
        }
        let s = Session::new(user, agent, id, parent);
        self.insert_session(&s).await?;
        // Another request may have created it first: whoever owns it now decides.
        match self.session_by_id(id).await? {
            Some(s) if &s.user_id == user => Ok(s),
            Some(_) => Err(StoreError::UserMismatch),
            None => Err(StoreError::Backend("a session vanished right after it was created".into())),
        }
    }

    async fn child_session(&self, user: &UserId, agent: &AgentSlug, parent: SessionId) -> StoreResult<Session> {
        if self.session_by_id(parent).await?.is_some_and(|p| &p.user_id != user) {
            return Err(StoreError::UserMismatch);
        }
        if let Some(s) = self.find_child_session(user, agent, parent).await? {
            return Ok(s);
        }
        let s = Session::new(user, agent, SessionId::new(), Some(parent));
        self.insert_session(&s).await?;
        self.find_child_session(user, agent, parent)
            .await?
            .ok_or_else(|| StoreError::Backend("a child session vanished right after it was created".into()))
    }

    async fn session(&self, id: SessionId) -> StoreResult<Option<Session>> {
        self.session_by_id(id).await
    }

    async fn find_child_session(
        &self,
        user: &UserId,
        agent: &AgentSlug,
        parent: SessionId,
    ) -> StoreResult<Option<Session>> {
        let m = self.mark();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE user_id = {m}1 AND agent = {m}2 AND parent_id = {m}3"
        );
        let row = match &self.readers {
            Some(readers) => readers
                .rows(&sql, [user.to_string(), agent.to_string(), parent.to_string()], session_row)?
                .into_iter()
                .next(),
            None => sqlx::query_as::<_, SessionRow>(AssertSqlSafe(sql))
                .bind(user.to_string())
                .bind(agent.to_string())
                .bind(parent.to_string())
                .fetch_optional(&self.pool)
                .await
                .map_err(backend_err)?,
        };
        row.map(Session::try_from).transpose()
    }

    async fn append_messages(&self, messages: &Redacted<Vec<Message>>) -> StoreResult<()> {
        self.writer.write(Write::Messages((**messages).clone())).await.map(drop)
    }

    async fn recent_messages(&self, session: SessionId, limit: usize) -> StoreResult<Vec<Message>> {
        let rows = if let Some(readers) = &self.readers {
            readers.rows(
                "SELECT session_id, role, content, metadata, created_at FROM messages WHERE session_id = ?1 \
                 ORDER BY id DESC LIMIT ?2",
                rusqlite::params![session.to_string(), limit as i64],
                |r| {
                    Ok(MessageRow {
                        session_id: r.get(0)?,
                        role: r.get(1)?,
                        content: r.get(2)?,
                        metadata: r.get(3)?,
                        created_at: r.get(4)?,
                    })
                },
            )?
        } else {
            sqlx::query_as::<_, MessageRow>(
                "SELECT session_id, role, content, metadata, created_at FROM messages WHERE session_id = $1 \
                 ORDER BY id DESC LIMIT $2",
            )
            .bind(session.to_string())
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(backend_err)?
        };
        let mut out: Vec<Message> = convert(rows)?;
        out.reverse();
        Ok(out)
    }

    async fn facts(&self, user: &UserId, scopes: &[String], limit: usize) -> StoreResult<Vec<Fact>> {
        if scopes.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let ticket = match &self.facts {
            Some((cache, _)) => match cache.get(user, scopes, limit) {
                Ok(kept) => return Ok(kept),
                Err(ticket) => Some(ticket),
            },
            None => None,
        };
        // placeholders for every value; the limit is a number of the code's, not a caller's text
        let mark = self.mark();
        let marks: Vec<String> = (0..scopes.len()).map(|i| format!("{mark}{}", i + 2)).collect();
        let sql = format!(
            "SELECT user_id, scope, fact, source_request, created_at FROM memory_facts \
             WHERE user_id = {mark}1 AND scope IN ({}) ORDER BY created_at DESC, id DESC LIMIT {}",
            marks.join(", "),
            i64::try_from(limit).unwrap_or(i64::MAX)
        );
        let rows = if let Some(readers) = &self.readers {
            let params = std::iter::once(user.as_str()).chain(scopes.iter().map(String::as_str));
            readers.rows(&sql, rusqlite::params_from_iter(params), |r| {
                Ok(FactRow {
                    user_id: r.get(0)?,
                    scope: r.get(1)?,
                    fact: r.get(2)?,
                    source_request: r.get(3)?,
                    created_at: r.get(4)?,
                })
            })?
        } else {
            let mut q = sqlx::query_as::<_, FactRow>(AssertSqlSafe(sql)).bind(user.to_string());
            for s in scopes {
                q = q.bind(s.clone());
            }
            q.fetch_all(&self.pool).await.map_err(backend_err)?
        };
        let mut facts: Vec<Fact> = convert(rows)?;
        facts.reverse();
        if let (Some((cache, _)), Some(ticket)) = (&self.facts, ticket) {
            cache.keep(ticket, user, scopes, limit, &facts);
        }
        Ok(facts)
    }

    async fn add_facts(&self, facts: &Redacted<Vec<Fact>>) -> StoreResult<()> {
        self.writer.write(Write::Facts((**facts).clone())).await?;
        self.forget_facts(facts.iter().map(|f| &f.user_id));
        Ok(())
    }

    async fn append_audit(&self, record: Redacted<AuditRecord>) -> StoreResult<AuditEntry> {
        audited(self.writer.write(Write::Audit(record.into_inner())).await?)
    }

    async fn audit_log(&self) -> StoreResult<Vec<AuditEntry>> {
        let rows = sqlx::query_as::<_, AuditRow>(
            "SELECT seq, request_id, root_id, origin, target, user_id, objective, outcome, error_code, duration_ms, \
             tokens, created_at, prev_hash, hash FROM audit_log ORDER BY seq",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(backend_err)?;
        convert(rows)
    }

    async fn audit_head(&self) -> StoreResult<Option<AuditHead>> {
        if let Some(readers) = &self.readers {
            let rows = readers.rows("SELECT seq, hash FROM audit_head WHERE id = 1", [], |r| {
                Ok(AuditHead { seq: r.get::<_, i64>(0)? as u64, hash: r.get(1)? })
            })?;
            return Ok(rows.into_iter().next());
        }
        let head: Option<(i64, String)> = sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1")
            .fetch_optional(&self.pool)
            .await
            .map_err(backend_err)?;
        Ok(head.map(|(seq, hash)| AuditHead { seq: seq as u64, hash }))
    }

    fn anchor_file(&self) -> Option<&Path> {
        self.anchor.as_deref().map(AnchorFile::path)
    }

    async fn put_delegation(&self, r: &Redacted<DelegationRecord>) -> StoreResult<()> {
        self.writer.write(Write::Delegation(Box::new((**r).clone()))).await.map(drop)
    }

    async fn record_delegation(
        &self,
        r: &Redacted<DelegationRecord>,
        audit: Redacted<AuditRecord>,
        conversation: Redacted<Conversation>,
        durability: super::Durability,
    ) -> StoreResult<AuditEntry> {
        let (audit, conversation) = (audit.into_inner(), conversation.into_inner());
        // the anchor file is moved after the commit: an unsynced one could put it past what the log keeps
        let durability = if self.anchor.is_some() { super::Durability::Now } else { durability };
        let learned: Vec<UserId> = conversation.facts.iter().map(|f| f.user_id.clone()).collect();
        let finish = Finish { record: (**r).clone(), audit, conversation, durability };
        let entry = audited(self.writer.write(Write::Finish(Box::new(finish))).await?);
        self.forget_facts(&learned);
        entry
    }

    async fn delegation_tree(&self, request: RequestId) -> StoreResult<Vec<DelegationRecord>> {
        // the root's id and its tree, in one statement
        let m = self.mark();
        let sql = delegation_tree_sql(m);
        let rows = match &self.readers {
            Some(readers) => readers.rows(&sql, [request.to_string()], delegation_row)?,
            None => sqlx::query_as::<_, DelegationRow>(AssertSqlSafe(sql))
                .bind(request.to_string())
                .fetch_all(&self.pool)
                .await
                .map_err(backend_err)?,
        };
        convert(rows)
    }

    async fn seed_scores(&self, agent: &AgentSlug, signature: &str) -> StoreResult<Vec<(u64, f64)>> {
        let rows: Vec<(i64, f64)> = sqlx::query_as(
            "SELECT seed, score FROM seed_scores WHERE agent = $1 AND signature = $2 ORDER BY score DESC, seed",
        )
        .bind(agent.to_string())
        .bind(signature.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(backend_err)?;
        Ok(rows.into_iter().map(|(seed, score)| (seed as u64, score)).collect())
    }

    async fn adjust_seed_score(&self, agent: &AgentSlug, signature: &str, seed: u64, delta: f64) -> StoreResult<f64> {
        let mut tx = self.pool.begin().await.map_err(backend_err)?;
        let current: Option<f64> =
            sqlx::query_scalar("SELECT score FROM seed_scores WHERE agent = $1 AND signature = $2 AND seed = $3")
                .bind(agent.to_string())
                .bind(signature.to_string())
                .bind(seed as i64)
                .fetch_optional(&mut *tx)
                .await
                .map_err(backend_err)?;
        let score = (current.unwrap_or(0.0) + delta).clamp(-10.0, 10.0);
        sqlx::query(
            "INSERT INTO seed_scores (agent, signature, seed, score, updated_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (agent, signature, seed) DO UPDATE SET score = excluded.score, updated_at = excluded.updated_at",
        )
        .bind(agent.to_string())
        .bind(signature.to_string())
        .bind(seed as i64)
        .bind(score)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(backend_err)?;
        tx.commit().await.map_err(backend_err)?;
        Ok(score)
    }

    async fn recent_outcomes(&self, user: &UserId, limit: usize) -> StoreResult<Vec<Outcome>> {
        // a success in a tree its user rated down counts as none (ratings.rs)
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT d.target, CASE WHEN d.status = 'success' AND r.rating < 0 THEN 'rated_down' ELSE d.status END, \
             d.signature FROM delegations d LEFT JOIN ratings r ON r.root_id = d.root_id \
             WHERE d.user_id = $1 AND d.status <> 'refused' ORDER BY d.started_at DESC, d.request_id DESC LIMIT $2",
        )
        .bind(user.to_string())
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(backend_err)?;
        Ok(rows.into_iter().map(|(target, status, signature)| Outcome { target, status, signature }).collect())
    }

    async fn claim_idempotency(
        &self,
        user: &UserId,
        key: &str,
        request_hash: &str,
        holder: &Holder,
    ) -> StoreResult<Claim> {
        let claim = KeyClaim::new(user, key, request_hash, holder);
        if self.is_postgres() {
            // a statement of its own (see settle_key)
            let mut conn = self.pool.acquire().await.map_err(backend_err)?;
            return super::idem::claim_on(&mut conn, &claim).await;
        }
        match self.writer.write(Write::Key(Box::new(KeyOp::Claim(claim)))).await? {
            Written::Claim(claim) => Ok(claim),
            _ => Err(StoreError::Backend("the writer answered a claim without how the key stands".into())),
        }
    }

    async fn take_idempotency(&self, user: &UserId, key: &str, from: &Held, to: &Holder) -> StoreResult<bool> {
        super::idem::take(&self.pool, user, key, from, to).await
    }

    async fn complete_idempotency(&self, user: &UserId, key: &str, response: &Redacted<String>) -> StoreResult<()> {
        self.settle_key(KeyAnswer { user_id: user.clone(), key: key.into(), response: Some(response.to_string()) })
            .await
    }

    async fn release_idempotency(&self, user: &UserId, key: &str) -> StoreResult<()> {
        self.settle_key(KeyAnswer { user_id: user.clone(), key: key.into(), response: None }).await
    }

    async fn put_token(&self, hash: &str, kind: &str, subject: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO tokens (token_hash, kind, subject, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(hash.to_string())
        .bind(kind.to_string())
        .bind(subject.to_string())
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(backend_err)?;
        Ok(())
    }

    async fn find_token(&self, hash: &str) -> StoreResult<Option<(String, String)>> {
        sqlx::query_as("SELECT kind, subject FROM tokens WHERE token_hash = $1")
            .bind(hash.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(backend_err)
    }

    async fn token_subjects(&self, kind: &str) -> StoreResult<Vec<String>> {
        sqlx::query_scalar("SELECT DISTINCT subject FROM tokens WHERE kind = $1 ORDER BY subject")
            .bind(kind.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(backend_err)
    }

    async fn money_add(&self, entries: &Redacted<Vec<MoneyEntry>>) -> StoreResult<Vec<bool>> {
        super::money::add(&self.pool, entries).await
    }

    async fn money(&self, user: &UserId) -> StoreResult<Vec<MoneyEntry>> {
        super::money::entries(&self.pool, user).await
    }

    async fn money_update(
        &self,
        user: &UserId,
        id: &str,
        edit: &Redacted<(Option<String>, Option<String>)>,
    ) -> StoreResult<bool> {
        let (category, note) = &**edit;
        super::money::update(&self.pool, user, id, category.as_deref(), note.as_deref()).await
    }

    async fn put_money_plan(&self, plan: &Redacted<MoneyPlan>) -> StoreResult<()> {
        super::money::put_plan(&self.pool, plan).await
    }

    async fn money_plans(&self, user: &UserId) -> StoreResult<Vec<MoneyPlan>> {
        super::money::plans(&self.pool, user).await
    }

    async fn put_step(&self, step: &Redacted<TreeStep>) -> StoreResult<()> {
        match self.writer.write(Write::Step(Box::new((**step).clone()))).await? {
            // not written: another caller's step under that id, or one another replica took over (the fence)
            super::writer::Written::Unwritten => match self.step(step.request_id).await? {
                Some(before) if !super::journal::owned_by(&before, step) => {
                    Err(StoreError::Conflict(format!("step {}", step.request_id)))
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    async fn step(&self, id: RequestId) -> StoreResult<Option<TreeStep>> {
        if let Some(readers) = &self.readers {
            return super::journal::step_sqlite(readers, id);
        }
        super::journal::step(&self.pool, id).await
    }

    async fn tree_steps(&self, root: RequestId) -> StoreResult<Vec<TreeStep>> {
        super::journal::steps(&self.pool, root).await
    }

    async fn open_steps(&self) -> StoreResult<Vec<TreeStep>> {
        super::journal::open_steps(&self.pool).await
    }

    async fn cancel_tree(&self, root: RequestId, by: &str) -> StoreResult<u64> {
        super::journal::cancel_tree(&self.pool, root, by, now_ms()).await
    }

    async fn close_approvals(&self, root: RequestId, state: ApprovalState, by: &str) -> StoreResult<u64> {
        super::journal::close_approvals(&self.pool, root, state, by, now_ms()).await
    }

    fn shared(&self) -> bool {
        // PostgreSQL, or an SQLite file (only a file has read connections)
        self.backend == Backend::Postgres || self.readers.is_some()
    }

    async fn heartbeat(&self, replica: &super::Replica) -> StoreResult<()> {
        super::replicas::heartbeat(&self.pool, replica).await
    }

    async fn replicas(&self) -> StoreResult<Vec<super::Replica>> {
        super::replicas::replicas(&self.pool).await
    }

    async fn forget_replica(&self, id: &str) -> StoreResult<()> {
        super::replicas::forget(&self.pool, id, now_ms()).await
    }

    async fn take_step(&self, seen: &TreeStep, owner: &str) -> StoreResult<bool> {
        super::replicas::take_step(&self.pool, seen, owner).await
    }

    async fn cancelled_steps(&self, ids: &[RequestId]) -> StoreResult<Vec<RequestId>> {
        super::replicas::cancelled(&self.pool, ids).await
    }

    async fn ask_approval(&self, approval: &Redacted<Approval>) -> StoreResult<Approval> {
        super::journal::ask_approval(&self.pool, approval).await
    }

    async fn put_replay(&self, replay: &Redacted<ReplayRecord>) -> StoreResult<()> {
        super::journal::put_replay(&self.pool, replay).await
    }

    async fn replays(&self, root: RequestId) -> StoreResult<Vec<ReplayRecord>> {
        super::journal::replays(&self.pool, root).await
    }

    async fn approval(&self, id: &str) -> StoreResult<Option<Approval>> {
        super::journal::approval(&self.pool, id).await
    }

    async fn approvals(&self, user: Option<&UserId>, pending: bool) -> StoreResult<Vec<Approval>> {
        super::journal::approvals(&self.pool, user, pending).await
    }

    async fn decide_approval(
        &self,
        id: &str,
        state: ApprovalState,
        by: &str,
        reason: Option<&Redacted<String>>,
        taker: &str,
    ) -> StoreResult<Option<Approval>> {
        let reason = reason.map(|r| r.as_str());
        super::journal::decide_approval(&self.pool, id, state, by, reason, taker, now_ms()).await
    }

    // A2A tasks and breakers (a2a_state.rs)
    async fn put_a2a_task(&self, task: &Redacted<A2aTaskRecord>) -> StoreResult<bool> {
        self.put_a2a_task_with_events(Some(task), &Redacted::none(), super::Durability::Now).await
    }

    async fn a2a_task(&self, id: &str) -> StoreResult<Option<A2aTaskRecord>> {
        super::a2a_state::task(&self.pool, id).await
    }

    async fn a2a_tasks(&self, query: &A2aTaskQuery) -> StoreResult<A2aTaskPage> {
        super::a2a_state::tasks(&self.pool, query).await
    }

    async fn put_breaker(&self, breaker: &BreakerRecord, hold_open_ms: u64) -> StoreResult<()> {
        super::a2a_state::put_breaker(&self.pool, breaker, hold_open_ms).await
    }

    async fn remove_breaker(&self, agent: &AgentSlug, user: Option<&UserId>, hold_open_ms: u64) -> StoreResult<()> {
        super::a2a_state::remove_breaker(&self.pool, agent, user, hold_open_ms).await
    }

    async fn breakers(&self) -> StoreResult<Vec<BreakerRecord>> {
        super::a2a_state::breakers(&self.pool).await
    }

    async fn append_a2a_events(&self, events: &Redacted<Vec<super::a2a_state::A2aEventRecord>>) -> StoreResult<()> {
        self.put_a2a_task_with_events(None, events, super::Durability::Now).await.map(drop)
    }

    // through the writer: an A2A change rides in the group commit of the
    // delegations' records instead of taking the write lock on its own
    async fn put_a2a_task_with_events(
        &self,
        task: Option<&Redacted<A2aTaskRecord>>,
        events: &Redacted<Vec<super::a2a_state::A2aEventRecord>>,
        durability: super::Durability,
    ) -> StoreResult<bool> {
        if task.is_none() && events.is_empty() {
            return Ok(false);
        }
        let change = A2aChange { task: task.map(|t| (**t).clone()), events: (**events).clone(), durability };
        match self.writer.write(Write::A2a(Box::new(change))).await? {
            Written::Task(written) => Ok(written),
            _ => Err(StoreError::Backend("the writer answered an A2A change without saying if it was kept".into())),
        }
    }

    async fn a2a_events(
        &self,
        task_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreResult<Vec<super::a2a_state::A2aEventRecord>> {
        super::a2a_state::events(&self.pool, task_id, after, limit).await
    }

    async fn a2a_event_seq(&self, task_id: &str) -> StoreResult<i64> {
        super::a2a_state::last_event_seq(&self.pool, task_id).await
    }

    async fn put_a2a_push_config(&self, config: &Redacted<super::A2aPushConfigRecord>) -> StoreResult<()> {
        super::a2a_push::put(&self.pool, config).await
    }

    async fn a2a_push_configs(&self, task_id: &str) -> StoreResult<Vec<super::A2aPushConfigRecord>> {
        match &self.readers {
            Some(readers) => super::a2a_push::list_sqlite(readers, task_id),
            None => super::a2a_push::list(&self.pool, task_id).await,
        }
    }

    async fn delete_a2a_push_config(&self, task_id: &str, id: &str) -> StoreResult<bool> {
        super::a2a_push::delete(&self.pool, task_id, id).await
    }

    async fn claim_a2a_push(&self, task_id: &str, id: &str, from: i64, to: i64) -> StoreResult<bool> {
        super::a2a_push::claim(&self.pool, task_id, id, from, to).await
    }

    async fn a2a_push_failed(&self, task_id: &str, id: &str, error: &Redacted<String>) -> StoreResult<()> {
        super::a2a_push::failed(&self.pool, task_id, id, error).await
    }

    async fn counts(&self) -> StoreResult<StoreCounts> {
        let row = sqlx::query_as::<_, CountsRow>(
            "SELECT (SELECT COUNT(*) FROM sessions) AS sessions, (SELECT COUNT(*) FROM messages) AS messages, \
             (SELECT COUNT(*) FROM memory_facts) AS facts, (SELECT COUNT(*) FROM delegations) AS delegations, \
             (SELECT COUNT(*) FROM audit_log) AS audit",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(backend_err)?;
        Ok(StoreCounts {
            sessions: row.sessions as u64,
            messages: row.messages as u64,
            facts: row.facts as u64,
            delegations: row.delegations as u64,
            audit: row.audit as u64,
        })
    }

    async fn analytics(&self, query: &super::AnalyticsQuery) -> StoreResult<super::Analytics> {
        super::analytics::from_rollups(&self.pool, query, now_ms()).await
    }

    async fn past_trees(&self, query: &super::HistoryQuery) -> StoreResult<super::HistoryPage> {
        super::history::page_sql(&self.pool, query).await
    }

    async fn rate_tree(
        &self,
        user: &UserId,
        root: RequestId,
        thumb: super::Thumb,
        comment: Option<&Redacted<String>>,
    ) -> StoreResult<super::Rated> {
        super::ratings::rate(&self.pool, user, root, thumb, comment.map(|c| c.as_str()), now_ms()).await
    }

    async fn rating(&self, root: RequestId) -> StoreResult<Option<super::Rating>> {
        super::ratings::rating(&self.pool, root).await
    }
}

/// Every statement that finds rows by their tree's root (`src/store/trees.rs`
/// says how), as the store runs it, with literal values in place of its
/// parameters: what the plan test
/// (`tests/it/store.rs`) asks each database to plan, to show that each
/// finds its rows through an index (none reads a whole table of trees).
#[cfg(any(test, feature = "test-util"))]
pub fn tree_statements() -> Vec<(String, String)> {
    let id = "'00000000-0000-4000-8000-000000000000'";
    let put = |sql: String, values: &[&str]| {
        values.iter().enumerate().rev().fold(sql, |sql, (i, v)| sql.replace(&format!("${}", i + 1), v))
    };
    let history = super::history::HistoryQuery {
        limit: 20,
        user: Some(crate::protocol::UserId::parse("u").expect("a user id")),
        agent: Some("a".into()),
        ..Default::default()
    };
    let range = "r.started_at >= $1 AND r.started_at < $2";
    let mut out = vec![
        ("a tree's steps".to_string(), put(super::journal::steps_sql(), &[id])),
        ("the steps below a cancelled root".into(), put(super::journal::cancel_below_sql(), &["0", id])),
        ("a delegation's tree".into(), put(delegation_tree_sql("$"), &[id])),
        ("a page of history".into(), put(super::history::page_statement(&history), &["'u'", "'a'"])),
        ("ratings per agent".into(), put(super::ratings::per_agent_sql(range), &["0", "1"])),
    ];
    for (i, sql) in super::analytics::roll_hours_sql("0").into_iter().enumerate() {
        out.push((format!("an hour's rollup, statement {i}"), put(sql, &["0", "1"])));
    }
    out
}
