use serde_json::json;

use crate::support::Srv;

const TOOLS: [&str; 14] = [
    "chat_list",
    "chat_read",
    "chat_members",
    "chat_send_text",
    "chat_send_image",
    "work_tasks",
    "work_beat",
    "work_task_start",
    "work_task_take",
    "work_task_progress",
    "work_task_lease",
    "work_task_finish",
    "window_register",
    "window_sync",
];

#[tokio::test]
async fn stateless_json_initialize_and_the_whole_tool_set() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let key = srv.mint_key(&r9).await;
    let init = srv
        .mcp(
            &key,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "0"}}}),
        )
        .await;
    assert_eq!(init.status, 200);
    assert!(
        init.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(init.body["result"]["protocolVersion"], "2025-03-26");
    assert!(init.headers.get("mcp-session-id").is_none(), "stateless");
    let n = srv
        .mcp(
            &key,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    assert_eq!(n.status, 202);
    // No session needed: a fresh tools/list works on its own.
    let list = srv
        .mcp(
            &key,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
    let mut names: Vec<&str> = list.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    let mut want = TOOLS.to_vec();
    want.sort();
    assert_eq!(names, want);
    let r = srv
        .mcp(
            &key,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "rm_rf", "arguments": {}}}),
        )
        .await;
    assert_eq!(r.body["error"]["code"], -32602);
    let get = srv.get(Some(&key), hoop_api::routes::MCP).await;
    assert_eq!(get.status, 405, "POST only");
}

#[tokio::test]
async fn chat_read_limits_and_shape() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let r9 = srv.user("r9", true).await;
    let room = srv.room("r", &[&ann, &r9], false).await;
    let ta = srv.login(&ann).await;
    for i in 0..60 {
        srv.send_text(&ta, room.id, &format!("m{i}")).await;
    }
    let key = srv.mint_key(&r9).await;
    let (err, v) = srv
        .tool(&key, "chat_read", json!({"conversation_id": room.id}))
        .await;
    assert!(!err);
    assert_eq!(v["count"], 20, "default 20");
    assert_eq!(v["order"], "newest_first");
    assert_eq!(v["truncated"], true);
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["body"], "m59");
    assert_eq!(v["oldest_created_at"], msgs[19]["created_at"]);
    let (_, v) = srv
        .tool(
            &key,
            "chat_read",
            json!({"conversation_id": room.id, "limit": 500}),
        )
        .await;
    assert_eq!(v["count"], 50, "at most 50");
    let (_, v) = srv
        .tool(
            &key,
            "chat_read",
            json!({"conversation_id": room.id, "limit": 0}),
        )
        .await;
    assert_eq!(v["count"], 1, "at least 1");
    let (_, v) = srv
        .tool(&key, "chat_read", json!({"conversation_id": room.id, "limit": 50, "before": msgs[0]["id"].as_i64().unwrap() - 49}))
        .await;
    assert_eq!(
        (v["count"].as_u64(), v["truncated"].as_bool()),
        (Some(10), Some(false))
    );
    let (err, v) = srv
        .tool(&key, "chat_members", json!({"conversation_id": room.id}))
        .await;
    assert!(!err);
    assert_eq!(v["members"].as_array().unwrap().len(), 2);
    let (err, v) = srv.tool(&key, "chat_list", json!({})).await;
    assert!(!err);
    assert_eq!(v["conversations"][0]["id"], room.id);
}

#[tokio::test]
async fn chat_send_text_goes_through_the_same_gates() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let r9 = srv.user("r9", true).await;
    let room = srv.room("r", &[&ann, &r9], false).await;
    let key = srv.mint_key(&r9).await;
    let (err, v) = srv
        .tool(
            &key,
            "chat_send_text",
            json!({"conversation_id": room.id, "body": "**no**"}),
        )
        .await;
    assert!(err);
    assert_eq!(v["error"]["code"], "markdown_refused");
    let (err, v) = srv
        .tool(
            &key,
            "chat_send_text",
            json!({"conversation_id": room.id, "body": "hi", "mentions": [ann.id, 999]}),
        )
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["mentions"], json!([ann.id]));
    let ta = srv.login(&ann).await;
    let newer = srv.send_text(&ta, room.id, "did you see").await.body["id"]
        .as_i64()
        .unwrap();
    let (err, v) = srv
        .tool(
            &key,
            "chat_send_text",
            json!({"conversation_id": room.id, "body": "x", "expect_latest_id": newer - 1}),
        )
        .await;
    assert!(err);
    assert_eq!(
        (
            v["error"]["code"].as_str(),
            v["error"]["latest_id"].as_i64()
        ),
        (Some("gap"), Some(newer))
    );
    let (err, _) = srv
        .tool(&key, "chat_send_text", json!({"conversation_id": room.id, "body": "x", "expect_latest_id": newer - 1, "force": true}))
        .await;
    assert!(!err);
    let (err, v) = srv
        .tool(&key, "chat_send_image", json!({"conversation_id": room.id, "data_base64": "iVBORw0KGgo=", "mime": "image/png", "caption": "a chart"}))
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["kind"], "image");
    let (err, v) = srv
        .tool(
            &key,
            "chat_send_image",
            json!({"conversation_id": room.id, "data_base64": "@@@", "mime": "image/png"}),
        )
        .await;
    assert!(err);
    assert_eq!(v["error"]["code"], "bad_request");
}

