//! The optional event stream (`routes::EVENTS`, contract §9a [A]): the
//! `/mcp` checks at the door, then the account's events as SSE `data:`
//! lines.

use std::time::Duration;

use hoop_api::events::{EventStream, Item};
use hoop_api::routes;
use hoop_api::types::WsEvent;

use crate::support::{Srv, WAIT};

#[tokio::test]
async fn the_stream_takes_mcp_keys_only_and_carries_the_accounts_events() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("dm", &[&bolt, &ann], false).await;
    let key = srv.admin.mint_mcp_key(bolt.id).await.unwrap().key;
    let jwt = srv.login(&bolt).await;
    // (bearer, want status)
    for (bearer, want) in [
        (Some(jwt.as_str()), 401),
        (Some("hoopmcp_unknown"), 401),
        (None, 401),
    ] {
        let mut rb = srv.http.get(format!("{}{}", srv.base, routes::EVENTS));
        if let Some(b) = bearer {
            rb = rb.bearer_auth(b);
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.status().as_u16(), want, "{bearer:?}");
    }
    let r = srv
        .http
        .get(format!("{}{}", srv.base, routes::EVENTS))
        .bearer_auth(&key)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403, "Origin first");

    let mut s = EventStream::connect(&srv.base, &key).await.unwrap();
    srv.send_text(&srv.login(&ann).await, room.id, "hello")
        .await;
    let got = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(Item::Event(e)) = s.next().await.unwrap() {
                return e;
            }
        }
    })
    .await
    .expect("an event in time");
    match got {
        WsEvent::MessageNew {
            conversation_id,
            message,
        } => {
            assert_eq!(conversation_id, room.id);
            assert_eq!(message.body, "hello");
        }
        other => panic!("{other:?}"),
    }
    // Nothing for other accounts' rooms.
    let other = srv.room("other", &[&ann], false).await;
    srv.send_text(&srv.login(&ann).await, other.id, "not yours")
        .await;
    let quiet = tokio::time::timeout(Duration::from_millis(500), s.next()).await;
    assert!(quiet.is_err(), "{quiet:?}");
}

#[tokio::test]
async fn every_request_is_counted_and_the_operator_can_read_the_count() {
    let srv = Srv::start().await;
    let before = srv.run.requests();
    for _ in 0..3 {
        let _ = srv.get(None, routes::ME).await;
    }
    assert_eq!(srv.run.requests(), before + 3, "refused ones count too");
    let r = srv
        .http
        .get(format!("{}{}", srv.base, routes::admin::STATS))
        .bearer_auth(&srv.run.admin_token)
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        v["requests"],
        before + 4,
        "the stats request itself included"
    );
    let r = srv
        .http
        .get(format!("{}{}", srv.base, routes::admin::STATS))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401, "operator only");
}
