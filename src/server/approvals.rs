//! Durable trees over HTTP: the approvals people answer, cancelling a tree,
//! and a tree's journal of steps.
//!
//! | route | who | what |
//! |---|---|---|
//! | `GET /v1/approvals[?state=pending\|all]` | user token (own), admin (all) | `{"approvals":[…]}` |
//! | `POST /v1/approvals/{id}` | the approval's user, admin | `{"decision":"approve"\|"reject","reason"?}` → `{"approval","resumed"}` |
//! | `POST /v1/trees/{id}/cancel` | the tree's user, admin, the agent that sent it | `{"cancelled_steps":n}` |
//! | `GET /v1/trees/{id}/steps` | the tree's user, admin (bodies too); an agent that took part (no bodies) | `{"root_id","state","resumed","steps","approvals"}` |
//!
//! Each step says how many times a restarted process resumed it
//! (`resumes`), and `resumed` adds them up for the tree, so the dashboard
//! can mark a tree a restart resumed. A count tells nothing of what a step
//! carried, so an outline shows it too. Replays are in [`super::trees`].
//!
//! Service tokens have no approvals (`UNAUTHENTICATED`, as at `/v1/chat`
//! and `/v1/money`): a person answers them. An answer is recorded by
//! [`Runtime::decide`] and the tree then resumes in the background, so the
//! caller is answered at once and follows the tree on `/v1/events` or here.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::extract::Body;
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::protocol::{ErrorCode, IdError, RequestId};
use crate::runtime::Runtime;
use crate::store::{Approval, StepState, TreeStep, now_ms};

/// The longest reason kept with a decision, in characters.
pub const MAX_REASON_CHARS: usize = 2000;
/// How often a resume that found its tree still running here tries again.
const RESUME_RETRY: Duration = Duration::from_millis(250);

fn people_only(caller: &Principal) -> Result<(), ApiError> {
    if caller.agent().is_some() {
        return Err(ApiError::unauthenticated(
            "approvals are answered by the tree's user or an admin; a service token has none",
        ));
    }
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    state: Option<String>,
    /// The page's EventSource-style token; read by the `Principal` extractor.
    #[serde(rename = "access_token")]
    _access_token: Option<String>,
}

/// `GET /v1/approvals[?state=pending|all]`: pending ones unless `state=all`, newest first as the store keeps them.
pub async fn list(State(state): State<Arc<AppState>>, caller: Principal, uri: Uri) -> Result<Json<Value>, ApiError> {
    people_only(&caller)?;
    let Query(q) = Query::<ListQuery>::try_from_uri(&uri)
        .map_err(|e| ApiError::invalid(format!("invalid query: {}", e.body_text())))?;
    let pending = match q.state.as_deref() {
        None | Some("pending") => true,
        Some("all") => false,
        Some(other) => {
            return Err(ApiError::invalid(format!("state '{other}' is not a filter: use state=pending or state=all")));
        }
    };
    let approvals = state.runtime.approvals(&caller, pending).await?;
    Ok(Json(json!({ "approvals": approvals })))
}

/// A person's answer, as `POST /v1/approvals/{id}` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether they approve.
    pub approve: bool,
    /// Why, if they said.
    pub reason: Option<String>,
}

/// Reads `{"decision":"approve"|"reject","reason"?}`; any other field, or a
/// field of the wrong kind, is `INVALID_REQUEST` naming it.
pub fn parse_decision(raw: &[u8]) -> Result<Decision, ApiError> {
    let shape = "{\"decision\":\"approve\"|\"reject\",\"reason\"?}";
    let mut body = super::extract::json_object(raw, shape, &["decision", "reason"])?;
    let approve = match body.remove("decision") {
        Some(Value::String(d)) if d == "approve" => true,
        Some(Value::String(d)) if d == "reject" => false,
        None => return Err(ApiError::invalid("missing field 'decision': \"approve\" or \"reject\"")),
        Some(other) => {
            return Err(ApiError::invalid(format!("field 'decision' must be \"approve\" or \"reject\", not {other}")));
        }
    };
    let reason = super::extract::optional_text(body.remove("reason"), "reason", MAX_REASON_CHARS)?;
    Ok(Decision { approve, reason })
}

/// `POST /v1/approvals/{id}`: records the answer, then resumes its tree in the background.
pub async fn decide(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
    Body(raw): Body,
) -> Result<Json<Value>, ApiError> {
    people_only(&caller)?;
    let d = parse_decision(&raw)?;
    let approval = state.runtime.decide(&caller, &id, d.approve, d.reason.as_deref()).await?;
    let runtime = state.runtime.clone();
    let root = approval.root_id;
    tokio::spawn(async move { resume(&runtime, root).await }.in_current_span());
    Ok(Json(json!({ "approval": approval, "resumed": true })))
}

