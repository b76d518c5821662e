use hoop_api::routes;
use hoop_refbackend::Config;
use serde_json::json;

use crate::support::Srv;

#[tokio::test]
async fn login_with_the_fixed_code_gives_a_jwt_that_expires_after_15_minutes() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let now = srv.run.clock().now();
    let r = srv
        .post(
            None,
            routes::LOGIN,
            json!({"email": bolt.email, "code": "123456"}),
        )
        .await;
    assert_eq!(r.status, 200);
    let exp = r.body["expires_at"].as_i64().unwrap();
    assert!((exp - now - 900).abs() <= 1, "15 minutes: {exp} vs {now}");
    assert_eq!(r.body["user"]["is_agent"], true);
    let token = r.body["token"].as_str().unwrap().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT");

    let me = srv.get(Some(&token), routes::ME).await;
    assert_eq!((me.status, me.body["id"].as_i64()), (200, Some(bolt.id)));

    srv.run.clock().advance(14 * 60);
    assert_eq!(srv.get(Some(&token), routes::ME).await.status, 200);
    srv.run.clock().advance(61);
    let r = srv.get(Some(&token), routes::ME).await;
    assert_eq!((r.status, r.code()), (401, "unauthorized"));
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn wrong_code_unknown_email_and_bad_tokens_are_401_json() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    for body in [
        json!({"email": bolt.email, "code": "654321"}),
        json!({"email": "nobody@example.test", "code": "123456"}),
    ] {
        let r = srv.post(None, routes::LOGIN, body).await;
        assert_eq!((r.status, r.code()), (401, "unauthorized"));
    }
    for token in [None, Some("garbage"), Some("aaa.bbb.ccc")] {
        let r = srv.get(token, routes::ME).await;
        assert_eq!((r.status, r.code()), (401, "unauthorized"), "{token:?}");
    }
    // A token signed by another server is refused.
    let other = Srv::start().await;
    let u = other.user("bolt", true).await;
    let foreign = other.login(&u).await;
    assert_eq!(srv.get(Some(&foreign), routes::ME).await.status, 401);
}

#[tokio::test]
async fn agent_secret_header_is_checked_when_configured() {
    let srv = Srv::start_with(Config {
        agent_secret: Some("s3cr3t".into()),
        ..Config::default()
    })
    .await;
    let bolt = srv.user("bolt", true).await;
    let url = format!("{}{}", srv.base, routes::LOGIN);
    let body = json!({"email": bolt.email, "code": "123456"});
    let missing = srv.send_req(srv.http.post(&url).json(&body), None).await;
    assert_eq!(missing.status, 401);
    let wrong = srv
        .send_req(
            srv.http
                .post(&url)
                .header(hoop_api::headers::AGENT_SECRET, "nope")
                .json(&body),
            None,
        )
        .await;
    assert_eq!(wrong.status, 401);
    let right = srv
        .send_req(
            srv.http
                .post(&url)
                .header(hoop_api::headers::AGENT_SECRET, "s3cr3t")
                .json(&body),
            None,
        )
        .await;
    assert_eq!(right.status, 200, "{}", right.body);

    // Without a configured secret, no header is needed.
    let open = Srv::start().await;
    let u = open.user("bolt", true).await;
    open.login(&u).await;
}

#[tokio::test]
async fn a_jwt_on_mcp_is_refused_before_any_lookup() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let jwt = srv.login(&bolt).await;
    let r = srv
        .mcp(
            &jwt,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (401, "unauthorized"));
    assert!(
        r.body["error"]["message"].as_str().unwrap().contains("JWT"),
        "refused as a JWT, not as an unknown key: {}",
        r.body
    );
    // A JWT-shaped string that is no token at all gets the same answer.
    let r = srv
        .mcp(
            "hoopmcp_x.y.z",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert!(r.body["error"]["message"].as_str().unwrap().contains("JWT"));
    let r = srv
        .mcp(
            "hoopmcp_unknown",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(r.status, 401);
    assert!(!r.body["error"]["message"].as_str().unwrap().contains("JWT"));
}

#[tokio::test]
async fn mcp_keys_are_stored_as_sha256_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("backend.sqlite");
    let srv = Srv::start_with(Config {
        db: Some(db.clone()),
        ..Config::default()
    })
    .await;
    let bolt = srv.user("bolt", true).await;
    let key = srv.mint_key(&bolt).await;
    assert!(key.starts_with("hoopmcp_"));
    // The key works…
    let (err, v) = srv.tool(&key, "chat_list", json!({})).await;
    assert!(!err, "{v}");
    // …and the database holds only its hash.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stored: Vec<String> = conn
        .prepare("SELECT key_sha256 FROM mcp_keys")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(stored, vec![hoop_refbackend::key_hash(&key)]);
    drop(conn);
    srv.run.shutdown().await;
    let mut raw = std::fs::read(&db).unwrap();
    if let Ok(wal) = std::fs::read(dir.path().join("backend.sqlite-wal")) {
        raw.extend(wal);
    }
    let secret = &key["hoopmcp_".len()..];
    assert!(
        !raw.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "the key itself is nowhere in the database file"
    );
}
