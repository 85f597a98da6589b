//! The one way into the runtime. Every surface (the native HTTP endpoints,
//! the OpenAI-compatible API, A2A's three bindings, MCP over HTTP and
//! stdio, the queue worker, the command line, an embedding program) hands
//! [`Runtime::enter`] three things: which [`Door`] the call came through,
//! who is calling (a [`Principal`] the surface authenticated) and the work
//! asked for (a user's [`Turn`] or a delegation [`Envelope`]). What the
//! call may do is derived from those three here, once:
//!
//! - a turn is a user's: the caller must be a user, and the turn is theirs;
//! - an envelope is an agent's or an operator's, never a user's;
//! - an envelope with a lineage token is what the token says, once it
//!   verifies (a token that does not is refused and audited);
//! - an agent's envelope without one, through any door, is taken only
//!   from an agent `[auth] service_roots` lets start trees for the
//!   envelope's user (docs/LINEAGE.md): an agent is an agent wherever it
//!   knocks, and its word about a tree (user, depth, chain, limits) is not
//!   proof of anything;
//! - an operator's envelope (an admin token, the command line, a library
//!   call as [`Principal::Admin`]) is taken as it is.
//!
//! Nothing a surface decides on its own widens that: a surface may refuse
//! more (its own wire rules), never less. `scripts/check-layers.py` fails a
//! surface that calls a lower entry point.

use std::future::Future;

use super::admit::Refused;
use super::ask::{AskOptions, AskResponse};
use super::clock::Clock;
use super::entry::Entry;
use super::record;
use crate::auth::Principal;
use crate::protocol::{DelegationError, DelegationRequest, DelegationResponse, ErrorCode, Mode};
use crate::runtime::Runtime;
use crate::store::Durability;

/// The surface a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Door {
    /// A program that embeds the runtime (`Runtime::ask`, `Runtime::delegate`).
    Library,
    /// The `switchboard` command line on the runtime's own machine: the operator.
    Cli,
    /// Switchboard's own HTTP endpoints (`POST /v1/delegate`, `POST /v1/chat`).
    Http,
    /// The OpenAI-compatible `POST /v1/chat/completions`.
    OpenAi,
    /// A2A 1.0 over JSON-RPC.
    A2aJsonRpc,
    /// A2A 1.0 over HTTP+JSON.
    A2aRest,
    /// A2A 1.0 over gRPC.
    A2aGrpc,
    /// MCP over streamable HTTP (`/mcp`).
    McpHttp,
    /// MCP over stdio (`switchboard mcp`), acting as one configured user.
    McpStdio,
    /// A job taken from the queue (`switchboard worker`).
    Queue,
}

impl Door {
    /// Every door, for tests that must cover each one.
    pub const ALL: [Door; 10] = [
        Self::Library,
        Self::Cli,
        Self::Http,
        Self::OpenAi,
        Self::A2aJsonRpc,
        Self::A2aRest,
        Self::A2aGrpc,
        Self::McpHttp,
        Self::McpStdio,
        Self::Queue,
    ];

    /// Its name, as logs and metrics show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Library => "library",
            Self::Cli => "cli",
            Self::Http => "http",
            Self::OpenAi => "openai",
            Self::A2aJsonRpc => "a2a_jsonrpc",
            Self::A2aRest => "a2a_rest",
            Self::A2aGrpc => "a2a_grpc",
            Self::McpHttp => "mcp_http",
            Self::McpStdio => "mcp_stdio",
            Self::Queue => "queue",
        }
    }
}

impl std::fmt::Display for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller may ask of the runtime through a door: a [`Turn`] or an
/// [`Envelope`]. Sealed: the rules of [`Runtime::enter`] cover every kind.
pub trait Work: Send + sealed::Sealed {
    /// What the caller gets back.
    type Answer: Send;

    #[doc(hidden)]
    fn enter(self, rt: &Runtime, door: Door, caller: &Principal) -> impl Future<Output = Self::Answer> + Send;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Turn {}
    impl Sealed for super::Envelope {}
}

/// A user's turn: a message to Prime (or to the agent `options.agent`
/// names), at the root of a new tree. The caller must be the user.
#[derive(Debug, Clone)]
pub struct Turn {
    message: String,
    options: AskOptions,
    mode: Mode,
    tree: bool,
}

impl Turn {
    /// A message the user's session keeps (`persist`).
    pub fn ask(message: impl Into<String>, options: AskOptions) -> Self {
        Self { message: message.into(), options, mode: Mode::Persist, tree: true }
    }

    /// An ephemeral consult of `options.agent`: it reads its history with
    /// the user and writes nothing to it.
    pub fn consult(question: impl Into<String>, options: AskOptions) -> Self {
        Self { mode: Mode::Ephemeral, ..Self::ask(question, options) }
    }

