//! The sentinel's driver of the real `claude` CLI, pointed at the model-API
//! stand-in on loopback. Every test runs the real binary (HOOP_CLAUDE_BIN;
//! the suite fails loudly without it) except the garbage-output and crash
//! cases, which the real CLI cannot produce and which use a tiny fake
//! `claude` script (each such test says so).

mod rig;

use std::time::Duration;

use hoop_sentinel::driver::{Outcome, Permissions};
use hoop_sentinel::switches;
use hoop_standin::{Reply, Usage, UsageScript};
use rig::Rig;

const PREAMBLE: &str = "PREAMBLE-MARKER: you are the hoop sentinel of this home.";

fn msg(s: &str) -> String {
    format!("📬 本轮指令\n{s}")
}

#[tokio::test]
async fn two_turns_share_one_persistent_process() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    let r1 = d
        .run_turn(PREAMBLE, &msg("first turn: remember PINEAPPLE"))
        .await;
    assert_eq!(r1.outcome, Outcome::Ok, "{r1:?}");
    let pid = d
        .pid()
        .expect("a persistent process stays up after the turn");
    let r2 = d.run_turn(PREAMBLE, &msg("second turn: which word?")).await;
    assert_eq!(r2.outcome, Outcome::Ok, "{r2:?}");
    assert_eq!(d.spawns(), 1, "both turns ran in one process");
    assert_eq!(d.pid(), Some(pid));
    assert_eq!((r1.spawned, r2.spawned), (1, 0));
    let reqs = rig.standin.requests();
    assert_eq!(reqs.len(), 2);
    // The second request carries the first turn, and the preamble sits at
    // the end of the third system block.
    assert!(reqs[1].messages_contain("remember PINEAPPLE"));
    assert!(reqs[1].last_user_text().contains("which word?"));
    let system = reqs[1].system_blocks();
    assert_eq!(system.len(), 3, "{system:?}");
    assert!(
        system[2].ends_with(PREAMBLE),
        "{:?}",
        &system[2][system[2].len().saturating_sub(200)..]
    );
    // The session is recorded and is the one the CLI used.
    let sid = d.session_id().expect("session.id written");
    assert_eq!(r1.session_id.as_deref(), Some(sid.as_str()));
    assert_eq!(r2.session_id.as_deref(), Some(sid.as_str()));
    assert_eq!(
        reqs[0].header("x-claude-code-session-id"),
        Some(sid.as_str())
    );
    assert_eq!(
        r2.text.as_deref(),
        Some("reply #2 (request carried 4 messages)")
    );
    d.stop().await;
    assert!(!d.is_hot());
    rig.done().await;
}

#[tokio::test]
async fn per_turn_mode_spawns_one_process_per_turn_and_resumes() {
    let rig = Rig::new().await;
    rig.switch(switches::PERSIST, "off\n");
    let mut d = rig.driver();
    let r1 = d.run_turn(PREAMBLE, &msg("first: remember MANGO")).await;
    assert_eq!(r1.outcome, Outcome::Ok, "{r1:?}");
    assert!(!d.is_hot(), "no process outlives a per-turn turn");
    let r2 = d.run_turn(PREAMBLE, &msg("second: which fruit?")).await;
    assert_eq!(r2.outcome, Outcome::Ok, "{r2:?}");
    assert_eq!(d.spawns(), 2);
    assert_eq!(r2.exit.map(|e| e.code()), Some(0));
    let reqs = rig.standin.requests();
    assert!(
        reqs[1].messages_contain("remember MANGO"),
        "--resume carried the first turn"
    );
    assert_eq!(r1.session_id, r2.session_id);
    // Per-turn mode asks for the 5-minute cache by default.
    assert!(
        reqs.iter()
            .all(|r| r.cache_controls().iter().all(|c| c.get("ttl").is_none()))
    );
    rig.done().await;
}

