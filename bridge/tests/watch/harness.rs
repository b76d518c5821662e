//! One reference backend per test over real loopback sockets, reached
//! through a small forwarding proxy that can fail on demand (everything, or
//! only the window tools), and a watcher on a hand-moved clock.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::routes;
use hoop_api::types::{Conversation, Mention, Message, RegisterWindow, SendMessage, User};
use hoop_bridge::clock::ManualClock;
use hoop_bridge::config::{Allowlist, Endpoint};
use hoop_bridge::detect::Event;
use hoop_bridge::watch::{WatchConfig, Watcher};
use hoop_refbackend::{Config, Running};

#[derive(Default)]
pub struct Faults {
    /// Answer 503 to every request.
    pub down: AtomicBool,
    /// Answer 503 to `window_register` / `window_sync` only.
    pub windows: AtomicBool,
    /// Requests forwarded to the backend.
    pub forwarded: AtomicU64,
}

pub struct World {
    pub run: Running,
    pub admin: AdminClient,
    pub proxy: String,
    pub faults: Arc<Faults>,
    pub bolt: User,
    pub ann: User,
    pub nova: User,
    pub key: String,
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    pub clock: ManualClock,
}

struct ProxyState {
    backend: String,
    http: reqwest::Client,
    faults: Arc<Faults>,
}

async fn forward(State(s): State<Arc<ProxyState>>, headers: HeaderMap, body: Bytes) -> Response {
    if s.faults.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    if s.faults.windows.load(Ordering::SeqCst) {
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let tool = v["params"]["name"].as_str().unwrap_or("");
        if tool.starts_with("window_") {
            return (StatusCode::SERVICE_UNAVAILABLE, "windows down").into_response();
        }
    }
    s.faults.forwarded.fetch_add(1, Ordering::SeqCst);
    let mut rb = s
        .http
        .post(format!("{}{}", s.backend, routes::MCP))
        .body(body);
    for (k, v) in headers.iter() {
        if k != "host" && k != "content-length" {
            rb = rb.header(k, v);
        }
    }
    match rb.send().await {
        Ok(r) => {
            let status = StatusCode::from_u16(r.status().as_u16()).unwrap();
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_string();
            let bytes = r.bytes().await.unwrap_or_default();
            (status, [("content-type", ct)], bytes).into_response()
        }
        Err(_) => (StatusCode::BAD_GATEWAY, "backend unreachable").into_response(),
    }
}

async fn proxy(backend: String, faults: Arc<Faults>) -> String {
    let st = Arc::new(ProxyState {
        backend,
        http: reqwest::Client::new(),
        faults,
    });
    let app = axum::Router::new()
        .route(routes::MCP, axum::routing::post(forward))
        .with_state(st);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    base
}

impl World {
    pub async fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("backend.sqlite");
        let run = hoop_refbackend::spawn(
            "127.0.0.1:0".parse().unwrap(),
            Config {
                db: Some(db.clone()),
                ..Config::default()
            },
        )
        .await
        .unwrap();
        let admin = AdminClient::new(&run.base_url(), &run.admin_token);
        let user = |name: &str, agent: bool| CreateUser {
            email: format!("{name}@example.test"),
            username: name.into(),
            nickname: Some(format!("{name}-nick")),
            is_agent: agent,
        };
        let bolt = admin.create_user(&user("bolt", true)).await.unwrap();
        let ann = admin.create_user(&user("ann", false)).await.unwrap();
        let nova = admin.create_user(&user("nova", true)).await.unwrap();
        let key = admin.mint_mcp_key(bolt.id).await.unwrap().key;
        let faults = Arc::new(Faults::default());
        let proxy = proxy(run.base_url(), faults.clone()).await;
        World {
            run,
            admin,
            proxy,
            faults,
            bolt,
            ann,
            nova,
            key,
            dir,
            db,
            clock: ManualClock::default(),
        }
    }

    pub async fn room(&self, title: &str, members: &[&User]) -> Conversation {
        self.admin
            .create_conversation(&CreateConversation {
                title: title.into(),
                is_workroom: false,
                member_ids: members.iter().map(|u| u.id).collect(),
            })
            .await
            .unwrap()
    }

    pub async fn post(&self, room: &Conversation, from: &User, body: &str) -> Message {
        self.post_m(room, from, body, vec![]).await
    }

    pub async fn post_m(
        &self,
        room: &Conversation,
        from: &User,
        body: &str,
        mentions: Vec<Mention>,
    ) -> Message {
        self.admin
            .post_as(
                room.id,
                &PostAs {
                    sender_id: from.id,
                    message: SendMessage {
                        body: body.into(),
                        mentions,
                    },
                    kind: Default::default(),
                },
            )
            .await
            .unwrap()
    }

    pub fn config(&self, session: &str, rooms: &[i64], fallback: bool) -> WatchConfig {
        WatchConfig {
            endpoint: Endpoint {
                base_url: self.proxy.clone(),
                key: self.key.clone(),
            },
            me: self.bolt.id,
            register: RegisterWindow {
                installation_id: "inst-test".into(),
                machine: "m1".into(),
                client: "claude-code".into(),
                native_session_id: session.into(),
                runtime_id: "rt".into(),
                rooms_hint: rooms.to_vec(),
                fallback_hint: fallback,
            },
            local_rooms: rooms.to_vec(),
            state_path: self.dir.path().join(format!("state-{session}.json")),
            claims_path: Some(self.dir.path().join("claims.json")),
            allowlist: Allowlist::default(),
        }
    }

    pub fn watcher(&self, cfg: WatchConfig) -> Watcher {
        Watcher::new(cfg, Arc::new(self.clock.clone())).unwrap()
    }

    /// One poll interval later, one round.
    pub async fn tick(&self, w: &mut Watcher) -> Vec<Event> {
        self.clock.advance(Duration::from_secs(5));
        w.round().await.expect("round")
    }

    /// Log in as a user over REST (for the owner-side window routes).
    pub async fn login(&self, u: &User) -> String {
        let r: serde_json::Value = reqwest::Client::new()
            .post(format!("{}{}", self.run.base_url(), routes::LOGIN))
            .json(&serde_json::json!({"email": u.email, "code": "123456"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["token"].as_str().unwrap().to_string()
    }
}

/// The message ids of a round's lines, with their types.
pub fn rung(events: &[Event]) -> Vec<(i64, &'static str)> {
    events
        .iter()
        .filter_map(|e| e.message_id.map(|id| (id, e.kind.as_str())))
        .collect()
}
