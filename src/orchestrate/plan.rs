//! Plans and their execution through a [`Delegator`]: single, sequential
//! chain (each step receives the earlier results in
//! `handoff_data.intermediate_results`), parallel fan-out (a failed branch
//! keeps its siblings' results) and declared workflows (a DAG run level by
//! level). A direct answer is a plan too: the conditional mode.

use serde_json::{Value, json};

use crate::agent::{Call, Delegator};
use crate::config::Workflow;
use crate::protocol::{AgentSlug, DelegationError, DelegationResponse, ErrorCode, HandoffData, Status};

/// One delegation of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub agent: AgentSlug,
    pub objective: String,
    /// Hand the user's message to the agent as a Task Note (tool agents).
    pub task_note: Option<String>,
    /// The user's whole message, when it says more than the objective: the
    /// agent gets it as its input unless the user gave material (a file).
    /// An objective is one sentence; "…and 2500 on a card at 19.99%" in the
    /// next one must still reach the agent.
    pub message: Option<String>,
}

impl Step {
    pub(crate) fn new(agent: AgentSlug, objective: impl Into<String>) -> Self {
        Self { agent, objective: objective.into(), task_note: None, message: None }
    }
}

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub(crate) enum Plan {
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
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Direct { .. } => "direct",
            Self::Single(_) => "single",
            Self::Chain(_) => "chain",
            Self::Parallel(_) => "parallel",
            Self::Workflow(_) => "workflow",
        }
    }

    /// The agents the plan delegates to, in plan order.
    pub(crate) fn agents(&self) -> Vec<&AgentSlug> {
        self.steps().into_iter().map(|(agent, _)| agent).collect()
    }

    /// Each delegation of the plan, its agent and objective, in plan order.
    pub(crate) fn steps(&self) -> Vec<(&AgentSlug, &str)> {
        match self {
            Self::Direct { .. } => Vec::new(),
            Self::Single(s) => vec![(&s.agent, s.objective.as_str())],
            Self::Chain(steps) | Self::Parallel(steps) => {
                steps.iter().map(|s| (&s.agent, s.objective.as_str())).collect()
            }
            Self::Workflow(w) => w.steps.iter().map(|s| (&s.agent, s.objective.as_str())).collect(),
        }
    }

    /// The steps that did not run, given what ran (`results`, in any
    /// order): a chain stops at a step that did not succeed, a workflow at
    /// a level with one. Each planned step is matched with one result of
    /// its agent.
    pub(crate) fn not_run<'a>(&'a self, results: &[StepResult]) -> Vec<(&'a AgentSlug, &'a str)> {
        let mut ran: Vec<&AgentSlug> = results.iter().map(|r| &r.agent).collect();
        self.steps()
            .into_iter()
            .filter(|(agent, _)| match ran.iter().position(|a| a == agent) {
                Some(i) => {
                    ran.swap_remove(i);
                    false
                }
                None => true,
            })
            .collect()
    }
}

/// What one step produced (or why it did not run).
#[derive(Debug, Clone)]
pub(crate) struct StepResult {
    pub agent: AgentSlug,
    pub objective: String,
    pub response: DelegationResponse,
}

impl StepResult {
    pub(crate) fn succeeded(&self) -> bool {
        matches!(self.response.status, Status::Success | Status::Partial)
    }

    /// The shape later steps receive in `intermediate_results`.
    pub(crate) fn handoff_json(&self) -> Value {
        json!({
            "agent": self.agent,
            "objective": self.objective,
            "status": self.response.status,
            "summary": self.response.summary,
            "result": self.response.result,
            "artifacts": self.response.artifacts,
        })
    }

    /// The step ended with a question for the user: `NEEDS_INPUT`, or a
    /// Task Note sent back for clarification, which the user's
    /// own words were.
    pub(crate) fn needs_input(&self) -> bool {
        self.response.status == Status::NeedsInput || self.note_sent_back()
    }

    fn note_sent_back(&self) -> bool {
        self.response.error_code() == Some(ErrorCode::InvalidRequest)
            && self.response.fallback.as_ref().is_some_and(|f| f.recommended == "clarify_task_note")
    }

