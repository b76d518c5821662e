//! Conversations, members, message paging, and production's REST send
//! rules: the text route (no markdown gate, no gap check), body cap,
//! failure reports, the fixed-minute rate limit, mention filtering, images,
//! the nested error body, and tolerant decoding of kinds.

use hoop_api::types::{Mention, MessageKind, SendMessage, codes};
use hoop_api::{Error, routes};
use hoop_core::limits::{MAX_BODY_CHARS, SEND_RATE_PER_MIN};

use crate::support::{BOUND, Env, text};

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

/// Production's REST text route runs no markdown gate (that is the MCP
/// tool's and `hoop say`'s); the text goes to `/v1/conversations/{id}/text`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rest_text_route_runs_no_markdown_gate() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    for body in ["this is **bold**", "```\ncode\n```", "# Heading"] {
        let m = a.client.send(room.id, &text(body)).await.unwrap();
        assert_eq!((m.body.as_str(), &m.kind), (body, &MessageKind::Text));
    }
    // The old path takes no POST any more.
    let r = reqwest::Client::new()
        .post(format!(
            "{}{}",
            env.base(),
            routes::fill(routes::CONVERSATION_MESSAGES, room.id)
        ))
        .bearer_auth(a.client.bearer().await.unwrap())
        .json(&text("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
}

/// Every error body is nested: `{"error":{"code","message"}}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_bodies_are_nested() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let jwt = a.client.bearer().await.unwrap();
    let http = reqwest::Client::new();
    let unknown_room = routes::fill(routes::CONVERSATION_MESSAGES, 999_999);
    let unknown_window = routes::fill(routes::WINDOW_SYNC, "nope");
    // (method, path, bearer, status, code)
    let cases: &[(&str, &str, bool, u16, &str)] = &[
        ("GET", routes::ME, false, 401, codes::UNAUTHORIZED),
        ("GET", "/v1/nowhere", true, 404, codes::NOT_FOUND),
        ("GET", &unknown_room, true, 404, codes::NOT_FOUND),
        ("POST", &unknown_window, true, 404, codes::WINDOW_NOT_FOUND),
    ];
    for (method, path, bearer, status, code) in cases {
        let mut rb = http.request(method.parse().unwrap(), format!("{}{path}", env.base()));
        if *bearer {
            rb = rb.bearer_auth(&jwt);
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.status().as_u16(), *status, "{path}");
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], *code, "{path}: {v}");
        assert!(v["error"]["message"].is_string(), "{path}: {v}");
    }
}

/// A body the client cannot parse is a typed error carrying its first 300
/// characters: never a panic, never a silent retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unparseable_error_body_is_a_typed_error_with_its_head() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let page = format!("<html>{}</html>", "x".repeat(1000));
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let page = page.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let resp = format!(
                    "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    let req = hoop_api::types::RedeemRequest {
        key: "k".into(),
        name: "bolt".into(),
        machine: None,
        conversation_id: None,
    };
    match hoop_api::rest::redeem(&base, &req).await {
        Err(Error::Unparseable { status, head }) => {
            assert_eq!(status, 502);
            assert_eq!(head.chars().count(), hoop_api::error::ERROR_BODY_KEEP_CHARS);
            assert!(head.starts_with("<html>xxx"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        served.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "not retried"
    );
}

/// Voice messages exist in production and other kinds may come: a page with
/// them is still read, each message kept with its kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_with_unknown_kinds_is_read_whole() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await;
    let kinds = [
        MessageKind::Text,
        MessageKind::Voice,
        MessageKind::Unknown("sticker".into()),
        MessageKind::Text,
    ];
    let mut ids = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        let m = env
            .admin
            .post_as(
                room.id,
                &hoop_api::admin::PostAs {
                    sender_id: ann.id,
                    message: text(&format!("m{i}")),
                    kind: kind.clone(),
                },
            )
            .await
            .unwrap();
        ids.push(m.id);
    }
    let page = a.client.messages(room.id, 10, None).await.unwrap();
    let got: Vec<(i64, MessageKind)> = page
        .messages
        .iter()
        .map(|m| (m.id, m.kind.clone()))
        .collect();
    let want: Vec<(i64, MessageKind)> = ids.iter().copied().zip(kinds).rev().collect();
    assert_eq!(got, want);
}

/// A failure report always gets out: no content gate on the REST route,
/// and a rate limit is outwaited to the next calendar minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_report_gets_out_through_markdown_and_the_rate_limit() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    env.start_of_a_minute();
    for i in 0..SEND_RATE_PER_MIN {
        a.client
            .send(room.id, &text(&format!("n{i}")))
            .await
            .unwrap();
    }
    assert!(matches!(
        a.client.send(room.id, &text("one too many")).await,
        Err(Error::RateLimited { .. })
    ));
    let report = text("this round failed\n# trace\n**boom**");
    let client = a.client;
    let sending = tokio::spawn(async move { client.send_failure_report(room.id, &report).await });
    // The report is waiting on the limit; the next minute lets it out.
    env.backend.clock().advance(60);
    let m = tokio::time::timeout(BOUND, sending)
        .await
        .expect("bounded")
        .unwrap()
        .expect("the failure report got out");
    assert!(hoop_core::gates::is_failure_report(&m.body), "{}", m.body);
    assert!(m.body.ends_with("**boom**"));
    assert_eq!(m.kind, MessageKind::Text);
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

/// 60 text messages per user per calendar minute (fixed buckets, not a
/// sliding window); images do not count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_text_messages_per_calendar_minute_then_rate_limited() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("ops", &[a.user.id]).await;
    env.start_of_a_minute();
    for i in 0..SEND_RATE_PER_MIN {
        a.client
            .send(room.id, &text(&format!("n{i}")))
            .await
            .unwrap();
    }
    // An image is not a text message: it does not count and is not refused.
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    a.client
        .send_image(
            room.id,
            &hoop_api::rest::image_message(png, "image/png", ""),
        )
        .await
        .unwrap();
    let before = env.backend.clock().now();
    let retry = match a.client.send(room.id, &text("one too many")).await {
        Err(Error::RateLimited { retry_after, .. }) => retry_after.expect("a retry hint").as_secs(),
        other => panic!("{other:?}"),
    };
    let after = env.backend.clock().now();
    assert!((1..=60).contains(&retry), "{retry}");
    // The bucket ends at the minute boundary the server saw, a moment between
    // the two reads (a second may tick over in between): the wait is to it.
    assert!(
        (before..=after).any(|now| retry as i64 == 60 - now.rem_euclid(60)),
        "retry {retry} is not the rest of a minute seen in [{before}, {after}]"
    );
    env.backend.clock().advance(retry as i64);
    a.client.send(room.id, &text("a new minute")).await.unwrap();
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
}
