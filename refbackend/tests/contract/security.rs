//! The security table: each row is an actor, a request and the refusal the
//! server must give — and, where the same thing is legitimate for someone
//! else, that other request and its success, so a rule cannot pass by
//! refusing everyone. Every row was reproduced against the server before
//! its rule existed.

use hoop_api::admin::AdminCreateCard;
use hoop_api::routes::{self, admin as ra};
use hoop_api::types::{AssignTask, Card, codes};
use serde_json::{Value, json};

use crate::support::{Resp, Srv};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Actor {
    /// The operator (admin token).
    Operator,
    /// An agent account that owns nothing here (the attacker).
    Eve,
    /// The agent whose cards and rooms these are.
    Bolt,
    /// A human account (room member).
    Ann,
}

#[derive(Debug, Clone)]
enum Method {
    Get,
    Post(Value),
}

#[derive(Debug, Clone)]
struct Request {
    actor: Actor,
    method: Method,
    path: String,
}

#[derive(Debug)]
enum Expect {
    /// This status and error code.
    Refused(u16, &'static str),
    /// 200 with a list of cards none of which has one of these ids.
    Hides(Vec<i64>),
}

struct Row {
    what: &'static str,
    req: Request,
    expect: Expect,
    /// The same kind of request by someone entitled to it: must succeed
    /// (2xx), and for `Hides` rows must list every hidden id.
    yet: Option<Request>,
}

fn get(actor: Actor, path: impl Into<String>) -> Request {
    Request {
        actor,
        method: Method::Get,
        path: path.into(),
    }
}

fn post(actor: Actor, path: impl Into<String>, body: Value) -> Request {
    Request {
        actor,
        method: Method::Post(body),
        path: path.into(),
    }
}

struct Tokens {
    operator: String,
    eve: String,
    bolt: String,
    ann: String,
}

async fn send(srv: &Srv, t: &Tokens, r: &Request) -> Resp {
    let token = match r.actor {
        Actor::Operator => &t.operator,
        Actor::Eve => &t.eve,
        Actor::Bolt => &t.bolt,
        Actor::Ann => &t.ann,
    };
    match &r.method {
        Method::Get => srv.get(Some(token), &r.path).await,
        Method::Post(body) => srv.post(Some(token), &r.path, body.clone()).await,
    }
}

fn listed_ids(r: &Resp) -> Option<Vec<i64>> {
    r.body
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["id"].as_i64()).collect())
}

async fn operator_card(srv: &Srv, title: &str, assignee: Option<i64>, room: i64) -> Card {
    srv.admin
        .create_card(&AdminCreateCard {
            conversation_id: room,
            task: AssignTask {
                title: title.into(),
                assignee_id: assignee,
                ..AssignTask::default()
            },
            creator_id: None,
        })
        .await
        .expect("operator card")
}