#[tokio::test]
async fn persistent_mode_asks_for_the_one_hour_cache_and_the_switch_is_read_per_turn() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    assert_eq!(d.run_turn(PREAMBLE, &msg("one")).await.outcome, Outcome::Ok);
    let first = rig.standin.requests();
    assert!(!first[0].cache_controls().is_empty());
    assert!(
        first[0].cache_controls().iter().all(|c| c["ttl"] == "1h"),
        "{:?}",
        first[0].cache_controls()
    );
    // Flip cache_ttl: the next turn restarts the process with the new env.
    rig.switch(switches::CACHE_TTL, "5m");
    assert_eq!(d.run_turn(PREAMBLE, &msg("two")).await.outcome, Outcome::Ok);
    assert_eq!(
        d.spawns(),
        2,
        "an env-affecting switch restarts the process at the turn boundary"
    );
    let reqs = rig.standin.requests();
    assert!(
        reqs[1]
            .cache_controls()
            .iter()
            .all(|c| c.get("ttl").is_none())
    );
    assert!(
        reqs[1].messages_contain("one"),
        "the restart resumed the same session"
    );
    // persist off → this turn runs in its own process and none stays up.
    rig.switch(switches::PERSIST, "off");
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("three")).await.outcome,
        Outcome::Ok
    );
    assert!(!d.is_hot());
    assert_eq!(d.spawns(), 3);
    // persist back on → a persistent process again.
    std::fs::remove_file(rig.home.switch_path(switches::PERSIST)).unwrap();
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("four")).await.outcome,
        Outcome::Ok
    );
    assert!(d.is_hot());
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("five")).await.outcome,
        Outcome::Ok
    );
    assert_eq!(d.spawns(), 4);
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn a_changed_preamble_restarts_the_process_an_unchanged_one_does_not() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    for _ in 0..2 {
        assert_eq!(
            d.run_turn(PREAMBLE, &msg("same")).await.outcome,
            Outcome::Ok
        );
    }
    assert_eq!(d.spawns(), 1);
    assert_eq!(
        d.run_turn("OTHER-PREAMBLE", &msg("changed")).await.outcome,
        Outcome::Ok
    );
    assert_eq!(d.spawns(), 2);
    let reqs = rig.standin.requests();
    assert!(reqs[2].system_blocks()[2].ends_with("OTHER-PREAMBLE"));
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn api_errors_are_judged_by_is_error_and_only_auth_is_death() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    rig.standin.push(Reply::auth_error());
    rig.standin.push(Reply::rate_limited(None));
    rig.standin.push(Reply::overloaded());
    rig.standin.push(Reply::server_error());
    let r = d.run_turn(PREAMBLE, &msg("a")).await;
    assert!(matches!(r.outcome, Outcome::AuthDead { .. }), "401: {r:?}");
    assert!(r.text.as_deref().unwrap_or("").contains("Invalid API key"));
    assert_eq!(
        r.usage, None,
        "an error result's zeros are not a measurement"
    );
    assert_eq!(r.tokens.tokens_in, None);
    for name in ["429", "529", "500"] {
        let r = d.run_turn(PREAMBLE, &msg(name)).await;
        assert!(matches!(r.outcome, Outcome::Failed { .. }), "{name}: {r:?}");
    }
    // The process survived every error turn (the CLI ends the turn, not itself).
    assert_eq!(d.spawns(), 1);
    let ok = d.run_turn(PREAMBLE, &msg("fine now")).await;
    assert_eq!(ok.outcome, Outcome::Ok);
    assert_eq!(
        rig.standin.request_count(),
        5,
        "CLAUDE_CODE_MAX_RETRIES=0: one request per turn"
    );
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn prompt_too_long_retires_the_session_mints_a_fresh_one_and_retries() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    rig.standin.push(Reply::prompt_too_long());
    rig.standin.push(Reply::text("OK"));
    rig.standin
        .push(Reply::text("answered on the fresh session"));
    let r = d.run_turn(PREAMBLE, &msg("big question")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert_eq!(r.text.as_deref(), Some("answered on the fresh session"));
    let blown = r.blown_session.clone().expect("old id retired");
    assert!(
        blown
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("session.id.blown-")
    );
    let old = std::fs::read_to_string(&blown).unwrap().trim().to_string();
    let new = d.session_id().unwrap();
    assert_ne!(old, new);
    assert_eq!(r.session_id.as_deref(), Some(new.as_str()));
    let reqs = rig.standin.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[1].body["model"].as_str().unwrap().contains("haiku"),
        "minted on the small model"
    );
    assert!(
        !reqs[2].body["model"].as_str().unwrap().contains("haiku"),
        "the turn runs on the normal model"
    );
    assert_eq!(
        reqs[2].header("x-claude-code-session-id"),
        Some(new.as_str())
    );
    assert!(reqs[2].last_user_text().contains("big question"));
    assert_eq!(r.spawned, 3, "turn, mint, retried turn");
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn an_unknown_session_is_replaced_and_the_turn_retried() {
    let rig = Rig::new().await;
    let d0 = rig.driver();
    // A recorded id whose transcript file exists (so the driver resumes it)
    // but holds no conversation: the CLI says "No conversation found".
    let ghost = "33333333-2222-4333-8444-555555555555";
    std::fs::write(rig.home.session_id_path(), ghost).unwrap();
    let t = d0.transcript_path(ghost).unwrap();
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::write(&t, "").unwrap();
    let mut d = rig.driver();
    let r = d.run_turn(PREAMBLE, &msg("hello")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert!(r.blown_session.is_some());
    assert_ne!(d.session_id().as_deref(), Some(ghost));
    // No request was made for the ghost: mint + the retried turn.
    assert_eq!(rig.standin.request_count(), 2);
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn a_usage_limit_is_neither_death_nor_failure() {
    let rig = Rig::new().await;
    let mut cfg = rig.config();
    // The limit texts only appear for subscription logins: a (fake) OAuth
    // token instead of an API key.
    cfg.env.retain(|(k, _)| k != "ANTHROPIC_API_KEY");
    cfg.env
        .push(("CLAUDE_CODE_OAUTH_TOKEN".into(), "sk-ant-oat01-test".into()));
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    rig.standin.push(Reply::usage_limit(4_102_444_800));
    let r = d.run_turn(PREAMBLE, &msg("hello")).await;
    match &r.outcome {
        Outcome::UsageLimit { text } => assert!(text.contains("limit"), "{text}"),
        other => panic!("expected a usage limit, got {other:?}"),
    }
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn a_timed_out_turn_is_a_timeout_and_the_process_is_gone() {
    let rig = Rig::new().await;
    let mut cfg = rig.config();
    // The bound covers a whole turn, process start included: the turns
    // around the hung one start a process each and must fit in it on a
    // loaded machine, so it is not cut fine.
    cfg.turn_timeout = Duration::from_secs(12);
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    // Warm up first so the deadline is spent on the hung call, not on start.
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("warm")).await.outcome,
        Outcome::Ok
    );
    let pid = d.pid().unwrap();
    rig.standin
        .push(Reply::text("too late").delayed(Duration::from_secs(120)));
    let r = d.run_turn(PREAMBLE, &msg("slow")).await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
    assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
    assert!(!d.is_hot());
    assert!(
        rig::eventually(Duration::from_secs(10), || !rig::alive(pid)).await,
        "process {pid} still alive"
    );
    // The next turn starts a new process and works.
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("again")).await.outcome,
        Outcome::Ok
    );
    assert_eq!(d.spawns(), 2);
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn the_pid_file_names_the_process_while_its_first_turn_is_still_running() {
    let rig = Rig::new().await;
    let mut cfg = rig.config();
    let pid_file = rig.home.dir().join("agent.pid");
    cfg.pid_file = Some(pid_file.clone());
    cfg.turn_timeout = Duration::from_secs(8);
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    rig.standin
        .push(Reply::text("too late").delayed(Duration::from_secs(120)));
    let turn = tokio::spawn(async move {
        let r = d.run_turn(PREAMBLE, &msg("slow")).await;
        (r, d)
    });
    // A daemon killed now must still find the process: the pid is on disk
    // before the turn ends, not only between turns.
    let read_pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
    };
    assert!(
        rig::eventually(Duration::from_secs(30), || read_pid()
            .is_some_and(rig::alive))
        .await,
        "no live pid recorded while the turn runs"
    );
    assert!(!turn.is_finished(), "the turn was still running");
    let (r, mut d) = turn.await.unwrap();
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn usage_numbers_per_turn_are_the_model_apis_numbers() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    rig.standin.set_usage(UsageScript::Fixed(Usage {
        input_tokens: 1234,
        cache_creation_input_tokens: 200,
        cache_read_input_tokens: 3000,
        output_tokens: 56,
    }));
    let r = d.run_turn(PREAMBLE, &msg("count me")).await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.tokens.tokens_in, Some(1234));
    assert_eq!(r.tokens.tokens_cached_in, Some(3200));
    assert_eq!(r.tokens.tokens_out, Some(56));
    // A tool loop: the turn's usage is the sum of its two calls.
    rig.standin.push(Reply::bash("true", "done"));
    let r = d.run_turn(PREAMBLE, &msg("two calls")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert_eq!(r.tokens.tokens_in, Some(2468));
    assert_eq!(r.tokens.tokens_out, Some(112));
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn the_agent_can_run_bash_commands() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    rig.standin
        .push(Reply::bash("echo ran > bash-ran.txt", "ran it"));
    let r = d.run_turn(PREAMBLE, &msg("run it")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert_eq!(r.text.as_deref(), Some("ran it"));
    let out = std::fs::read_to_string(rig.home.workdir().join("bash-ran.txt")).unwrap();
    assert_eq!(out.trim(), "ran");
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn explicit_allowed_tools_also_let_the_agent_run_its_command() {
    let rig = Rig::new().await;
    let mut cfg = rig.config();
    cfg.permissions = Permissions::allowing(["Bash(echo:*)"]);
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    rig.standin.push(Reply::bash("echo allowed-marker", "done"));
    let r = d.run_turn(PREAMBLE, &msg("run it")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    let follow = &rig.standin.requests()[1];
    assert!(follow.carries_tool_result());
    assert!(
        follow.last_user_text().contains("allowed-marker"),
        "{}",
        follow.last_user_text()
    );
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn a_user_message_starting_with_a_dash_is_refused_before_any_process() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    let r = d.run_turn(PREAMBLE, "--help me").await;
    assert!(matches!(r.outcome, Outcome::Failed { .. }));
    assert_eq!(d.spawns(), 0);
    assert_eq!(rig.standin.request_count(), 0);
    rig.done().await;
}

/// A context of 450k tokens as the CLI records it in the transcript.
fn big() -> Usage {
    Usage {
        input_tokens: 50_000,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 400_000,
        output_tokens: 10,
    }
}

#[tokio::test]
async fn cold_start_compacts_a_big_session_before_the_first_turn_and_never_while_hot() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    assert_eq!(
        d.cold_start().await,
        None,
        "no session yet: nothing to compact"
    );
    rig.standin.push(Reply::text("big one").with_usage(big()));
    rig.standin.push(Reply::text("still big").with_usage(big()));
    assert_eq!(d.run_turn(PREAMBLE, &msg("one")).await.outcome, Outcome::Ok);
    let r2 = d.run_turn(PREAMBLE, &msg("two")).await;
    assert_eq!(r2.outcome, Outcome::Ok);
    assert!(
        rig.standin
            .requests()
            .iter()
            .all(|r| !r.is_summary_request()),
        "hot: never compact"
    );
    d.stop().await;
    assert!(
        d.context_tokens().unwrap() >= 400_000,
        "meter: {:?}",
        d.context_tokens()
    );

    // A cold driver's first turn no longer compacts by itself: the
    // compaction belongs to the startup, before any turn.
    let before = rig.standin.request_count();
    let mut lazy = rig.driver();
    rig.standin.push(Reply::text("big again").with_usage(big()));
    assert_eq!(
        lazy.run_turn(PREAMBLE, &msg("lazy")).await.outcome,
        Outcome::Ok
    );
    assert!(
        !rig.standin.requests()[before].is_summary_request(),
        "the first turn carries no /compact"
    );
    lazy.stop().await;

    // Startup: cold_start compacts in a process of its own; the first turn
    // then starts on the small context.
    let before = rig.standin.request_count();
    let mut cold = rig.driver();
    let c = cold.cold_start().await.expect("a compaction was due");
    assert_eq!(c.outcome, Outcome::Ok, "{c:?}");
    assert!(
        c.context_before >= 400_000 && c.threshold == 400_000,
        "{c:?}"
    );
    assert!(c.context_after.is_some_and(|a| a < c.threshold), "{c:?}");
    assert!(!cold.is_hot(), "the compaction's process is gone");
    assert_eq!(cold.spawns(), 1);
    let reqs = rig.standin.requests();
    assert_eq!(reqs.len(), before + 1, "one summary request");
    assert!(reqs[before].is_summary_request());
    assert_eq!(
        cold.cold_start().await,
        None,
        "compacted: nothing due any more"
    );
    let r3 = cold.run_turn(PREAMBLE, &msg("three")).await;
    assert_eq!(r3.outcome, Outcome::Ok, "{r3:?}");
    let reqs = rig.standin.requests();
    assert_eq!(reqs.len(), before + 2);
    assert!(reqs[before + 1].last_user_text().contains("three"));
    assert!(!reqs[before + 1].messages_contain("still big"), "compacted");
    // Hot again: even a big context is left alone.
    rig.standin.push(Reply::text("big again").with_usage(big()));
    cold.run_turn(PREAMBLE, &msg("four")).await;
    let n = rig.standin.request_count();
    cold.run_turn(PREAMBLE, &msg("five")).await;
    assert!(
        rig.standin.requests()[n..]
            .iter()
            .all(|r| !r.is_summary_request())
    );
    cold.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn cold_compaction_follows_its_switch_file() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    // Two exchanges: the CLI does not compact a single one.
    d.run_turn(PREAMBLE, &msg("zero")).await;
    rig.standin.push(Reply::text("big one").with_usage(big()));
    d.run_turn(PREAMBLE, &msg("one")).await;
    d.stop().await;
    rig.switch(switches::COLD_COMPACT, "off");
    assert_eq!(rig.driver().cold_start().await, None);
    rig.switch(switches::COLD_COMPACT, "500000");
    assert_eq!(rig.driver().cold_start().await, None, "450k < 500k");
    // `1` is on (the default threshold), never a one-token threshold.
    rig.switch(switches::COLD_COMPACT, "1");
    let mut d = rig.driver();
    let c = d.cold_start().await.expect("450k >= the default 400k");
    assert_eq!(c.threshold, 400_000);
    assert_eq!(c.outcome, Outcome::Ok, "{c:?}");
    assert_eq!(
        rig.standin
            .requests()
            .iter()
            .filter(|r| r.is_summary_request())
            .count(),
        1
    );
    rig.done().await;
}

#[tokio::test]
async fn a_ceiling_below_the_real_context_turns_autocompact_off() {
    let rig = Rig::new().await;
    rig.switch(switches::AUTOCOMPACT, "200000");
    rig.switch(switches::COLD_COMPACT, "off");
    let mut d = rig.driver();
    rig.standin.push(Reply::text("big one").with_usage(big()));
    let r1 = d.run_turn(PREAMBLE, &msg("one")).await;
    assert!(!r1.auto_off_written);
    let r2 = d.run_turn(PREAMBLE, &msg("two")).await;
    assert!(r2.auto_off_written, "{r2:?}");
    assert_eq!(r2.outcome, Outcome::Ok);
    let off =
        std::fs::read_to_string(rig.home.switch_path(switches::AUTOCOMPACT_AUTO_OFF)).unwrap();
    assert!(off.contains("200000"), "{off}");
    // With the ceiling in force the CLI would have compacted before turn two;
    // with autocompact off it did not.
    assert!(
        rig.standin
            .requests()
            .iter()
            .all(|r| !r.is_summary_request())
    );
    assert_eq!(
        d.spawns(),
        2,
        "the env change restarted the process: {r2:?}"
    );
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn compact_and_stop_compacts_then_ends_the_process() {
    let rig = Rig::new().await;
    let mut d = rig.driver();
    d.run_turn(PREAMBLE, &msg("one")).await;
    d.run_turn(PREAMBLE, &msg("two")).await;
    let pid = d.pid().unwrap();
    assert_eq!(d.compact_and_stop().await, Some(Outcome::Ok));
    assert!(!d.is_hot());
    assert!(rig.standin.requests().last().unwrap().is_summary_request());
    assert!(rig::eventually(Duration::from_secs(10), || !rig::alive(pid)).await);
    assert_eq!(
        d.compact_and_stop().await,
        None,
        "nothing to compact when no process runs"
    );
    rig.done().await;
}

// ---- fake CLI: only for output the real CLI cannot produce ----

fn fake_claude(rig: &Rig, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = rig.dir.path().join("fake-claude");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[tokio::test]
async fn garbage_stdout_lines_are_skipped() {
    // The real CLI never prints non-JSON on stdout in stream-json mode; a
    // fake one does, to prove such lines are logged and skipped.
    let rig = Rig::new().await;
    let bin = fake_claude(
        &rig,
        r#"while read line; do
  echo 'this is not json'
  printf '\000\377 binary junk\n'
  echo '{"type":"system","subtype":"init","session_id":"s"}'
  echo '[1,2,3]'
  echo '{"type":"result","subtype":"success","is_error":false,"result":"fine","session_id":"s","usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}'
done"#,
    );
    let mut d = hoop_sentinel::driver::Driver::new(rig.config_with(bin));
    let r = d.run_turn(PREAMBLE, &msg("hi")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert_eq!(r.garbage_lines, 3);
    assert_eq!(r.tokens.tokens_in, Some(5));
    assert_eq!(r.text.as_deref(), Some("fine"));
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn a_crash_mid_turn_is_a_failure_with_its_exit_code() {
    // The real CLI does not crash on demand; a fake one exits mid-turn.
    let rig = Rig::new().await;
    let bin = fake_claude(
        &rig,
        r#"read line
echo '{"type":"system","subtype":"init","session_id":"s"}'
echo 'partial output then death' >&2
exit 3"#,
    );
    let mut d = hoop_sentinel::driver::Driver::new(rig.config_with(bin));
    let r = d.run_turn(PREAMBLE, &msg("hi")).await;
    match &r.outcome {
        Outcome::Failed { reason } => assert!(reason.contains("exited 3"), "{reason}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(r.exit.map(|e| e.code()), Some(3));
    assert_eq!(r.usage, None);
    assert_eq!(r.tokens.tokens_out, None, "unknown is None, never 0");
    assert!(!d.is_hot());
    rig.done().await;
}

#[tokio::test]
async fn the_agent_runs_the_hoop_binary_through_bash_with_the_configured_path() {
    let rig = Rig::new().await;
    let mut cfg = rig.config();
    let hoop = std::path::Path::new(env!("CARGO_BIN_EXE_hoop"));
    let path = format!(
        "{}:{}",
        hoop.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cfg.env.push(("PATH".into(), path));
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    rig.standin.push(Reply::bash(
        "hoop --help > hoop-help.txt 2>&1; echo rc=$? >> hoop-help.txt",
        "done",
    ));
    let r = d.run_turn(PREAMBLE, &msg("run hoop")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    let out = std::fs::read_to_string(rig.home.workdir().join("hoop-help.txt")).unwrap();
    assert!(
        out.contains("rc=0") && out.to_lowercase().contains("usage"),
        "{out}"
    );
    d.stop().await;
    rig.done().await;
}

/// One turn whose context grows to 170k tokens, then another: with a 200k
/// window the CLI must compact by itself before that second turn (`why`
/// names what reached the CLI if it does not). Returns the second turn.
async fn grow_past_the_window_then_turn(
    rig: &Rig,
    d: &mut hoop_sentinel::driver::Driver,
    why: &str,
) -> hoop_sentinel::driver::TurnReport {
    rig.standin
        .push(Reply::text("getting big").with_usage(Usage {
            input_tokens: 170_000,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 10,
        }));
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("three")).await.outcome,
        Outcome::Ok
    );
    let before = rig.standin.request_count();
    let r4 = d.run_turn(PREAMBLE, &msg("four")).await;
    assert_eq!(r4.outcome, Outcome::Ok, "{r4:?}");
    assert!(
        rig.standin.requests()[before..]
            .iter()
            .any(|r| r.is_summary_request()),
        "{why}"
    );
    r4
}

#[tokio::test]
async fn the_autocompact_switch_sets_the_clis_ceiling_and_a_healthy_compaction_is_left_alone() {
    let rig = Rig::new().await;
    rig.switch(switches::AUTOCOMPACT, "200000");
    let mut d = rig.driver();
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("one: PINEAPPLE")).await.outcome,
        Outcome::Ok
    );
    assert_eq!(
        d.run_turn(PREAMBLE, &msg("two: BANANA")).await.outcome,
        Outcome::Ok
    );
    // The CLI compacted by itself, near the 200k window the switch set.
    let r4 = grow_past_the_window_then_turn(
        &rig,
        &mut d,
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW reached the CLI",
    )
    .await;
    assert!(
        !r4.auto_off_written,
        "one compaction that works is the ceiling doing its job"
    );
    assert!(
        !rig.home
            .switch_path(switches::AUTOCOMPACT_AUTO_OFF)
            .exists()
    );
    assert_eq!(d.spawns(), 1);
    d.stop().await;
    rig.done().await;
}

#[tokio::test]
async fn per_turn_mode_cold_start_compacts_in_its_own_process_before_the_turn() {
    let rig = Rig::new().await;
    rig.switch(switches::PERSIST, "off");
    let mut d = rig.driver();
    rig.standin.push(Reply::text("big one").with_usage(big()));
    assert_eq!(d.run_turn(PREAMBLE, &msg("one")).await.outcome, Outcome::Ok);
    let n = rig.standin.request_count();
    assert_eq!(d.run_turn(PREAMBLE, &msg("two")).await.outcome, Outcome::Ok);
    assert!(
        !rig.standin.requests()[n].is_summary_request(),
        "a turn never compacts by itself"
    );
    rig.standin.push(Reply::text("big again").with_usage(big()));
    d.run_turn(PREAMBLE, &msg("three")).await;
    d.stop().await;
    let before = rig.standin.request_count();
    let mut cold = rig.driver();
    let c = cold.cold_start().await.expect("due");
    assert_eq!(c.outcome, Outcome::Ok, "{c:?}");
    let r = cold.run_turn(PREAMBLE, &msg("four")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert_eq!(
        cold.spawns(),
        2,
        "the compaction and the turn: one process each"
    );
    let reqs = rig.standin.requests();
    assert!(reqs[before].is_summary_request());
    assert!(reqs[before + 1].last_user_text().contains("four"));
    assert_eq!(r.exit.map(|e| e.code()), Some(0));
    rig.done().await;
}

#[tokio::test]
async fn per_turn_mode_timeout_kills_the_process() {
    let rig = Rig::new().await;
    rig.switch(switches::PERSIST, "off");
    let mut cfg = rig.config();
    cfg.turn_timeout = Duration::from_secs(6);
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    rig.standin
        .push(Reply::text("too late").delayed(Duration::from_secs(120)));
    let r = d.run_turn(PREAMBLE, &msg("slow")).await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:?}");
    assert!(r.elapsed < Duration::from_secs(30));
    assert!(r.exit.is_some(), "the killed process was reaped");
    rig.done().await;
}

/// The home's configured environment (and so the daemon's inherited one)
/// carries the knobs the switches own; the switches still decide: the
/// 5-minute cache and a 200k autocompact window reach the real CLI.
#[tokio::test]
async fn configured_or_inherited_knobs_never_override_the_switches() {
    let rig = Rig::new().await;
    let mut cfg = rig.config();
    for (k, v) in [
        (switches::ENV_DISABLE_AUTO_COMPACT, "1"),
        (switches::ENV_PROMPT_CACHING_1H, "1"),
        (switches::ENV_AUTO_COMPACT_WINDOW, "900000"),
    ] {
        cfg.env.push((k.into(), v.into()));
    }
    rig.switch(switches::CACHE_TTL, "5m");
    rig.switch(switches::AUTOCOMPACT, "200000");
    let mut d = hoop_sentinel::driver::Driver::new(cfg);
    assert_eq!(d.run_turn(PREAMBLE, &msg("one")).await.outcome, Outcome::Ok);
    assert_eq!(d.run_turn(PREAMBLE, &msg("two")).await.outcome, Outcome::Ok);
    let first = rig.standin.requests();
    assert!(!first[0].cache_controls().is_empty());
    assert!(
        first
            .iter()
            .all(|r| r.cache_controls().iter().all(|c| c.get("ttl").is_none())),
        "cache_ttl=5m beats an ENABLE_PROMPT_CACHING_1H=1 in the environment"
    );
    grow_past_the_window_then_turn(
        &rig,
        &mut d,
        "autocompact=200000 beats DISABLE_AUTO_COMPACT=1 in the environment",
    )
    .await;
    assert_eq!(d.spawns(), 1);
    d.stop().await;
    rig.done().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_crash_is_judged_by_its_own_stderr_not_an_earlier_turns() {
    // The real CLI neither prints a login mark on stderr during a good turn
    // nor crashes on demand; a fake one does both, in one persistent process.
    let rig = Rig::new().await;
    let bin = fake_claude(
        &rig,
        r#"echo 'warning: OAuth token revoked · Please run /login (a stale notice)' >&2
n=0
while read line; do
  n=$((n+1))
  if [ "$n" -eq 1 ]; then
    echo '{"type":"result","subtype":"success","is_error":false,"result":"fine","session_id":"s","usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}'
  else
    echo 'segmentation fault' >&2
    exit 3
  fi
done"#,
    );
    let mut d = hoop_sentinel::driver::Driver::new(rig.config_with(bin));
    let r1 = d.run_turn(PREAMBLE, &msg("one")).await;
    assert_eq!(r1.outcome, Outcome::Ok, "{r1:?}");
    assert!(d.is_hot(), "one persistent process");
    let r2 = d.run_turn(PREAMBLE, &msg("two")).await;
    match &r2.outcome {
        Outcome::Failed { reason } => {
            assert!(reason.contains("exited 3"), "{reason}");
            assert!(reason.contains("segmentation fault"), "{reason}");
            assert!(!reason.to_lowercase().contains("login"), "{reason}");
        }
        other => panic!("a crash is a failure, not {other:?}"),
    }
    assert_eq!(d.spawns(), 1);
    rig.done().await;
}
