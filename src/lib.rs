//! Switchboard: a runtime through which AI agents delegate work to each
//! other safely. Every delegation is one envelope ([`DelegationRequest`])
//! that passes the rails (depth, fan-out, cycle, deadline, token budget,
//! who may call whom, tools, user isolation, PII redaction, audit) on its
//! way to an [`Agent`], and comes back as a [`DelegationResponse`].
//!
//! Embedded, it is a [`Runtime`] with the built-in team and an in-memory
//! store; your own agents join it by implementing [`Agent`]:
//!
//! ```
//! use async_trait::async_trait;
//! use switchboard::protocol::{AgentSlug, UserId};
//! use switchboard::{Agent, AgentContext, AgentOutput, AgentSpec, AskOptions, DelegationError, Runtime, Task};
//!
//! struct Shout;
//!
//! #[async_trait]
//! impl Agent for Shout {
//!     async fn run(&self, _ctx: &AgentContext, task: &Task) -> Result<AgentOutput, DelegationError> {
//!         Ok(AgentOutput::new("shouted", task.text().to_uppercase()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), DelegationError> {
//! let runtime = Runtime::builder().spec(AgentSpec::new("shout", "Shout")?).agent("shout", Shout).build()?;
//! let ask = AskOptions { agent: Some(AgentSlug::parse("shout")?), ..Default::default() };
//! let answer = runtime.ask(&UserId::parse("ada")?, "hello", ask).await?;
//! assert_eq!(answer.answer, "HELLO");
//! println!("{}", answer.tree.render()); // shout "hello" success 0 ms
//! # Ok(())
//! # }
//! ```
//!
//! An agent delegates further through its context's [`Delegator`]; its
//! calls go to a [`Dispatch`], which the pipeline implements. As a service
//! (`switchboard serve`) the same runtime answers HTTP, A2A and the OpenAI
//! chat-completions API. `docs/ARCHITECTURE.md` shows how the modules fit.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

// The public API: documented, and re-exported below.
pub mod agent;
pub mod auth;
pub mod config;
pub mod lineage;
pub mod pipeline;
pub mod protocol;
pub mod resilience;
pub mod runtime;
#[cfg(feature = "server")]
pub mod server;
pub mod store;
pub mod telemetry;
#[cfg(feature = "test-util")]
pub mod testing;
pub mod util;

/// The `switchboard` command line: [`cli::main`] runs it on the process's
/// arguments (the binary is that one call); nothing else of it is public.
#[cfg(feature = "cli")]
pub mod cli;

// The parts the API is built from: nothing of them is public.
#[cfg(feature = "a2a")]
pub(crate) mod a2a;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
pub(crate) mod orchestrate;
#[cfg(feature = "queue")]
pub(crate) mod queue;
pub(crate) mod rails;
pub mod redact;
pub(crate) mod route;
pub(crate) mod team;
pub(crate) mod verify;

pub use agent::{Agent, AgentContext, AgentOutput, Call, ChatModel, Delegator, Dispatch, Lineage, Scope, Task};
pub use auth::Principal;
pub use config::{AgentSpec, Config};
pub use pipeline::{AskOptions, AskResponse, Door, Envelope, Turn};
pub use protocol::{DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Status};
pub use runtime::{Runtime, RuntimeBuilder, TreeView};
pub use store::{MemoryStore, SqlStore, Store};

/// Checks an envelope the way every door does before a rail runs (its
/// version, sizes, ids, depth and budget against `limits`): a client can
/// know before it sends whether a request would be refused as
/// `INVALID_REQUEST` or `UNSUPPORTED_VERSION`, with the same message.
pub fn check_envelope(request: &DelegationRequest, limits: &config::Limits) -> Result<(), DelegationError> {
    rails::validate::request(request, limits)
}
