//! The `a2a` backend over A2A's gRPC binding (`lf.a2a.v1.A2AService`): the
//! same operations as over JSON-RPC (SendMessage, SendStreamingMessage,
//! GetTask, CancelTask), the same metadata (`a2a-version`, the rails
//! extension, the bearer token, the trace context), the card's `tenant` in
//! every request. Requests and answers cross as ProtoJSON, so the rest of
//! the backend reads them exactly as it reads the JSON bindings' answers.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::transport::Channel;

use super::progress::remote_error;
use crate::protocol::a2a::RAILS_EXTENSION;
use crate::protocol::a2a::grpc::pb::a2a_service_client::A2aServiceClient;
use crate::protocol::a2a::grpc::{error_of, json_of, pb, to_proto};
use crate::protocol::a2a::types::PROTOCOL_VERSION;
use crate::protocol::{DelegationError, ErrorCode};
use crate::telemetry;

/// A remote agent's gRPC interface: a lazily connected channel to its
/// `host:port` and the tenant that names the agent there.
#[derive(Clone)]
pub(super) struct GrpcPeer {
    client: A2aServiceClient<Channel>,
    tenant: String,
    address: String,
}

impl std::fmt::Debug for GrpcPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcPeer").field("address", &self.address).field("tenant", &self.tenant).finish()
    }
}

/// The messages one delegation's stream may carry before it is cut off.
pub(super) type Events = tonic::Streaming<pb::StreamResponse>;

impl GrpcPeer {
    /// `address`: the card's GRPC interface URL (`host:port`, or with a scheme).
    pub(super) fn new(address: &str, tenant: &str) -> Result<Self, DelegationError> {
        let uri = if address.starts_with("http://") || address.starts_with("https://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let channel = Channel::from_shared(uri.clone())
            .map_err(|e| {
                DelegationError::new(
                    ErrorCode::AgentFailed,
                    format!("the card's gRPC address '{address}' is not a URI: {e}"),
                )
            })?
            .connect_lazy();
        Ok(Self { client: A2aServiceClient::new(channel), tenant: tenant.to_string(), address: uri })
    }

    fn request<T>(&self, body: T, token: Option<&str>, timeout: Duration) -> tonic::Request<T> {
        let mut r = tonic::Request::new(body);
        r.set_timeout(timeout.max(Duration::from_millis(1)));
        let m = r.metadata_mut();
        m.insert("a2a-version", AsciiMetadataValue::from_static(PROTOCOL_VERSION));
        m.insert("a2a-extensions", AsciiMetadataValue::from_static(RAILS_EXTENSION));
        if let Some(v) = token.and_then(|t| MetadataValue::try_from(format!("Bearer {t}")).ok()) {
            m.insert("authorization", v);
        }
        for (k, v) in telemetry::trace_headers() {
            if let (Ok(k), Ok(v)) =
                (tonic::metadata::AsciiMetadataKey::from_bytes(k.as_bytes()), AsciiMetadataValue::try_from(v.as_str()))
            {
                m.insert(k, v);
            }
        }
        r
    }

    /// `params` (the JSON-RPC params of `method`) as the RPC's request message.
    fn message<P: serde::de::DeserializeOwned>(&self, mut params: Value) -> Result<P, DelegationError> {
        if let Value::Object(o) = &mut params {
            o.insert("tenant".into(), json!(self.tenant));
        }
        to_proto(&params).map_err(|e| DelegationError::new(ErrorCode::AgentFailed, e.message))
    }

    /// One unary operation; its answer as ProtoJSON (the JSON bindings' shape).
    pub(super) async fn call(
        &self,
        method: &str,
        params: Value,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, DelegationError> {
        let mut c = self.client.clone();
        match method {
            "SendMessage" => {
                let req: pb::SendMessageRequest = self.message(params)?;
                answer(c.send_message(self.request(req, token, timeout)).await.map_err(|s| self.failed(&s))?)
            }
            "GetTask" => {
                let req: pb::GetTaskRequest = self.message(params)?;
                answer(c.get_task(self.request(req, token, timeout)).await.map_err(|s| self.failed(&s))?)
            }
            _ => {
                let req: pb::CancelTaskRequest = self.message(params)?;
                answer(c.cancel_task(self.request(req, token, timeout)).await.map_err(|s| self.failed(&s))?)
            }
        }
    }

    /// SendStreamingMessage: the stream of events.
    pub(super) async fn stream(
        &self,
        params: Value,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<Events, DelegationError> {
        let req: pb::SendMessageRequest = self.message(params)?;
        let mut c = self.client.clone();
        let events = c.send_streaming_message(self.request(req, token, timeout)).await.map_err(|s| self.failed(&s))?;
        Ok(events.into_inner())
    }

    /// A gRPC status as our error: the transport's failures (nobody there,
    /// out of time) as such, the remote's A2A errors as the JSON bindings'
    /// are read (their ErrorInfo names the kind and a Switchboard's code).
    pub(super) fn failed(&self, s: &tonic::Status) -> DelegationError {
        let has_info = !s.details().is_empty();
        match s.code() {
            tonic::Code::DeadlineExceeded => DelegationError::new(
                ErrorCode::DeadlineExceeded,
                format!("A2A agent {} did not answer in time over gRPC", self.address),
            ),
            tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled if !has_info => {
                DelegationError::new(
                    ErrorCode::AgentUnavailable,
                    format!("A2A agent {} over gRPC: {}", self.address, s.message()),
                )
            }
            _ => {
                let e = error_of(s);
                remote_error(&e.jsonrpc(), e.kind.http_status())
            }
        }
    }
}

/// A message as the JSON bindings would have sent it.
pub(super) fn as_json(message: &impl Serialize) -> Result<Value, DelegationError> {
    json_of(message).map_err(|e| {
        DelegationError::new(ErrorCode::AgentFailed, format!("A2A agent's gRPC answer has no JSON form: {e}"))
    })
}

fn answer<T: Serialize>(r: tonic::Response<T>) -> Result<Value, DelegationError> {
    as_json(&r.into_inner())
}
