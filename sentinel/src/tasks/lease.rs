//! The lease renewer: renews the account's working cards at the backend's
//! `renew_after_sec` (renew is the only opener of a lease). A 404 means the
//! card is no longer working: stop renewing it, never treat it as renewed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hoop_api::error::Error;
use hoop_api::rest::{CardFilter, Client};
use hoop_api::types::{Card, CardId, CardStatus, ConversationId, LeaseResponse};

use crate::constants::LEASE_POLL;

/// The account's top-level working card as last seen (for usage reports).
pub type CurrentCard = Arc<Mutex<Option<CardId>>>;

pub async fn run(client: Arc<Client>, current: CurrentCard) {
    let mut stopped: BTreeSet<CardId> = BTreeSet::new();
    loop {
        let wait = tick(&client, &current, &mut stopped).await;
        tokio::time::sleep(wait).await;
    }
}

/// One pass; returns how long to wait before the next.
async fn tick(client: &Client, current: &CurrentCard, stopped: &mut BTreeSet<CardId>) -> Duration {
    let filter = CardFilter {
        status: Some(CardStatus::Working),
        ..CardFilter::mine()
    };
    let cards = match client.cards(&filter).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "could not list working cards");
            return LEASE_POLL;
        }
    };
    if let Ok(mut slot) = current.lock() {
        *slot = cards.iter().find(|c| c.parent_id.is_none()).map(|c| c.id);
    }
    let mut wait = LEASE_POLL;
    for (cid, id) in to_renew(&cards, stopped) {
        let answer = client.renew_lease(cid, id).await;
        match verdict(&answer) {
            Verdict::Renewed(next) => {
                tracing::debug!(card = id, "lease renewed");
                wait = wait.min(next);
            }
            Verdict::Stop => {
                tracing::info!(
                    card = id,
                    "lease renew answered 404: no longer renewing this card"
                );
                stopped.insert(id);
            }
            Verdict::Retry => {
                if let Err(e) = answer {
                    tracing::warn!(card = id, error = %e, "lease renew failed");
                }
            }
        }
    }
    wait
}

/// The working cards not yet given up on, as (room, card).
pub fn to_renew(cards: &[Card], stopped: &BTreeSet<CardId>) -> Vec<(ConversationId, CardId)> {
    cards
        .iter()
        .filter(|c| c.status == CardStatus::Working && !stopped.contains(&c.id))
        .map(|c| (c.conversation_id, c.id))
        .collect()
}

/// What a renew answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Renewed: renew again after this long.
    Renewed(Duration),
    /// 404: the card is not working; never renew it again (and never
    /// count it as renewed).
    Stop,
    /// Anything else (backend down, 5xx): try again next pass.
    Retry,
}

pub fn verdict(answer: &Result<LeaseResponse, Error>) -> Verdict {
    match answer {
        Ok(r) => Verdict::Renewed(Duration::from_secs(r.renew_after_sec.max(1))),
        Err(Error::NotFound { .. }) => Verdict::Stop,
        Err(_) => Verdict::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(id: CardId, status: CardStatus) -> Card {
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

    #[test]
    fn verdict_table() {
        let cases: Vec<(Result<LeaseResponse, Error>, Verdict)> = vec![
            (
                Ok(LeaseResponse {
                    lease_expires_at: 1,
                    renew_after_sec: 60,
                }),
                Verdict::Renewed(Duration::from_secs(60)),
            ),
            (
                Err(Error::NotFound {
                    code: "not_working".into(),
                    message: "m".into(),
                }),
                Verdict::Stop,
            ),
            (Err(Error::Transport("down".into())), Verdict::Retry),
            (
                Err(Error::Unparseable {
                    status: 500,
                    head: String::new(),
                }),
                Verdict::Retry,
            ),
        ];
        for (answer, want) in cases {
            assert_eq!(verdict(&answer), want, "{answer:?}");
        }
    }

    #[test]
    fn a_stopped_card_is_never_renewed_again() {
        let cards = [
            card(1, CardStatus::Working),
            card(2, CardStatus::Working),
            card(3, CardStatus::Queued),
        ];
        let mut stopped = BTreeSet::new();
        assert_eq!(to_renew(&cards, &stopped), vec![(7, 1), (7, 2)]);
        stopped.insert(2);
        assert_eq!(to_renew(&cards, &stopped), vec![(7, 1)]);
    }
}
