//! Prime's part of the configuration: the agent users talk to, its
//! planner, its routes, and the declared workflows.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::protocol::AgentSlug;

/// Prime: the agent users talk to, its planner and its routes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimeConfig {
    /// The agent a user's message goes to (`switchboard ask`, `POST /v1/chat`,
    /// the default model of `/v1/chat/completions`). Default: the first agent
    /// whose backend is the built-in `prime` orchestrator, else the first agent.
    #[serde(default)]
    pub agent: Option<AgentSlug>,
    /// `rules` (no model needed) or `llm` (the model in `[llm]`, with a
    /// `delegate` tool over Prime's team).
    #[serde(default = "rules")]
    pub planner: String,
    /// Regex routes, tried in order; the first that matches and yields a plan wins.
    #[serde(default)]
    pub routes: Vec<Route>,
}

fn rules() -> String {
    "rules".to_string()
}

impl Default for PrimeConfig {
    fn default() -> Self {
        Self { agent: None, planner: rules(), routes: Vec::new() }
    }
}

/// A regex route: when `pattern` matches the user's message, Prime runs `plan`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The route's name, used in error messages.
    pub name: String,
    /// The regular expression tried on the user's message.
    pub pattern: String,
    /// What kind of plan the route makes.
    pub plan: PlanKind,
    /// The agents, in order (for `workflow`: empty, `workflow` names it).
    #[serde(default)]
    pub agents: Vec<AgentSlug>,
    /// One objective per agent.
    #[serde(default)]
    pub objectives: Vec<String>,
    /// The workflow to run when `plan` is `workflow`; None otherwise.
    #[serde(default)]
    pub workflow: Option<String>,
}

/// The shape of a route's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanKind {
    /// One agent does the task.
    Single,
    /// The agents run one after another, each getting the earlier results.
    Chain,
    /// The agents run at once, within the fan-out limit.
    Parallel,
    /// A declared workflow runs.
    Workflow,
}

/// A declared workflow: a small DAG of steps (research → analysis → writing, say).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// The workflow's name, as routes refer to it.
    pub name: String,
    /// What the workflow is for.
    #[serde(default)]
    pub description: String,
    /// Its steps; their `after` lists make the DAG.
    pub steps: Vec<WorkflowStep>,
}

/// One step of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowStep {
    /// The step's id, which other steps name in `after`.
    pub id: String,
    /// The agent that does the step.
    pub agent: AgentSlug,
    /// What the agent is asked to do.
    pub objective: String,
    /// Steps whose results this one needs.
    #[serde(default)]
    pub after: Vec<String>,
}

impl Workflow {
    /// The steps grouped into levels: every step's dependencies are in earlier
    /// levels, so the steps of one level can run in parallel. None if the steps
    /// have a cycle (or wait for a step that does not exist).
    pub fn levels(&self) -> Option<Vec<Vec<usize>>> {
        let mut done: BTreeSet<&str> = BTreeSet::new();
        let mut remaining: Vec<usize> = (0..self.steps.len()).collect();
        let mut levels = Vec::new();
        while !remaining.is_empty() {
            let (ready, blocked): (Vec<usize>, Vec<usize>) =
                remaining.iter().partition(|&&i| self.steps[i].after.iter().all(|d| done.contains(d.as_str())));
            if ready.is_empty() {
                return None;
            }
            for &i in &ready {
                done.insert(self.steps[i].id.as_str());
            }
            levels.push(ready);
            remaining = blocked;
        }
        Some(levels)
    }
}
