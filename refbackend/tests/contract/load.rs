//! The connection cap under load (issue 19 item 8), bounded and on
//! loopback, with a small configured cap: REST requests from many clients
//! are all served while no more than the cap are held at once; a WebSocket
//! keeps its connection slot for its whole life (hyper lets go of the
//! connection at the upgrade, the socket does not); WebSockets and event
//! streams are capped per account and in total, so short requests always
//! have slots; an event stream that stays idle ends and gives its slots back.

use std::time::Duration;

use futures_util::future::join_all;
use hoop_api::routes;
use hoop_refbackend::Config;
use tokio_tungstenite::tungstenite;

use crate::support::{Srv, WAIT};

/// A bound for "this does not happen while the cap is held": the answer is
/// then awaited without bound once the cap is released (the signal).
const HELD_BACK: Duration = Duration::from_millis(500);

async fn ws_open(srv: &Srv, token: &str) -> Result<crate::support::Ws, u16> {
    use tungstenite::client::IntoClientRequest;
    let url = format!("{}{}", srv.base.replacen("http", "ws", 1), routes::WS);
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("Authorization", format!("Bearer {token}").parse().unwrap());
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("ws answered in time")
    {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
        Err(e) => panic!("{e}"),
    }
}

/// An agent's token, made over connections that are closed when done: an
/// idle keep-alive connection of the set-up (the admin client's, the
/// login's) would hold one of the few slots a test counts until the
/// server's header timeout reaps it.
async fn agent_token_over_closed_connections(srv: &Srv, name: &str) -> String {
    let admin = hoop_api::admin::AdminClient::new(&srv.base, &srv.run.admin_token);
    let user = admin
        .create_user(&hoop_api::admin::CreateUser {
            email: format!("{name}@example.test"),
            username: name.into(),
            nickname: None,
            is_agent: true,
        })
        .await
        .expect("user created");
    drop(admin);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(WAIT)
        .build()
        .unwrap();
    let r: serde_json::Value = http
        .post(format!("{}{}", srv.base, routes::LOGIN))
        .json(&serde_json::json!({
            "email": user.email,
            "code": hoop_core::limits::FIXED_LOGIN_CODE,
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["token"].as_str().expect("a token").to_string()
}

async fn sse_open(srv: &Srv, key: &str) -> reqwest::Response {
    srv.http
        .get(format!("{}{}", srv.base, routes::EVENTS))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_rest_clients_are_all_served_within_the_cap() {
    let cap = 4;
    let srv = Srv::start_with(Config {
        max_connections: cap,
        ..Config::default()
    })
    .await;
    let bolt = srv.user("bolt", true).await;
    let token = srv.login(&bolt).await;
    // 24 clients, each its own connection, 5 requests each.
    let clients = (0..24).map(|i| {
        let (base, token) = (srv.base.clone(), token.clone());
        async move {
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .timeout(WAIT * 3)
                .build()
                .unwrap();
            let mut got = vec![];
            for _ in 0..5 {
                let r = http
                    .get(format!("{base}{}", routes::ME))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                got.push(r.status().as_u16());
            }
            (i, got)
        }
    });
    for (i, got) in join_all(clients).await {
        assert_eq!(got, vec![200; 5], "client {i}");
    }
    let peak = srv.run.peak_connections();
    assert!(peak <= cap, "{peak} connections held at once (cap {cap})");
}

#[tokio::test]
async fn a_websocket_keeps_its_connection_slot_for_its_life() {
    let cap = 3;
    let srv = Srv::start_with(Config {
        max_connections: cap,
        max_streams: 100,
        max_streams_per_account: 100,
        ..Config::default()
    })
    .await;
    let token = agent_token_over_closed_connections(&srv, "bolt").await;
    let mut sockets = vec![];
    for i in 0..cap {
        sockets.push(
            ws_open(&srv, &token)
                .await
                .unwrap_or_else(|s| panic!("ws {i}: {s}")),
        );
    }
    // Every slot is a live WebSocket: a request waits for one to end.
    let me = srv.http.get(format!("{}{}", srv.base, routes::ME)).send();
    let mut me = Box::pin(me);
    assert!(
        tokio::time::timeout(HELD_BACK, &mut me).await.is_err(),
        "a request was served while {cap} WebSockets held every slot"
    );
    sockets.pop().unwrap().close(None).await.unwrap();
    let r = tokio::time::timeout(WAIT, me)
        .await
        .expect("served once a slot frees");
    assert_eq!(r.unwrap().status().as_u16(), 401);
    assert!(srv.run.peak_connections() <= cap);
}

#[tokio::test]
async fn streams_are_capped_per_account_and_in_total_and_rest_keeps_its_slots() {
    let srv = Srv::start_with(Config {
        max_connections: 6,
        max_streams: 3,
        max_streams_per_account: 2,
        ..Config::default()
    })
    .await;
    let (bolt, nova) = (srv.user("bolt", true).await, srv.user("nova", true).await);
    let bolt_t = srv.login(&bolt).await;
    let bolt_k = srv.admin.mint_mcp_key(bolt.id).await.unwrap().key;
    let nova_k = srv.admin.mint_mcp_key(nova.id).await.unwrap().key;
    let nova_t = srv.login(&nova).await;
    // Bolt: a WebSocket and an event stream, then a third of either → 429.
    let _w1 = ws_open(&srv, &bolt_t).await.expect("bolt ws");
    let s1 = sse_open(&srv, &bolt_k).await;
    assert_eq!(s1.status().as_u16(), 200);
    assert_eq!(
        ws_open(&srv, &bolt_t).await.err(),
        Some(429),
        "bolt's third (ws)"
    );
    let third = sse_open(&srv, &bolt_k).await;
    assert_eq!(third.status().as_u16(), 429, "bolt's third (events)");
    drop(third);
    // Nova: one stream, then the total (3) is reached.
    let s2 = sse_open(&srv, &nova_k).await;
    assert_eq!(s2.status().as_u16(), 200);
    assert_eq!(ws_open(&srv, &nova_t).await.err(), Some(429), "the total");
    // Short requests still have slots.
    let r = srv.get(Some(&nova_t), routes::ME).await;
    assert_eq!(r.status, 200);
    // Must not fire: a stream that ends gives its slot back.
    drop(s1);
    let again = tokio::time::timeout(WAIT, async {
        loop {
            let r = sse_open(&srv, &nova_k).await;
            if r.status().as_u16() == 200 {
                return r;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("a slot frees when a stream ends");
    drop(again);
    assert!(srv.run.peak_connections() <= 6);
}

#[tokio::test]
async fn an_idle_event_stream_ends_and_gives_its_slot_back() {
    let srv = Srv::start_with(Config {
        max_streams_per_account: 1,
        stream_idle_timeout: Duration::from_millis(200),
        ..Config::default()
    })
    .await;
    let bolt = srv.user("bolt", true).await;
    let key = srv.admin.mint_mcp_key(bolt.id).await.unwrap().key;
    let mut s = sse_open(&srv, &key).await;
    assert_eq!(s.status().as_u16(), 200);
    // The server ends it (the signal: the body's end).
    tokio::time::timeout(WAIT, async {
        while let Some(_chunk) = s.chunk().await.unwrap_or(None) {}
    })
    .await
    .expect("the idle stream ended");
    // Its slot is free again.
    let again = tokio::time::timeout(WAIT, async {
        loop {
            let r = sse_open(&srv, &key).await;
            if r.status().as_u16() == 200 {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(again.is_ok(), "the slot came back");
}
