//! The `Store` contract, on SQLite and on PostgreSQL through one code path.

use std::sync::Arc;

use futures::future::join_all;
use sqlx::Executor;
use switchboard::protocol::{RequestId, SessionId, TokenUsage};
use switchboard::store::{
    A2aPushConfigRecord, AuditRecord, Claim, Conversation, DelegationRecord, Durability, Fact, Holder, KeyAnswer,
    Message, Session, SqlStore, Store, StoreError, audit, now_ms,
};

use crate::db;
use crate::support::*;

fn record(n: u64) -> AuditRecord {
    AuditRecord {
        request_id: RequestId::new(),
        root_id: RequestId::new(),
        origin: "prime-boss".into(),
        target: "byte-doc".into(),
        user_id: "alice".into(),
        objective: format!("objective {n}"),
        outcome: "success".into(),
        error_code: None,
        duration_ms: n,
        tokens: 7,
        created_at: now_ms(),
    }
}

fn node(n: u64) -> DelegationRecord {
    DelegationRecord {
        request_id: RequestId::new(),
        root_id: RequestId::new(),
        parent_id: None,
        user_id: user("alice"),
        origin: "prime-boss".into(),
        target: "byte-doc".into(),
        objective: format!("objective {n}"),
        objective_hash: String::new(),
        status: "success".into(),
        error_code: None,
        signature: String::new(),
        attempts: 1,
        depth: 1,
        started_at: now_ms(),
        duration_ms: n,
        tokens: TokenUsage::default(),
        consult: false,
    }
}

#[tokio::test]
async fn sessions_belong_to_one_user_and_children_are_reused() {
    for db in db::both().await {
        let s = db.dyn_store();
        let (alice, bob, prime, byte) = (user("alice"), user("bob"), slug("prime-boss"), slug("byte-doc"));
        let parent = s.ensure_session(&alice, &prime, None, None).await.unwrap();
        assert_eq!(s.ensure_session(&alice, &prime, Some(parent.id), None).await.unwrap(), parent, "{}", db.name);
        assert_eq!(s.ensure_session(&bob, &prime, Some(parent.id), None).await.unwrap_err(), StoreError::UserMismatch);
        let child = s.child_session(&alice, &byte, parent.id).await.unwrap();
        assert_eq!(child.parent_id, Some(parent.id));
        assert_eq!(s.child_session(&alice, &byte, parent.id).await.unwrap().id, child.id, "{}: reused", db.name);
        assert_eq!(s.child_session(&bob, &byte, parent.id).await.unwrap_err(), StoreError::UserMismatch);
        assert_eq!(s.find_child_session(&alice, &slug("tag-ai"), parent.id).await.unwrap(), None);
        assert_eq!(s.session(child.id).await.unwrap().unwrap().user_id, alice);
        assert_eq!(s.session(SessionId::new()).await.unwrap(), None);
    }
}

#[tokio::test]
async fn the_last_messages_of_a_session_come_back_oldest_first() {
    for db in db::both().await {
        let s = db.dyn_store();
        let session = s.ensure_session(&user("alice"), &slug("byte-doc"), None, None).await.unwrap();
        let msgs: Vec<Message> = (0..8)
            .map(|i| Message {
                session_id: session.id,
                role: if i % 2 == 0 { "user".into() } else { "assistant".into() },
                content: format!("m{i}"),
                delegated_from: Some("prime-boss".into()),
                delegation_depth: Some(1),
                asked: false,
                created_at: now_ms(),
            })
            .collect();
        s.append_messages(&clean(msgs.to_vec())).await.unwrap();
        let last = s.recent_messages(session.id, 5).await.unwrap();
        let contents: Vec<&str> = last.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["m3", "m4", "m5", "m6", "m7"], "{}", db.name);
        assert_eq!(last[0].delegated_from.as_deref(), Some("prime-boss"));
        assert_eq!(last[0].delegation_depth, Some(1));
    }
}

#[tokio::test]
async fn facts_are_scoped_and_not_duplicated() {
    for db in db::both().await {
        let s = db.dyn_store();
        let fact = |u: &str, scope: &str, f: &str| Fact {
            user_id: user(u),
            scope: scope.into(),
            fact: f.into(),
            source_request: Some(RequestId::new()),
            created_at: now_ms(),
        };
        s.add_facts(&clean(
            ([
                fact("alice", "global", "prefers CSV"),
                fact("alice", "agent:ledger-tax", "self-employed in Canada"),
                fact("alice", "domain:tax", "files quarterly"),
                fact("alice", "agent:byte-doc", "uploads scans"),
                fact("bob", "global", "bob's secret"),
            ])
            .to_vec(),
        ))
        .await
        .unwrap();
        s.add_facts(&clean(([fact("alice", "global", "prefers CSV")]).to_vec())).await.unwrap();
        let scopes = ["global".to_string(), "agent:ledger-tax".into(), "domain:tax".into()];
        let got: Vec<String> =
            s.facts(&user("alice"), &scopes, 100).await.unwrap().into_iter().map(|f| f.fact).collect();
        assert_eq!(got, ["prefers CSV", "self-employed in Canada", "files quarterly"], "{}", db.name);
        // a limit reads the newest, still oldest first
        let got: Vec<String> = s.facts(&user("alice"), &scopes, 2).await.unwrap().into_iter().map(|f| f.fact).collect();
        assert_eq!(got, ["self-employed in Canada", "files quarterly"], "{}", db.name);
    }
}

#[tokio::test]
async fn concurrent_audit_appends_form_one_verifying_chain_and_tampering_is_detected() {
    for db in db::both().await {
        let s: Arc<dyn Store> = db.dyn_store();
        let entries = join_all((0..20).map(|i| {
            let s = s.clone();
            async move { s.append_audit(clean(record(i))).await.unwrap() }
        }))
        .await;
        let mut seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
        seqs.sort();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>(), "{}: no fork, no gap", db.name);
        let log = s.audit_log().await.unwrap();
        assert!(audit::verify(&log).valid, "{}", db.name);

        db.store.pool().execute("UPDATE audit_log SET outcome = 'failed' WHERE seq = 7").await.unwrap();
        let report = audit::verify(&s.audit_log().await.unwrap());
        assert!(!report.valid);
        assert_eq!(report.broken_at, Some(7), "{}", db.name);
    }
}

