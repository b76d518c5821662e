//! Accounts and keys through the client, as production has them (seed 002
//! L29, L31, L7 §0.2): a provisioning key creates a NEW agent account once,
//! and a failure leaves it usable; a reinforcement account's owner rotates
//! and revokes its key; an inactive account's key is one more 401.

use hoop_api::Error;
use hoop_api::admin::{CreateProvisionKey, FaultPoint, ProvisionKind};
use hoop_api::rest::redeem;
use hoop_api::types::{RedeemRequest, ReinforceApply, codes};
use hoop_api::{McpClient, McpConfig};
use hoop_core::limits::FIXED_LOGIN_CODE;

use crate::support::Env;

fn req(key: &str, name: &str) -> RedeemRequest {
    RedeemRequest {
        key: key.into(),
        name: name.into(),
        machine: Some("devbox".into()),
        conversation_id: None,
    }
}

async fn key(env: &Env, kind: ProvisionKind, room: Option<i64>) -> String {
    env.admin
        .create_provision_key(&CreateProvisionKey {
            kind,
            conversation_id: room,
            ttl_secs: None,
        })
        .await
        .unwrap()
        .key
}

fn mcp(env: &Env, key: &str) -> McpClient {
    McpClient::new(McpConfig::new(env.base(), key)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_key_creates_a_new_agent_once_with_the_fixed_code_and_the_room() {
    let env = Env::start().await;
    let existing = env.user("bolt", true).await;
    let room = env.room("ops", &[]).await;
    let key = key(&env, ProvisionKind::Sentinel, Some(room.id)).await;
    let r = redeem(&env.base(), &req(&key, "nova")).await.unwrap();
    assert_eq!(r.kind, "sentinel");
    assert_ne!(r.user.id, existing.id, "a new account");
    assert!(r.user.is_agent);
    assert_eq!(r.fixed_code.as_deref(), Some(FIXED_LOGIN_CODE));
    assert_eq!((r.mcp_key, r.conversation_id), (None, Some(room.id)));
    let c = env.client_for(&r.user.email, None);
    assert_eq!(
        c.me().await.unwrap().id,
        r.user.id,
        "logs in with the fixed code"
    );
    assert_eq!(
        c.conversations().await.unwrap()[0].id,
        room.id,
        "joined the room"
    );
    match redeem(&env.base(), &req(&key, "nova2")).await {
        Err(e) => assert_eq!(e.code(), Some(codes::KEY_INVALID), "{e:?}"),
        Ok(r) => panic!("redeemed twice: {r:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reinforcement_key_mints_an_mcp_key_and_the_ready_line() {
    let env = Env::start().await;
    let key = key(&env, ProvisionKind::Reinforcement, None).await;
    let r = redeem(&env.base(), &req(&key, "helper")).await.unwrap();
    assert_eq!(r.kind, "reinforcement");
    let mcp_key = r.mcp_key.expect("an MCP key");
    assert!(mcp_key.starts_with(hoop_api::headers::MCP_KEY_PREFIX));
    assert_eq!(
        r.ready_line.expect("a ready line"),
        hoop_api::mcp::claude_add_line(Some(&env.base()), &mcp_key)
    );
    assert!(!mcp(&env, &mcp_key).list_tools().await.unwrap().is_empty());
    // No fixed code for a reinforcement account: the login is refused.
    let e = env.client_for(&r.user.email, None).me().await.unwrap_err();
    assert!(matches!(e, Error::LoginRefused { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("a reinforcement account has only its MCP key") && text.contains("disabled"),
        "the operator reads why: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_redeem_leaves_the_key_usable() {
    let env = Env::start().await;
    let room = env.room("ops", &[]).await;
    let (k1, k2) = (
        key(&env, ProvisionKind::Sentinel, None).await,
        key(&env, ProvisionKind::Sentinel, Some(room.id)).await,
    );
    redeem(&env.base(), &req(&k1, "taken")).await.unwrap();
    // The same name: refused, and k2 stays usable.
    let e = redeem(&env.base(), &req(&k2, "taken")).await.unwrap_err();
    assert_eq!(e.code(), Some(codes::CONFLICT), "{e:?}");
    // A failure inside the transaction, after the account and the join.
    env.admin
        .arm_fault(FaultPoint::RedeemBeforeCommit, 1)
        .await
        .unwrap();
    let e = redeem(&env.base(), &req(&k2, "free")).await.unwrap_err();
    assert_eq!(e.code(), Some(codes::INTERNAL), "{e:?}");
    let r = redeem(&env.base(), &req(&k2, "free")).await.unwrap();
    assert_eq!(r.conversation_id, Some(room.id));
    let users = env.admin.list_users().await.unwrap();
    assert_eq!(users.iter().filter(|u| u.username == "free").count(), 1);
    assert!(matches!(
        redeem(&env.base(), &req("hoopprov_bogus", "x")).await,
        Err(e) if e.code() == Some(codes::KEY_INVALID)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_rotates_and_revokes_a_reinforcement_key() {
    let env = Env::start().await;
    let ann = env.user("ann", false).await;
    let owner = env.person_client(&ann).await;
    let app = owner
        .reinforce_apply(&ReinforceApply {
            name: "nova".into(),
            nickname: None,
        })
        .await
        .unwrap();
    assert_eq!(
        (app.name.as_str(), app.status.as_str()),
        ("nova_aid", "pending")
    );
    let agent = env.admin.approve_application(app.id).await.unwrap().agent;

    let k1 = owner.rotate_reinforce_key(agent.id).await.unwrap();
    assert_eq!(
        k1.claude_add,
        hoop_api::mcp::claude_add_line(Some(&env.base()), &k1.key)
    );
    assert!(mcp(&env, &k1.key).list_tools().await.is_ok());
    let k2 = owner.rotate_reinforce_key(agent.id).await.unwrap();
    let e = mcp(&env, &k1.key).list_tools().await.unwrap_err();
    assert!(matches!(e, Error::Unauthorized { .. }), "old key: {e:?}");
    assert!(mcp(&env, &k2.key).list_tools().await.is_ok());

    // A failed rotation leaves the current key working.
    env.admin
        .arm_fault(FaultPoint::RotateBeforeCommit, 1)
        .await
        .unwrap();
    let e = owner.rotate_reinforce_key(agent.id).await.unwrap_err();
    assert_eq!(e.code(), Some(codes::INTERNAL), "{e:?}");
    assert!(mcp(&env, &k2.key).list_tools().await.is_ok());

    // Inactive: the key is refused like any bad key, then works again.
    env.admin.set_user_active(agent.id, false).await.unwrap();
    let e = mcp(&env, &k2.key).list_tools().await.unwrap_err();
    assert!(matches!(e, Error::Unauthorized { .. }), "inactive: {e:?}");
    env.admin.set_user_active(agent.id, true).await.unwrap();
    assert!(mcp(&env, &k2.key).list_tools().await.is_ok());

    let revoked = owner.revoke_reinforce_key(agent.id).await.unwrap();
    assert_eq!(revoked.revoked, 1);
    let e = mcp(&env, &k2.key).list_tools().await.unwrap_err();
    assert!(matches!(e, Error::Unauthorized { .. }), "revoked: {e:?}");
}
