//! Deterministic replay (`switchboard replay`): a recorded tree runs again
//! from its journal, under the same root request id, on a throw-away
//! runtime with this runtime's configuration and an in-memory store, so a
//! replay changes no state. Child ids come from the parent's id and its
//! n-th call to a target (`journal::child_id`), so each replayed node finds
//! its recorded step.
//!
//! Recorded (the default): an agent that reaches a model or the network
//! (llm, http, a2a, command, Prime's llm planner) answers from its recorded
//! response; a built-in agent runs its code again and delegates through the
//! pipeline as usual. Live: every agent runs as configured today (a
//! regression check for prompt or config changes). Either way a seeded agent
//! gets the seed its recorded final attempt used, the tree's recorded
//! approvals are decided as they were, and an agent that runs gets what it
//! read from the store then (`TreeStep::reads`: its facts, its session's
//! recent messages, each money call's answer) instead of the store as it is
//! now, so a user's money records that grew since does not make a difference. Each node's outcome (status, error
//! code, result, artifacts) is compared with the recorded one.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use super::durable::owns;
use super::entry::Step;
use super::journal;
use crate::agent::{Agent, AgentContext, AgentOutput, Money, StepReads, Tape, Task, TokenEstimate};
use crate::auth::Principal;
use crate::config::{AgentSpec, BUILTIN_PRIME, Backend, Config};
use crate::protocol::{DelegationError, DelegationRequest, DelegationResponse, ErrorCode, RequestId, Status};
use crate::runtime::Runtime;
use crate::store::{
    Approval, ApprovalState, Durability, MemoryStore, ReplayRecord, StepState, Store, TreeStep, now_ms,
};

/// What a replay runs the agents against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// Agents that reach a model or the network answer as recorded; built-in code runs again.
    Recorded,
    /// Every agent runs as configured today.
    Live,
}

/// How one node ended, as far as a replay compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// `success`, `partial`, `failed`, `needs_input`, `needs_approval`.
    pub status: String,
    /// The error's code, if it ended with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The full answer (PII redacted).
    pub result: String,
    /// Its artifacts, as JSON.
    pub artifacts: serde_json::Value,
}

/// One node of a replayed tree: what was recorded, what the replay made.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayedNode {
    /// The node's request id (the same in the record and the replay).
    pub request_id: RequestId,
    /// Its parent's, None at the root.
    pub parent_id: Option<RequestId>,
    /// 0 at the root.
    pub depth: u32,
    /// The agent asked.
    pub agent: String,
    /// As recorded; None for a call the replay made that the record lacks (added).
    pub recorded: Option<Outcome>,
    /// As replayed; None for a recorded call the replay did not make (missing).
    pub replayed: Option<Outcome>,
    /// Answered from its recorded response (or inside such an answer): not run again.
    pub from_record: bool,
    /// Whether the two agree.
    pub same: bool,
    /// What differs, one line each (`status: success -> failed`, `- old line`, `+ new line`).
    pub differences: Vec<String>,
}

/// A replay's result: every node, recorded against replayed.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// The tree's root request id.
    pub root_id: RequestId,
    /// What the agents ran against.
    pub mode: ReplayMode,
    /// When the recorded tree started (epoch ms): its clock reading.
    pub recorded_at: i64,
    /// Every node, root first, depth first.
    pub nodes: Vec<ReplayedNode>,
    /// How many nodes differ.
    pub differing: usize,
    /// Whether every node is the same.
    pub identical: bool,
}

impl ReplayReport {
    /// The report as text: one line per node (depth-indented), each
    /// difference under its node, and `identical` or `N of M nodes differ`.
    pub fn render(&self) -> String {
        let mode = match self.mode {
            ReplayMode::Recorded => "against recorded outputs",
            ReplayMode::Live => "against today's agents",
        };
        let mut out = format!("Replay of tree {} ({mode}):\n", self.root_id);
        let show = |o: &Option<Outcome>| match o {
            None => "-".to_string(),
            Some(o) => o.error_code.as_ref().map_or_else(|| o.status.clone(), |c| format!("{} {c}", o.status)),
        };
        for n in &self.nodes {
            let indent = "  ".repeat(n.depth as usize);
            let verdict = match (&n.recorded, &n.replayed, n.same) {
                (None, _, _) => "added",
                (_, None, false) => "missing",
                (_, _, true) if n.from_record => "same (recorded)",
                (_, _, true) => "same",
                _ => "DIFFERENT",
            };
            out.push_str(&format!(
                "{indent}{:<18} recorded: {:<26} replayed: {:<26} {verdict}\n",
                n.agent,
                show(&n.recorded),
                show(&n.replayed)
            ));
            for d in &n.differences {
                out.push_str(&format!("{indent}    {d}\n"));
            }
        }
        if self.identical {
            out.push_str("identical\n");
        } else {
            out.push_str(&format!("{} of {} nodes differ\n", self.differing, self.nodes.len()));
        }
        out
    }
}

