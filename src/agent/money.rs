//! The money tool: how an agent reads and writes the money of the user it
//! runs for. The runtime hands a running agent a [`Money`] bound to the
//! delegation's user, so an agent can neither name another user nor reach
//! the store; reading needs the tool `money.read` and writing `money.write`
//! in the agent's effective tools (so a child never writes where its parent
//! could not). A consult (ephemeral mode) reads and writes nothing.

use std::sync::Arc;

use super::reads::{MoneyCall, Reads, Tape};
use crate::protocol::{DelegationError, ErrorCode, RequestId, UserId};
use crate::store::{MoneyEntry, MoneyPlan, Store, entry_id, now_ms};

/// The tool that reads the user's money.
pub const READ: &str = "money.read";
/// The tool that writes it.
pub const WRITE: &str = "money.write";

/// A transaction an agent found, to be kept in the user's money.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewEntry {
    /// `YYYY-MM-DD`, when the document gave one.
    pub date: Option<String>,
    /// The merchant, cleaned (`Office Depot`).
    pub merchant: String,
    /// The line or text it came from.
    pub description: String,
    /// Integer cents; positive is money spent.
    pub amount: i64,
    /// ISO 4217 (`USD`).
    pub currency: String,
    /// The spending category, when known.
    pub category: Option<String>,
    /// 0–100, how sure the agent is.
    pub confidence: Option<u8>,
}

/// What a write did: the entries added, and the ones the money already had
/// (the same receipt or statement sent again).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written {
    /// Entries that were new.
    pub added: Vec<MoneyEntry>,
    /// Entries the money already had (as written now; the stored row is unchanged).
    pub already_kept: Vec<MoneyEntry>,
}

/// What the money holds for the user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MoneyView {
    /// The transactions, oldest first.
    pub entries: Vec<MoneyEntry>,
    /// The goals and debts.
    pub plans: Vec<MoneyPlan>,
}

/// The user's money as one delegation sees it.
#[derive(Clone)]
pub struct Money {
    store: Arc<dyn Store>,
    user: UserId,
    request: Option<RequestId>,
    /// Where its calls are recorded (a delegation in a runtime).
    record: Option<Arc<Reads>>,
    /// The recorded calls it answers from (a replay).
    tape: Option<Arc<Tape>>,
}

impl std::fmt::Debug for Money {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Money").field("user", &self.user).finish_non_exhaustive()
    }
}

impl Money {
    /// The money of `user`, written on behalf of the delegation `request`.
    pub fn new(store: Arc<dyn Store>, user: UserId, request: Option<RequestId>) -> Self {
        Self { store, user, request, record: None, tape: None }
    }

    /// This money, its calls and their outcomes recorded in `reads`.
    pub fn recording(mut self, reads: Arc<Reads>) -> Self {
        self.record = Some(reads);
        self
    }

    /// This money answering each call as `tape` recorded it (a replay);
    /// a call the tape does not have goes to this money's own store.
    pub fn replaying(mut self, tape: Arc<Tape>) -> Self {
        self.tape = Some(tape);
        self
    }

    fn recorded(&self, like: &MoneyCall) -> Option<MoneyCall> {
        self.tape.as_ref().and_then(|t| t.next(like))
    }

    fn keep(&self, call: impl FnOnce() -> MoneyCall) {
        if let Some(r) = &self.record {
            r.push(call());
        }
    }

    /// The user this money belongs to.
    pub fn user(&self) -> &UserId {
        &self.user
    }

    pub(super) async fn read(&self) -> Result<MoneyView, DelegationError> {
        let view = match self.recorded(&MoneyCall::Read { entries: Vec::new(), plans: Vec::new() }) {
            Some(MoneyCall::Read { entries, plans }) => MoneyView { entries, plans },
            _ => {
                let entries = self.store.money(&self.user).await?;
                let plans = self.store.money_plans(&self.user).await?;
                MoneyView { entries, plans }
            }
        };
        self.keep(|| MoneyCall::Read { entries: view.entries.clone(), plans: view.plans.clone() });
        Ok(view)
    }

