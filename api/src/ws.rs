//! The WebSocket connection of a sentinel account: authenticate on the
//! upgrade (`Authorization: Bearer <jwt>`), wait a short while for a `hello`
//! frame (an assumption: a server that never sends one is still served),
//! then yield typed [`WsEvent`]s. Liveness is handled inside
//! [`WsConnection::next_event`]: a ping every [`WS_PING_INTERVAL`], and no
//! pong within [`WS_PONG_DEADLINE`] is [`WsError::PongTimeout`]. Pings from
//! the server are answered: tungstenite queues the pong and only sends it on
//! the next write or flush, so every received ping is followed by a flush.
//!
//! This is one connection, not a daemon: the reconnect loop and its backoff
//! belong to the caller.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, header::AUTHORIZATION};
use tokio_tungstenite::tungstenite::{self, Bytes, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

use hoop_core::limits::{WS_PING_INTERVAL, WS_PONG_DEADLINE};

use crate::error::Error;
use crate::rest::{CONNECT_TIMEOUT, Client};
use crate::routes;
use crate::types::{UserId, WsEvent};

/// How long a fresh connection waits for a `hello` frame before it goes on
/// without one: the reference backend sends it at once, production may not
/// send one at all (not recorded), so a missing hello never fails a
/// connection, it only costs this much once per connect.
pub const WS_HELLO_TIMEOUT: Duration = Duration::from_secs(2);
/// How much of an unreadable frame's `type` is quoted in the log.
const FRAME_LOG_CHARS: usize = 120;

/// Timing of one connection. Defaults are the spec's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsConfig {
    pub ping_interval: Duration,
    pub pong_deadline: Duration,
    pub hello_timeout: Duration,
    pub connect_timeout: Duration,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            ping_interval: WS_PING_INTERVAL,
            pong_deadline: WS_PONG_DEADLINE,
            hello_timeout: WS_HELLO_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WsError {
    /// Logging in (or refreshing the token) failed.
    #[error(transparent)]
    Api(#[from] Error),
    /// The upgrade was refused with 401 even after a fresh login.
    #[error("WebSocket upgrade refused: unauthorized")]
    Unauthorized,
    /// TCP / TLS / HTTP upgrade failed.
    #[error("WebSocket connect: {0}")]
    Connect(String),
    /// The stream failed or ended while waiting for a `hello` frame.
    #[error("no hello frame: {0}")]
    NoHello(String),
    /// A ping went unanswered past the deadline: the link is dead.
    #[error("pong timeout")]
    PongTimeout,
    /// A ping or a flush did not complete within the pong deadline: the
    /// peer stopped reading, the link is as dead as an unanswered ping.
    #[error("write timeout")]
    WriteTimeout,
    /// The server closed the connection (or the stream ended).
    #[error("connection closed: {0}")]
    Closed(String),
    /// A protocol or I/O error on an open connection.
    #[error("WebSocket: {0}")]
    Protocol(String),
}

type Stream = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// `http://host/…` → `ws://host/v1/ws` (https → wss).
pub fn ws_url(base_url: &str) -> Result<String, Error> {
    let base = crate::rest::normalise_base(base_url)?;
    let rest = base
        .strip_prefix("https://")
        .map(|r| format!("wss://{r}"))
        .or_else(|| base.strip_prefix("http://").map(|r| format!("ws://{r}")))
        .ok_or_else(|| Error::BadUrl {
            url: base_url.to_string(),
            message: "the scheme must be http or https".into(),
        })?;
    Ok(format!("{rest}{}", routes::WS))
}

/// An authenticated connection that has received its `hello`.
pub struct WsConnection {
    stream: Stream,
    cfg: WsConfig,
    /// From the `hello` frame, when the server sent one.
    user_id: Option<UserId>,
    /// Events that arrived before `hello`, delivered first.
    pending: VecDeque<WsEvent>,
    next_ping: Instant,
    /// Deadline of the outstanding ping, if one is unanswered.
    pong_due: Option<Instant>,
    ping_seq: u64,
    /// A pong (or ping) is queued in tungstenite and not yet flushed.
    needs_flush: bool,
}

impl std::fmt::Debug for WsConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsConnection")
            .field("user_id", &self.user_id)
            .field("cfg", &self.cfg)
            .finish()
    }
}