    /// The question the step asks the user, when it asks one.
    pub(crate) fn question(&self) -> Option<String> {
        if !self.needs_input() {
            return None;
        }
        let message = self.response.error.as_ref().map_or(self.response.result.as_str(), |e| e.message.as_str());
        Some(match message.split_once("cannot be delegated: ") {
            // the note's problems, as what the agent needs to hear
            Some((_, problems)) if self.note_sent_back() => format!("Please tell me more: {problems}"),
            _ => message.to_string(),
        })
    }
}

/// The status of a whole plan from its steps: success when all succeeded,
/// partial when some did, needs input when none did and every other step
/// asked the user something, failed otherwise.
pub(crate) fn overall(results: &[StepResult]) -> Status {
    let ok = results.iter().filter(|r| r.succeeded()).count();
    let asking = results.iter().filter(|r| r.needs_input()).count();
    match ok {
        0 if asking > 0 && asking == results.len() => Status::NeedsInput,
        0 => Status::Failed,
        n if n == results.len() => Status::Success,
        _ => Status::Partial,
    }
}

/// A step's call. The user's input goes to steps that start from it; later
/// steps work from the earlier results handed over (a chain), which
/// keeps their prompts, and so their token estimates, small.
fn call(step: &Step, input: &str, earlier: &[&StepResult]) -> Call {
    let input = match (earlier.is_empty(), &step.message) {
        (false, _) => "", // a later step works on the earlier steps' results
        (true, Some(message)) if input.trim().is_empty() => message,
        (true, _) => input,
    };
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

/// An even share of the remaining budget for each of the `n` steps still to
/// run: the plan as a whole never asks for more than its node has left.
fn share(d: &Delegator, n: usize) -> u32 {
    (d.remaining_tokens() / n.max(1) as u32).max(1)
}

/// Runs a plan. A parallel batch over the fan-out limit is refused before any
/// call is sent; otherwise every step's response comes back in plan order.
pub(crate) async fn execute(plan: &Plan, d: &Delegator, input: &str) -> Result<Vec<StepResult>, DelegationError> {
    let result =
        |step: &Step, response| StepResult { agent: step.agent.clone(), objective: step.objective.clone(), response };
    match plan {
        Plan::Direct { .. } => Ok(Vec::new()),
        Plan::Single(step) => Ok(vec![result(step, d.delegate(call(step, input, &[]).max_tokens(share(d, 1))).await)]),
        Plan::Chain(steps) => {
            let mut done: Vec<StepResult> = Vec::new();
            for (i, step) in steps.iter().enumerate() {
                let earlier: Vec<&StepResult> = done.iter().collect();
                let c = call(step, input, &earlier).max_tokens(share(d, steps.len() - i));
                let r = result(step, d.delegate(c).await);
                let stop = !r.succeeded();
                done.push(r);
                if stop {
                    break; // later steps need this one's output
                }
            }
            Ok(done)
        }
        Plan::Parallel(steps) => {
            let each = share(d, steps.len());
            let calls = steps.iter().map(|s| call(s, input, &[]).max_tokens(each)).collect();
            let responses = d.delegate_parallel(calls).await?;
            Ok(steps.iter().zip(responses).map(|(s, r)| result(s, r)).collect())
        }
        Plan::Workflow(w) => run_workflow(w, d, input).await,
    }
}

async fn run_workflow(w: &Workflow, d: &Delegator, input: &str) -> Result<Vec<StepResult>, DelegationError> {
    let levels = w.levels().ok_or_else(|| DelegationError::invalid(format!("workflow '{}' has a cycle", w.name)))?;
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
            let each = share(d, w.steps.len() - done.len());
            let calls = batch.iter().map(|(_, _, c)| c.clone().max_tokens(each)).collect();
            let responses = d.delegate_parallel(calls).await?;
            for ((id, step, _), response) in batch.into_iter().zip(responses) {
                done.push((id, StepResult { agent: step.agent, objective: step.objective, response }));
            }
        }
    }
    Ok(done.into_iter().map(|(_, r)| r).collect())
}
