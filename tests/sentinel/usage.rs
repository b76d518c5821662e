//! Usage as production keeps it: the sentinel reports the account's
//! cumulative totals (read from the agent's transcripts) and a card's cost
//! is its end snapshot minus its start snapshot, so every turn made while
//! the card was claimed counts, not just the last one.

use crate::harness::*;
use hoop_api::types::Card;
use hoop_standin::{Reply, Usage, UsageScript};

/// Every API response the stand-in sends carries these numbers.
const PER_RESPONSE: Usage = Usage {
    input_tokens: 1_000,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 20_000,
    output_tokens: 7,
};

/// The card's cost must be `n` responses' worth, number by number.
fn assert_cost(c: &Card, n: usize, when: &str) {
    let n = n as i64;
    let p = PER_RESPONSE;
    assert_eq!(
        c.tokens_in,
        Some(n * p.input_tokens as i64),
        "in, {when}: {c:?}"
    );
    assert_eq!(
        c.tokens_cached_in,
        Some(n * (p.cache_read_input_tokens + p.cache_creation_input_tokens) as i64),
        "cached in, {when}: {c:?}"
    );
    assert_eq!(
        c.tokens_out,
        Some(n * p.output_tokens as i64),
        "out, {when}: {c:?}"
    );
}

/// Model responses so far (a compaction summary would be one too, but none
/// happens here).
fn responses(w: &World) -> usize {
    w.standin.requests().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_on_one_card_give_it_both_turns_tokens() {
    let w = World::new(Opts::default()).await;
    w.standin.set_usage(UsageScript::Fixed(PER_RESPONSE));
    let card = w.claimed_card("two steps").await;
    let mut d = w.spawn();
    d.ready().await;

    w.standin
        .push(Reply::bash(w.say_cmd("step one done"), "ok"));
    w.post("@bolt step one", false).await;
    d.wait_log_count("usage reported", 1).await;
    let after_one = responses(&w);
    assert!(after_one > 0);
    assert_cost(
        &w.agent_client.card(w.room.id, card.id).await.unwrap(),
        after_one,
        "after turn 1",
    );

    w.standin
        .push(Reply::bash(w.say_cmd("step two done"), "ok"));
    w.post("@bolt step two", false).await;
    d.wait_log_count("usage reported", 2).await;
    let after_two = responses(&w);
    assert!(after_two > after_one, "turn 2 made no request");
    // Both turns: a per-turn report would leave only turn 2's share.
    assert_cost(
        &w.agent_client.card(w.room.id, card.id).await.unwrap(),
        after_two,
        "after turn 2",
    );
    assert!(d.term().success());
}

/// The cursor of a good turn is committed before the usage report: a
/// SIGTERM while the report is in flight (the daemon aborts its tasks)
/// must not lose the commit, and the next daemon must not run the turn
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_during_the_usage_report_keeps_the_turns_commit() {
    let w = World::new(Opts::default()).await;
    let stall = crate::stall::spawn(w.backend_addr, "POST", hoop_api::routes::USAGE).await;
    // The daemon reaches the backend only through the proxy.
    hoop_core::fsutil::write_json_atomic(
        &w.home.config_path(),
        &hoop_core::home::HomeConfig {
            base_url: stall.base_url(),
            email: w.agent.email.clone(),
            login_code: None,
        },
        Default::default(),
    )
    .unwrap();
    let mut d = w.spawn();
    d.ready().await;
    w.standin
        .push(Reply::bash(w.say_cmd("done, once"), "answered"));
    let asked = w.post("@bolt please answer once", false).await;
    w.until("the usage report is in flight (held)", || {
        let n = stall.seen.load(std::sync::atomic::Ordering::SeqCst);
        async move { n >= 1 }
    })
    .await;
    // Still inside the report: the commit must already be on disk.
    assert!(
        w.cursor().is_some_and(|c| c >= asked.id),
        "cursor {:?} not past {} while the usage report runs:\n{}",
        w.cursor(),
        asked.id,
        d.log_text()
    );
    assert!(d.term().success());
    assert!(w.cursor().is_some_and(|c| c >= asked.id));
    let requests = responses(&w);

    // The next daemon: nothing to do again.
    stall
        .holding
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let mut d2 = w.spawn();
    d2.ready().await;
    // A second question: its answer shows the new daemon's rounds ran.
    w.standin
        .push(Reply::bash(w.say_cmd("second answer"), "answered"));
    w.post("@bolt a second question", false).await;
    w.until("the second answer", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body.contains("second answer"))
    })
    .await;
    let once: Vec<_> = w
        .agent_messages()
        .await
        .into_iter()
        .filter(|m| m.body.contains("done, once"))
        .collect();
    assert_eq!(once.len(), 1, "answered twice: {once:?}");
    assert!(responses(&w) > requests);
    assert_eq!(
        d2.log_text().matches("🧠 turn started").count(),
        1,
        "only the second question ran a turn:\n{}",
        d2.log_text()
    );
    assert!(d2.term().success());
}

