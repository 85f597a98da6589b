//! Usage analytics, past trees and ratings (issue 46), on the memory store,
//! SQLite and PostgreSQL: every store gives the same numbers for the same
//! records, numbers worked out here by hand; a record that arrives late is
//! counted at the next query; a rating is its tree's user's alone.

use std::sync::Arc;

use switchboard::protocol::{ErrorCode, RequestId, TokenUsage};
use switchboard::store::analytics::{DAY_MS, HOUR_MS};
use switchboard::store::{
    Analytics, AnalyticsQuery, DelegationRecord, HistoryQuery, Rated, Store, Thumb, history, now_ms,
};

use crate::db;
use crate::store::every_store;
use crate::support::*;

/// A node: `(id, root, parent, user, origin, target, status, code, depth, started, ms, tokens)`.
#[allow(clippy::too_many_arguments)]
fn node(
    id: RequestId,
    root: RequestId,
    parent: Option<RequestId>,
    who: &str,
    (origin, target): (&str, &str),
    (status, code): (&str, Option<&str>),
    depth: u32,
    (started_at, duration_ms, tokens): (i64, u64, u32),
) -> DelegationRecord {
    DelegationRecord {
        request_id: id,
        root_id: root,
        parent_id: parent,
        user_id: user(who),
        origin: origin.into(),
        target: target.into(),
        objective: format!("{target}: file the October receipts"),
        objective_hash: "abcdef01".into(),
        status: status.into(),
        error_code: code.map(str::to_string),
        signature: "file october receipts".into(),
        attempts: 1,
        depth,
        started_at,
        duration_ms,
        tokens: TokenUsage { prompt: tokens, completion: 0, total: tokens },
        consult: false,
    }
}

/// Four trees over four days (see the module's numbers below).
struct Trees {
    a: RequestId,
    b: RequestId,
    c: RequestId,
    d: RequestId,
    records: Vec<DelegationRecord>,
    since: i64,
}

fn trees(now: i64) -> Trees {
    let today = now.div_euclid(DAY_MS) * DAY_MS;
    let base = today - 3 * DAY_MS + 10 * HOUR_MS;
    let (a, b, c, d) = (RequestId::new(), RequestId::new(), RequestId::new(), RequestId::new());
    let (a1, a2, a3) = (RequestId::new(), RequestId::new(), RequestId::new());
    let ok = ("success", None);
    let mut records = vec![
        // alice's tree A: prime asks byte and tag; tag's ask to crystal is refused at the depth limit
        node(a, a, None, "alice", ("user", "prime-boss"), ok, 1, (base, 120, 100)),
        node(a1, a, Some(a), "alice", ("prime-boss", "byte-doc"), ok, 2, (base + 10, 40, 30)),
        node(a2, a, Some(a), "alice", ("prime-boss", "tag-ai"), ok, 2, (base + 60, 900, 50)),
        node(
            a3,
            a,
            Some(a2),
            "alice",
            ("tag-ai", "crystal-analytics"),
            ("refused", Some("DEPTH_LIMIT")),
            3,
            (base + 70, 1, 0),
        ),
        // bob's tree B fails
        node(
            b,
            b,
            None,
            "bob",
            ("user", "prime-boss"),
            ("failed", Some("AGENT_FAILED")),
            1,
            (base + DAY_MS + 2 * HOUR_MS, 3000, 10),
        ),
        node(
            RequestId::new(),
            b,
            Some(b),
            "bob",
            ("prime-boss", "tag-ai"),
            ("failed", Some("AGENT_FAILED")),
            2,
            (base + DAY_MS + 2 * HOUR_MS + 5, 2000, 10),
        ),
        // alice's consult C
        node(c, c, None, "alice", ("user", "byte-doc"), ok, 1, (base + 2 * DAY_MS, 60, 5)),
        // alice's tree D, ten minutes ago: prime fans out to three
        node(d, d, None, "alice", ("user", "prime-boss"), ok, 1, (now - 600_000, 30, 7)),
    ];
    records[6].consult = true;
    for (i, target) in ["email", "format", "data"].into_iter().enumerate() {
        records.push(node(
            RequestId::new(),
            d,
            Some(d),
            "alice",
            ("prime-boss", target),
            ok,
            2,
            (now - 599_000 + i as i64, 8, 1),
        ));
    }
    Trees { a, b, c, d, records, since: base - HOUR_MS }
}

