use hoop_api::admin::AdminCreateCard;
use hoop_api::routes::{self, fill_task};
use hoop_api::types::{AssignTask, Card, User};
use serde_json::json;

use crate::support::Srv;

async fn card(srv: &Srv, room: i64, title: &str, who: &User, parent: Option<i64>) -> Card {
    srv.admin
        .create_card(&AdminCreateCard {
            conversation_id: room,
            task: AssignTask {
                title: title.into(),
                assignee_id: Some(who.id),
                parent_id: parent,
                message_id: None,
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
    let zed = srv.user("zed", true).await;
    let room = srv.room("work", &[&bolt, &zed], true).await.id;
    let c = card(&srv, room, "job", &bolt, None).await;
    assert_eq!(c.status, hoop_api::types::CardStatus::Queued);

    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, c.id),
            json!({"claim": true}),
        )
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
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, c.id),
            json!({"line": "half"}),
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
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_LEASE, room, c.id),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["renew_after_sec"], 60);
    let until = r.body["lease_expires_at"].as_i64().unwrap();
    assert!((until - now - 300).abs() <= 1, "5 minutes");

    srv.run.clock().advance(120);
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, c.id),
            json!({"line": "more"}),
        )
        .await;
    let extended = r.body["lease_expires_at"].as_i64().unwrap();
    assert!(extended > until, "progress extends an existing lease");

    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_FINISH, room, c.id),
            json!({"status": "done"}),
        )
        .await;
    assert_eq!((r.status, r.body["updated"].as_bool()), (200, Some(true)));
    assert_eq!(r.body["task"]["status"], "done");
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_LEASE, room, c.id),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (404, "not_working"),
        "renew of a finished card"
    );
    let q = card(&srv, room, "queued", &bolt, None).await;
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_LEASE, room, q.id),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (404, "not_working"),
        "renew of a queued card"
    );
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_LEASE, room, 9999),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn one_top_level_working_card_per_agent_sub_cards_in_parallel() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let zed = srv.user("zed", true).await;
    let room = srv.room("work", &[&bolt, &zed], true).await.id;
    let a = card(&srv, room, "a", &bolt, None).await;
    let b = card(&srv, room, "b", &bolt, None).await;
    assert_eq!(
        srv.post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, a.id),
            json!({"claim": true})
        )
        .await
        .status,
        200
    );
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, b.id),
            json!({"claim": true}),
        )
        .await;
    assert_eq!((r.status, r.code()), (409, "agent_busy"));
    let s1 = card(&srv, room, "s1", &bolt, Some(a.id)).await;
    let s2 = card(&srv, room, "s2", &bolt, Some(a.id)).await;
    for s in [&s1, &s2] {
        let r = srv
            .post(
                Some(&t),
                &fill_task(routes::WORKROOM_TASK_PROGRESS, room, s.id),
                json!({"claim": true}),
            )
            .await;
        assert_eq!(r.status, 200, "sub-cards run in parallel: {}", r.body);
    }
    srv.post(
        Some(&t),
        &fill_task(routes::WORKROOM_TASK_FINISH, room, a.id),
        json!({"status": "done"}),
    )
    .await;
    assert_eq!(
        srv.post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, b.id),
            json!({"claim": true})
        )
        .await
        .status,
        200
    );
    // Another agent is not affected by bolt's working card.
    let tz = srv.login(&zed).await;
    let z = card(&srv, room, "z", &zed, None).await;
    assert_eq!(
        srv.post(
            Some(&tz),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, z.id),
            json!({"claim": true})
        )
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
    let zed = srv.user("zed", true).await;
    let room = srv.room("work", &[&bolt, &zed], true).await.id;
    let p = card(&srv, room, "parent", &bolt, None).await;
    let mut subs = Vec::new();
    for i in 0..8 {
        subs.push(card(&srv, room, &format!("s{i}"), &bolt, Some(p.id)).await);
    }
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASKS, room, ""),
            json!({"title": "ninth", "parent_id": p.id}),
        )
        .await;
    assert_eq!((r.status, r.code()), (429, "too_many_subcards"));
    let all = srv
        .get(Some(&t), &format!("{}?assignee=any", routes::TASKS))
        .await;
    assert_eq!(
        all.body.as_array().unwrap().len(),
        9,
        "the ninth was not stored"
    );
    // A finished sub-card frees a place.
    srv.post(
        Some(&t),
        &fill_task(routes::WORKROOM_TASK_FINISH, room, subs[0].id),
        json!({"status": "cancelled"}),
    )
    .await;
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASKS, room, ""),
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
    let zed = srv.user("zed", true).await;
    let room = srv.room("work", &[&bolt, &zed], true).await.id;
    let root = card(&srv, room, "root", &bolt, None).await;
    let child = card(&srv, room, "child", &bolt, Some(root.id)).await;
    let done = card(&srv, room, "done child", &bolt, Some(root.id)).await;
    let grand = card(&srv, room, "grandchild", &bolt, Some(child.id)).await;
    let other = card(&srv, room, "unrelated", &bolt, None).await;
    for c in [&root, &child, &done] {
        srv.post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, c.id),
            json!({"claim": true}),
        )
        .await;
    }
    srv.post(
        Some(&t),
        &fill_task(routes::WORKROOM_TASK_FINISH, room, done.id),
        json!({"status": "done"}),
    )
    .await;
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_FINISH, room, root.id),
            json!({"status": "failed", "error": "gave up"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["task"]["status"].as_str()),
        (200, Some("failed"))
    );
    assert_eq!(r.body["task"]["error"], "gave up");
    let status = |id: i64| {
        let srv = &srv;
        let t = t.clone();
        async move {
            srv.get(Some(&t), &fill_task(routes::WORKROOM_TASK, room, id))
                .await
                .body["status"]
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
async fn failed_requires_an_error_and_finishing_a_finished_card_updates_nothing() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let zed = srv.user("zed", true).await;
    let room = srv.room("work", &[&bolt, &zed], true).await.id;
    let c = card(&srv, room, "c", &bolt, None).await;
    srv.post(
        Some(&t),
        &fill_task(routes::WORKROOM_TASK_PROGRESS, room, c.id),
        json!({"claim": true}),
    )
    .await;
    let path = fill_task(routes::WORKROOM_TASK_FINISH, room, c.id);
    for body in [
        json!({"status": "failed"}),
        json!({"status": "failed", "error": "  "}),
    ] {
        let r = srv.post(Some(&t), &path, body).await;
        assert_eq!((r.status, r.code()), (400, "error_required"));
    }
    assert_eq!(
        srv.get(Some(&t), &fill_task(routes::WORKROOM_TASK, room, c.id))
            .await
            .body["status"],
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
    // Production (seed 002 L19 step 7): finishing a finished card is 200
    // `{"updated":false}`, never an error, and changes nothing.
    for body in [
        json!({"status": "cancelled"}),
        json!({"status": "done", "result": "again"}),
        json!({"status": "failed"}),
    ] {
        let r = srv.post(Some(&t), &path, body.clone()).await;
        assert_eq!(
            (r.status, &r.body),
            (200, &json!({"updated": false})),
            "{body}"
        );
    }
    let now = srv
        .get(Some(&t), &fill_task(routes::WORKROOM_TASK, room, c.id))
        .await
        .body;
    assert_eq!(
        (now["status"].as_str(), &now["result"]),
        (Some("done"), &json!(null))
    );
    // A claim of a card that is not queued is `not_claimable` (seed 002 L83).
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, c.id),
            json!({"claim": true}),
        )
        .await;
    assert_eq!((r.status, r.code()), (409, "not_claimable"));
    // Someone else cannot touch bolt's card.
    let tz = srv.login(&zed).await;
    let d = card(&srv, room, "d", &bolt, None).await;
    let r = srv
        .post(
            Some(&tz),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, room, d.id),
            json!({"claim": true}),
        )
        .await;
    assert_eq!(r.status, 403);
}

