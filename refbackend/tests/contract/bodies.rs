//! Bodies read before the sender is known (issue 19 item 10): login and
//! redeem read at most `PRE_AUTH_BODY_CAP_BYTES`, whether the body announces
//! its length or streams it chunked. The answer (413) arriving while the
//! client still holds most of its body back is the proof that the server did
//! not wait to read it all; a body the server would read in full could not
//! be answered before the client sent the rest.

use hoop_api::routes;
use hoop_refbackend::constants::PRE_AUTH_BODY_CAP_BYTES;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{Srv, WAIT};

/// Send `head` then `first`, keep the connection open, and read the
/// response head; the status, or 0 when none came within [`WAIT`].
async fn status_while_holding_back(srv: &Srv, head: String, first: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(srv.run.addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(first).await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(WAIT, async {
        let mut tmp = [0u8; 4096];
        loop {
            let n = s.read(&mut tmp).await.unwrap_or(0);
            buf.extend_from_slice(&tmp[..n]);
            if n == 0 || buf.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = match read {
        Ok(()) => text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        Err(_) => 0,
    };
    (status, text)
}

const PRE_AUTH_ROUTES: [&str; 2] = [routes::LOGIN, routes::PROVISION_REDEEM];

#[tokio::test]
async fn a_login_or_redeem_announcing_a_large_body_is_413_before_it_is_sent() {
    let srv = Srv::start().await;
    for path in PRE_AUTH_ROUTES {
        // 31 MiB announced (under the 32 MiB REST cap), not a byte sent.
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            31 * 1024 * 1024
        );
        let (status, text) = status_while_holding_back(&srv, head, b"").await;
        assert_eq!(status, 413, "{path}: {text}");
    }
}

#[tokio::test]
async fn a_chunked_login_or_redeem_is_cut_at_the_cap_while_the_rest_is_held_back() {
    let srv = Srv::start().await;
    for path in PRE_AUTH_ROUTES {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n"
        );
        // One chunk just over the cap; the client would send 31 MiB more.
        let n = PRE_AUTH_BODY_CAP_BYTES + 1;
        let mut first = format!("{n:x}\r\n").into_bytes();
        first.extend(std::iter::repeat_n(b' ', n));
        first.extend_from_slice(b"\r\n");
        let (status, text) = status_while_holding_back(&srv, head, &first).await;
        assert_eq!(status, 413, "{path}: {text}");
    }
}

/// Must not fire: a login whose body is just under the cap is served, and a
/// logged-in caller's body may be far larger than the pre-login cap.
#[tokio::test]
async fn a_login_under_the_cap_and_a_large_authenticated_body_are_served() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let code = srv.login_code(&ann).await;
    let base = json!({"email": ann.email, "code": code, "pad": ""}).to_string();
    let pad = "x".repeat(PRE_AUTH_BODY_CAP_BYTES - base.len());
    let body = json!({"email": ann.email, "code": code, "pad": pad});
    assert_eq!(body.to_string().len(), PRE_AUTH_BODY_CAP_BYTES);
    let r = srv.post(None, routes::LOGIN, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let t = r.body["token"].as_str().unwrap().to_string();
    let room = srv.room("r", &[&ann], false).await;
    let big = "y".repeat(4 * PRE_AUTH_BODY_CAP_BYTES);
    let r = srv
        .post(
            Some(&t),
            &routes::fill(routes::CONVERSATION_TEXT, room.id),
            json!({"body": big}),
        )
        .await;
    assert_ne!(r.status, 413, "{}", r.body);
}
