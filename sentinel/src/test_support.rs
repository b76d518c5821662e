//! Fixtures the crate's unit tests share.

use hoop_api::types::{Card, CardId, CardStatus};

/// A card of room 7 assigned to user 1, with nothing else set.
pub(crate) fn card(id: CardId, status: CardStatus) -> Card {
    Card {
        id,
        title: "t".into(),
        status,
        assignee_id: Some(1),
        parent_id: None,
        conversation_id: 7,
        message_id: None,
        error: None,
        result: None,
        result_message_id: None,
        lease_expires_at: None,
        tokens_in: None,
        tokens_cached_in: None,
        tokens_out: None,
        created_at: 0,
        updated_at: 0,
    }
}

/// A claude worker's record on `card` (sub-card of card 1 in room 7,
/// supervisor pid 4242), with nothing else set.
pub(crate) fn worker_record(
    card: CardId,
    state: crate::worker::WorkerState,
) -> crate::worker::WorkerRecord {
    crate::worker::WorkerRecord {
        card_id: card,
        parent_id: 1,
        conversation_id: 7,
        title: "t".into(),
        agent: crate::worker::AgentKind::Claude,
        state,
        pid: Some(4242),
        started_at: 0,
        ended_at: None,
        detail: None,
        announced: false,
        finish: None,
        log_tail: None,
    }
}
