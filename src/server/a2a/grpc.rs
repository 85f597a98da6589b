//! The gRPC binding (A2A 1.0 §10): `/lf.a2a.v1.A2AService/{Method}` on the
//! service's own listener (HTTP/2 without TLS, or behind a TLS proxy), every
//! RPC mapped onto the same [`crate::a2a::A2aService`] operation as the
//! JSON-RPC and HTTP+JSON bindings.
//!
//! - The agent is the request's `tenant`: its slug (the card's GRPC
//!   interface names it); none (unless `[a2a] grpc_default_agent` names
//!   one) or an unknown one is NOT_FOUND.
//! - `authorization: Bearer …` metadata names the caller as the
//!   `Authorization` header does; `a2a-version` metadata is the version
//!   check (missing means 0.3, refused as the other bindings refuse it).
//! - Errors are gRPC statuses with a `google.rpc.ErrorInfo` detail
//!   ([`crate::a2a::grpc::status`]); a message that is not protobuf is
//!   INVALID_ARGUMENT, one over the body limit RESOURCE_EXHAUSTED.

use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::http::Uri;
use futures::{Stream, StreamExt};
use serde_json::json;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use super::sse::events;
use super::{TaskIdParams, anonymous_user, check_id, check_version, extended_card, member_spec, no_agent};
use crate::a2a::grpc::pb::a2a_service_server::{A2aService as GrpcService, A2aServiceServer};
use crate::a2a::grpc::{SERVICE, from_proto, pb, status, to_proto};
use crate::a2a::{ListQuery, Mode, Sent};
use crate::auth::Principal;
use crate::config::AgentSpec;
use crate::pipeline::Door;
use crate::protocol::a2a::types::SendMessageRequest;
use crate::protocol::a2a::{A2aError, Kind};
use crate::server::AppState;

/// A stream of responses as the generated server wants it.
type Responses = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// The gRPC route: every method of `lf.a2a.v1.A2AService`.
pub(super) fn routes<S: Clone + Send + Sync + 'static>(state: &Arc<AppState>) -> Router<S> {
    let limit = state.body_limit;
    // under the HTTP body limit, so that tonic answers RESOURCE_EXHAUSTED before the limit cuts the body off
    let server = A2aServiceServer::new(Grpc { state: state.clone() })
        .max_decoding_message_size(limit.saturating_sub(64).max(1024));
    Router::new()
        .route_service(&format!("/{SERVICE}/{{method}}"), server)
        .layer(axum::middleware::map_response(move |res| too_large(res, limit)))
        .layer(axum::middleware::map_request(host_from_authority))
}

/// HTTP/2 carries the host as the `:authority` (in the URI), which gRPC's
/// metadata does not show: kept as `host`, so the extended card names the
/// address the caller reached, as the HTTP bindings' cards do.
async fn host_from_authority(mut req: axum::extract::Request) -> axum::extract::Request {
    if !req.headers().contains_key(axum::http::header::HOST)
        && let Some(host) = req.uri().authority().and_then(|a| axum::http::HeaderValue::from_str(a.as_str()).ok())
    {
        req.headers_mut().insert(axum::http::header::HOST, host);
    }
    req
}

/// tonic answers a message over the limit with OUT_OF_RANGE; gRPC's
/// convention (and A2A's clients) expect RESOURCE_EXHAUSTED.
async fn too_large(res: axum::response::Response, limit: usize) -> axum::response::Response {
    let h = res.headers();
    let over = h.get("grpc-status").is_some_and(|v| v == "11")
        && h.get("grpc-message").and_then(|v| v.to_str().ok()).is_some_and(|m| m.contains("length%20too%20large"));
    if !over {
        return res;
    }
    Status::resource_exhausted(format!(
        "the message is larger than this service accepts ({limit} bytes with the HTTP body); send less input, or files by URL"
    ))
    .into_http()
}

/// The service behind the generated server.
struct Grpc {
    state: Arc<AppState>,
}

impl Grpc {
    /// What every RPC checks first, in the JSON-RPC binding's order: the
    /// protocol version, the agent (the tenant), the caller.
    async fn begin(&self, metadata: &MetadataMap, tenant: &str) -> Result<(Arc<AgentSpec>, Principal), Status> {
        self.check(metadata, tenant).await.map_err(|e| status(&e))
    }

    async fn check(&self, metadata: &MetadataMap, tenant: &str) -> Result<(Arc<AgentSpec>, Principal), A2aError> {
        let headers = metadata.clone().into_headers();
        check_version(&headers, &Uri::from_static("/"))?;
        let default = self.state.runtime.config().a2a.grpc_default_agent.clone();
        let tenant = match (tenant, default) {
            ("", Some(agent)) => agent,
            ("", None) => {
                return Err(A2aError::new(
                    Kind::MethodNotFound,
                    "the request names no agent: set `tenant` to the agent's slug (the tenant of the GRPC interface in its card)",
                ));
            }
            (t, _) => t.to_string(),
        };
        let tenant = tenant.as_str();
        let spec = member_spec(&self.state, tenant).ok_or_else(|| no_agent(tenant))?;
        Ok((spec, self.caller(metadata).await?))
    }

