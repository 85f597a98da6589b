//! A2A's errors (§3.3.2, §5.4) and how each binding writes them: a JSON-RPC
//! error object with a `google.rpc.ErrorInfo` in `data` (§9.5), or an
//! AIP-193 `{"error": {code, status, message, details}}` body (§11.6).
//!
//! [`Kind`] names each error as the A2A 1.0 specification does (`TaskNotFoundError`
//! is [`Kind::TaskNotFound`]); Switchboard adds three of its own, outside A2A's codes.

use serde_json::{Value, json};

use crate::protocol::{DelegationError, ErrorCode};

/// ErrorInfo's domain for A2A's own errors.
pub const A2A_DOMAIN: &str = "a2a-protocol.org";
/// ErrorInfo's domain for Switchboard's (authentication) errors.
pub const SWITCHBOARD_DOMAIN: &str = "switchboard.dev";

/// The kinds of error an A2A request can meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// `TaskNotFoundError` (-32001, HTTP 404): no task with that id, or not the caller's.
    TaskNotFound,
    /// `TaskNotCancelableError` (-32002, HTTP 409): the task has already ended and cannot be canceled.
    TaskNotCancelable,
    /// `PushNotificationNotSupportedError` (-32003, HTTP 400): the agent does not do push notifications.
    PushNotificationNotSupported,
    /// `UnsupportedOperationError` (-32004, HTTP 400): the agent does not do this (e.g. subscribing to an ended task).
    UnsupportedOperation,
    /// `ContentTypeNotSupportedError` (-32005, HTTP 415): a media type the agent cannot take (Switchboard: a
    /// request `Content-Type` that is not JSON).
    ContentTypeNotSupported,
    /// `InvalidAgentResponseError` (-32006, HTTP 502): the agent answered with something that is not valid A2A.
    InvalidAgentResponse,
    /// `ExtendedAgentCardNotConfiguredError` (-32007, HTTP 400): the agent has no extended card to give.
    ExtendedAgentCardNotConfigured,
    /// `ExtensionSupportRequiredError` (-32008, HTTP 400): the request lacks an extension the agent requires
    /// (Switchboard: the rails, in a call made with an agent's service token).
    ExtensionSupportRequired,
    /// `VersionNotSupportedError` (-32009, HTTP 400): the client's `A2A-Version` is not one the agent speaks.
    VersionNotSupported,
    /// JSON-RPC's parse error (-32700, HTTP 400): the body is not JSON.
    ParseError,
    /// JSON-RPC's invalid request (-32600, HTTP 400): JSON, but not a valid JSON-RPC request.
    InvalidRequest,
    /// JSON-RPC's method not found (-32601, HTTP 404): no such method or route.
    MethodNotFound,
    /// JSON-RPC's invalid params (-32602, HTTP 400): the method's parameters are wrong; the message says which.
    InvalidParams,
    /// JSON-RPC's internal error (-32603, HTTP 500): the server failed.
    Internal,
    /// No or an unknown bearer token (not an A2A error: JSON-RPC -32000, HTTP 401).
    Unauthenticated,
    /// A valid token that may not do this (JSON-RPC -32000, HTTP 403).
    PermissionDenied,
    /// The service runs as many delegations as it takes at once (`[server]
    /// max_in_flight`): not an A2A error; JSON-RPC -32000 with HTTP 503 and
    /// `Retry-After`, gRPC UNAVAILABLE.
    Unavailable,
}

impl Kind {
    /// The JSON-RPC error `code`: A2A's -32001 to -32009, JSON-RPC's own -32600 to -32603 and -32700, -32000 for
    /// Switchboard's.
    pub fn jsonrpc_code(self) -> i64 {
        match self {
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::ContentTypeNotSupported => -32005,
            Self::InvalidAgentResponse => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired => -32008,
            Self::VersionNotSupported => -32009,
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::Unauthenticated | Self::PermissionDenied | Self::Unavailable => -32000,
        }
    }

    /// The HTTP status of the HTTP+JSON binding (what the TCK checks; the
    /// specification's table says 400 for not-cancelable and content type).
    pub fn http_status(self) -> u16 {
        match self {
            Self::TaskNotFound | Self::MethodNotFound => 404,
            Self::TaskNotCancelable => 409,
            Self::ContentTypeNotSupported => 415,
            Self::InvalidAgentResponse => 502,
            Self::Internal => 500,
            Self::Unauthenticated => 401,
            Self::PermissionDenied => 403,
            Self::Unavailable => 503,
            _ => 400,
        }
    }

    /// google.rpc.Code name for AIP-193's `status` and the gRPC binding:
    /// A2A 1.0.0's table (§5.4), the version this runtime speaks and the
    /// TCK checks. (Version 1.0.1 of the text moved the three
    /// `UNIMPLEMENTED` rows to `FAILED_PRECONDITION`; a client reads the
    /// ErrorInfo's `reason` either way.)
    pub fn grpc_status(self) -> &'static str {
        match self {
            Self::TaskNotFound | Self::MethodNotFound => "NOT_FOUND",
            Self::PushNotificationNotSupported | Self::UnsupportedOperation | Self::VersionNotSupported => {
                "UNIMPLEMENTED"
            }
            Self::ContentTypeNotSupported | Self::InvalidParams | Self::InvalidRequest | Self::ParseError => {
                "INVALID_ARGUMENT"
            }
            Self::InvalidAgentResponse | Self::Internal => "INTERNAL",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::Unavailable => "UNAVAILABLE",
            _ => "FAILED_PRECONDITION",
        }
    }

    /// ErrorInfo's `reason`: the error's name in UPPER_SNAKE_CASE without "Error".
    pub fn reason(self) -> &'static str {
        match self {
            Self::TaskNotFound => "TASK_NOT_FOUND",
            Self::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            Self::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            Self::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            Self::ParseError => "JSON_PARSE_ERROR",
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::MethodNotFound => "METHOD_NOT_FOUND",
            Self::InvalidParams => "INVALID_PARAMS",
            Self::Internal => "INTERNAL_ERROR",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::Unavailable => "AGENT_UNAVAILABLE",
        }
    }

    fn domain(self) -> &'static str {
        match self {
            Self::Unauthenticated | Self::PermissionDenied | Self::Unavailable => SWITCHBOARD_DOMAIN,
            _ => A2A_DOMAIN,
        }
    }
}

