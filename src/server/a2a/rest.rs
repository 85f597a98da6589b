//! The HTTP+JSON binding: `/a2a/{slug}/message:send`, `…/tasks/{id}` and the rest.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::sse::{last_event_id, sse};
use super::{
    check_content_type, check_id, check_version, extended_card, json_response, member_spec, no_agent, params,
    principal, push_config_params, read_body, rest_error, send_admitted,
};
use crate::a2a::{ListQuery, Mode, Sent, parse_state};
use crate::auth::Principal;
use crate::pipeline::Door;
use crate::protocol::a2a::types::SendMessageRequest;
use crate::protocol::a2a::{A2aError, Kind};
use crate::server::{ApiError, AppState};

/// A query parameter by its camelCase name, or by its proto (snake_case) name.
fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> Option<&'a String> {
    q.get(name).or_else(|| {
        let snake: String = name
            .chars()
            .flat_map(|c| if c.is_ascii_uppercase() { vec!['_', c.to_ascii_lowercase()] } else { vec![c] })
            .collect();
        q.get(&snake)
    })
}

/// Query parameters of the HTTP+JSON binding, as strings.
fn query(uri: &Uri) -> Result<HashMap<String, String>, A2aError> {
    Query::<HashMap<String, String>>::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| A2aError::invalid_params(format!("the query string is malformed: {e}")))
}

fn int_param(q: &HashMap<String, String>, name: &str) -> Result<Option<i32>, A2aError> {
    param(q, name)
        .map(|v| v.parse::<i32>().map_err(|_| A2aError::invalid_params(format!("{name} must be an integer"))))
        .transpose()
}

/// `/a2a/{slug}/…`: the HTTP+JSON binding.
pub(super) async fn handle(
    State(state): State<Arc<AppState>>,
    Path((slug, rest)): Path<(String, String)>,
    caller: Result<Principal, ApiError>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let request = Rest { slug: &slug, path: &rest, method: &method, headers: &headers, uri: &uri };
    match dispatch_rest(&state, request, caller, raw).await {
        Ok(r) => r,
        Err(e) => rest_error(&e),
    }
}

enum Route<'a> {
    Send,
    Stream,
    List,
    Get(&'a str),
    Cancel(&'a str),
    Subscribe(&'a str),
    /// A task's push configs (`…/pushNotificationConfigs`), or one of them.
    Push(&'a str, Option<&'a str>),
    ExtendedCard,
}

fn route<'a>(path: &'a str, method: &Method) -> Result<Route<'a>, A2aError> {
    let path = path.trim_end_matches('/');
    let not_allowed = || {
        A2aError::new(
            Kind::MethodNotFound,
            format!("{method} is not allowed on {}", path.chars().take(80).collect::<String>()),
        )
    };
    let (route, allowed): (Route<'a>, &[Method]) = match path {
        "message:send" => (Route::Send, &[Method::POST]),
        "message:stream" => (Route::Stream, &[Method::POST]),
        "tasks" => (Route::List, &[Method::GET]),
        "extendedAgentCard" => (Route::ExtendedCard, &[Method::GET]),
        p if p.starts_with("tasks/") => {
            let rest = &p["tasks/".len()..];
            if let Some((task, configs)) = rest.split_once("/pushNotificationConfigs") {
                match configs.strip_prefix('/') {
                    Some(id) if !id.is_empty() && !id.contains('/') => {
                        (Route::Push(task, Some(id)), &[Method::GET, Method::DELETE])
                    }
                    None if configs.is_empty() => (Route::Push(task, None), &[Method::GET, Method::POST]),
                    _ => {
                        return Err(A2aError::new(
                            Kind::MethodNotFound,
                            "no such A2A resource; push configs are at tasks/{id}/pushNotificationConfigs[/{configId}]",
                        ));
                    }
                }
            } else if let Some(id) = rest.strip_suffix(":cancel") {
                (Route::Cancel(id), &[Method::POST])
            } else if let Some(id) = rest.strip_suffix(":subscribe") {
                (Route::Subscribe(id), &[Method::GET, Method::POST])
            } else if !rest.contains('/') {
                (Route::Get(rest), &[Method::GET])
            } else {
                return Err(A2aError::new(
                    Kind::MethodNotFound,
                    "no such A2A resource; see the agent card's interfaces",
                ));
            }
        }
        _ => return Err(A2aError::new(Kind::MethodNotFound, "no such A2A resource; see the agent card's interfaces")),
    };
    if !allowed.contains(method) {
        return Err(not_allowed());
    }
    Ok(route)
}

