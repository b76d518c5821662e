//! Work cards through the client: they live under workrooms (production,
//! seed 002 L19 steps 5-7, L21, L83), the lifecycle and the lease rules.

use hoop_api::CardFilter;
use hoop_api::Error;
use hoop_api::types::{AssignTask, Card, CardStatus, FinishTask, codes};
use hoop_core::limits::{LEASE_DURATION, MAX_LIVE_SUBCARDS, RENEW_AFTER_SECS};

use crate::support::{Agent, Env};

/// An agent and a workroom of its own.
async fn agent_in_room(env: &Env, name: &str) -> (Agent, i64) {
    let a = env.agent(name).await;
    let room = env.room(&format!("{name}'s room"), &[a.user.id]).await;
    (a, room.id)
}

async fn card(a: &Agent, room: i64, title: &str, parent: Option<i64>) -> Card {
    a.client
        .assign_task(
            room,
            &AssignTask {
                title: title.into(),
                assignee_id: Some(a.user.id),
                parent_id: parent,
                message_id: None,
            },
        )
        .await
        .unwrap()
}

fn code(r: Result<impl std::fmt::Debug, Error>) -> String {
    r.expect_err("refused")
        .code()
        .unwrap_or("<none>")
        .to_string()
}

fn failed(error: Option<&str>) -> FinishTask {
    FinishTask {
        error: error.map(str::to_string),
        ..FinishTask::status(CardStatus::Failed)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_never_opens_a_lease_progress_only_extends_renew_opens() {
    let env = Env::start().await;
    let (a, room) = agent_in_room(&env, "bolt").await;
    let c = card(&a, room, "ship it", None).await;
    assert_eq!((c.status, c.lease_expires_at), (CardStatus::Queued, None));
    assert_eq!(c.conversation_id, room);
    // Renewing a card that is not working answers 404 — never "renewed".
    assert!(matches!(
        a.client.renew_lease(room, c.id).await,
        Err(Error::NotFound { .. })
    ));
    let c = a.client.claim_task(room, c.id).await.unwrap();
    assert_eq!((c.status, c.lease_expires_at), (CardStatus::Working, None));
    let c = a.client.task_progress(room, c.id, "halfway").await.unwrap();
    assert_eq!(c.lease_expires_at, None, "progress does not open a lease");
    let l = a.client.renew_lease(room, c.id).await.unwrap();
    assert_eq!(l.renew_after_sec, RENEW_AFTER_SECS);
    let lease = LEASE_DURATION.as_secs() as i64;
    let opened = l.lease_expires_at;
    env.backend.clock().advance(100);
    let c = a.client.task_progress(room, c.id, "more").await.unwrap();
    let extended = c.lease_expires_at.expect("an open lease is extended");
    assert!(extended >= opened + 100 && extended <= opened + 100 + lease);
    let done = a
        .client
        .finish_task(
            room,
            c.id,
            &FinishTask {
                result: Some("shipped".into()),
                ..FinishTask::status(CardStatus::Done)
            },
        )
        .await
        .unwrap();
    let task = done.task.expect("the finished card");
    assert_eq!(
        (done.updated, task.status, task.result.as_deref()),
        (true, CardStatus::Done, Some("shipped"))
    );
    assert!(matches!(
        a.client.renew_lease(room, c.id).await,
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
    let (a, room) = agent_in_room(&env, "bolt").await;
    let one = card(&a, room, "one", None).await;
    let two = card(&a, room, "two", None).await;
    a.client.claim_task(room, one.id).await.unwrap();
    assert_eq!(
        code(a.client.claim_task(room, two.id).await),
        codes::AGENT_BUSY
    );
    assert_eq!(
        code(a.client.finish_task(room, one.id, &failed(None)).await),
        codes::ERROR_REQUIRED
    );
    let done = a
        .client
        .finish_task(room, one.id, &failed(Some("the build broke")))
        .await
        .unwrap();
    assert_eq!(done.task.unwrap().error.as_deref(), Some("the build broke"));
    a.client.claim_task(room, two.id).await.unwrap();
}

/// Production's `work_task_start` through the client: assign, then claim in
/// a second step; a refused claim is `Error::Orphaned` naming the queued
/// card, which can then be finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_start_surfaces_the_orphan_which_can_be_finished() {
    let env = Env::start().await;
    let (a, room) = agent_in_room(&env, "bolt").await;
    let task = |t: &str| AssignTask {
        title: t.into(),
        assignee_id: Some(a.user.id),
        ..AssignTask::default()
    };
    let first = a.client.start_task(room, &task("first")).await.unwrap();
    assert_eq!(first.status, CardStatus::Working);
    let orphan = match a.client.start_task(room, &task("second")).await {
        Err(Error::Orphaned { task_id, code, .. }) => {
            assert_eq!(code, codes::AGENT_BUSY);
            task_id
        }
        other => panic!("{other:?}"),
    };
    let o = a.client.card(room, orphan).await.unwrap();
    assert_eq!((o.status, o.title.as_str()), (CardStatus::Queued, "second"));
    let fin = a
        .client
        .finish_task(room, orphan, &FinishTask::status(CardStatus::Cancelled))
        .await
        .unwrap();
    assert!(fin.updated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_cards_run_in_parallel_at_most_eight_live_and_finish_cancels_them() {
    let env = Env::start().await;
    let (a, room) = agent_in_room(&env, "bolt").await;
    let parent = card(&a, room, "parent", None).await;
    a.client.claim_task(room, parent.id).await.unwrap();
    let mut subs = Vec::new();
    for i in 0..MAX_LIVE_SUBCARDS {
        subs.push(card(&a, room, &format!("sub{i}"), Some(parent.id)).await);
    }
    let over = a
        .client
        .assign_task(
            room,
            &AssignTask {
                title: "ninth".into(),
                assignee_id: Some(a.user.id),
                parent_id: Some(parent.id),
                message_id: None,
            },
        )
        .await;
    assert_eq!(code(over), codes::TOO_MANY_SUBCARDS);
    // Sub-cards work in parallel with their working parent.
    a.client.claim_task(room, subs[0].id).await.unwrap();
    a.client.claim_task(room, subs[1].id).await.unwrap();
    let grand = card(&a, room, "grandchild", Some(subs[0].id)).await;
    a.client
        .finish_task(room, parent.id, &FinishTask::status(CardStatus::Done))
        .await
        .unwrap();
    for c in subs.iter().chain([&grand]) {
        let now = a.client.card(room, c.id).await.unwrap();
        assert_eq!(now.status, CardStatus::Cancelled, "card {}", c.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_card_is_not_found() {
    let env = Env::start().await;
    let (a, room) = agent_in_room(&env, "bolt").await;
    assert!(matches!(
        a.client.card(room, 999_999).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        a.client.claim_task(room, 999_999).await,
        Err(Error::NotFound { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transitions_outside_the_lifecycle_and_other_peoples_cards_are_refused() {
    let env = Env::start().await;
    let (a, room) = agent_in_room(&env, "bolt").await;
    let b = env.agent("nut").await;
    let shared = env.room("shared", &[a.user.id, b.user.id]).await.id;
    let c = card(&a, room, "mine", None).await;
    // Progress on a card that is not working.
    assert_eq!(
        code(a.client.task_progress(room, c.id, "early").await),
        codes::NOT_WORKING
    );
    // queued → done skips working.
    let done = FinishTask::status(CardStatus::Done);
    assert_eq!(
        code(a.client.finish_task(room, c.id, &done).await),
        codes::INVALID_TRANSITION
    );
    // queued → cancelled is allowed; a finished card cannot be claimed
    // (`not_claimable`), and finishing it again changes nothing
    // (`updated: false`, not an error).
    let cancel = FinishTask::status(CardStatus::Cancelled);
    assert!(
        a.client
            .finish_task(room, c.id, &cancel)
            .await
            .unwrap()
            .updated
    );
    assert_eq!(
        code(a.client.claim_task(room, c.id).await),
        codes::NOT_CLAIMABLE
    );
    for again in [&cancel, &done, &failed(None)] {
        let r = a.client.finish_task(room, c.id, again).await.unwrap();
        assert_eq!((r.updated, r.task), (false, None), "{again:?}");
    }
    assert_eq!(
        a.client.card(room, c.id).await.unwrap().status,
        CardStatus::Cancelled
    );
    // Someone else's card: neither assignee nor creator.
    let theirs = card(&b, shared, "theirs", None).await;
    assert_eq!(
        code(a.client.claim_task(shared, theirs.id).await),
        codes::FORBIDDEN
    );
}

/// Production's assign rules through the client (seed 002 L19 step 5): the
/// assignee an agent member of the room, `message_id` a message of the
/// room; and a progress line beats (step 6). Each rule both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assign_checks_assignee_and_message_and_a_progress_line_beats() {
    let env = Env::start().await;
    let (a, room) = agent_in_room(&env, "bolt").await;
    let human = env.user("ada", false).await;
    let stranger = env.agent("nut").await;
    let other = env.room("other", &[a.user.id, stranger.user.id]).await.id;
    let here = env.post_as(room, a.user.id, "do this").await.id;
    let there = env.post_as(other, a.user.id, "not here").await.id;
    let task = |assignee: i64, message: Option<i64>| AssignTask {
        title: "t".into(),
        assignee_id: Some(assignee),
        parent_id: None,
        message_id: message,
    };
    // (assignee, message, refused with)
    let rows = [
        (a.user.id, Some(here), None),
        (a.user.id, None, None),
        (a.user.id, Some(there), Some(codes::BAD_REQUEST)),
        (human.id, None, Some(codes::FORBIDDEN)),
        (stranger.user.id, None, Some(codes::FORBIDDEN)),
    ];
    for (assignee, message, refused) in rows {
        let r = a.client.assign_task(room, &task(assignee, message)).await;
        match refused {
            None => {
                let c = r.unwrap();
                assert_eq!((c.conversation_id, c.message_id), (room, message));
            }
            Some(want) => assert_eq!(code(r), want, "{assignee} {message:?}"),
        }
    }
    // The stranger is an agent member of the other room: assignable there.
    a.client
        .assign_task(other, &task(stranger.user.id, Some(there)))
        .await
        .unwrap();
    // A progress line is a heartbeat.
    let present = |who: i64| {
        let c = &a.client;
        async move {
            c.presence()
                .await
                .unwrap()
                .into_iter()
                .any(|p| p.user_id == who && p.present)
        }
    };
    assert!(!present(a.user.id).await, "no beat yet");
    let c = card(&a, room, "beat", None).await;
    a.client.claim_task(room, c.id).await.unwrap();
    assert!(!present(a.user.id).await, "a claim is not a beat");
    a.client.task_progress(room, c.id, "going").await.unwrap();
    assert!(present(a.user.id).await, "a progress line beats");
}
