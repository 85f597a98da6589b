//! A2A's gRPC binding on a real `server::serve` (127.0.0.1, port 0): the
//! official a2a-sdk Python client over gRPC, and a tonic client for the
//! error shapes (version, garbage, unknown task and agent, size, tokens).

use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use serde_json::Value;
use switchboard::Runtime;
use switchboard::protocol::a2a::grpc::pb::a2a_service_client::A2aServiceClient;
use switchboard::protocol::a2a::grpc::{ErrorInfo, RpcStatus, pb};
use switchboard::server::{AppState, serve};
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

use crate::a2a::{ALICE, BOB, team_config};

/// A served team (the built-in one, the conformance agent, tokens) and its address.
struct Served {
    addr: std::net::SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn served(body_limit: Option<usize>) -> Served {
    let rt = Runtime::builder().config(team_config()).build().unwrap();
    let auth = rt.config().auth.clone();
    let mut state = AppState::new(rt);
    if let Some(limit) = body_limit {
        state.body_limit = limit;
    }
    let state = Arc::new(state);
    state.tokens.load_config(&auth).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(state, listener, Duration::from_millis(200), async move {
        let _ = stopped.await;
    }));
    Served { addr, _stop: stop }
}

async fn client(s: &Served) -> A2aServiceClient<Channel> {
    let channel = Channel::from_shared(format!("http://{}", s.addr)).unwrap().connect().await.unwrap();
    A2aServiceClient::new(channel)
}

/// A request with the version and (optionally) a token.
fn req<T>(body: T, version: Option<&str>, token: Option<&str>) -> tonic::Request<T> {
    let mut r = tonic::Request::new(body);
    if let Some(v) = version {
        r.metadata_mut().insert("a2a-version", MetadataValue::try_from(v).unwrap());
    }
    if let Some(t) = token {
        r.metadata_mut().insert("authorization", MetadataValue::try_from(format!("Bearer {t}")).unwrap());
    }
    r
}

fn ok<T>(body: T) -> tonic::Request<T> {
    req(body, Some("1.0"), Some(ALICE))
}

/// The ErrorInfo in a status's details: (reason, domain).
fn info(s: &tonic::Status) -> (String, String) {
    let status = RpcStatus::decode(s.details()).expect("a google.rpc.Status in grpc-status-details-bin");
    let any = status.details.iter().find(|a| a.type_url.ends_with("google.rpc.ErrorInfo")).expect("an ErrorInfo");
    let i = ErrorInfo::decode(any.value.as_ref()).unwrap();
    (i.reason, i.domain)
}

fn text_message(id: &str, text: &str) -> pb::Message {
    pb::Message {
        message_id: id.into(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part { content: Some(pb::part::Content::Text(text.into())), ..Default::default() }],
        ..Default::default()
    }
}

fn send(tenant: &str, id: &str, text: &str) -> pb::SendMessageRequest {
    pb::SendMessageRequest { tenant: tenant.into(), message: Some(text_message(id, text)), ..Default::default() }
}

fn get(tenant: &str, id: &str) -> pb::GetTaskRequest {
    pb::GetTaskRequest { tenant: tenant.into(), id: id.into(), history_length: None }
}

