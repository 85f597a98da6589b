//! Crash-resume under SIGKILL: `switchboard serve` runs 200 delegation trees
//! (chains, parallel branches, a workflow of both, and an orchestrator under
//! an orchestrator) from four concurrent clients and is killed with SIGKILL
//! at seeded random moments, then restarted (serve resumes the open trees).
//! At the end every tree has ended exactly once, no step that had finished
//! before a kill ran again, no acknowledged record is lost, and trees whose
//! deadline passed while the server was down ended `DEADLINE_EXCEEDED`
//! without running anything after the restart.
//!
//! The tree shapes come from a built-in Prime-style orchestrator (`lead`,
//! and `sub` under it) whose routes plan over command agents: `sh` scripts
//! that log "<generation> <agent> <request id> start|end" to a file and nap
//! a little, so kills land mid-tree and every run of a step leaves evidence.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard::protocol::RequestId;
use switchboard::store::{StepState, Store};

use crate::db::{self, Db};
use crate::service::Server;

const TREES: usize = 200;
const CLIENTS: usize = 4;
/// Trees with a short deadline, sent in [`DEADLINE_ROUND`] and cut off by its kill.
const SLOW_TREES: usize = 6;
const DEADLINE_ROUND: u32 = 2;
const SLOW_DEADLINE_MS: u64 = 2500;
pub(crate) const TOKEN: &str = "crash-trees-client";

/// One command agent: logs its runs to `log` and naps `nap` seconds.
fn command_agent(slug: &str, nap: &str, log: &Path) -> String {
    // the envelope's parent_request_id is the id of the node the command runs for
    let script = r#"in=$(cat); id=$(printf '%s' "$in" | sed -n 's/.*"parent_request_id":"\([0-9a-f-]*\)".*/\1/p'); echo "$SB_GEN $SB_AGENT $id start" >> "$SB_LOG"; sleep $SB_NAP; echo "$SB_GEN $SB_AGENT $id end" >> "$SB_LOG"; printf '{"summary":"%s done","result":"%s"}\n' "$SB_AGENT" "$id""#;
    format!(
        r#"
[[agents]]
slug = "{slug}"
name = "{slug}"
description = "A step that naps and logs its runs."
backend = {{ kind = "command", command = "sh", args = ["-c", '''{script}'''], env = {{ SB_AGENT = "{slug}", SB_NAP = "{nap}", SB_LOG = "{log}" }} }}
"#,
        log = log.display()
    )
}

pub(crate) fn config(log: &Path) -> String {
    let mut c = String::from(
        r#"
[limits]
max_depth = 4
max_depth_ceiling = 8
fan_out = 3
deadline_ms = 20000
max_deadline_ms = 60000
max_tokens = 100000
max_tokens_ceiling = 1000000

[auth]
service_tokens = { "client" = "crash-trees-client" }
service_roots = { "client" = ["alice"] }

[[agents]]
slug = "client"
name = "Client"
description = "Sends the trees (never runs)."
backend = { kind = "command", command = "true" }
tools_allowed = ["delegate"]
may_delegate_to = ["lead"]

[[agents]]
slug = "lead"
name = "Lead"
description = "Plans the tree."
backend = { kind = "builtin", name = "prime" }
tools_allowed = ["delegate"]
may_delegate_to = ["a", "b", "c", "d", "sub", "slow"]
limits = { max_attempts = 1 }

[[agents]]
slug = "sub"
name = "Sub"
description = "Plans a part of the tree."
backend = { kind = "builtin", name = "prime" }
tools_allowed = ["delegate"]
may_delegate_to = ["a", "b", "c", "d"]
limits = { max_attempts = 1 }

[prime]
agent = "lead"
planner = "rules"

[[prime.routes]]
name = "nested"
pattern = '(?i)\bnested\b'
plan = "chain"
agents = ["a", "sub"]
objectives = ["Prepare the branches", "Fan out in parallel"]

[[prime.routes]]
name = "parallel"
pattern = '(?i)\bparallel\b'
plan = "parallel"
agents = ["b", "c", "d"]
objectives = ["Branch one", "Branch two", "Branch three"]

[[prime.routes]]
name = "slow"
pattern = '(?i)\bslow\b'
plan = "chain"
agents = ["a", "slow", "b"]
objectives = ["Start", "Take a while", "Finish"]

[[prime.routes]]
name = "chain"
pattern = '(?i)\bchain\b'
plan = "chain"
agents = ["a", "b", "c"]
objectives = ["First link", "Second link", "Third link"]

[[prime.routes]]
name = "workflow"
pattern = '(?i)\bworkflow\b'
plan = "workflow"
workflow = "diamond"

[[workflows]]
name = "diamond"
description = "One step, two side by side, one after both."

[[workflows.steps]]
id = "top"
agent = "a"
objective = "Open the diamond"

[[workflows.steps]]
id = "left"
agent = "b"
objective = "Left side"
after = ["top"]

[[workflows.steps]]
id = "right"
agent = "c"
objective = "Right side"
after = ["top"]

[[workflows.steps]]
id = "bottom"
agent = "d"
objective = "Close the diamond"
after = ["left", "right"]
"#,
    );
    for slug in ["a", "b", "c", "d"] {
        c.push_str(&command_agent(slug, "0.03", log));
    }
    c.push_str(&command_agent("slow", "1.2", log));
    c
}

