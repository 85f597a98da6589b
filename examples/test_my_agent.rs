//! Testing your own agent the way Switchboard tests its own, with
//! `switchboard::testing` (feature `test-util`): your agent in a runtime
//! made in one call (in memory, no network), the agent it delegates to
//! scripted, and what the rails must refuse refused. It prints each check;
//! in your crate the same lines are `#[tokio::test]`s.
//!
//! ```sh
//! cargo run --features test-util --example test_my_agent
//! ```

use async_trait::async_trait;
use switchboard::protocol::{AgentSlug, DelegationRequest, ErrorCode, Status, UserId};
use switchboard::testing::{ScriptedAgent, builder};
use switchboard::{Agent, AgentContext, AgentOutput, Call, DelegationError, Principal, Task};

/// The agent under test: asks `tagger` to categorize its input and answers
/// with how many lines it booked.
struct Bookkeeper;

#[async_trait]
impl Agent for Bookkeeper {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let call = Call::to("tagger", "Categorize these")?.input(task.input.clone());
        let tagged = ctx.delegator()?.delegate(call).await;
        if let Some(e) = tagged.error {
            return Err(e);
        }
        Ok(AgentOutput::new("booked", format!("{} lines booked: {}", task.input.lines().count(), tagged.result)))
    }
}

/// `app` asks the bookkeeper to book `input`; the bookkeeper runs at depth 1, its helper at 2.
fn book(input: &str, max_depth: u32) -> Result<DelegationRequest, DelegationError> {
    let mut r = DelegationRequest::new(
        AgentSlug::parse("app")?,
        AgentSlug::parse("bookkeeper")?,
        UserId::parse("ada")?,
        "Book these",
        input,
    );
    r.constraints.max_depth = max_depth;
    Ok(r)
}

fn check(what: &str, ok: bool) -> Result<(), DelegationError> {
    println!("{} {what}", if ok { "ok  " } else { "FAIL" });
    if ok { Ok(()) } else { Err(DelegationError::new(ErrorCode::AgentFailed, format!("check failed: {what}"))) }
}

#[tokio::main]
async fn main() -> Result<(), DelegationError> {
    // the success path: the helper answers from its script and keeps what it was handed
    let tagger = ScriptedAgent::new().reply(AgentOutput::new("tagged", "coffee, rent"));
    let team: &[(&str, &[&str], &[&str])] =
        &[("app", &["bookkeeper"], &[]), ("bookkeeper", &["tagger"], &[]), ("tagger", &[], &[])];
    let runtime = builder(team).agent("bookkeeper", Bookkeeper).agent("tagger", tagger.clone()).build()?;
    let r = runtime.delegate(&Principal::Admin, book("Starbucks 4.50\nRent 1450", 3)?).await;
    check("the bookkeeper answers: success", r.status == Status::Success)?;
    check(
        &format!("its result is what it made of the helper's: {:?}", r.result),
        r.result == "2 lines booked: coffee, rent",
    )?;
    let seen = tagger.received();
    check("the helper ran once", seen.len() == 1)?;
    check("the helper was handed the bookkeeper's input", seen[0].task.input == "Starbucks 4.50\nRent 1450")?;
    check("the helper ran at depth 2, called by the bookkeeper", {
        let lineage = seen[0].lineage.as_ref();
        seen[0].depth == 2 && lineage.is_some_and(|l| l.origin.as_str() == "bookkeeper")
    })?;

    // a rail refusing: the depth limit. With max_depth 1 the bookkeeper's own call is one level too deep.
    let tagger = ScriptedAgent::echo();
    let runtime = builder(team).agent("bookkeeper", Bookkeeper).agent("tagger", tagger.clone()).build()?;
    let r = runtime.delegate(&Principal::Admin, book("Starbucks 4.50", 1)?).await;
    let code = r.error.as_ref().map(|e| e.code);
    check(&format!("too deep: refused with {code:?}"), code == Some(ErrorCode::DepthLimit))?;
    check("the helper never ran", tagger.runs() == 0)?;

    // a rail refusing: may_delegate_to. This bookkeeper was not given the tagger.
    let tagger = ScriptedAgent::echo();
    let runtime = builder(&[("app", &["bookkeeper"], &[]), ("bookkeeper", &[], &[]), ("tagger", &[], &[])])
        .agent("bookkeeper", Bookkeeper)
        .agent("tagger", tagger.clone())
        .build()?;
    let r = runtime.delegate(&Principal::Admin, book("Starbucks 4.50", 3)?).await;
    let code = r.error.as_ref().map(|e| e.code);
    check(
        &format!("not allowed to call the tagger: refused with {code:?}"),
        code == Some(ErrorCode::DelegationNotAllowed),
    )?;
    check("the helper never ran", tagger.runs() == 0)?;

    println!("\nall checks passed");
    Ok(())
}
