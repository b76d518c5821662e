//! The MCP endpoint through `McpClient`: tools, chat_read, the 300/min rate
//! limit with `Retry-After: 60`, and a JWT refused before any lookup.

use std::time::Duration;

use hoop_api::types::mcp::{self as tools, ChatRead, ChatReadArgs};
use hoop_api::{Error, McpClient, McpConfig};
use hoop_core::limits::{CHAT_READ_DEFAULT, MCP_CALLS_PER_MIN, MCP_RETRY_AFTER_SECS};

use crate::support::Env;

async fn helper(env: &Env) -> (hoop_api::types::User, McpClient) {
    let u = env.user("helper", true).await;
    let minted = env.admin.mint_mcp_key(u.id).await.unwrap();
    let mut cfg = McpConfig::new(env.base(), minted.key);
    cfg.max_retry_wait = Duration::ZERO;
    (u, McpClient::new(cfg).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_and_the_tools_this_toolkit_uses() {
    let env = Env::start().await;
    let (_, mcp) = helper(&env).await;
    let init = mcp.initialize().await.unwrap();
    assert!(init.get("protocolVersion").is_some(), "{init}");
    let names: Vec<String> = mcp
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for want in [
        tools::CHAT_LIST,
        tools::CHAT_READ,
        tools::CHAT_MEMBERS,
        tools::CHAT_SEND_TEXT,
        tools::CHAT_SEND_IMAGE,
        tools::WORK_TASKS,
        tools::WORK_BEAT,
        tools::WORK_TASK_START,
        tools::WORK_TASK_PROGRESS,
        tools::WORK_TASK_LEASE,
        tools::WORK_TASK_FINISH,
        tools::WINDOW_REGISTER,
        tools::WINDOW_SYNC,
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_read_is_newest_first_with_its_counts() {
    let env = Env::start().await;
    let (u, mcp) = helper(&env).await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[u.id, ann.id]).await;
    let mut ids = Vec::new();
    for i in 0..(CHAT_READ_DEFAULT + 2) {
        ids.push(env.post_as(room.id, ann.id, &format!("m{i}")).await.id);
    }
    let read = |limit| {
        let mcp = &mcp;
        async move {
            let r = mcp
                .call_tool(
                    tools::CHAT_READ,
                    serde_json::to_value(ChatReadArgs {
                        conversation_id: room.id,
                        limit,
                        ..Default::default()
                    })
                    .unwrap(),
                )
                .await
                .unwrap();
            assert!(!r.is_error, "{r:?}");
            serde_json::from_value::<ChatRead>(r.json().unwrap()).unwrap()
        }
    };
    let d = read(None).await;
    assert_eq!(d.count, CHAT_READ_DEFAULT as usize);
    assert_eq!(d.order, "newest_first");
    assert!(d.truncated);
    assert_eq!(d.messages[0].id, *ids.last().unwrap());
    assert!(d.messages.windows(2).all(|w| w[0].id > w[1].id));
    assert_eq!(
        d.oldest_created_at,
        Some(d.messages.last().unwrap().created_at)
    );
    let small = read(Some(3)).await;
    assert_eq!(small.count, 3);
    let all = read(Some(50)).await;
    assert_eq!((all.count, all.truncated), (ids.len(), false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_301st_call_in_a_minute_is_429_with_retry_after_60() {
    let env = Env::start().await;
    let (_, mcp) = helper(&env).await;
    for i in 0..MCP_CALLS_PER_MIN {
        mcp.list_tools()
            .await
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    match mcp.list_tools().await {
        Err(Error::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Some(Duration::from_secs(MCP_RETRY_AFTER_SECS)))
        }
        other => panic!("{other:?}"),
    }
    env.backend.clock().advance(61);
    mcp.list_tools().await.expect("the window moved on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwt_on_mcp_is_refused_with_401() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let jwt = a.client.bearer().await.unwrap();
    let mcp = McpClient::new(McpConfig::new(env.base(), jwt)).unwrap();
    assert!(matches!(
        mcp.list_tools().await,
        Err(Error::Unauthorized { .. })
    ));
    let bogus = McpClient::new(McpConfig::new(env.base(), "hoopmcp_unknown")).unwrap();
    assert!(matches!(
        bogus.list_tools().await,
        Err(Error::Unauthorized { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_tool_calls_are_the_same_typed_errors_as_rest() {
    use hoop_api::types::mcp::{ChatSendTextArgs, TaskIdArgs, WorkTaskStartArgs};
    use hoop_api::types::{Card, LeaseResponse, Message, codes};

    let env = Env::start().await;
    let (u, mcp) = helper(&env).await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[u.id, ann.id]).await;
    let seen = env.post_as(room.id, ann.id, "hello").await;
    let send = |body: &str, expect| ChatSendTextArgs {
        conversation_id: room.id,
        body: body.into(),
        expect_latest_id: expect,
        ..Default::default()
    };
    let sent: Message = mcp
        .call(tools::CHAT_SEND_TEXT, &send("hi ann", Some(seen.id)))
        .await
        .unwrap();
    assert_eq!(sent.sender_id, u.id);
    match mcp
        .call::<_, Message>(tools::CHAT_SEND_TEXT, &send("**bold**", None))
        .await
    {
        Err(Error::Refused { code, .. }) => assert_eq!(code, codes::MARKDOWN_REFUSED),
        other => panic!("{other:?}"),
    }
    let newer = env.post_as(room.id, ann.id, "one more").await;
    match mcp
        .call::<_, Message>(tools::CHAT_SEND_TEXT, &send("blind", Some(sent.id)))
        .await
    {
        Err(Error::Gap {
            latest_id,
            unread_count,
            ..
        }) => {
            assert_eq!((latest_id, unread_count), (newer.id, 1))
        }
        other => panic!("{other:?}"),
    }
    // A card started over MCP has no lease until it is renewed.
    let card: Card = mcp
        .call(
            tools::WORK_TASK_START,
            &WorkTaskStartArgs {
                conversation_id: room.id,
                title: "via mcp".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(card.lease_expires_at, None);
    let lease: LeaseResponse = mcp
        .call(tools::WORK_TASK_LEASE, &TaskIdArgs { task_id: card.id })
        .await
        .unwrap();
    assert_eq!(lease.renew_after_sec, hoop_core::limits::RENEW_AFTER_SECS);
    match mcp
        .call::<_, LeaseResponse>(tools::WORK_TASK_LEASE, &TaskIdArgs { task_id: 999_999 })
        .await
    {
        Err(Error::NotFound { .. }) => {}
        other => panic!("{other:?}"),
    }
}

/// Production's two gates of `chat_send_text` (seed 002 §0.3): markdown,
/// then the gap check — only with `expect_latest_id` and without `force`,
/// over the newest 30; a latest id not among them counts everything as new.
/// `force` skips both. An image caption passes the markdown gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_send_text_gates_as_production_does() {
    use hoop_api::types::mcp::{ChatSendImageArgs, ChatSendTextArgs};
    use hoop_api::types::{Message, codes};
    use hoop_core::limits::GAP_CHECK_READ;

    let env = Env::start().await;
    let (u, mcp) = helper(&env).await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[u.id, ann.id]).await;
    let mut ids = Vec::new();
    for i in 0..GAP_CHECK_READ + 5 {
        ids.push(env.post_as(room.id, ann.id, &format!("m{i}")).await.id);
    }
    let newest = *ids.last().unwrap();
    let oldest_read = ids[ids.len() - GAP_CHECK_READ as usize];
    let args = |body: &str, expect: Option<i64>, force: bool| ChatSendTextArgs {
        conversation_id: room.id,
        body: body.into(),
        expect_latest_id: expect,
        force,
        ..Default::default()
    };
    // (body, expect_latest_id, force, Ok(()) or Err((code, unread_count)))
    type Want = Result<(), (&'static str, u32)>;
    // Refusals store nothing, so they come first and see the same room.
    let cases: Vec<(&str, Option<i64>, bool, Want)> = vec![
        ("**bold**", None, false, Err((codes::MARKDOWN_REFUSED, 0))),
        (
            "seen four",
            Some(ids[ids.len() - 5]),
            false,
            Err((codes::GAP, 4)),
        ),
        (
            "oldest read",
            Some(oldest_read),
            false,
            Err((codes::GAP, GAP_CHECK_READ - 1)),
        ),
        (
            "beyond the 30",
            Some(ids[0]),
            false,
            Err((codes::GAP, GAP_CHECK_READ)),
        ),
        (
            "unknown id",
            Some(newest + 1_000),
            false,
            Err((codes::GAP, GAP_CHECK_READ)),
        ),
        ("seen all", Some(newest), false, Ok(())),
        ("no expect: no gap check", None, false, Ok(())),
        ("forced over unread", Some(ids[0]), true, Ok(())),
        ("**bold** forced", Some(ids[0]), true, Ok(())),
    ];
    for (body, expect, force, want) in cases {
        // Reading the room now: what the agent has seen is `expect`.
        let got = mcp
            .call::<_, Message>(tools::CHAT_SEND_TEXT, &args(body, expect, force))
            .await;
        match (&want, got) {
            (Ok(()), Ok(m)) => assert_eq!(m.body, body),
            (Err((code, n)), Err(Error::Gap { unread_count, .. })) => {
                assert_eq!((*code, *n), (codes::GAP, unread_count), "{body}")
            }
            (Err((code, _)), Err(e)) => assert_eq!(e.code(), Some(*code), "{body}: {e:?}"),
            (w, g) => panic!("{body}: want {w:?}, got {g:?}"),
        }
    }
    let png = "iVBORw0KGgoAAAANSUhEUg==";
    let image = |caption: &str| ChatSendImageArgs {
        conversation_id: room.id,
        data_base64: png.into(),
        mime: "image/png".into(),
        caption: caption.into(),
    };
    let e = mcp
        .call::<_, Message>(tools::CHAT_SEND_IMAGE, &image("**chart**"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(codes::MARKDOWN_REFUSED));
    let m: Message = mcp
        .call(tools::CHAT_SEND_IMAGE, &image("the chart"))
        .await
        .unwrap();
    assert_eq!(m.body, "the chart");
}

/// Production's MCP layer answers a refusal as text, "HOOP 后端拒绝(<status>):
/// <words>" (seed 002 L51); the reference backend does the same, and the
/// client reads it into the typed errors a REST call gives: a window the
/// backend does not know is `NotFound` `window_not_found` (so the bridge
/// registers again, seed 002 L21), a refused claim leaves its orphan's
/// `task_id` (L21), `agent_busy` keeps its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_production_text_read_as_typed_errors() {
    use hoop_api::types::mcp::{WindowSyncArgs, WorkTaskStartArgs};
    use hoop_api::types::{Card, WindowSync, codes};

    let env = Env::start().await;
    let (u, mcp) = helper(&env).await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[u.id, ann.id]).await;
    // The wire: text only, in production's form.
    let raw = mcp
        .call_tool(
            tools::WINDOW_SYNC,
            serde_json::json!({"window_id": "w-unknown"}),
        )
        .await
        .unwrap();
    assert!(raw.is_error);
    assert_eq!(raw.structured, None, "no structured body");
    assert!(
        raw.text()
            .starts_with("HOOP 后端拒绝(404):window_not_found"),
        "{}",
        raw.text()
    );
    match mcp
        .call::<_, WindowSync>(
            tools::WINDOW_SYNC,
            &WindowSyncArgs {
                window_id: "w-unknown".into(),
            },
        )
        .await
    {
        Err(Error::NotFound { code, .. }) => assert_eq!(code, codes::WINDOW_NOT_FOUND),
        other => panic!("{other:?}"),
    }
    let start = |title: &str| WorkTaskStartArgs {
        conversation_id: room.id,
        title: title.into(),
        ..Default::default()
    };
    let first: Card = mcp
        .call(tools::WORK_TASK_START, &start("first"))
        .await
        .unwrap();
    match mcp
        .call::<_, Card>(tools::WORK_TASK_START, &start("second"))
        .await
    {
        Err(Error::Orphaned { task_id, code, .. }) => {
            assert_eq!(code, codes::AGENT_BUSY);
            assert_ne!(task_id, first.id, "the orphan is the new card");
            let cards = env
                .admin
                .cards(&hoop_api::admin::AdminCardQuery {
                    id: Some(task_id),
                    ..Default::default()
                })
                .await
                .unwrap();
            assert_eq!(cards[0].title, "second", "task_id names the queued orphan");
        }
        other => panic!("{other:?}"),
    }
}
