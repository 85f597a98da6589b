//! How A2A tasks are kept: a task's texts (its messages, artifacts, status
//! and its stream's events) go into the store redacted with a vault of the
//! task's own, and the vault goes beside them sealed (encrypted under the
//! runtime's seal key, `[pii] seal_key_file`). The database holds tokens
//! and ciphertext; the task's owner reads their values back. A runtime
//! with another key (or a record written before tasks kept vaults) reads
//! what is there: tokens stay tokens, never another value.

use serde_json::Value;

use super::a2a_push::A2aPushConfigRecord;
use super::a2a_state::{A2aEventRecord, A2aTaskRecord};
use super::{Store, StoreResult, backend_err, now_ms};
use crate::protocol::AgentSlug;
use crate::protocol::a2a::types::{StreamResponse, Task, TaskState};
use crate::redact::{Redacted, Redactor, SealKey, Vault};

/// Writes A2A tasks redacted and reads them back restored (see the module docs).
///
/// It redacts with one redactor for all its tasks, so that what it found
/// clean once (the rails extension's key in every version and event, a
/// message kept in the history of each later version) is looked up, not
/// scanned again; [`TaskKeeper::sharing`] gives it the runtime's, which
/// knows the texts the pipeline scanned too.
#[derive(Debug, Clone)]
pub struct TaskKeeper {
    key: SealKey,
    redactor: Redactor,
}

impl TaskKeeper {
    /// A keeper sealing with `key`.
    pub fn new(key: SealKey) -> Self {
        Self { key, redactor: Redactor::default() }
    }

    /// The keeper redacting with `redactor` (a clone shares what it knows).
    pub fn sharing(self, redactor: Redactor) -> Self {
        Self { redactor, ..self }
    }

    /// A task's version as stored: its texts redacted with the task's
    /// `vault` (which gains the tokens it hands out), the vault sealed in it.
    pub fn task(&self, record: A2aTaskRecord, vault: &mut Vault) -> Redacted<A2aTaskRecord> {
        self.redactor.redacted_keeping_vault(record, vault, &self.key)
    }

    /// A task's stream events as stored: redacted with the task's `vault`.
    pub fn events(&self, events: Vec<A2aEventRecord>, vault: &mut Vault) -> Redacted<Vec<A2aEventRecord>> {
        self.redactor.redacted(events, vault)
    }

    /// The vault a stored task keeps (an empty one when it keeps none, or it does not open here).
    pub fn vault_of(&self, record: &A2aTaskRecord) -> Vault {
        record.pii.as_deref().and_then(|p| self.key.open(p)).unwrap_or_default()
    }

    /// A stored task as its owner reads it (its texts' values back), and its vault.
    pub fn open(&self, record: &A2aTaskRecord) -> (A2aTaskRecord, Vault) {
        let vault = self.vault_of(record);
        let mut open = record.clone();
        open.task = restored(&vault, &record.task);
        (open, vault)
    }

    /// Stored events of a task whose vault is `vault`, as its owner reads them.
    pub fn open_events(&self, events: Vec<A2aEventRecord>, vault: &Vault) -> Vec<A2aEventRecord> {
        events.into_iter().map(|e| A2aEventRecord { event: restored(vault, &e.event), ..e }).collect()
    }

    /// A push config as stored: its config (a webhook's address and
    /// credentials) sealed, since a token in their place would deliver nowhere.
    pub fn push_config(&self, record: A2aPushConfigRecord) -> Redacted<A2aPushConfigRecord> {
        self.key.sealed(record)
    }

    /// A stored push config's config, as it was given (one written before
    /// configs were sealed reads as it is); None when it does not open here.
    pub fn open_push_config(&self, record: &A2aPushConfigRecord) -> Option<String> {
        match self.key.open_text(&record.config) {
            Some(config) => Some(config),
            None if record.config.starts_with('{') => Some(record.config.clone()),
            None => None,
        }
    }
}

/// A stored JSON text with its tokens' values back (by value: a value may
/// hold what JSON escapes).
fn restored(vault: &Vault, text: &str) -> String {
    if vault.is_empty() {
        return text.to_string();
    }
    match serde_json::from_str::<Value>(text) {
        Ok(mut doc) => {
            vault.restore_json(&mut doc);
            doc.to_string()
        }
        Err(_) => text.to_string(),
    }
}

