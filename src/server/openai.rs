//! An OpenAI-compatible front door: `POST /v1/chat/completions` with an agent
//! slug as the model (the entry agent, Prime, by default), plain or streamed, and
//! `GET /v1/models`, so any OpenAI client can talk to the team. The client's
//! API key is a Switchboard user token.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::extract::{self, Body};
use super::native::{admitted, busy};
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::pipeline::{AskOptions, Door, Turn};
use crate::protocol::{AgentSlug, ErrorCode};

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
}

/// The fields we use; OpenAI's many others are accepted and ignored.
#[derive(Debug, Deserialize)]
struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
}

/// Text of a message's content: a string, or the text parts of an array.
fn text_of(content: &Option<Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

pub(super) async fn models(State(state): State<Arc<AppState>>, _caller: Principal) -> Json<Value> {
    let data: Vec<Value> = state
        .runtime
        .registry()
        .members()
        .map(|m| json!({"id": m.spec.slug, "object": "model", "created": 0, "owned_by": "switchboard", "description": m.spec.description}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

pub(super) async fn completions(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    headers: HeaderMap,
    Body(raw): Body,
) -> Result<Response, ApiError> {
    if caller.user().is_none() {
        return Err(ApiError::unauthenticated("use a user token as the API key; agents use POST /v1/delegate"));
    }
    // a place among [server] max_in_flight, as /v1/chat takes
    let Some(place) = state.admission.enter() else { return Ok(busy(&state)) };
    let req: CompletionRequest =
        serde_json::from_slice(&raw).map_err(|e| ApiError::invalid(format!("invalid chat completion request: {e}")))?;
    let model = match req.model {
        Some(m) => m,
        None => state.runtime.entry_agent()?.to_string(),
    };
    let agent = AgentSlug::parse(model.as_str()).map_err(|_| {
        ApiError::from(crate::DelegationError::new(
            ErrorCode::AgentNotFound,
            format!("no model '{model}'; GET /v1/models lists the agents"),
        ))
    })?;
    // the last user message is the request; what came before is context
    let last = req
        .messages
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or_else(|| ApiError::invalid("messages has no user message"))?;
    let message = text_of(&req.messages[last].content);
    if message.trim().is_empty() {
        return Err(ApiError::invalid("the last user message is empty"));
    }
    let earlier: Vec<String> = req.messages[..last]
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| format!("{}: {}", m.role, text_of(&m.content)))
        .filter(|l| l.len() > 2)
        .collect();
    let input = (!earlier.is_empty()).then(|| format!("Conversation so far:\n{}", earlier.join("\n")));
    let runtime = state.runtime.clone();
    let session = extract::session(&headers, None)?;
    let opts = AskOptions { input, session, agent: Some(agent.clone()), ..AskOptions::default() };
    let r =
        admitted(&state, place, async move { runtime.enter(Door::OpenAi, &caller, Turn::ask(message, opts)).await })
            .await??;
    let id = format!("chatcmpl-{}", r.request_id.0.simple());
    let created = chrono::Utc::now().timestamp();
    let usage = r.response.token_usage;
    if !req.stream {
        return Ok(Json(json!({
            "id": id, "object": "chat.completion", "created": created, "model": agent,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": r.answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage.prompt, "completion_tokens": usage.completion, "total_tokens": usage.total},
            "switchboard": {"session_id": r.session_id, "status": r.status, "tree": r.tree},
        }))
        .into_response());
    }
    // the answer is complete already; it is sent in word-sized chunks as OpenAI streams do
    let chunk = |delta: Value, finish: Value| {
        SseEvent::default().data(
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": agent,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    let mut piece = String::new();
    for word in r.answer.split_inclusive(char::is_whitespace) {
        piece.push_str(word);
        if piece.len() >= 24 {
            events.push(chunk(json!({"content": std::mem::take(&mut piece)}), Value::Null));
        }
    }
    if !piece.is_empty() {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    events.push(chunk(json!({}), json!("stop")));
    events.push(SseEvent::default().data("[DONE]"));
    Ok(Sse::new(futures::stream::iter(events.into_iter().map(Ok::<_, Infallible>))).into_response())
}
