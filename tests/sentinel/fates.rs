//! What counts as handled, end to end (issue 18, "Done when"): the real
//! CLI driven by the scripted agent, the reference backend, three rooms at
//! once, two SIGKILLs of the sentinel, and per message id: answered exactly
//! once or passed exactly once, no failure note anywhere, and no room ever
//! waiting on another's backoff (the failure backoff here is an hour: any
//! room held by it would time the test out).

use std::collections::BTreeMap;
use std::time::Duration;

use hoop_api::admin::{CreateConversation, CreateUser};
use hoop_api::types::{ConversationId, Mention, Message};
use hoop_standin::Reply;
use hoop_standin::work::{answered_ids, passed_ids};

use crate::harness::*;

/// What the --anyway send says.
const ANYWAY_TEXT: &str = "status: I am on it";

async fn room_messages(w: &World, room: ConversationId) -> Vec<Message> {
    let mut v = w
        .agent_client
        .messages(room, 50, None)
        .await
        .unwrap()
        .messages;
    v.reverse();
    v
}

fn cursor_of(w: &World, room: ConversationId) -> Option<i64> {
    let text = std::fs::read_to_string(w.home.cursors_path()).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v[room.to_string()].as_i64()
}

/// How many `hoop pass` commands the agent ran naming each id (each tool
/// call once, however many later requests repeat it).
fn passes_by_id(w: &World) -> BTreeMap<i64, usize> {
    let mut calls: BTreeMap<String, String> = BTreeMap::new();
    for r in w.standin.requests() {
        for m in r.messages() {
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_use"
                    && let (Some(id), Some(cmd)) =
                        (b["id"].as_str(), b["input"]["command"].as_str())
                {
                    calls.insert(id.to_string(), cmd.to_string());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for cmd in calls.values() {
        for id in passed_ids(cmd) {
            *out.entry(id).or_default() += 1;
        }
    }
    out
}

/// How many of the agent's messages name each id as answered.
fn answers_by_id(agent: i64, msgs: &[Message]) -> BTreeMap<i64, usize> {
    let mut out = BTreeMap::new();
    for m in msgs.iter().filter(|m| m.sender_id == agent) {
        for id in answered_ids(&m.body) {
            *out.entry(id).or_default() += 1;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_rooms_two_kills_every_message_answered_or_passed_once() {
    let w = World::new(Opts {
        timings: serde_json::json!({
            "debounce_ms": 300,
            "alarm_ms": 3_600_000,
            "turn_lock_retry_ms": 1_000,
            // Any room held by a backoff would hold this test past its bound.
            "failure_backoff_ms": [3_600_000, 3_600_000, 3_600_000],
            "ws_backoff_start_ms": 200,
            "ws_backoff_max_ms": 1_000,
        }),
        ..Opts::default()
    })
    .await;
    let ai1 = w
        .admin
        .create_user(&CreateUser {
            email: "ai1@example.com".into(),
            username: "ai1".into(),
            nickname: None,
            is_agent: true,
        })
        .await
        .unwrap();
    let dm = |title: &str, members: Vec<i64>| {
        let w = &w;
        let title = title.to_string();
        async move {
            w.admin
                .create_conversation(&CreateConversation {
                    title,
                    is_workroom: false,
                    member_ids: members,
                })
                .await
                .unwrap()
                .id
        }
    };
    let a = w.room.id;
    let b = dm("evening", vec![w.human.id, w.agent.id]).await;
    let c = dm("standup", vec![w.human.id, w.agent.id, ai1.id]).await;
    w.standin.set_default(Reply::Work);
    // The first turn's model answer is slow: the burst lands during it, and
    // the first SIGKILL comes before it answers anything.
    w.standin.push(Reply::Work.delayed(Duration::from_secs(60)));
    let mut d = w.spawn();
    d.ready().await;

    // Three rooms at once.
    let before = w.standin.request_count();
    let urgent = post_in(
        &w,
        a,
        &w.human,
        "⚠️ prod is down, @bolt please look now",
        vec![],
    )
    .await;
    let closing = post_in(&w, b, &w.human, "thanks, that's all for today", vec![]).await;
    let everyone = post_in(
        &w,
        c,
        &w.human,
        "@everyone standup in 5",
        vec![Mention::EVERYONE],
    )
    .await;
    // Another agent's failure note that even mentions the account: not its to answer.
    let agent_note = post_in(
        &w,
        c,
        &ai1,
        "⚠️ this round failed; I am still online @bolt",
        vec![Mention::User(w.agent.id)],
    )
    .await;
    w.until("the first turn reached the model", || async {
        w.standin.request_count() > before
    })
    .await;
    let mut burst = vec![];
    for i in 0..20 {
        burst.push(post_in(&w, a, &w.human, &format!("burst {i}"), vec![]).await);
    }
    // SIGKILL 1: in the middle of the turn, before the model answered.
    d.kill9();
    let mut d = w.spawn();
    d.ready().await;
    let a_people: Vec<i64> = std::iter::once(urgent.id)
        .chain(burst.iter().map(|m| m.id))
        .collect();
    w.until("room a answered, b and c passed", || async {
        let answered = answers_by_id(w.agent.id, &room_messages(&w, a).await);
        a_people.iter().all(|id| answered.contains_key(id))
            && cursor_of(&w, b) >= Some(closing.id)
            && cursor_of(&w, c) >= Some(agent_note.id)
    })
    .await;

    // SIGKILL 2, then three questions while the daemon is down and an
    // --anyway send over them: they were never printed, so they stay work.
    d.kill9();
    let mut later = vec![];
    for q in ["one more: the logs?", "and the alerts?", "who is on call?"] {
        later.push(post_in(&w, b, &w.human, q, vec![]).await);
    }
    let anyway = run_bounded(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args([
                "say",
                "--home",
                HOME_NAME,
                "--room",
                &b.to_string(),
                "--anyway",
                ANYWAY_TEXT,
            ])
            .env(hoop_core::home::ROOT_ENV, w.root.path())
            .env("HOOP_LOG", "warn"),
    )
    .await;
    assert!(
        anyway.status.success(),
        "{}",
        String::from_utf8_lossy(&anyway.stderr)
    );
    let mut d = w.spawn();
    d.ready().await;
    w.until("the questions under the --anyway send answered", || async {
        let answered = answers_by_id(w.agent.id, &room_messages(&w, b).await);
        later.iter().all(|m| answered.contains_key(&m.id))
    })
    .await;
    let newest_b = room_messages(&w, b).await.last().unwrap().id;
    w.until("b's cursor at its newest", || async {
        cursor_of(&w, b) == Some(newest_b)
    })
    .await;

    // Per message id.
    let passes = passes_by_id(&w);
    let (ma, mb, mc) = (
        room_messages(&w, a).await,
        room_messages(&w, b).await,
        room_messages(&w, c).await,
    );
    let answered: BTreeMap<i64, usize> = [&ma, &mb, &mc]
        .iter()
        .flat_map(|msgs| answers_by_id(w.agent.id, msgs))
        .collect();
    let answers_of = |id: i64| answered.get(&id).copied().unwrap_or(0);
    let passes_of = |id: i64| passes.get(&id).copied().unwrap_or(0);
    for id in a_people.iter().chain(later.iter().map(|m| &m.id)) {
        assert_eq!(
            (answers_of(*id), passes_of(*id)),
            (1, 0),
            "message {id}: answered exactly once, never passed\nroom a: {ma:#?}\nroom b: {mb:#?}"
        );
    }
    for id in [closing.id, everyone.id] {
        assert_eq!(
            (answers_of(id), passes_of(id)),
            (0, 1),
            "message {id}: passed exactly once, never answered\nroom b: {mb:#?}\nroom c: {mc:#?}"
        );
    }
    assert_eq!(
        (answers_of(agent_note.id), passes_of(agent_note.id)),
        (0, 0),
        "another agent's failure note is not the account's"
    );
    assert!(
        !mc.iter().any(|m| m.sender_id == w.agent.id),
        "nothing posted in the multi-AI room (no 'not for me'): {mc:#?}"
    );
    // No note in any room: nothing failed, and silence is not a failure.
    // Everything the account posted is an answer or the --anyway send.
    for (name, msgs) in [("a", &ma), ("b", &mb), ("c", &mc)] {
        for m in msgs.iter().filter(|m| m.sender_id == w.agent.id) {
            assert!(
                m.body.starts_with("answer to ") || m.body == ANYWAY_TEXT,
                "room {name}: the account posted {:?}: {msgs:#?}",
                m.body
            );
        }
    }
    let logs = w.all_logs();
    assert!(!logs.contains("every room waits"), "{logs}");
    assert!(
        !logs.contains("this room waits out its own backoff"),
        "{logs}"
    );
    assert!(!logs.contains("panicked"), "{logs}");
}

/// "Shown" is recorded only when the prompt reaches a running agent: a
/// turn whose agent cannot even start moves no say watermark (before, it
/// moved before the turn, so a later reply would have counted the message
/// as handled though no model ever read it). A turn that does reach the
/// agent moves it to what the prompt listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_never_starts_shows_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let w = World::new(Opts {
        claude_bin: Some(dir.path().join("no-such-claude")),
        ..Opts::default()
    })
    .await;
    let watermark = || -> Option<i64> {
        let text = std::fs::read_to_string(w.home.say_seen_path()).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v[w.room.id.to_string()].as_i64()
    };
    let mut d = w.spawn();
    d.ready().await;
    let asked = w.post("@bolt are you there?", false).await;
    d.wait_log("🧠 turn finished").await;
    assert!(d.log_text().contains("class=Failed"), "{}", d.log_text());
    assert_eq!(watermark(), None, "nothing was shown: no agent ever ran");
    assert!(!d.log_text().contains("👀 shown"), "{}", d.log_text());
    assert!(w.cursor() < Some(asked.id));
}
