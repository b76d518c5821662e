use std::sync::Arc;

use hoop_api::routes::{self, fill, fill_task};
use proptest::prelude::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Srv, WAIT};

/// Declare a `len`-byte body on `path` with `Expect: 100-continue` and send
/// none of it: a server that refuses by the declared length answers at once
/// → (status, response text).
pub async fn post_raw_len(
    srv: &Srv,
    path: &str,
    bearer: Option<&str>,
    len: usize,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(srv.run.addr).await.unwrap();
    let auth = bearer
        .map(|b| format!("Authorization: Bearer {b}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {len}\r\n\r\n",
        srv.run.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(WAIT, async {
        let mut tmp = [0u8; 4096];
        loop {
            let n = stream.read(&mut tmp).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&tmp[..n]);
            let text = String::from_utf8_lossy(&buf);
            if let Some(end) = text.find("\r\n\r\n") {
                let cl = text[..end].lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                });
                if cl.is_some_and(|cl| buf.len() >= end + 4 + cl) {
                    break;
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "an answer without the body being sent");
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn malformed_json_unknown_routes_and_methods_answer_json_errors() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("r", &[&ann], false).await;
    let t = srv.login(&ann).await;
    let path = fill(routes::CONVERSATION_MESSAGES, room.id);
    let text_path = fill(routes::CONVERSATION_TEXT, room.id);
    let r = srv
        .send_req(
            srv.http
                .post(format!("{}{text_path}", srv.base))
                .header("content-type", "application/json")
                .body("{\"body\": "),
            Some(&t),
        )
        .await;
    assert_eq!((r.status, r.code()), (400, "bad_request"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("JSON")
    );
    let r = srv.post(Some(&t), &text_path, json!({"body": 12})).await;
    assert_eq!((r.status, r.code()), (400, "bad_request"), "wrong types");
    let r = srv.get(Some(&t), "/v1/nope").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = srv
        .send_req(
            srv.http.delete(format!("{}{}", srv.base, routes::ME)),
            Some(&t),
        )
        .await;
    assert_eq!((r.status, r.code()), (405, "method_not_allowed"));
    let r = srv
        .get(
            Some(&t),
            &routes::CONVERSATION_MESSAGES.replace("{id}", "abc"),
        )
        .await;
    assert_eq!((r.status, r.code()), (400, "bad_request"));
    let r = srv.get(Some(&t), &format!("{path}?limit=lots")).await;
    assert_eq!((r.status, r.code()), (400, "bad_request"));
    let r = srv.send_text(&t, 424242, "hi").await;
    assert_eq!(
        (r.status, r.code()),
        (404, "not_found"),
        "unknown conversation"
    );
    let r = srv.get(None, routes::admin::USERS).await;
    assert_eq!(r.status, 401, "admin needs its token");
}

#[tokio::test]
async fn an_oversized_body_is_413_json_and_nothing_is_stored() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("r", &[&ann], false).await;
    let t = srv.login(&ann).await;
    let path = fill(routes::CONVERSATION_MESSAGES, room.id);
    let (status, text) = post_raw_len(
        &srv,
        &fill(routes::CONVERSATION_TEXT, room.id),
        Some(&t),
        hoop_core::limits::REST_BODY_CAP_BYTES + 1,
    )
    .await;
    assert_eq!(status, 413, "{text}");
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["error"]["code"], "payload_too_large");
    let page = srv.get(Some(&t), &path).await;
    assert_eq!(page.body["messages"], json!([]));
}

/// Every route the server mounts, with ids filled in (but the fault
/// injection, whose purpose is a 500).
fn all_routes(conv: i64, card: i64) -> Vec<(&'static str, String)> {
    use routes::admin as a;
    vec![
        ("POST", routes::LOGIN.into()),
        ("GET", routes::ME.into()),
        ("GET", routes::CONVERSATIONS.into()),
        ("GET", fill(routes::CONVERSATION_MEMBERS, conv)),
        ("GET", fill(routes::CONVERSATION_MESSAGES, conv)),
        ("POST", fill(routes::CONVERSATION_TEXT, conv)),
        ("POST", fill(routes::CONVERSATION_IMAGES, conv)),
        ("POST", routes::HEARTBEAT.into()),
        ("GET", routes::PRESENCE.into()),
        ("POST", routes::USAGE.into()),
        ("GET", routes::TASKS.into()),
        ("POST", fill_task(routes::WORKROOM_TASKS, conv, "")),
        ("GET", fill_task(routes::WORKROOM_TASK, conv, card)),
        (
            "POST",
            fill_task(routes::WORKROOM_TASK_PROGRESS, conv, card),
        ),
        ("POST", fill_task(routes::WORKROOM_TASK_LEASE, conv, card)),
        ("POST", fill_task(routes::WORKROOM_TASK_FINISH, conv, card)),
        ("GET", routes::WINDOWS.into()),
        ("POST", routes::WINDOWS.into()),
        ("POST", fill(routes::WINDOW_SYNC, "w")),
        ("POST", fill(routes::WINDOW_REVOKE, "w")),
        ("POST", routes::PROVISION_REDEEM.into()),
        ("POST", routes::REINFORCE_APPLICATIONS.into()),
        ("POST", fill(routes::REINFORCE_AGENT_KEY, conv)),
        ("POST", routes::MCP.into()),
        ("POST", a::USERS.into()),
        ("POST", a::CONVERSATIONS.into()),
        ("POST", fill(a::CONVERSATION_MEMBERS, conv)),
        ("POST", fill(a::POST_AS, conv)),
        ("POST", fill(a::USER_STATE, conv)),
        ("POST", a::MCP_KEYS.into()),
        ("POST", a::MCP_KEYS_REVOKE.into()),
        ("POST", a::PROVISION_KEYS.into()),
        ("POST", fill(a::REINFORCE_APPROVE, conv)),
        ("POST", a::CARDS.into()),
        ("POST", a::PUSH.into()),
        ("POST", a::CLOCK_ADVANCE.into()),
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        ".{0,12}".prop_map(serde_json::Value::from),
        prop::sample::select(vec![
            "everyone",
            "done",
            "failed",
            "working",
            "hoopmcp_x",
            "tools/call",
            "2.0",
            "chat_read",
            "a.b.c"
        ])
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "body",
                    "mentions",
                    "kind",
                    "email",
                    "code",
                    "title",
                    "status",
                    "error",
                    "parent_id",
                    "assignee_id",
                    "conversation_id",
                    "card_id",
                    "tokens_in",
                    "key",
                    "name",
                    "jsonrpc",
                    "id",
                    "method",
                    "params",
                    "arguments",
                    "secs",
                    "user_id",
                    "sender_id",
                    "event",
                    "data_base64",
                    "mime",
                    "limit",
                    "before",
                    "expect_latest_id",
                    "force",
                    "note",
                    "window_id",
                    "rooms_hint",
                ])
                .prop_map(String::from),
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        prop::collection::vec(any::<u8>(), 0..64),
    ]
}