#[tokio::test]
async fn security_table() {
    let srv = Srv::start().await;
    let ann = srv.user("ann", false).await;
    let hugh = srv.user("hugh", false).await;
    let bolt = srv.user("bolt", true).await;
    let eve = srv.user("eve", true).await;
    let zed = srv.user("zed", true).await;
    // Bolt's room (eve is not in it) and eve's own room (with a human).
    let room = srv.room("ops", &[&ann, &bolt], true).await;
    let eves = srv.room("eve's", &[&eve, &hugh, &zed], true).await;
    let t = Tokens {
        operator: srv.run.admin_token.clone(),
        eve: srv.login(&eve).await,
        bolt: srv.login(&bolt).await,
        ann: srv.login(&ann).await,
    };

    // Bolt's work: a card in his room, one he assigned himself, a sub-card,
    // and unassigned cards in his room.
    let assign = |cid: i64| routes::fill_task(routes::WORKROOM_TASKS, cid, "");
    let in_room = operator_card(&srv, "in the room", Some(bolt.id), room.id).await;
    let own = srv
        .post(Some(&t.bolt), &assign(room.id), json!({"title": "own"}))
        .await;
    assert_eq!(own.status, 201, "{}", own.body);
    let own = own.body["id"].as_i64().unwrap();
    let sub = srv
        .post(
            Some(&t.bolt),
            &assign(room.id),
            json!({"title": "sub", "parent_id": in_room.id, "assignee_id": bolt.id}),
        )
        .await;
    assert_eq!(sub.status, 201, "{}", sub.body);
    let sub = sub.body["id"].as_i64().unwrap();
    let open = operator_card(&srv, "up for grabs", None, room.id).await;
    let eves_open = operator_card(&srv, "eve's to take", None, eves.id).await;
    let grab = operator_card(&srv, "for an agent of the room", None, room.id).await;
    let bolts_cards = vec![in_room.id, own, sub, open.id, grab.id];

    // Ann's reinforcement account (applied for and approved).
    let applied = srv
        .post(
            Some(&t.ann),
            routes::REINFORCE_APPLICATIONS,
            json!({"name": "nova"}),
        )
        .await;
    assert_eq!(applied.status, 201, "{}", applied.body);
    let nova = srv
        .admin
        .approve_application(applied.body["id"].as_i64().unwrap())
        .await
        .unwrap()
        .agent;
    let nova_key = routes::fill(routes::REINFORCE_AGENT_KEY, nova.id);

    let card = |id: i64| routes::fill_task(routes::WORKROOM_TASK, room.id, id);
    let list = |q: &str| format!("{}?{q}", routes::TASKS);
    let rows = vec![
        Row {
            what: "read another's card in a room one is not in",
            req: get(Actor::Eve, card(in_room.id)),
            expect: Expect::Refused(404, codes::NOT_FOUND),
            yet: Some(get(Actor::Ann, card(in_room.id))),
        },
        Row {
            what: "read another's card under a room of one's own",
            req: get(
                Actor::Eve,
                routes::fill_task(routes::WORKROOM_TASK, eves.id, own),
            ),
            expect: Expect::Refused(404, codes::NOT_FOUND),
            yet: Some(get(Actor::Bolt, card(own))),
        },
        Row {
            what: "list every card (assignee=any)",
            req: get(Actor::Eve, list("assignee=any")),
            expect: Expect::Hides(bolts_cards.clone()),
            yet: Some(get(Actor::Bolt, list("assignee=any"))),
        },
        Row {
            what: "list another's cards by their id",
            req: get(Actor::Eve, list(&format!("assignee={}", bolt.id))),
            expect: Expect::Hides(vec![in_room.id, sub]),
            yet: Some(get(Actor::Ann, list(&format!("assignee={}", bolt.id)))),
        },
        Row {
            what: "list the sub-cards of another's card",
            req: get(
                Actor::Eve,
                list(&format!("assignee=any&parent_id={}", in_room.id)),
            ),
            expect: Expect::Hides(vec![sub]),
            yet: Some(get(
                Actor::Bolt,
                list(&format!("assignee=any&parent_id={}", in_room.id)),
            )),
        },
        Row {
            what: "add a sub-card under another's card",
            req: post(
                Actor::Eve,
                assign(eves.id),
                json!({"title": "filler", "parent_id": in_room.id}),
            ),
            expect: Expect::Refused(404, codes::NOT_FOUND),
            yet: Some(post(
                Actor::Bolt,
                assign(room.id),
                json!({"title": "mine", "parent_id": in_room.id}),
            )),
        },
        Row {
            what: "create a card in a room one is not in",
            req: post(Actor::Eve, assign(room.id), json!({"title": "x"})),
            expect: Expect::Refused(403, codes::NOT_MEMBER),
            yet: Some(post(Actor::Ann, assign(room.id), json!({"title": "x"}))),
        },
        Row {
            what: "assign a card to a human of one's room",
            req: post(
                Actor::Eve,
                assign(eves.id),
                json!({"title": "x", "assignee_id": hugh.id}),
            ),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(
                Actor::Eve,
                assign(eves.id),
                json!({"title": "x", "assignee_id": zed.id}),
            )),
        },
        Row {
            what: "assign a card to an agent who is not in the card's room",
            req: post(
                Actor::Eve,
                assign(eves.id),
                json!({"title": "x", "assignee_id": bolt.id}),
            ),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: None,
        },
        Row {
            what: "the operator assigns a card to a human",
            req: post(
                Actor::Operator,
                ra::CARDS,
                json!({"title": "x", "assignee_id": ann.id, "conversation_id": room.id}),
            ),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(
                Actor::Operator,
                ra::CARDS,
                json!({"title": "x", "assignee_id": bolt.id, "conversation_id": room.id}),
            )),
        },
        Row {
            what: "claim an unassigned card of a room one is not in",
            req: post(
                Actor::Eve,
                routes::fill_task(routes::WORKROOM_TASK_PROGRESS, room.id, open.id),
                json!({"claim": true}),
            ),
            expect: Expect::Refused(404, codes::NOT_FOUND),
            yet: Some(post(
                Actor::Eve,
                routes::fill_task(routes::WORKROOM_TASK_PROGRESS, eves.id, eves_open.id),
                json!({"claim": true}),
            )),
        },
        Row {
            what: "a human claims an unassigned card of their room",
            req: post(
                Actor::Ann,
                routes::fill_task(routes::WORKROOM_TASK_PROGRESS, room.id, grab.id),
                json!({"claim": true}),
            ),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(
                Actor::Bolt,
                routes::fill_task(routes::WORKROOM_TASK_PROGRESS, room.id, grab.id),
                json!({"claim": true}),
            )),
        },
        Row {
            what: "mint an MCP key for a human",
            req: post(Actor::Operator, ra::MCP_KEYS, json!({"user_id": ann.id})),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(
                Actor::Operator,
                ra::MCP_KEYS,
                json!({"user_id": bolt.id}),
            )),
        },
        Row {
            what: "a stranger rotates another's reinforcement key",
            req: post(Actor::Eve, nova_key.clone(), json!({})),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(Actor::Ann, nova_key.clone(), json!({}))),
        },
        Row {
            what: "a human gets a key for an agent account nobody owns",
            req: post(
                Actor::Ann,
                routes::fill(routes::REINFORCE_AGENT_KEY, bolt.id),
                json!({}),
            ),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: None,
        },
        Row {
            what: "a human beats",
            req: post(Actor::Ann, routes::HEARTBEAT, json!({})),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(Actor::Bolt, routes::HEARTBEAT, json!({}))),
        },
        Row {
            what: "a beat names a room one is not in",
            req: post(
                Actor::Eve,
                routes::HEARTBEAT,
                json!({"conversation_id": room.id}),
            ),
            expect: Expect::Refused(403, codes::NOT_MEMBER),
            yet: Some(post(
                Actor::Bolt,
                routes::HEARTBEAT,
                json!({"conversation_id": room.id}),
            )),
        },
        Row {
            what: "a human reports usage",
            req: post(
                Actor::Ann,
                routes::USAGE,
                json!({"tokens_in": 1, "tokens_cached_in": 1, "tokens_out": 1}),
            ),
            expect: Expect::Refused(403, codes::FORBIDDEN),
            yet: Some(post(
                Actor::Bolt,
                routes::USAGE,
                json!({"tokens_in": 1, "tokens_cached_in": 1, "tokens_out": 1}),
            )),
        },
        Row {
            what: "the clock is moved by i64::MAX",
            req: post(
                Actor::Operator,
                ra::CLOCK_ADVANCE,
                json!({"secs": i64::MAX}),
            ),
            expect: Expect::Refused(400, codes::BAD_REQUEST),
            yet: Some(post(Actor::Operator, ra::CLOCK_ADVANCE, json!({"secs": 1}))),
        },
    ];

    // Every row is checked; the failures are reported together.
    let mut failures = Vec::new();
    for row in &rows {
        let r = send(&srv, &t, &row.req).await;
        let ok = match &row.expect {
            Expect::Refused(status, code) => r.status == *status && r.code() == *code,
            Expect::Hides(ids) => {
                r.status == 200
                    && listed_ids(&r).is_some_and(|got| ids.iter().all(|id| !got.contains(id)))
            }
        };
        if !ok {
            failures.push(format!(
                "{}: {:?} answered {} {} (wanted {:?})",
                row.what, row.req.actor, r.status, r.body, row.expect
            ));
        }
        if let Some(yet) = &row.yet {
            let r = send(&srv, &t, yet).await;
            let ok = (200..300).contains(&r.status)
                && match &row.expect {
                    Expect::Hides(ids) => {
                        listed_ids(&r).is_some_and(|got| ids.iter().all(|id| got.contains(id)))
                    }
                    Expect::Refused(..) => true,
                };
            if !ok {
                failures.push(format!(
                    "{} (the entitled request by {:?}): {} {}",
                    row.what, yet.actor, r.status, r.body
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    // The clock row moved nothing: time is still now, not wrapped.
    let now = srv.run.clock().now();
    assert!(
        now > 0 && now < hoop_refbackend::constants::CLOCK_MAX_UNIX,
        "{now}"
    );
}

/// Reported totals of `i64::MAX`, twice: the upsert keeps the number as it
/// is (no sum), and every card route — of this account and of any other —
/// still answers, in memory and after a restart on the same database.
#[tokio::test]
async fn usage_at_i64_max_breaks_no_card_route_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("backend.sqlite");
    let cfg = || hoop_refbackend::Config {
        db: Some(db.clone()),
        ..Default::default()
    };
    let srv = Srv::start_with(cfg()).await;
    let bolt = srv.user("bolt", true).await;
    let zed = srv.user("zed", true).await;
    let room = srv.room("ops", &[&bolt, &zed], true).await;
    let mine = operator_card(&srv, "mine", Some(bolt.id), room.id).await;
    let theirs = operator_card(&srv, "theirs", Some(zed.id), room.id).await;
    let tb = srv.login(&bolt).await;
    let claimed = srv
        .post(
            Some(&tb),
            &routes::fill_task(routes::WORKROOM_TASK_PROGRESS, room.id, mine.id),
            json!({"claim": true}),
        )
        .await;
    assert_eq!(claimed.status, 200, "{}", claimed.body);
    for _ in 0..2 {
        let r = srv
            .post(
                Some(&tb),
                routes::USAGE,
                json!({"card_id": mine.id, "tokens_in": i64::MAX,
                       "tokens_cached_in": i64::MAX, "tokens_out": i64::MAX}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["tokens_in"], json!(i64::MAX), "kept, not summed");
    }
    {
        let tz = srv.login(&zed).await;
        let tb = srv.login(&bolt).await;
        let paths = [
            (tz.clone(), routes::TASKS.to_string()),
            (tz.clone(), format!("{}?assignee=any", routes::TASKS)),
            (
                tz.clone(),
                routes::fill_task(routes::WORKROOM_TASK, room.id, theirs.id),
            ),
            (
                tz.clone(),
                routes::fill_task(routes::WORKROOM_TASK, room.id, mine.id),
            ),
            (
                tb.clone(),
                routes::fill_task(routes::WORKROOM_TASK, room.id, mine.id),
            ),
            (tb.clone(), format!("{}?assignee=any", routes::TASKS)),
        ];
        for (token, path) in &paths {
            let r = srv.get(Some(token), path).await;
            assert_eq!(r.status, 200, "{path}: {}", r.body);
        }
        let r = srv
            .post(
                Some(&tz),
                &routes::fill_task(routes::WORKROOM_TASK_PROGRESS, room.id, theirs.id),
                json!({"claim": true}),
            )
            .await;
        assert_eq!(r.status, 200, "another's claim: {}", r.body);
    }
    srv.run.shutdown().await;
    // The same database, a new server.
    let srv = Srv::start_with(cfg()).await;
    let tb = srv.login(&bolt).await;
    let r = srv
        .get(
            Some(&tb),
            &routes::fill_task(routes::WORKROOM_TASK, room.id, mine.id),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["tokens_in"],
        json!(null),
        "claimed before any report"
    );
    let r = srv.get(Some(&tb), routes::TASKS).await;
    assert_eq!(r.status, 200, "{}", r.body);
}