/// An A2A error with a message that says what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aError {
    /// What went wrong; it decides the code, status and ErrorInfo `reason` in every binding.
    pub kind: Kind,
    /// The error's `message`: what went wrong and what to do about it, for a person.
    pub message: String,
    /// Extra ErrorInfo metadata (string values), e.g. the task id.
    pub metadata: serde_json::Map<String, Value>,
}

impl A2aError {
    /// An error of `kind` with `message` and no extra metadata.
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), metadata: Default::default() }
    }

    /// Adds `key: value` to the ErrorInfo's `metadata`.
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), Value::String(value.into()));
        self
    }

    /// An invalid-params error (-32602) saying `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(Kind::InvalidParams, message)
    }

    /// A task-not-found error (-32001) for task `id`, named (its first 80 characters) in the message and as
    /// `taskId` in the ErrorInfo's metadata.
    pub fn task_not_found(id: &str) -> Self {
        let shown: String = id.chars().take(80).collect();
        Self::new(
            Kind::TaskNotFound,
            format!("task '{shown}' does not exist or is not yours; list yours with ListTasks"),
        )
        .with("taskId", shown)
    }

    /// The `data` / `details` array: one google.rpc.ErrorInfo.
    pub fn details(&self) -> Value {
        let mut metadata = self.metadata.clone();
        metadata.insert("timestamp".into(), Value::String(super::types::timestamp_now()));
        json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": self.kind.domain(),
            "metadata": metadata,
        }])
    }

    /// The JSON-RPC error object.
    pub fn jsonrpc(&self) -> Value {
        json!({"code": self.kind.jsonrpc_code(), "message": self.message, "data": self.details()})
    }

    /// A whole JSON-RPC error response.
    pub fn jsonrpc_response(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": self.jsonrpc()})
    }

    /// The AIP-193 body of the HTTP+JSON binding.
    pub fn rest_body(&self) -> Value {
        json!({"error": {
            "code": self.kind.http_status(),
            "status": self.kind.grpc_status(),
            "message": self.message,
            "details": self.details(),
        }})
    }

    /// Our error code, for callers that want one (the a2a client backend).
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            Kind::Unauthenticated => ErrorCode::Unauthenticated,
            Kind::PermissionDenied => ErrorCode::PermissionDenied,
            Kind::InvalidParams | Kind::InvalidRequest | Kind::ParseError | Kind::ExtensionSupportRequired => {
                ErrorCode::InvalidRequest
            }
            Kind::VersionNotSupported => ErrorCode::UnsupportedVersion,
            Kind::Internal | Kind::Unavailable => ErrorCode::AgentUnavailable,
            _ => ErrorCode::AgentFailed,
        }
    }
}

impl std::fmt::Display for A2aError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.kind.reason(), self.kind.jsonrpc_code(), self.message)
    }
}

impl From<DelegationError> for A2aError {
    fn from(e: DelegationError) -> Self {
        let kind = match e.code {
            ErrorCode::Unauthenticated => Kind::Unauthenticated,
            ErrorCode::PermissionDenied | ErrorCode::UserMismatch => Kind::PermissionDenied,
            ErrorCode::InvalidRequest | ErrorCode::UnsupportedVersion => Kind::InvalidParams,
            ErrorCode::AgentNotFound => Kind::TaskNotFound,
            _ => Kind::Internal,
        };
        Self::new(kind, e.message).with("code", e.code.as_str())
    }
}

/// The JSON-RPC error `code` of a response body, if it has one.
pub fn jsonrpc_kind(code: i64) -> Option<Kind> {
    [
        Kind::TaskNotFound,
        Kind::TaskNotCancelable,
        Kind::PushNotificationNotSupported,
        Kind::UnsupportedOperation,
        Kind::ContentTypeNotSupported,
        Kind::InvalidAgentResponse,
        Kind::ExtendedAgentCardNotConfigured,
        Kind::ExtensionSupportRequired,
        Kind::VersionNotSupported,
        Kind::ParseError,
        Kind::InvalidRequest,
        Kind::MethodNotFound,
        Kind::InvalidParams,
        Kind::Internal,
    ]
    .into_iter()
    .find(|k| k.jsonrpc_code() == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_error_info_in_both_bindings() {
        let e = A2aError::task_not_found("nope");
        let rpc = e.jsonrpc_response(&json!(7));
        assert_eq!(rpc["error"]["code"], -32001);
        assert_eq!(rpc["id"], 7);
        assert_eq!(rpc["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(rpc["error"]["data"][0]["domain"], A2A_DOMAIN);
        let rest = e.rest_body();
        assert_eq!(rest["error"]["code"], 404);
        assert_eq!(rest["error"]["status"], "NOT_FOUND");
        assert_eq!(rest["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(jsonrpc_kind(-32009), Some(Kind::VersionNotSupported));
        assert_eq!(jsonrpc_kind(-1), None);
    }
}