impl Runtime {
    /// [`Runtime::replay`] on behalf of `caller` (the tree's user or an
    /// operator: another user's tree is `USER_MISMATCH`), its report kept in
    /// the store beside the tree (`replays`).
    pub async fn replay_for(
        &self,
        caller: &Principal,
        root: RequestId,
        mode: ReplayMode,
    ) -> Result<ReplayReport, DelegationError> {
        let store = &self.inner.store;
        let user = match store.step(root).await? {
            Some(top) if !owns(caller, &top.user_id) => {
                return Err(DelegationError::new(
                    ErrorCode::UserMismatch,
                    format!("tree {root} belongs to another user"),
                ));
            }
            Some(top) => top.user_id,
            None => return self.replay(root, mode).await, // says why there is nothing to replay
        };
        let report = self.replay(root, mode).await?;
        let kept = ReplayRecord {
            id: RequestId::new().to_string(),
            root_id: root,
            user_id: user,
            mode: serde_json::to_value(mode).ok().and_then(|m| m.as_str().map(str::to_string)).unwrap_or_default(),
            identical: report.identical,
            differing: u32::try_from(report.differing).unwrap_or(u32::MAX),
            nodes: u32::try_from(report.nodes.len()).unwrap_or(u32::MAX),
            report: serde_json::to_string(&report)
                .map_err(|e| DelegationError::new(ErrorCode::AgentFailed, e.to_string()))?,
            run_by: caller.label(),
            created_at: now_ms(),
        };
        store.put_replay(&self.for_store(kept)).await?;
        Ok(report)
    }

    /// Replays the recorded tree `root` (see the module docs) and compares
    /// every node with its record. Nothing in this runtime's store changes.
    /// `NOT_FOUND` for an id no tree has; `RECORD_INCOMPLETE` (naming what
    /// is missing) for a tree whose journal cannot replay it: it ran before
    /// the journal existed, a step has no answer, or its envelope is unreadable.
    pub async fn replay(&self, root: RequestId, mode: ReplayMode) -> Result<ReplayReport, DelegationError> {
        let store = &self.inner.store;
        let Some(top) = store.step(root).await? else {
            return Err(if store.delegation_tree(root).await?.is_empty() {
                DelegationError::new(ErrorCode::NotFound, format!("no tree has root id {root}"))
            } else {
                incomplete(format!(
                    "tree {root} has delegation records but no journal steps (it ran before the journal was kept, or its steps were removed); it cannot be replayed"
                ))
            });
        };
        if top.parent_id.is_some() {
            return Err(DelegationError::new(
                ErrorCode::NotFound,
                format!("{root} is a step of tree {}, not a tree's root; replay {}", top.root_id, top.root_id),
            ));
        }
        let steps = store.tree_steps(root).await?;
        check_complete(store.as_ref(), root, &steps).await?;
        let mut req: DelegationRequest = serde_json::from_str(&top.request)
            .map_err(|e| incomplete(format!("tree {root}'s recorded envelope is unreadable: {e}")))?;
        let caller = journal::caller(&top)
            .ok_or_else(|| incomplete(format!("tree {root}'s recorded caller '{}' is unreadable", top.caller)))?;
        // the replay's store holds no sessions: the tree starts its own
        req.child_session_id = None;
        req.parent_session_id = None;

        let recorded: Arc<HashMap<RequestId, TreeStep>> =
            Arc::new(steps.iter().map(|s| (s.request_id, s.clone())).collect());
        let scratch: Arc<dyn Store> = Arc::new(MemoryStore::new());
        // the decisions people made, as they made them; a yes that was never acted on (its node's
        // step did not end done: the tree was cancelled, or ended otherwise, first) is not one the
        // replay acts on either: a replay never does what the recorded tree did not
        for a in store.approvals(Some(&top.user_id), false).await? {
            if a.root_id == top.root_id {
                let acted = steps.iter().any(|s| s.request_id == a.request_id && s.state == StepState::Done);
                let a = if a.state == ApprovalState::Approved && !acted {
                    Approval {
                        state: ApprovalState::Rejected,
                        reason: Some("approved, but not carried out: the tree ended first".into()),
                        ..a
                    }
                } else {
                    a
                };
                scratch.ask_approval(&self.for_store(a)).await?;
            }
        }
        let replica = self.replica(mode, &recorded, scratch.clone())?;
        tracing::info!(root_id = %root, ?mode, "replaying tree");
        // the root runs as a resumed step: under its recorded clock reading ("today" is the day it ran)
        // (owned by none: the replica that replays it writes it as its own)
        let start = TreeStep { state: StepState::Running, response: None, owner: None, ..top.clone() };
        scratch.put_step(&self.for_store(start)).await?;
        let step = Step {
            parent: None,
            caller: &caller,
            req,
            entry: journal::entry(&top),
            resumed: true,
            end: Durability::Now,
        };
        replica.dispatch_step(step).await;
        let replayed = scratch.tree_steps(root).await?;
        let from_record: HashSet<RequestId> = replayed
            .iter()
            .filter(|s| mode == ReplayMode::Recorded && self.reaches_out(&s.target))
            .map(|s| s.request_id)
            .collect();
        Ok(compare(root, mode, top.created_at, &steps, &replayed, &from_record))
    }

