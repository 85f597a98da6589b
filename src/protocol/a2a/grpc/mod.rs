//! A2A's gRPC binding (A2A 1.0 §10): the messages and the `A2AService`
//! client and server generated from `proto/a2a.proto` ([`pb`]), and how they
//! meet Switchboard's A2A wire types.
//!
//! The wire types ([`crate::protocol::a2a::types`]) are a2a.proto as
//! ProtoJSON, and every generated message has ProtoJSON (pbjson) too, so a
//! message crosses between the two as its ProtoJSON: [`to_proto`] and
//! [`from_proto`]. Errors travel as a gRPC status whose details hold one
//! `google.rpc.ErrorInfo` (reason and domain as in the other bindings):
//! [`status`] writes it, [`error_of`] reads it back.
//!
//! The generated code is committed (`scripts/gen-a2a-grpc.sh` regenerates
//! it), so a build needs neither `protoc` nor a build script.

use std::collections::HashMap;

use prost::Message as _;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::protocol::a2a::error::jsonrpc_kind;
use crate::protocol::a2a::{A2aError, Kind};

/// The code generated from `proto/a2a.proto` (package `lf.a2a.v1`): prost
/// messages with ProtoJSON, `a2a_service_client` and `a2a_service_server`.
#[allow(missing_docs, clippy::all, clippy::pedantic, clippy::nursery, rustdoc::all, unreachable_pub)]
pub mod pb {
    include!("lf.a2a.v1.rs");
    include!("lf.a2a.v1.serde.rs");
}

/// The gRPC service's full name: methods are `/lf.a2a.v1.A2AService/{Method}`.
pub const SERVICE: &str = "lf.a2a.v1.A2AService";

/// `google.rpc.Status`, as carried in the `grpc-status-details-bin` trailer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcStatus {
    /// The gRPC status code.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message for people.
    #[prost(string, tag = "2")]
    pub message: String,
    /// Typed details (`google.protobuf.Any`).
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<pbjson_types::Any>,
}

/// `google.rpc.ErrorInfo`: why the call failed, as a machine reads it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ErrorInfo {
    /// UPPER_SNAKE_CASE reason (`TASK_NOT_FOUND`).
    #[prost(string, tag = "1")]
    pub reason: String,
    /// `a2a-protocol.org` for A2A's errors.
    #[prost(string, tag = "2")]
    pub domain: String,
    /// Context (the task id, a timestamp …).
    #[prost(map = "string, string", tag = "3")]
    pub metadata: HashMap<String, String>,
}

/// The type URL of [`ErrorInfo`] in an `Any`.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// One of Switchboard's wire types as the generated message `P` (through
/// their common ProtoJSON). A value that does not fit is an internal error.
pub fn to_proto<T: Serialize, P: DeserializeOwned>(value: &T) -> Result<P, A2aError> {
    serde_json::to_value(value).and_then(serde_json::from_value).map_err(|e| {
        A2aError::new(Kind::Internal, format!("a {} could not be written as protobuf: {e}", short_type::<P>()))
    })
}

/// A generated message as one of Switchboard's wire types; what does not
/// fit (a message without a role, a part without content …) is the
/// caller's invalid argument, named by `what`.
pub fn from_proto<P: Serialize, T: DeserializeOwned>(message: &P, what: &str) -> Result<T, A2aError> {
    let value = json_of(message)
        .map_err(|e| A2aError::invalid_params(format!("invalid {what}: it has no ProtoJSON form ({e})")))?;
    serde_json::from_value(value).map_err(|e| A2aError::invalid_params(format!("invalid {what}: {e}")))
}

/// A generated message's ProtoJSON, with the numbers of its
/// `google.protobuf.Struct`s (metadata: the rails, token usage) as the JSON
/// bindings carry them: a Struct holds every number as a double, so `9993`
/// crosses gRPC as `9993.0`, which an integer field would refuse.
pub fn json_of<P: Serialize>(message: &P) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(message)?;
    whole_numbers(&mut value);
    Ok(value)
}

/// Doubles without a fraction (within ±2^53, where a double is exact) as integers.
fn whole_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= EXACT) {
                // the cast is exact: a whole number within ±2^53
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

fn short_type<P>() -> &'static str {
    std::any::type_name::<P>().rsplit("::").next().unwrap_or("message")
}

