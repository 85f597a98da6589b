//! Switchboard: a runtime through which AI agents delegate work to each other
//! safely. Every delegation is one envelope ([`protocol::DelegationRequest`])
//! that passes the rails (depth, fan-out, cycle, deadline, budget,
//! authorization, user isolation, PII redaction, audit) composed in
//! [`pipeline`].

pub mod a2a;
pub mod agent;
pub mod auth;
pub mod cli;
pub mod config;
pub mod orchestrate;
pub mod pipeline;
pub mod protocol;
pub mod rails;
pub mod redact;
pub mod resilience;
pub mod route;
pub mod server;
pub mod store;
pub mod team;
pub mod telemetry;
pub mod util;
pub mod verify;

pub use agent::{Agent, AgentContext, AgentOutput, Task};
pub use agent::{Call, Delegator, Dispatch};
pub use auth::Principal;
pub use config::Config;
pub use pipeline::{AskOptions, AskResponse, Runtime, RuntimeBuilder, TreeView};
pub use protocol::{DelegationError, DelegationRequest, DelegationResponse, ErrorCode};