#[tokio::test]
async fn work_and_window_tools() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let key = srv.mint_key(&r9).await;
    let room = srv.room("r", &[&r9], true).await.id;
    let (err, v) = srv.tool(&key, "work_beat", json!({})).await;
    assert!(!err);
    assert_eq!(v["next_beat_sec"], 60);
    let (err, card) = srv
        .tool(
            &key,
            "work_task_start",
            json!({"conversation_id": room, "title": "t1"}),
        )
        .await;
    assert!(!err, "{card}");
    assert_eq!(
        (card["status"].as_str(), &card["lease_expires_at"]),
        (Some("working"), &json!(null))
    );
    let id = card["id"].as_i64().unwrap();
    let (err, v) = srv
        .tool(
            &key,
            "work_task_start",
            json!({"conversation_id": room, "title": "t2"}),
        )
        .await;
    assert!(err);
    assert_eq!(v["error"]["code"], "agent_busy");
    // Production: the assign stood, the claim did not; the error names the
    // queued orphan.
    let orphan = v["error"]["task_id"].as_i64().expect("task_id");
    let (_, v) = srv.tool(&key, "work_tasks", json!({})).await;
    let cards: Vec<(i64, &str)> = v["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_i64().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(cards, [(orphan, "queued"), (id, "working")]);
    let (err, v) = srv
        .tool(&key, "work_task_lease", json!({"task_id": id}))
        .await;
    assert!(!err);
    assert_eq!(v["renew_after_sec"], 60);
    let (err, v) = srv
        .tool(
            &key,
            "work_task_progress",
            json!({"task_id": id, "line": "n"}),
        )
        .await;
    assert!(!err, "{v}");
    let (err, v) = srv
        .tool(
            &key,
            "work_task_finish",
            json!({"task_id": id, "status": "failed"}),
        )
        .await;
    assert!(err);
    assert_eq!(v["error"]["code"], "error_required");
    let (err, v) = srv
        .tool(
            &key,
            "work_task_finish",
            json!({"task_id": id, "status": "done", "result": "shipped"}),
        )
        .await;
    assert!(!err);
    assert_eq!(
        (&v["updated"], &v["task"]["status"], &v["task"]["result"]),
        (&json!(true), &json!("done"), &json!("shipped"))
    );
    let (err, v) = srv
        .tool(
            &key,
            "work_task_finish",
            json!({"task_id": id, "status": "done"}),
        )
        .await;
    assert_eq!((err, v), (false, json!({"updated": false})));
    let (err, v) = srv
        .tool(&key, "work_task_take", json!({"task_id": orphan}))
        .await;
    assert!(!err, "{v}");
    assert_eq!(v["status"], "working");
    let (err, v) = srv
        .tool(&key, "work_task_lease", json!({"task_id": id}))
        .await;
    assert!(err);
    assert_eq!(v["error"]["code"], "not_working");

    let (err, w) = srv
        .tool(
            &key,
            "window_register",
            json!({"installation_id": "i", "machine": "m", "client": "codex",
              "native_session_id": "s", "runtime_id": "r", "fallback_hint": true}),
        )
        .await;
    assert!(!err, "{w}");
    let (err, s) = srv
        .tool(&key, "window_sync", json!({"window_id": w["window_id"]}))
        .await;
    assert!(!err);
    assert_eq!(s["mode"], "fallback");
    let (err, s) = srv
        .tool(&key, "window_sync", json!({"window_id": "gone"}))
        .await;
    assert!(err);
    assert_eq!(s["error"]["code"], "window_not_found");
}

#[tokio::test]
async fn three_hundred_calls_a_minute_per_key_then_429_retry_after_60() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let key = srv.mint_key(&r9).await;
    let other = srv.mint_key(&r9).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for i in 0..300 {
        assert_eq!(srv.mcp(&key, ping.clone()).await.status, 200, "call {i}");
    }
    let r = srv.mcp(&key, ping.clone()).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.headers["retry-after"], "60");
    assert_eq!(r.body["error"]["code"], -32000);
    assert_eq!(srv.mcp(&other, ping.clone()).await.status, 200, "per key");
    srv.run.clock().advance(60);
    assert_eq!(srv.mcp(&key, ping).await.status, 200);
}

