//! One server per test, driven over real loopback HTTP and WebSocket.

use std::time::Duration;

use futures_util::StreamExt;
use hoop_api::admin::{AdminClient, CreateConversation, CreateUser};
use hoop_api::routes;
use hoop_api::types::{Conversation, User, WsEvent};
use hoop_refbackend::{Config, Running};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

pub struct Srv {
    pub run: Running,
    pub http: reqwest::Client,
    pub base: String,
    pub admin: AdminClient,
}

pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

impl Srv {
    pub async fn start() -> Srv {
        Srv::start_with(Config::default()).await
    }

    pub async fn start_with(cfg: Config) -> Srv {
        let run = hoop_refbackend::spawn("127.0.0.1:0".parse().unwrap(), cfg)
            .await
            .expect("server starts");
        let base = run.base_url();
        let admin = AdminClient::new(&base, &run.admin_token);
        Srv {
            run,
            http: reqwest::Client::builder()
                .timeout(WAIT * 3)
                .build()
                .unwrap(),
            base,
            admin,
        }
    }

    pub async fn user(&self, name: &str, agent: bool) -> User {
        self.admin
            .create_user(&CreateUser {
                email: format!("{name}@example.test"),
                username: name.into(),
                nickname: None,
                is_agent: agent,
            })
            .await
            .expect("user created")
    }

    pub async fn room(&self, title: &str, members: &[&User], workroom: bool) -> Conversation {
        self.admin
            .create_conversation(&CreateConversation {
                title: title.into(),
                is_workroom: workroom,
                member_ids: members.iter().map(|u| u.id).collect(),
            })
            .await
            .expect("room created")
    }

    /// Log `user` in: an agent with the fixed code, a person with a
    /// one-time code the operator issues.
    pub async fn login(&self, user: &User) -> String {
        let code = self.login_code(user).await;
        let r = self
            .post(
                None,
                routes::LOGIN,
                json!({"email": user.email, "code": code}),
            )
            .await;
        assert_eq!(r.status, 200, "login: {}", r.body);
        r.body["token"].as_str().unwrap().to_string()
    }

    /// The code `user` logs in with: the fixed one for an agent, a fresh
    /// one-time code for a person.
    pub async fn login_code(&self, user: &User) -> String {
        if user.is_agent {
            hoop_core::limits::FIXED_LOGIN_CODE.to_string()
        } else {
            self.admin
                .issue_login_code(user.id)
                .await
                .expect("code issued")
                .code
        }
    }

    pub async fn send_req(&self, rb: reqwest::RequestBuilder, token: Option<&str>) -> Resp {
        let rb = match token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        };
        let resp = rb.send().await.expect("request answered");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body read");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                panic!(
                    "non-JSON body ({status}): {:?}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, token: Option<&str>, path: &str) -> Resp {
        self.send_req(self.http.get(format!("{}{path}", self.base)), token)
            .await
    }

    pub async fn post(&self, token: Option<&str>, path: &str, body: Value) -> Resp {
        self.send_req(
            self.http.post(format!("{}{path}", self.base)).json(&body),
            token,
        )
        .await
    }

    pub async fn send_text(&self, token: &str, conv: i64, body: &str) -> Resp {
        self.post(
            Some(token),
            &routes::fill(routes::CONVERSATION_TEXT, conv),
            json!({"body": body}),
        )
        .await
    }

    /// One JSON-RPC call on /mcp with `key` as bearer.
    pub async fn mcp(&self, key: &str, body: Value) -> Resp {
        self.send_req(
            self.http
                .post(format!("{}{}", self.base, routes::MCP))
                .header("Accept", "application/json, text/event-stream")
                .json(&body),
            Some(key),
        )
        .await
    }

    /// `tools/call` → (isError, structuredContent). A refusal is
    /// production's text form only (seed 002 L51); it is given back as the
    /// `ErrorBody` it reads as (`hoop_api::mcp::parse_refusal_text`).
    pub async fn tool(&self, key: &str, name: &str, args: Value) -> (bool, Value) {
        let r = self
            .mcp(
                key,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": args}}),
            )
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        let res = &r.body["result"];
        let said = res["content"][0]["text"].as_str().expect("text content");
        if res["isError"] == json!(true) {
            assert_eq!(res.get("structuredContent"), None, "a refusal is text only");
            let (_, eb) = hoop_api::mcp::parse_refusal_text(said).expect("production's text form");
            return (true, serde_json::to_value(eb).unwrap());
        }
        let text: Value = serde_json::from_str(said).expect("text content is JSON");
        assert_eq!(text, res["structuredContent"], "text and structured agree");
        (
            res["isError"].as_bool().expect("isError"),
            res["structuredContent"].clone(),
        )
    }

    pub async fn mint_key(&self, user: &User) -> String {
        self.admin.mint_mcp_key(user.id).await.unwrap().key
    }
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connect with the Bearer header and return the socket after `hello`.
pub async fn ws_connect(srv: &Srv, token: &str) -> (Ws, WsEvent) {
    use tungstenite::client::IntoClientRequest;
    let url = format!("{}{}", srv.base.replacen("http", "ws", 1), routes::WS);
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("Authorization", format!("Bearer {token}").parse().unwrap());
    let (mut ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("ws connect in time")
        .expect("ws connects");
    let hello = next_event(&mut ws).await.expect("hello frame");
    (ws, hello)
}

/// The next event frame (None when the socket closed).
pub async fn next_event(ws: &mut Ws) -> Option<WsEvent> {
    loop {
        let frame = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a frame in time");
        match frame {
            Some(Ok(tungstenite::Message::Text(t))) => {
                return Some(serde_json::from_str(&t).expect("a WsEvent"));
            }
            Some(Ok(tungstenite::Message::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => continue,
        }
    }
}
