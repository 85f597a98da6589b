//! Switchboard as an MCP server (Model Context Protocol, the `rmcp` crate):
//! the tools `delegate`, `ask`, `ask_agent`, `list_agents` and `trace`, and
//! the resources `switchboard://agents` and `switchboard://trees/{id}`, over
//! the runtime every other surface uses, so every rail applies as on
//! `/v1/delegate`.
//!
//! - [`McpServer`]: the handler; one principal per request (the bearer
//!   token's on HTTP, the configured user's on stdio).
//! - [`http_service`]: streamable HTTP, mounted at `/mcp` by the server;
//!   a request without a valid bearer token is a 401 with `WWW-Authenticate`.
//! - [`serve_stdio`]: stdio, for desktop clients (`switchboard mcp`).
//!
//! With `[mcp] conformance_fixtures = true` (off by default) the server also
//! carries the MCP conformance suite's fixtures (`conformance`).
//!
//! docs/MCP.md describes the tools, their schemas and the errors.

mod conformance;
mod handler;
mod http;
mod tools;

pub(crate) use handler::{McpServer, serve_stdio};
pub(crate) use http::http_service;