/// Issue 15, reproduced on main: deleting the last records of the audit log
/// left `audit --verify` green, because nothing anchored the head.
#[tokio::test]
async fn records_deleted_from_the_tail_middle_or_start_of_the_audit_log_are_named() {
    for (what, delete, first_missing) in [
        ("tail", "DELETE FROM audit_log WHERE seq > 8", 9),
        ("middle", "DELETE FROM audit_log WHERE seq = 4", 4),
        ("start", "DELETE FROM audit_log WHERE seq <= 2", 1),
        ("all", "DELETE FROM audit_log", 1),
    ] {
        for db in db::both().await {
            let s = db.dyn_store();
            for i in 0..10 {
                s.append_audit(clean(record(i))).await.unwrap();
            }
            assert!(s.verify_audit().await.unwrap().valid, "{}", db.name);
            db.store.pool().execute(delete).await.unwrap();
            let report = s.verify_audit().await.unwrap();
            assert!(!report.valid, "{} {what}: {report:?}", db.name);
            assert_eq!(report.broken_at, Some(first_missing), "{} {what}: {report:?}", db.name);
            // appending goes on from the anchored head: the gap stays visible
            let next = s.append_audit(clean(record(99))).await.unwrap();
            assert_eq!(next.seq, 11, "{} {what}", db.name);
            assert_eq!(s.verify_audit().await.unwrap().broken_at, Some(first_missing), "{} {what}", db.name);
        }
    }
}