    /// A runtime like this one (configuration, agents) on `store`, its agents wrapped for a replay.
    fn replica(
        &self,
        mode: ReplayMode,
        recorded: &Arc<HashMap<RequestId, TreeStep>>,
        store: Arc<dyn Store>,
    ) -> Result<Runtime, DelegationError> {
        let mut builder = Runtime::builder().config(self.inner.config.clone()).store(store);
        for m in self.registry().members() {
            let answer = mode == ReplayMode::Recorded && reaches_out(&m.spec, &self.inner.config);
            let wrapped = Replayed { agent: m.agent.clone(), recorded: recorded.clone(), answer };
            builder = builder.agent(m.spec.slug.as_str(), wrapped);
        }
        builder.build()
    }

    fn reaches_out(&self, target: &str) -> bool {
        self.registry().members().any(|m| m.spec.slug.as_str() == target && reaches_out(&m.spec, &self.inner.config))
    }
}

fn incomplete(message: String) -> DelegationError {
    DelegationError::new(ErrorCode::RecordIncomplete, message)
}

/// Every step has ended (or paused) with a readable answer, and every
/// delegation that was admitted has its step.
async fn check_complete(store: &dyn Store, root: RequestId, steps: &[TreeStep]) -> Result<(), DelegationError> {
    for s in steps {
        let answer: Option<DelegationResponse> = s.response.as_deref().and_then(|r| serde_json::from_str(r).ok());
        if answer.is_none() {
            return Err(incomplete(format!(
                "step {} ({}) of tree {root} has no recorded answer (it is {}); replay a tree once it has ended or paused",
                s.request_id,
                s.target,
                s.state.as_str()
            )));
        }
    }
    let have: HashSet<RequestId> = steps.iter().map(|s| s.request_id).collect();
    let missing: Vec<String> = store
        .delegation_tree(root)
        .await?
        .into_iter()
        .filter(|r| r.status != "refused" && !have.contains(&r.request_id))
        .map(|r| format!("{} ({})", r.request_id, r.target))
        .collect();
    if !missing.is_empty() {
        return Err(incomplete(format!(
            "tree {root} has delegations without journal steps: {}; it cannot be replayed",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Whether an agent reaches a model or the network (its answer comes from the record in a replay).
fn reaches_out(spec: &AgentSpec, config: &Config) -> bool {
    match &spec.backend {
        Backend::Builtin { name } => {
            let name = name.as_deref().unwrap_or(spec.slug.as_str());
            BUILTIN_PRIME.contains(&name) && config.prime.planner == "llm"
        }
        _ => true,
    }
}

/// An agent of a replay: answers from its recorded response (`answer`), or
/// runs with the seed its recorded final attempt used.
struct Replayed {
    agent: Arc<dyn Agent>,
    recorded: Arc<HashMap<RequestId, TreeStep>>,
    answer: bool,
}

impl Replayed {
    fn step(&self, task: &Task) -> Option<&TreeStep> {
        self.recorded.get(&task.request_id?)
    }

    fn recorded(&self, task: &Task) -> Option<DelegationResponse> {
        serde_json::from_str(self.step(task)?.response.as_deref()?).ok()
    }

    fn reads(&self, task: &Task) -> Option<StepReads> {
        serde_json::from_str(self.step(task)?.reads.as_deref()?).ok()
    }
}

#[async_trait]
impl Agent for Replayed {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let recorded = self.recorded(task);
        if self.answer {
            let Some(r) = recorded else {
                return Err(incomplete("the record holds no answer for this call (it was not made then)".into()));
            };
            return as_output(r);
        }
        let seed = recorded.and_then(|r| r.execution).and_then(|e| e.seeds_tried.last().copied());
        let mut task = task.clone();
        if let Some(s) = seed.filter(|s| self.agent.seeds().contains(s)) {
            task.seed = Some(s);
        }
        // what it read from the store then, given again: facts, history, its money calls' answers
        let Some(reads) = self.reads(&task) else { return self.agent.run(ctx, &task).await };
        (task.facts, task.history) = (reads.facts, reads.history);
        match (ctx.has_money(), task.user_id.clone()) {
            (true, Some(user)) => {
                let own: Arc<dyn Store> = Arc::new(MemoryStore::new());
                let tape = Arc::new(Tape::new(reads.money));
                let ctx = ctx.clone().with_money(Money::new(own, user, task.request_id).replaying(tape));
                self.agent.run(&ctx, &task).await
            }
            _ => self.agent.run(ctx, &task).await,
        }
    }

    fn estimate_tokens(&self, task: &Task) -> TokenEstimate {
        self.agent.estimate_tokens(task)
    }

    fn seeds(&self) -> &[u64] {
        self.agent.seeds()
    }

    fn default_attempts(&self) -> Option<u32> {
        self.agent.default_attempts()
    }

    fn deterministic(&self) -> bool {
        // a recorded answer is the same every time: asking again changes nothing
        self.answer || self.agent.deterministic()
    }
}

/// A recorded response as the agent's output (or error) that makes it again.
fn as_output(r: DelegationResponse) -> Result<AgentOutput, DelegationError> {
    match (r.status, r.error) {
        (Status::Failed | Status::NeedsApproval, Some(e)) => Err(e),
        (Status::Failed | Status::NeedsApproval, None) => Err(ErrorCode::AgentFailed.into()),
        (status, _) => Ok(AgentOutput {
            summary: r.summary,
            result: r.result,
            artifacts: r.artifacts,
            new_facts: r.new_facts,
            used_sources: r.used_sources,
            token_usage: Some(r.token_usage),
            confidence: r.confidence,
            requires_followup: r.requires_followup,
            status: (status != Status::Success).then_some(status),
        }),
    }
}

fn outcome(step: &TreeStep) -> Outcome {
    let answer: Option<DelegationResponse> = step.response.as_deref().and_then(|r| serde_json::from_str(r).ok());
    match answer {
        Some(r) => Outcome {
            status: r.status.as_str().to_string(),
            error_code: r.error_code().map(|c| c.to_string()),
            result: r.result,
            artifacts: serde_json::to_value(&r.artifacts).unwrap_or_default(),
        },
        None => Outcome {
            status: step.state.as_str().to_string(),
            error_code: None,
            result: String::new(),
            artifacts: serde_json::Value::Null,
        },
    }
}

/// The nodes of both trees, matched by request id, root first and depth first.
fn compare(
    root: RequestId,
    mode: ReplayMode,
    recorded_at: i64,
    recorded: &[TreeStep],
    replayed: &[TreeStep],
    from_record: &HashSet<RequestId>,
) -> ReplayReport {
    let then: HashMap<RequestId, &TreeStep> = recorded.iter().map(|s| (s.request_id, s)).collect();
    let now: HashMap<RequestId, &TreeStep> = replayed.iter().map(|s| (s.request_id, s)).collect();
    let mut children: HashMap<RequestId, Vec<&TreeStep>> = HashMap::new();
    let mut seen = HashSet::new();
    for s in recorded.iter().chain(replayed) {
        if let Some(p) = s.parent_id.filter(|_| seen.insert(s.request_id)) {
            children.entry(p).or_default().push(s);
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|s| (s.created_at, s.request_id.to_string()));
    }
    let mut nodes = Vec::new();
    // (id, depth, inside an answer from the record)
    let mut stack = vec![(root, 0u32, false)];
    while let Some((id, depth, inside)) = stack.pop() {
        let (was, is) = (then.get(&id).copied(), now.get(&id).copied());
        let Some(any) = was.or(is) else { continue };
        let answered = from_record.contains(&id);
        let recorded = was.map(outcome);
        let replayed = is.map(outcome);
        let differences = match (&recorded, &replayed) {
            // below an answer from the record nothing runs again: not a difference
            (Some(_), None) if inside => Vec::new(),
            (Some(_), None) => vec!["missing: the replay did not make this call".to_string()],
            (None, _) => vec!["added: the record has no such call".to_string()],
            (Some(a), Some(b)) => differences(a, b),
        };
        nodes.push(ReplayedNode {
            request_id: id,
            parent_id: any.parent_id,
            depth,
            agent: any.target.clone(),
            same: differences.is_empty(),
            recorded,
            replayed,
            from_record: answered || inside,
            differences,
        });
        for c in children.get(&id).into_iter().flatten().rev() {
            stack.push((c.request_id, depth + 1, inside || answered));
        }
    }
    let differing = nodes.iter().filter(|n| !n.same).count();
    ReplayReport { root_id: root, mode, recorded_at, identical: differing == 0, differing, nodes }
}

/// What differs between a recorded and a replayed outcome.
fn differences(then: &Outcome, now: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    if then.status != now.status {
        out.push(format!("status: {} -> {}", then.status, now.status));
    }
    if then.error_code != now.error_code {
        let code = |c: &Option<String>| c.clone().unwrap_or_else(|| "none".into());
        out.push(format!("error code: {} -> {}", code(&then.error_code), code(&now.error_code)));
    }
    if then.result != now.result {
        out.push("result:".to_string());
        out.extend(line_diff(&then.result, &now.result));
    }
    if then.artifacts != now.artifacts {
        out.push(format!("artifacts: {} -> {}", then.artifacts, now.artifacts));
    }
    out
}

/// The lines only one side has: `- ` recorded, `+ ` replayed (a longest
/// common subsequence keeps the shared lines out).
fn line_diff(a: &str, b: &str) -> Vec<String> {
    const MAX_LINES: usize = 400;
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    if a.len() > MAX_LINES || b.len() > MAX_LINES {
        return vec![format!("- ({} lines)", a.len()), format!("+ ({} lines)", b.len())];
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..]
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // what was recorded goes first, then what replaced it
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_diff_names_only_the_lines_that_changed() {
        assert!(line_diff("a\nb\nc", "a\nb\nc").is_empty());
        assert_eq!(line_diff("a\nb\nc", "a\nx\nc"), ["- b", "+ x"]);
        assert_eq!(line_diff("a\nb", "a\nb\nc"), ["+ c"]);
        assert_eq!(line_diff("a\nb", "b"), ["- a"]);
    }

    #[test]
    fn outcomes_differ_by_status_code_result_and_artifacts() {
        let o = |status: &str, code: Option<&str>, result: &str| Outcome {
            status: status.into(),
            error_code: code.map(Into::into),
            result: result.into(),
            artifacts: serde_json::json!([]),
        };
        assert!(differences(&o("success", None, "x"), &o("success", None, "x")).is_empty());
        assert_eq!(
            differences(&o("success", None, "x"), &o("failed", Some("AGENT_FAILED"), "")),
            ["status: success -> failed", "error code: none -> AGENT_FAILED", "result:", "- x"]
        );
        let mut with = o("success", None, "x");
        with.artifacts = serde_json::json!([{"kind": "table"}]);
        assert_eq!(differences(&o("success", None, "x"), &with).len(), 1);
    }

    #[test]
    fn a_recorded_failure_is_made_again_as_the_same_error() {
        let id = RequestId::new();
        let slug = crate::protocol::AgentSlug::parse("tag-ai").unwrap();
        let why = DelegationError::new(ErrorCode::AgentUnavailable, "down");
        let err = as_output(DelegationResponse::failed(id, slug.clone(), why)).unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentUnavailable);
        let mut ok = DelegationResponse::failed(id, slug, ErrorCode::AgentFailed.into());
        (ok.status, ok.error, ok.result) = (Status::Partial, None, "half".into());
        let out = as_output(ok).unwrap();
        assert_eq!((out.status, out.result.as_str()), (Some(Status::Partial), "half"));
    }
}
