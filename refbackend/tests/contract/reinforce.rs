//! Reinforcement accounts and keys as production has them (seed 002 L29,
//! L7 §0.2, L48 item 7): application → approval (a new agent account
//! without a fixed code, owned by the applicant) → the owner's key
//! rotation (revoke + mint, one transaction, 90 days, the answer carries
//! the `claude mcp add …` line); a key revoke; an inactive account whose
//! keys and tokens are refused with the one 401 of every bad key.

use hoop_api::admin::FaultPoint;
use hoop_api::routes;
use hoop_api::types::User;
use hoop_refbackend::{Config, PublicBase};
use serde_json::{Value, json};

use crate::support::{Resp, Srv};

/// `owner` applies for `name`, the operator approves: the new account.
async fn approved(srv: &Srv, owner_token: &str, name: &str) -> User {
    let r = srv
        .post(
            Some(owner_token),
            routes::REINFORCE_APPLICATIONS,
            json!({"name": name, "nickname": "Nova"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["status"], "pending");
    let id = r.body["id"].as_i64().unwrap();
    let a = srv.admin.approve_application(id).await.unwrap();
    assert_eq!(a.application.status, "approved");
    assert_eq!(a.application.agent_id, Some(a.agent.id));
    a.agent
}

async fn rotate(srv: &Srv, token: &str, agent: i64) -> Resp {
    srv.post(
        Some(token),
        &routes::fill(routes::REINFORCE_AGENT_KEY, agent),
        json!({}),
    )
    .await
}

/// `chat_list` with `key`: the HTTP status (200 works, 401 refused) and
/// the body.
async fn try_key(srv: &Srv, key: &str) -> (u16, Value) {
    let r = srv
        .mcp(
            key,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "chat_list", "arguments": {}}}),
        )
        .await;
    (r.status, r.body)
}

#[tokio::test]
async fn apply_and_approve_create_an_owned_agent_without_a_fixed_code() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let t = srv.login(&ann).await;
    let agent = approved(&srv, &t, "nova").await;
    assert_eq!(agent.username, "nova_aid", "production appends _aid");
    assert!(agent.is_agent);
    assert_eq!(agent.nickname.as_deref(), Some("Nova"));
    let login = srv
        .post(
            None,
            routes::LOGIN,
            json!({"email": agent.email, "code": "123456"}),
        )
        .await;
    assert_eq!(
        (login.status, login.code()),
        (401, "unauthorized"),
        "no fixed code"
    );

    // One pending application per person; a bad name is refused.
    let cases = [
        (json!({"name": "vega"}), 201, ""),
        (json!({"name": "lyra"}), 409, "conflict"),
        (json!({"name": "Bad-Name"}), 400, "bad_request"),
    ];
    for (body, status, code) in cases {
        let r = srv
            .post(Some(&t), routes::REINFORCE_APPLICATIONS, body.clone())
            .await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        if !code.is_empty() {
            assert_eq!(r.code(), code, "{body}");
        }
    }
    // Approving twice is refused; a name taken while queued is refused and
    // nothing is written.
    let bob = srv.user("bob", false).await;
    let bt = srv.login(&bob).await;
    let r = srv
        .post(
            Some(&bt),
            routes::REINFORCE_APPLICATIONS,
            json!({"name": "nova"}),
        )
        .await;
    assert_eq!(r.status, 201);
    let taken = srv
        .admin
        .approve_application(r.body["id"].as_i64().unwrap())
        .await
        .unwrap_err();
    assert!(taken.to_string().contains("conflict"), "{taken}");
    let users = srv.admin.list_users().await.unwrap();
    assert_eq!(
        users.iter().filter(|u| u.username == "nova_aid").count(),
        1,
        "no second account"
    );
}