#[tokio::test]
async fn delegation_trees_and_history_come_back_from_the_store() {
    for db in db::both().await {
        let s = db.dyn_store();
        let root = RequestId::new();
        let rec = |id: RequestId, parent: Option<RequestId>, target: &str, status: &str, sig: &str| DelegationRecord {
            request_id: id,
            root_id: root,
            parent_id: parent,
            user_id: user("alice"),
            origin: "prime-boss".into(),
            target: target.into(),
            objective: "extract receipt data".into(),
            objective_hash: "abcdef01".into(),
            status: status.into(),
            error_code: None,
            signature: sig.into(),
            attempts: 1,
            depth: 1,
            started_at: now_ms(),
            duration_ms: 3,
            tokens: TokenUsage::new(10, 5),
            consult: false,
        };
        let child = RequestId::new();
        s.put_delegation(&clean((rec(root, None, "prime-boss", "success", "x")).clone())).await.unwrap();
        s.put_delegation(&clean((rec(child, Some(root), "byte-doc", "success", "extract receipt data")).clone()))
            .await
            .unwrap();
        for status in ["success", "success", "failed", "refused"] {
            s.put_delegation(&clean(
                (rec(RequestId::new(), Some(root), "tag-ai", status, "extract receipt data")).clone(),
            ))
            .await
            .unwrap();
        }
        let tree = s.delegation_tree(child).await.unwrap();
        assert_eq!(tree.len(), 6, "{}", db.name);
        assert_eq!(tree.iter().find(|r| r.request_id == child).unwrap().tokens, TokenUsage::new(10, 5));
        let recent = s.recent_outcomes(&user("alice"), 100).await.unwrap();
        let tag: Vec<&str> = recent.iter().filter(|o| o.target == "tag-ai").map(|o| o.status.as_str()).collect();
        assert_eq!(tag.len(), 3, "{}: refusals do not count", db.name);
        assert_eq!(tag.iter().filter(|s| **s == "success").count(), 2);
        assert_eq!(s.recent_outcomes(&user("alice"), 2).await.unwrap().len(), 2);
        assert!(s.recent_outcomes(&user("bob"), 100).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn seed_scores_are_promoted_penalized_and_ordered() {
    for db in db::both().await {
        let s = db.dyn_store();
        let email = slug("email");
        s.adjust_seed_score(&email, "draft apology email", 981234, -1.0).await.unwrap();
        s.adjust_seed_score(&email, "draft apology email", 776655, 1.0).await.unwrap();
        assert_eq!(s.adjust_seed_score(&email, "draft apology email", 776655, 1.0).await.unwrap(), 2.0);
        let scores = s.seed_scores(&email, "draft apology email").await.unwrap();
        assert_eq!(scores, [(776655, 2.0), (981234, -1.0)], "{}", db.name);
        assert!(s.seed_scores(&email, "other").await.unwrap().is_empty());
    }
}

/// The memory store, then the store of each of `dbs`.
pub(crate) fn every_store(dbs: &[db::Db]) -> Vec<(&'static str, Arc<dyn Store>)> {
    let memory: Arc<dyn Store> = Arc::new(switchboard::store::MemoryStore::new());
    let mut stores = vec![("memory", memory)];
    stores.extend(dbs.iter().map(|db| (db.name, db.dyn_store())));
    stores
}

fn holder(owner: &str) -> Holder {
    Holder { request_id: RequestId::new(), owner: owner.into() }
}

#[tokio::test]
async fn idempotency_keys_are_claimed_once_and_replayed() {
    let dbs = db::both().await;
    let stores = every_store(&dbs);
    for (name, s) in stores {
        let alice = user("alice");
        let (a, b) = (holder("replica-a"), holder("replica-b"));
        assert_eq!(s.claim_idempotency(&alice, "k1", "h1", &a).await.unwrap(), Claim::New, "{name}");
        let Claim::Pending(held) = s.claim_idempotency(&alice, "k1", "h1", &b).await.unwrap() else {
            panic!("{name}: a running key is pending")
        };
        assert_eq!((held.request_id, held.owner.as_deref()), (Some(a.request_id), Some("replica-a")), "{name}");
        assert!(held.since > now_ms() - 60_000, "{name}: {held:?}");
        assert_eq!(s.claim_idempotency(&alice, "k1", "h2", &b).await.unwrap(), Claim::Mismatch);
        assert_eq!(s.claim_idempotency(&user("bob"), "k1", "h2", &b).await.unwrap(), Claim::New, "keys are per user");
        s.complete_idempotency(&alice, "k1", &clean(String::from("{\"done\":true}"))).await.unwrap();
        assert_eq!(s.claim_idempotency(&alice, "k1", "h1", &b).await.unwrap(), Claim::Done("{\"done\":true}".into()));
        assert!(!s.take_idempotency(&alice, "k1", &held, &b).await.unwrap(), "{name}: a finished key is not taken");
        s.release_idempotency(&alice, "k1").await.unwrap();
        assert!(
            matches!(s.claim_idempotency(&alice, "k1", "h1", &b).await.unwrap(), Claim::Done(_)),
            "finished keys stay"
        );
        assert_eq!(s.claim_idempotency(&alice, "k2", "h", &a).await.unwrap(), Claim::New);
        s.release_idempotency(&alice, "k2").await.unwrap();
        assert_eq!(
            s.claim_idempotency(&alice, "k2", "h", &b).await.unwrap(),
            Claim::New,
            "a released key is free again"
        );
        // concurrent claims: exactly one wins
        let claims = join_all((0..10).map(|_| s.claim_idempotency(&alice, "k3", "h", &a))).await;
        assert_eq!(claims.iter().filter(|c| matches!(c, Ok(Claim::New))).count(), 1, "{name}");

        // a key taken over from a dead holder: exactly one of racing takers gets it, and holds it
        let Claim::Pending(dead) = s.claim_idempotency(&alice, "k3", "h", &b).await.unwrap() else { panic!("{name}") };
        let takers: Vec<Holder> = (0..5).map(|n| holder(&format!("taker-{n}"))).collect();
        let takes = join_all(takers.iter().map(|t| s.take_idempotency(&alice, "k3", &dead, t))).await;
        let won: Vec<usize> = (0..5).filter(|&n| *takes[n].as_ref().unwrap()).collect();
        assert_eq!(won.len(), 1, "{name}: {takes:?}");
        let winner = &takers[won[0]];
        let Claim::Pending(now) = s.claim_idempotency(&alice, "k3", "h", &b).await.unwrap() else { panic!("{name}") };
        assert_eq!((now.request_id, now.owner.as_deref()), (Some(winner.request_id), Some(winner.owner.as_str())));
        assert!(!s.take_idempotency(&alice, "k3", &dead, &b).await.unwrap(), "{name}: a stale reading takes nothing");
        s.release_idempotency(&alice, "k3").await.unwrap();
        assert!(!s.take_idempotency(&alice, "k3", &now, &b).await.unwrap(), "{name}: a freed key is not taken");
    }
}

#[tokio::test]
async fn a_bad_database_url_is_a_clear_error() {
    for url in ["mysql://x@localhost/db", "nonsense"] {
        let err = switchboard::store::SqlStore::connect(url).await.unwrap_err();
        assert!(err.to_string().contains("sqlite://PATH or postgres://"), "{err}");
    }
    let err = switchboard::store::SqlStore::connect("postgres://nobody:secret@127.0.0.1:1/none").await.unwrap_err();
    assert!(!err.to_string().contains("secret"), "the password never appears: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_commits_and_a_bad_write_fails_alone() {
    for db in db::both().await {
        let s: Arc<dyn Store> = db.dyn_store();
        let before = db.store.write_stats();
        let finished: Vec<_> = (0..300)
            .map(|i| {
                let s = s.clone();
                let n = node(i);
                tokio::spawn(async move {
                    s.record_delegation(&clean(n.clone()), clean(record(i)), clean(Default::default()), Durability::Now)
                        .await
                })
            })
            .collect();
        // PostgreSQL refuses a NUL byte in text: that write fails, alone
        let session = s.ensure_session(&user("alice"), &slug("byte-doc"), None, None).await.unwrap();
        let bad = Message {
            session_id: session.id,
            role: "user".into(),
            content: "nul \0 byte".into(),
            delegated_from: None,
            delegation_depth: None,
            asked: false,
            created_at: now_ms(),
        };
        let bad_write = s.append_messages(&clean([bad].to_vec())).await;
        let mut seqs = Vec::new();
        for f in finished {
            seqs.push(f.await.unwrap().unwrap_or_else(|e| panic!("{}: {e}", db.name)).seq);
        }
        seqs.sort();
        assert_eq!(seqs, (1..=300).collect::<Vec<_>>(), "{}: one chain, no gap", db.name);
        assert!(s.verify_audit().await.unwrap().valid, "{}", db.name);
        assert_eq!(s.counts().await.unwrap().delegations, 300, "{}", db.name);
        if db.name == "postgres" {
            assert!(bad_write.is_err(), "postgres took a NUL byte");
        }
        let after = db.store.write_stats();
        let (writes, commits) = (after.writes - before.writes, after.commits - before.commits);
        assert!(writes >= 301, "{}: {writes} writes", db.name);
        assert!(commits < writes, "{}: {writes} writes took {commits} commits: nothing was grouped", db.name);
        eprintln!("{}: {writes} writes in {commits} commits", db.name);
    }
}

/// On SQLite a request's idempotency key is claimed, kept and freed by the
/// store's writer, in the commits it shares with other writes: before, each
/// took a transaction of its own (about 4.6 times slower at 64 connections).
/// Claims in one batch keep their order: of those of one key, one wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_idempotency_keys_are_written_in_the_writers_shared_commits() {
    let db = db::sqlite().await;
    let s: Arc<dyn Store> = db.dyn_store();
    let before = db.store.write_stats();
    let claims: Vec<_> = (0..200)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                let h = holder("here");
                (s.claim_idempotency(&user("alice"), &format!("k{}", i % 100), "h", &h).await.unwrap(), i % 100)
            })
        })
        .collect();
    let mut won = std::collections::HashMap::new();
    for c in claims {
        let (claim, key) = c.await.unwrap();
        assert!(matches!(claim, Claim::New | Claim::Pending(_)), "{claim:?}");
        *won.entry(key).or_insert(0) += usize::from(claim == Claim::New);
    }
    assert!(won.values().all(|&n| n == 1) && won.len() == 100, "one claim of each key wins: {won:?}");
    for k in 0..50 {
        s.complete_idempotency(&user("alice"), &format!("k{k}"), &clean(String::from("{}"))).await.unwrap();
        s.release_idempotency(&user("alice"), &format!("k{}", 50 + k)).await.unwrap();
    }
    let after = db.store.write_stats();
    let (writes, commits) = (after.writes - before.writes, after.commits - before.commits);
    assert_eq!(writes, 300, "every claim, kept answer and freed key went through the writer");
    assert!(commits < 300, "200 concurrent claims took {commits} commits with the 100 others: nothing was grouped");
    assert!(matches!(s.claim_idempotency(&user("alice"), "k7", "h", &holder("here")).await.unwrap(), Claim::Done(_)));
    assert_eq!(s.claim_idempotency(&user("alice"), "k77", "h", &holder("here")).await.unwrap(), Claim::New);
}

