//! The MCP conformance suite's fixtures (`[mcp] conformance_fixtures = true`,
//! off by default): the tools, resources, prompts, logging, completions and
//! resource subscriptions that the server scenarios of
//! `@modelcontextprotocol/conformance` call on the server under test, so the
//! suite can check the protocol machinery (content types, notifications,
//! server-to-client requests) over Switchboard's own `/mcp` and handler.
//! Written from the scenarios' descriptions. Nothing here touches the runtime:
//! the fixtures do no delegation and see no data.
//!
//! With the flag off, [`super::McpServer`] holds no [`Fixtures`] and none of
//! this is listed or callable.

// Logging, sampling and resources/subscribe are legacy in MCP 2026-07-28
// (rmcp marks them deprecated); the suite's scenarios run on 2025-11-25.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ClientCapabilities, CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ReadResourceResult, ServerCapabilities,
    ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// Eight samples of silence: 8 kHz mono 8-bit WAV.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
/// The resource template the suite reads with `{id}` = 123.
const TEMPLATE_PREFIX: &str = "test://template/";
/// The pause between two steps of the logging and progress tools (the
/// scenarios ask for about 50 ms so that the notifications are separate).
const STEP: Duration = Duration::from_millis(50);

/// One MCP session's fixture state: its logging level and its resource
/// subscriptions.
#[derive(Debug)]
pub(super) struct Fixtures {
    level: Mutex<LoggingLevel>,
    subscriptions: Mutex<BTreeSet<String>>,
}

impl Default for Fixtures {
    fn default() -> Self {
        Self { level: Mutex::new(LoggingLevel::Info), subscriptions: Mutex::new(BTreeSet::new()) }
    }
}

fn from_json<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(format!("{what}: {e}"), None))
}

fn text_result(text: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    from_json(json!({"content": [{"type": "text", "text": text.into()}]}), "the fixture's result")
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A required string argument.
fn string_arg(arguments: &Option<Map<String, Value>>, tool: &str, name: &str) -> Result<String, ErrorData> {
    arguments.as_ref().and_then(|a| a.get(name)).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
        ErrorData::invalid_params(format!("invalid arguments for tool '{tool}': '{name}' (a string) is required"), None)
    })
}

fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// What the client said it can do at `initialize`.
fn client_capabilities(ctx: &RequestContext<RoleServer>) -> Option<ClientCapabilities> {
    ctx.peer.peer_info().map(|info| info.capabilities.clone())
}

impl Fixtures {
    /// Declares what the fixtures add: logging, completions, prompts and
    /// resource subscriptions.
    pub(super) fn capabilities(caps: &mut ServerCapabilities) {
        caps.logging = Some(Map::new());
        caps.completions = Some(Map::new());
        caps.prompts = Some(Default::default());
        if let Some(resources) = caps.resources.as_mut() {
            resources.subscribe = Some(true);
        }
    }