/// Production's assign (seed 002 L19 step 5): `POST /v1/workrooms/{cid}/tasks`,
/// the assignee an agent member of THAT room, `message_id` a message of
/// THAT room; sub-cards live in their parent's room.
#[tokio::test]
async fn assign_lives_under_the_workroom_and_checks_assignee_and_message() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let ada = srv.user("ada", false).await;
    let outsider = srv.user("zed", true).await;
    let t = srv.login(&bolt).await;
    let room = srv.room("work", &[&bolt, &ada], true).await.id;
    let other = srv.room("other", &[&bolt, &outsider], true).await.id;
    let here = srv.send_text(&t, room, "please do it").await.body["id"]
        .as_i64()
        .unwrap();
    let there = srv.send_text(&t, other, "elsewhere").await.body["id"]
        .as_i64()
        .unwrap();
    let assign = |cid: i64, body: serde_json::Value| {
        let (srv, t) = (&srv, t.clone());
        async move {
            srv.post(Some(&t), &fill_task(routes::WORKROOM_TASKS, cid, ""), body)
                .await
        }
    };
    // (room, body, status, code): each rule both ways.
    let table = [
        (
            room,
            json!({"title": "ok", "assignee_id": bolt.id, "message_id": here}),
            201,
            "",
        ),
        (room, json!({"title": "unassigned"}), 201, ""),
        (
            room,
            json!({"title": "to a human", "assignee_id": ada.id}),
            403,
            "forbidden",
        ),
        (
            room,
            json!({"title": "not in room", "assignee_id": outsider.id}),
            403,
            "forbidden",
        ),
        (
            other,
            json!({"title": "in its room", "assignee_id": outsider.id}),
            201,
            "",
        ),
        (
            room,
            json!({"title": "foreign message", "message_id": there}),
            400,
            "bad_request",
        ),
        (
            room,
            json!({"title": "no such message", "message_id": 999_999}),
            400,
            "bad_request",
        ),
        (
            other,
            json!({"title": "its message", "message_id": there}),
            201,
            "",
        ),
    ];
    for (cid, body, status, code) in table {
        let r = assign(cid, body.clone()).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        if status == 201 {
            assert_eq!(r.body["conversation_id"], cid, "{body}");
            assert_eq!(
                r.body["message_id"],
                body.get("message_id").cloned().unwrap_or(json!(null))
            );
        } else {
            assert_eq!(r.code(), code, "{body}");
        }
    }
    // A sub-card lives in its parent's room.
    let parent = assign(room, json!({"title": "parent", "assignee_id": bolt.id}))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let r = assign(other, json!({"title": "stray", "parent_id": parent})).await;
    assert_eq!((r.status, r.code()), (400, "bad_request"), "{}", r.body);
    let r = assign(room, json!({"title": "child", "parent_id": parent})).await;
    assert_eq!(
        (r.status, r.body["parent_id"].as_i64()),
        (201, Some(parent))
    );
    // A card is addressed under its own room only.
    let r = srv
        .get(Some(&t), &fill_task(routes::WORKROOM_TASK, other, parent))
        .await;
    assert_eq!(r.status, 404);
    let r = srv
        .post(
            Some(&t),
            &fill_task(routes::WORKROOM_TASK_PROGRESS, other, parent),
            json!({"claim": true}),
        )
        .await;
    assert_eq!(r.status, 404);
}