/// A finished request's answer is kept under its idempotency key, or its
/// key freed, in the commit of its record: a process that dies after that
/// commit leaves no key held by nobody. Concurrent ends share commits (the
/// keys of a batch in one statement on PostgreSQL and SQLite's sqlx path).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_answer_is_kept_or_its_key_freed_in_the_commit_of_its_record() {
    let dbs = db::both().await;
    let mut stores = every_store(&dbs);
    let in_memory: Arc<dyn Store> = Arc::new(SqlStore::connect("sqlite::memory:").await.unwrap());
    stores.push(("sqlite in memory", in_memory));
    for (name, s) in stores {
        let alice = user("alice");
        for n in 0..40 {
            let claimed = s.claim_idempotency(&alice, &format!("end-{n}"), "h", &holder("here")).await.unwrap();
            assert_eq!(claimed, Claim::New, "{name}");
        }
        let ends: Vec<_> = (0..40u64)
            .map(|n| {
                let (s, alice) = (s.clone(), alice.clone());
                tokio::spawn(async move {
                    let response = (n % 2 == 0).then(|| format!("{{\"n\":{n}}}"));
                    let key = KeyAnswer { user_id: alice, key: format!("end-{n}"), response };
                    let conversation = Conversation { key: Some(key), ..Default::default() };
                    s.record_delegation(
                        &clean((node(n)).clone()),
                        clean(record(n)),
                        clean(conversation),
                        Durability::Now,
                    )
                    .await
                })
            })
            .collect();
        for e in ends {
            e.await.unwrap().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        for n in 0..40 {
            let again = s.claim_idempotency(&alice, &format!("end-{n}"), "h", &holder("there")).await.unwrap();
            let expected = if n % 2 == 0 { Claim::Done(format!("{{\"n\":{n}}}")) } else { Claim::New };
            assert_eq!(again, expected, "{name}: key end-{n}");
        }
    }
}

/// A finished delegation's new session, messages and facts commit with its
/// node and audit record, in batches where the same node may be written twice
/// (the later write wins), and a bad conversation takes only its own records down.
#[tokio::test]
async fn a_delegation_and_its_conversation_commit_together() {
    for db in db::both().await {
        let s: Arc<dyn Store> = db.dyn_store();
        let (alice, byte) = (user("alice"), slug("byte-doc"));
        let conversation = |n: u64, content: &str| {
            let session = Session {
                id: SessionId::new(),
                user_id: alice.clone(),
                agent: byte.clone(),
                parent_id: None,
                created_at: now_ms(),
            };
            let message = |role: &str, content: String| Message {
                session_id: session.id,
                role: role.into(),
                content,
                delegated_from: Some("prime-boss".into()),
                delegation_depth: Some(1),
                asked: false,
                created_at: now_ms(),
            };
            Conversation {
                messages: vec![message("user", format!("ask {n}")), message("assistant", content.to_string())],
                facts: vec![Fact {
                    user_id: alice.clone(),
                    scope: "agent:byte-doc".into(),
                    fact: format!("fact {n}"),
                    source_request: None,
                    created_at: now_ms(),
                }],
                new_session: Some(session),
                step: None,
                key: None,
            }
        };
        let mut jobs = Vec::new();
        let mut expected = Vec::new();
        for i in 0..60u64 {
            let (s, mut n) = (s.clone(), node(i));
            let c = conversation(i, &format!("answer {i}"));
            expected.push((n.request_id, c.clone()));
            jobs.push(tokio::spawn(async move {
                // the running node, then its end: both may land in one batch
                n.status = "running".into();
                s.put_delegation(&clean(n.clone())).await?;
                n.status = "success".into();
                s.record_delegation(&clean(n.clone()), clean(record(i)), clean(c), Durability::Now).await.map(drop)
            }));
        }
        // PostgreSQL refuses a NUL byte: this delegation fails whole
        let bad_node = node(99);
        let bad = s
            .record_delegation(
                &clean(bad_node.clone()),
                clean(record(99)),
                clean(conversation(99, "nul \0 byte")),
                Durability::Now,
            )
            .await;
        for j in jobs {
            j.await.unwrap().unwrap_or_else(|e| panic!("{}: {e}", db.name));
        }
        for (id, c) in &expected {
            let tree = s.delegation_tree(*id).await.unwrap();
            assert_eq!(tree.len(), 1, "{}", db.name);
            assert_eq!(tree[0].status, "success", "{}: the later write of the node wins", db.name);
            let session = c.new_session.as_ref().unwrap();
            assert_eq!(s.session(session.id).await.unwrap().as_ref(), Some(session), "{}", db.name);
            let messages = s.recent_messages(session.id, 10).await.unwrap();
            assert_eq!(messages, c.messages, "{}: both messages, in order", db.name);
        }
        let facts = s.facts(&alice, &["agent:byte-doc".to_string()], 100).await.unwrap();
        assert!(facts.iter().any(|f| f.fact == "fact 59"), "{}: facts committed", db.name);
        assert!(s.verify_audit().await.unwrap().valid, "{}", db.name);
        if db.name == "postgres" {
            assert!(bad.is_err(), "postgres took a NUL byte");
            assert!(s.delegation_tree(bad_node.request_id).await.unwrap().is_empty(), "half a delegation committed");
            assert!(!facts.iter().any(|f| f.fact == "fact 99"), "the bad delegation's fact committed");
            assert_eq!(s.audit_log().await.unwrap().len(), 60, "the bad delegation was audited");
        }
    }
}