    /// The fixture tools, as `tools/list` entries.
    pub(super) fn tools() -> Vec<Value> {
        let tool = |name: &str, description: &str, input: Value| json!({"name": name, "description": description, "inputSchema": input});
        let prompt_arg = |name: &str, description: &str| json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]});
        vec![
            tool("test_simple_text", "Conformance fixture: returns a text content block", no_args()),
            tool("test_image_content", "Conformance fixture: returns an image (PNG) content block", no_args()),
            tool("test_audio_content", "Conformance fixture: returns an audio (WAV) content block", no_args()),
            tool("test_embedded_resource", "Conformance fixture: returns an embedded text resource", no_args()),
            tool("test_multiple_content_types", "Conformance fixture: returns text, image and resource", no_args()),
            tool("test_tool_with_logging", "Conformance fixture: sends three info log notifications", no_args()),
            tool("test_error_handling", "Conformance fixture: always returns a tool error", no_args()),
            tool("test_tool_with_progress", "Conformance fixture: reports progress 0, 50, 100 of 100", no_args()),
            tool(
                "test_sampling",
                "Conformance fixture: asks the client's LLM (sampling/createMessage)",
                prompt_arg("prompt", "The prompt to send to the LLM"),
            ),
            tool(
                "test_elicitation",
                "Conformance fixture: asks the client's user (elicitation/create)",
                prompt_arg("message", "The message to show the user"),
            ),
            tool(
                "test_elicitation_sep1034_defaults",
                "Conformance fixture: elicitation with a default for each primitive type (SEP-1034)",
                no_args(),
            ),
            tool(
                "test_elicitation_sep1330_enums",
                "Conformance fixture: elicitation with the five enum forms (SEP-1330)",
                no_args(),
            ),
            tool(
                "test_reconnection",
                "Conformance fixture for SSE polling (SEP-1699): answers after a pause; the transport keeps the \
                 POST stream open, so the client gets the result there",
                no_args(),
            ),
            tool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {"address": {"type": "object", "properties": {
                        "street": {"type": "string"}, "city": {"type": "string"}
                    }}},
                    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                    "additionalProperties": false
                }),
            ),
        ]
    }

    /// Runs fixture tool `name`, or `None` when there is no such fixture.
    pub(super) async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResult, ErrorData>> {
        let result = match name {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => from_json(
                json!({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}),
                "the fixture's result",
            ),
            "test_audio_content" => from_json(
                json!({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}),
                "the fixture's result",
            ),
            "test_embedded_resource" => from_json(
                json!({"content": [{"type": "resource", "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content."
                }}]}),
                "the fixture's result",
            ),
            "test_multiple_content_types" => from_json(
                json!({"content": [
                    {"type": "text", "text": "Multiple content types test:"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                    {"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}"
                    }}
                ]}),
                "the fixture's result",
            ),
            "test_error_handling" => from_json(
                json!({"isError": true, "content": [
                    {"type": "text", "text": "This tool intentionally returns an error for testing"}
                ]}),
                "the fixture's result",
            ),
            "test_tool_with_logging" => self.with_logging(ctx).await,
            "test_tool_with_progress" => with_progress(ctx).await,
            "test_sampling" => match string_arg(&arguments, name, "prompt") {
                Ok(prompt) => sampling(ctx, prompt).await,
                Err(e) => Err(e),
            },
            "test_elicitation" => match string_arg(&arguments, name, "message") {
                Ok(message) => {
                    let schema = json!({
                        "type": "object",
                        "properties": {
                            "username": {"type": "string", "description": "User's response"},
                            "email": {"type": "string", "description": "User's email address"}
                        },
                        "required": ["username", "email"]
                    });
                    elicit(ctx, &message, schema, "User response").await
                }
                Err(e) => Err(e),
            },
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "default": true}
                    }
                });
                elicit(ctx, "Please review these values (each has a default)", schema, "Elicitation completed").await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]},
                        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}}
                    }
                });
                elicit(ctx, "Please choose (each enum form)", schema, "Elicitation completed").await
            }
            "test_reconnection" => {
                tokio::time::sleep(STEP).await;
                text_result("Reconnection test completed (the POST stream was not closed)")
            }
            "json_schema_2020_12_tool" => {
                text_result(format!("received: {}", Value::Object(arguments.unwrap_or_default())))
            }
            _ => return None,
        };
        Some(result)
    }

    async fn with_logging(&self, ctx: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let messages = ["Tool execution started", "Tool processing data", "Tool execution completed"];
        for (i, message) in messages.into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            self.log(ctx, LoggingLevel::Info, message).await;
        }
        text_result("Tool with logging executed successfully")
    }

    /// Sends a log notification if `level` is at or above the session's level.
    async fn log(&self, ctx: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        let min = *self.level.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if level_rank(level) < level_rank(min) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, json!(message)).with_logger("conformance");
        let _ = ctx.peer.notify_logging_message(param).await;
    }

    /// `logging/setLevel`.
    pub(super) fn set_level(&self, level: LoggingLevel) {
        *self.level.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = level;
    }

    /// `resources/subscribe` (`true`) or `resources/unsubscribe` (`false`).
    pub(super) fn subscribe(&self, uri: &str, on: bool) {
        let mut subs = self.subscriptions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if on {
            subs.insert(uri.to_owned());
        } else {
            subs.remove(uri);
        }
    }

    /// The fixture resources, as `resources/list` entries.
    pub(super) fn resources() -> Vec<Value> {
        vec![
            json!({"uri": "test://static-text", "name": "static-text", "description": "Conformance fixture: a text resource", "mimeType": "text/plain"}),
            json!({"uri": "test://static-binary", "name": "static-binary", "description": "Conformance fixture: a binary (PNG) resource", "mimeType": "image/png"}),
            json!({"uri": "test://watched-resource", "name": "watched-resource", "description": "Conformance fixture: a resource to subscribe to", "mimeType": "text/plain"}),
        ]
    }

    /// The fixture resource templates, as `resources/templates/list` entries.
    pub(super) fn templates() -> Vec<Value> {
        vec![json!({
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "Conformance fixture: data for an id",
            "mimeType": "application/json"
        })]
    }

    /// Reads fixture resource `uri`, or `None` when it is not one.
    pub(super) fn read_resource(uri: &str) -> Option<Result<ReadResourceResult, ErrorData>> {
        let contents = match uri {
            "test://static-text" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
            }
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "A resource clients may subscribe to."})
            }
            _ => {
                let id = uri.strip_prefix(TEMPLATE_PREFIX)?.strip_suffix("/data")?;
                if id.is_empty() || id.contains('/') {
                    return None;
                }
                let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
                json!({"uri": uri, "mimeType": "application/json", "text": text})
            }
        };
        Some(from_json(json!({"contents": [contents], "resultType": "complete"}), "the fixture resource"))
    }

    /// The fixture prompts, as `prompts/list` entries.
    pub(super) fn prompts() -> Vec<Value> {
        vec![
            json!({"name": "test_simple_prompt", "description": "Conformance fixture: a prompt without arguments"}),
            json!({"name": "test_prompt_with_arguments", "description": "Conformance fixture: a prompt with two arguments",
            "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}
            ]}),
            json!({"name": "test_prompt_with_embedded_resource", "description": "Conformance fixture: a prompt that embeds a resource",
                "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]}),
            json!({"name": "test_prompt_with_image", "description": "Conformance fixture: a prompt with an image"}),
        ]
    }

    /// `prompts/get`; -32602 for an unknown prompt or a missing argument.
    pub(super) fn get_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
        let arg = |name: &str| {
            request.arguments.as_ref().and_then(|a| a.get(name)).and_then(Value::as_str).map(str::to_owned).ok_or_else(
                || {
                    ErrorData::invalid_params(
                        format!("prompt '{}': argument '{name}' (a string) is required", request.name),
                        None,
                    )
                },
            )
        };
        let user = |content: Value| json!({"role": "user", "content": content});
        let messages = match request.name.as_str() {
            "test_simple_prompt" => {
                vec![user(json!({"type": "text", "text": "This is a simple prompt for testing."}))]
            }
            "test_prompt_with_arguments" => {
                let (a1, a2) = (arg("arg1")?, arg("arg2")?);
                vec![user(json!({"type": "text", "text": format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'")}))]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = arg("resourceUri")?;
                vec![
                    user(json!({"type": "resource", "resource": {
                        "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."
                    }})),
                    user(json!({"type": "text", "text": "Please process the embedded resource above."})),
                ]
            }
            "test_prompt_with_image" => vec![
                user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
                user(json!({"type": "text", "text": "Please analyze the image above."})),
            ],
            other => {
                let shown: String = other.chars().take(64).collect();
                return Err(ErrorData::invalid_params(format!("unknown prompt '{shown}'"), None));
            }
        };
        from_json(json!({"messages": messages, "resultType": "complete"}), "the fixture prompt")
    }

    /// `completion/complete`: the values of a fixed list that start with
    /// what the user typed.
    pub(super) fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        const WORDS: [&str; 6] = ["paris", "park", "party", "test", "testing", "value"];
        let typed = request.argument.value.to_lowercase();
        let values: Vec<&str> = WORDS.into_iter().filter(|w| w.starts_with(&typed)).collect();
        from_json(
            json!({"completion": {"values": values, "total": values.len(), "hasMore": false}, "resultType": "complete"}),
            "the completion",
        )
    }
}

/// Progress 0, 50 and 100 of 100 when the request carries a progress token.
async fn with_progress(ctx: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
    let token = ctx.meta.get_progress_token();
    for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP).await;
        }
        if let Some(token) = &token {
            let param = ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
            let _ = ctx.peer.notify_progress(param).await;
        }
    }
    text_result("Tool with progress executed successfully")
}

