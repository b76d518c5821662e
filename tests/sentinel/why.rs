//! `hoop why` end to end (issue 26): the real CLI driven by the scripted
//! agent, the reference backend, a 1:1 room and a multi-AI room; an
//! answered question, a message the agent passes, a message for another AI,
//! a mention in the multi-AI room, and a question that arrives while the
//! sentinel is down. `hoop why` tells each one's story from the home's
//! journal, and `--json` carries each event once. Also the journal side of
//! the reliability suite's per-message verdicts ([`assert_journal_agrees`]).

use std::collections::{BTreeMap, BTreeSet};

use hoop_api::admin::{CreateConversation, CreateUser};
use hoop_api::types::{Mention, Message};
use hoop_standin::Reply;
use hoop_standin::work::{PASS_WHY_CLOSING, answered_ids};

use crate::harness::*;

/// `hoop why --home bolt <args>`: exit code and stdout.
async fn why(w: &World, args: &[&str]) -> (i32, String) {
    let out = run_bounded(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(["why", "--home", HOME_NAME])
            .args(args)
            .env(hoop_core::home::ROOT_ENV, w.root.path())
            .env("HOOP_LOG", "warn"),
    )
    .await;
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Wait until `hoop why --message id` ends with `now` (the journal is
/// written behind the round), and return the story.
async fn story_until(w: &World, id: i64, now: &str) -> String {
    let arg = id.to_string();
    w.until(&format!("hoop why for #{id} says {now:?}"), || async {
        why(w, &["--message", &arg]).await.1.contains(now)
    })
    .await;
    why(w, &["--message", &arg]).await.1
}

/// Every journal line of the home, in order.
fn journal_lines(w: &World) -> Vec<serde_json::Value> {
    let dir = w.home.journal_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The reliability cross-check, per message id: every message the room
/// shows answered (an answer of the account names it) has exactly one
/// `answered` line in the journal, and no message has two.
pub fn assert_journal_agrees(w: &World, msgs: &[Message]) {
    let mut answered: BTreeMap<i64, usize> = BTreeMap::new();
    for l in journal_lines(w) {
        if l["ev"] == "answered" {
            *answered.entry(l["msg"].as_i64().unwrap()).or_default() += 1;
        }
    }
    let shown_answered: BTreeSet<i64> = msgs
        .iter()
        .filter(|m| m.sender_id == w.agent.id)
        .flat_map(|m| answered_ids(&m.body))
        .collect();
    for id in &shown_answered {
        assert_eq!(
            answered.get(id).copied().unwrap_or(0),
            1,
            "message {id} is answered in the room: one `answered` in the journal; journal counts {answered:?}"
        );
    }
    for (id, n) in &answered {
        assert_eq!(
            *n, 1,
            "message {id} has {n} `answered` lines in the journal"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_tells_each_message_its_story() {
    let w = World::new(Opts::default()).await;
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
    let one = w.room.id;
    let multi = w
        .admin
        .create_conversation(&CreateConversation {
            title: "standup".into(),
            is_workroom: false,
            member_ids: vec![w.human.id, w.agent.id, ai1.id],
        })
        .await
        .unwrap()
        .id;
    w.standin.set_default(Reply::Work);
    let mut d = w.spawn();
    d.ready().await;

    let question = post_in(&w, one, &w.human, "is the build green?", vec![]).await;
    let answered = story_until(&w, question.id, "now: answered by #").await;
    let thanks = post_in(&w, one, &w.human, "thanks, that's all", vec![]).await;
    let for_other = post_in(
        &w,
        multi,
        &w.human,
        "@ai1 can you look at the logs?",
        vec![Mention::User(ai1.id)],
    )
    .await;
    let mention = post_in(
        &w,
        multi,
        &w.human,
        "@bolt and the alerts?",
        vec![Mention::User(w.agent.id)],
    )
    .await;
    let passed = story_until(&w, thanks.id, "now: passed by the agent").await;
    let other = story_until(&w, for_other.id, "now: not this agent's").await;
    let mentioned = story_until(&w, mention.id, "now: answered by #").await;

    // A question while the sentinel is down.
    d.term();
    let while_down = post_in(&w, one, &w.human, "and the deploy?", vec![]).await;
    let mut d = w.spawn();
    d.ready().await;
    let down = story_until(&w, while_down.id, "now: answered by #").await;

    // What an operator reads (kept in the test's output).
    eprintln!("{answered}\n{passed}\n{other}\n{mentioned}\n{down}");
    // The words of each story.
    for (story, parts) in [
        (
            &answered,
            &[
                // The WebSocket, or the recheck of every room after it
                // connected when that round already found it.
                "seen: ",
                "work: a 1:1 room (this agent is its only AI)",
                "shown to the agent in the prompt of turn 1",
                "answered by #",
                "in turn 1",
                "the room's cursor moved past it",
                "after it arrived",
            ][..],
        ),
        (
            &passed,
            &[
                "work: a 1:1 room",
                &format!("now: passed by the agent: '{PASS_WHY_CLOSING}'"),
            ][..],
        ),
        (
            &other,
            &["now: not this agent's: a multi-AI room and no mention of @bolt"][..],
        ),
        (
            &mentioned,
            &["work: a multi-AI room, and it mentions this agent"][..],
        ),
        (
            &down,
            &[
                "seen: found by the first round after the sentinel started",
                "now: answered by #",
            ][..],
        ),
    ] {
        for p in parts {
            assert!(story.contains(p), "{p:?} missing from:\n{story}");
        }
    }
    // Nothing answered is marked in the room's listing; each message once.
    let (code, room) = why(&w, &["--room", &one.to_string(), "--since", "1h"]).await;
    assert_eq!(code, 0, "{room}");
    eprintln!("{room}");
    for id in [question.id, thanks.id, while_down.id] {
        assert_eq!(
            room.matches(&format!("#{id} ")).count(),
            1,
            "#{id} once:\n{room}"
        );
    }
    assert!(!room.lines().any(|l| l.starts_with('!')), "{room}");

    // --json: each event once.
    for id in [
        question.id,
        thanks.id,
        for_other.id,
        mention.id,
        while_down.id,
    ] {
        let (code, out) = why(&w, &["--message", &id.to_string(), "--json"]).await;
        assert_eq!(code, 0, "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let events = v["events"].as_array().unwrap();
        let distinct: BTreeSet<String> = events.iter().map(|e| e.to_string()).collect();
        assert_eq!(distinct.len(), events.len(), "#{id}: {out}");
        let seen = events.iter().filter(|e| e["ev"] == "seen").count();
        assert_eq!(seen, 1, "#{id} seen once: {out}");
        assert_eq!(v["settled"], true, "#{id}: {out}");
    }

    // A message the journal never saw: said so, and where to look next.
    let (code, out) = why(&w, &["--message", "999999"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("never saw it"), "{out}");
    assert!(out.contains("hoop status --home bolt"), "{out}");

    let mut all = w.messages().await;
    let mut m = {
        let mut v = w
            .agent_client
            .messages(multi, 50, None)
            .await
            .unwrap()
            .messages;
        v.reverse();
        v
    };
    all.append(&mut m);
    assert_journal_agrees(&w, &all);
    drop(d);
}

/// Messages that land during a turn and are answered in it (shown by `hoop
/// say`'s refusal and `hoop read`, never the turn's work): each has its one
/// `answered` line, and its story says how it was shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_answered_during_a_turn_are_journaled_once() {
    let w = World::new(Opts::default()).await;
    w.standin.set_default(Reply::Work);
    w.standin
        .push(Reply::Work.delayed(std::time::Duration::from_secs(3)));
    let mut d = w.spawn();
    d.ready().await;
    let before = w.standin.request_count();
    w.post("@bolt first question", false).await;
    w.until("the turn reached the model", || async {
        w.standin.request_count() > before
    })
    .await;
    let mut burst = vec![];
    for i in 0..5 {
        burst.push(w.post(&format!("burst {i}"), false).await);
    }
    w.until("every message answered", || async {
        every_message_answered_by(w.agent.id, &w.messages().await)
    })
    .await;
    w.until("the cursor at the newest message", || async {
        let newest = w.messages().await.last().map(|m| m.id);
        w.cursor() == newest && newest.is_some()
    })
    .await;
    let story = story_until(&w, burst[0].id, "now: answered by #").await;
    assert!(
        story.contains("shown to the agent by hoop say or hoop read during turn 1"),
        "{story}"
    );
    let msgs = w.messages().await;
    w.until("the journal holds every answer", || async {
        journal_lines(&w)
            .iter()
            .filter(|l| l["ev"] == "answered")
            .count()
            >= msgs.iter().filter(|m| m.sender_id == w.human.id).count()
    })
    .await;
    assert_journal_agrees(&w, &msgs);
    drop(d);
}
