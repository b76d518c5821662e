//! Heartbeat, presence computed on read, usage reports with nulls.

use hoop_api::admin::AdminCreateCard;
use hoop_api::types::{CreateCard, UsageReport};
use hoop_core::limits::{NEXT_BEAT_SECS, PRESENCE_TIMEOUT};

use crate::support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_answers_next_beat_and_presence_lapses_after_three_minutes() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let present = |list: &[hoop_api::types::Presence]| {
        list.iter()
            .find(|p| p.user_id == a.user.id)
            .map(|p| p.present)
            .unwrap_or(false)
    };
    assert!(!present(&a.client.presence().await.unwrap()));
    let hb = a.client.heartbeat().await.unwrap();
    assert_eq!(hb.next_beat_sec, NEXT_BEAT_SECS);
    assert!(present(&a.client.presence().await.unwrap()));
    env.backend
        .clock()
        .advance(PRESENCE_TIMEOUT.as_secs() as i64 - 10);
    assert!(present(&a.client.presence().await.unwrap()));
    env.backend.clock().advance(20);
    // Re-login may be needed after the advance; the client handles it.
    assert!(!present(&a.client.presence().await.unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_unknown_is_null_never_zero_and_negatives_are_not_reported() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let card = env
        .admin
        .create_card(&AdminCreateCard {
            card: CreateCard {
                title: "measure".into(),
                assignee_id: Some(a.user.id),
                ..Default::default()
            },
            creator_id: None,
        })
        .await
        .unwrap();
    let fresh = a.client.card(card.id).await.unwrap();
    assert_eq!(
        (fresh.tokens_in, fresh.tokens_cached_in, fresh.tokens_out),
        (None, None, None),
        "no report yet: null, not 0"
    );
    a.client
        .usage(&UsageReport {
            card_id: Some(card.id),
            tokens_in: Some(120),
            tokens_cached_in: None,
            tokens_out: Some(-5),
        })
        .await
        .unwrap();
    let c = a.client.card(card.id).await.unwrap();
    assert_eq!(
        (c.tokens_in, c.tokens_cached_in, c.tokens_out),
        (Some(120), None, None)
    );
    a.client
        .usage(&UsageReport {
            card_id: Some(card.id),
            tokens_in: Some(30),
            tokens_cached_in: Some(1000),
            tokens_out: Some(7),
        })
        .await
        .unwrap();
    let c = a.client.card(card.id).await.unwrap();
    assert_eq!(
        (c.tokens_in, c.tokens_cached_in, c.tokens_out),
        (Some(150), Some(1000), Some(7))
    );
    // Without a card: accepted too.
    a.client.usage(&UsageReport::default()).await.unwrap();
    // The wire form keeps nulls (never omitted, never 0).
    let v = serde_json::to_value(UsageReport::default()).unwrap();
    assert_eq!(v["tokens_in"], serde_json::Value::Null);
}