/// A turn that finishes card A and claims card B: the card tools' hook
/// (installed by `hoop hooks install`) posts the account's snapshot before
/// each call, so A costs exactly the response that finished it and B the
/// responses from its claim to its finish — number by number. Without the
/// hook A would cost nothing (its end snapshot would be the last report,
/// before the turn) and B would carry A's finishing work.
///
/// The account's transcripts share the agent's config dir with another
/// home's session and the operator's own: neither counts (the snapshot is
/// the account's, by its working directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_that_finishes_a_card_is_billed_to_that_card() {
    let w = World::new(Opts::default()).await;
    let claude_home = w.root.path().join("claude-home");
    // The hoop MCP server in the agent's user settings, with an MCP key of
    // the agent's own account.
    let key = w.admin.mint_mcp_key(w.agent.id).await.unwrap();
    std::fs::write(
        claude_home.join(".claude.json"),
        serde_json::json!({"mcpServers": {"hoop": {
            "type": "http",
            "url": format!("http://{}/mcp", w.backend_addr),
            "headers": {"Authorization": format!("Bearer {}", key.key)},
        }}})
        .to_string(),
    )
    .unwrap();
    // The hooks, as an operator installs them.
    let out = run_bounded(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(["hooks", "install", "--claude"])
            .env("HOME", &claude_home)
            .env_remove("CLAUDE_CONFIG_DIR"),
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let settings = std::fs::read_to_string(claude_home.join(".claude/settings.json")).unwrap();
    assert!(settings.contains("card-snapshot"), "{settings}");
    // Someone else's tokens in the same config dir.
    let foreign = |cwd: &str, id: &str| {
        format!(
            r#"{{"type":"assistant","timestamp":"2026-12-03T10:00:00Z","sessionId":"x","cwd":"{cwd}","requestId":"r-{id}","message":{{"id":"{id}","model":"claude-opus-4-8","usage":{{"input_tokens":900000,"cache_read_input_tokens":900000,"output_tokens":900000}}}}}}"#
        )
    };
    for (folder, cwd, id) in [
        ("-home-ops-project", "/home/ops/project", "op-1"),
        (
            "-other-home",
            &format!("{}/nova/work", w.root.path().display()),
            "nova-1",
        ),
    ] {
        let dir = claude_home.join(".claude/projects").join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("s.jsonl"), foreign(cwd, id) + "\n").unwrap();
    }

    let card_a = w.claimed_card("card A").await;
    let card_b = w
        .admin
        .create_card(&hoop_api::admin::AdminCreateCard {
            conversation_id: w.room.id,
            task: hoop_api::types::AssignTask {
                title: "card B".into(),
                assignee_id: Some(w.agent.id),
                ..Default::default()
            },
            creator_id: Some(w.human.id),
        })
        .await
        .unwrap();
    // Each response its own numbers, so a response billed to the wrong card
    // shows in every field.
    let u = |n: u64| Usage {
        input_tokens: 1_000 * n,
        cache_creation_input_tokens: 100 * n + 7,
        cache_read_input_tokens: 10_000 * n + 3,
        output_tokens: 10 * n + 1,
    };
    w.standin.set_usage(UsageScript::Fixed(u(9)));
    let finish = |id: i64| serde_json::json!({"task_id": id, "status": "done", "result": "done"});
    // Turn 1: finish A (response 1), claim B (2), answer (3 and its
    // follow-up, 9).
    w.standin
        .push(Reply::tool("mcp__hoop__work_task_finish", finish(card_a.id)).with_usage(u(1)));
    w.standin.push(
        Reply::tool(
            "mcp__hoop__work_task_take",
            serde_json::json!({"task_id": card_b.id}),
        )
        .with_usage(u(2)),
    );
    w.standin
        .push(Reply::bash(w.say_cmd("A is done, B is mine"), "answered").with_usage(u(3)));
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt finish A and take B", false).await;
    d.wait_log_count("usage reported", 1).await;
    let card = |id| w.agent_client.card(w.room.id, id);
    let a = card(card_a.id).await.unwrap();
    assert_eq!(a.status, hoop_api::types::CardStatus::Done, "{a:?}");
    assert_eq!(
        card(card_b.id).await.unwrap().status,
        hoop_api::types::CardStatus::Working
    );
    // Turn 2: finish B (response 4), answer (5 and its follow-up, 9).
    w.standin
        .push(Reply::tool("mcp__hoop__work_task_finish", finish(card_b.id)).with_usage(u(4)));
    w.standin
        .push(Reply::bash(w.say_cmd("B is done"), "answered").with_usage(u(5)));
    w.post("@bolt finish B", false).await;
    d.wait_log_count("usage reported", 2).await;
    let b = card(card_b.id).await.unwrap();
    assert_eq!(b.status, hoop_api::types::CardStatus::Done, "{b:?}");

    let cost = |parts: &[Usage]| {
        let sum = |f: fn(&Usage) -> u64| Some(parts.iter().map(f).sum::<u64>() as i64);
        (
            sum(|u| u.input_tokens),
            sum(|u| u.cache_read_input_tokens + u.cache_creation_input_tokens),
            sum(|u| u.output_tokens),
        )
    };
    let got = |c: &Card| (c.tokens_in, c.tokens_cached_in, c.tokens_out);
    let log = d.log_text();
    assert_eq!(got(&a), cost(&[u(1)]), "card A:\n{log}");
    // B: the rest of turn 1 after its claim (3 and its follow-up) and the
    // call that finished it (4).
    assert_eq!(got(&b), cost(&[u(3), u(9), u(4)]), "card B:\n{log}");
    // What the hook added to each card call, as the daemon measured it.
    for l in log
        .lines()
        .filter(|l| l.contains("card snapshot before a card call"))
    {
        eprintln!("{l}");
    }
    assert!(d.term().success());
}
