//! Existence oracles (issue 19 item 11; contract §6, seed 002 L75): what is
//! "not yours" and what is "not there" get one answer. Each row sends the
//! same request to two servers built alike, differing only in the hidden
//! fact (the card or the user exists, or not); status and body must be
//! identical. The must-not-fire rows show the thing is served to whoever
//! may see it.

use hoop_api::admin::AdminCreateCard;
use hoop_api::routes::{self, fill_task};
use hoop_api::types::AssignTask;
use serde_json::{Value, json};

use crate::support::{Resp, Srv};

/// One world: Bolt and Eve share room `mine`; room `other` is Bolt's alone.
/// When `exists`, card 1 lives in `other` (assigned to Bolt) and an agent
/// Zed exists outside `mine`; otherwise neither does. Ids match across
/// worlds (Zed is created last).
struct World {
    srv: Srv,
    eve: String,
    bolt: String,
    mine: i64,
    other: i64,
    card: i64,
    zed: i64,
}

async fn world(exists: bool) -> World {
    let srv = Srv::start().await;
    let bolt_u = srv.user("bolt", true).await;
    let eve_u = srv.user("eve", true).await;
    let mine = srv.room("mine", &[&bolt_u, &eve_u], true).await;
    let other = srv.room("other", &[&bolt_u], true).await;
    // The id the card and Zed get in the world where they exist.
    let (card, zed) = (1, eve_u.id + 1);
    if exists {
        let c = srv
            .admin
            .create_card(&AdminCreateCard {
                conversation_id: other.id,
                task: AssignTask {
                    title: "hidden".into(),
                    assignee_id: Some(bolt_u.id),
                    parent_id: None,
                    message_id: None,
                },
                creator_id: Some(bolt_u.id),
            })
            .await
            .unwrap();
        assert_eq!(c.id, card);
        assert_eq!(srv.user("zed", true).await.id, zed);
    }
    let (eve, bolt) = (srv.login(&eve_u).await, srv.login(&bolt_u).await);
    World {
        srv,
        eve,
        bolt,
        mine: mine.id,
        other: other.id,
        card,
        zed,
    }
}

enum Call {
    Get(String),
    Post(String, Value),
}

async fn call(w: &World, token: &str, c: &Call) -> Resp {
    match c {
        Call::Get(p) => w.srv.get(Some(token), p).await,
        Call::Post(p, b) => w.srv.post(Some(token), p, b.clone()).await,
    }
}

fn rows(w: &World) -> Vec<(String, Call)> {
    let task = |t, cid| fill_task(t, cid, w.card);
    let mut v = vec![
        (
            "assign to an unknown user / a non-member".to_string(),
            Call::Post(
                fill_task(routes::WORKROOM_TASKS, w.mine, ""),
                json!({"title": "t", "assignee_id": w.zed}),
            ),
        ),
        (
            "a sub-card under an invisible / a missing card".to_string(),
            Call::Post(
                fill_task(routes::WORKROOM_TASKS, w.mine, ""),
                json!({"title": "t", "parent_id": w.card}),
            ),
        ),
    ];
    for (path, cid) in [("real path", w.other), ("wrong path", w.mine)] {
        v.push((
            format!("another room's card under its {path}: read"),
            Call::Get(task(routes::WORKROOM_TASK, cid)),
        ));
        v.push((
            format!("another room's card under its {path}: claim"),
            Call::Post(
                task(routes::WORKROOM_TASK_PROGRESS, cid),
                json!({"claim": true}),
            ),
        ));
        v.push((
            format!("another room's card under its {path}: progress"),
            Call::Post(
                task(routes::WORKROOM_TASK_PROGRESS, cid),
                json!({"line": "x"}),
            ),
        ));
        v.push((
            format!("another room's card under its {path}: lease"),
            Call::Post(task(routes::WORKROOM_TASK_LEASE, cid), json!({})),
        ));
        v.push((
            format!("another room's card under its {path}: finish"),
            Call::Post(
                task(routes::WORKROOM_TASK_FINISH, cid),
                json!({"status": "done"}),
            ),
        ));
    }
    v
}

#[tokio::test]
async fn not_yours_and_not_there_get_one_answer() {
    let (there, gone) = (world(true).await, world(false).await);
    let (a, b) = (rows(&there), rows(&gone));
    let mut failed = vec![];
    for ((what, ca), (_, cb)) in a.iter().zip(b.iter()) {
        let (ra, rb) = (
            call(&there, &there.eve, ca).await,
            call(&gone, &gone.eve, cb).await,
        );
        assert!(ra.status >= 400, "{what}: refused ({})", ra.body);
        if (ra.status, &ra.body) != (rb.status, &rb.body) {
            failed.push(format!(
                "{what}: exists → {} {}; missing → {} {}",
                ra.status, ra.body, rb.status, rb.body
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Must not fire: whoever may see the card or is a member is served.
#[tokio::test]
async fn the_card_and_the_member_are_served_to_whoever_may_see_them() {
    let w = world(true).await;
    let r = w
        .srv
        .get(
            Some(&w.bolt),
            &fill_task(routes::WORKROOM_TASK, w.other, w.card),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = w
        .srv
        .post(
            Some(&w.bolt),
            &fill_task(routes::WORKROOM_TASKS, w.other, ""),
            json!({"title": "sub", "parent_id": w.card}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let bolt_id = w.zed - 2;
    let r = w
        .srv
        .post(
            Some(&w.eve),
            &fill_task(routes::WORKROOM_TASKS, w.mine, ""),
            json!({"title": "t", "assignee_id": bolt_id}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}