#[tokio::test]
async fn a_users_money_records_keep_each_transaction_once_apart_from_other_users_and_takes_corrections() {
    use switchboard::store::{MoneyEntry, MoneyPlan, entry_id};
    for db in db::both().await {
        let s = db.dyn_store();
        let entry = |u: &str, date: &str, merchant: &str, amount: i64, nth: u32| MoneyEntry {
            user_id: user(u),
            id: entry_id(&user(u), Some(date), merchant, amount, "USD", nth),
            date: Some(date.into()),
            merchant: merchant.into(),
            description: format!("{merchant} receipt"),
            amount,
            currency: "USD".into(),
            category: None,
            confidence: Some(95),
            source: "the receipt text".into(),
            note: None,
            request_id: None,
            created_at: now_ms(),
            updated_at: now_ms(),
        };
        let first = [
            entry("alice", "2026-10-03", "Office Depot", 8103, 0),
            entry("alice", "2026-10-01", "Starbucks", 450, 0),
            entry("alice", "2026-10-01", "Starbucks", 450, 1),
        ];
        assert_eq!(s.money_add(&clean(first.to_vec())).await.unwrap(), [true, true, true], "{}", db.name);
        // the same receipt again, and bob's identical purchase
        let again = [
            entry("alice", "2026-10-03", "OFFICE DEPOT #123", 8103, 0),
            entry("bob", "2026-10-03", "Office Depot", 8103, 0),
        ];
        assert_eq!(s.money_add(&clean(again.to_vec())).await.unwrap(), [false, true], "{}", db.name);

        let alice = s.money(&user("alice")).await.unwrap();
        let seen: Vec<(&str, i64)> = alice.iter().map(|e| (e.date.as_deref().unwrap_or(""), e.amount)).collect();
        assert_eq!(seen, [("2026-10-01", 450), ("2026-10-01", 450), ("2026-10-03", 8103)], "{}", db.name);
        assert!(alice.iter().all(|e| e.user_id == user("alice")), "{}", db.name);
        assert_eq!(s.money(&user("bob")).await.unwrap().len(), 1, "{}", db.name);

        // a correction changes alice's row only, and another user cannot make it
        let id = alice[2].id.clone();
        assert!(
            !s.money_update(&user("bob"), &id, &clean((Some(String::from("Travel")), None::<String>))).await.unwrap(),
            "{}",
            db.name
        );
        assert!(
            s.money_update(
                &user("alice"),
                &id,
                &clean((Some(String::from("Office Supplies")), Some(String::from("printer ink"))))
            )
            .await
            .unwrap()
        );
        let row = s.money(&user("alice")).await.unwrap().into_iter().find(|e| e.id == id).unwrap();
        assert_eq!((row.category.as_deref(), row.note.as_deref()), (Some("Office Supplies"), Some("printer ink")));
        // None keeps what is there
        assert!(
            s.money_update(&user("alice"), &id, &clean((None::<String>, Some(String::from("toner"))))).await.unwrap()
        );
        let row = s.money(&user("alice")).await.unwrap().into_iter().find(|e| e.id == id).unwrap();
        assert_eq!((row.category.as_deref(), row.note.as_deref()), (Some("Office Supplies"), Some("toner")));
        let bobs = s.money(&user("bob")).await.unwrap();
        assert_eq!((bobs[0].category.as_deref(), bobs[0].note.as_deref()), (None, None), "{}", db.name);

        // goals and debts: one per (user, kind, name), replaced on write
        let plan = |u: &str, name: &str, saved: i64| MoneyPlan {
            user_id: user(u),
            kind: "goal".into(),
            name: name.into(),
            body: serde_json::json!({"target": 300000, "saved": saved}),
            updated_at: now_ms(),
        };
        s.put_money_plan(&clean((plan("alice", "vacation", 50000)).clone())).await.unwrap();
        s.put_money_plan(&clean((plan("alice", "vacation", 80000)).clone())).await.unwrap();
        s.put_money_plan(&clean((plan("bob", "car", 1000)).clone())).await.unwrap();
        let plans = s.money_plans(&user("alice")).await.unwrap();
        assert_eq!(plans.len(), 1, "{}", db.name);
        assert_eq!(plans[0].body["saved"], 80000, "{}", db.name);
        assert_eq!(s.money_plans(&user("bob")).await.unwrap()[0].name, "car", "{}", db.name);
    }
}