#[tokio::test]
async fn a_tonic_client_sends_streams_and_gets_over_grpc() {
    let s = served(None).await;
    let mut c = client(&s).await;
    let sent = c.send_message(ok(send("tag-ai", "g-1", "2025-10-01 Starbucks 4.50"))).await.unwrap().into_inner();
    let Some(pb::send_message_response::Payload::Task(task)) = sent.payload else { panic!("a task: {sent:?}") };
    assert_eq!(task.status.as_ref().unwrap().state, pb::TaskState::Completed as i32);
    let text: Vec<String> = task
        .artifacts
        .iter()
        .flat_map(|a| &a.parts)
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert!(text.concat().contains("Dining - Coffee"), "{text:?}");
    let got = c.get_task(ok(get("tag-ai", &task.id))).await.unwrap().into_inner();
    assert_eq!((got.id.as_str(), got.context_id.as_str()), (task.id.as_str(), task.context_id.as_str()));

    let mut stream =
        c.send_streaming_message(ok(send("tag-ai", "g-2", "2025-10-02 Uber 12.00"))).await.unwrap().into_inner();
    let mut kinds = Vec::new();
    let mut last_state = None;
    while let Some(ev) = stream.message().await.unwrap() {
        match ev.payload.unwrap() {
            pb::stream_response::Payload::Task(_) => kinds.push("task"),
            pb::stream_response::Payload::Message(_) => kinds.push("message"),
            pb::stream_response::Payload::StatusUpdate(u) => {
                kinds.push("status");
                last_state = u.status.map(|s| s.state);
            }
            pb::stream_response::Payload::ArtifactUpdate(_) => kinds.push("artifact"),
        }
    }
    assert_eq!(kinds.first(), Some(&"task"), "{kinds:?}");
    assert!(kinds.contains(&"artifact"), "{kinds:?}");
    assert_eq!(last_state, Some(pb::TaskState::Completed as i32), "the stream ends at the terminal state");

    let list = c
        .list_tasks(ok(pb::ListTasksRequest { tenant: "tag-ai".into(), ..Default::default() }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.tasks.len(), 2, "alice's two tasks with tag-ai");
}

#[tokio::test]
async fn grpc_errors_are_statuses_with_error_info_and_never_panics() {
    let s = served(Some(64 * 1024)).await;
    let mut c = client(&s).await;

    // the version: missing (taken as 0.3) and wrong are refused before anything else
    for version in [None, Some("0.3"), Some("2.0")] {
        let e = c.get_task(req(get("tag-ai", "x"), version, Some(ALICE))).await.unwrap_err();
        assert_eq!(e.code(), Code::Unimplemented, "{version:?}: A2A 1.0.0's table, the TCK's GRPC-ERR-002: {e:?}");
        assert_eq!(info(&e), ("VERSION_NOT_SUPPORTED".into(), "a2a-protocol.org".into()));
        assert!(e.message().contains("A2A-Version"), "{}", e.message());
    }
    // an unknown task
    let e = c.get_task(ok(get("tag-ai", "no-such-task"))).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(info(&e).0, "TASK_NOT_FOUND");
    let e = c
        .cancel_task(ok(pb::CancelTaskRequest { tenant: "tag-ai".into(), id: "nope".into(), metadata: None }))
        .await
        .unwrap_err();
    assert_eq!((e.code(), info(&e).0.as_str()), (Code::NotFound, "TASK_NOT_FOUND"));
    // no agent, an unknown agent
    for tenant in ["", "no-such-agent"] {
        let e = c.get_task(ok(get(tenant, "x"))).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound, "{tenant:?}: {e:?}");
        assert!(e.message().contains("agent"), "{}", e.message());
    }
    // no token, a wrong one
    for token in [None, Some("not-a-token")] {
        let e = c.get_task(req(get("tag-ai", "x"), Some("1.0"), token)).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{token:?}: {e:?}");
    }
    // a message without a role or parts, and one without a message
    let mut bad = send("tag-ai", "g-3", "x");
    bad.message.as_mut().unwrap().role = 0;
    let e = c.send_message(ok(bad)).await.unwrap_err();
    assert_eq!((e.code(), info(&e).0.as_str()), (Code::InvalidArgument, "INVALID_PARAMS"), "{e:?}");
    let e = c.send_message(ok(pb::SendMessageRequest { tenant: "tag-ai".into(), ..Default::default() })).await;
    assert_eq!(e.unwrap_err().code(), Code::InvalidArgument);
    // a push config of a task that is not there; the extended card needs a caller
    let e = c
        .get_task_push_notification_config(ok(pb::GetTaskPushNotificationConfigRequest {
            tenant: "tag-ai".into(),
            task_id: "t".into(),
            id: "p".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!((e.code(), info(&e).0.as_str()), (Code::NotFound, "TASK_NOT_FOUND"), "{e:?}");
    let e = c
        .get_extended_agent_card(req(pb::GetExtendedAgentCardRequest { tenant: "tag-ai".into() }, Some("1.0"), None))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    // over the size limit
    let big = send("tag-ai", "g-4", &"x".repeat(100 * 1024));
    let e = c.send_message(ok(big)).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    // bytes that are not the request message: a wrong wire type where the id (a string) goes
    let e = garbage(&s).await;
    assert_eq!((e.code(), info(&e).0.as_str()), (Code::InvalidArgument, "INVALID_PARAMS"), "{e:?}");
    assert!(e.message().contains("protobuf"), "{}", e.message());
    // and the server still answers
    let e = c.get_task(ok(get("tag-ai", "still-here"))).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
}

/// A message whose field 2 (GetTaskRequest.id, a string) is a fixed32.
#[derive(Clone, PartialEq, prost::Message)]
struct Garbage {
    #[prost(fixed32, tag = "2")]
    id: u32,
}

async fn garbage(s: &Served) -> tonic::Status {
    let channel = Channel::from_shared(format!("http://{}", s.addr)).unwrap().connect().await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/lf.a2a.v1.A2AService/GetTask");
    let codec = tonic_prost::ProstCodec::<Garbage, pb::Task>::default();
    grpc.unary(ok(Garbage { id: 7 }), path, codec).await.unwrap_err()
}

/// Whether python3 has the a2a-sdk with gRPC.
fn sdk_available() -> bool {
    crate::support::python_has("a2a.client.transports.grpc, grpc, httpx", "'a2a-sdk[grpc]'")
}

#[tokio::test]
async fn the_official_a2a_sdk_client_picks_grpc_from_the_card_and_sends_streams_gets_and_cancels() {
    if !sdk_available() {
        return;
    }
    let s = served(None).await;
    let script = format!("{}/tests/it/a2a_grpc/sdk_client.py", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("python3").args([&script, &format!("http://{}", s.addr), ALICE]).output(),
    )
    .await
    .expect("the SDK client finishes")
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let addr = s.addr.to_string();
    assert_eq!(v["interface"]["url"], addr.as_str(), "{v}");
    assert_eq!(v["interface"]["tenant"], "tag-ai");
    assert_eq!(v["interface"]["chosen"], addr.as_str(), "the factory chose the GRPC interface");
    assert_eq!(v["interface"]["transport"], "GrpcTransport");
    assert_eq!(v["send_state"], "TASK_STATE_COMPLETED", "{v}");
    assert!(v["send_artifacts"][0].as_str().unwrap().contains("Dining - Coffee"), "{v}");
    assert_eq!(v["get_same_id"], true);
    assert_eq!(v["get_state"], "TASK_STATE_COMPLETED");
    let kinds: Vec<&str> = v["stream_kinds"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"task"), "{v}");
    assert!(kinds.contains(&"artifact_update"), "{v}");
    assert_eq!(v["stream_states"].as_array().unwrap().last().unwrap(), "TASK_STATE_COMPLETED");
    assert_eq!(v["started_state"], "TASK_STATE_WORKING");
    assert_eq!(v["cancel_state"], "TASK_STATE_CANCELED");
    assert_eq!(v["missing"]["type"], "TaskNotFoundError", "the SDK maps the ErrorInfo: {v}");
    assert!(v["no_token"]["message"].as_str().unwrap().contains("UNAUTHENTICATED"), "{v}");
    assert!(v["bad_tenant"]["message"].as_str().unwrap().contains("no agent 'no-such-agent'"), "{v}");
}

/// Push configs and the extended card over gRPC: the same service methods
/// as the HTTP bindings, owner-checked the same way.
#[tokio::test]
async fn push_configs_and_the_extended_card_over_grpc() {
    let s = served(None).await;
    let mut c = client(&s).await;
    let sent = c.send_message(ok(send("tag-ai", "g-push", "2025-10-01 Starbucks 4.50"))).await.unwrap().into_inner();
    let Some(pb::send_message_response::Payload::Task(task)) = sent.payload else { panic!("a task: {sent:?}") };
    let config = |url: &str| pb::TaskPushNotificationConfig {
        tenant: "tag-ai".into(),
        task_id: task.id.clone(),
        url: url.into(),
        token: "hook-token".into(),
        ..Default::default()
    };
    // an address the SSRF check refuses
    let e = c.create_task_push_notification_config(ok(config("http://127.0.0.1:9/hook"))).await.unwrap_err();
    assert_eq!((e.code(), info(&e).0.as_str()), (Code::InvalidArgument, "INVALID_PARAMS"), "{e:?}");
    // one it takes (a name that does not resolve here is checked at each delivery)
    let made = c
        .create_task_push_notification_config(ok(config("https://hooks.example.invalid/a2a")))
        .await
        .unwrap()
        .into_inner();
    assert!(!made.id.is_empty());
    assert_eq!((made.task_id.as_str(), made.token.as_str()), (task.id.as_str(), "hook-token"));
    let key = |id: &str| pb::GetTaskPushNotificationConfigRequest {
        tenant: "tag-ai".into(),
        task_id: task.id.clone(),
        id: id.into(),
    };
    let got = c.get_task_push_notification_config(ok(key(&made.id))).await.unwrap().into_inner();
    assert_eq!(got.url, "https://hooks.example.invalid/a2a");
    let list = |token: &str| {
        req(
            pb::ListTaskPushNotificationConfigsRequest {
                tenant: "tag-ai".into(),
                task_id: task.id.clone(),
                ..Default::default()
            },
            Some("1.0"),
            Some(token),
        )
    };
    let listed = c.list_task_push_notification_configs(list(ALICE)).await.unwrap().into_inner();
    assert_eq!(listed.configs.len(), 1);
    // another user sees no such task
    let e = c.list_task_push_notification_configs(list(BOB)).await.unwrap_err();
    assert_eq!((e.code(), info(&e).0.as_str()), (Code::NotFound, "TASK_NOT_FOUND"), "{e:?}");
    c.delete_task_push_notification_config(ok(pb::DeleteTaskPushNotificationConfigRequest {
        tenant: "tag-ai".into(),
        task_id: task.id.clone(),
        id: made.id.clone(),
    }))
    .await
    .unwrap();
    assert!(c.get_task_push_notification_config(ok(key(&made.id))).await.is_err());
    assert!(c.list_task_push_notification_configs(list(ALICE)).await.unwrap().into_inner().configs.is_empty());

    // the extended card: the rails' parameters, and the address this call reached
    let card = c
        .get_extended_agent_card(ok(pb::GetExtendedAgentCardRequest { tenant: "tag-ai".into() }))
        .await
        .unwrap()
        .into_inner();
    assert!(card.capabilities.as_ref().unwrap().extended_agent_card.unwrap_or(false));
    let rails = card.capabilities.as_ref().unwrap().extensions.iter().find(|e| e.uri.contains("rails")).unwrap();
    let params = serde_json::to_value(&rails.params).unwrap();
    assert!(params["maxDepth"].is_number(), "{params}");
    let grpc = card.supported_interfaces.iter().find(|i| i.protocol_binding == "GRPC").unwrap();
    assert_eq!(grpc.url, s.addr.to_string());
}

/// Our `a2a` backend speaking gRPC (`transport = "grpc"`) to another
/// Switchboard: the card's GRPC interface (host:port, tenant), a streamed
/// send, and, when our deadline passes, CancelTask over gRPC ends the
/// remote task too.
#[tokio::test]
async fn the_a2a_backend_calls_another_switchboard_over_grpc_and_cancels_there() {
    use crate::a2a::{envelope, proxy_team, remote_team, wait_for_remote};
    use crate::service::{Server, get_json, post_delegate};
    let b = Server::start(Some(&remote_team()), Some("memory:"), "127.0.0.1:0", &[], 1000);
    let team = proxy_team(&[
        ("remote-tag", &format!("{}/a2a/tag-ai", b.url)),
        ("remote-slow", &format!("{}/a2a/slow/.well-known/agent-card.json", b.url)),
    ])
    .replace("token_env = \"A2A_REMOTE_TOKEN\" }", "token_env = \"A2A_REMOTE_TOKEN\", transport = \"grpc\" }");
    assert_eq!(team.matches("transport = \"grpc\"").count(), 2, "{team}");
    let a = Server::start(Some(&team), Some("memory:"), "127.0.0.1:0", &[("A2A_REMOTE_TOKEN", "b-prime")], 1000);
    let (status, body) =
        post_delegate(&a.url, "a-prime", &envelope("remote-tag", "Categorize", "2025-10-01 Starbucks 4.50", 10_000))
            .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"].as_str().unwrap().contains("Dining - Coffee"), "{body}");
    // on B, the task ran as prime-boss's delegation inside A's tree
    let tasks = get_json(&format!("{}/a2a/tag-ai/tasks?A2A-Version=1.0", b.url), "b-prime").await;
    assert_eq!(tasks["tasks"][0]["status"]["state"], "TASK_STATE_COMPLETED", "{tasks}");
    let tree =
        get_json(&format!("{}/v1/delegations/{}", b.url, tasks["tasks"][0]["id"].as_str().unwrap()), "b-prime").await;
    assert_eq!((tree["agent"].as_str(), tree["origin"].as_str()), (Some("tag-ai"), Some("prime-boss")), "{tree}");

    // A's deadline passes: A answers DEADLINE_EXCEEDED, and B's task ends too
    let (status, body) = post_delegate(&a.url, "a-prime", &envelope("remote-slow", "Take your time", "", 1500)).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "DEADLINE_EXCEEDED");
    wait_for_remote(&b.url, |s| s == "TASK_STATE_CANCELED" || s == "TASK_STATE_FAILED", 0).await;

    // a wrong token: the remote's UNAUTHENTICATED comes back as ours, not as a transport failure
    let c = Server::start(Some(&team), Some("memory:"), "127.0.0.1:0", &[("A2A_REMOTE_TOKEN", "not-b's")], 1000);
    let (status, body) =
        post_delegate(&c.url, "a-prime", &envelope("remote-tag", "Categorize", "2025-10-02 Uber 12.00", 10_000)).await;
    assert_ne!(status, 200, "{body}");
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{body}");
}

/// Our `a2a` backend over gRPC against the official a2a-sdk's gRPC server
/// (its GrpcHandler): the echo comes back, and the rails it received are
/// the ones we sent.
#[tokio::test]
async fn the_a2a_backend_speaks_grpc_to_an_a2a_sdk_grpc_server() {
    use crate::a2a::{echo_agent_with, envelope, proxy_team};
    use crate::service::{Server, post_delegate};
    if !sdk_available() {
        return;
    }
    let echo = echo_agent_with(true).await;
    let team = proxy_team(&[("echo", &echo.url)])
        .replace("token_env = \"A2A_REMOTE_TOKEN\" }", "token_env = \"A2A_REMOTE_TOKEN\", transport = \"grpc\" }");
    let a = Server::start(Some(&team), Some("memory:"), "127.0.0.1:0", &[("A2A_REMOTE_TOKEN", "unused")], 1000);
    let env = envelope("echo", "Say hello", "some input", 10_000);
    let (status, body) = post_delegate(&a.url, "a-prime", &env).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"], "echo: Say hello | some input", "{body}");
    let received = &body["artifacts"].as_array().unwrap().iter().find(|a| a["label"] == "received").unwrap()["value"];
    let rails = &received["metadata"][switchboard::protocol::a2a::RAILS_EXTENSION];
    assert_eq!((rails["user"].as_str(), rails["origin"].as_str()), (Some("alice"), Some("prime-boss")), "{received}");
    assert!(rails["deadlineMs"].as_f64().is_some_and(|d| d > 0.0 && d <= 10_000.0), "{received}");
}