/// Connect as the client's account with the spec's timings.
pub async fn connect(client: &Client) -> Result<WsConnection, WsError> {
    connect_with(client, WsConfig::default()).await
}

/// Connect as the client's account; a 401 on the upgrade logs in again once.
pub async fn connect_with(client: &Client, cfg: WsConfig) -> Result<WsConnection, WsError> {
    let url = ws_url(client.base_url())?;
    let mut retried = false;
    loop {
        let jwt = client.bearer().await?;
        match open(&url, &jwt, &cfg).await {
            Err(WsError::Unauthorized) if !retried => {
                tracing::debug!("WebSocket upgrade got 401: logging in again");
                client.invalidate(&jwt).await;
                retried = true;
            }
            other => return other,
        }
    }
}

/// Connect to a WebSocket URL with a given JWT (no login, no retry).
pub async fn connect_with_token(
    url: &str,
    jwt: &str,
    cfg: WsConfig,
) -> Result<WsConnection, WsError> {
    open(url, jwt, &cfg).await
}

async fn open(url: &str, jwt: &str, cfg: &WsConfig) -> Result<WsConnection, WsError> {
    let mut req = url
        .into_client_request()
        .map_err(|e| WsError::Connect(e.to_string()))?;
    let auth = HeaderValue::from_str(&format!("Bearer {jwt}"))
        .map_err(|_| WsError::Connect("the token is not a valid header value".into()))?;
    req.headers_mut().insert(AUTHORIZATION, auth);
    let stream = match timeout(cfg.connect_timeout, connect_async(req)).await {
        Err(_) => return Err(WsError::Connect("timed out".into())),
        Ok(Err(tungstenite::Error::Http(resp))) if resp.status().as_u16() == 401 => {
            return Err(WsError::Unauthorized);
        }
        Ok(Err(tungstenite::Error::Http(resp))) => {
            return Err(WsError::Connect(format!(
                "upgrade refused: {}",
                resp.status()
            )));
        }
        Ok(Err(e)) => return Err(WsError::Connect(e.to_string())),
        Ok(Ok((stream, _))) => stream,
    };
    let mut conn = WsConnection {
        stream,
        cfg: *cfg,
        user_id: None,
        pending: VecDeque::new(),
        next_ping: Instant::now() + cfg.ping_interval,
        pong_due: None,
        ping_seq: 0,
        needs_flush: false,
    };
    let hello_by = Instant::now() + cfg.hello_timeout;
    loop {
        let frame = match tokio::time::timeout_at(hello_by, conn.stream.next()).await {
            Err(_) => {
                tracing::info!("no hello frame; going on without one");
                return Ok(conn);
            }
            Ok(None) => return Err(WsError::NoHello("the stream ended".into())),
            Ok(Some(Err(e))) => return Err(WsError::NoHello(e.to_string())),
            Ok(Some(Ok(m))) => m,
        };
        match conn.handle_frame(frame).await? {
            Some(WsEvent::Hello { user_id }) => {
                conn.user_id = Some(user_id);
                return Ok(conn);
            }
            Some(other) => conn.pending.push_back(other),
            None => {}
        }
    }
}

impl WsConnection {
    /// The account the server said hello to; `None` when it sent no hello.
    pub fn user_id(&self) -> Option<UserId> {
        self.user_id
    }