async fn put_all(s: &Arc<dyn Store>, records: &[DelegationRecord]) {
    for r in records {
        s.put_delegation(&clean(r.clone())).await.unwrap();
    }
}

fn shape(v: &[switchboard::store::analytics::ShapeCount]) -> Vec<(u64, u64)> {
    v.iter().map(|c| (c.n, c.count)).collect()
}

fn agent<'a>(a: &'a Analytics, name: &str) -> &'a switchboard::store::analytics::AgentStats {
    a.agents.iter().find(|x| x.agent == name).unwrap_or_else(|| panic!("no agent {name} in {:?}", a.agents))
}

#[tokio::test]
async fn every_store_counts_the_same_calls_edges_shapes_errors_users_and_ratings() {
    let dbs = db::both().await;
    let now = now_ms();
    let mut answers: Vec<(&str, Analytics, Analytics)> = Vec::new();
    let t = trees(now);
    for (name, s) in every_store(&dbs) {
        put_all(&s, &t.records).await;
        assert_eq!(
            s.rate_tree(&user("alice"), t.a, Thumb::Down, Some(&clean(String::from("wrong total")))).await.unwrap(),
            Rated::Kept { previous: None }
        );
        assert_eq!(s.rate_tree(&user("alice"), t.d, Thumb::Up, None).await.unwrap(), Rated::Kept { previous: None });
        let all = s.analytics(&AnalyticsQuery::new(Some(t.since), Some(now), None, now).unwrap()).await.unwrap();
        let tot = &all.totals;
        assert_eq!((tot.trees, tot.delegations, tot.consults), (4, 10, 1), "{name}: {tot:?}");
        assert_eq!((tot.success, tot.failed, tot.refused, tot.other), (8, 2, 1, 0), "{name}");
        // a tree's tokens are its top record's (which counts its subtree's)
        assert_eq!(tot.tokens, 100 + 10 + 5 + 7, "{name}");
        assert_eq!((tot.rated_up, tot.rated_down), (1, 1), "{name}");
        let prime = agent(&all, "prime-boss");
        assert_eq!(
            (prime.calls, prime.success, prime.failed, prime.tokens),
            (3, 2, 1, 100 + 10 + 7),
            "{name}: {prime:?}"
        );
        assert_eq!((prime.rated_up, prime.rated_down), (1, 1), "{name}");
        assert_eq!(agent(&all, "tag-ai").tokens, 50 + 10, "{name}");
        assert_eq!(all.agents[0].agent, "prime-boss", "{name}: the most called first");
        let byte = agent(&all, "byte-doc");
        assert_eq!((byte.calls, byte.consults), (2, 1), "{name}");
        let edge = all.edges.iter().find(|e| e.origin == "user" && e.target == "prime-boss").unwrap();
        // durations 30, 120, 3000: the median in the ≤250 ms bucket, the 95th is the slowest
        assert_eq!((edge.calls, edge.p50_ms, edge.p95_ms), (3, 250, 3000), "{name}: {edge:?}");
        assert!((edge.failure_rate - 1.0 / 3.0).abs() < 1e-9, "{name}");
        assert_eq!(shape(&all.depth), [(1, 1), (2, 2), (3, 1)], "{name}: trees by deepest depth");
        assert_eq!(shape(&all.fan_out), [(1, 2), (2, 1), (3, 1)], "{name}: delegations by children");
        let errors: Vec<(&str, &str, u64, u64)> =
            all.errors.iter().map(|e| (e.code.as_str(), e.agent.as_str(), e.refused, e.failed)).collect();
        assert_eq!(
            errors,
            [
                ("AGENT_FAILED", "prime-boss", 0, 1),
                ("AGENT_FAILED", "tag-ai", 0, 1),
                ("DEPTH_LIMIT", "crystal-analytics", 1, 0)
            ],
            "{name}"
        );
        let users: Vec<(&str, u64, u64)> = all.users.iter().map(|u| (u.user.as_str(), u.trees, u.tokens)).collect();
        assert_eq!(users, [("alice", 3, 112), ("bob", 1, 10)], "{name}");
        assert_eq!(all.series_width_ms, DAY_MS, "{name}: whole past days in the range");
        assert_eq!(all.series.iter().map(|p| p.tokens).sum::<u64>(), tot.tokens, "{name}");
        assert_eq!(all.lowest_rated.len(), 1, "{name}");
        assert_eq!((all.lowest_rated[0].root_id, all.lowest_rated[0].comment.as_deref()), (t.a, Some("wrong total")));

        let alice = s
            .analytics(&AnalyticsQuery::new(Some(t.since), Some(now), Some(user("alice")), now).unwrap())
            .await
            .unwrap();
        assert_eq!((alice.totals.trees, alice.totals.tokens, alice.totals.failed), (3, 112, 0), "{name}");
        assert_eq!(alice.users.len(), 1, "{name}: a user's answer names no one else");
        assert!(alice.agents.iter().all(|a| a.failed == 0), "{name}: bob's failures are not alice's");
        answers.push((name, all, alice));
    }
    // the same records, the same numbers (but for when each store took the rating)
    for (_, all, alice) in &mut answers {
        all.lowest_rated.iter_mut().chain(alice.lowest_rated.iter_mut()).for_each(|r| r.rated_at = 0);
    }
    for (name, all, alice) in &answers[1..] {
        assert_eq!(all, &answers[0].1, "{name} and memory disagree");
        assert_eq!(alice, &answers[0].2, "{name} and memory disagree on alice");
    }
}