/// Resumes tree `root` to its end. A tree still running here (another
/// answer resumed it a moment ago) is tried again once that run is over: it
/// may have paused again before this answer was recorded.
async fn resume(runtime: &Runtime, root: RequestId) {
    loop {
        match runtime.resume_tree(root).await {
            Ok(r) => {
                tracing::info!(root_id = %root, status = r.status.as_str(), "tree resumed after an approval");
                return;
            }
            Err(e) if e.code == ErrorCode::AlreadyDecided => {
                let Ok(Some(step)) = runtime.store().step(root).await else { return };
                if step.state.is_terminal() || step.deadline_at <= now_ms() {
                    return;
                }
                tokio::time::sleep(RESUME_RETRY).await;
            }
            Err(e) => {
                tracing::warn!(root_id = %root, code = %e.code, "tree not resumed after an approval: {}", e.message);
                return;
            }
        }
    }
}

fn tree_id(id: &str) -> Result<RequestId, ApiError> {
    id.parse().map_err(|e: IdError| ApiError::invalid(format!("tree id: {e}")))
}

/// `POST /v1/trees/{id}/cancel`.
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let root = tree_id(&id)?;
    let n = state.runtime.cancel_tree(&caller, root).await?;
    Ok(Json(json!({ "cancelled_steps": n })))
}

/// How much of a tree `caller` may see: everything, the steps without their bodies, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sight {
    /// Its user or an admin: every field.
    Whole,
    /// An agent that took part: ids, agents, states and times.
    Outline,
    /// Someone else.
    None,
}

/// What `caller` may see of a tree made of `steps`.
pub fn sight(caller: &Principal, steps: &[TreeStep]) -> Sight {
    match caller {
        Principal::Admin => Sight::Whole,
        Principal::Agent(a) => {
            let service = format!("service:{a}");
            if steps.iter().any(|s| s.caller == service || s.target == a.as_str()) {
                Sight::Outline
            } else {
                Sight::None
            }
        }
        p => match p.user() {
            Some(u) if steps.iter().all(|s| &s.user_id == u) => Sight::Whole,
            _ => Sight::None,
        },
    }
}

fn body_json(text: Option<&str>) -> Value {
    // stored as JSON (a child's envelope is not kept: empty); should one not parse, it is shown as the text it is
    match text.map(str::trim) {
        None | Some("") => Value::Null,
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string())),
    }
}

/// One step as `GET /v1/trees/{id}/steps` shows it.
pub fn step_json(step: &TreeStep, sight: Sight) -> Value {
    let mut v = Map::new();
    v.insert("request_id".into(), json!(step.request_id));
    v.insert("parent_id".into(), json!(step.parent_id));
    v.insert("target".into(), json!(step.target));
    v.insert("state".into(), json!(step.state.as_str()));
    v.insert("created_at".into(), json!(step.created_at));
    v.insert("updated_at".into(), json!(step.updated_at));
    v.insert("deadline_at".into(), json!(step.deadline_at));
    v.insert("resumes".into(), json!(step.resumes));
    if sight == Sight::Whole {
        v.insert("user_id".into(), json!(step.user_id));
        v.insert("entry".into(), json!(step.entry));
        v.insert("caller".into(), json!(step.caller));
        v.insert("request".into(), body_json(Some(&step.request)));
        v.insert("response".into(), body_json(step.response.as_deref()));
    }
    Value::Object(v)
}