    pub(super) async fn write(&self, found: &[NewEntry], source: &str) -> Result<Written, DelegationError> {
        let now = now_ms();
        let mut seen: Vec<String> = Vec::new();
        let entries: Vec<MoneyEntry> = found
            .iter()
            .map(|n| {
                // the nth equal transaction of this document: two coffees are two rows
                let base = entry_id(&self.user, n.date.as_deref(), &n.merchant, n.amount, &n.currency, 0);
                let nth = seen.iter().filter(|b| **b == base).count() as u32;
                seen.push(base);
                MoneyEntry {
                    user_id: self.user.clone(),
                    id: entry_id(&self.user, n.date.as_deref(), &n.merchant, n.amount, &n.currency, nth),
                    date: n.date.clone(),
                    merchant: n.merchant.clone(),
                    description: n.description.clone(),
                    amount: n.amount,
                    currency: n.currency.to_uppercase(),
                    category: n.category.clone(),
                    confidence: n.confidence,
                    source: source.to_string(),
                    note: None,
                    request_id: self.request.map(|r| r.to_string()),
                    created_at: now,
                    updated_at: now,
                }
            })
            .collect();
        let added = match self.recorded(&MoneyCall::Write { added: Vec::new() }) {
            Some(MoneyCall::Write { added }) => entries.iter().map(|e| added.contains(&e.id)).collect(),
            _ => self.store.money_add(&for_store(entries.clone())).await?,
        };
        self.keep(|| MoneyCall::Write {
            added: entries.iter().zip(&added).filter(|(_, new)| **new).map(|(e, _)| e.id.clone()).collect(),
        });
        let mut out = Written::default();
        for (entry, new) in entries.into_iter().zip(added) {
            if new { out.added.push(entry) } else { out.already_kept.push(entry) }
        }
        Ok(out)
    }

    pub(super) async fn update(
        &self,
        id: &str,
        category: Option<&str>,
        note: Option<&str>,
    ) -> Result<bool, DelegationError> {
        let found = match self.recorded(&MoneyCall::Update { id: id.into(), found: false }) {
            Some(MoneyCall::Update { found, .. }) => found,
            _ => {
                let edit = for_store((category.map(str::to_string), note.map(str::to_string)));
                self.store.money_update(&self.user, id, &edit).await?
            }
        };
        self.keep(|| MoneyCall::Update { id: id.into(), found });
        Ok(found)
    }

    pub(super) async fn put_plan(
        &self,
        kind: &str,
        name: &str,
        body: serde_json::Value,
    ) -> Result<(), DelegationError> {
        let call = MoneyCall::PutPlan { kind: kind.into(), name: name.into() };
        if self.recorded(&call).is_none() {
            let plan = MoneyPlan {
                user_id: self.user.clone(),
                kind: kind.into(),
                name: name.into(),
                body,
                updated_at: now_ms(),
            };
            self.store.put_money_plan(&for_store(plan)).await?;
        }
        self.keep(|| call);
        Ok(())
    }
}

/// A row as the store keeps it: every text through the redactor (what an
/// agent read was redacted already; this pass keeps a value it did not
/// see as one out of the money too).
fn for_store<T: crate::redact::Texts>(value: T) -> crate::redact::Redacted<T> {
    crate::redact::Redactor::default().redacted(value, &mut crate::redact::Vault::new())
}