#[tokio::test]
async fn a_record_written_after_a_query_is_counted_by_the_next_one() {
    let dbs = db::both().await;
    let now = now_ms();
    for (name, s) in every_store(&dbs) {
        let t = trees(now);
        put_all(&s, &t.records).await;
        let q = AnalyticsQuery::new(Some(t.since), Some(now), None, now).unwrap();
        assert_eq!(s.analytics(&q).await.unwrap().totals.failed, 2, "{name}");
        // bob's tree gets a late child (a past day, rolled up already), and its top is rewritten
        let late = &t.records[5];
        let mut child = late.clone();
        child.request_id = RequestId::new();
        child.target = "ledger-tax".into();
        s.put_delegation(&clean((child).clone())).await.unwrap();
        let mut top = t.records[4].clone();
        top.status = "success".into();
        top.error_code = None;
        s.put_delegation(&clean((top).clone())).await.unwrap();
        let again = s.analytics(&q).await.unwrap();
        assert_eq!((again.totals.failed, again.totals.success), (2, 9), "{name}: {:?}", again.totals);
        assert_eq!(shape(&again.fan_out), [(1, 1), (2, 2), (3, 1)], "{name}");
        assert!(again.agents.iter().any(|a| a.agent == "ledger-tax"), "{name}");
        let _ = (t.b, t.c, t.d);
    }
}

