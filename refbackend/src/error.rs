//! The one error type of every route: an HTTP status plus an
//! [`ErrorBody`](hoop_api::types::ErrorBody), rendered as JSON. Nothing else
//! reaches a client, so every 4xx/5xx has the same shape.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hoop_api::types::{ErrorBody, codes};

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    /// Boxed: the body carries the unread messages of a `gap`, and every
    /// handler's `Result` should stay small.
    pub body: Box<ErrorBody>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: Box::new(ErrorBody::new(code, message)),
        }
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, codes::BAD_REQUEST, message)
    }
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, codes::UNAUTHORIZED, message)
    }
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, codes::FORBIDDEN, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, codes::NOT_FOUND, message)
    }
    pub fn not_member() -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            codes::NOT_MEMBER,
            "you are not a member of this conversation",
        )
    }
    pub fn conflict(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, code, message)
    }
    pub fn rate_limited(message: impl Into<String>, retry_after_sec: u64) -> ApiError {
        let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, codes::RATE_LIMITED, message);
        e.body.error.retry_after_sec = Some(retry_after_sec);
        e
    }
    pub fn too_large(cap: usize) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::PAYLOAD_TOO_LARGE,
            format!("the request body is over the cap of {cap} bytes"),
        )
    }
    pub fn internal() -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            codes::INTERNAL,
            "internal error; nothing was written",
        )
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> ApiError {
        tracing::error!(error = %e, "database error");
        ApiError::internal()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry = self.body.error.retry_after_sec;
        let mut resp = (self.status, axum::Json(*self.body)).into_response();
        if let Some(secs) = retry
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(hoop_api::headers::RETRY_AFTER, v);
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