    /// The caller from `authorization: Bearer …`, else the anonymous user.
    async fn caller(&self, metadata: &MetadataMap) -> Result<Principal, A2aError> {
        let Some(value) = metadata.get("authorization") else {
            return match anonymous_user(&self.state) {
                Some(user) => Ok(Principal::Anonymous(user)),
                None => Err(A2aError::new(
                    Kind::Unauthenticated,
                    "missing 'authorization: Bearer <token>' metadata; agents use their service token, users theirs",
                )),
            };
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.trim().split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                A2aError::new(Kind::Unauthenticated, "the authorization metadata must be 'Bearer <token>'")
            })?;
        self.state.tokens.authenticate(token).await.map_err(A2aError::from)
    }

    async fn send(&self, request: Request<pb::SendMessageRequest>, stream: bool) -> Result<Sent, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        let req: SendMessageRequest = from_proto(&body, "SendMessageRequest").map_err(|e| status(&e))?;
        let mode = if stream {
            Mode::Stream
        } else if req.configuration.as_ref().is_some_and(|c| c.return_immediately) {
            Mode::NonBlocking
        } else {
            Mode::Blocking
        };
        super::send_admitted(&self.state, Door::A2aGrpc, who, spec.slug.clone(), req, mode)
            .await
            .map_err(|e| status(&e))
    }

    /// GetExtendedAgentCard: the card with the rails' parameters for this
    /// caller, as the other bindings answer it (the `host` the request
    /// reached names the interfaces).
    async fn extended_agent_card(&self, metadata: &MetadataMap, tenant: &str) -> Result<pb::AgentCard, Status> {
        let (spec, who) = self.begin(metadata, tenant).await?;
        let card = extended_card(&self.state, &spec, &metadata.clone().into_headers(), &who).map_err(|e| status(&e))?;
        to_proto(&card).map_err(|e| status(&e))
    }
}

/// A subscription's events as gRPC messages.
fn responses(sub: crate::a2a::Subscription, subscription: bool) -> Responses {
    Box::pin(events(sub, subscription).map(|(_, ev)| to_proto::<_, pb::StreamResponse>(&ev).map_err(|e| status(&e))))
}

fn one(response: &impl serde::Serialize) -> Responses {
    let item = to_proto::<_, pb::StreamResponse>(response).map_err(|e| status(&e));
    Box::pin(futures::stream::once(async move { item }))
}

fn task_id(id: &str) -> Result<(), Status> {
    check_id(id).map_err(|e| status(&e))
}

#[tonic::async_trait]
impl GrpcService for Grpc {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let body = match self.send(request, false).await? {
            Sent::Task(t) => json!({"task": t}),
            Sent::Message(m) => json!({"message": m}),
            Sent::Stream(_) => {
                return Err(status(&A2aError::new(Kind::Internal, "a blocking send was answered with a stream")));
            }
        };
        to_proto(&body).map(Response::new).map_err(|e| status(&e))
    }

    type SendStreamingMessageStream = Responses;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Responses>, Status> {
        Ok(Response::new(match self.send(request, true).await? {
            Sent::Stream(sub) => responses(sub, false),
            Sent::Task(t) => one(&json!({"task": t})),
            Sent::Message(m) => one(&json!({"message": m})),
        }))
    }

    async fn get_task(&self, request: Request<pb::GetTaskRequest>) -> Result<Response<pb::Task>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        let q = TaskIdParams { id: body.id, history_length: body.history_length };
        task_id(&q.id)?;
        let task = self.state.a2a.get(&who, &spec.slug, &q.id, q.history_length).await.map_err(|e| status(&e))?;
        to_proto(&task).map(Response::new).map_err(|e| status(&e))
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        let q: ListQuery = from_proto(&body, "ListTasksRequest").map_err(|e| status(&e))?;
        let list = self.state.a2a.list(&who, &spec.slug, &q).await.map_err(|e| status(&e))?;
        to_proto(&list).map(Response::new).map_err(|e| status(&e))
    }

    async fn cancel_task(&self, request: Request<pb::CancelTaskRequest>) -> Result<Response<pb::Task>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        task_id(&body.id)?;
        let task = self.state.a2a.cancel(&who, &spec.slug, &body.id).await.map_err(|e| status(&e))?;
        to_proto(&task).map(Response::new).map_err(|e| status(&e))
    }

    type SubscribeToTaskStream = Responses;

    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Responses>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        task_id(&body.id)?;
        let sub = self.state.a2a.subscribe(&who, &spec.slug, &body.id, None).await.map_err(|e| status(&e))?;
        Ok(Response::new(responses(sub, true)))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        let config = from_proto(&body, "TaskPushNotificationConfig").map_err(|e| status(&e))?;
        let made = self.state.a2a.create_push_config(&who, &spec.slug, config).await.map_err(|e| status(&e))?;
        Ok(Response::new(to_proto(&made).map_err(|e| status(&e))?))
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        let config =
            self.state.a2a.get_push_config(&who, &spec.slug, &body.task_id, &body.id).await.map_err(|e| status(&e))?;
        Ok(Response::new(to_proto(&config).map_err(|e| status(&e))?))
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        let page_size = (body.page_size != 0).then_some(body.page_size);
        let page_token = Some(body.page_token.as_str()).filter(|t| !t.is_empty());
        let list = self
            .state
            .a2a
            .list_push_configs(&who, &spec.slug, &body.task_id, page_size, page_token)
            .await
            .map_err(|e| status(&e))?;
        Ok(Response::new(to_proto(&list).map_err(|e| status(&e))?))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pbjson_types::Empty>, Status> {
        let (metadata, _, body) = request.into_parts();
        let (spec, who) = self.begin(&metadata, &body.tenant).await?;
        self.state.a2a.delete_push_config(&who, &spec.slug, &body.task_id, &body.id).await.map_err(|e| status(&e))?;
        Ok(Response::new(pbjson_types::Empty {}))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        let card = self.extended_agent_card(request.metadata(), &request.get_ref().tenant).await?;
        Ok(Response::new(card))
    }
}
