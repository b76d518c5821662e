//! The lease renewer: renews the account's working cards at the backend's
//! `renew_after_sec` (renew is the only opener of a lease). A 404 means the
//! card is no longer working: stop renewing it, never treat it as renewed.
//!
//! It also keeps the home's workers (`crate::worker`, one decision per
//! record: [`worker::tend`]). A worker's card is renewed only while its
//! supervisor lives; it gets one progress line when the worker is first
//! seen (recorded in the worker's record, so a restarted sentinel does not
//! say it twice); when the card is no longer working (a renew answering
//! 404, or the card finished — a parent's finish cancels its live
//! sub-cards) the worker's process tree is stopped. A worker whose
//! supervisor is gone is finished by the renewer: `failed` with the end of
//! its log if it died running, or with its recorded result if only the
//! finish had not landed — retried every look until it lands. A record
//! whose spawner is still starting its supervisor (no pid yet, the start
//! lock held) is not an orphan: it is left alone until the pid is in it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hoop_api::error::Error;
use hoop_api::rest::{CardFilter, Client};
use hoop_api::types::{Card, CardId, CardStatus, ConversationId, FinishTask, LeaseResponse};

use hoop_core::home::Home;

use crate::constants::LEASE_POLL;
use crate::worker::{self, Supervisor, Tend, Watch, WorkerRecord, WorkerState};

/// The account's top-level working card as last seen (for usage reports).
pub type CurrentCard = Arc<Mutex<Option<CardId>>>;

/// Each worker record and its supervisor ([`worker::supervisor`]: one whose
/// spawner is still starting it is not taken for gone).
fn look(home: &Home) -> Vec<(WorkerRecord, Supervisor)> {
    worker::records(home)
        .into_iter()
        .map(|r| worker::supervisor(home, r))
        .collect()
}

pub async fn run(client: Arc<Client>, current: CurrentCard, home: Home, worker_poll: Duration) {
    let mut stopped: BTreeSet<CardId> = BTreeSet::new();
    let mut renewed_for: BTreeSet<CardId> = BTreeSet::new();
    let mut next_renew = tokio::time::Instant::now();
    loop {
        // A local look (no network) at the home's workers: a new one gets
        // its lease opened now, not at the next renew.
        let workers = look(&home);
        let skip = not_to_renew(&workers);
        let active: Vec<CardId> = workers
            .iter()
            .filter(|(r, sup)| worker::tend(r, *sup) != Tend::Over)
            .map(|(r, _)| r.card_id)
            .collect();
        let fresh = workers
            .iter()
            .any(|(r, sup)| *sup == Supervisor::Alive && !renewed_for.contains(&r.card_id));
        let now = tokio::time::Instant::now();
        let mut seen = None;
        if now >= next_renew || fresh {
            let (wait, renew_404, working) = tick(&client, &current, &mut stopped, &skip).await;
            next_renew = tokio::time::Instant::now() + wait;
            renewed_for.extend(
                workers
                    .iter()
                    .filter(|(_, sup)| *sup == Supervisor::Alive)
                    .map(|(r, _)| r.card_id),
            );
            seen = Some((renew_404, working));
        } else if !active.is_empty() {
            seen = working_ids(&client).await.map(|w| (Vec::new(), w));
        }
        if !active.is_empty()
            && let Some((renew_404, working)) = seen
        {
            keep_workers(&client, &home, workers, &working, &renew_404).await;
        }
        let until_renew = next_renew.saturating_duration_since(tokio::time::Instant::now());
        tokio::time::sleep(until_renew.min(worker_poll)).await;
    }
}