/// The codec of the generated client and server: prost's, except that a
/// message that is not valid protobuf is the sender's INVALID_ARGUMENT
/// (with ErrorInfo), not prost's INTERNAL.
#[derive(Debug, Clone)]
pub struct Codec<T, U>(tonic_prost::ProstCodec<T, U>);

impl<T, U> Default for Codec<T, U> {
    fn default() -> Self {
        Self(tonic_prost::ProstCodec::default())
    }
}

impl<T, U> tonic::codec::Codec for Codec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = tonic_prost::ProstEncoder<T>;
    type Decoder = Decoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.0.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        Decoder(self.0.decoder())
    }
}

/// [`Codec`]'s decoder.
#[derive(Debug)]
pub struct Decoder<U>(tonic_prost::ProstDecoder<U>);

impl<U: prost::Message + Default> tonic::codec::Decoder for Decoder<U> {
    type Item = U;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<U>, tonic::Status> {
        self.0.decode(buf).map_err(|s| {
            status(&A2aError::invalid_params(format!(
                "the message is not a valid {} in protobuf ({})",
                short_type::<U>(),
                s.message()
            )))
        })
    }

    fn buffer_settings(&self) -> tonic::codec::BufferSettings {
        self.0.buffer_settings()
    }
}

/// The gRPC code of an A2A error kind (A2A 1.0 §5.4).
pub fn code_of(kind: Kind) -> tonic::Code {
    match kind.grpc_status() {
        "NOT_FOUND" => tonic::Code::NotFound,
        "INVALID_ARGUMENT" => tonic::Code::InvalidArgument,
        "INTERNAL" => tonic::Code::Internal,
        "UNAUTHENTICATED" => tonic::Code::Unauthenticated,
        "PERMISSION_DENIED" => tonic::Code::PermissionDenied,
        "UNAVAILABLE" => tonic::Code::Unavailable,
        "UNIMPLEMENTED" => tonic::Code::Unimplemented,
        _ => tonic::Code::FailedPrecondition,
    }
}

/// An A2A error as a gRPC status: its code, its message and one
/// `google.rpc.ErrorInfo` detail (reason, domain, metadata).
pub fn status(e: &A2aError) -> tonic::Status {
    let code = code_of(e.kind);
    let details = e.details();
    let info = &details[0];
    let metadata = info["metadata"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect())
        .unwrap_or_default();
    let info = ErrorInfo {
        reason: info["reason"].as_str().unwrap_or_default().into(),
        domain: info["domain"].as_str().unwrap_or_default().into(),
        metadata,
    };
    let body = RpcStatus {
        code: code as i32,
        message: e.message.clone(),
        details: vec![pbjson_types::Any { type_url: ERROR_INFO_TYPE.into(), value: info.encode_to_vec().into() }],
    };
    tonic::Status::with_details(code, e.message.clone(), body.encode_to_vec().into())
}

/// The A2A error a gRPC status carries: its ErrorInfo's reason when it has
/// one, else the closest kind to its code.
pub fn error_of(status: &tonic::Status) -> A2aError {
    let info = RpcStatus::decode(status.details())
        .ok()
        .into_iter()
        .flat_map(|s| s.details)
        .filter(|a| a.type_url == ERROR_INFO_TYPE)
        .find_map(|a| ErrorInfo::decode(a.value.as_ref()).ok());
    let by_reason = info.as_ref().and_then(|i| {
        (-32700..=-32000)
            .filter_map(jsonrpc_kind)
            .chain([Kind::Unauthenticated, Kind::PermissionDenied, Kind::Unavailable])
            .find(|k| k.reason() == i.reason)
    });
    let kind = by_reason.unwrap_or(match status.code() {
        tonic::Code::NotFound => Kind::TaskNotFound,
        tonic::Code::InvalidArgument | tonic::Code::OutOfRange => Kind::InvalidParams,
        tonic::Code::Unauthenticated => Kind::Unauthenticated,
        tonic::Code::PermissionDenied => Kind::PermissionDenied,
        tonic::Code::Unavailable => Kind::Unavailable,
        tonic::Code::Unimplemented => Kind::UnsupportedOperation,
        _ => Kind::Internal,
    });
    let mut e = A2aError::new(kind, status.message().to_string());
    for (k, v) in info.map(|i| i.metadata).unwrap_or_default() {
        if k != "timestamp" {
            e = e.with(&k, v);
        }
    }
    e
}