/// What an HTTP+JSON request names.
struct Rest<'a> {
    slug: &'a str,
    path: &'a str,
    method: &'a Method,
    headers: &'a HeaderMap,
    uri: &'a Uri,
}

async fn dispatch_rest(
    state: &Arc<AppState>,
    Rest { slug, path, method, headers, uri }: Rest<'_>,
    caller: Result<Principal, ApiError>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, A2aError> {
    let route = route(path, method)?;
    check_version(headers, uri)?;
    let spec = member_spec(state, slug).ok_or_else(|| no_agent(slug))?;
    let who = principal(caller)?;
    let svc = &state.a2a;
    let ok = |v: Value| json_response(StatusCode::OK, v);
    match route {
        Route::Send | Route::Stream => {
            check_content_type(headers)?;
            let raw = read_body(raw)?;
            let body: Value = serde_json::from_slice(&raw)
                .map_err(|e| A2aError::new(Kind::ParseError, format!("the body is not JSON: {e}")))?;
            if !body.is_object() {
                return Err(A2aError::invalid_params("the body must be a SendMessageRequest object"));
            }
            let req: SendMessageRequest = params(body, "SendMessageRequest")?;
            let mode = match route {
                Route::Stream => Mode::Stream,
                _ if req.configuration.as_ref().is_some_and(|c| c.return_immediately) => Mode::NonBlocking,
                _ => Mode::Blocking,
            };
            Ok(match send_admitted(state, Door::A2aRest, who, spec.slug.clone(), req, mode).await? {
                Sent::Task(t) => ok(json!({"task": t})),
                Sent::Message(m) => ok(json!({"message": m})),
                Sent::Stream(stream) => sse(stream, None, false),
            })
        }
        Route::Get(id) => {
            check_id(id)?;
            let q = query(uri)?;
            Ok(ok(serde_json::to_value(svc.get(&who, &spec.slug, id, int_param(&q, "historyLength")?).await?)
                .unwrap_or_default()))
        }
        Route::List => {
            let q = query(uri)?;
            let bool_param = |name: &str| -> Result<Option<bool>, A2aError> {
                param(&q, name)
                    .map(|v| match v.as_str() {
                        "true" => Ok(true),
                        "false" => Ok(false),
                        _ => Err(A2aError::invalid_params(format!("{name} must be true or false"))),
                    })
                    .transpose()
            };
            let list = ListQuery {
                context_id: param(&q, "contextId").cloned(),
                status: param(&q, "status").map(|s| parse_state(s)).transpose()?,
                page_size: int_param(&q, "pageSize")?,
                page_token: param(&q, "pageToken").cloned(),
                history_length: int_param(&q, "historyLength")?,
                status_timestamp_after: param(&q, "statusTimestampAfter").cloned(),
                include_artifacts: bool_param("includeArtifacts")?,
            };
            Ok(ok(serde_json::to_value(svc.list(&who, &spec.slug, &list).await?).unwrap_or_default()))
        }
        Route::Cancel(id) => {
            check_id(id)?;
            Ok(ok(serde_json::to_value(svc.cancel(&who, &spec.slug, id).await?).unwrap_or_default()))
        }
        Route::Subscribe(id) => {
            check_id(id)?;
            let stream = svc.subscribe(&who, &spec.slug, id, last_event_id(headers)?).await?;
            Ok(sse(stream, None, true))
        }
        Route::ExtendedCard => Ok(ok(extended_card(state, &spec, headers, &who)?)),
        Route::Push(task, None) if *method == Method::POST => {
            check_content_type(headers)?;
            let raw = read_body(raw)?;
            let body: Value = serde_json::from_slice(&raw)
                .map_err(|e| A2aError::new(Kind::ParseError, format!("the body is not JSON: {e}")))?;
            let c = push_config_params(body, Some(task))?;
            Ok(ok(serde_json::to_value(svc.create_push_config(&who, &spec.slug, c).await?).unwrap_or_default()))
        }
        Route::Push(task, None) => {
            let q = query(uri)?;
            let list = svc
                .list_push_configs(
                    &who,
                    &spec.slug,
                    task,
                    int_param(&q, "pageSize")?,
                    param(&q, "pageToken").map(String::as_str),
                )
                .await?;
            Ok(ok(serde_json::to_value(list).unwrap_or_default()))
        }
        Route::Push(task, Some(id)) if *method == Method::DELETE => {
            svc.delete_push_config(&who, &spec.slug, task, id).await?;
            Ok(ok(json!({})))
        }
        Route::Push(task, Some(id)) => {
            let c = svc.get_push_config(&who, &spec.slug, task, id).await?;
            Ok(ok(serde_json::to_value(c).unwrap_or_default()))
        }
    }
}