#[tokio::test]
async fn mcp_body_cap_is_160_mib() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let key = srv.mint_key(&r9).await;
    // 40 MiB is over every REST cap but under the MCP one: it is read and
    // answered (the text itself is then refused by the 65,536-char gate).
    let big = "a".repeat(40 * 1024 * 1024);
    let (err, v) = srv
        .tool(
            &key,
            "chat_send_text",
            json!({"conversation_id": 1, "body": big}),
        )
        .await;
    assert!(err);
    assert_ne!(v["error"]["code"], "payload_too_large");
    let status = crate::bad_input::post_raw_len(
        &srv,
        hoop_api::routes::MCP,
        Some(&key),
        160 * 1024 * 1024 + 1,
    )
    .await;
    assert_eq!(status.0, 413, "{}", status.1);
    assert!(status.1.contains("payload_too_large"));
}

/// Seed 002 L7 §0.1: Origin first (absent → allowed; present and not
/// allow-listed → 403, before any bearer check), then every 401 carries
/// `WWW-Authenticate`.
#[tokio::test]
async fn origin_is_checked_first_and_every_401_carries_a_challenge() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let key = srv.mint_key(&r9).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let url = format!("{}{}", srv.base, hoop_api::routes::MCP);
    // (Origin, bearer, expected status)
    let cases: &[(Option<&str>, Option<&str>, u16)] = &[
        (None, Some(&key), 200),
        (Some("http://localhost:3000"), Some(&key), 200),
        (Some("http://127.0.0.1"), Some(&key), 200),
        (Some("https://evil.example"), Some(&key), 403),
        (Some("https://evil.example"), None, 403),
        (Some("null"), Some(&key), 403),
        (None, None, 401),
        (None, Some("hoopmcp_not-a-key"), 401),
        (None, Some("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2ln"), 401),
        (None, Some("something-else"), 401),
    ];
    for (origin, bearer, want) in cases {
        let mut rb = srv.http.post(&url).json(&ping);
        if let Some(o) = origin {
            rb = rb.header("Origin", *o);
        }
        let r = srv.send_req(rb, *bearer).await;
        assert_eq!(r.status, *want, "{origin:?} {bearer:?}: {}", r.body);
        let challenge = r.headers.get("www-authenticate");
        if *want == 401 {
            let c = challenge.expect("a 401 carries WWW-Authenticate");
            assert!(c.to_str().unwrap().starts_with("Bearer"), "{c:?}");
        } else {
            assert!(challenge.is_none(), "{origin:?} {bearer:?}");
        }
    }
}

/// Seed 002 L7 §0.1–0.2: a key lives 90 days by default; the bearer check
/// allows 30 s of clock skew; an expired key is the same 401 as an unknown
/// one.
#[tokio::test]
async fn a_key_expires_after_ninety_days_with_thirty_seconds_of_skew() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let key = srv.mint_key(&r9).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let unknown = srv.mcp("hoopmcp_not-a-key", ping.clone()).await;
    assert_eq!(unknown.status, 401);

    srv.run.clock().advance(90 * 24 * 3600 + 30);
    let r = srv.mcp(&key, ping.clone()).await;
    assert_eq!(r.status, 200, "within the skew: {}", r.body);

    srv.run.clock().advance(1);
    let r = srv.mcp(&key, ping).await;
    assert_eq!(r.status, 401, "expired: {}", r.body);
    assert_eq!(r.body["error"]["code"], unknown.body["error"]["code"]);
    assert_eq!(
        r.body["error"]["message"], unknown.body["error"]["message"],
        "expired and unknown are one and the same refusal"
    );
    assert!(r.headers.get("www-authenticate").is_some());
}

/// Seed 002 L7 §0.2: a key asked to live longer than a year lives a year;
/// a shorter ask is kept.
#[tokio::test]
async fn a_longer_life_than_a_year_is_clamped_to_a_year() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let year = 365 * 24 * 3600;
    let long = srv
        .admin
        .mint_mcp_key_for(r9.id, Some(10 * year))
        .await
        .unwrap()
        .key;
    let short = srv
        .admin
        .mint_mcp_key_for(r9.id, Some(3600))
        .await
        .unwrap()
        .key;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    srv.run.clock().advance(3600 + 30);
    assert_eq!(srv.mcp(&short, ping.clone()).await.status, 200);
    srv.run.clock().advance(1);
    assert_eq!(srv.mcp(&short, ping.clone()).await.status, 401);
    srv.run.clock().advance(year - 3600 - 1);
    assert_eq!(srv.mcp(&long, ping.clone()).await.status, 200);
    srv.run.clock().advance(1);
    assert_eq!(srv.mcp(&long, ping).await.status, 401, "clamped to a year");
}