/// Sets the status of a stored A2A task from outside the A2A service (a
/// resumed tree that finished in another process than the one that started
/// it): the status, with an agent message holding `text` that is also added
/// to the history, under a version above the stored one. False when there
/// is no such task. The change is also stored as the task's next stream
/// event. A service that holds the task in its cache reads the new version
/// (and sends that event to its subscribers) the next time the task is
/// asked for, or watched, while it does not run there.
pub async fn set_task_status(
    store: &dyn Store,
    keeper: &TaskKeeper,
    id: &str,
    state: TaskState,
    text: &str,
) -> StoreResult<bool> {
    let Some(record) = store.a2a_task(id).await? else {
        return Ok(false);
    };
    let (open, mut vault) = keeper.open(&record);
    let mut task = open.to_task()?;
    let event = task.set_status(state, text);
    store_change(store, keeper, &open, &mut vault, &task, &[event]).await?;
    Ok(true)
}

/// Stores `task`, changed from the stored `record`, under a version above
/// it, and `events` as the task's next stream events: a subscriber of any
/// process (or a client reconnecting later) gets them. When a newer version
/// won meanwhile, nothing is stored (its writer tells the stream).
/// `record` is the stored one as its owner reads it ([`TaskKeeper::open`]),
/// `vault` the task's vault: the new version is kept redacted with it.
pub async fn store_change(
    store: &dyn Store,
    keeper: &TaskKeeper,
    record: &A2aTaskRecord,
    vault: &mut crate::redact::Vault,
    task: &Task,
    events: &[StreamResponse],
) -> StoreResult<()> {
    let agent = AgentSlug::parse(&record.agent)
        .map_err(|_| backend_err(format!("corrupt agent '{}' of A2A task '{}'", record.agent, record.id)))?;
    let seq = (record.seq + 1).max(now_ms().saturating_mul(1000));
    let first = store.a2a_event_seq(&task.id).await? + 1;
    let records: Vec<A2aEventRecord> =
        events.iter().zip(first..).map(|(ev, n)| A2aEventRecord::new(&task.id, n, ev)).collect();
    // the events first: the task keeps the vault as it is once they are redacted too
    let records = keeper.events(records, vault);
    let newer = keeper.task(A2aTaskRecord::new(task, &record.owner, &agent, record.session_id, seq), vault);
    if !store.put_a2a_task(&newer).await? {
        return Ok(());
    }
    store.append_a2a_events(&records).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AgentSlug;
    use crate::protocol::a2a::types::{Message, Task, TaskState, TaskStatus};

    fn task(text: &str) -> A2aTaskRecord {
        let t = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus::now(TaskState::Completed, None),
            artifacts: None,
            history: Some(vec![Message::agent_text(text, Some("c1".into()), Some("t1".into()))]),
            metadata: None,
        };
        A2aTaskRecord::new(&t, "user:alice", &AgentSlug::parse("tag-ai").unwrap(), None, 1)
    }

    #[test]
    fn a_task_is_stored_with_tokens_and_read_back_with_its_values_by_its_key_only() {
        let keeper = TaskKeeper::new(SealKey::random());
        let sent = "my card is 4111 1111 1111 1111, mail \"ann@example.com\"";
        let mut vault = Vault::new();
        let stored = keeper.task(task(sent), &mut vault);
        assert!(!stored.task.contains("4111") && !stored.task.contains("ann@example.com"), "{}", stored.task);
        assert!(stored.pii.is_some());
        let (open, _) = keeper.open(&stored);
        assert_eq!(open.to_task().unwrap().history.unwrap()[0].text(), sent);
        // another key: the tokens stay tokens
        let (other, _) = TaskKeeper::new(SealKey::random()).open(&stored);
        assert!(other.task.contains("<CARD_1>"), "{}", other.task);
    }

    /// A keeper sharing a redactor finds what it made or found clean, and
    /// nothing else: a version written again with the same card number is
    /// redacted again, each time with the task's own token, and a clean
    /// text the shared redactor knows stays as it is.
    #[test]
    fn a_keeper_sharing_a_redactor_redacts_every_version() {
        let redactor = Redactor::new();
        let keeper = TaskKeeper::new(SealKey::random()).sharing(redactor.clone());
        let mut vault = Vault::new();
        let sent = "card 4111 1111 1111 1111 for the order of 2025-10-09";
        for _ in 0..2 {
            let stored = keeper.task(task(sent), &mut vault);
            assert!(!stored.task.contains("4111") && stored.task.contains("<CARD_1>"), "{}", stored.task);
        }
        // what the runtime's redactor scanned before: the same text, kept as it is
        let clean = "nothing personal in this message, version 2";
        assert_eq!(redactor.redact(clean, &mut Vault::new()), clean);
        let stored = keeper.task(task(clean), &mut Vault::new());
        assert!(stored.task.contains(clean) && stored.pii.is_none(), "{}", stored.task);
    }
}
