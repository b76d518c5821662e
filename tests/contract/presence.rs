//! Heartbeat, presence computed on read, usage reports with nulls.

use hoop_api::admin::AdminCreateCard;
use hoop_api::types::{AssignTask, UsageReport};
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

/// Through the client: the account's cumulative totals are upserted (a null
/// or a negative never overwrites), and a card's cost is its end snapshot
/// minus its start snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_a_cumulative_upsert_and_a_card_costs_end_minus_start() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let room = env.room("work", &[a.user.id]).await.id;
    let report = |i: Option<i64>, c: Option<i64>, o: Option<i64>| UsageReport {
        card_id: None,
        tokens_in: i,
        tokens_cached_in: c,
        tokens_out: o,
    };
    a.client
        .usage(&report(Some(1000), None, Some(-5)))
        .await
        .unwrap();
    let card = env
        .admin
        .create_card(&AdminCreateCard {
            conversation_id: room,
            task: AssignTask {
                title: "measure".into(),
                assignee_id: Some(a.user.id),
                ..Default::default()
            },
            creator_id: None,
        })
        .await
        .unwrap();
    let cost = |c: &hoop_api::types::Card| (c.tokens_in, c.tokens_cached_in, c.tokens_out);
    let fresh = a.client.card(room, card.id).await.unwrap();
    assert_eq!(cost(&fresh), (None, None, None), "queued: null, not 0");
    a.client.claim_task(room, card.id).await.unwrap();
    // Starts at (1000, unknown, unknown): only tokens_in has a start.
    a.client
        .usage(&report(Some(1120), Some(30), None))
        .await
        .unwrap();
    let c = a.client.card(room, card.id).await.unwrap();
    assert_eq!(cost(&c), (Some(120), None, None));
    // A null and a negative keep the stored totals.
    a.client.usage(&report(None, Some(-1), None)).await.unwrap();
    let c = a.client.card(room, card.id).await.unwrap();
    assert_eq!(cost(&c), (Some(120), None, None));
    a.client
        .usage(&report(Some(1150), Some(1030), Some(7)))
        .await
        .unwrap();
    a.client
        .finish_task(
            room,
            card.id,
            &hoop_api::types::FinishTask::status(hoop_api::types::CardStatus::Done),
        )
        .await
        .unwrap();
    // Reports after the end do not move a finished card.
    a.client
        .usage(&report(Some(9999), Some(9999), Some(9999)))
        .await
        .unwrap();
    let c = a.client.card(room, card.id).await.unwrap();
    assert_eq!(cost(&c), (Some(150), None, None));
    // The wire form keeps nulls (never omitted, never 0).
    let v = serde_json::to_value(UsageReport::default()).unwrap();
    assert_eq!(v["tokens_in"], serde_json::Value::Null);
}

/// A heartbeat carries the idle state (seed 002 L57, L19 step 7): the
/// reference backend records what a beat reports, and a beat that reports
/// nothing keeps the last state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_records_idle_or_working() {
    use hoop_api::types::{AgentState, HeartbeatRequest};
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let b = env.agent("cole").await;
    let state = |list: &[hoop_api::types::Presence], id| {
        list.iter().find(|p| p.user_id == id).and_then(|p| p.state)
    };
    let beat = |s| HeartbeatRequest {
        conversation_id: None,
        state: s,
    };
    a.client.heartbeat().await.unwrap();
    assert_eq!(state(&a.client.presence().await.unwrap(), a.user.id), None);
    a.client
        .beat(&beat(Some(AgentState::Working)))
        .await
        .unwrap();
    b.client.beat(&beat(Some(AgentState::Idle))).await.unwrap();
    let list = a.client.presence().await.unwrap();
    assert_eq!(state(&list, a.user.id), Some(AgentState::Working));
    assert_eq!(state(&list, b.user.id), Some(AgentState::Idle));
    a.client.beat(&beat(Some(AgentState::Idle))).await.unwrap();
    assert_eq!(
        state(&a.client.presence().await.unwrap(), a.user.id),
        Some(AgentState::Idle)
    );
    // A plain beat reports nothing: the last state stays.
    a.client.heartbeat().await.unwrap();
    assert_eq!(
        state(&a.client.presence().await.unwrap(), a.user.id),
        Some(AgentState::Idle)
    );
}
