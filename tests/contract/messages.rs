//! Conversations, members, message paging, and the send rules: markdown
//! gate, body cap, gap check (and force), failure reports, rate limit,
//! mention filtering, images.

use hoop_api::Error;
use hoop_api::types::{Mention, MessageKind, SendMessage, codes};
use hoop_core::limits::{MAX_BODY_CHARS, SEND_RATE_PER_MIN};

use crate::support::{Env, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_and_members() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let b = env.agent("nut").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, b.user.id, ann.id]).await;
    env.room("elsewhere", &[ann.id]).await;
    let convs = a.client.conversations().await.unwrap();
    assert_eq!(convs.iter().map(|c| c.id).collect::<Vec<_>>(), [room.id]);
    assert_eq!(convs[0].ai_member_count, 2);
    let mut names: Vec<_> = a
        .client
        .members(room.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.username, m.is_agent))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ("ann".to_string(), false),
            ("bolt".to_string(), true),
            ("nut".to_string(), true)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_member_is_refused() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("private", &[ann.id]).await;
    let e = a.client.messages(room.id, 5, None).await.unwrap_err();
    assert!(
        matches!(e.code(), Some(c) if c == codes::NOT_MEMBER || c == codes::FORBIDDEN || c == codes::NOT_FOUND),
        "{e:?}"
    );
    let e = a.client.send(room.id, &text("hi")).await.unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_newest_first_and_page_with_before() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(env.post_as(room.id, ann.id, &format!("m{i}")).await.id);
    }
    let p1 = a.client.messages(room.id, 2, None).await.unwrap();
    assert_eq!(
        p1.messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        [ids[4], ids[3]]
    );
    assert!(p1.has_more);
    let p2 = a.client.messages(room.id, 2, Some(ids[3])).await.unwrap();
    assert_eq!(
        p2.messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        [ids[2], ids[1]]
    );
    let p3 = a.client.messages(room.id, 2, Some(ids[1])).await.unwrap();
    assert_eq!(
        p3.messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        [ids[0]]
    );
    assert!(!p3.has_more);
    assert_eq!(p3.messages[0].body, "m0");
    assert_eq!(p3.messages[0].sender_username, "ann");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_markdown_gate_refuses_and_a_failure_report_passes() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    for body in ["this is **bold**", "```\ncode\n```", "# Heading"] {
        match a.client.send(room.id, &text(body)).await {
            Err(Error::Refused { code, .. }) => assert_eq!(code, codes::MARKDOWN_REFUSED),
            other => panic!("{body:?}: {other:?}"),
        }
    }
    // `#123` at a line start is not a heading.
    a.client
        .send(room.id, &text("#123 is fixed"))
        .await
        .unwrap();
    let failure = SendMessage {
        body: "⚠️ this round failed\n# trace\n**boom**".into(),
        kind: MessageKind::Failure,
        ..Default::default()
    };
    let m = a.client.send(room.id, &failure).await.unwrap();
    assert_eq!(m.kind, MessageKind::Failure);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_body_cap_is_an_error_never_a_truncation() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    let exact = "é".repeat(MAX_BODY_CHARS);
    let m = a.client.send(room.id, &text(&exact)).await.unwrap();
    assert_eq!(m.body.chars().count(), MAX_BODY_CHARS);
    let over = "é".repeat(MAX_BODY_CHARS + 1);
    match a.client.send(room.id, &text(&over)).await {
        Err(Error::Refused { code, .. }) => assert_eq!(code, codes::BODY_TOO_LONG),
        other => panic!("{other:?}"),
    }
    let newest = env.newest(&a, room.id, 1).await;
    assert_eq!(
        newest[0].id, m.id,
        "nothing was stored for the refused body"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gap_check_returns_the_unread_and_force_or_failure_pass() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await;
    let seen = env.post_as(room.id, ann.id, "first").await;
    let mine = a
        .client
        .send(
            room.id,
            &SendMessage {
                expect_latest_id: Some(seen.id),
                ..text("answer")
            },
        )
        .await
        .unwrap();
    // My own message does not count as unread.
    a.client
        .send(
            room.id,
            &SendMessage {
                expect_latest_id: Some(seen.id),
                ..text("and more")
            },
        )
        .await
        .unwrap();
    let n1 = env.post_as(room.id, ann.id, "new one").await;
    let n2 = env.post_as(room.id, ann.id, "new two").await;
    let stale = SendMessage {
        expect_latest_id: Some(mine.id),
        ..text("blind")
    };
    match a.client.send(room.id, &stale).await {
        Err(Error::Gap { latest_id, unread }) => {
            assert_eq!(latest_id, n2.id);
            assert_eq!(
                unread.iter().map(|m| m.id).collect::<Vec<_>>(),
                [n2.id, n1.id],
                "newest first"
            );
        }
        other => panic!("{other:?}"),
    }
    a.client
        .send(
            room.id,
            &SendMessage {
                force: true,
                ..stale.clone()
            },
        )
        .await
        .unwrap();
    a.client
        .send(
            room.id,
            &SendMessage {
                kind: MessageKind::Failure,
                body: "⚠️ failed".into(),
                ..stale
            },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_messages_a_minute_then_rate_limited_with_retry_after() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    for i in 0..SEND_RATE_PER_MIN {
        a.client
            .send(room.id, &text(&format!("n{i}")))
            .await
            .unwrap();
    }
    match a.client.send(room.id, &text("one too many")).await {
        Err(Error::RateLimited { retry_after }) => {
            let s = retry_after.expect("a retry hint").as_secs();
            assert!((1..=60).contains(&s), "{s}");
        }
        other => panic!("{other:?}"),
    }
    env.backend.clock().advance(61);
    a.client
        .send(room.id, &text("the window moved"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_of_non_members_are_dropped() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let stranger = env.user("stranger", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await;
    let m = a
        .client
        .send(
            room.id,
            &SendMessage {
                mentions: vec![
                    Mention::User(ann.id),
                    Mention::User(stranger.id),
                    Mention::EVERYONE,
                ],
                ..text("hello @ann")
            },
        )
        .await
        .unwrap();
    assert_eq!(m.mentions, [Mention::User(ann.id), Mention::EVERYONE]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_is_a_message_of_kind_image() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let img = hoop_api::rest::image_message(png, "image/png", "the chart");
    let m = a.client.send_image(room.id, &img).await.unwrap();
    assert_eq!((m.kind, m.body.as_str()), (MessageKind::Image, "the chart"));
    let bad = hoop_api::rest::image_message(png, "image/png", "**bold caption**");
    assert!(matches!(
        a.client.send_image(room.id, &bad).await,
        Err(Error::Refused { .. })
    ));
}