/// The log of an SQLite file is copied into it while the store stays open
/// (by the checkpointer thread beside the writer, and the writer's own
/// checkpoint), and it starts over instead of growing without end: a
/// checkpointer alone, racing an unbroken stream of commits, never gets
/// the log to start over (tried: 35 to 55 MB of log for 40 MB of records).
#[tokio::test]
async fn an_sqlite_files_log_is_copied_into_it_off_the_writers_path_and_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let s = switchboard::store::SqlStore::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let wal = dir.path().join("s.db-wal");
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let before = size(&path);
    // about 40 MB of audit records: far more log pages than the checkpointer lets stand
    let big = "x".repeat(4_000);
    for round in 0..100u64 {
        join_all((0..100u64).map(|i| {
            let mut r = record(round * 100 + i);
            r.objective = big.clone();
            s.append_audit(clean(r))
        }))
        .await
        .into_iter()
        .for_each(|r| drop(r.unwrap()));
    }
    eventually("the records reach the database file", async || size(&path) > before + 30_000_000).await;
    // the writer's automatic checkpoint: 4,000 pages of 4 KiB, plus a batch
    eprintln!("log file: {} bytes, database file: {} bytes", size(&wal), size(&path));
    assert!(size(&wal) < 24_000_000, "the log started over: {} bytes", size(&wal));
    let log = s.audit_log().await.unwrap();
    assert_eq!(log.len(), 10_000);
    assert!(audit::verify(&log).valid);
}

/// A step's start (state `running`, written before its agent runs), and an
/// A2A task's change and a delegation's end marked `Durability::WithNext` (a
/// blocking send's task, written before its turn runs, and its delegation's
/// end, followed by the task's last version) commit without a sync of the
/// log of their own: the next synced commit syncs them. Every other write
/// syncs before it is acknowledged, and they are there at once for every
/// reader.
#[tokio::test]
async fn a_steps_start_and_a_blocking_sends_task_commit_without_a_sync_of_their_own_and_every_other_write_syncs() {
    use switchboard::protocol::AgentSlug;
    use switchboard::protocol::a2a::types::{Task, TaskState, TaskStatus};
    use switchboard::store::{A2aTaskRecord, StepState, TreeStep};
    for db in db::both().await {
        let s = db.dyn_store();
        let id = RequestId::new();
        let start = TreeStep {
            request_id: id,
            root_id: id,
            parent_id: None,
            user_id: user("alice"),
            target: "byte-doc".into(),
            state: StepState::Running,
            entry: "user".into(),
            caller: "user:alice".into(),
            request: "{}".into(),
            response: None,
            deadline_at: now_ms() + 60_000,
            budget: 100,
            attempts: 0,
            reads: None,
            resumes: 0,
            pii: None,
            created_at: now_ms(),
            updated_at: now_ms(),
            owner: None,
        };
        let stats = || db.store.write_stats();
        let before = stats();
        s.put_step(&clean(start.clone())).await.unwrap();
        let started = stats();
        assert_eq!((started.commits - before.commits, started.synced - before.synced), (1, 0), "{}", db.name);
        assert_eq!(s.step(id).await.unwrap().unwrap().state, StepState::Running, "{}: written at once", db.name);
        let task = |state, seq| {
            let task = Task {
                id: id.to_string(),
                context_id: "ctx".into(),
                status: TaskStatus::now(state, None),
                artifacts: None,
                history: None,
                metadata: None,
            };
            A2aTaskRecord::new(&task, "user:alice", &AgentSlug::parse("byte-doc").unwrap(), None, seq)
        };
        let before = stats();
        assert!(
            s.put_a2a_task_with_events(
                Some(&clean(task(TaskState::Working, 1))),
                &clean(Vec::new()),
                Durability::WithNext
            )
            .await
            .unwrap()
        );
        let ended = node(1);
        s.record_delegation(&clean(ended.clone()), clean(record(1)), clean(Default::default()), Durability::WithNext)
            .await
            .unwrap();
        let started = stats();
        assert_eq!((started.commits - before.commits, started.synced - before.synced), (2, 0), "{}", db.name);
        let stored = s.a2a_task(&id.to_string()).await.unwrap();
        assert_eq!(stored.map(|t| t.seq), Some(1), "{}: the task is written at once", db.name);
        assert_eq!(s.delegation_tree(ended.request_id).await.unwrap().len(), 1, "{}: so is the end", db.name);
        // the step's end, an audit append, the task's last version and a delegation's end: each synced
        s.put_step(&clean((TreeStep { state: StepState::Done, response: Some("{}".into()), ..start.clone() }).clone()))
            .await
            .unwrap();
        s.append_audit(clean(record(2))).await.unwrap();
        s.record_delegation(&clean((node(3)).clone()), clean(record(3)), clean(Default::default()), Durability::Now)
            .await
            .unwrap();
        assert!(
            s.put_a2a_task_with_events(
                Some(&clean(task(TaskState::Completed, 2))),
                &clean(Vec::new()),
                Durability::Now
            )
            .await
            .unwrap()
        );
        let after = stats();
        assert_eq!((after.commits - started.commits, after.synced - started.synced), (4, 4), "{}", db.name);
        // with an audit anchor file a delegation's end always syncs: the file is moved after the
        // commit and must never name a record the log could lose
        let dir = tempfile::tempdir().unwrap();
        let anchored = switchboard::store::SqlStore::connect_anchored(&db.url, Some(&dir.path().join("anchor.json")))
            .await
            .unwrap();
        let before = anchored.write_stats();
        anchored
            .record_delegation(
                &clean((node(4)).clone()),
                clean(record(4)),
                clean(Default::default()),
                Durability::WithNext,
            )
            .await
            .unwrap();
        let after = anchored.write_stats();
        assert_eq!((after.commits - before.commits, after.synced - before.synced), (1, 1), "{}", db.name);
        assert_eq!(s.step(id).await.unwrap().unwrap().state, StepState::Done, "{}", db.name);
        assert!(s.verify_audit().await.unwrap().valid, "{}", db.name);
    }
}

