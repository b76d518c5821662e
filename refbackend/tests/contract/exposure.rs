//! A server a web page cannot use (issue 19 item 9): every route (REST,
//! WebSocket, events, `/mcp`) refuses a `Host` or an `Origin` that is not a
//! name of the server (DNS rebinding, cross-site pages); JSON routes read
//! only `application/json` (a browser sends `text/plain` across sites
//! without asking); a person logs in only with a one-time code the operator
//! issues, never the public fixed code. Each rule has its must-not-fire
//! case: the server's own names, loopback pages, JSON with a charset.

use hoop_api::routes;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Srv, WAIT};

/// The status of one raw request (headers given whole), 0 when none came.
async fn raw_status(srv: &Srv, request: String) -> u16 {
    let mut s = TcpStream::connect(srv.run.addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(WAIT, async {
        let mut tmp = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut tmp).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
    })
    .await;
    String::from_utf8_lossy(&buf)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// `GET path` (a WebSocket upgrade for the WS route) with these extra
/// header lines.
fn get_with(path: &str, host: &str, extra: &str) -> String {
    let upgrade = if path == routes::WS {
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    } else {
        "Connection: close\r\n"
    };
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{upgrade}{extra}\r\n")
}

const SURFACES: [&str; 4] = [routes::ME, routes::WS, routes::EVENTS, routes::MCP];

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_surface() {
    let srv = Srv::start().await;
    let port = srv.run.addr.port();
    for path in SURFACES {
        let st = raw_status(&srv, get_with(path, &format!("rebound.example:{port}"), "")).await;
        assert_eq!(st, 403, "{path}");
    }
    // Login too: a rebound page cannot even try a code.
    let r = srv
        .send_req(
            srv.http
                .post(format!("{}{}", srv.base, routes::LOGIN))
                .header("Host", format!("rebound.example:{port}"))
                .json(&json!({"email": "a@b", "code": "1"})),
            None,
        )
        .await;
    assert_eq!((r.status, r.code()), (403, "forbidden"), "{}", r.body);
}

#[tokio::test]
async fn a_foreign_origin_is_refused_on_every_surface() {
    let srv = Srv::start().await;
    for path in SURFACES {
        let st = raw_status(
            &srv,
            get_with(path, "127.0.0.1", "Origin: https://evil.example\r\n"),
        )
        .await;
        assert_eq!(st, 403, "{path}");
    }
}

/// Must not fire: the server's own names, with or without a port, and
/// pages served from loopback, reach the handlers (which then ask for
/// credentials: 401; never 403).
#[tokio::test]
async fn loopback_hosts_and_origins_reach_the_handlers() {
    let srv = Srv::start().await;
    let port = srv.run.addr.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".to_string(),
    ] {
        for origin in ["", "Origin: http://localhost:3000\r\n"] {
            for path in SURFACES {
                let st = raw_status(&srv, get_with(path, &host, origin)).await;
                // 401 (credentials asked for); GET /mcp is 405 (POST only).
                let want = if path == routes::MCP { 405 } else { 401 };
                assert_eq!(st, want, "{path} Host {host} {origin:?}");
            }
        }
    }
    let same_origin = format!("Origin: http://127.0.0.1:{port}\r\n");
    assert_eq!(
        raw_status(&srv, get_with(routes::ME, "127.0.0.1", &same_origin)).await,
        401
    );
}

#[tokio::test]
async fn a_json_route_refuses_text_plain_and_takes_json_with_a_charset() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let room = srv.room("r", &[&bolt], false).await;
    let login = json!({"email": bolt.email, "code": srv.login_code(&bolt).await}).to_string();
    let post = |path: String, ctype: &'static str, body: String, token: Option<String>| {
        let srv = &srv;
        async move {
            let mut rb = srv
                .http
                .post(format!("{}{path}", srv.base))
                .header("Content-Type", ctype)
                .body(body);
            if let Some(t) = token {
                rb = rb.bearer_auth(t);
            }
            srv.send_req(rb, None).await
        }
    };
    // Before login and after: text/plain (a cross-site form) is refused.
    let r = post(routes::LOGIN.into(), "text/plain", login.clone(), None).await;
    assert_eq!(
        (r.status, r.code()),
        (415, "unsupported_media_type"),
        "{}",
        r.body
    );
    let token = srv.login(&bolt).await;
    let text = routes::fill(routes::CONVERSATION_TEXT, room.id);
    let body = json!({"body": "hi"}).to_string();
    let r = post(
        text.clone(),
        "text/plain",
        body.clone(),
        Some(token.clone()),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.body);
    // An optional body, when present, is JSON too; absent, it needs no type.
    let r = post(
        routes::HEARTBEAT.into(),
        "text/plain",
        "{}".into(),
        Some(token.clone()),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.body);
    let r = srv
        .send_req(
            srv.http.post(format!("{}{}", srv.base, routes::HEARTBEAT)),
            Some(&token),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Must not fire: application/json with a charset.
    let json_utf8 = "application/json; charset=utf-8";
    let r = post(routes::LOGIN.into(), json_utf8, login, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = post(text, json_utf8, body, Some(token)).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn a_person_logs_in_with_a_one_time_code_and_never_the_fixed_one() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let login = |code: String| {
        let srv = &srv;
        let email = ann.email.clone();
        async move {
            srv.post(None, routes::LOGIN, json!({"email": email, "code": code}))
                .await
                .status
        }
    };
    assert_eq!(
        login("123456".into()).await,
        401,
        "the fixed code is public"
    );
    let code = srv.admin.issue_login_code(ann.id).await.unwrap().code;
    assert_eq!(code.len(), 8);
    assert_eq!(login(code.clone()).await, 200);
    assert_eq!(login(code).await, 401, "single use");
    // Void after five wrong tries, even for the right code after them.
    let code = srv.admin.issue_login_code(ann.id).await.unwrap().code;
    let wrong = if code == "00000000" {
        "00000001"
    } else {
        "00000000"
    };
    for _ in 0..5 {
        assert_eq!(login(wrong.into()).await, 401);
    }
    assert_eq!(login(code).await, 401, "void after five wrong tries");
    // Expired after ten minutes.
    let code = srv.admin.issue_login_code(ann.id).await.unwrap().code;
    srv.run.clock().advance(10 * 60);
    assert_eq!(login(code).await, 401, "expired");
    // Must not fire: a wrong try or two leave the code usable.
    let code = srv.admin.issue_login_code(ann.id).await.unwrap().code;
    assert_eq!(login(wrong.into()).await, 401);
    assert_eq!(login(code).await, 200);
    // Agents keep the fixed code and get no one-time code.
    let bolt = srv.user("bolt", true).await;
    let r = srv
        .post(
            None,
            routes::LOGIN,
            json!({"email": bolt.email, "code": "123456"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let e = srv.admin.issue_login_code(bolt.id).await.unwrap_err();
    assert!(e.to_string().contains("agent account"), "{e}");
}
