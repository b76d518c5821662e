//! Work cards: lifecycle and the lease rules.

use hoop_api::CardFilter;
use hoop_api::Error;
use hoop_api::types::{CardStatus, CreateCard, FinishCard, codes};
use hoop_core::limits::{LEASE_DURATION, MAX_LIVE_SUBCARDS, RENEW_AFTER_SECS};

use crate::support::{Agent, Env};

async fn card(a: &Agent, title: &str, parent: Option<i64>) -> hoop_api::types::Card {
    a.client
        .create_card(&CreateCard {
            title: title.into(),
            assignee_id: Some(a.user.id),
            parent_id: parent,
            conversation_id: None,
        })
        .await
        .unwrap()
}

fn code(r: Result<impl std::fmt::Debug, Error>) -> String {
    r.expect_err("refused")
        .code()
        .unwrap_or("<none>")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_never_opens_a_lease_progress_only_extends_renew_opens() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let c = card(&a, "ship it", None).await;
    assert_eq!((c.status, c.lease_expires_at), (CardStatus::Queued, None));
    // Renewing a card that is not working answers 404 — never "renewed".
    assert!(matches!(
        a.client.renew_lease(c.id).await,
        Err(Error::NotFound { .. })
    ));
    let c = a.client.claim_card(c.id).await.unwrap();
    assert_eq!((c.status, c.lease_expires_at), (CardStatus::Working, None));
    let c = a.client.card_progress(c.id, "halfway").await.unwrap();
    assert_eq!(c.lease_expires_at, None, "progress does not open a lease");
    let l = a.client.renew_lease(c.id).await.unwrap();
    assert_eq!(l.renew_after_sec, RENEW_AFTER_SECS);
    let lease = LEASE_DURATION.as_secs() as i64;
    let opened = l.lease_expires_at;
    env.backend.clock().advance(100);
    let c = a.client.card_progress(c.id, "more").await.unwrap();
    let extended = c.lease_expires_at.expect("an open lease is extended");
    assert!(extended >= opened + 100 && extended <= opened + 100 + lease);
    let done = a
        .client
        .finish_card(
            c.id,
            &FinishCard {
                status: CardStatus::Done,
                error: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(done.status, CardStatus::Done);
    assert!(matches!(
        a.client.renew_lease(c.id).await,
        Err(Error::NotFound { .. })
    ));
    let mine = a.client.cards(&CardFilter::mine()).await.unwrap();
    assert_eq!(mine.len(), 1);
    let working = a
        .client
        .cards(&CardFilter {
            status: Some(CardStatus::Working),
            ..CardFilter::mine()
        })
        .await
        .unwrap();
    assert!(working.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_top_level_working_card_and_failed_needs_an_error() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let one = card(&a, "one", None).await;
    let two = card(&a, "two", None).await;
    a.client.claim_card(one.id).await.unwrap();
    assert_eq!(code(a.client.claim_card(two.id).await), codes::AGENT_BUSY);
    assert_eq!(
        code(
            a.client
                .finish_card(
                    one.id,
                    &FinishCard {
                        status: CardStatus::Failed,
                        error: None
                    }
                )
                .await
        ),
        codes::ERROR_REQUIRED
    );
    let failed = a
        .client
        .finish_card(
            one.id,
            &FinishCard {
                status: CardStatus::Failed,
                error: Some("the build broke".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(failed.error.as_deref(), Some("the build broke"));
    a.client.claim_card(two.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_cards_run_in_parallel_at_most_eight_live_and_finish_cancels_them() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let parent = card(&a, "parent", None).await;
    a.client.claim_card(parent.id).await.unwrap();
    let mut subs = Vec::new();
    for i in 0..MAX_LIVE_SUBCARDS {
        subs.push(card(&a, &format!("sub{i}"), Some(parent.id)).await);
    }
    let over = a
        .client
        .create_card(&CreateCard {
            title: "ninth".into(),
            assignee_id: Some(a.user.id),
            parent_id: Some(parent.id),
            conversation_id: None,
        })
        .await;
    assert_eq!(code(over), codes::TOO_MANY_SUBCARDS);
    // Sub-cards work in parallel with their working parent.
    a.client.claim_card(subs[0].id).await.unwrap();
    a.client.claim_card(subs[1].id).await.unwrap();
    let grand = card(&a, "grandchild", Some(subs[0].id)).await;
    a.client
        .finish_card(
            parent.id,
            &FinishCard {
                status: CardStatus::Done,
                error: None,
            },
        )
        .await
        .unwrap();
    for c in subs.iter().chain([&grand]) {
        let now = a.client.card(c.id).await.unwrap();
        assert_eq!(now.status, CardStatus::Cancelled, "card {}", c.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_card_is_not_found() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    assert!(matches!(
        a.client.card(999_999).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        a.client.claim_card(999_999).await,
        Err(Error::NotFound { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transitions_outside_the_lifecycle_and_other_peoples_cards_are_refused() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let b = env.agent("nut").await;
    let c = card(&a, "mine", None).await;
    // Progress on a card that is not working.
    assert_eq!(
        code(a.client.card_progress(c.id, "early").await),
        codes::NOT_WORKING
    );
    // queued → done skips working.
    let done = FinishCard {
        status: CardStatus::Done,
        error: None,
    };
    assert_eq!(
        code(a.client.finish_card(c.id, &done).await),
        codes::INVALID_TRANSITION
    );
    // queued → cancelled is allowed; nothing moves a finished card again.
    let cancel = FinishCard {
        status: CardStatus::Cancelled,
        error: None,
    };
    a.client.finish_card(c.id, &cancel).await.unwrap();
    assert_eq!(
        code(a.client.claim_card(c.id).await),
        codes::INVALID_TRANSITION
    );
    // Someone else's card: neither assignee nor creator.
    let theirs = card(&b, "theirs", None).await;
    assert_eq!(code(a.client.claim_card(theirs.id).await), codes::FORBIDDEN);
}
