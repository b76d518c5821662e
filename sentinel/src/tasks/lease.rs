//! The lease renewer: renews the account's working cards at the backend's
//! `renew_after_sec` (renew is the only opener of a lease). A 404 means the
//! card is no longer working: stop renewing it, never treat it as renewed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hoop_api::error::Error;
use hoop_api::rest::{CardFilter, Client};
use hoop_api::types::{CardId, CardStatus};

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
        assignee: Some("me".into()),
        status: Some(CardStatus::Working),
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
    let live: Vec<CardId> = cards
        .iter()
        .map(|c| c.id)
        .filter(|id| !stopped.contains(id))
        .collect();
    for id in live {
        match client.renew_lease(id).await {
            Ok(r) => {
                tracing::debug!(card = id, until = r.lease_expires_at, "lease renewed");
                wait = wait.min(Duration::from_secs(r.renew_after_sec.max(1)));
            }
            Err(Error::NotFound { .. }) => {
                tracing::info!(
                    card = id,
                    "lease renew answered 404: no longer renewing this card"
                );
                stopped.insert(id);
            }
            Err(e) => tracing::warn!(card = id, error = %e, "lease renew failed"),
        }
    }
    wait
}