#[tokio::test]
async fn a_rating_is_the_trees_users_once_per_tree_and_nothing_else_changes() {
    let dbs = db::both().await;
    let now = now_ms();
    for (name, s) in every_store(&dbs) {
        let t = trees(now);
        put_all(&s, &t.records).await;
        let (alice, bob) = (user("alice"), user("bob"));
        assert_eq!(s.rate_tree(&alice, t.a, Thumb::Up, None).await.unwrap(), Rated::Kept { previous: None }, "{name}");
        assert_eq!(
            s.rate_tree(&alice, t.a, Thumb::Down, Some(&clean(String::from("no")))).await.unwrap(),
            Rated::Kept { previous: Some(Thumb::Up) },
            "{name}: a second rating replaces the first"
        );
        assert_eq!(
            s.rate_tree(&bob, t.a, Thumb::Up, Some(&clean(String::from("mine now")))).await.unwrap(),
            Rated::NotYours,
            "{name}"
        );
        assert_eq!(s.rate_tree(&alice, RequestId::new(), Thumb::Up, None).await.unwrap(), Rated::NotFound, "{name}");
        let child = t.records[1].request_id;
        assert_eq!(
            s.rate_tree(&alice, child, Thumb::Up, None).await.unwrap(),
            Rated::NotFound,
            "{name}: a node is no tree"
        );
        let kept = s.rating(t.a).await.unwrap().unwrap();
        assert_eq!((kept.thumb, kept.comment.as_deref(), &kept.user_id), (Thumb::Down, Some("no"), &alice), "{name}");
        assert_eq!(s.rating(t.b).await.unwrap(), None, "{name}");
        assert_eq!(s.rating(child).await.unwrap(), None, "{name}");

        // what history learns: tree A's successes count as rated down
        let outcomes = s.recent_outcomes(&alice, 100).await.unwrap();
        let byte: Vec<&str> = outcomes.iter().filter(|o| o.target == "byte-doc").map(|o| o.status.as_str()).collect();
        assert!(byte.contains(&"rated_down") && byte.contains(&"success"), "{name}: {byte:?}");
        assert!(outcomes.iter().all(|o| o.target != "crystal-analytics"), "{name}: refusals still do not count");
    }
}

#[tokio::test]
async fn past_trees_come_newest_first_a_page_at_a_time_and_filtered() {
    let dbs = db::both().await;
    let now = now_ms();
    for (name, s) in every_store(&dbs) {
        let t = trees(now);
        put_all(&s, &t.records).await;
        s.rate_tree(&user("alice"), t.d, Thumb::Up, None).await.unwrap();
        let q = |f: &dyn Fn(&mut HistoryQuery)| {
            let mut q = HistoryQuery { limit: history::PAGE, ..Default::default() };
            f(&mut q);
            q.check().unwrap()
        };
        let ids = |p: &switchboard::store::HistoryPage| p.trees.iter().map(|t| t.root_id).collect::<Vec<_>>();
        let alice = s.past_trees(&q(&|q| q.user = Some(user("alice")))).await.unwrap();
        assert_eq!(ids(&alice), [t.d, t.c, t.a], "{name}: newest first, her own");
        assert_eq!(
            (alice.trees[0].nodes, alice.trees[0].tokens, alice.trees[0].rating),
            (4, 7, Some(Thumb::Up)),
            "{name}"
        );
        assert!(alice.trees[1].consult && alice.next.is_none(), "{name}");
        let first = s.past_trees(&q(&|q| q.limit = 2)).await.unwrap();
        assert_eq!(ids(&first), [t.d, t.c], "{name}: everyone's, two at a time");
        let cursor = history::Cursor::decode(first.next.as_deref().unwrap()).unwrap();
        let second = s.past_trees(&q(&|q| (q.limit, q.before) = (2, Some(cursor)))).await.unwrap();
        assert_eq!((ids(&second), second.next), (vec![t.b, t.a], None), "{name}");
        let tag = s.past_trees(&q(&|q| q.agent = Some("tag-ai".into()))).await.unwrap();
        assert_eq!(ids(&tag), [t.b, t.a], "{name}: trees tag-ai took part in");
        let failed = s.past_trees(&q(&|q| q.status = Some("failed".into()))).await.unwrap();
        assert_eq!(ids(&failed), [t.b], "{name}");
        let text = s.past_trees(&q(&|q| q.text = Some("BYTE-DOC: file".into()))).await.unwrap();
        assert_eq!(ids(&text), [t.c], "{name}: words of the top task, ASCII case ignored");
        let wild = s.past_trees(&q(&|q| q.text = Some("%".into()))).await.unwrap();
        assert!(wild.trees.is_empty(), "{name}: % is a character, not a wildcard");
        let none = s.past_trees(&q(&|q| q.user = Some(user("carol")))).await.unwrap();
        assert!(none.trees.is_empty(), "{name}");
    }
}

