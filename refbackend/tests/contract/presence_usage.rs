use hoop_api::admin::AdminCreateCard;
use hoop_api::routes;
use hoop_api::types::AssignTask;
use serde_json::json;

use crate::support::Srv;

#[tokio::test]
async fn heartbeat_answers_next_beat_sec_and_presence_is_gone_after_3_minutes() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let present = |r: &crate::support::Resp| {
        r.body
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["user_id"] == bolt.id)
            .map(|p| p["present"].as_bool().unwrap())
            .unwrap()
    };
    assert!(
        !present(&srv.get(Some(&t), routes::PRESENCE).await),
        "never beat"
    );
    let r = srv.post(Some(&t), routes::HEARTBEAT, json!({})).await;
    assert_eq!(
        (r.status, r.body["next_beat_sec"].as_u64()),
        (200, Some(60))
    );
    assert!(present(&srv.get(Some(&t), routes::PRESENCE).await));
    srv.run.clock().advance(179);
    assert!(present(&srv.get(Some(&t), routes::PRESENCE).await));
    srv.run.clock().advance(1);
    assert!(
        !present(&srv.get(Some(&t), routes::PRESENCE).await),
        "3 minutes without a beat"
    );
}

/// POST usage as `token`, requiring 200; answers the stored totals.
async fn report(srv: &Srv, token: &str, body: serde_json::Value) -> serde_json::Value {
    let r = srv.post(Some(token), routes::USAGE, body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

fn totals(v: &serde_json::Value) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    (
        v["tokens_in"].clone(),
        v["tokens_cached_in"].clone(),
        v["tokens_out"].clone(),
    )
}

#[tokio::test]
async fn usage_is_an_upsert_per_agent_where_null_and_negative_never_overwrite() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let steps = [
        (
            json!({"tokens_in": 100, "tokens_cached_in": null, "tokens_out": -5}),
            (json!(100), json!(null), json!(null)),
        ),
        (
            json!({"tokens_in": null, "tokens_cached_in": 7, "tokens_out": 3}),
            (json!(100), json!(7), json!(3)),
        ),
        (
            json!({"tokens_in": 50, "tokens_cached_in": -1, "tokens_out": null}),
            (json!(50), json!(7), json!(3)),
        ),
        (
            json!({"tokens_in": 0, "tokens_cached_in": 9, "tokens_out": 0}),
            (json!(0), json!(9), json!(0)),
        ),
        // A report naming a card is still the account's totals.
        (
            json!({"card_id": 999, "tokens_in": 60, "tokens_cached_in": null, "tokens_out": null}),
            (json!(60), json!(9), json!(0)),
        ),
    ];
    for (i, (body, want)) in steps.into_iter().enumerate() {
        let got = report(&srv, &t, body.clone()).await;
        assert_eq!(totals(&got), want, "step {i}: {body}");
    }
    // Each agent has its own row.
    let zed = srv.user("zed", true).await;
    let tz = srv.login(&zed).await;
    let got = report(
        &srv,
        &tz,
        json!({"tokens_in": 1, "tokens_cached_in": null, "tokens_out": null}),
    )
    .await;
    assert_eq!(totals(&got), (json!(1), json!(null), json!(null)));
}

#[tokio::test]
async fn a_card_costs_its_end_snapshot_minus_its_start_snapshot() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let room = srv.room("r", &[&bolt], true).await.id;
    let new_card = |title: &'static str| {
        let admin = srv.admin.clone();
        let bolt = bolt.id;
        async move {
            admin
                .create_card(&AdminCreateCard {
                    conversation_id: room,
                    task: AssignTask {
                        title: title.into(),
                        assignee_id: Some(bolt),
                        ..AssignTask::default()
                    },
                    creator_id: None,
                })
                .await
                .unwrap()
        }
    };
    let cost = |id: i64| {
        let path = routes::fill_task(routes::WORKROOM_TASK, room, id);
        let srv = &srv;
        let t = t.clone();
        async move {
            let r = srv.get(Some(&t), &path).await;
            assert_eq!(r.status, 200, "{}", r.body);
            totals(&r.body)
        }
    };
    let nulls = (json!(null), json!(null), json!(null));

    // Claimed before the account ever reported: no start, so no cost.
    let early = new_card("early").await;
    let claim = |id: i64| routes::fill_task(routes::WORKROOM_TASK_PROGRESS, room, id);
    let finish = |id: i64| routes::fill_task(routes::WORKROOM_TASK_FINISH, room, id);
    assert_eq!(
        srv.post(Some(&t), &claim(early.id), json!({"claim": true}))
            .await
            .status,
        200
    );
    report(
        &srv,
        &t,
        json!({"tokens_in": 1000, "tokens_cached_in": null, "tokens_out": 200}),
    )
    .await;
    assert_eq!(cost(early.id).await, nulls, "no start snapshot");
    let done = json!({"status": "done"});
    assert_eq!(
        srv.post(Some(&t), &finish(early.id), done.clone())
            .await
            .status,
        200
    );
    assert_eq!(cost(early.id).await, nulls);

    // Queued: no cost. Claimed: the start snapshot; working: now − start.
    let card = new_card("measured").await;
    assert_eq!(cost(card.id).await, nulls, "queued");
    assert_eq!(
        srv.post(Some(&t), &claim(card.id), json!({"claim": true}))
            .await
            .status,
        200
    );
    assert_eq!(
        cost(card.id).await,
        (json!(0), json!(null), json!(0)),
        "a field unknown at the start stays unknown"
    );
    report(
        &srv,
        &t,
        json!({"tokens_in": 1300, "tokens_cached_in": 40, "tokens_out": 260}),
    )
    .await;
    assert_eq!(cost(card.id).await, (json!(300), json!(null), json!(60)));
    // Finished: the end snapshot is kept; later reports do not move it.
    assert_eq!(
        srv.post(Some(&t), &finish(card.id), done.clone())
            .await
            .status,
        200
    );
    report(
        &srv,
        &t,
        json!({"tokens_in": 5000, "tokens_cached_in": 90, "tokens_out": 900}),
    )
    .await;
    assert_eq!(cost(card.id).await, (json!(300), json!(null), json!(60)));

    // Totals that went back (a reset meter): no honest number.
    let back = new_card("back").await;
    assert_eq!(
        srv.post(Some(&t), &claim(back.id), json!({"claim": true}))
            .await
            .status,
        200
    );
    report(
        &srv,
        &t,
        json!({"tokens_in": 10, "tokens_cached_in": 95, "tokens_out": 900}),
    )
    .await;
    assert_eq!(cost(back.id).await, (json!(null), json!(5), json!(0)));
    // Cancelled while queued: it never started.
    let never = new_card("never").await;
    let cancel = json!({"status": "cancelled"});
    assert_eq!(
        srv.post(Some(&t), &finish(never.id), cancel).await.status,
        200
    );
    assert_eq!(cost(never.id).await, nulls);
}
