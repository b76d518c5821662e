//! Extractors that turn every kind of bad input into an [`ApiError`] JSON
//! body: malformed JSON, oversized bodies, bad path ids, bad queries,
//! missing, wrong or expired tokens.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use futures_util::StreamExt;
use hoop_api::types::User;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use crate::App;
use crate::error::ApiError;
use crate::jwt::{self, JwtError};

/// Read the body, at most `cap` bytes of it: a declared length over the cap
/// is refused before a byte is read, and a body that grows past the cap as
/// it streams (chunked) is refused as soon as it does, so no body costs more
/// than `cap` bytes of memory (413 JSON either way; hyper then closes the
/// connection, whose body was not read to its end). A body that has not all
/// arrived within the server's body timeout → 408.
pub async fn body_bytes(req: Request, state: &Arc<App>, cap: usize) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return Err(ApiError::too_large(cap));
    }
    let limit = state.body_read_timeout;
    let read = async {
        let mut body = req.into_body().into_data_stream();
        let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(chunk) = body.next().await {
            let chunk = chunk
                .map_err(|e| ApiError::bad_request(format!("cannot read the request body: {e}")))?;
            if buf.len() + chunk.len() > cap {
                return Err(ApiError::too_large(cap));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(buf))
    };
    tokio::time::timeout(limit, read).await.map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            hoop_api::types::codes::BAD_REQUEST,
            format!("the request body did not arrive within {limit:?}"),
        )
    })?
}

/// Whether `headers` declare a JSON body (`application/json`, with or
/// without parameters).
fn declares_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// 415 for a JSON route's body of another media type.
fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        crate::constants::UNSUPPORTED_MEDIA_TYPE_CODE,
        "this route reads JSON: send the body with Content-Type: application/json",
    )
}

/// A JSON body (`application/json`, else 415); malformed → 400 naming
/// what is wrong.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<Arc<App>> for JsonBody<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &Arc<App>) -> Result<Self, ApiError> {
        if !declares_json(req.headers()) {
            return Err(not_json());
        }
        let bytes = body_bytes(req, state, hoop_core::limits::REST_BODY_CAP_BYTES).await?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
    }
}

/// A JSON body read before the sender is known (login, redeem): at most
/// [`PRE_AUTH_BODY_CAP_BYTES`](crate::constants::PRE_AUTH_BODY_CAP_BYTES).
pub struct PreAuthJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<Arc<App>> for PreAuthJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &Arc<App>) -> Result<Self, ApiError> {
        if !declares_json(req.headers()) {
            return Err(not_json());
        }
        let bytes = body_bytes(req, state, crate::constants::PRE_AUTH_BODY_CAP_BYTES).await?;
        serde_json::from_slice(&bytes)
            .map(PreAuthJson)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
    }
}

/// A JSON body that may be absent (empty → `T::default()`; present, it must
/// be `application/json`).
pub struct OptJson<T>(pub T);

impl<T: DeserializeOwned + Default> FromRequest<Arc<App>> for OptJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &Arc<App>) -> Result<Self, ApiError> {
        let json = declares_json(req.headers());
        let bytes = body_bytes(req, state, hoop_core::limits::REST_BODY_CAP_BYTES).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptJson(T::default()));
        }
        if !json {
            return Err(not_json());
        }
        serde_json::from_slice(&bytes)
            .map(OptJson)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
    }
}

/// A numeric `{id}` path parameter.
pub struct Id(pub i64);

impl FromRequestParts<Arc<App>> for Id {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &Arc<App>) -> Result<Self, ApiError> {
        let Path(s) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::bad_request("missing id in the path"))?;
        s.parse::<i64>()
            .map(Id)
            .map_err(|_| ApiError::bad_request(format!("{s:?} is not a numeric id")))
    }
}

/// A workroom path's `{cid}` (the room) and, when the route has it, `{id}`
/// (the card).
pub struct TaskPath {
    pub cid: i64,
    pub id: Option<i64>,
}

impl FromRequestParts<Arc<App>> for TaskPath {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &Arc<App>) -> Result<Self, ApiError> {
        let Path(m) =
            Path::<std::collections::HashMap<String, String>>::from_request_parts(parts, state)
                .await
                .map_err(|_| ApiError::bad_request("missing ids in the path"))?;
        let num = |k: &str| -> Result<Option<i64>, ApiError> {
            m.get(k)
                .map(|s| {
                    s.parse::<i64>()
                        .map_err(|_| ApiError::bad_request(format!("{s:?} is not a numeric id")))
                })
                .transpose()
        };
        let cid =
            num("cid")?.ok_or_else(|| ApiError::bad_request("missing room id in the path"))?;
        Ok(TaskPath {
            cid,
            id: num("id")?,
        })
    }
}

impl TaskPath {
    /// The card id of a route that has one.
    pub fn card(&self) -> Result<i64, ApiError> {
        self.id
            .ok_or_else(|| ApiError::bad_request("missing card id in the path"))
    }
}

/// A string `{id}` path parameter (window ids).
pub struct StrId(pub String);

impl FromRequestParts<Arc<App>> for StrId {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &Arc<App>) -> Result<Self, ApiError> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(s)| StrId(s))
            .map_err(|_| ApiError::bad_request("missing id in the path"))
    }
}

/// Query parameters; malformed → 400.
pub struct Q<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<Arc<App>> for Q<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &Arc<App>) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| Q(q))
            .map_err(|e| ApiError::bad_request(format!("bad query: {}", e.body_text())))
    }
}

/// The `Authorization: Bearer …` value, if any.
pub fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// Resolve a JWT to its user (401 on anything wrong).
pub fn user_from_jwt(app: &App, token: &str) -> Result<User, ApiError> {
    let claims = jwt::verify(&app.jwt, token, app.clock.now()).map_err(|e| match e {
        JwtError::Expired => ApiError::unauthorized("the token expired; log in again"),
        other => ApiError::unauthorized(other.to_string()),
    })?;
    app.store()
        .active_user(claims.sub)?
        .ok_or_else(|| ApiError::unauthorized("the token's account is gone or inactive"))
}

/// The logged-in caller (JWT).
pub struct Caller(pub User);

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &Arc<App>) -> Result<Self, ApiError> {
        let token = bearer(parts)
            .ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer <token>"))?;
        user_from_jwt(state, token).map(Caller)
    }
}

/// The operator (admin token, compared in constant time).
pub struct Admin;

impl FromRequestParts<Arc<App>> for Admin {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &Arc<App>) -> Result<Self, ApiError> {
        let token = bearer(parts).unwrap_or("");
        if bool::from(token.as_bytes().ct_eq(state.admin_token.as_bytes())) {
            Ok(Admin)
        } else {
            Err(ApiError::unauthorized("admin token missing or wrong"))
        }
    }
}
