use hoop_api::admin::AdminCreateCard;
use hoop_api::routes;
use hoop_api::types::CreateCard;
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

#[tokio::test]
async fn usage_keeps_null_as_null_and_negatives_as_not_reported() {
    let srv = Srv::start().await;
    let bolt = srv.user("bolt", true).await;
    let t = srv.login(&bolt).await;
    let card = srv
        .admin
        .create_card(&AdminCreateCard {
            card: CreateCard {
                title: "c".into(),
                assignee_id: Some(bolt.id),
                ..CreateCard::default()
            },
            creator_id: None,
        })
        .await
        .unwrap();
    let card_path = routes::fill(routes::CARD, card.id);
    let c = srv.get(Some(&t), &card_path).await;
    assert_eq!(
        (
            &c.body["tokens_in"],
            &c.body["tokens_cached_in"],
            &c.body["tokens_out"]
        ),
        (&json!(null), &json!(null), &json!(null)),
        "no report yet: null, never 0"
    );
    let r = srv
        .post(
            Some(&t),
            routes::USAGE,
            json!({"card_id": card.id, "tokens_in": 100, "tokens_cached_in": null, "tokens_out": -5}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["tokens_in"], 100);
    assert_eq!(r.body["tokens_cached_in"], json!(null));
    assert_eq!(r.body["tokens_out"], json!(null), "negative = not reported");
    let r = srv
        .post(
            Some(&t),
            routes::USAGE,
            json!({"card_id": card.id, "tokens_in": 20, "tokens_cached_in": 0, "tokens_out": null}),
        )
        .await;
    assert_eq!(r.status, 200);
    let c = srv.get(Some(&t), &card_path).await;
    assert_eq!(c.body["tokens_in"], 120);
    assert_eq!(c.body["tokens_cached_in"], 0, "a reported 0 is a 0");
    assert_eq!(c.body["tokens_out"], json!(null));
    let r = srv
        .post(
            Some(&t),
            routes::USAGE,
            json!({"card_id": 999, "tokens_in": 1, "tokens_cached_in": 1, "tokens_out": 1}),
        )
        .await;
    assert_eq!(r.status, 404);
}