/// Two server processes on one database share one anchor file: each append
/// of one finds the file at the other's later head, reads that head's record
/// back to tell it from a tampered log, and goes on; the chain and the file
/// verify. On PostgreSQL that read goes over the connection the writer keeps
/// between batches (its pool has no other).
#[tokio::test]
async fn two_processes_sharing_an_anchor_file_append_in_turn_and_both_verify() {
    use switchboard::store::{SqlStore, anchor};
    for db in db::both().await {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("anchor.json");
        let a = SqlStore::connect_anchored(&db.url, Some(&file)).await.unwrap();
        let b = SqlStore::connect_anchored(&db.url, Some(&file)).await.unwrap();
        for n in 0..6u64 {
            let store = if n % 2 == 0 { &a } else { &b };
            let entry = store.append_audit(clean(record(n))).await.unwrap_or_else(|e| panic!("{}: {e}", db.name));
            assert_eq!(entry.seq, n + 1, "{}", db.name);
        }
        let log = a.audit_log().await.unwrap();
        assert_eq!(log.len(), 6, "{}", db.name);
        let head = anchor::read(&file).unwrap();
        assert_eq!(head.as_ref().map(|h| h.seq), Some(6), "{}: the file is at the last head", db.name);
        assert!(audit::verify_anchor_file(&log, head.as_ref()).valid, "{}", db.name);
        // a file at the head this append goes on from, with another hash, is
        // kept as the evidence, after the writer read that record back (A
        // last wrote record 5, so it looks at the file before it moves it)
        let forged = serde_json::json!({"seq": 6, "hash": log[4].hash, "updated_at": 0});
        std::fs::write(&file, forged.to_string()).unwrap();
        let entry = a.append_audit(clean(record(6))).await.unwrap_or_else(|e| panic!("{}: {e}", db.name));
        assert_eq!(entry.seq, 7, "{}", db.name);
        let kept = anchor::read(&file).unwrap().unwrap();
        assert_eq!((kept.seq, kept.hash.as_str()), (6, log[4].hash.as_str()), "{}: the file is kept", db.name);
        // the chain holds; the file that disagrees with it is what verify reports
        assert!(audit::verify(&b.audit_log().await.unwrap()).valid, "{}", db.name);
        assert!(!b.verify_audit().await.unwrap().valid, "{}: the forged file is reported", db.name);
    }
}

#[tokio::test]
async fn a_tree_and_a_tasks_push_configs_written_by_another_process_are_read_at_once() {
    // On an SQLite file these are read on synchronous read connections, not
    // through sqlx's pool: a second store on the same file stands in for a
    // second process (a replica) writing, and nothing may be cached.
    for db in db::both().await {
        let other = SqlStore::connect(&db.url).await.unwrap();
        let s = db.dyn_store();
        let (root, child) = (node(1), RequestId::new());
        assert!(s.delegation_tree(child).await.unwrap().is_empty(), "{}", db.name);
        other.put_delegation(&clean(root.clone())).await.unwrap();
        let mut kid = node(2);
        (kid.request_id, kid.root_id, kid.parent_id) = (child, root.root_id, Some(root.request_id));
        other.put_delegation(&clean(kid.clone())).await.unwrap();
        // asked by the child's id, or the root's: the whole tree, oldest first
        for id in [child, root.request_id] {
            let tree = s.delegation_tree(id).await.unwrap();
            let ids: Vec<RequestId> = tree.iter().map(|r| r.request_id).collect();
            assert_eq!(ids, [root.request_id, child], "{}", db.name);
            assert_eq!(tree[1].parent_id, Some(root.request_id), "{}", db.name);
            assert_eq!(tree[1].objective, "objective 2", "{}", db.name);
        }

        let task = format!("task-{}", RequestId::new());
        assert!(s.a2a_push_configs(&task).await.unwrap().is_empty(), "{}", db.name);
        let config = A2aPushConfigRecord {
            task_id: task.clone(),
            id: "hook".into(),
            config: r#"{"url":"https://example.test/hook"}"#.into(),
            created_at: now_ms(),
            delivered_seq: 0,
            failures: 0,
            last_error: None,
        };
        other.put_a2a_push_config(&clean(config.clone())).await.unwrap();
        let seen = s.a2a_push_configs(&task).await.unwrap();
        assert_eq!(seen.len(), 1, "{}", db.name);
        assert_eq!((seen[0].id.as_str(), seen[0].config.as_str()), ("hook", config.config.as_str()), "{}", db.name);
        assert!(other.delete_a2a_push_config(&task, "hook").await.unwrap());
        assert!(s.a2a_push_configs(&task).await.unwrap().is_empty(), "{}: a deleted one is gone", db.name);
    }
}

