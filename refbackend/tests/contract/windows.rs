use hoop_api::routes::{self, fill};
use serde_json::json;

use crate::support::Srv;

/// One registration; each native session is its own window.
fn reg(rooms: &[i64], fallback: bool) -> serde_json::Value {
    let session = format!("s-{rooms:?}-{fallback}");
    json!({"installation_id": "inst", "machine": "m1", "client": "claude-code",
           "native_session_id": session, "runtime_id": "r", "rooms_hint": rooms, "fallback_hint": fallback})
}

#[tokio::test]
async fn register_sync_revoke_and_unknown_window() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let r1 = srv.room("r1", &[&bolt], false).await;
    let r2 = srv.room("r2", &[&bolt], false).await;
    let t = srv.login(&bolt).await;

    let a = srv
        .post(Some(&t), routes::WINDOWS, reg(&[r1.id, 999], false))
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
    let a = a.body["window_id"].as_str().unwrap().to_string();
    let f = srv.post(Some(&t), routes::WINDOWS, reg(&[], true)).await;
    let f = f.body["window_id"].as_str().unwrap().to_string();
    let n = srv.post(Some(&t), routes::WINDOWS, reg(&[], false)).await;
    let n = n.body["window_id"].as_str().unwrap().to_string();

    let s = srv
        .post(Some(&t), &fill(routes::WINDOW_SYNC, &a), json!({}))
        .await;
    assert_eq!(s.body["mode"], "rooms");
    assert_eq!(
        s.body["rooms"],
        json!([r1.id]),
        "only rooms the account is in"
    );
    let s = srv
        .post(Some(&t), &fill(routes::WINDOW_SYNC, &f), json!({}))
        .await;
    assert_eq!(s.body["mode"], "fallback");
    assert_eq!(
        s.body["exclude"],
        json!([r1.id, 999]),
        "what the rooms window handles"
    );
    let s = srv
        .post(Some(&t), &fill(routes::WINDOW_SYNC, &n), json!({}))
        .await;
    assert_eq!(s.body["mode"], "none");
    assert_eq!(s.body["reason"], "no_assignment");
    let _ = r2;

    // The rooms window goes quiet for 3 minutes: fallback no longer excludes.
    srv.run.clock().advance(181);
    let s = srv
        .post(Some(&t), &fill(routes::WINDOW_SYNC, &f), json!({}))
        .await;
    assert_eq!(s.body["exclude"], json!([]));

    let r = srv
        .post(Some(&t), &fill(routes::WINDOW_REVOKE, &f), json!({}))
        .await;
    assert_eq!((r.status, r.body["revoked"].as_bool()), (200, Some(true)));
    let s = srv
        .post(Some(&t), &fill(routes::WINDOW_SYNC, &f), json!({}))
        .await;
    assert_eq!(
        (s.body["mode"].as_str(), s.body["reason"].as_str()),
        (Some("none"), Some("revoked"))
    );

    for path in [
        fill(routes::WINDOW_SYNC, "nope"),
        fill(routes::WINDOW_REVOKE, "nope"),
    ] {
        let r = srv.post(Some(&t), &path, json!({})).await;
        assert_eq!((r.status, r.code()), (404, "window_not_found"));
    }
    // Another account's window is unknown to this one.
    let zed = srv.user("zed", true).await;
    let tz = srv.login(&zed).await;
    let r = srv
        .post(Some(&tz), &fill(routes::WINDOW_SYNC, &a), json!({}))
        .await;
    assert_eq!((r.status, r.code()), (404, "window_not_found"));
}

#[tokio::test]
async fn window_presence_is_computed_on_read() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let w = srv.post(Some(&t), routes::WINDOWS, reg(&[], true)).await;
    let w = w.body["window_id"].as_str().unwrap().to_string();
    let present = || async {
        let r = srv.get(Some(&t), routes::WINDOWS).await;
        r.body[0]["present"].as_bool().unwrap()
    };
    assert!(!present().await, "never synced");
    srv.post(Some(&t), &fill(routes::WINDOW_SYNC, &w), json!({}))
        .await;
    assert!(present().await);
    srv.run.clock().advance(179);
    assert!(present().await);
    // Nothing is written between these two reads: only time passes.
    srv.run.clock().advance(1);
    assert!(!present().await, "3 minutes without a sync");
}
