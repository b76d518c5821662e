use hoop_api::routes::{self, fill};
use serde_json::json;

use crate::support::Srv;

#[tokio::test]
async fn users_carry_is_agent_and_conversations_their_members_and_workroom_flag() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let zed = srv.user("zed", true).await;
    let room = srv.room("ops", &[&ann, &bolt, &zed], true).await;
    let chat = srv.room("chat", &[&ann, &bolt], false).await;
    let t = srv.login(&bolt).await;

    let r = srv.get(Some(&t), routes::CONVERSATIONS).await;
    assert_eq!(r.status, 200);
    let convs = r.body.as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert_eq!(convs[0]["id"], room.id);
    assert_eq!(convs[0]["is_workroom"], true);
    assert_eq!(convs[0]["ai_member_count"], 2);
    assert_eq!(convs[1]["is_workroom"], false);
    assert_eq!(convs[1]["ai_member_count"], 1);

    let r = srv
        .get(Some(&t), &fill(routes::CONVERSATION_MEMBERS, chat.id))
        .await;
    let m = r.body.as_array().unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(
        (m[0]["username"].as_str(), m[0]["is_agent"].as_bool()),
        (Some("ann"), Some(false))
    );
    assert_eq!(
        (m[1]["username"].as_str(), m[1]["is_agent"].as_bool()),
        (Some("bolt"), Some(true))
    );

    // zed is not in `chat`: 403 not_member; an unknown id: 404.
    let tz = srv.login(&zed).await;
    let r = srv
        .get(Some(&tz), &fill(routes::CONVERSATION_MESSAGES, chat.id))
        .await;
    assert_eq!((r.status, r.code()), (403, "not_member"));
    let r = srv
        .get(Some(&tz), &fill(routes::CONVERSATION_MESSAGES, 9999))
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
}

#[tokio::test]
async fn messages_are_newest_first_and_page_back_with_before() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("r", &[&ann], false).await;
    let t = srv.login(&ann).await;
    let mut ids = Vec::new();
    for i in 0..25 {
        let r = srv.send_text(&t, room.id, &format!("m{i}")).await;
        assert_eq!(r.status, 201, "{}", r.body);
        ids.push(r.body["id"].as_i64().unwrap());
    }
    assert!(ids.windows(2).all(|w| w[1] > w[0]), "ids grow with time");
    let path = fill(routes::CONVERSATION_MESSAGES, room.id);
    let p1 = srv.get(Some(&t), &format!("{path}?limit=10")).await;
    let got: Vec<i64> = p1.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    let want: Vec<i64> = ids.iter().rev().take(10).copied().collect();
    assert_eq!(got, want);
    assert_eq!(p1.body["has_more"], true);
    let oldest = *got.last().unwrap();
    let p2 = srv
        .get(Some(&t), &format!("{path}?limit=10&before={oldest}"))
        .await;
    let got2: Vec<i64> = p2.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        got2,
        ids.iter()
            .rev()
            .skip(10)
            .take(10)
            .copied()
            .collect::<Vec<_>>()
    );
    let last = *got2.last().unwrap();
    let p3 = srv
        .get(Some(&t), &format!("{path}?limit=10&before={last}"))
        .await;
    assert_eq!(p3.body["messages"].as_array().unwrap().len(), 5);
    assert_eq!(p3.body["has_more"], false);
}

/// Production's REST text route runs no markdown gate (the MCP tool and
/// `hoop say` do); a `kind` in the body is not the route's and is ignored.
#[tokio::test]
async fn the_text_route_runs_no_markdown_gate_and_takes_no_kind() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", true).await;
    let room = srv.room("r", &[&ann], false).await;
    let t = srv.login(&ann).await;
    let bodies = [
        "this is **bold**",
        "look\n```\ncode\n```",
        "# Title\ntext",
        "ok\n## sub",
    ];
    for body in bodies {
        let r = srv.send_text(&t, room.id, body).await;
        assert_eq!(
            (r.status, r.body["body"].as_str()),
            (201, Some(body)),
            "{body:?}"
        );
    }
    let path = fill(routes::CONVERSATION_TEXT, room.id);
    for kind in ["failure", "image", "status"] {
        let r = srv
            .post(Some(&t), &path, json!({"body": "x", "kind": kind}))
            .await;
        assert_eq!(
            (r.status, r.body["kind"].as_str()),
            (201, Some("text")),
            "{kind}"
        );
    }
    // The messages route takes no POST.
    let r = srv
        .post(
            Some(&t),
            &fill(routes::CONVERSATION_MESSAGES, room.id),
            json!({"body": "x"}),
        )
        .await;
    assert_eq!(r.status, 405);
}