/// The objectives that make each shape; a tree's shape is its index's.
const SHAPES: [&str; 4] = ["Run the chain", "Run in parallel", "Run the workflow", "Run the nested tree"];

/// One run of a command agent, as its log line says.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) generation: u32,
    pub(crate) agent: String,
    id: String,
    pub(crate) start: bool,
}

pub(crate) fn runs(log: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (generation, agent, id, what) = (w.next()?, w.next()?, w.next()?, w.next()?);
            Some(Run {
                generation: generation.parse().ok()?,
                agent: agent.into(),
                id: id.into(),
                start: what == "start",
            })
        })
        .collect()
}

fn starts(runs: &[Run]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for r in runs.iter().filter(|r| r.start) {
        *n.entry(r.id.clone()).or_insert(0) += 1;
    }
    n
}

/// What a client heard back for a tree.
#[derive(Debug, Clone)]
struct Ack {
    http: u16,
    status: String,
    code: Option<String>,
}

struct Shared {
    queue: Mutex<VecDeque<(RequestId, &'static str, u64)>>,
    sent: Mutex<Vec<RequestId>>,
    acked: Mutex<HashMap<RequestId, Ack>>,
}

pub(crate) fn envelope(id: RequestId, objective: &str, deadline_ms: u64) -> Value {
    json!({
        "request_id": id.to_string(), "origin_employee": "client", "target_employee": "lead",
        "user_id": "alice", "objective": objective, "input": "",
        "constraints": {"max_tokens": 200000, "max_depth": 4, "deadline_ms": deadline_ms},
    })
}

/// Sends one tree; false when the server is gone.
async fn send(http: &reqwest::Client, base: &str, shared: &Shared, tree: (RequestId, &'static str, u64)) -> bool {
    let (id, objective, deadline) = tree;
    let sent = http
        .post(format!("{base}/v1/delegate"))
        .bearer_auth(TOKEN)
        .header("X-Agent-Request-ID", id.to_string())
        .header("X-Agent-Origin", "client")
        .json(&envelope(id, objective, deadline))
        .send()
        .await;
    let res = match sent {
        Ok(res) => res,
        Err(e) if e.is_connect() => {
            // it never reached the server: send it to the next one
            shared.queue.lock().unwrap().push_front(tree);
            return false;
        }
        Err(_) => return false,
    };
    let http_status = res.status().as_u16();
    let Ok(body) = res.json::<Value>().await else { return false };
    let status = body["status"].as_str().unwrap_or("refused").to_string();
    let code = body["error"]["code"].as_str().map(str::to_string);
    shared.acked.lock().unwrap().insert(id, Ack { http: http_status, status, code });
    true
}

async fn client(http: reqwest::Client, base: String, shared: Arc<Shared>) {
    loop {
        let Some(tree) = shared.queue.lock().unwrap().pop_front() else { return };
        shared.sent.lock().unwrap().push(tree.0);
        if !send(&http, &base, &shared, tree).await {
            return;
        }
    }
}

/// What the harness saw, for the report.
#[derive(Debug, Default)]
struct Report {
    kills: u32,
    trees: usize,
    never_admitted: usize,
    resumed: usize,
    expired: usize,
    steps: usize,
    unfinished_rerun: usize,
    completed_rerun: usize,
    records_lost: usize,
}

pub(crate) fn start_server(config: &str, db: &Db, generation: u32, log: &Path) -> Server {
    let env = [("SB_GEN", generation.to_string()), ("SB_LOG", log.display().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(Some(config), Some(&db.url), "127.0.0.1:0", &env, 100)
}

/// Every step of the trees `roots`, as the journal has them now.
async fn all_steps(store: &Arc<dyn Store>, roots: &[RequestId]) -> Vec<switchboard::store::TreeStep> {
    let mut all = Vec::new();
    for root in roots {
        all.extend(store.tree_steps(*root).await.unwrap());
    }
    all
}

async fn crash_and_resume(db: &Db) -> Report {
    let store = db.dyn_store();
    let dir = tempfile::tempdir().unwrap();
    let log: PathBuf = dir.path().join("runs.log");
    let config = config(&log);
    let http = switchboard::util::http_client().unwrap();
    let mut seed: u64 = 0xc0ff_ee17;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let normal = TREES - SLOW_TREES;
    let queue = (0..normal).map(|i| (RequestId::new(), SHAPES[i % SHAPES.len()], 20_000)).collect();
    let slow: Vec<RequestId> = (0..SLOW_TREES).map(|_| RequestId::new()).collect();
    let shared = Arc::new(Shared { queue: Mutex::new(queue), sent: Mutex::default(), acked: Mutex::default() });
    let mut report = Report::default();
    // per kill: the steps done at that moment and how often each had started
    let mut done_at_kill: HashMap<String, usize> = HashMap::new();
    let mut open_at_kill: HashSet<RequestId> = HashSet::new();
    let mut slow_open_at_kill: Vec<RequestId> = Vec::new();

    let mut generation = 0;
    loop {
        generation += 1;
        assert!(generation <= 40, "too few trees got through in 40 rounds");
        let server = start_server(&config, db, generation, &log);
        let last = shared.queue.lock().unwrap().is_empty();
        let clients: Vec<_> =
            (0..CLIENTS).map(|_| tokio::spawn(client(http.clone(), server.url.clone(), shared.clone()))).collect();
        if last {
            // everything was sent: let the resumed trees end, then stop
            let mut open = 1;
            for _ in 0..1200 {
                open = store.open_steps().await.unwrap().len();
                if open == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(open, 0, "trees still open a minute after the last restart");
            drop(server);
            for c in clients {
                c.await.unwrap();
            }
            break;
        }
        let mut slow_sent = Vec::new();
        if generation == DEADLINE_ROUND {
            for id in &slow {
                shared.sent.lock().unwrap().push(*id);
                let (http, base, shared, id) = (http.clone(), server.url.clone(), shared.clone(), *id);
                slow_sent.push(tokio::spawn(async move {
                    send(&http, &base, &shared, (id, "Run the slow chain", SLOW_DEADLINE_MS)).await
                }));
            }
        }
        // kill once this generation's agents have made some progress (a
        // loaded machine starts slowly), at a random moment after that
        let wanted = if generation == DEADLINE_ROUND { 0 } else { 20 + next(60) as usize };
        let mut waited = 0;
        loop {
            let now = runs(&log);
            let mine = now.iter().filter(|r| r.generation == generation && r.start);
            let (progress, slow_started) = mine.fold((0, 0), |(p, s), r| (p + 1, s + usize::from(r.agent == "slow")));
            let idle = shared.queue.lock().unwrap().is_empty() && clients.iter().all(|c| c.is_finished());
            if (progress >= wanted && (generation != DEADLINE_ROUND || slow_started >= SLOW_TREES)) || idle {
                break;
            }
            waited += 1;
            assert!(waited < 1200, "generation {generation} made no progress: {progress} runs");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        if generation != DEADLINE_ROUND {
            tokio::time::sleep(Duration::from_millis(next(60))).await;
        }
        drop(server); // SIGKILL, then reap
        report.kills += 1;
        for c in clients {
            c.await.unwrap();
        }
        for s in slow_sent {
            let _ = s.await;
        }

        // what the journal holds right after the kill
        let sent: Vec<RequestId> = shared.sent.lock().unwrap().clone();
        let steps = all_steps(&store, &sent).await;
        let started = starts(&runs(&log));
        for s in &steps {
            if s.state == StepState::Done {
                done_at_kill
                    .entry(s.request_id.to_string())
                    .or_insert_with(|| started.get(&s.request_id.to_string()).copied().unwrap_or(0));
            }
            if s.is_top() && !s.state.is_terminal() {
                open_at_kill.insert(s.request_id);
                if slow.contains(&s.request_id) && generation == DEADLINE_ROUND {
                    slow_open_at_kill.push(s.request_id);
                }
            }
        }
        let o = crate::service::audit_log(&db.url);
        assert_eq!(o["verify"]["valid"], true, "after kill {generation}: {}", o["verify"]);
        if generation == DEADLINE_ROUND {
            // down for longer than the slow trees had left
            tokio::time::sleep(Duration::from_millis(SLOW_DEADLINE_MS + 500)).await;
        }
    }
    // commands a kill orphaned finish their nap
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // every tree ended exactly once
    let sent: Vec<RequestId> = shared.sent.lock().unwrap().clone();
    let sent_set: HashSet<RequestId> = sent.iter().copied().collect();
    assert_eq!(sent_set.len(), TREES, "every tree was sent");
    let audit = store.audit_log().await.unwrap();
    assert!(store.verify_audit().await.unwrap().valid);
    let mut ends: HashMap<RequestId, Vec<&switchboard::store::AuditEntry>> = HashMap::new();
    for a in &audit {
        ends.entry(a.record.request_id).or_default().push(a);
    }
    let acked = shared.acked.lock().unwrap().clone();
    let all = all_steps(&store, &sent).await;
    let log_runs = runs(&log);
    let started = starts(&log_runs);
    report.trees = sent_set.len();
    for root in &sent_set {
        let top = store.step(*root).await.unwrap();
        let recorded = ends.get(root).map(Vec::as_slice).unwrap_or_default();
        let Some(top) = top else {
            // cut off before it was admitted: nothing ran, nothing is on file
            assert!(recorded.is_empty(), "tree {root} has no step but records {recorded:?}");
            assert!(!acked.contains_key(root), "tree {root} was answered but has no step");
            report.never_admitted += 1;
            continue;
        };
        assert!(top.state.is_terminal(), "tree {root} is still {:?}", top.state);
        assert_eq!(recorded.len(), 1, "tree {root} ended {} times: {recorded:?}", recorded.len());
        let record = &recorded[0].record;
        let expected = match top.state {
            StepState::Done => "success",
            StepState::Failed => "failed",
            other => panic!("tree {root} ended {other:?}"),
        };
        assert_eq!(record.outcome, expected, "tree {root}: {record:?}");
        if let Some(ack) = acked.get(root) {
            // what the client heard is what is on file
            assert_eq!(
                (ack.status.as_str(), &ack.code),
                (record.outcome.as_str(), &record.error_code),
                "tree {root}: {ack:?}"
            );
        }
        if slow.contains(root) {
            continue;
        }
        // a kill is no reason to fail: every other tree succeeds, resumed or not
        assert_eq!(record.outcome, "success", "tree {root}: {record:?}");
        if let Some(ack) = acked.get(root) {
            assert_eq!(ack.http, 200, "tree {root}: {ack:?}");
        }
        if open_at_kill.contains(root) {
            report.resumed += 1;
        }
    }
    // no acknowledged record lost
    report.records_lost = acked.keys().filter(|id| !ends.contains_key(id)).count();
    assert_eq!(report.records_lost, 0);

    // every step ended once; no step that was done before a kill ran again
    report.steps = all.len();
    for s in &all {
        assert!(s.state.is_terminal(), "step {} of tree {} left {:?}", s.request_id, s.root_id, s.state);
        let n = ends.get(&s.request_id).map_or(0, Vec::len);
        assert_eq!(n, 1, "step {} ({}) of tree {} has {n} records", s.request_id, s.target, s.root_id);
    }
    for (id, before) in &done_at_kill {
        let after = started.get(id).copied().unwrap_or(0);
        if after != *before {
            report.completed_rerun += 1;
        }
    }
    // cut off while its agent ran: it runs again, under its old id
    report.unfinished_rerun = started.values().filter(|n| **n > 1).count();

    // the slow trees cut off by the long outage: DEADLINE_EXCEEDED, nothing ran after the restart
    assert!(!slow_open_at_kill.is_empty(), "no slow tree was open at the kill of round {DEADLINE_ROUND}");
    for root in &slow {
        let record = &ends[root][0].record;
        if !slow_open_at_kill.contains(root) {
            // it ended before the kill
            assert_eq!(record.outcome, "success", "slow tree {root}: {record:?}");
            continue;
        }
        assert_eq!(record.error_code.as_deref(), Some("DEADLINE_EXCEEDED"), "slow tree {root}: {record:?}");
        let ids: HashSet<String> =
            all.iter().filter(|s| s.root_id == *root).map(|s| s.request_id.to_string()).collect();
        let late: Vec<&Run> =
            log_runs.iter().filter(|r| r.start && r.generation > DEADLINE_ROUND && ids.contains(&r.id)).collect();
        assert!(late.is_empty(), "slow tree {root} ran steps after its deadline: {late:?}");
    }
    report.expired = slow_open_at_kill.len();
    assert_eq!(report.completed_rerun, 0, "completed steps ran again: {report:?}");
    report
}

fn print(db: &Db, r: &Report) {
    eprintln!(
        "crash-resume ({}): {} kills; {} trees ({} never admitted), {} resumed, {} expired while down; \
         {} steps, {} unfinished steps re-run, {} completed steps re-run, {} records lost",
        db.name,
        r.kills,
        r.trees,
        r.never_admitted,
        r.resumed,
        r.expired,
        r.steps,
        r.unfinished_rerun,
        r.completed_rerun,
        r.records_lost
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_200_trees_on_sqlite_every_tree_ends_once_and_no_finished_step_runs_again() {
    let db = db::sqlite().await;
    let report = crash_and_resume(&db).await;
    print(&db, &report);
    assert!(report.kills >= 3 && report.resumed > 0, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_200_trees_on_postgres_every_tree_ends_once_and_no_finished_step_runs_again() {
    let Some(db) = db::postgres().await else { return };
    let report = crash_and_resume(&db).await;
    print(&db, &report);
    assert!(report.kills >= 3 && report.resumed > 0, "{report:?}");
}
