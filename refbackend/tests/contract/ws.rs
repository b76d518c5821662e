use hoop_api::admin::{Push, PushEvent};
use hoop_api::routes;
use hoop_api::types::WsEvent;

use crate::support::{Srv, next_event, ws_connect};

#[tokio::test]
async fn message_new_reaches_members_and_only_members() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let out = srv.user("out", true).await;
    let room = srv.room("r", &[&ann, &bolt], false).await;
    let (mut wb, hello) = ws_connect(&srv, &srv.login(&bolt).await).await;
    assert_eq!(hello, WsEvent::Hello { user_id: bolt.id });
    let (mut wo, _) = ws_connect(&srv, &srv.login(&out).await).await;

    let ta = srv.login(&ann).await;
    let sent = srv.send_text(&ta, room.id, "hello bolt").await;
    let id = sent.body["id"].as_i64().unwrap();
    match next_event(&mut wb).await {
        Some(WsEvent::MessageNew {
            conversation_id,
            message,
        }) => {
            assert_eq!((conversation_id, message.id), (room.id, id));
            assert_eq!(message.body, "hello bolt");
        }
        other => panic!("expected message.new, got {other:?}"),
    }
    // The non-member's next frame is the recheck pushed now, not the message.
    let p = srv
        .admin
        .push(&Push {
            user_id: out.id,
            event: PushEvent::Recheck,
            conversation_id: None,
        })
        .await
        .unwrap();
    assert_eq!(p.delivered, 1);
    assert_eq!(
        next_event(&mut wo).await,
        Some(WsEvent::TaskRecheck {
            conversation_id: None
        })
    );
}

#[tokio::test]
async fn recheck_and_provision_pending_are_pushed() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let (mut ws, _) = ws_connect(&srv, &srv.login(&bolt).await).await;
    srv.admin
        .push(&Push {
            user_id: bolt.id,
            event: PushEvent::Recheck,
            conversation_id: Some(7),
        })
        .await
        .unwrap();
    assert_eq!(
        next_event(&mut ws).await,
        Some(WsEvent::TaskRecheck {
            conversation_id: Some(7)
        })
    );
    srv.admin
        .push(&Push {
            user_id: bolt.id,
            event: PushEvent::ProvisionPending,
            conversation_id: None,
        })
        .await
        .unwrap();
    assert_eq!(
        next_event(&mut ws).await,
        Some(WsEvent::ProvisionPending {})
    );
}

#[tokio::test]
async fn ws_needs_a_valid_token_and_answers_pings() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let srv = Srv::start().await;
    let r = srv.get(None, routes::WS).await;
    assert_eq!((r.status, r.code()), (401, "unauthorized"));
    let r = srv.get(Some("not.a.jwt"), routes::WS).await;
    assert_eq!(r.status, 401);

    let bolt = srv.user("bolt", true).await;
    let (mut ws, _) = ws_connect(&srv, &srv.login(&bolt).await).await;
    ws.send(Message::Ping(b"p".to_vec().into())).await.unwrap();
    let pong = tokio::time::timeout(crate::support::WAIT, async {
        use futures_util::StreamExt;
        loop {
            if let Some(Ok(Message::Pong(p))) = ws.next().await {
                return p;
            }
        }
    })
    .await
    .expect("pong in time");
    assert_eq!(&pong[..], b"p");
}

#[tokio::test]
async fn shutdown_closes_websockets() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let (mut ws, _) = ws_connect(&srv, &srv.login(&bolt).await).await;
    let stop = tokio::spawn(srv.run.shutdown());
    assert_eq!(next_event(&mut ws).await, None, "closed");
    tokio::time::timeout(crate::support::WAIT, stop)
        .await
        .expect("shutdown in time")
        .unwrap();
}

#[tokio::test]
async fn browsers_may_pass_the_token_as_a_query_parameter() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let token = srv.login(&bolt).await;
    let url = format!(
        "{}{}?token={token}",
        srv.base.replacen("http", "ws", 1),
        routes::WS
    );
    let (mut ws, _) =
        tokio::time::timeout(crate::support::WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("in time")
            .expect("connects");
    assert_eq!(
        next_event(&mut ws).await,
        Some(WsEvent::Hello { user_id: bolt.id })
    );
}

#[tokio::test]
async fn a_card_created_for_someone_else_rings_their_recheck() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let (mut ws, _) = ws_connect(&srv, &srv.login(&bolt).await).await;
    let ta = srv.login(&ann).await;
    let room = srv.room("r", &[&ann, &bolt], true).await.id;
    let r = srv
        .post(
            Some(&ta),
            &routes::fill_task(routes::WORKROOM_TASKS, room, ""),
            serde_json::json!({"title": "for bolt", "assignee_id": bolt.id}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(
        next_event(&mut ws).await,
        Some(WsEvent::TaskRecheck {
            conversation_id: Some(room)
        })
    );
}
