//! Provisioning as production does it (seed 002 L31): an admin-created key
//! with a TTL (7 days by default, at most 90); redeeming it creates a NEW
//! agent account (`is_agent`, `fixed_otp`), optionally joins a room, all in
//! one transaction; any failure leaves the key usable.

use hoop_api::admin::{CreateProvisionKey, FaultPoint, ProvisionKind};
use hoop_api::routes;
use serde_json::{Value, json};

use crate::support::{Resp, Srv};

const DAY: i64 = 24 * 3600;

async fn key_with(srv: &Srv, kind: ProvisionKind, room: Option<i64>, ttl: Option<i64>) -> String {
    srv.admin
        .create_provision_key(&CreateProvisionKey {
            kind,
            conversation_id: room,
            ttl_secs: ttl,
        })
        .await
        .unwrap()
        .key
}

async fn key(srv: &Srv, kind: ProvisionKind, room: Option<i64>) -> String {
    key_with(srv, kind, room, None).await
}

async fn redeem(srv: &Srv, body: Value) -> Resp {
    srv.post(None, routes::PROVISION_REDEEM, body).await
}

async fn usernames(srv: &Srv) -> Vec<String> {
    let users = srv.admin.list_users().await.unwrap();
    users.into_iter().map(|u| u.username).collect()
}