    /// The next event. Pings, pongs and unreadable frames are handled here
    /// and never surface; an unreadable frame is logged and skipped.
    ///
    /// Cancel-safe: dropping the future never loses a received event; a pong
    /// or ping whose flush was interrupted is flushed on the next call.
    pub async fn next_event(&mut self) -> Result<WsEvent, WsError> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(e);
            }
            if self.needs_flush {
                self.flush().await?;
            }
            let wake = match self.pong_due {
                Some(due) => due.min(self.next_ping),
                None => self.next_ping,
            };
            tokio::select! {
                // Frames first: a pong that arrived while nobody was polling
                // must clear the deadline before the timer can judge it.
                biased;
                frame = self.stream.next() => {
                    let frame = match frame {
                        None => return Err(WsError::Closed("the stream ended".into())),
                        Some(Err(e)) => return Err(WsError::Protocol(e.to_string())),
                        Some(Ok(m)) => m,
                    };
                    if let Some(ev) = self.handle_frame(frame).await? {
                        return Ok(ev);
                    }
                }
                _ = sleep_until(wake) => self.on_timer().await?,
            }
        }
    }

    async fn on_timer(&mut self) -> Result<(), WsError> {
        let now = Instant::now();
        if self.pong_due.is_some_and(|due| now >= due) {
            return Err(WsError::PongTimeout);
        }
        if now >= self.next_ping {
            self.next_ping = now + self.cfg.ping_interval;
            if self.pong_due.is_none() {
                self.pong_due = Some(now + self.cfg.pong_deadline);
            }
            self.ping_seq += 1;
            let payload = Bytes::from(self.ping_seq.to_be_bytes().to_vec());
            self.needs_flush = true;
            timeout(
                self.cfg.pong_deadline,
                self.stream.send(Message::Ping(payload)),
            )
            .await
            .map_err(|_| WsError::WriteTimeout)?
            .map_err(|e| WsError::Protocol(e.to_string()))?;
            self.needs_flush = false;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), WsError> {
        self.needs_flush = true;
        timeout(self.cfg.pong_deadline, self.stream.flush())
            .await
            .map_err(|_| WsError::WriteTimeout)?
            .map_err(|e| WsError::Protocol(e.to_string()))?;
        self.needs_flush = false;
        Ok(())
    }

    /// One frame → maybe an event.
    async fn handle_frame(&mut self, frame: Message) -> Result<Option<WsEvent>, WsError> {
        match frame {
            Message::Text(text) => match serde_json::from_str::<WsEvent>(text.as_str()) {
                Ok(WsEvent::Unknown) => {
                    tracing::debug!(
                        len = text.len(),
                        "skipping a WebSocket event of an unknown type"
                    );
                    Ok(None)
                }
                Ok(ev) => Ok(Some(ev)),
                Err(e) => {
                    // Log the frame's type only: bodies are chat text.
                    let kind = serde_json::from_str::<serde_json::Value>(text.as_str())
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                        .unwrap_or_else(|| "<not a typed JSON frame>".into());
                    let kind: String = kind.chars().take(FRAME_LOG_CHARS).collect();
                    tracing::warn!(error = %e, frame_type = %kind, len = text.len(), "skipping an unreadable WebSocket frame");
                    Ok(None)
                }
            },
            Message::Ping(_) => {
                // tungstenite queued the pong; only a flush puts it on the wire.
                self.flush().await?;
                Ok(None)
            }
            Message::Pong(_) => {
                // Any pong proves the link is alive.
                self.pong_due = None;
                Ok(None)
            }
            Message::Close(frame) => Err(WsError::Closed(
                frame
                    .map(|f| format!("{} {}", f.code, f.reason))
                    .unwrap_or_else(|| "close frame".into()),
            )),
            Message::Binary(b) => {
                tracing::warn!(len = b.len(), "skipping a binary WebSocket frame");
                Ok(None)
            }
            Message::Frame(_) => Ok(None),
        }
    }

    /// Close politely (best effort).
    pub async fn close(mut self) {
        let _ = self.stream.close(None).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

    /// Every wait in these tests is bounded by this.
    const BOUND: Duration = Duration::from_secs(5);

    fn fast() -> WsConfig {
        WsConfig {
            ping_interval: Duration::from_millis(50),
            pong_deadline: Duration::from_millis(150),
            hello_timeout: Duration::from_millis(500),
            connect_timeout: BOUND,
        }
    }

    fn quiet() -> WsConfig {
        WsConfig {
            ping_interval: Duration::from_secs(60),
            ..fast()
        }
    }

    fn text(v: serde_json::Value) -> Message {
        Message::text(v.to_string())
    }

    fn hello() -> Message {
        text(serde_json::json!({"type": "hello", "user_id": 7}))
    }

    fn recheck(conv: i64) -> Message {
        text(serde_json::json!({"type": "workroom.task.recheck", "conversation_id": conv}))
    }

    /// A one-connection server running `script` on the accepted socket.
    // The handshake callback's signature is tungstenite's, large error and all.
    #[allow(clippy::result_large_err)]
    async fn serve<F, Fut>(script: F) -> String
    where
        F: FnOnce(WebSocketStream<TcpStream>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}{}", l.local_addr().unwrap(), routes::WS);
        tokio::spawn(async move {
            let (tcp, _) = l.accept().await.unwrap();
            let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
                let auth = req
                    .headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok());
                if auth == Some("Bearer good") {
                    Ok(resp)
                } else {
                    let mut e = ErrorResponse::new(None);
                    *e.status_mut() = tungstenite::http::StatusCode::UNAUTHORIZED;
                    Err(e)
                }
            };
            if let Ok(ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await {
                script(ws).await;
            }
        });
        url
    }

    async fn next(c: &mut WsConnection) -> Result<WsEvent, WsError> {
        timeout(BOUND, c.next_event()).await.expect("bounded wait")
    }

    #[tokio::test]
    async fn bearer_is_sent_and_hello_gives_the_user() {
        let url = serve(|mut ws| async move {
            ws.send(hello()).await.unwrap();
            while ws.next().await.is_some() {}
        })
        .await;
        let c = connect_with_token(&url, "good", quiet()).await.unwrap();
        assert_eq!(c.user_id(), Some(7));
    }

    #[tokio::test]
    async fn a_refused_upgrade_is_unauthorized() {
        let url = serve(|_| async {}).await;
        let e = connect_with_token(&url, "bad", quiet()).await.unwrap_err();
        assert!(matches!(e, WsError::Unauthorized), "{e:?}");
    }

    /// Production may send no hello: the connection is served all the same.
    #[tokio::test]
    async fn a_missing_hello_does_not_fail_the_connection() {
        let (connected, go) = tokio::sync::oneshot::channel::<()>();
        let url = serve(|mut ws| async move {
            // Nothing until the client has given up waiting for a hello
            // (its connect returned): then an event, no hello ever.
            go.await.unwrap();
            ws.send(recheck(3)).await.unwrap();
            while ws.next().await.is_some() {}
        })
        .await;
        let mut c = connect_with_token(&url, "good", quiet()).await.unwrap();
        assert_eq!(c.user_id(), None);
        assert!(
            c.pending.is_empty(),
            "nothing arrived before the hello wait ended"
        );
        connected.send(()).unwrap();
        assert_eq!(
            next(&mut c).await.unwrap(),
            WsEvent::TaskRecheck {
                conversation_id: Some(3)
            }
        );
    }

    /// An unknown event type, an unknown message kind or mention element and
    /// unknown fields never fail a frame or the connection.
    #[tokio::test]
    async fn unknown_types_kinds_and_fields_are_tolerated() {
        let url = serve(|mut ws| async move {
            ws.send(hello()).await.unwrap();
            ws.send(text(
                serde_json::json!({"type": "typing.start", "user_id": 2}),
            ))
            .await
            .unwrap();
            ws.send(text(serde_json::json!({
                "type": "message.new", "conversation_id": 5, "extra": {"x": 1},
                "message": {"id": 9, "conversation_id": 5, "sender_id": 2,
                    "sender_username": "ann", "body": "~~~", "kind": "voice",
                    "mentions": [7, {"user_id": 7}, "here"], "created_at": 1,
                    "duration_ms": 4000}
            })))
            .await
            .unwrap();
            while ws.next().await.is_some() {}
        })
        .await;
        let mut c = connect_with_token(&url, "good", quiet()).await.unwrap();
        match next(&mut c).await.unwrap() {
            WsEvent::MessageNew { message, .. } => {
                assert_eq!(message.id, 9);
                assert_eq!(message.kind, crate::types::MessageKind::Voice);
                assert_eq!(
                    message.mentions,
                    [
                        crate::types::Mention::User(7),
                        crate::types::Mention::Unknown,
                        crate::types::Mention::Unknown
                    ]
                );
            }
            e => panic!("{e:?}"),
        }
    }

    #[tokio::test]
    async fn garbage_frames_are_skipped_and_events_before_hello_kept() {
        let url = serve(|mut ws| async move {
            ws.send(recheck(1)).await.unwrap();
            ws.send(hello()).await.unwrap();
            ws.send(Message::text("not json")).await.unwrap();
            ws.send(text(serde_json::json!({"type": "no.such.event"})))
                .await
                .unwrap();
            ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
            ws.send(recheck(2)).await.unwrap();
            while ws.next().await.is_some() {}
        })
        .await;
        let mut c = connect_with_token(&url, "good", quiet()).await.unwrap();
        let want = |id| WsEvent::TaskRecheck {
            conversation_id: Some(id),
        };
        assert_eq!(next(&mut c).await.unwrap(), want(1));
        assert_eq!(next(&mut c).await.unwrap(), want(2));
    }

    #[tokio::test]
    async fn an_unanswered_ping_is_a_pong_timeout() {
        let url = serve(|mut ws| async move {
            ws.send(hello()).await.unwrap();
            // Never read again: no pong is ever sent. Hold the socket open.
            tokio::time::sleep(BOUND * 2).await;
            drop(ws);
        })
        .await;
        let mut c = connect_with_token(&url, "good", fast()).await.unwrap();
        let started = Instant::now();
        let e = next(&mut c).await.unwrap_err();
        assert!(matches!(e, WsError::PongTimeout), "{e:?}");
        let took = started.elapsed();
        // The upper bound only proves the configured deadline is used (the
        // default would take 25 s); it is loose for loaded machines.
        let (cfg, slack) = (fast(), Duration::from_secs(3));
        assert!(
            took >= cfg.ping_interval + cfg.pong_deadline - Duration::from_millis(5)
                && took < cfg.ping_interval + cfg.pong_deadline + slack,
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn answered_pings_keep_the_connection_alive() {
        let pings = Arc::new(AtomicUsize::new(0));
        let seen = pings.clone();
        let url = serve(move |ws| async move {
            let (mut tx, mut rx) = ws.split();
            tx.send(hello()).await.unwrap();
            while let Some(Ok(m)) = rx.next().await {
                if let Message::Ping(p) = m {
                    tx.send(Message::Pong(p)).await.unwrap();
                    // Several pong deadlines have passed once six pings came.
                    if seen.fetch_add(1, Ordering::SeqCst) + 1 == 6 {
                        tx.send(recheck(5)).await.unwrap();
                    }
                }
            }
        })
        .await;
        let mut c = connect_with_token(&url, "good", fast()).await.unwrap();
        assert_eq!(
            next(&mut c).await.unwrap(),
            WsEvent::TaskRecheck {
                conversation_id: Some(5)
            }
        );
        assert!(pings.load(Ordering::SeqCst) >= 6);
    }

    #[tokio::test]
    async fn a_pong_that_arrived_while_nobody_polled_still_counts() {
        // The server tells when it got the first ping and when its pong is
        // on the wire; it sends that pong only once the client stopped polling.
        let (got_ping, ping_seen) = tokio::sync::oneshot::channel::<()>();
        let (stopped, may_pong) = tokio::sync::oneshot::channel::<()>();
        let (ponged, pong_sent) = tokio::sync::oneshot::channel::<()>();
        let url = serve(|ws| async move {
            let (mut tx, mut rx) = ws.split();
            tx.send(hello()).await.unwrap();
            let (mut got_ping, mut may_pong, mut ponged) =
                (Some(got_ping), Some(may_pong), Some(ponged));
            let mut pings = 0;
            while let Some(Ok(m)) = rx.next().await {
                if let Message::Ping(p) = m {
                    pings += 1;
                    if let (Some(got), Some(may)) = (got_ping.take(), may_pong.take()) {
                        got.send(()).unwrap();
                        may.await.unwrap();
                    }
                    tx.send(Message::Pong(p)).await.unwrap();
                    if let Some(sent) = ponged.take() {
                        sent.send(()).unwrap();
                    }
                    if pings == 2 {
                        tx.send(recheck(3)).await.unwrap();
                    }
                }
            }
        })
        .await;
        let cfg = WsConfig {
            ping_interval: Duration::from_millis(50),
            pong_deadline: Duration::from_millis(100),
            ..quiet()
        };
        let mut c = connect_with_token(&url, "good", cfg).await.unwrap();
        // Poll until the first ping is out, then stop polling (a busy caller).
        tokio::select! {
            r = c.next_event() => panic!("no event before the first ping: {r:?}"),
            r = timeout(BOUND, ping_seen) => r.expect("bounded wait").unwrap(),
        }
        let due = c.pong_due.expect("the ping is outstanding");
        stopped.send(()).unwrap();
        timeout(BOUND, pong_sent)
            .await
            .expect("bounded wait")
            .unwrap();
        // Not polled until the deadline has passed, the pong waiting unread.
        tokio::time::sleep_until(due).await;
        // The pong is buffered and the deadline has passed: the pong wins.
        assert_eq!(
            next(&mut c).await.unwrap(),
            WsEvent::TaskRecheck {
                conversation_id: Some(3)
            }
        );
    }

    #[tokio::test]
    async fn server_pings_are_answered_while_waiting() {
        let url = serve(|mut ws| async move {
            ws.send(hello()).await.unwrap();
            ws.send(Message::Ping(Bytes::from_static(b"are-you-there")))
                .await
                .unwrap();
            // Wait for the pong, then release the client with an event.
            let got = timeout(BOUND, async {
                while let Some(Ok(m)) = ws.next().await {
                    if let Message::Pong(p) = m {
                        return p;
                    }
                }
                Bytes::new()
            })
            .await
            .unwrap_or_default();
            let id = if got.as_ref() == b"are-you-there" {
                1
            } else {
                0
            };
            ws.send(recheck(id)).await.unwrap();
            while ws.next().await.is_some() {}
        })
        .await;
        let mut c = connect_with_token(&url, "good", quiet()).await.unwrap();
        assert_eq!(
            next(&mut c).await.unwrap(),
            WsEvent::TaskRecheck {
                conversation_id: Some(1)
            },
            "the server got our pong with its payload"
        );
    }

    #[tokio::test]
    async fn a_close_frame_ends_the_connection_with_an_error() {
        let url = serve(|mut ws| async move {
            ws.send(hello()).await.unwrap();
            let _ = ws.close(None).await;
        })
        .await;
        let mut c = connect_with_token(&url, "good", quiet()).await.unwrap();
        let e = next(&mut c).await.unwrap_err();
        assert!(matches!(e, WsError::Closed(_)), "{e:?}");
    }

    #[test]
    fn ws_url_from_base() {
        assert_eq!(
            ws_url("http://127.0.0.1:8080/").unwrap(),
            "ws://127.0.0.1:8080/v1/ws"
        );
        assert_eq!(
            ws_url("https://h.example").unwrap(),
            "wss://h.example/v1/ws"
        );
        assert!(ws_url("ftp://x").is_err());
    }

    /// A peer that stops reading: the pongs the client owes it pile up
    /// until a flush cannot complete; that is a bounded error, not a hang.
    #[tokio::test]
    async fn a_peer_that_stops_reading_is_a_write_timeout() {
        let url = serve(|mut ws| async move {
            ws.send(hello()).await.unwrap();
            // Ping for ever and never read: the client's pongs fill the
            // socket buffers.
            let payload = Bytes::from(vec![7u8; 125]);
            for _ in 0..2_000_000 {
                if ws.feed(Message::Ping(payload.clone())).await.is_err() {
                    return;
                }
            }
            let _ = ws.flush().await;
        })
        .await;
        let mut c = connect_with_token(&url, "good", quiet()).await.unwrap();
        let e = timeout(Duration::from_secs(60), c.next_event())
            .await
            .expect("bounded")
            .unwrap_err();
        assert!(matches!(e, WsError::WriteTimeout), "{e:?}");
    }
}
