//! WebSocket push. A client upgrades at `routes::WS` with
//! `Authorization: Bearer <jwt>` (or `?token=` for browsers), receives one
//! `hello` frame, then one JSON text frame per [`WsEvent`] for its account.
//! Pings are answered by the socket layer; shutdown sends a close frame.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::response::{IntoResponse, Response};
use hoop_api::types::{UserId, WsEvent};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::App;
use crate::error::ApiError;
use crate::extract::{Q, user_from_jwt};

type Senders = HashMap<UserId, Vec<(u64, mpsc::UnboundedSender<String>)>>;

/// Open connections by user.
#[derive(Default)]
pub struct Hub {
    conns: Mutex<Senders>,
    next: AtomicU64,
}

impl Hub {
    fn conns(&self) -> std::sync::MutexGuard<'_, Senders> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn subscribe(&self, user: UserId) -> (u64, mpsc::UnboundedReceiver<String>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        self.conns().entry(user).or_default().push((id, tx));
        (id, rx)
    }

    pub(crate) fn unsubscribe(&self, user: UserId, id: u64) {
        let mut conns = self.conns();
        if let Some(v) = conns.get_mut(&user) {
            v.retain(|(i, _)| *i != id);
            if v.is_empty() {
                conns.remove(&user);
            }
        }
    }

    /// Send `event` to every open connection of `users`; how many got it.
    pub fn push(&self, users: &[UserId], event: &WsEvent) -> usize {
        let Ok(text) = serde_json::to_string(event) else {
            return 0;
        };
        let conns = self.conns();
        users
            .iter()
            .filter_map(|u| conns.get(u))
            .flatten()
            .filter(|(_, tx)| tx.send(text.clone()).is_ok())
            .count()
    }
}

#[derive(Debug, Deserialize, Default)]
pub struct WsQuery {
    token: Option<String>,
}

pub async fn upgrade(
    State(app): State<Arc<App>>,
    permit: Option<axum::Extension<crate::streams::ConnPermit>>,
    headers: HeaderMap,
    Q(q): Q<WsQuery>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let header_token = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|s| s.trim().to_string());
    let Some(token) = header_token.or(q.token) else {
        return ApiError::unauthorized("missing Authorization: Bearer <token>").into_response();
    };
    let user = match user_from_jwt(&app, &token) {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => {
            return ApiError::bad_request(format!("not a WebSocket upgrade: {e}")).into_response();
        }
    };
    // A stream slot for the account, and the connection's slot, both kept
    // until the socket ends.
    let slot = match app.streams.acquire(user.id) {
        Ok(s) => s,
        Err(refused) => return refused.to_error().into_response(),
    };
    ws.on_upgrade(move |socket| async move {
        let _slot = slot.with_connection(permit.and_then(|p| p.take()));
        run(socket, app, user.id).await
    })
    .into_response()
}

async fn run(mut socket: WebSocket, app: Arc<App>, user: UserId) {
    let (id, mut rx) = app.hub.subscribe(user);
    let mut stop = app.shutdown.clone();
    let hello = serde_json::to_string(&WsEvent::Hello { user_id: user }).unwrap_or_default();
    if socket.send(Message::Text(hello.into())).await.is_ok() {
        loop {
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(text) => {
                        if socket.send(Message::Text(text.into())).await.is_err() {
                            break;
                        }
                    }
                    None => break,
                },
                msg = socket.recv() => match msg {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                    Some(Ok(_)) => {}
                },
                _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => {
                    let _ = socket.send(Message::Close(None)).await;
                    break;
                }
            }
        }
    }
    app.hub.unsubscribe(user, id);
}
