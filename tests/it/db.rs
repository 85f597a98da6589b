//! Real databases for the tests: an SQLite file in a temporary folder and a
//! PostgreSQL schema of its own on the server these machines run (or the one
//! `.ci/run` starts). Without PostgreSQL the PostgreSQL half is skipped
//! (`support::skip`: a failure under `CI=true`).

use std::sync::Arc;

use sqlx::Executor;
use switchboard::store::{SqlStore, Store};

pub fn postgres_url() -> String {
    std::env::var("SWITCHBOARD_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A database that is removed when dropped.
pub struct Db {
    pub name: &'static str,
    pub url: String,
    pub store: Arc<SqlStore>,
    _dir: Option<tempfile::TempDir>,
    schema: Option<String>,
}

impl Db {
    pub fn dyn_store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let Some(schema) = self.schema.take() else { return };
        let url = postgres_url();
        // a runtime of its own: Drop may run inside or outside tokio
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            rt.block_on(async {
                sqlx::any::install_default_drivers();
                let pool = sqlx::AnyPool::connect(&url).await.ok()?;
                // bounded: a lock some connection still holds leaves the schema behind (named
                // in the log) instead of hanging the test, which waits for this thread
                let drop = format!("SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS {schema} CASCADE");
                if let Err(e) = pool.execute(sqlx::AssertSqlSafe(drop)).await {
                    eprintln!("schema {schema} left behind: {e}");
                }
                Some(())
            })
        })
        .join();
    }
}

pub async fn sqlite() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("switchboard.db").display());
    let store = Arc::new(SqlStore::connect(&url).await.unwrap());
    Db { name: "sqlite", url, store, _dir: Some(dir), schema: None }
}

/// A fresh schema on the PostgreSQL server, or None when there is none (a
/// skip, `support::skip`).
pub async fn postgres() -> Option<Db> {
    sqlx::any::install_default_drivers();
    let base = postgres_url();
    let admin = match sqlx::AnyPool::connect(&base).await {
        Ok(p) => p,
        Err(e) => {
            crate::support::skip(
                "the PostgreSQL half",
                &format!("PostgreSQL at {base} cannot be reached ({e})"),
                "start PostgreSQL on 127.0.0.1:5432 with trust auth and a database `test` \
                 (or point SWITCHBOARD_TEST_POSTGRES_URL at one)",
            );
            return None;
        }
    };
    let schema = format!("sbtest_{}", uuid::Uuid::new_v4().simple());
    admin.execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).await.unwrap();
    admin.close().await;
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    let store = Arc::new(SqlStore::connect(&url).await.unwrap());
    Some(Db { name: "postgres", url, store, _dir: None, schema: Some(schema) })
}

/// Both backends (PostgreSQL when reachable).
pub async fn both() -> Vec<Db> {
    let mut v = vec![sqlite().await];
    v.extend(postgres().await);
    v
}