/// Sends `request` (`method`, `params`) to the client and returns its result as JSON.
async fn ask_client(ctx: &RequestContext<RoleServer>, method: &str, params: Value) -> Result<Value, ErrorData> {
    let request: ServerRequest = from_json(json!({"method": method, "params": params}), method)?;
    let result = ctx
        .peer
        .send_request(request)
        .await
        .map_err(|e| ErrorData::internal_error(format!("the client did not answer {method}: {e}"), None))?;
    serde_json::to_value(&result).map_err(|e| ErrorData::internal_error(format!("{method}: {e}"), None))
}

/// `sampling/createMessage` with the prompt; the tool returns the client's answer.
async fn sampling(ctx: &RequestContext<RoleServer>, prompt: String) -> Result<CallToolResult, ErrorData> {
    if client_capabilities(ctx).and_then(|c| c.sampling).is_none() {
        return Err(ErrorData::invalid_request("the client does not support sampling", None));
    }
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    });
    let answer = ask_client(ctx, "sampling/createMessage", params).await?;
    let text = match &answer["content"] {
        Value::Object(c) => c.get("text").and_then(Value::as_str).map(str::to_owned),
        Value::Array(blocks) => blocks.iter().find_map(|b| b.get("text").and_then(Value::as_str).map(str::to_owned)),
        _ => None,
    }
    .unwrap_or_else(|| answer["content"].to_string());
    text_result(format!("LLM response: {text}"))
}

/// `elicitation/create` (a form with `schema`); the tool returns the user's answer.
async fn elicit(
    ctx: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResult, ErrorData> {
    if client_capabilities(ctx).and_then(|c| c.elicitation).is_none() {
        return Err(ErrorData::invalid_request("the client does not support elicitation", None));
    }
    let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
    let answer = ask_client(ctx, "elicitation/create", params).await?;
    let action = answer["action"].as_str().unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    text_result(format!("{label}: action={action}, content={content}"))
}
