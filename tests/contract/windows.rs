//! Windows: register, sync (rooms / fallback / none), presence computed on
//! read, revoke, unknown window → `window_not_found`.

use hoop_api::Error;
use hoop_api::types::{RegisterWindow, WindowMode, codes};
use hoop_core::limits::PRESENCE_TIMEOUT;

use crate::support::Env;

fn window(rooms: Vec<i64>, fallback: bool) -> RegisterWindow {
    RegisterWindow {
        installation_id: "inst-1".into(),
        machine: "devbox".into(),
        client: "claude-code".into(),
        native_session_id: "sess-1".into(),
        runtime_id: "rt-1".into(),
        rooms_hint: rooms,
        fallback_hint: fallback,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_sync_list_revoke() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let r1 = env.room("one", &[a.user.id]).await;
    let r2 = env.room("two", &[a.user.id]).await;
    let rooms_w = a
        .client
        .register_window(&window(vec![r1.id], false))
        .await
        .unwrap()
        .window_id;
    let fallback_w = a
        .client
        .register_window(&RegisterWindow {
            native_session_id: "sess-2".into(),
            ..window(vec![], true)
        })
        .await
        .unwrap()
        .window_id;
    let s = a.client.sync_window(&rooms_w).await.unwrap();
    assert_eq!((s.mode, s.rooms.clone()), (WindowMode::Rooms, vec![r1.id]));
    let s = a.client.sync_window(&fallback_w).await.unwrap();
    assert_eq!(s.mode, WindowMode::Fallback);
    assert_eq!(
        s.exclude,
        vec![r1.id],
        "a present rooms window's rooms are excluded"
    );
    assert!(!s.exclude.contains(&r2.id));

    let list = a.client.windows().await.unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|w| w.present && !w.revoked));

    // Not synced for 3 minutes: not present (computed on read).
    env.backend
        .clock()
        .advance(PRESENCE_TIMEOUT.as_secs() as i64 + 1);
    assert!(a.client.windows().await.unwrap().iter().all(|w| !w.present));

    let revoked = a.client.revoke_window(&rooms_w).await.unwrap();
    assert!(revoked.revoked);
    let s = a.client.sync_window(&rooms_w).await.unwrap();
    assert_eq!(
        (s.mode, s.reason.as_deref()),
        (WindowMode::None, Some("revoked"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_window_is_window_not_found() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    match a.client.sync_window("no-such-window").await {
        Err(Error::NotFound { code, .. }) => assert_eq!(code, codes::WINDOW_NOT_FOUND),
        other => panic!("{other:?}"),
    }
    // Another account's window is unknown to this one.
    let b = env.agent("nut").await;
    let theirs = b
        .client
        .register_window(&window(vec![], true))
        .await
        .unwrap()
        .window_id;
    assert!(matches!(
        a.client.sync_window(&theirs).await,
        Err(Error::NotFound { .. })
    ));
}

/// Seed 002 L7 §0.7: registration is an upsert that keeps `window_id`,
/// replaces only `runtime_id`, never clears a revocation, and adds
/// `rooms_hint` only for rooms with no record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_again_keeps_the_window_and_its_revocation() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let r1 = env.room("one", &[a.user.id]).await;
    let r2 = env.room("two", &[a.user.id]).await;
    let first = a
        .client
        .register_window(&window(vec![r1.id], false))
        .await
        .unwrap()
        .window_id;
    let again = a
        .client
        .register_window(&RegisterWindow {
            runtime_id: "rt-2".into(),
            ..window(vec![r2.id], false)
        })
        .await
        .unwrap()
        .window_id;
    assert_eq!(again, first, "the same native session keeps its window_id");
    assert_eq!(a.client.windows().await.unwrap().len(), 1);
    let s = a.client.sync_window(&first).await.unwrap();
    assert_eq!(s.mode, WindowMode::Rooms);
    for r in [r1.id, r2.id] {
        assert_eq!(
            s.rooms.iter().filter(|x| **x == r).count(),
            1,
            "room {r} hinted exactly once after re-registration"
        );
    }

    // A revoked window registered again stays revoked: mode `none`.
    a.client.revoke_window(&first).await.unwrap();
    let after = a
        .client
        .register_window(&RegisterWindow {
            runtime_id: "rt-3".into(),
            ..window(vec![r1.id], false)
        })
        .await
        .unwrap()
        .window_id;
    assert_eq!(after, first);
    let s = a.client.sync_window(&first).await.unwrap();
    assert_eq!(
        (s.mode, s.reason.as_deref()),
        (WindowMode::None, Some("revoked"))
    );
    assert!(a.client.windows().await.unwrap()[0].revoked);

    // Another native session is another window.
    let other = a
        .client
        .register_window(&RegisterWindow {
            native_session_id: "sess-2".into(),
            ..window(vec![r1.id], false)
        })
        .await
        .unwrap()
        .window_id;
    assert_ne!(other, first);
}