#[cfg(test)]
mod tests {
    #[test]
    fn struct_numbers_come_back_as_the_integers_that_were_sent() {
        let mut v = serde_json::json!({"deadlineMs": 9993.0, "ratio": 0.5, "list": [1.0, -2.0], "big": 1e300});
        super::whole_numbers(&mut v);
        assert_eq!(v, serde_json::json!({"deadlineMs": 9993, "ratio": 0.5, "list": [1, -2], "big": 1e300}));
        assert!(v["deadlineMs"].is_u64());
    }

    use super::*;
    use crate::protocol::a2a::types::{Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus};
    use serde_json::json;

    #[test]
    fn a_task_crosses_to_protobuf_and_back_unchanged() {
        let mut task = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus::now(TaskState::Working, None),
            artifacts: None,
            history: Some(vec![Message {
                message_id: "m1".into(),
                context_id: Some("c1".into()),
                task_id: Some("t1".into()),
                role: Role::User,
                parts: vec![
                    Part::text("hello"),
                    Part::data(json!({"a": [1.5, "b", null]})), // (protobuf numbers are doubles: 1 would come back 1.0)
                    Part { raw: Some("dGNr".into()), filename: Some("x.bin".into()), ..Part::default() },
                ],
                metadata: Some(json!({"k": {"n": 1.5}}).as_object().unwrap().clone()),
                extensions: vec!["urn:x".into()],
                reference_task_ids: Vec::new(),
            }]),
            metadata: None,
        };
        task.set_status(TaskState::Completed, "done");
        let wire: pb::StreamResponse = to_proto(&StreamResponse::Task(task.clone())).unwrap();
        let bytes = wire.encode_to_vec();
        let back: StreamResponse = from_proto(&pb::StreamResponse::decode(bytes.as_slice()).unwrap(), "x").unwrap();
        let StreamResponse::Task(mut back) = back else { panic!("a task") };
        // the same instant, written +00:00 rather than Z
        let instant = |t: &Option<String>| chrono::DateTime::parse_from_rfc3339(t.as_deref().unwrap()).unwrap();
        assert_eq!(instant(&back.status.timestamp), instant(&task.status.timestamp));
        back.status.timestamp.clone_from(&task.status.timestamp);
        assert_eq!(back, task);
    }

    #[test]
    fn a_message_without_a_role_is_the_callers_invalid_argument() {
        let m = pb::Message { message_id: "m".into(), ..Default::default() };
        let e = from_proto::<_, Message>(&m, "message").unwrap_err();
        assert_eq!(e.kind, Kind::InvalidParams);
        assert!(e.message.contains("role"), "{}", e.message);
    }

    #[test]
    fn errors_carry_error_info_and_read_back() {
        let s = status(&A2aError::task_not_found("t-9"));
        assert_eq!(s.code(), tonic::Code::NotFound);
        let back = error_of(&s);
        assert_eq!(back.kind, Kind::TaskNotFound);
        assert_eq!(back.metadata["taskId"], "t-9");
        // A2A 1.0.0's table (what the TCK's GRPC-ERR-002 checks)
        let s = status(&A2aError::new(Kind::VersionNotSupported, "no"));
        assert_eq!(s.code(), tonic::Code::Unimplemented);
        assert_eq!(error_of(&s).kind, Kind::VersionNotSupported);
        assert_eq!(error_of(&tonic::Status::not_found("x")).kind, Kind::TaskNotFound);
    }
}

#[cfg(test)]
mod overload_tests {
    use super::*;

    #[test]
    fn a_send_over_the_admission_limit_is_unavailable_and_reads_back_as_such() {
        let e = A2aError::new(Kind::Unavailable, "over max_in_flight");
        let s = status(&e);
        assert_eq!(s.code(), tonic::Code::Unavailable);
        let back = error_of(&s);
        assert_eq!(back.kind, Kind::Unavailable);
        assert_eq!(back.code(), crate::protocol::ErrorCode::AgentUnavailable);
        assert_eq!(Kind::Unavailable.http_status(), 503);
        assert_eq!(Kind::Unavailable.jsonrpc_code(), -32000);
        assert_eq!(crate::protocol::a2a::error::jsonrpc_kind(-32000), None, "-32000 is read by its reason");
    }
}
