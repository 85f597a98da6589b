//! The edge's one error type: every refusal is `{"error":{"code","message"}}`
//! with the code's HTTP status; internals never reach the body.

use axum::Json;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::protocol::{DelegationError, ErrorCode};

/// An error as the HTTP edge answers it: a status and a `{"error":{"code","message"}}` body.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status answered, usually the code's own.
    pub status: StatusCode,
    /// The code and the message put in the body.
    pub error: DelegationError,
}

impl ApiError {
    /// An error with an explicit status, code and message.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self { status, error: DelegationError::new(code, message) }
    }

    /// A 400 `INVALID_REQUEST` with this message.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
    }

    /// A 401 `UNAUTHENTICATED` with this message.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthenticated, message)
    }
}

/// The HTTP status of an error code.
pub fn status_of(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::BAD_REQUEST)
}

impl From<DelegationError> for ApiError {
    fn from(error: DelegationError) -> Self {
        Self { status: status_of(error.code), error }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": {"code": self.error.code, "message": self.error.message}}))).into_response()
    }
}

/// The fallback handler: a 404 that names the unknown route.
pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::InvalidRequest,
        format!("no route {method} {}; see GET / for the API", uri.path()),
    )
}

/// The answer to a known path called with the wrong method: a 405.
pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::InvalidRequest,
        format!("{} does not take {method}", uri.path()),
    )
}
