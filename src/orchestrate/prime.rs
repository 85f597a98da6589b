//! Prime, the orchestrator: it answers directly or plans work for the
//! specialists ([`RulePlanner`]: no model needed), runs the plan through its
//! delegator and merges the results into one answer that says who did what.
//! Its response carries the plan and the decision behind it (artifacts
//! `plan` and `decision`), so the tree's steps show why it delegated or
//! answered itself.

use std::fmt::Write as _;

use async_trait::async_trait;
use serde_json::json;

use crate::agent::{Agent, AgentContext, AgentOutput, Task};
use crate::config::Config;
use crate::protocol::{Artifact, DelegationError, ErrorCode, Status};

use super::plan::{Plan, StepResult, execute, overall};
use super::planner::{Choice, Earlier, RulePlanner};

/// The orchestrator agent.
pub(crate) struct PrimeAgent {
    planner: RulePlanner,
}

impl PrimeAgent {
    /// Prime's planner for the agent `me` (any slug may run as a Prime-style
    /// orchestrator of the configured routes).
    pub(crate) fn new(config: &Config, me: &str) -> Result<Self, DelegationError> {
        Ok(Self { planner: RulePlanner::new(config, me)? })
    }

    /// Learns the router now (`runtime::learn_routers`).
    pub(crate) fn learn(&self) {
        self.planner.router();
    }

    /// What Prime does with a task: its message read with the session
    /// before it (an answer to Prime's question, or a follow-up of the
    /// previous request); a
    /// message that alone goes nowhere but comes with a document is given
    /// to whoever reads documents.
    pub(crate) fn choose(&self, task: &Task) -> Choice {
        let asked = task.answering().join("\n");
        // the previous request's first line: what was asked, not the file that came with it
        let said = task.history.iter().rev().find(|m| m.role == "user").map(|m| first_line(&m.content));
        let earlier = match (&asked, &said) {
            (a, _) if !a.trim().is_empty() => Earlier::Asked(a),
            (_, Some(s)) => Earlier::Said(s),
            _ => Earlier::None,
        };
        let material = !task.input.trim().is_empty();
        self.planner.choose_with(&task.objective, earlier, &task.context_hints, material)
    }