#[tokio::test]
async fn bad_ranges_are_refused_with_a_stable_code() {
    let now = now_ms();
    for (since, until) in [(Some(now), Some(now - HOUR_MS)), (Some(0), Some(now)), (Some(now - 500 * DAY_MS), None)] {
        let e = AnalyticsQuery::new(since, until, None, now).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest, "{since:?}..{until:?}");
    }
}

/// The data Task Note and a roster its first approach fails on (as in tests/it/seeds.rs).
const DATA_NOTE: &str = "Transform CSV data to JSON format.\nInput columns: name, email, role.\nOutput structure: array of objects with camelCase keys.\nValidate: all emails match pattern, no duplicates.\nname,email,role\nAlex Chan,alex.chan@company.com,PM\nBo,bo@x,dev\nBea Li,bea.li@company.com,Engineer\nAlex Chan,alex.chan@company.com,PM";

#[tokio::test]
async fn a_tree_rated_down_counts_against_the_seed_that_answered_and_taking_it_back_restores_it() {
    use switchboard::Runtime;
    use switchboard::auth::Principal;
    use switchboard::protocol::{DelegationRequest, Status};
    use switchboard::store::task_signature;
    let rt = Runtime::embedded();
    let mut r =
        DelegationRequest::new(slug("prime-boss"), slug("data"), user("alice"), "Transform the team roster", "");
    r.task_note = Some(DATA_NOTE.into());
    let answer = rt.delegate(&Principal::Admin, r).await;
    assert_eq!(answer.status, Status::Success, "{answer:#?}");
    let seed = *answer.execution.as_ref().unwrap().seeds_tried.last().unwrap();
    let score = async || {
        let scores = rt.store().seed_scores(&slug("data"), &task_signature("Transform the team roster")).await.unwrap();
        scores.into_iter().find(|(s, _)| *s == seed).map(|(_, x)| x).unwrap()
    };
    let before = score().await;
    let alice = Principal::User(user("alice"));
    let root = answer.request_id;
    let kept =
        rt.rate(&alice, root, Thumb::Down, Some("the emails are wrong: mail me at alice@example.com")).await.unwrap();
    assert_eq!(score().await, before - 1.0, "the seed that answered loses a point");
    assert!(!kept.comment.unwrap().contains("alice@example.com"), "a comment is kept PII redacted");
    rt.rate(&alice, root, Thumb::Down, None).await.unwrap();
    assert_eq!(score().await, before - 1.0, "the same rating again changes nothing more");
    rt.rate(&alice, root, Thumb::Up, None).await.unwrap();
    assert_eq!(score().await, before, "taking the 👎 back gives the point back");

    // who may rate: the tree's user only; nothing changes otherwise
    for (caller, code) in [
        (Principal::User(user("bob")), ErrorCode::UserMismatch),
        (Principal::Admin, ErrorCode::PermissionDenied),
        (Principal::Agent(slug("prime-boss")), ErrorCode::Unauthenticated),
    ] {
        let e = rt.rate(&caller, root, Thumb::Down, None).await.unwrap_err();
        assert_eq!(e.code, code, "{caller:?}: {}", e.message);
    }
    assert_eq!(rt.rate(&alice, RequestId::new(), Thumb::Down, None).await.unwrap_err().code, ErrorCode::NotFound);
    let long = "x".repeat(switchboard::store::ratings::MAX_COMMENT_CHARS + 1);
    assert_eq!(rt.rate(&alice, root, Thumb::Down, Some(&long)).await.unwrap_err().code, ErrorCode::InvalidRequest);
    assert_eq!(rt.store().rating(root).await.unwrap().unwrap().thumb, Thumb::Up, "the refusals changed nothing");
    assert_eq!(score().await, before);
}
