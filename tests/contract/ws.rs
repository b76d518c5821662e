//! The WebSocket: auth on the upgrade, hello, typed events, re-login on a
//! refused upgrade, pings answered by the backend.

use std::time::Duration;

use hoop_api::admin::{Push, PushEvent};
use hoop_api::types::WsEvent;
use hoop_api::ws::{self, WsConfig, WsConnection, WsError};
use hoop_core::limits::JWT_LIFETIME;
use tokio::time::timeout;

use crate::support::{BOUND, Env, text};

async fn next(c: &mut WsConnection) -> WsEvent {
    timeout(BOUND, c.next_event())
        .await
        .expect("an event in time")
        .expect("no connection error")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_then_message_new_for_members() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await;
    let mut c = ws::connect(&a.client).await.unwrap();
    assert_eq!(c.user_id(), Some(a.user.id));
    let sent = env.post_as(room.id, ann.id, "ping for bolt").await;
    match next(&mut c).await {
        WsEvent::MessageNew {
            conversation_id,
            message,
        } => {
            assert_eq!(conversation_id, room.id);
            assert_eq!(message, sent);
        }
        other => panic!("{other:?}"),
    }
    // Its own message is delivered too (dropping it is the sentinel's job).
    let mine = a.client.send(room.id, &text("mine")).await.unwrap();
    match next(&mut c).await {
        WsEvent::MessageNew { message, .. } => assert_eq!(message.id, mine.id),
        other => panic!("{other:?}"),
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recheck_and_provision_pending_are_typed() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let mut c = ws::connect(&a.client).await.unwrap();
    let pushed = env
        .admin
        .push(&Push {
            user_id: a.user.id,
            event: PushEvent::Recheck,
            conversation_id: Some(7),
        })
        .await
        .unwrap();
    assert_eq!(pushed.delivered, 1);
    assert_eq!(
        next(&mut c).await,
        WsEvent::TaskRecheck {
            conversation_id: Some(7)
        }
    );
    env.admin
        .push(&Push {
            user_id: a.user.id,
            event: PushEvent::ProvisionPending,
            conversation_id: None,
        })
        .await
        .unwrap();
    assert_eq!(next(&mut c).await, WsEvent::ProvisionPending {});
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upgrade_logs_in_again() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    a.client.me().await.unwrap();
    env.backend
        .clock()
        .advance(JWT_LIFETIME.as_secs() as i64 + 60);
    let c = ws::connect(&a.client).await.expect("re-login on 401");
    assert_eq!(c.user_id(), Some(a.user.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_is_refused_at_the_upgrade() {
    let env = Env::start().await;
    let url = ws::ws_url(&env.base()).unwrap();
    let e = ws::connect_with_token(&url, "not-a-jwt", WsConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(e, WsError::Unauthorized), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_answers_pings_so_the_link_stays_up() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await;
    let cfg = WsConfig {
        ping_interval: Duration::from_millis(50),
        pong_deadline: Duration::from_millis(1000),
        ..WsConfig::default()
    };
    let mut c = ws::connect_with(&a.client, cfg).await.unwrap();
    // Dozens of pings and more than two pong deadlines pass with no event:
    // the call must still be waiting (not failed with a pong timeout).
    let quiet = timeout(Duration::from_millis(2500), c.next_event()).await;
    assert!(quiet.is_err(), "no event and no error: {quiet:?}");
    let sent = env.post_as(room.id, ann.id, "still there?").await;
    match next(&mut c).await {
        WsEvent::MessageNew { message, .. } => assert_eq!(message.id, sent.id),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_the_connection_with_an_error_not_a_hang() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let mut c = ws::connect(&a.client).await.unwrap();
    env.backend.shutdown().await;
    let e = timeout(BOUND, c.next_event())
        .await
        .expect("the close is noticed")
        .unwrap_err();
    assert!(
        matches!(e, WsError::Closed(_) | WsError::Protocol(_)),
        "{e:?}"
    );
}
