//! Switchboard as a library: a runtime in a dozen lines with two agents
//! written in Rust beside the built-in team. A user asks `greeter`, which
//! delegates to `shout` through its delegator (every rail applies to that
//! hop), and the tree of the work is printed.
//!
//! ```sh
//! cargo run --example embed
//! ```

use async_trait::async_trait;
use switchboard::protocol::{AgentSlug, UserId};
use switchboard::{Agent, AgentContext, AgentOutput, AgentSpec, AskOptions, Call, DelegationError, Runtime, Task};

/// Answers its input in capitals.
struct Shout;

#[async_trait]
impl Agent for Shout {
    async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        Ok(AgentOutput::new("shouted", task.text().to_uppercase()))
    }
}

/// Greets by asking `shout` to say it.
struct Greeter;

#[async_trait]
impl Agent for Greeter {
    async fn run(&self, ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
        let call = Call::to("shout", "Shout the greeting")?.input(format!("hello, {}!", task.text()));
        let loud = ctx.delegator()?.delegate(call).await;
        match loud.error {
            Some(e) => Err(e),
            None => Ok(AgentOutput::new("greeted", loud.result)),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), DelegationError> {
    let runtime = Runtime::builder()
        .spec(AgentSpec::new("greeter", "Greeter")?.delegating_to(["shout"]))
        .spec(AgentSpec::new("shout", "Shout")?)
        .agent("greeter", Greeter)
        .agent("shout", Shout)
        .build()?;
    let to_greeter = AskOptions { agent: Some(AgentSlug::parse("greeter")?), ..Default::default() };
    let answer = runtime.ask(&UserId::parse("ada")?, "world", to_greeter).await?;
    println!("{}\n", answer.answer);
    print!("{}", answer.tree.render());
    Ok(())
}
