//! The edge's one error type: every refusal is `{"error":{"code","message"}}`
//! with the code's HTTP status; internals never reach the body.

use axum::Json;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::protocol::{DelegationError, ErrorCode};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub error: DelegationError,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self { status, error: DelegationError::new(code, message) }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
    }

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

pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::InvalidRequest,
        format!("no route {method} {}; see GET / for the API", uri.path()),
    )
}

pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::InvalidRequest,
        format!("{} does not take {method}", uri.path()),
    )
}
