//! `switchboard::testing` used as an embedder's tests use it (feature
//! `test-util`): their own agent in a runtime made in one call, its helpers
//! scripted, a model scripted for an `llm` agent and for Prime's LLM planner,
//! the rails refusing what they must. Only the public API; no network.

use serde_json::json;
use switchboard::protocol::{AgentSlug, DelegationRequest, ErrorCode, Status, UserId};
use switchboard::testing::{ModelReply, ScriptedAgent, ScriptedModel, agent, builder};
use switchboard::{Agent, AgentOutput, AskOptions, Call, Config, DelegationError, Principal, Runtime};

/// The embedder's agent, written as a closure: asks `tagger` to categorize
/// its input and answers with how many lines that was.
fn bookkeeper() -> impl Agent {
    agent(|ctx, task| async move {
        let lines = task.input.lines().count();
        let tagged = ctx.delegator()?.delegate(Call::to("tagger", "Categorize these")?.input(task.input)).await;
        match tagged.error {
            Some(e) => Err(e),
            None => Ok(AgentOutput::new("booked", format!("{lines} lines booked: {}", tagged.result))),
        }
    })
}

/// `app` → the bookkeeper (who may delegate to `bookkeeper_may`) → `tagger`, in memory.
fn team(bookkeeper_may: &[&str], tagger: &ScriptedAgent) -> Runtime {
    builder(&[("app", &["bookkeeper"], &[]), ("bookkeeper", bookkeeper_may, &[]), ("tagger", &[], &[])])
        .agent("bookkeeper", bookkeeper())
        .agent("tagger", tagger.clone())
        .build()
        .unwrap()
}

fn ask(from: &str, to: &str, input: &str) -> DelegationRequest {
    let slug = |s: &str| AgentSlug::parse(s).unwrap();
    let mut r = DelegationRequest::new(slug(from), slug(to), UserId::parse("ada").unwrap(), "Book these", input);
    // the bookkeeper runs at depth 1 and its helper at 2
    r.constraints.max_depth = 3;
    r
}

#[tokio::test]
async fn an_embedders_agent_delegates_to_a_scripted_helper_that_sees_the_lineage() {
    let tagger = ScriptedAgent::new().reply(AgentOutput::new("tagged", "coffee, rent"));
    let rt = team(&["tagger"], &tagger);
    let r = rt.delegate(&Principal::Admin, ask("app", "bookkeeper", "Starbucks 4.50\nRent 1450")).await;
    assert_eq!(r.status, Status::Success, "{r:?}");
    assert_eq!(r.result, "2 lines booked: coffee, rent");

    let seen = tagger.received();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].task.objective, "Categorize these");
    assert_eq!(seen[0].task.input, "Starbucks 4.50\nRent 1450");
    assert_eq!(seen[0].depth, 2);
    let lineage = seen[0].lineage.as_ref().expect("run in a runtime");
    assert_eq!(lineage.origin.as_str(), "bookkeeper");
    let chain: Vec<&str> = lineage.ancestors.iter().map(|a| a.agent.as_str()).collect();
    assert!(chain.contains(&"bookkeeper"), "{chain:?}");
    assert_eq!(lineage.root_id, r.request_id);
}

#[tokio::test]
async fn the_rails_refuse_an_embedders_agent_and_the_scripted_helper_never_runs() {
    // may_delegate_to: the bookkeeper was not given the tagger
    let tagger = ScriptedAgent::echo();
    let rt = team(&[], &tagger);
    let r = rt.delegate(&Principal::Admin, ask("app", "bookkeeper", "Starbucks 4.50")).await;
    assert_eq!(r.error.as_ref().map(|e| e.code), Some(ErrorCode::DelegationNotAllowed), "{r:?}");
    assert_eq!(tagger.runs(), 0);

    // depth: under the default limit the bookkeeper's own call is one level too deep
    let tagger = ScriptedAgent::echo();
    let rt = team(&["tagger"], &tagger);
    let mut shallow = ask("app", "bookkeeper", "Starbucks 4.50");
    shallow.constraints.max_depth = 1;
    let r = rt.delegate(&Principal::Admin, shallow).await;
    assert_eq!(r.error.as_ref().map(|e| e.code), Some(ErrorCode::DepthLimit), "{r:?}");
    assert_eq!(tagger.runs(), 0);
}

