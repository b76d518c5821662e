//! The push stream for MCP-key holders (`routes::EVENTS`) [A]: production
//! has a written spec for an SSE event stream (seed 002 L9, `SPEC-events.md`)
//! but its doorbell still polls; this is that stream in the reference
//! backend, optional for clients. `GET` with `Authorization: Bearer
//! hoopmcp_…` (the same checks as `/mcp`: Origin, JWT refused, key lookup,
//! the key's rate window for the connect) → `text/event-stream`: one
//! `data:` line per event of the account, the same JSON as the WebSocket's
//! `WsEvent` frames (`message.new`, `workroom.task.recheck`,
//! `provision.pending`), and a `: keep-alive` comment every
//! [`EVENTS_KEEPALIVE`] so a client can tell a dead stream from a quiet one.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use hoop_api::types::UserId;
use tokio::sync::{mpsc, watch};

use crate::App;
use crate::constants::EVENTS_KEEPALIVE;
use crate::error::ApiError;
use crate::store::key_hash;

/// Unsubscribes from the hub when the stream is dropped.
struct Subscription {
    app: Arc<App>,
    user: UserId,
    id: u64,
    /// The stream's slot (per account and in total), given back with it.
    _slot: crate::streams::StreamSlot,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.app.hub.unsubscribe(self.user, self.id);
    }
}

pub async fn stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let origin = headers
        .get(axum::http::header::ORIGIN)
        .map(|v| v.to_str().unwrap_or(""));
    if !crate::rules::origin_allowed(origin, crate::constants::MCP_ALLOWED_ORIGIN_HOSTS) {
        return ApiError::forbidden("this Origin is not allowed").into_response();
    }
    let key = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or("");
    if crate::jwt::is_jwt_shaped(key) || !key.starts_with(hoop_api::headers::MCP_KEY_PREFIX) {
        return ApiError::unauthorized("an MCP key (hoopmcp_…) is required").into_response();
    }
    let hash = key_hash(key);
    let now = app.clock.now();
    let user = match app.store().mcp_user(now, &hash) {
        Ok(Some(u)) => u,
        Ok(None) => return ApiError::unauthorized("unknown MCP key").into_response(),
        Err(e) => return e.into_response(),
    };
    if app.store().mcp_rate(&hash, now).is_err() {
        return ApiError::rate_limited(
            "at most 300 calls per minute per key",
            hoop_core::limits::MCP_RETRY_AFTER_SECS,
        )
        .into_response();
    }
    let slot = match app.streams.acquire(user.id) {
        Ok(s) => s,
        Err(refused) => return refused.to_error().into_response(),
    };
    let (id, rx) = app.hub.subscribe(user.id);
    let sub = Subscription {
        app: app.clone(),
        user: user.id,
        id,
        _slot: slot,
    };
    let stop = app.shutdown.clone();
    Sse::new(events(rx, stop, sub, app.stream_idle_timeout))
        .keep_alive(
            KeepAlive::new()
                .interval(EVENTS_KEEPALIVE)
                .text("keep-alive"),
        )
        .into_response()
}

fn events(
    rx: mpsc::UnboundedReceiver<String>,
    stop: watch::Receiver<bool>,
    sub: Subscription,
    idle: std::time::Duration,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold((rx, stop, sub), move |(mut rx, mut stop, sub)| async move {
        // No event for `idle`: the stream ends and gives its slots back.
        let next = tokio::select! {
            m = rx.recv() => m,
            _ = stop.wait_for(|s| *s) => None,
            _ = tokio::time::sleep(idle) => None,
        };
        next.map(|text| (Ok(Event::default().data(text)), (rx, stop, sub)))
    })
}