async fn member_ids(srv: &Srv, room: i64, token: &str) -> Vec<i64> {
    let r = srv
        .get(
            Some(token),
            &routes::fill(routes::CONVERSATION_MEMBERS, room),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["user_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_sentinel_key_creates_a_new_agent_account_once_and_joins_the_room() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("ops", &[&ann], true).await;
    let k = key(&srv, ProvisionKind::Sentinel, Some(room.id)).await;
    let r = redeem(&srv, json!({"key": k, "name": "nova", "machine": "m1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "sentinel");
    assert_eq!(r.body["fixed_code"], "123456");
    assert_eq!(r.body["conversation_id"], room.id);
    let user: hoop_api::types::User = serde_json::from_value(r.body["user"].clone()).unwrap();
    assert!(
        user.id != bolt.id && user.id != ann.id,
        "a NEW account, never an existing one"
    );
    assert_eq!(user.username, "nova");
    assert!(user.is_agent, "is_agent");
    // fixed_otp: the new account logs in with the fixed code.
    let t = srv.login(&user).await;
    let convs = srv.get(Some(&t), routes::CONVERSATIONS).await;
    assert_eq!(convs.body[0]["id"], room.id, "joined");
    let ann_t = srv.login(&ann).await;
    assert_eq!(
        member_ids(&srv, room.id, &ann_t).await,
        vec![ann.id, user.id]
    );
    let again = redeem(&srv, json!({"key": k, "name": "nova2", "machine": "m1"})).await;
    assert_eq!(
        (again.status, again.code()),
        (403, "key_invalid"),
        "one use"
    );
    assert!(!usernames(&srv).await.contains(&"nova2".to_string()));
}

#[tokio::test]
async fn a_provisioning_key_lives_7_days_by_default_and_at_most_90() {
    let srv = Srv::start().await;
    let cases = [
        (None, 7 * DAY),
        (Some(3600), 3600),
        (Some(90 * DAY), 90 * DAY),
        (Some(91 * DAY), 90 * DAY),
        (Some(i64::MAX), 90 * DAY),
        (Some(0), 7 * DAY),
        (Some(-1), 7 * DAY),
    ];
    for (ttl, life) in cases {
        let before = srv.run.clock().now();
        let k = srv
            .admin
            .create_provision_key(&CreateProvisionKey {
                ttl_secs: ttl,
                ..Default::default()
            })
            .await
            .unwrap();
        // The key's "now" is a moment between the two reads.
        let after = srv.run.clock().now();
        assert!(
            (before + life..=after + life).contains(&k.expires_at),
            "ttl {ttl:?}: {} is not {life} s after [{before}, {after}]",
            k.expires_at
        );
    }
    let hour = key_with(&srv, ProvisionKind::Sentinel, None, Some(3600)).await;
    let week = key(&srv, ProvisionKind::Sentinel, None).await;
    srv.run.clock().advance(3600);
    let r = redeem(&srv, json!({"key": hour, "name": "late"})).await;
    assert_eq!((r.status, r.code()), (403, "key_invalid"), "expired");
    let r = redeem(&srv, json!({"key": week, "name": "ontime"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let week2 = key(&srv, ProvisionKind::Sentinel, None).await;
    srv.run.clock().advance(7 * DAY);
    let r = redeem(&srv, json!({"key": week2, "name": "late2"})).await;
    assert_eq!((r.status, r.code()), (403, "key_invalid"), "7 days passed");
}

#[tokio::test]
async fn an_injected_failure_before_the_commit_leaves_nothing_and_the_key_usable() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("ops", &[&ann], true).await;
    let ann_t = srv.login(&ann).await;
    let k = key(&srv, ProvisionKind::Reinforcement, Some(room.id)).await;
    srv.admin
        .arm_fault(FaultPoint::RedeemBeforeCommit, 1)
        .await
        .unwrap();
    // Fails after the key was taken, the account created, the room joined
    // and the MCP key minted: all of it rolls back.
    let r = redeem(&srv, json!({"key": k, "name": "nova", "machine": "m1"})).await;
    assert_eq!((r.status, r.code()), (500, "internal"), "{}", r.body);
    assert!(
        !usernames(&srv).await.contains(&"nova".to_string()),
        "no account"
    );
    assert_eq!(
        member_ids(&srv, room.id, &ann_t).await,
        vec![ann.id],
        "no join"
    );
    // The key is usable again, and the same name is free.
    let r = redeem(&srv, json!({"key": k, "name": "nova", "machine": "m1"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["user"]["id"].as_i64().unwrap();
    assert_eq!(member_ids(&srv, room.id, &ann_t).await, vec![ann.id, id]);
    let (err, _) = srv
        .tool(r.body["mcp_key"].as_str().unwrap(), "chat_list", json!({}))
        .await;
    assert!(!err, "exactly one working MCP key came out");
}

#[tokio::test]
async fn a_refused_redeem_leaves_the_key_usable() {
    let srv = Srv::start().await;
    srv.user("bolt", true).await;
    let room = srv.room("ops", &[], true).await;
    let k = key(&srv, ProvisionKind::Sentinel, Some(room.id)).await;
    // Each refused late (after the key was taken) or early; each rolls back.
    let refusals = [
        (json!({"key": k, "name": "bolt"}), 409, "conflict"),
        (
            json!({"key": k, "name": "nova", "conversation_id": 999}),
            403,
            "forbidden",
        ),
        (json!({"key": k, "name": "../evil"}), 400, "bad_request"),
        (
            json!({"key": format!(" {k}x"), "name": "nova"}),
            403,
            "key_invalid",
        ),
    ];
    for (body, status, code) in refusals {
        let r = redeem(&srv, body.clone()).await;
        assert_eq!((r.status, r.code()), (status, code), "{body}: {}", r.body);
    }
    // A home name already installed on the machine.
    let other = key(&srv, ProvisionKind::Sentinel, None).await;
    let r = redeem(&srv, json!({"key": other, "name": "nova", "machine": "m1"})).await;
    assert_eq!(r.status, 200);
    let r = redeem(&srv, json!({"key": k, "name": "nova", "machine": "m1"})).await;
    assert_eq!((r.status, r.code()), (409, "conflict"));
    let r = redeem(&srv, json!({"key": k, "name": "nova-b", "machine": "m1"})).await;
    assert_eq!(r.status, 200, "the key is still usable: {}", r.body);
    assert_eq!(r.body["conversation_id"], room.id);
    let bad = redeem(&srv, json!({"key": "hoopprov_nope", "name": "x"})).await;
    assert_eq!((bad.status, bad.code()), (403, "key_invalid"));
}

/// A key joins only the room it names (issue 19 item 7): naming another
/// room, or any room with a key that names none, is refused before anything
/// is written, and the key still redeems afterwards.
#[tokio::test]
async fn a_key_joins_only_the_room_it_names_and_a_request_for_another_spends_nothing() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let keys_room = srv.room("a", &[&ann], true).await;
    let other = srv.room("b", &[&ann], true).await;
    let ann_t = srv.login(&ann).await;
    for key_room in [Some(keys_room.id), None] {
        let k = key(&srv, ProvisionKind::Sentinel, key_room).await;
        let name = if key_room.is_some() { "nova" } else { "vega" };
        let r = redeem(
            &srv,
            json!({"key": k, "name": name, "conversation_id": other.id}),
        )
        .await;
        assert_eq!(
            (r.status, r.code()),
            (403, "forbidden"),
            "key for {key_room:?}: {}",
            r.body
        );
        assert!(
            !usernames(&srv).await.contains(&name.to_string()),
            "no account"
        );
        assert_eq!(
            member_ids(&srv, other.id, &ann_t).await,
            vec![ann.id],
            "no join"
        );
        // The key is unspent: it redeems, into its own room only.
        let r = redeem(&srv, json!({"key": k, "name": name})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["conversation_id"], json!(key_room));
        let id = r.body["user"]["id"].as_i64().unwrap();
        assert!(!member_ids(&srv, other.id, &ann_t).await.contains(&id));
        assert_eq!(
            member_ids(&srv, keys_room.id, &ann_t).await.contains(&id),
            key_room.is_some()
        );
    }
}

/// Must not fire: a request that repeats the key's own room is served.
#[tokio::test]
async fn a_request_naming_the_keys_own_room_joins_it() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("a", &[&ann], true).await;
    let k = key(&srv, ProvisionKind::Sentinel, Some(room.id)).await;
    let r = redeem(
        &srv,
        json!({"key": k, "name": "nova", "conversation_id": room.id}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["conversation_id"], room.id);
    let id = r.body["user"]["id"].as_i64().unwrap();
    let ann_t = srv.login(&ann).await;
    assert!(member_ids(&srv, room.id, &ann_t).await.contains(&id));
}

#[tokio::test]
async fn a_reinforcement_key_creates_an_agent_without_a_fixed_code_and_a_working_mcp_key() {
    let srv = Srv::start().await;
    let k = key(&srv, ProvisionKind::Reinforcement, None).await;
    let r = redeem(&srv, json!({"key": k, "name": "r9"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["user"]["is_agent"], true);
    assert_eq!(r.body["fixed_code"], Value::Null);
    let mcp_key = r.body["mcp_key"].as_str().unwrap();
    assert!(mcp_key.starts_with("hoopmcp_"));
    assert_eq!(
        r.body["ready_line"].as_str().unwrap(),
        hoop_api::mcp::claude_add_line(Some(&srv.base), mcp_key)
    );
    let (err, _) = srv.tool(mcp_key, "chat_list", json!({})).await;
    assert!(!err);
    // No fixed code: the login is refused like any wrong code.
    let login = srv
        .post(
            None,
            routes::LOGIN,
            json!({"email": r.body["user"]["email"], "code": "123456"}),
        )
        .await;
    assert_eq!((login.status, login.code()), (401, "unauthorized"));
}
