//! The tools' descriptions, input and output schemas, and their arguments.

use serde::Deserialize;
use serde_json::{Value, json};

/// A tool's name, description, input schema and output schema.
pub(super) struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input: Value,
    pub output: Value,
    pub read_only: bool,
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "Why the call did not succeed: a stable code (e.g. DEPTH_EXCEEDED, PII_BLOCKED, CANCELLED) and a message.",
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        "required": ["code", "message"]
    })
}

fn tree_schema() -> Value {
    json!({
        "type": "object",
        "description": "The delegation tree: the root and, under children, every delegation it made.",
        "properties": {
            "request_id": {"type": "string"},
            "agent": {"type": "string"},
            "status": {"type": "string"},
            "children": {"type": "array"}
        },
        "required": ["request_id", "agent", "status"]
    })
}

/// A turn's answer: what `ask` and a user's `delegate`/`ask_agent` return.
fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The agent's answer (the user's own values restored)."},
            "status": {"type": "string", "description": "success, partial, failed, needs_input or needs_approval."},
            "root_id": {"type": "string", "description": "The tree's root request id (for `trace` and switchboard://trees/{id})."},
            "session_id": {"type": "string", "description": "Pass back as session_id to continue the conversation."},
            "response": {"type": "object", "description": "The root delegation's whole response."},
            "tree": tree_schema(),
            "error": error_schema()
        },
        "required": ["status", "root_id", "response", "tree"]
    })
}

/// Every tool this server offers.
pub(super) fn all() -> Vec<ToolDef> {
    let slug = json!({"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$", "description": "An agent's slug (list_agents shows them)."});
    vec![
        ToolDef {
            name: "delegate",
            title: "Delegate a task to an agent",
            description: "Delegate a task to one agent of the team. With a user's token the user asks the agent \
                (a new tree at depth 0); with an agent's service token it is a delegation from that agent, \
                for user_id. Every rail applies (depth, budget, deadline, tools, PII, audit). Returns the \
                response and the delegation tree.",
            input: json!({
                "type": "object",
                "properties": {
                    "target": slug,
                    "objective": {"type": "string", "minLength": 1, "description": "What the agent should achieve."},
                    "input": {"type": "string", "description": "The content to work on (a receipt, a statement)."},
                    "task_note": {"type": "string", "description": "A Task Note whose checks the output must pass."},
                    "user_id": {"type": "string", "description": "Service tokens only: the user the delegation works for."},
                    "deadline_ms": {"type": "integer", "minimum": 1, "description": "Service tokens only: the deadline in milliseconds."},
                    "max_tokens": {"type": "integer", "minimum": 1, "description": "Service tokens only: the token budget."}
                },
                "required": ["target", "objective"],
                "additionalProperties": false
            }),
            output: answer_schema(),
            read_only: false,
        },
        ToolDef {
            name: "ask",
            title: "Talk to Prime",
            description: "The user talks to Prime, the agent that answers users and delegates to the team. \
                Pass session_id back to continue a conversation. User tokens only.",
            input: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "minLength": 1},
                    "session_id": {"type": "string", "description": "A session_id from an earlier answer."}
                },
                "required": ["message"],
                "additionalProperties": false
            }),
            output: answer_schema(),
            read_only: false,
        },
        ToolDef {
            name: "ask_agent",
            title: "Consult an agent",
            description: "An ephemeral consult: ask one agent a question; it reads its history \
                with the user but the consult is not saved in it.",
            input: json!({
                "type": "object",
                "properties": {
                    "target": slug,
                    "question": {"type": "string", "minLength": 1},
                    "user_id": {"type": "string", "description": "Service tokens only: the user the consult is for."}
                },
                "required": ["target", "question"],
                "additionalProperties": false
            }),
            output: answer_schema(),
            read_only: true,
        },
        ToolDef {
            name: "list_agents",
            title: "List the team",
            description: "The agents of this Switchboard: slug, name, description, capabilities, tools and breaker state.",
            input: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            output: json!({
                "type": "object",
                "properties": {"agents": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"slug": {"type": "string"}, "name": {"type": "string"}, "description": {"type": "string"}},
                    "required": ["slug", "name"]
                }}},
                "required": ["agents"]
            }),
            read_only: true,
        },
        ToolDef {
            name: "trace",
            title: "Show a delegation tree",
            description: "The stored tree of a delegation, with every node's outcome and timing. Only your own trees.",
            input: json!({
                "type": "object",
                "properties": {"root_id": {"type": "string", "description": "The request id of any delegation in the tree."}},
                "required": ["root_id"],
                "additionalProperties": false
            }),
            output: json!({"type": "object", "properties": {"tree": tree_schema()}, "required": ["tree"]}),
            read_only: true,
        },
    ]
}

/// `delegate`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DelegateArgs {
    pub target: String,
    pub objective: String,
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub task_note: Option<String>,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

/// `ask`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AskArgs {
    pub message: String,
    #[serde(default)]
    pub session_id: Option<String>,
}

/// `ask_agent`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AskAgentArgs {
    pub target: String,
    pub question: String,
    #[serde(default)]
    pub user_id: Option<String>,
}

/// `list_agents`' arguments (none).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NoArgs {}

/// `trace`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TraceArgs {
    pub root_id: String,
}