#[tokio::test]
async fn a_scripted_model_drives_an_llm_agent_whose_tool_call_passes_the_rails() {
    let model = ScriptedModel::new()
        .tool_calls(&[("delegate", json!({"employee": "tagger", "task": "Categorize: Starbucks 4.50"}))])
        .text("Starbucks is coffee.");
    let config = Config::from_toml(
        r#"agents = [
            # a delegation's tools are what its caller has and its target may use
            { slug = "app", name = "App", may_delegate_to = ["advisor"], tools_allowed = ["delegate", "ask_agent"] },
            { slug = "advisor", name = "Advisor", backend = { kind = "llm" }, may_delegate_to = ["tagger"],
              tools_allowed = ["delegate", "ask_agent"] },
            { slug = "tagger", name = "Tagger", description = "Categorizes transactions" },
        ]"#,
    )
    .unwrap();
    let tagger =
        ScriptedAgent::answering(|task| Ok(AgentOutput::new("tagged", format!("coffee ({})", task.objective))));
    let rt = Runtime::builder()
        .config(config)
        .chat_model(model.clone())
        .agent("app", ScriptedAgent::echo())
        .agent("tagger", tagger.clone())
        .build()
        .unwrap();
    let r = rt.delegate(&Principal::Admin, ask("app", "advisor", "Where did my money go?")).await;
    assert_eq!(r.status, Status::Success, "{r:?}");
    assert_eq!(r.result, "Starbucks is coffee.");

    assert_eq!(tagger.runs(), 1);
    assert_eq!(tagger.received()[0].task.objective, "Categorize: Starbucks 4.50");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one round with the tool call, one with its result");
    assert_eq!(requests[0]["model"], "scripted", "no [llm] model: the scripted model's name");
    let offered: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["delegate", "ask_agent"]);
    let prompts = model.prompts();
    assert!(prompts[0].contains("Where did my money go?"), "{}", prompts[0]);
    assert!(prompts[1].contains("coffee (Categorize: Starbucks 4.50)"), "the tool's result goes back: {}", prompts[1]);
    assert_eq!(model.left(), 0);
}

#[tokio::test]
async fn a_model_that_is_down_fails_the_llm_agent_as_unavailable() {
    let model = ScriptedModel::new()
        .reply(ModelReply::Fail(DelegationError::new(ErrorCode::AgentUnavailable, "the model is down")));
    let config = Config::from_toml(
        r#"agents = [
            { slug = "app", name = "App", may_delegate_to = ["writer"] },
            { slug = "writer", name = "Writer", backend = { kind = "llm" }, limits = { max_attempts = 1 } },
        ]"#,
    )
    .unwrap();
    let rt = Runtime::builder()
        .config(config)
        .chat_model(model.clone())
        .agent("app", ScriptedAgent::echo())
        .build()
        .unwrap();
    let r = rt.delegate(&Principal::Admin, ask("app", "writer", "Write")).await;
    assert_eq!(r.error.as_ref().map(|e| e.code), Some(ErrorCode::AgentUnavailable), "{r:?}");
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn prime_with_the_llm_planner_runs_on_a_scripted_model() {
    let model = ScriptedModel::new()
        .tool_calls(&[("delegate", json!({"employee": "tag-ai", "task": "Categorize: 2025-10-01 Starbucks 4.50"}))])
        .text("Tag filed the Starbucks purchase under coffee.");
    let mut config = Config::builtin();
    config.prime.planner = "llm".into();
    let tag = ScriptedAgent::new().reply(AgentOutput::new("Categorized 1 transaction", "Starbucks: Dining - Coffee"));
    let rt = Runtime::builder().config(config).chat_model(model.clone()).agent("tag-ai", tag.clone()).build().unwrap();
    let ask = AskOptions { input: Some("2025-10-01 Starbucks 4.50".into()), ..Default::default() };
    let reply = rt.ask(&UserId::parse("ada").unwrap(), "Categorize this", ask).await.unwrap();
    assert_eq!(reply.answer, "Tag filed the Starbucks purchase under coffee.");
    assert_eq!(tag.runs(), 1);
    assert_eq!(tag.received()[0].lineage.as_ref().unwrap().origin.as_str(), "prime-boss");
    assert!(model.prompts()[0].contains("Categorize this"), "{}", model.prompts()[0]);
}