/// The worker cards the renewer must not renew: their supervisor does not
/// live (yet, or any more: a card nobody works on must not look worked on).
pub fn not_to_renew(workers: &[(WorkerRecord, Supervisor)]) -> BTreeSet<CardId> {
    workers
        .iter()
        .filter(|(_, sup)| *sup != Supervisor::Alive)
        .map(|(r, _)| r.card_id)
        .collect()
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

/// One look at the home's workers.
async fn keep_workers(
    client: &Client,
    home: &Home,
    workers: Vec<(WorkerRecord, Supervisor)>,
    working: &[CardId],
    renew_404: &[CardId],
) {
    for (mut r, sup) in workers {
        if r.state == WorkerState::Running && sup == Supervisor::Gone {
            // What the dead supervisor printed last goes on the card.
            r.log_tail = worker::read_log_tail(home, r.card_id).or(r.log_tail);
        }
        match worker::tend(&r, sup) {
            Tend::Watch => watch_one(client, home, &r, working, renew_404).await,
            Tend::FinishOrphan(f) => {
                tracing::warn!(card = r.card_id, pid = ?r.pid, "the worker's supervisor is gone; finishing its card");
                land(client, home, &r, f).await;
            }
            Tend::LandFinish(f) => land(client, home, &r, f).await,
            Tend::Wait | Tend::Over => {}
        }
    }
}

/// Finish a worker's card for its gone supervisor; the finish stays in the
/// record until it lands.
async fn land(client: &Client, home: &Home, r: &WorkerRecord, f: FinishTask) {
    let card = r.card_id;
    let outcome = client.finish_task(r.conversation_id, card, &f).await;
    let landed = match &outcome {
        Ok(a) => {
            tracing::info!(card, updated = a.updated, status = ?f.status, "worker card finished by the sentinel");
            true
        }
        Err(e) if worker::finish_retryable(e) => {
            tracing::warn!(card, error = %e, "finishing the worker card failed; trying again at the next look");
            false
        }
        Err(e) => {
            tracing::warn!(card, error = %e, "finishing the worker card was refused");
            true
        }
    };
    let result = if landed {
        worker::close(home, card, |rec| {
            rec.state = WorkerState::Finished;
            rec.ended_at.get_or_insert(hoop_core::clock::now_unix());
            if rec.detail.is_none() {
                rec.detail = f.error.clone().map(|e| format!("failed: {e}"));
            }
            rec.finish = None;
        })
    } else {
        worker::close(home, card, |rec| {
            rec.state = WorkerState::Finishing;
            rec.finish = Some(f.clone());
        })
    };
    if let Err(e) = result {
        tracing::warn!(card, error = %e, "could not record the worker's finish");
    }
}

/// A live worker: keep it (renewed by the tick, announced once) or stop it.
async fn watch_one(
    client: &Client,
    home: &Home,
    r: &WorkerRecord,
    working: &[CardId],
    renew_404: &[CardId],
) {
    let card = r.card_id;
    let Some(pid) = r.pid else { return };
    let mut decision = worker::watch(card, working, renew_404, None);
    if decision == Watch::LookUp {
        let filter = CardFilter {
            assignee: Some("any".into()),
            id: Some(card),
            ..CardFilter::default()
        };
        decision = match client.cards(&filter).await {
            Ok(cards) => match cards.first() {
                Some(c) => worker::watch(card, working, renew_404, Some(c)),
                None => Watch::Stop {
                    why: "its card is gone".into(),
                },
            },
            Err(e) => {
                tracing::debug!(card, error = %e, "could not look up a worker's card");
                Watch::Keep
            }
        };
    }
    match decision {
        Watch::Keep | Watch::LookUp => {
            if working.contains(&card) && !r.announced {
                let line = format!("worker running: {} (pid {pid})", r.agent.word());
                match client.task_progress(r.conversation_id, card, &line).await {
                    Ok(_) => {
                        tracing::info!(card, "worker announced on its card");
                        if let Err(e) =
                            worker::update_record(home, card, |rec| rec.announced = true)
                        {
                            tracing::warn!(card, error = %e, "could not record the announcement");
                        }
                    }
                    Err(e) => tracing::debug!(card, error = %e, "worker progress line"),
                }
            }
        }
        Watch::Stop { why } => {
            let gone = worker::stop(pid).await;
            let closed = worker::close(home, card, |rec| {
                rec.state = WorkerState::Stopped;
                rec.ended_at = Some(hoop_core::clock::now_unix());
                rec.detail = Some(why.clone());
            });
            if let Err(e) = closed {
                tracing::warn!(card, error = %e, "could not record the stopped worker");
            }
            tracing::info!(
                card,
                parent = r.parent_id,
                pid,
                gone,
                "🛑 worker stopped: {why}"
            );
        }
    }
}

/// One pass; returns how long to wait before the next, the cards whose
/// renew answered 404 and the working cards seen.
async fn tick(
    client: &Client,
    current: &CurrentCard,
    stopped: &mut BTreeSet<CardId>,
    skip: &BTreeSet<CardId>,
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
    for (cid, id) in to_renew(&cards, stopped, skip) {
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

/// The working cards not yet given up on and not a worker's whose
/// supervisor is gone (`skip`), as (room, card).
pub fn to_renew(
    cards: &[Card],
    stopped: &BTreeSet<CardId>,
    skip: &BTreeSet<CardId>,
) -> Vec<(ConversationId, CardId)> {
    cards
        .iter()
        .filter(|c| {
            c.status == CardStatus::Working && !stopped.contains(&c.id) && !skip.contains(&c.id)
        })
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

    fn renewed(after: u64) -> Result<LeaseResponse, Error> {
        Ok(LeaseResponse {
            lease_expires_at: 1,
            renew_after_sec: after,
        })
    }

    /// Every answer a renew can get, one row each: only a renewal renews
    /// (its `renew_after_sec` clamped to at least a second, so a backend
    /// answering 0 can never make the renewer spin), only a 404 stops, and
    /// every other error — the error enum's every variant — is retried.
    #[test]
    fn verdict_table() {
        use hoop_core::home::HomeError;
        let refused = |status: u16, code: &str| Error::Refused {
            status,
            code: code.into(),
            message: "m".into(),
        };
        let cases: Vec<(&str, Result<LeaseResponse, Error>, Verdict)> = vec![
            (
                "renewed",
                renewed(60),
                Verdict::Renewed(Duration::from_secs(60)),
            ),
            (
                "renew_after_sec 0 is clamped to 1 s",
                renewed(0),
                Verdict::Renewed(Duration::from_secs(1)),
            ),
            (
                "renew_after_sec 1 stays",
                renewed(1),
                Verdict::Renewed(Duration::from_secs(1)),
            ),
            (
                "a long wait is kept",
                renewed(86_400),
                Verdict::Renewed(Duration::from_secs(86_400)),
            ),
            (
                "404 not_working: stop",
                Err(Error::NotFound {
                    code: "not_working".into(),
                    message: "m".into(),
                }),
                Verdict::Stop,
            ),
            (
                "404 not_found: stop",
                Err(Error::NotFound {
                    code: "not_found".into(),
                    message: "m".into(),
                }),
                Verdict::Stop,
            ),
            (
                "401",
                Err(Error::Unauthorized {
                    message: "expired".into(),
                }),
                Verdict::Retry,
            ),
            (
                "login refused",
                Err(Error::LoginRefused {
                    message: "m".into(),
                }),
                Verdict::Retry,
            ),
            (
                "429",
                Err(Error::RateLimited {
                    retry_after: Some(Duration::from_secs(5)),
                    message: String::new(),
                }),
                Verdict::Retry,
            ),
            (
                "gap",
                Err(Error::Gap {
                    latest_id: 9,
                    unread_count: 1,
                    unread: vec![],
                }),
                Verdict::Retry,
            ),
            (
                "orphaned",
                Err(Error::Orphaned {
                    task_id: 3,
                    code: "agent_busy".into(),
                    message: "m".into(),
                }),
                Verdict::Retry,
            ),
            (
                "403 refused",
                Err(refused(403, "forbidden")),
                Verdict::Retry,
            ),
            ("409 refused", Err(refused(409, "conflict")), Verdict::Retry),
            (
                "503 refused",
                Err(refused(503, "unavailable")),
                Verdict::Retry,
            ),
            (
                "500 unreadable",
                Err(Error::Unparseable {
                    status: 500,
                    head: String::new(),
                }),
                Verdict::Retry,
            ),
            (
                "transport",
                Err(Error::Transport("down".into())),
                Verdict::Retry,
            ),
            (
                "decode",
                Err(Error::Decode {
                    what: "lease",
                    message: "m".into(),
                }),
                Verdict::Retry,
            ),
            (
                "token cache",
                Err(Error::TokenCache {
                    path: "/x".into(),
                    source: std::io::Error::other("full"),
                }),
                Verdict::Retry,
            ),
            (
                "config",
                Err(Error::Config(HomeError::NoHomeDir)),
                Verdict::Retry,
            ),
            (
                "bad url",
                Err(Error::BadUrl {
                    url: "x".into(),
                    message: "m".into(),
                }),
                Verdict::Retry,
            ),
            (
                "rpc",
                Err(Error::Rpc {
                    code: -32000,
                    message: "m".into(),
                }),
                Verdict::Retry,
            ),
        ];
        for (why, answer, want) in cases {
            assert_eq!(verdict(&answer), want, "{why}: {answer:?}");
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
        let none = BTreeSet::new();
        assert_eq!(to_renew(&cards, &stopped, &none), vec![(7, 1), (7, 2)]);
        stopped.insert(2);
        assert_eq!(to_renew(&cards, &stopped, &none), vec![(7, 1)]);
    }

    fn record(card: CardId, state: WorkerState) -> WorkerRecord {
        crate::test_support::worker_record(card, state)
    }

    /// A worker's card is renewed only while its supervisor lives; the
    /// account's own cards (no worker record) are renewed as ever.
    #[test]
    fn a_worker_card_without_a_live_supervisor_is_not_renewed() {
        let cards = [
            card(1, CardStatus::Working),
            card(5, CardStatus::Working),
            card(6, CardStatus::Working),
        ];
        let workers = vec![
            (record(5, WorkerState::Running), Supervisor::Alive),
            (record(6, WorkerState::Running), Supervisor::Gone),
            (record(8, WorkerState::Running), Supervisor::Starting),
        ];
        let skip = not_to_renew(&workers);
        assert_eq!(skip, BTreeSet::from([6, 8]));
        assert_eq!(
            to_renew(&cards, &BTreeSet::new(), &skip),
            vec![(7, 1), (7, 5)]
        );
    }
}