#[tokio::test]
async fn the_owner_rotates_the_key_revoke_and_mint_in_one_transaction() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let eve = srv.user("eve", true).await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&ann).await;
    let agent = approved(&srv, &t, "nova").await;

    let before = srv.run.clock().now();
    let first = rotate(&srv, &t, agent.id).await;
    let after = srv.run.clock().now();
    assert_eq!(first.status, 200, "{}", first.body);
    let k1 = first.body["key"].as_str().unwrap().to_string();
    assert_eq!(
        first.body["claude_add"].as_str().unwrap(),
        hoop_api::mcp::claude_add_line(Some(&srv.base), &k1)
    );
    let ninety = 90 * 24 * 3600;
    let exp = first.body["expires_at"].as_i64().unwrap();
    assert!(
        (before + ninety..=after + ninety).contains(&exp),
        "90 days: {exp} vs [{before}, {after}]"
    );
    assert_eq!(try_key(&srv, &k1).await.0, 200);

    let second = rotate(&srv, &t, agent.id).await;
    assert_eq!(second.status, 200);
    let k2 = second.body["key"].as_str().unwrap().to_string();
    assert_eq!(try_key(&srv, &k1).await.0, 401, "the old key is revoked");
    assert_eq!(try_key(&srv, &k2).await.0, 200, "the new key works");

    // A failure after the revoke and the insert rolls both back: the old
    // key keeps working, no new key came out.
    srv.admin
        .arm_fault(FaultPoint::RotateBeforeCommit, 1)
        .await
        .unwrap();
    let failed = rotate(&srv, &t, agent.id).await;
    assert_eq!((failed.status, failed.code()), (500, "internal"));
    assert!(failed.body.get("key").is_none());
    assert_eq!(try_key(&srv, &k2).await.0, 200, "still alive");

    // Only the owner: a stranger, a human asking for an agent nobody owns,
    // an unknown account.
    let eve_t = srv.login(&eve).await;
    let refusals = [
        (eve_t.as_str(), agent.id, 403, "forbidden"),
        (t.as_str(), bolt.id, 403, "forbidden"),
        (t.as_str(), 9999, 404, "not_found"),
    ];
    for (token, id, status, code) in refusals {
        let r = rotate(&srv, token, id).await;
        assert_eq!((r.status, r.code()), (status, code), "agent {id}");
    }
    assert_eq!(try_key(&srv, &k2).await.0, 200, "untouched by refusals");

    // The owner revokes: the key is refused.
    let r = srv
        .send_req(
            srv.http.delete(format!(
                "{}{}",
                srv.base,
                routes::fill(routes::REINFORCE_AGENT_KEY, agent.id)
            )),
            Some(&t),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["revoked"], 1);
    assert_eq!(try_key(&srv, &k2).await.0, 401);
}

#[tokio::test]
async fn an_inactive_account_is_refused_everywhere_with_the_one_answer() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&ann).await;
    let agent = approved(&srv, &t, "nova").await;
    let key = rotate(&srv, &t, agent.id).await.body["key"]
        .as_str()
        .unwrap()
        .to_string();
    let bolt_key = srv.mint_key(&bolt).await;
    let bolt_t = srv.login(&bolt).await;
    let (_, unknown) = try_key(&srv, "hoopmcp_0000").await;

    srv.admin.set_user_active(agent.id, false).await.unwrap();
    srv.admin.set_user_active(bolt.id, false).await.unwrap();
    for k in [&key, &bolt_key] {
        let (status, body) = try_key(&srv, k).await;
        assert_eq!(status, 401);
        assert_eq!(body, unknown, "the same answer as an unknown key");
    }
    let me = srv.get(Some(&bolt_t), routes::ME).await;
    assert_eq!((me.status, me.code()), (401, "unauthorized"), "JWT refused");
    let login = srv
        .post(
            None,
            routes::LOGIN,
            json!({"email": bolt.email, "code": "123456"}),
        )
        .await;
    assert_eq!((login.status, login.code()), (401, "unauthorized"));
    let mint = srv
        .post(
            Some(&srv.run.admin_token),
            routes::admin::MCP_KEYS,
            json!({"user_id": bolt.id}),
        )
        .await;
    assert_eq!(
        (mint.status, mint.code()),
        (403, "forbidden"),
        "no key minted"
    );
    let r = rotate(&srv, &t, agent.id).await;
    assert_eq!((r.status, r.code()), (403, "forbidden"));

    // Enabled again: the same keys work (nothing was revoked).
    srv.admin.set_user_active(agent.id, true).await.unwrap();
    srv.admin.set_user_active(bolt.id, true).await.unwrap();
    assert_eq!(try_key(&srv, &key).await.0, 200);
    assert_eq!(try_key(&srv, &bolt_key).await.0, 200);
    assert_eq!(srv.get(Some(&bolt_t), routes::ME).await.status, 200);
}

#[tokio::test]
async fn with_no_public_base_the_line_carries_a_placeholder_not_a_domain() {
    let srv = Srv::start_with(Config {
        public_base: PublicBase::Unset,
        ..Config::default()
    })
    .await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&ann).await;
    let agent = approved(&srv, &t, "nova").await;
    let r = rotate(&srv, &t, agent.id).await;
    let key = r.body["key"].as_str().unwrap();
    let minted = srv.admin.mint_mcp_key(bolt.id).await.unwrap();
    for (line, key) in [
        (r.body["claude_add"].as_str().unwrap(), key),
        (minted.ready_line.as_str(), minted.key.as_str()),
    ] {
        assert_eq!(
            line,
            format!(
                "claude mcp add -s user --transport http hoop <BACKEND_URL>/mcp --header \"Authorization: Bearer {key}\""
            )
        );
        assert!(!line.contains(&srv.base));
    }
}
