use hoop_api::admin::{CreateProvisionKey, ProvisionKind};
use hoop_api::routes;
use serde_json::json;

use crate::support::Srv;

async fn key(srv: &Srv, user: i64, kind: ProvisionKind, room: Option<i64>) -> String {
    srv.admin
        .create_provision_key(&CreateProvisionKey {
            user_id: user,
            kind,
            conversation_id: room,
        })
        .await
        .unwrap()
        .key
}

#[tokio::test]
async fn sentinel_key_redeems_once_and_joins_the_room() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let room = srv.room("ops", &[], true).await;
    let k = key(&srv, bolt.id, ProvisionKind::Sentinel, Some(room.id)).await;
    let r = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": k, "name": "bolt", "machine": "m1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "sentinel");
    assert_eq!(r.body["fixed_code"], "123456");
    assert_eq!(r.body["conversation_id"], room.id);
    assert_eq!(r.body["user"]["id"], bolt.id);
    let t = srv.login(&bolt).await;
    let convs = srv.get(Some(&t), routes::CONVERSATIONS).await;
    assert_eq!(convs.body[0]["id"], room.id, "joined");
    let again = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": k, "name": "bolt2", "machine": "m1"}),
        )
        .await;
    assert_eq!(
        (again.status, again.code()),
        (403, "key_invalid"),
        "one use"
    );
}

#[tokio::test]
async fn reinforcement_key_comes_with_a_working_mcp_key_and_the_ready_line() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let k = key(&srv, r9.id, ProvisionKind::Reinforcement, None).await;
    let r = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": k, "name": "r9"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mcp_key = r.body["mcp_key"].as_str().unwrap();
    assert!(mcp_key.starts_with("hoopmcp_"));
    assert_eq!(
        r.body["ready_line"].as_str().unwrap(),
        format!(
            "claude mcp add -s user --transport http hoop {}/mcp --header \"Authorization: Bearer {mcp_key}\"",
            srv.base
        )
    );
    let (err, _) = srv.tool(mcp_key, "chat_list", json!({})).await;
    assert!(!err);
}

#[tokio::test]
async fn a_failed_redeem_leaves_the_key_usable() {
    let srv = Srv::start().await;
    let r9 = srv.user("r9", true).await;
    let room = srv.room("ops", &[], true).await;
    // A home "r9" is already installed on m1.
    let first = key(&srv, r9.id, ProvisionKind::Sentinel, None).await;
    let r = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": first, "name": "r9", "machine": "m1"}),
        )
        .await;
    assert_eq!(r.status, 200);

    let k = key(&srv, r9.id, ProvisionKind::Reinforcement, Some(room.id)).await;
    // Fails late (the name is taken), after the key was marked, the MCP key
    // minted and the room joined — all of it rolls back.
    let r = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": k, "name": "r9", "machine": "m1"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (409, "conflict"));
    let t = srv.login(&r9).await;
    assert_eq!(
        srv.get(Some(&t), routes::CONVERSATIONS).await.body,
        json!([]),
        "the room join rolled back"
    );
    // Bad input before anything: the key stays usable too.
    let r = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": k, "name": "../evil"}),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": k, "name": "r9-b", "machine": "m1"}),
        )
        .await;
    assert_eq!(r.status, 200, "the key is still usable: {}", r.body);
    assert_eq!(r.body["conversation_id"], room.id);
    let bad = srv
        .post(
            None,
            routes::PROVISION_REDEEM,
            json!({"key": "hoopprov_nope", "name": "x"}),
        )
        .await;
    assert_eq!((bad.status, bad.code()), (403, "key_invalid"));
}
