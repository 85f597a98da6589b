//! `switchboard mcp`: Switchboard as an MCP server on stdin/stdout, for
//! desktop clients that start their servers as commands. Every request acts
//! as one user (`--user`); logs go to stderr, stdout carries only MCP.

use clap::Args;

use super::output::{EXIT_FAILED, EXIT_OK, usage_error};
use crate::auth::Principal;
use crate::protocol::UserId;
use crate::runtime::Runtime;

#[derive(Debug, Args)]
pub(super) struct McpArgs {
    /// The user every request acts as (as `switchboard ask --user`).
    #[arg(long, env = "SWITCHBOARD_USER", default_value = "local-user")]
    user: String,
}

pub(super) async fn run(runtime: Runtime, args: McpArgs) -> u8 {
    let user = match UserId::parse(&args.user) {
        Ok(u) => u,
        Err(e) => return usage_error(format!("--user: {e}")),
    };
    eprintln!("switchboard: serving MCP on stdio as user '{user}'");
    match crate::mcp::serve_stdio(runtime, Principal::User(user)).await {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_FAILED
        }
    }
}