/// `GET /v1/trees/{id}/steps`: the journal of the tree rooted at `id`. A
/// tree the caller may not see and one that does not exist get the same answer.
pub async fn steps(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let root = tree_id(&id)?;
    let store = state.runtime.store();
    let steps = store.tree_steps(root).await.map_err(crate::DelegationError::from)?;
    let sight = sight(&caller, &steps);
    if steps.is_empty() || sight == Sight::None {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::NotFound,
            format!("no tree {root} that you may see"),
        ));
    }
    let top = steps.iter().find(|s| s.request_id == root).map(|s| s.state);
    let approvals: Vec<Approval> = if sight == Sight::Whole {
        let user = &steps[0].user_id;
        store
            .approvals(Some(user), false)
            .await
            .map_err(crate::DelegationError::from)?
            .into_iter()
            .filter(|a| a.root_id == root)
            .collect()
    } else {
        Vec::new()
    };
    let resumed: u64 = steps.iter().map(|s| u64::from(s.resumes)).sum();
    Ok(Json(json!({
        "root_id": root,
        "state": top.map(StepState::as_str),
        "resumed": resumed,
        "steps": steps.iter().map(|s| step_json(s, sight)).collect::<Vec<_>>(),
        "approvals": approvals,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AgentSlug, UserId};

    fn code(r: Result<Decision, ApiError>) -> (StatusCode, ErrorCode, String) {
        let e = r.unwrap_err();
        (e.status, e.error.code, e.error.message)
    }

    #[test]
    fn a_decision_is_approve_or_reject_with_an_optional_reason() {
        assert_eq!(parse_decision(br#"{"decision":"approve"}"#).unwrap(), Decision { approve: true, reason: None });
        assert_eq!(
            parse_decision(br#"{"decision":"reject","reason":"not today"}"#).unwrap(),
            Decision { approve: false, reason: Some("not today".into()) }
        );
        assert_eq!(parse_decision(br#"{"decision":"reject","reason":null}"#).unwrap().reason, None);
    }

    #[test]
    fn a_bad_decision_is_refused_naming_the_field() {
        for (body, names) in [
            (&br#"{"decision":"maybe"}"#[..], "'decision'"),
            (br#"{"decision":true}"#, "'decision'"),
            (br#"{}"#, "'decision'"),
            (br#"{"reason":"x"}"#, "'decision'"),
            (br#"{"decision":"approve","reason":5}"#, "'reason'"),
            (br#"{"decision":"approve","approved":true}"#, "'approved'"),
            (br#"["approve"]"#, "JSON object"),
            (b"approve", "must be JSON"),
            (b"", "must be JSON"),
        ] {
            let (status, code, message) = code(parse_decision(body));
            assert_eq!((status, code), (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest), "{body:?}");
            assert!(message.contains(names), "{}: {message}", String::from_utf8_lossy(body));
        }
        let long = format!(r#"{{"decision":"reject","reason":"{}"}}"#, "x".repeat(MAX_REASON_CHARS + 1));
        assert!(code(parse_decision(long.as_bytes())).2.contains("'reason' is longer"));
    }

    fn step(user: &str, caller: &str, target: &str) -> TreeStep {
        let id = RequestId::new();
        TreeStep {
            request_id: id,
            root_id: id,
            parent_id: None,
            user_id: UserId::parse(user).unwrap(),
            target: target.into(),
            state: StepState::Waiting,
            entry: "user".into(),
            caller: caller.into(),
            request: r#"{"objective":"Mail <EMAIL_1>"}"#.into(),
            response: None,
            deadline_at: 3,
            budget: 100,
            attempts: 0,
            reads: None,
            resumes: 0,
            pii: None,
            created_at: 1,
            updated_at: 2,
            owner: None,
        }
    }

    #[test]
    fn who_sees_how_much_of_a_tree() {
        let steps = [step("alice", "user:alice", "boss"), step("alice", "user:alice", "mailer")];
        let user = |u: &str| Principal::User(UserId::parse(u).unwrap());
        let agent = |a: &str| Principal::Agent(AgentSlug::parse(a).unwrap());
        assert_eq!(sight(&user("alice"), &steps), Sight::Whole);
        assert_eq!(sight(&Principal::Admin, &steps), Sight::Whole);
        assert_eq!(sight(&user("bob"), &steps), Sight::None);
        assert_eq!(sight(&agent("mailer"), &steps), Sight::Outline);
        assert_eq!(sight(&agent("tag-ai"), &steps), Sight::None);
        let sent = [step("alice", "service:prime-boss", "boss")];
        assert_eq!(sight(&agent("prime-boss"), &sent), Sight::Outline);

        let mut child = step("alice", "user:alice", "mailer");
        child.request = String::new();
        assert_eq!(step_json(&child, Sight::Whole)["request"], Value::Null, "a child's envelope is not kept");
        let whole = step_json(&steps[0], Sight::Whole);
        assert_eq!(whole["request"]["objective"], "Mail <EMAIL_1>");
        assert_eq!((whole["state"].as_str(), whole["deadline_at"].as_i64()), (Some("waiting"), Some(3)));
        let outline = step_json(&steps[0], Sight::Outline);
        assert!(
            outline.get("request").is_none() && outline.get("response").is_none() && outline.get("caller").is_none()
        );
        assert_eq!(outline["target"], "boss");
        // how often a restart resumed it tells nothing of a body: the outline has it too
        let resumed = TreeStep { resumes: 2, ..steps[0].clone() };
        assert_eq!(step_json(&resumed, Sight::Outline)["resumes"].as_u64(), Some(2));
        assert_eq!(step_json(&steps[1], Sight::Whole)["resumes"].as_u64(), Some(0));
    }
}
