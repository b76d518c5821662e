//! Provisioning keys: redeem once, sentinel vs reinforcement answers.

use hoop_api::Error;
use hoop_api::admin::{CreateProvisionKey, ProvisionKind};
use hoop_api::rest::redeem;
use hoop_api::types::{RedeemRequest, codes};
use hoop_core::limits::FIXED_LOGIN_CODE;

use crate::support::Env;

fn req(key: &str, name: &str) -> RedeemRequest {
    RedeemRequest {
        key: key.into(),
        name: name.into(),
        machine: Some("devbox".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_key_redeems_once_into_the_fixed_code_and_the_room() {
    let env = Env::start().await;
    let u = env.user("bolt", true).await;
    let room = env.room("ops", &[]).await;
    let key = env
        .admin
        .create_provision_key(&CreateProvisionKey {
            user_id: u.id,
            kind: ProvisionKind::Sentinel,
            conversation_id: Some(room.id),
        })
        .await
        .unwrap()
        .key;
    let r = redeem(&env.base(), &req(&key, "bolt")).await.unwrap();
    assert_eq!(r.kind, "sentinel");
    assert_eq!(r.user.id, u.id);
    assert_eq!(r.fixed_code.as_deref(), Some(FIXED_LOGIN_CODE));
    assert_eq!((r.mcp_key, r.conversation_id), (None, Some(room.id)));
    let c = env.client_for(&u.email, None);
    assert_eq!(
        c.conversations().await.unwrap()[0].id,
        room.id,
        "joined the room"
    );
    match redeem(&env.base(), &req(&key, "bolt2")).await {
        Err(e) => assert_eq!(e.code(), Some(codes::KEY_INVALID), "{e:?}"),
        Ok(r) => panic!("redeemed twice: {r:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reinforcement_key_mints_an_mcp_key_and_the_ready_line() {
    let env = Env::start().await;
    let u = env.user("helper", true).await;
    let key = env
        .admin
        .create_provision_key(&CreateProvisionKey {
            user_id: u.id,
            kind: ProvisionKind::Reinforcement,
            conversation_id: None,
        })
        .await
        .unwrap()
        .key;
    let r = redeem(&env.base(), &req(&key, "helper")).await.unwrap();
    assert_eq!(r.kind, "reinforcement");
    let mcp_key = r.mcp_key.expect("an MCP key");
    assert!(mcp_key.starts_with(hoop_api::headers::MCP_KEY_PREFIX));
    let line = r.ready_line.expect("a ready line");
    assert_eq!(
        line,
        format!(
            "claude mcp add -s user --transport http hoop {}/mcp --header \"Authorization: Bearer {mcp_key}\"",
            env.base()
        )
    );
    // The minted key works on /mcp.
    let mcp = hoop_api::McpClient::new(hoop_api::McpConfig::new(env.base(), mcp_key)).unwrap();
    assert!(!mcp.list_tools().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_redeem_leaves_the_key_usable() {
    let env = Env::start().await;
    let u = env.user("bolt", true).await;
    let other = env.user("nut", true).await;
    let mk = |user_id| {
        let admin = env.admin.clone();
        async move {
            admin
                .create_provision_key(&CreateProvisionKey {
                    user_id,
                    kind: ProvisionKind::Sentinel,
                    conversation_id: None,
                })
                .await
                .unwrap()
                .key
        }
    };
    let (k1, k2) = (mk(other.id).await, mk(u.id).await);
    redeem(&env.base(), &req(&k1, "taken")).await.unwrap();
    // Same home name on the same machine: refused, and k2 stays usable.
    let e = redeem(&env.base(), &req(&k2, "taken")).await.unwrap_err();
    assert!(matches!(e, Error::Refused { .. }), "{e:?}");
    redeem(&env.base(), &req(&k2, "free")).await.unwrap();
    assert!(matches!(
        redeem(&env.base(), &req("hoopprov_bogus", "x")).await,
        Err(e) if e.code() == Some(codes::KEY_INVALID)
    ));
}
