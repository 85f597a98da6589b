//! Orchestration modes through Prime: single, chain, parallel, conditional,
//! workflow — with scripted specialists so the plans are what is tested.

use std::sync::{Arc, Mutex};

use switchboard::AskOptions;
use switchboard::config::Config;
use switchboard::protocol::{DelegationError, ErrorCode, Status};
use switchboard::{AgentOutput, Runtime};

use crate::support::*;

const TEAM: &str = r#"
[[agents]]
slug = "prime-boss"
name = "Prime"
tools_allowed = ["delegate"]
may_delegate_to = ["*"]
limits = { max_attempts = 1 }

[[agents]]
slug = "research"
name = "Researcher"
keywords = ["research"]

[[agents]]
slug = "analysis"
name = "Analyst"
keywords = ["analyze"]

[[agents]]
slug = "writing"
name = "Writer"
keywords = ["write"]

[[agents]]
slug = "broken"
name = "Broken"

[prime]
[[prime.routes]]
name = "chain"
pattern = "(?i)research then analyze"
plan = "chain"
agents = ["research", "analysis"]
objectives = ["Gather data", "Process insights"]

[[prime.routes]]
name = "parallel"
pattern = "(?i)everyone"
plan = "parallel"
agents = ["research", "analysis", "broken"]
objectives = ["Gather data", "Process insights", "Fail"]

[[prime.routes]]
name = "report"
pattern = "(?i)full report"
plan = "workflow"
workflow = "comprehensive_analysis"

[[workflows]]
name = "comprehensive_analysis"
[[workflows.steps]]
id = "gather"
agent = "research"
objective = "gather_data"
[[workflows.steps]]
id = "process"
agent = "analysis"
objective = "process_insights"
after = ["gather"]
[[workflows.steps]]
id = "write"
agent = "writing"
objective = "create_report"
after = ["gather", "process"]
"#;

/// Each specialist answers with its name and what it received from earlier steps.
fn specialist(name: &'static str, seen: Arc<Mutex<Vec<String>>>) -> impl switchboard::Agent {
    agent(move |_ctx, task| {
        let seen = seen.clone();
        async move {
            let earlier: Vec<String> = task
                .intermediate_results()
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|r| r["agent"].as_str().unwrap_or("?").to_string())
                .collect();
            seen.lock().unwrap().push(format!("{name}<-[{}]", earlier.join(",")));
            Ok(AgentOutput::new(format!("{name} did {}", task.objective), format!("{name} result")))
        }
    })
}

fn runtime(seen: &Arc<Mutex<Vec<String>>>) -> Runtime {
    Runtime::builder()
        .config(Config::from_toml(TEAM).unwrap())
        .agent("research", specialist("research", seen.clone()))
        .agent("analysis", specialist("analysis", seen.clone()))
        .agent("writing", specialist("writing", seen.clone()))
        .agent("broken", agent(|_c, _t| async { Err(DelegationError::new(ErrorCode::AgentFailed, "always broken")) }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn single_delegation_by_keyword() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = runtime(&seen).ask(&user("u"), "please research the market", AskOptions::default()).await.unwrap();
    assert_eq!(r.status, Status::Success);
    assert_eq!(r.tree.agent, "prime-boss");
    assert_eq!(r.tree.children.len(), 1);
    assert_eq!(r.tree.children[0].agent, "research");
    assert!(r.answer.contains("I had Researcher take this"), "{}", r.answer);
}

#[tokio::test]
async fn chain_passes_earlier_results_in_intermediate_results() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = runtime(&seen).ask(&user("u"), "research then analyze the market", AskOptions::default()).await.unwrap();
    assert_eq!(r.status, Status::Success);
    assert_eq!(*seen.lock().unwrap(), ["research<-[]", "analysis<-[research]"]);
    let kids: Vec<&str> = r.tree.children.iter().map(|c| c.agent.as_str()).collect();
    assert_eq!(kids, ["research", "analysis"]);
    assert!(r.answer.contains("Researcher and Analyst"), "{}", r.answer);
}

#[tokio::test]
async fn parallel_keeps_siblings_results_when_a_branch_fails() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = runtime(&seen).ask(&user("u"), "ask everyone", AskOptions::default()).await.unwrap();
    assert_eq!(r.status, Status::Partial);
    assert!(r.answer.contains("Researcher: research did Gather data"), "{}", r.answer);
    assert!(r.answer.contains("Analyst: analysis did Process insights"), "{}", r.answer);
    assert!(r.answer.contains("Broken could not finish (AGENT_FAILED): always broken"), "{}", r.answer);
    assert_eq!(r.tree.children.len(), 3);
    assert_eq!(r.tree.status, "partial");
}

#[tokio::test]
async fn conditional_prime_answers_directly_without_delegating() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&seen);
    let r = rt.ask(&user("u"), "Hello there!", AskOptions::default()).await.unwrap();
    assert_eq!(r.status, Status::Success);
    assert!(r.tree.children.is_empty());
    assert!(seen.lock().unwrap().is_empty());
    assert!(r.answer.contains("Researcher (research)"), "the introduction lists the team: {}", r.answer);
}

#[tokio::test]
async fn a_declared_workflow_runs_its_dag_in_order_with_dependencies_handed_over() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = runtime(&seen).ask(&user("u"), "I need a full report", AskOptions::default()).await.unwrap();
    assert_eq!(r.status, Status::Success, "{}", r.answer);
    assert_eq!(*seen.lock().unwrap(), ["research<-[]", "analysis<-[research]", "writing<-[research,analysis]"]);
}

#[tokio::test]
async fn the_users_session_continues_across_turns_and_is_theirs_alone() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&seen);
    let first = rt.ask(&user("alice"), "Hello", AskOptions::default()).await.unwrap();
    let again = rt
        .ask(&user("alice"), "Hello again", AskOptions { session: Some(first.session_id), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(again.session_id, first.session_id);
    let err = rt
        .ask(&user("mallory"), "Hello", AskOptions { session: Some(first.session_id), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::UserMismatch);
}