#[tokio::test]
async fn a_body_over_65536_characters_is_an_error_never_truncated() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("r", &[&ann], false).await;
    let t = srv.login(&ann).await;
    let max = "é".repeat(65_536);
    let r = srv.send_text(&t, room.id, &max).await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["body"].as_str().unwrap().chars().count(), 65_536);
    let over = "é".repeat(65_537);
    let r = srv.send_text(&t, room.id, &over).await;
    assert_eq!((r.status, r.code()), (400, "body_too_long"));
    let page = srv
        .get(Some(&t), &fill(routes::CONVERSATION_MESSAGES, room.id))
        .await;
    let msgs = page.body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1, "nothing truncated was stored");
}

/// The gap check is the MCP tool's (see `mcp.rs`); the REST text route
/// ignores `expect_latest_id` and `force`, as production's does.
#[tokio::test]
async fn the_text_route_runs_no_gap_check() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let room = srv.room("r", &[&ann, &bolt], false).await;
    let ta = srv.login(&ann).await;
    let tb = srv.login(&bolt).await;
    let seen = srv.send_text(&ta, room.id, "first").await.body["id"]
        .as_i64()
        .unwrap();
    srv.send_text(&ta, room.id, "unread").await;
    let r = srv
        .post(
            Some(&tb),
            &fill(routes::CONVERSATION_TEXT, room.id),
            json!({"body": "reply", "expect_latest_id": seen}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn sixty_messages_a_minute_then_429_rate_limited() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", false).await;
    let room = srv.room("r", &[&ann, &bolt], false).await;
    let t = srv.login(&ann).await;
    // Fixed calendar-minute buckets: start a minute so 60 sends fit one.
    let now = srv.run.clock().now();
    srv.run.clock().advance(60 - now.rem_euclid(60));
    for i in 0..60 {
        assert_eq!(
            srv.send_text(&t, room.id, &format!("m{i}")).await.status,
            201,
            "{i}"
        );
    }
    // Only text counts: an image still goes.
    let r = srv
        .post(
            Some(&t),
            &fill(routes::CONVERSATION_IMAGES, room.id),
            json!({"data_base64": "iVBORw0KGgo=", "mime": "image/png"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let before = srv.run.clock().now();
    let r = srv.send_text(&t, room.id, "one too many").await;
    let after = srv.run.clock().now();
    assert_eq!((r.status, r.code()), (429, "rate_limited"));
    let retry = r.body["error"]["retry_after_sec"].as_u64().unwrap();
    // The wait is to the end of the calendar minute the server saw, a moment
    // between the two reads (a second may tick over in between).
    assert!(
        (before..=after).any(|now| retry as i64 == 60 - now.rem_euclid(60)),
        "retry {retry} is not the rest of a minute seen in [{before}, {after}]"
    );
    assert_eq!(
        r.headers["retry-after"].to_str().unwrap(),
        retry.to_string()
    );
    // Per user: bolt is not limited.
    let tb = srv.login(&bolt).await;
    assert_eq!(srv.send_text(&tb, room.id, "hi").await.status, 201);
    srv.run.clock().advance(retry as i64);
    assert_eq!(srv.send_text(&t, room.id, "later").await.status, 201);
}

#[tokio::test]
async fn mentions_of_non_members_are_dropped_silently() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let bolt = srv.user("bolt", true).await;
    let out = srv.user("out", true).await;
    let room = srv.room("r", &[&ann, &bolt], false).await;
    let t = srv.login(&ann).await;
    let r = srv
        .post(
            Some(&t),
            &fill(routes::CONVERSATION_TEXT, room.id),
            json!({"body": "hey", "mentions": [bolt.id, out.id, "everyone", 424242, {"x": 1}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["mentions"], json!([bolt.id, "everyone"]));
}

#[tokio::test]
async fn images_are_messages_of_kind_image() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let room = srv.room("r", &[&ann], false).await;
    let t = srv.login(&ann).await;
    let path = fill(routes::CONVERSATION_IMAGES, room.id);
    let r = srv
        .post(
            Some(&t),
            &path,
            json!({"data_base64": "iVBORw0KGgo=", "mime": "image/png", "caption": "the chart"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        (r.body["kind"].as_str(), r.body["body"].as_str()),
        (Some("image"), Some("the chart"))
    );
    for body in [
        json!({"data_base64": "iVBORw0KGgo=", "mime": "text/plain"}),
        json!({"data_base64": "%%%", "mime": "image/png"}),
    ] {
        let r = srv.post(Some(&t), &path, body.clone()).await;
        assert_eq!(r.status, 400, "{body}");
    }
}
