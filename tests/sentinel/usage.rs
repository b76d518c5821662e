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
    until("the usage report is in flight (held)", || {
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
    until("the second answer", || async {
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