/// Adds a fact for `user` behind the store's back: straight into the table
/// with triggers off (`session_replication_role = replica`), so nobody is
/// told. Only a store that reads the table again sees it.
async fn add_fact_quietly(url: &str, user: &str, text: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    conn.execute("SET session_replication_role = replica").await.unwrap();
    sqlx::query(
        "INSERT INTO memory_facts (id, user_id, scope, fact, fact_hash, source_request, created_at) \
         VALUES ($1, $2, 'global', $3, $4, NULL, $5)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(user.to_string())
    .bind(text.to_string())
    .bind(text.to_string())
    .bind(now_ms())
    .execute(&mut conn)
    .await
    .unwrap();
}

fn texts(facts: &[Fact]) -> Vec<String> {
    facts.iter().map(|f| f.fact.clone()).collect()
}

/// `user`'s facts as `s` serves them to the echo agent (its scopes).
async fn facts_of(s: &dyn Store, user: &str) -> Vec<String> {
    let scopes = ["global".to_string(), "agent:echo".to_string()];
    texts(&s.facts(&crate::support::user(user), &scopes, 100).await.unwrap())
}

/// Until `s` serves `user`'s facts from memory: a fact added behind its
/// back is then not seen. False if that never happened within 100 tries.
async fn until_kept(s: &dyn Store, url: &str, user: &str, tag: &str) -> bool {
    for n in 0..100 {
        facts_of(s, user).await;
        add_fact_quietly(url, user, &format!("{tag} {n}")).await;
        if !facts_of(s, user).await.contains(&format!("{tag} {n}")) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn on_postgresql_a_users_facts_are_kept_in_memory_and_every_replicas_change_reaches_them() {
    // PostgreSQL keeps users' facts in memory between delegations (a round
    // trip each otherwise). That holds only while every change is heard:
    // another replica's, this one's own at once, and none lost with the
    // listening connection.
    let Some(db) = db::postgres().await else { return };
    let a = db.dyn_store();
    let b = SqlStore::connect(&db.url).await.unwrap();
    // notifications are heard across the database: a user of its own keeps
    // other tests' facts out of this one
    let alice = format!("alice-{}", uuid::Uuid::new_v4().simple());
    let fact = |scope: &str, text: &str| Fact {
        user_id: crate::support::user(&alice),
        scope: scope.into(),
        fact: text.into(),
        source_request: None,
        created_at: now_ms(),
    };

    // served from memory: once a listens, a fact added behind the store's
    // back (nothing told anyone) is not seen
    assert!(
        until_kept(&*a, &db.url, &alice, "quiet").await,
        "alice's facts were read from the database every time: nothing kept them"
    );

    // another replica's fact reaches a (the trigger's notification): a reads
    // the table again, the quiet facts with it
    b.add_facts(&clean(([fact("agent:echo", "likes tea")]).to_vec())).await.unwrap();
    eventually("b's fact reaches a", async || facts_of(&*a, &alice).await.contains(&"likes tea".to_string())).await;
    let seen = facts_of(&*a, &alice).await;
    assert!(seen.iter().any(|f| f.starts_with("quiet ")), "{seen:?}");
    // nobody else's facts
    assert!(facts_of(&*a, "bob").await.is_empty());

    // a reads its own write at once, without waiting for the notification
    assert!(until_kept(&*a, &db.url, &alice, "kept").await);
    a.add_facts(&clean(([fact("global", "moved to Lyon")]).to_vec())).await.unwrap();
    let seen = facts_of(&*a, &alice).await;
    assert!(seen.contains(&"moved to Lyon".to_string()), "{seen:?}");

    // the listening connection dies: whatever it might have missed is not
    // served from memory (the cache starts over once it is back)
    assert!(until_kept(&*a, &db.url, &alice, "before the kill").await);
    add_fact_quietly(&db.url, &alice, "quiet while down").await;
    let admin = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let killed: Vec<(bool,)> = sqlx::query_as(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN %switchboard_facts%'",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert!(!killed.is_empty(), "no listening connection to kill");
    eventually("no stale answer outlives the lost connection", async || {
        facts_of(&*a, &alice).await.contains(&"quiet while down".to_string())
    })
    .await;
    // and once it is back, a keeps facts again
    assert!(until_kept(&*a, &db.url, &alice, "after the kill").await, "the listener did not come back");
}

/// The pool pings a PostgreSQL connection before handing it out only when
/// it sat idle for a second or more (a ping per query under load cost a
/// round trip each): one the server closed while it sat idle is still found
/// dead and replaced, not handed to a caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_a_pooled_connection_closed_while_idle_is_replaced_not_used() {
    let Some(db) = db::postgres().await else { return };
    let name = format!("sbtest_idle_{}", uuid::Uuid::new_v4().simple());
    let store = SqlStore::connect(&format!("{}&application_name={name}", db.url)).await.unwrap();
    store.counts().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let admin = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let killed: Vec<(bool,)> =
        sqlx::query_as("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1")
            .bind(name.clone())
            .fetch_all(&admin)
            .await
            .unwrap();
    assert!(!killed.is_empty(), "the store holds no connection named {name}");
    for _ in 0..3 {
        store.counts().await.expect("a connection closed while idle is replaced");
    }
}

/// Every statement that finds rows by their tree's root is planned through
/// an index on both databases: a tree's root by its own id and the rest by
/// the index of the rows below a root (migration 16, `src/store/trees.rs`), which
/// a top-level delegation does not write. A statement whose condition the
/// planner could not match to the partial index would read the whole table
/// of delegations or steps: SQLite's plan would say `SCAN` without an index,
/// PostgreSQL's a `Seq Scan` even with sequential scans priced out.
#[tokio::test]
async fn statements_that_read_a_tree_use_an_index_on_both_databases() {
    let statements = switchboard::store::sql::tree_statements();
    assert!(statements.len() >= 6, "{statements:?}");
    for db in db::both().await {
        let name = db.name;
        let mut conn = db.store.pool().acquire().await.unwrap();
        if name == "postgres" {
            conn.execute("SET enable_seqscan = off").await.unwrap();
        }
        for (what, sql) in &statements {
            let plan: Vec<String> = if name == "postgres" {
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN {sql}"))).fetch_all(&mut *conn).await
            } else {
                let rows: Vec<(i64, i64, i64, String)> =
                    sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
                        .fetch_all(&mut *conn)
                        .await
                        .unwrap_or_else(|e| panic!("{name}: {what}: {e}\n{sql}"));
                Ok(rows.into_iter().map(|r| r.3).collect())
            }
            .unwrap_or_else(|e| panic!("{name}: {what}: {e}\n{sql}"));
            let whole = plan.iter().find(|line| {
                let line = line.trim_start_matches([' ', '-', '>']);
                let scan = line.split_whitespace().collect::<Vec<_>>();
                match scan.as_slice() {
                    // SQLite: a table read whole (a subquery's rows, x, t or f, are not a table of trees)
                    ["SCAN", alias] => ["a", "c", "d", "r", "delegations", "tree_steps"].contains(alias),
                    // PostgreSQL
                    ["Seq", "Scan", "on", table, ..] => ["delegations", "tree_steps"].contains(table),
                    _ => false,
                }
            });
            assert!(whole.is_none(), "{name}: {what} reads a whole table ({whole:?}):\n{}\n{sql}", plan.join("\n"));
            eprintln!("{name}: {what}:\n  {}", plan.join("\n  "));
        }
    }
}