    /// The answer without its tree read back from the store (a surface that
    /// shows no tree: A2A's send). The answer's `tree` is its root alone.
    pub fn without_tree(mut self) -> Self {
        self.tree = false;
        self
    }
}

impl Work for Turn {
    /// A refusal is an `Err`; a failure is an answer with `status: failed`.
    type Answer = Result<AskResponse, DelegationError>;

    async fn enter(self, rt: &Runtime, door: Door, caller: &Principal) -> Self::Answer {
        let Some(user) = caller.user() else {
            return Err(DelegationError::new(
                ErrorCode::Unauthenticated,
                format!(
                    "a turn is a user's own: {} cannot send one through {door} (use a user's token, \
                     or send a delegation envelope as an agent)",
                    caller.label()
                ),
            ));
        };
        rt.turn(user, &self.message, self.options, self.mode, self.tree).await
    }
}

/// A delegation envelope from an agent or an operator, with the lineage
/// token it carried, if any.
#[derive(Debug, Clone)]
pub struct Envelope {
    request: DelegationRequest,
    lineage: Option<String>,
    end: Durability,
    refused: Option<DelegationError>,
}

impl Envelope {
    /// An envelope as it came in.
    pub fn new(request: DelegationRequest) -> Self {
        Self { request, lineage: None, end: Durability::Now, refused: None }
    }

    /// The lineage token it carried (`X-Switchboard-Lineage`, A2A's lineage
    /// extension, a queued job's token).
    pub fn lineage(mut self, token: Option<String>) -> Self {
        self.lineage = token;
        self
    }

    /// When its end is on stable storage: [`Durability::WithNext`] only for
    /// a surface that commits a synced write of its own before it answers
    /// anyone (A2A's blocking send: the task's last version).
    pub fn ending(mut self, end: Durability) -> Self {
        self.end = end;
        self
    }

    /// The surface found the envelope contradicts what came with it (a
    /// header that disagrees with its body): it is refused with `error` and
    /// audited as denied, like any refusal, without reaching the rails.
    pub fn refused(mut self, error: DelegationError) -> Self {
        self.refused = Some(error);
        self
    }
}

impl Work for Envelope {
    /// Never an `Err`: refusals and failures come back with `status: failed`
    /// and an `error`, recorded like every delegation.
    type Answer = DelegationResponse;

    async fn enter(self, rt: &Runtime, _door: Door, caller: &Principal) -> Self::Answer {
        let Envelope { request, lineage, end, refused } = self;
        if let Some(error) = refused {
            return record_refusal(rt, request, error).await;
        }
        if caller.user().is_some() {
            let error = DelegationError::new(
                ErrorCode::Unauthenticated,
                format!(
                    "{} sends no delegation envelopes: a user talks to Prime (a turn); envelopes take an \
                     agent's service token",
                    caller.label()
                ),
            );
            return record_refusal(rt, request, error).await;
        }
        let entry = match lineage {
            Some(text) => match rt.inner.lineage.verify(&text) {
                Ok((token, claims)) => Entry::Remote(Some(crate::lineage::Hop::received(token, claims))),
                Err(e) => return record_refusal(rt, request, e.into()).await,
            },
            None if caller.agent().is_some() => Entry::Remote(None),
            None => Entry::Delegation,
        };
        rt.dispatch_top(caller, request, entry, end).await
    }
}

/// Records an envelope refused before it reached the rails (a forged or
/// contradictory header at the edge): audited as denied, like any refusal.
async fn record_refusal(rt: &Runtime, request: DelegationRequest, error: DelegationError) -> DelegationResponse {
    let refused = Refused { req: request, tree: None, error };
    record::refuse(rt, refused, None, Clock::start()).await
}

impl Runtime {
    /// The one way in: `work` from `caller` through `door`, under the rules
    /// of this module (see its docs). Every surface calls this; nothing
    /// else starts a tree.
    pub async fn enter<W: Work>(&self, door: Door, caller: &Principal, work: W) -> W::Answer {
        work.enter(self, door, caller).await
    }

    /// A user's message to Prime (or to `opts.agent`), through the library's
    /// door: [`Runtime::enter`] with a [`Turn`]. A refusal is an `Err`; a
    /// failure is an answer with `status: failed`.
    pub async fn ask(
        &self,
        user: &crate::protocol::UserId,
        message: &str,
        opts: AskOptions,
    ) -> Result<AskResponse, DelegationError> {
        self.enter(Door::Library, &Principal::User(user.clone()), Turn::ask(message, opts)).await
    }

    /// One delegation through the library's door: [`Runtime::enter`] with an
    /// [`Envelope`]. The response is never an `Err`: refusals and failures
    /// come back with `status: failed` and an `error`.
    pub async fn delegate(&self, caller: &Principal, request: DelegationRequest) -> DelegationResponse {
        self.enter(Door::Library, caller, Envelope::new(request)).await
    }
}
