//! Plans and their execution through a [`Delegator`]: single, sequential
//! chain (each step receives the earlier results in
//! `handoff_data.intermediate_results`), parallel fan-out (a failed branch
//! keeps its siblings' results) and declared workflows (a DAG run level by
//! level). A direct answer is a plan too: the conditional mode.

use serde_json::{Value, json};

use crate::config::Workflow;
use crate::delegator::{Call, Delegator};
use crate::protocol::{AgentSlug, DelegationError, DelegationResponse, ErrorCode, HandoffData, Status};

use super::workflow::levels;

/// One delegation of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub agent: AgentSlug,
    pub objective: String,
    /// Hand the user's message to the agent as a Task Note (tool agents).
    pub task_note: Option<String>,
}

impl Step {
    pub fn new(agent: AgentSlug, objective: impl Into<String>) -> Self {
        Self { agent, objective: objective.into(), task_note: None }
    }
}

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Plan {
    /// Answer without delegating.
    Direct {
        answer: String,
    },
    Single(Step),
    Chain(Vec<Step>),
    Parallel(Vec<Step>),
    Workflow(Workflow),
}

impl Plan {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Direct { .. } => "direct",
            Self::Single(_) => "single",
            Self::Chain(_) => "chain",
            Self::Parallel(_) => "parallel",
            Self::Workflow(_) => "workflow",
        }
    }
}

/// What one step produced (or why it did not run).
#[derive(Debug, Clone)]
pub struct StepResult {
    pub agent: AgentSlug,
    pub objective: String,
    pub response: DelegationResponse,
}

impl StepResult {
    pub fn succeeded(&self) -> bool {
        matches!(self.response.status, Status::Success | Status::Partial)
    }

    /// The shape later steps receive in `intermediate_results`.
    pub fn handoff_json(&self) -> Value {
        json!({
            "agent": self.agent,
            "objective": self.objective,
            "status": self.response.status,
            "summary": self.response.summary,
            "result": self.response.result,
            "artifacts": self.response.artifacts,
        })
    }
}

/// The status of a whole plan from its steps: success when all succeeded,
/// partial when some did, failed when none did.
pub fn overall(results: &[StepResult]) -> Status {
    let ok = results.iter().filter(|r| r.succeeded()).count();
    match ok {
        0 => Status::Failed,
        n if n == results.len() => Status::Success,
        _ => Status::Partial,
    }
}

fn call(step: &Step, input: &str, earlier: &[&StepResult]) -> Call {
    let mut c = Call::new(step.agent.clone(), step.objective.clone()).input(input);
    if let Some(note) = &step.task_note {
        c = c.task_note(note.clone());
    }
    if !earlier.is_empty() {
        c.handoff = HandoffData {
            intermediate_results: Some(Value::Array(earlier.iter().map(|r| r.handoff_json()).collect())),
            ..HandoffData::default()
        };
    }
    c
}

/// An even share of the remaining budget for each of `n` parallel calls, never
/// more than the default per-delegation budget.
fn share(d: &Delegator, n: usize, default: u32) -> u32 {
    (d.remaining_tokens() / n.max(1) as u32).clamp(1, default)
}

/// Runs a plan. A parallel batch over the fan-out limit is refused before any
/// call is sent; otherwise every step's response comes back in plan order.
pub async fn execute(
    plan: &Plan,
    d: &Delegator,
    input: &str,
    default_tokens: u32,
) -> Result<Vec<StepResult>, DelegationError> {
    let result =
        |step: &Step, response| StepResult { agent: step.agent.clone(), objective: step.objective.clone(), response };
    match plan {
        Plan::Direct { .. } => Ok(Vec::new()),
        Plan::Single(step) => Ok(vec![result(step, d.delegate(call(step, input, &[])).await)]),
        Plan::Chain(steps) => {
            let mut done: Vec<StepResult> = Vec::new();
            for step in steps {
                let earlier: Vec<&StepResult> = done.iter().collect();
                let r = result(step, d.delegate(call(step, input, &earlier)).await);
                let stop = !r.succeeded();
                done.push(r);
                if stop {
                    break; // later steps need this one's output
                }
            }
            Ok(done)
        }
        Plan::Parallel(steps) => {
            let each = share(d, steps.len(), default_tokens);
            let calls = steps.iter().map(|s| call(s, input, &[]).max_tokens(each)).collect();
            let responses = d.delegate_parallel(calls).await?;
            Ok(steps.iter().zip(responses).map(|(s, r)| result(s, r)).collect())
        }
        Plan::Workflow(w) => run_workflow(w, d, input, default_tokens).await,
    }
}

async fn run_workflow(
    w: &Workflow,
    d: &Delegator,
    input: &str,
    default_tokens: u32,
) -> Result<Vec<StepResult>, DelegationError> {
    let levels = levels(w).ok_or_else(|| DelegationError::invalid(format!("workflow '{}' has a cycle", w.name)))?;
    let mut done: Vec<(String, StepResult)> = Vec::new();
    for level in levels {
        let mut runnable = Vec::new();
        for i in level {
            let ws = &w.steps[i];
            let deps: Vec<&StepResult> =
                ws.after.iter().filter_map(|a| done.iter().find(|(id, _)| id == a).map(|(_, r)| r)).collect();
            if deps.iter().any(|r| !r.succeeded()) || deps.len() < ws.after.len() {
                // A step whose inputs failed does not run; say so in its place.
                let mut resp = DelegationResponse::failed(
                    crate::protocol::RequestId::new(),
                    ws.agent.clone(),
                    DelegationError::new(
                        ErrorCode::AgentFailed,
                        format!("not run: a step it depends on ({}) failed", ws.after.join(", ")),
                    ),
                );
                resp.summary = "skipped".into();
                done.push((
                    ws.id.clone(),
                    StepResult { agent: ws.agent.clone(), objective: ws.objective.clone(), response: resp },
                ));
                continue;
            }
            let step = Step::new(ws.agent.clone(), ws.objective.clone());
            runnable.push((ws.id.clone(), step.clone(), call(&step, input, &deps)));
        }
        // Steps of one level run together, in batches of at most the fan-out.
        let mut queue = runnable.into_iter().peekable();
        while queue.peek().is_some() {
            let batch: Vec<_> = queue.by_ref().take(d.fan_out() as usize).collect();
            let each = share(d, batch.len(), default_tokens);
            let calls = batch.iter().map(|(_, _, c)| c.clone().max_tokens(each)).collect();
            let responses = d.delegate_parallel(calls).await?;
            for ((id, step, _), response) in batch.into_iter().zip(responses) {
                done.push((id, StepResult { agent: step.agent, objective: step.objective, response }));
            }
        }
    }
    Ok(done.into_iter().map(|(_, r)| r).collect())
}