    /// One answer from the steps' results, saying who did what; the
    /// questions the specialists need answered are asked once each.
    fn merge(&self, plan: &Plan, results: &[StepResult]) -> AgentOutput {
        let status = overall(results);
        let name = |r: &StepResult| self.planner.name_of(r.agent.as_str()).to_string();
        let ok: Vec<&StepResult> = results.iter().filter(|r| r.succeeded()).collect();
        let asking: Vec<&StepResult> = results.iter().filter(|r| r.needs_input()).collect();
        let failed: Vec<&StepResult> = results.iter().filter(|r| !r.succeeded() && !r.needs_input()).collect();
        let mut text = String::new();
        let names: Vec<String> = ok.iter().map(|r| name(r)).collect();
        match (status, plan) {
            (Status::NeedsInput, _) => text.push_str("I need a bit more from you before the team can do this.\n"),
            (Status::Failed, _) => text.push_str("I couldn't get this done.\n"),
            (_, Plan::Single(_)) => {
                let _ = write!(text, "I had {} take this. ", names.join(""));
            }
            (Status::Partial, _) => {
                let _ = writeln!(
                    text,
                    "Here's what I could get: {} finished, {} did not.",
                    list(&names),
                    failed.len() + asking.len()
                );
            }
            _ => {
                let _ = writeln!(text, "Done! I had {} work on this ({}):", list(&names), plan.kind());
            }
        }
        if let (Plan::Single(_), [only]) = (plan, ok.as_slice()) {
            let _ = write!(text, "{}\n\n{}", only.response.summary, only.response.result);
        } else {
            for r in &ok {
                let _ = writeln!(text, "• {}: {}", name(r), r.response.summary);
            }
        }
        for r in &failed {
            let (code, msg) = r
                .response
                .error
                .as_ref()
                .map_or(("AGENT_FAILED".to_string(), String::new()), |e| (e.code.to_string(), e.message.clone()));
            let _ = writeln!(text, "• {} could not finish ({code}): {msg}", name(r));
        }
        // the same question from several specialists is asked once, naming them all
        let mut questions: Vec<(String, Vec<String>)> = Vec::new();
        for r in &asking {
            let q = r.question().unwrap_or_default();
            match questions.iter_mut().find(|(known, _)| *known == q) {
                Some((_, who)) => who.push(name(r)),
                None => questions.push((q, vec![name(r)])),
            }
        }
        for (q, who) in &questions {
            let _ = writeln!(text, "• {} {}: {q}", list(who), if who.len() == 1 { "asks" } else { "ask" });
        }
        // the rest of a chain that stopped at a question: the answer runs the plan again (`choose_turn`)
        let waiting = plan.not_run(results);
        if !asking.is_empty() && !waiting.is_empty() {
            let later: Vec<String> =
                waiting.iter().map(|(a, _)| self.planner.name_of(a.as_str()).to_string()).collect();
            let _ = writeln!(text, "Once you answer, I'll go on with {}.", list(&later));
        }
        let summary = match status {
            Status::Success => format!("{} via {}", plan.kind(), list(&names)),
            Status::Partial => format!("partial: {} of {} steps succeeded", ok.len(), results.len()),
            Status::NeedsInput => "asked the user for what the team needs".to_string(),
            _ => "no step succeeded".to_string(),
        };
        let mut out = AgentOutput::new(summary, text.trim_end().to_string());
        out.status = Some(status);
        out.requires_followup = !asking.is_empty();
        out.confidence = ok.iter().filter_map(|r| r.response.confidence).min();
        out.artifacts.push(Artifact::json(
            "plan",
            json!({
                "kind": plan.kind(),
                "steps": results
                    .iter()
                    .map(|r| json!({"agent": r.agent, "objective": r.objective, "status": r.response.status}))
                    .chain(waiting.iter().map(|(agent, objective)| json!({"agent": agent, "objective": objective, "status": "not_run"})))
                    .collect::<Vec<_>>(),
            }),
        ));
        for r in &ok {
            for a in &r.response.artifacts {
                let mut a = a.clone();
                a.label = Some(format!("{}:{}", r.agent, a.label.as_deref().unwrap_or("artifact")));
                out.artifacts.push(a);
            }
        }
        out
    }
}

fn list(names: &[String]) -> String {
    match names {
        [] => "nobody".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[async_trait]
impl Agent for PrimeAgent {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let choice = self.choose(task);
        let decision = Artifact::json("decision", choice.to_json());
        if let Plan::Direct { answer } = &choice.plan {
            let mut out = AgentOutput::new(
                if choice.asks { "Asked what is wanted" } else { "Answered directly" },
                answer.clone(),
            );
            if choice.asks {
                out.status = Some(Status::NeedsInput);
                out.requires_followup = true;
            }
            out.artifacts.push(Artifact::json("plan", json!({"kind": "direct", "steps": []})));
            out.artifacts.push(decision);
            return Ok(out);
        }
        ctx.use_tool("delegate")?;
        let results = execute(&choice.plan, ctx.delegator()?, &task.input).await?;
        let mut out = self.merge(&choice.plan, &results);
        if out.status == Some(Status::Failed) {
            // when every step failed the same way (a rail below, a timeout),
            // say so: the caller's retry policy and breaker treat it rightly
            let mut codes = results.iter().filter_map(|r| r.response.error_code());
            let first = codes.next().unwrap_or(ErrorCode::AgentFailed);
            let code = if codes.all(|c| c == first) { first } else { ErrorCode::AgentFailed };
            return Err(DelegationError::new(code, out.result));
        }
        out.artifacts.insert(1, decision);
        Ok(out)
    }

    fn default_attempts(&self) -> Option<u32> {
        Some(1)
    }
}

/// The first line of a message, at most 300 characters.
fn first_line(message: &str) -> &str {
    let line = message.lines().next().unwrap_or_default();
    line.char_indices().nth(300).map_or(line, |(i, _)| &line[..i])
}
