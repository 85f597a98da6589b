//! The JSON-RPC 2.0 binding: `POST /a2a/{slug}` with one request object.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::sse::{last_event_id, sse};
use super::{
    TaskIdParams, check_content_type, check_id, check_version, extended_card, json_response, member_spec, no_agent,
    params, principal, push_config_params, read_body, rpc_error, send_admitted,
};
use crate::a2a::{ListQuery, Mode, Sent};
use crate::auth::Principal;
use crate::pipeline::Door;
use crate::protocol::a2a::types::SendMessageRequest;
use crate::protocol::a2a::{A2aError, Kind};
use crate::server::{ApiError, AppState};

/// `POST /a2a/{slug}`: JSON-RPC 2.0.
pub(super) async fn handle(
    State(state): State<Arc<AppState>>,
    Path(slug): Path<String>,
    caller: Result<Principal, ApiError>,
    headers: HeaderMap,
    uri: Uri,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let null = Value::Null;
    let raw = match read_body(raw) {
        Ok(b) => b,
        Err(e) => return rpc_error(&null, &e),
    };
    if let Err(e) = check_content_type(&headers) {
        return rpc_error(&null, &e);
    }
    let body: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => return rpc_error(&null, &A2aError::new(Kind::ParseError, format!("the body is not JSON: {e}"))),
    };
    let Value::Object(mut obj) = body else {
        return rpc_error(
            &null,
            &A2aError::new(Kind::InvalidRequest, "a JSON-RPC request is one object (batches are not supported)"),
        );
    };
    let id = obj.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return rpc_error(&null, &A2aError::new(Kind::InvalidRequest, "id must be a string, a number or null"));
    }
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return rpc_error(&id, &A2aError::new(Kind::InvalidRequest, "\"jsonrpc\" must be \"2.0\""));
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        return rpc_error(
            &id,
            &A2aError::new(Kind::InvalidRequest, "\"method\" must be a string such as \"SendMessage\""),
        );
    };
    let p = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return rpc_error(&id, &A2aError::invalid_params("params must be an object")),
    };
    match dispatch_rpc(&state, &slug, caller, &headers, &uri, &method, p, &id).await {
        Ok(r) => r,
        Err(e) => rpc_error(&id, &e),
    }
}

const METHODS: [&str; 6] =
    ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask"];
const PUSH_METHODS: [&str; 4] = [
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
];

#[allow(clippy::too_many_arguments)]
async fn dispatch_rpc(
    state: &Arc<AppState>,
    slug: &str,
    caller: Result<Principal, ApiError>,
    headers: &HeaderMap,
    uri: &Uri,
    method: &str,
    p: Value,
    id: &Value,
) -> Result<Response, A2aError> {
    let known = METHODS.contains(&method) || PUSH_METHODS.contains(&method) || method == "GetExtendedAgentCard";
    if !known {
        let shown: String = method.chars().take(60).collect();
        return Err(A2aError::new(
            Kind::MethodNotFound,
            format!(
                "method '{shown}' does not exist; A2A 1.0 methods are {}, {} and GetExtendedAgentCard",
                METHODS.join(", "),
                PUSH_METHODS.join(", ")
            ),
        ));
    }
    check_version(headers, uri)?;
    let spec = member_spec(state, slug).ok_or_else(|| no_agent(slug))?;
    let who = principal(caller)?;
    let svc = &state.a2a;
    let ok = |result: Value| json_response(StatusCode::OK, json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match method {
        "SendMessage" | "SendStreamingMessage" => {
            let req: SendMessageRequest = params(p, method)?;
            let mode = if method == "SendStreamingMessage" {
                Mode::Stream
            } else if req.configuration.as_ref().is_some_and(|c| c.return_immediately) {
                Mode::NonBlocking
            } else {
                Mode::Blocking
            };
            Ok(match send_admitted(state, Door::A2aJsonRpc, who, spec.slug.clone(), req, mode).await? {
                Sent::Task(t) => ok(json!({"task": t})),
                Sent::Message(m) => ok(json!({"message": m})),
                Sent::Stream(stream) => sse(stream, Some(id.clone()), false),
            })
        }
        "GetTask" => {
            let q: TaskIdParams = params(p, method)?;
            check_id(&q.id)?;
            Ok(ok(serde_json::to_value(svc.get(&who, &spec.slug, &q.id, q.history_length).await?).unwrap_or_default()))
        }
        "ListTasks" => {
            let q: ListQuery = params(p, method)?;
            Ok(ok(serde_json::to_value(svc.list(&who, &spec.slug, &q).await?).unwrap_or_default()))
        }
        "CancelTask" => {
            let q: TaskIdParams = params(p, method)?;
            check_id(&q.id)?;
            Ok(ok(serde_json::to_value(svc.cancel(&who, &spec.slug, &q.id).await?).unwrap_or_default()))
        }
        "SubscribeToTask" => {
            let q: TaskIdParams = params(p, method)?;
            check_id(&q.id)?;
            let stream = svc.subscribe(&who, &spec.slug, &q.id, last_event_id(headers)?).await?;
            Ok(sse(stream, Some(id.clone()), true))
        }
        "GetExtendedAgentCard" => Ok(ok(extended_card(state, &spec, headers, &who)?)),
        "CreateTaskPushNotificationConfig" => {
            let c = push_config_params(p, None)?;
            Ok(ok(serde_json::to_value(svc.create_push_config(&who, &spec.slug, c).await?).unwrap_or_default()))
        }
        "GetTaskPushNotificationConfig" => {
            let q: PushConfigParams = params(p, method)?;
            let c = svc.get_push_config(&who, &spec.slug, &q.task_id, &q.id).await?;
            Ok(ok(serde_json::to_value(c).unwrap_or_default()))
        }
        "ListTaskPushNotificationConfigs" => {
            let q: PushListParams = params(p, method)?;
            let list =
                svc.list_push_configs(&who, &spec.slug, &q.task_id, q.page_size, q.page_token.as_deref()).await?;
            Ok(ok(serde_json::to_value(list).unwrap_or_default()))
        }
        "DeleteTaskPushNotificationConfig" => {
            let q: PushConfigParams = params(p, method)?;
            svc.delete_push_config(&who, &spec.slug, &q.task_id, &q.id).await?;
            Ok(ok(json!({})))
        }
        _ => Err(A2aError::new(Kind::MethodNotFound, "unknown method")),
    }
}

/// Get/DeleteTaskPushNotificationConfig's params.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushConfigParams {
    #[serde(alias = "task_id")]
    task_id: String,
    id: String,
}

/// ListTaskPushNotificationConfigs' params.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushListParams {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(default, alias = "page_size")]
    page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    page_token: Option<String>,
}
