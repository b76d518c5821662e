use hoop_api::admin::AdminCreateCard;
use hoop_api::routes::{self, fill};
use hoop_api::types::{Card, CreateCard, User};
use serde_json::json;

use crate::support::Srv;

async fn card(srv: &Srv, title: &str, who: &User, parent: Option<i64>) -> Card {
    srv.admin
        .create_card(&AdminCreateCard {
            card: CreateCard {
                title: title.into(),
                assignee_id: Some(who.id),
                parent_id: parent,
                conversation_id: None,
            },
            creator_id: None,
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn claim_opens_no_lease_progress_only_extends_renew_opens_for_5_minutes() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let c = card(&srv, "job", &bolt, None).await;
    assert_eq!(c.status, hoop_api::types::CardStatus::Queued);

    let r = srv
        .post(Some(&t), &fill(routes::CARD_CLAIM, c.id), json!({}))
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (200, Some("working"))
    );
    assert_eq!(
        r.body["lease_expires_at"],
        json!(null),
        "claim opens no lease"
    );

    let r = srv
        .post(
            Some(&t),
            &fill(routes::CARD_PROGRESS, c.id),
            json!({"note": "half"}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["lease_expires_at"],
        json!(null),
        "progress never opens one"
    );

    let now = srv.run.clock().now();
    let r = srv
        .post(Some(&t), &fill(routes::CARD_LEASE, c.id), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["renew_after_sec"], 60);
    let until = r.body["lease_expires_at"].as_i64().unwrap();
    assert!((until - now - 300).abs() <= 1, "5 minutes");

    srv.run.clock().advance(120);
    let r = srv
        .post(
            Some(&t),
            &fill(routes::CARD_PROGRESS, c.id),
            json!({"note": "more"}),
        )
        .await;
    let extended = r.body["lease_expires_at"].as_i64().unwrap();
    assert!(extended > until, "progress extends an existing lease");

    let r = srv
        .post(
            Some(&t),
            &fill(routes::CARD_FINISH, c.id),
            json!({"status": "done"}),
        )
        .await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("done")));
    let r = srv
        .post(Some(&t), &fill(routes::CARD_LEASE, c.id), json!({}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (404, "not_working"),
        "renew of a finished card"
    );
    let q = card(&srv, "queued", &bolt, None).await;
    let r = srv
        .post(Some(&t), &fill(routes::CARD_LEASE, q.id), json!({}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (404, "not_working"),
        "renew of a queued card"
    );
    let r = srv
        .post(Some(&t), &fill(routes::CARD_LEASE, 9999), json!({}))
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn one_top_level_working_card_per_agent_sub_cards_in_parallel() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let a = card(&srv, "a", &bolt, None).await;
    let b = card(&srv, "b", &bolt, None).await;
    assert_eq!(
        srv.post(Some(&t), &fill(routes::CARD_CLAIM, a.id), json!({}))
            .await
            .status,
        200
    );
    let r = srv
        .post(Some(&t), &fill(routes::CARD_CLAIM, b.id), json!({}))
        .await;
    assert_eq!((r.status, r.code()), (409, "agent_busy"));
    let s1 = card(&srv, "s1", &bolt, Some(a.id)).await;
    let s2 = card(&srv, "s2", &bolt, Some(a.id)).await;
    for s in [&s1, &s2] {
        let r = srv
            .post(Some(&t), &fill(routes::CARD_CLAIM, s.id), json!({}))
            .await;
        assert_eq!(r.status, 200, "sub-cards run in parallel: {}", r.body);
    }
    srv.post(
        Some(&t),
        &fill(routes::CARD_FINISH, a.id),
        json!({"status": "done"}),
    )
    .await;
    assert_eq!(
        srv.post(Some(&t), &fill(routes::CARD_CLAIM, b.id), json!({}))
            .await
            .status,
        200
    );
    // Another agent is not affected by bolt's working card.
    let zed = srv.user("zed", true).await;
    let tz = srv.login(&zed).await;
    let z = card(&srv, "z", &zed, None).await;
    assert_eq!(
        srv.post(Some(&tz), &fill(routes::CARD_CLAIM, z.id), json!({}))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn at_most_8_live_sub_cards_and_nothing_stored_beyond() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let p = card(&srv, "parent", &bolt, None).await;
    let mut subs = Vec::new();
    for i in 0..8 {
        subs.push(card(&srv, &format!("s{i}"), &bolt, Some(p.id)).await);
    }
    let r = srv
        .post(
            Some(&t),
            routes::CARDS,
            json!({"title": "ninth", "parent_id": p.id}),
        )
        .await;
    assert_eq!((r.status, r.code()), (429, "too_many_subcards"));
    let all = srv
        .get(Some(&t), &format!("{}?assignee=any", routes::CARDS))
        .await;
    assert_eq!(
        all.body.as_array().unwrap().len(),
        9,
        "the ninth was not stored"
    );
    // A finished sub-card frees a place.
    srv.post(
        Some(&t),
        &fill(routes::CARD_FINISH, subs[0].id),
        json!({"status": "cancelled"}),
    )
    .await;
    let r = srv
        .post(
            Some(&t),
            routes::CARDS,
            json!({"title": "ninth", "parent_id": p.id}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn finishing_cancels_every_live_descendant_at_once() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let root = card(&srv, "root", &bolt, None).await;
    let child = card(&srv, "child", &bolt, Some(root.id)).await;
    let done = card(&srv, "done child", &bolt, Some(root.id)).await;
    let grand = card(&srv, "grandchild", &bolt, Some(child.id)).await;
    let other = card(&srv, "unrelated", &bolt, None).await;
    for c in [&root, &child, &done] {
        srv.post(Some(&t), &fill(routes::CARD_CLAIM, c.id), json!({}))
            .await;
    }
    srv.post(
        Some(&t),
        &fill(routes::CARD_FINISH, done.id),
        json!({"status": "done"}),
    )
    .await;
    let r = srv
        .post(
            Some(&t),
            &fill(routes::CARD_FINISH, root.id),
            json!({"status": "failed", "error": "gave up"}),
        )
        .await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("failed")));
    assert_eq!(r.body["error"], "gave up");
    let status = |id: i64| {
        let srv = &srv;
        let t = t.clone();
        async move {
            srv.get(Some(&t), &fill(routes::CARD, id)).await.body["status"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    assert_eq!(status(child.id).await, "cancelled");
    assert_eq!(status(grand.id).await, "cancelled");
    assert_eq!(status(done.id).await, "done", "finished ones stay");
    assert_eq!(status(other.id).await, "queued", "unrelated ones stay");
}

#[tokio::test]
async fn failed_requires_an_error_and_finished_cards_stay_finished() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let c = card(&srv, "c", &bolt, None).await;
    srv.post(Some(&t), &fill(routes::CARD_CLAIM, c.id), json!({}))
        .await;
    let path = fill(routes::CARD_FINISH, c.id);
    for body in [
        json!({"status": "failed"}),
        json!({"status": "failed", "error": "  "}),
    ] {
        let r = srv.post(Some(&t), &path, body).await;
        assert_eq!((r.status, r.code()), (400, "error_required"));
    }
    assert_eq!(
        srv.get(Some(&t), &fill(routes::CARD, c.id)).await.body["status"],
        "working"
    );
    let r = srv
        .post(Some(&t), &path, json!({"status": "working"}))
        .await;
    assert_eq!((r.status, r.code()), (409, "invalid_transition"));
    assert_eq!(
        srv.post(Some(&t), &path, json!({"status": "done"}))
            .await
            .status,
        200
    );
    let r = srv
        .post(Some(&t), &path, json!({"status": "cancelled"}))
        .await;
    assert_eq!((r.status, r.code()), (409, "invalid_transition"));
    // Someone else cannot touch bolt's card.
    let zed = srv.user("zed", true).await;
    let tz = srv.login(&zed).await;
    let d = card(&srv, "d", &bolt, None).await;
    let r = srv
        .post(Some(&tz), &fill(routes::CARD_CLAIM, d.id), json!({}))
        .await;
    assert_eq!(r.status, 403);
}