#[test]
fn random_bodies_to_every_route_never_break_the_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (srv, user_token, mcp_key, conv, card) = rt.block_on(async {
        let srv = Srv::start().await;
        let ann = srv.user("ann", true).await;
        let room = srv.room("r", &[&ann], true).await;
        let t = srv.login(&ann).await;
        let k = srv.mint_key(&ann).await;
        let c = srv
            .post(
                Some(&t),
                &fill_task(routes::WORKROOM_TASKS, room.id, ""),
                json!({"title": "c", "assignee_id": ann.id}),
            )
            .await;
        (Arc::new(srv), t, k, room.id, c.body["id"].as_i64().unwrap())
    });
    let routes = all_routes(conv, card);
    let n = routes.len();
    let admin = srv.run.admin_token.clone();
    let cfg = ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(cfg, |(idx in 0..n, payload in body(), auth in 0..3u8)| {
        let (method, path) = routes[idx].clone();
        let srv = srv.clone();
        let bearer = match (auth, path.as_str()) {
            (0, _) => None,
            (_, p) if p == routes::MCP => Some(mcp_key.clone()),
            (_, p) if p.starts_with("/v1/admin") => Some(admin.clone()),
            _ => Some(user_token.clone()),
        };
        let (status, body) = rt.block_on(async move {
            let url = format!("{}{path}", srv.base);
            let mut rb = if method == "GET" { srv.http.get(url) } else { srv.http.post(url) };
            rb = rb.header("content-type", "application/json").body(payload);
            if let Some(b) = bearer { rb = rb.bearer_auth(b); }
            let resp = rb.send().await.expect("the server answers");
            let status = resp.status().as_u16();
            (status, resp.bytes().await.unwrap_or_default())
        });
        prop_assert!(status < 500, "status {} body {:?}", status, String::from_utf8_lossy(&body));
        if status >= 400 && status != 429 {
            let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON error body");
            prop_assert!(v.get("error").is_some() || v.get("jsonrpc").is_some(), "{}", v);
        }
    });
    // Still serving afterwards.
    rt.block_on(async {
        assert_eq!(srv.get(Some(&user_token), routes::ME).await.status, 200);
    });
}