/// `work_task_start` is assign + claim as two transactions: a refused claim
/// leaves the queued card and the error carries its `task_id`.
#[tokio::test]
async fn work_task_start_leaves_an_orphan_whose_id_the_error_carries() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let room = srv.room("work", &[&bolt], true).await.id;
    let key = srv.mint_key(&bolt).await;
    let (err, first) = srv
        .tool(
            &key,
            "work_task_start",
            json!({"conversation_id": room, "title": "one"}),
        )
        .await;
    assert!(!err, "{first}");
    assert_eq!(first["status"], "working");
    let (err, second) = srv
        .tool(
            &key,
            "work_task_start",
            json!({"conversation_id": room, "title": "two"}),
        )
        .await;
    assert!(err, "{second}");
    assert_eq!(second["error"]["code"], "agent_busy");
    let orphan = second["error"]["task_id"]
        .as_i64()
        .expect("the orphan's id");
    let r = srv
        .get(Some(&t), &fill_task(routes::WORKROOM_TASK, room, orphan))
        .await;
    assert_eq!(
        (r.body["status"].as_str(), r.body["title"].as_str()),
        (Some("queued"), Some("two"))
    );
    // The orphan can be finished by its owner.
    let (err, fin) = srv
        .tool(
            &key,
            "work_task_finish",
            json!({"task_id": orphan, "status": "cancelled"}),
        )
        .await;
    assert!(!err, "{fin}");
    assert_eq!(fin["updated"], true);
}