/// The refusal when a context has no money (outside a runtime, or a consult).
pub(super) fn no_money() -> DelegationError {
    DelegationError::new(
        ErrorCode::ToolNotAllowed,
        "this delegation has no money (it runs outside a runtime or as a consult, which keeps nothing)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentContext;
    use crate::store::MemoryStore;

    fn coffee(cents: i64) -> NewEntry {
        NewEntry {
            date: Some("2026-10-01".into()),
            merchant: "Starbucks".into(),
            amount: cents,
            currency: "usd".into(),
            ..NewEntry::default()
        }
    }

    #[tokio::test]
    async fn the_money_tools_need_their_tool_and_are_only_ever_the_delegations_users() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let (alice, bob): (UserId, UserId) = ("alice".parse().unwrap(), "bob".parse().unwrap());
        let reader = AgentContext::detached([READ]).with_money(Money::new(store.clone(), alice.clone(), None));
        let refused = reader.write_money(&[coffee(450)], "receipt").await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::ToolNotAllowed);

        let writer = AgentContext::detached([READ, WRITE]).with_money(Money::new(store.clone(), alice, None));
        // two equal coffees in one document are two rows; the document again adds nothing
        let first = writer.write_money(&[coffee(450), coffee(450)], "receipt").await.unwrap();
        assert_eq!((first.added.len(), first.already_kept.len()), (2, 0));
        let again = writer.write_money(&[coffee(450), coffee(450), coffee(500)], "receipt").await.unwrap();
        assert_eq!((again.added.len(), again.already_kept.len()), (1, 2));
        let view = writer.read_money().await.unwrap();
        assert_eq!(view.entries.len(), 3);
        assert!(view.entries.iter().all(|e| e.currency == "USD" && e.source == "receipt"));

        let bobs = AgentContext::detached([READ, WRITE]).with_money(Money::new(store, bob, None));
        assert!(bobs.read_money().await.unwrap().entries.is_empty());
        assert!(!bobs.correct_money(&view.entries[0].id, Some("Travel"), None).await.unwrap());

        // outside a runtime there is no money, tool or not
        let detached = AgentContext::detached([READ, WRITE]);
        assert!(!detached.can_read_money());
        assert_eq!(detached.read_money().await.unwrap_err().code, ErrorCode::ToolNotAllowed);
    }

    #[tokio::test]
    async fn recorded_money_calls_answer_a_replay_the_same_on_an_empty_store() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let alice: UserId = "alice".parse().unwrap();
        let earlier = AgentContext::detached([WRITE]).with_money(Money::new(store.clone(), alice.clone(), None));
        earlier.write_money(&[coffee(450)], "receipt").await.unwrap();

        // the run: a read, a write that finds one coffee kept already, a correction of an unknown id
        let reads = Arc::new(Reads::default());
        let money = Money::new(store.clone(), alice.clone(), None).recording(reads.clone());
        let run = AgentContext::detached([READ, WRITE]).with_money(money);
        let seen = run.read_money().await.unwrap();
        let wrote = run.write_money(&[coffee(450), coffee(500)], "receipt").await.unwrap();
        assert!(!run.correct_money("no-such-id", Some("Travel"), None).await.unwrap());
        let recorded = reads.take().unwrap();
        assert_eq!(recorded.money.len(), 3, "{recorded:?}");

        // the replay: an empty store, the same answers, nothing written anywhere real
        let empty: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let tape = Arc::new(Tape::new(recorded.money.clone()));
        let replay = AgentContext::detached([READ, WRITE])
            .with_money(Money::new(empty.clone(), alice.clone(), None).replaying(tape));
        assert_eq!(replay.read_money().await.unwrap(), seen);
        let again = replay.write_money(&[coffee(450), coffee(500)], "receipt").await.unwrap();
        assert_eq!((again.added.len(), again.already_kept.len()), (wrote.added.len(), wrote.already_kept.len()));
        assert_eq!((again.added.len(), again.already_kept.len()), (1, 1));
        assert!(!replay.correct_money("no-such-id", Some("Travel"), None).await.unwrap());
        assert!(empty.money(&alice).await.unwrap().is_empty(), "a replay keeps nothing");
        // past the tape (the agent calls more than it did), calls go to the replay's own store
        assert!(replay.read_money().await.unwrap().entries.is_empty());
        assert_eq!(store.money(&alice).await.unwrap().len(), 2, "the real money is as the run left it");
    }
}
