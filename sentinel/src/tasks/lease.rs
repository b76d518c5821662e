//! The lease renewer: renews the account's working cards at the backend's
//! `renew_after_sec` (renew is the only opener of a lease). A 404 means the
//! card is no longer working: stop renewing it, never treat it as renewed.
//!
//! It also keeps the home's workers (`crate::worker`): a worker's card is
//! renewed like any working card, gets one progress line when the worker is
//! first seen, and when it is no longer working (a renew answering 404, or
//! the card finished — a parent's finish cancels its live sub-cards) the
//! worker's process group is stopped and the log says so.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hoop_api::error::Error;
use hoop_api::rest::{CardFilter, Client};
use hoop_api::types::{Card, CardId, CardStatus, ConversationId, LeaseResponse};

use hoop_core::home::Home;

use crate::constants::LEASE_POLL;
use crate::worker::{self, Watch, WorkerState};

/// The account's top-level working card as last seen (for usage reports).
pub type CurrentCard = Arc<Mutex<Option<CardId>>>;

pub async fn run(client: Arc<Client>, current: CurrentCard, home: Home, worker_poll: Duration) {
    let mut stopped: BTreeSet<CardId> = BTreeSet::new();
    let mut announced: BTreeSet<CardId> = BTreeSet::new();
    let mut renewed_for: BTreeSet<CardId> = BTreeSet::new();
    let mut next_renew = tokio::time::Instant::now();
    loop {
        // A local look (no network) at the home's workers: a new one gets
        // its lease opened now, not at the next renew.
        let live = worker::live_workers(&home);
        let fresh = live.iter().any(|w| !renewed_for.contains(&w.card_id));
        let now = tokio::time::Instant::now();
        let mut seen = None;
        if now >= next_renew || fresh {
            let (wait, renew_404, working) = tick(&client, &current, &mut stopped).await;
            next_renew = tokio::time::Instant::now() + wait;
            renewed_for.extend(live.iter().map(|w| w.card_id));
            seen = Some((renew_404, working));
        } else if !live.is_empty() {
            seen = working_ids(&client).await.map(|w| (Vec::new(), w));
        }
        if !live.is_empty()
            && let Some((renew_404, working)) = seen
        {
            keep_workers(&client, &home, &working, &renew_404, &mut announced).await;
        }
        let until_renew = next_renew.saturating_duration_since(tokio::time::Instant::now());
        tokio::time::sleep(until_renew.min(worker_poll)).await;
    }
}

/// The account's working cards' ids (`None` when the backend cannot say).
async fn working_ids(client: &Client) -> Option<Vec<CardId>> {
    let filter = CardFilter {
        status: Some(CardStatus::Working),
        ..CardFilter::mine()
    };
    match client.cards(&filter).await {
        Ok(cards) => Some(cards.iter().map(|c| c.id).collect()),
        Err(e) => {
            tracing::debug!(error = %e, "could not list working cards");
            None
        }
    }
}

/// One look at the home's live workers.
async fn keep_workers(
    client: &Client,
    home: &Home,
    working: &[CardId],
    renew_404: &[CardId],
    announced: &mut BTreeSet<CardId>,
) {
    for w in worker::live_workers(home) {
        let mut decision = worker::watch(w.card_id, working, renew_404, None);
        if decision == Watch::LookUp {
            let filter = CardFilter {
                assignee: Some("any".into()),
                id: Some(w.card_id),
                ..CardFilter::default()
            };
            decision = match client.cards(&filter).await {
                Ok(cards) => match cards.first() {
                    Some(c) => worker::watch(w.card_id, working, renew_404, Some(c)),
                    None => Watch::Stop {
                        why: "its card is gone".into(),
                    },
                },
                Err(e) => {
                    tracing::debug!(card = w.card_id, error = %e, "could not look up a worker's card");
                    Watch::Keep
                }
            };
        }
        match decision {
            Watch::Keep | Watch::LookUp => {
                if working.contains(&w.card_id) && announced.insert(w.card_id) {
                    let line = format!("worker running: {} (pid {})", w.agent.word(), w.pid);
                    if let Err(e) = client
                        .task_progress(w.conversation_id, w.card_id, &line)
                        .await
                    {
                        tracing::debug!(card = w.card_id, error = %e, "worker progress line");
                        announced.remove(&w.card_id);
                    }
                }
            }
            Watch::Stop { why } => {
                let gone = worker::stop(w.pid).await;
                if let Ok(mut r) = worker::read_record(home, w.card_id) {
                    r.state = WorkerState::Stopped;
                    r.ended_at = Some(hoop_core::clock::now_unix());
                    r.detail = Some(why.clone());
                    if let Err(e) = worker::write_record(home, &r) {
                        tracing::warn!(card = w.card_id, error = %e, "could not record the stopped worker");
                    }
                }
                tracing::info!(
                    card = w.card_id,
                    parent = w.parent_id,
                    pid = w.pid,
                    gone,
                    "🛑 worker stopped: {why}"
                );
            }
        }
    }
}

/// One pass; returns how long to wait before the next, the cards whose
/// renew answered 404 and the working cards seen.
async fn tick(
    client: &Client,
    current: &CurrentCard,
    stopped: &mut BTreeSet<CardId>,
) -> (Duration, Vec<CardId>, Vec<CardId>) {
    let filter = CardFilter {
        status: Some(CardStatus::Working),
        ..CardFilter::mine()
    };
    let cards = match client.cards(&filter).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "could not list working cards");
            return (LEASE_POLL, Vec::new(), Vec::new());
        }
    };
    if let Ok(mut slot) = current.lock() {
        *slot = cards.iter().find(|c| c.parent_id.is_none()).map(|c| c.id);
    }
    let mut wait = LEASE_POLL;
    let mut renew_404 = Vec::new();
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
                renew_404.push(id);
            }
            Verdict::Retry => {
                if let Err(e) = answer {
                    tracing::warn!(card = id, error = %e, "lease renew failed");
                }
            }
        }
    }
    let working = cards.iter().map(|c| c.id).collect();
    (wait, renew_404, working)
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

    use crate::test_support::card;

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
