//! End-to-end tests of `hoop sentinel run`: the real `hoop` binary as a
//! child process, the real `claude` CLI (HOOP_CLAUDE_BIN) pointed at the
//! model stand-in, and the reference backend on loopback.

mod fates;
mod harness;
mod proxy;
mod reliability;
mod stall;
mod trees;
mod usage;
mod why;
mod workers;

use std::time::Duration;

use harness::*;
use hoop_api::types::MessageKind;
use hoop_standin::Reply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_a_mention_and_commits_the_cursor_after_the_turn() {
    let w = World::new(Opts::default()).await;
    // A working card: the renewer opens its lease, the turn's usage lands on it.
    let card = w.claimed_card("watch the build").await;
    w.standin
        .push(Reply::bash(w.say_cmd("the build is green"), "answered"));
    let mut d = w.spawn();
    d.ready().await;
    let log = d.log_text();
    let rocket = log.lines().find(|l| l.contains("🚀")).unwrap();
    assert!(rocket.contains(HOME_NAME), "{rocket}");
    // No override and no task.md: each shipped part with the hash of its
    // file (an override would add `*` and its own hash, a task `+task@…`).
    assert_eq!(
        field(rocket, "prompts"),
        format!(
            "core@{},workroom@{},multi_ai@{}",
            shipped_hash("core.md"),
            shipped_hash("workroom.md"),
            shipped_hash("multi_ai.md")
        ),
        "{rocket}"
    );
    assert_eq!(field(rocket, "cold_compact"), "400000", "{rocket}");
    assert_eq!(field(rocket, "autocompact"), "1000000", "{rocket}");
    assert_eq!(field(rocket, "autocompact_auto_off"), "no", "{rocket}");

    let asked = w.post("@bolt is the build green?", false).await;
    w.until("the reply in the room", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "the build is green")
    })
    .await;
    d.wait_log("📌 cursor committed").await;
    assert!(w.cursor() >= Some(asked.id), "cursor {:?}", w.cursor());
    // The reply's own message.new is dropped, never a kick.
    d.wait_log("own message dropped").await;

    // The turn's messages: preamble via --append-system-prompt, the dynamic
    // part as the user message under the fixed header.
    let first = &w.standin.requests()[0];
    let system = first.system_blocks().join("\n");
    assert!(
        system.contains("Reply before you start working"),
        "core part missing"
    );
    let user = first.last_user_text();
    assert!(user.contains("📬 本轮指令"), "{user}");
    assert!(
        user.contains(&format!("[message {}] @ada", asked.id)),
        "{user}"
    );
    assert!(user.contains(&format!("hoop say --home {HOME_NAME} --room {}", w.room.id)));

    // Usage reported per turn and kept on the working card; its lease opened.
    w.until("usage on the card", || async {
        w.agent_client
            .card(w.room.id, card.id)
            .await
            .unwrap()
            .tokens_out
            .is_some()
    })
    .await;
    let c = w.agent_client.card(w.room.id, card.id).await.unwrap();
    assert!(
        c.tokens_in.is_some() && c.tokens_cached_in.is_some(),
        "{c:?}"
    );
    assert!(
        c.lease_expires_at.is_some(),
        "the renewer opened no lease: {c:?}"
    );

    // SIGTERM: a clean exit, the lock file stays.
    assert!(d.term().success());
    assert!(w.home.account_lock_path().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_daemon_per_home_and_the_next_takes_over_after_kill_9() {
    let w = World::new(Opts::default()).await;
    let mut first = w.spawn();
    first.wait_log("🚀").await;
    let second = run_bounded(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(["sentinel", "run", "--home", HOME_NAME])
            .env("HOOP_ROOT", w.root.path()),
    )
    .await;
    assert_eq!(second.status.code(), Some(3), "a second instance must exit");
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("already runs home"), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.pid())),
        "the holder is named: {err}"
    );
    assert!(!err.contains("🚀"));
    first.kill9();
    assert!(
        w.home.account_lock_path().exists(),
        "the lock file is never deleted"
    );
    let mut third = w.spawn();
    third.ready().await;
    let held = std::fs::read_to_string(w.home.account_lock_path()).unwrap();
    assert_eq!(held.trim(), third.pid().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_ai_room_without_a_mention_advances_without_waking() {
    let w = World::new(Opts {
        ai_count: 2,
        ..Opts::default()
    })
    .await;
    let mut d = w.spawn();
    d.ready().await;
    let m = w.post("morning all, @everyone look at this", false).await;
    d.wait_log("cursor advanced without waking").await;
    w.until("the cursor at the unmentioned message", || async {
        w.cursor() == Some(m.id)
    })
    .await;
    assert_eq!(
        w.standin.request_count(),
        0,
        "no turn for a message that is not ours"
    );
    // A mention in the same room wakes it.
    w.standin.push(Reply::bash(w.say_cmd("here"), "ok"));
    w.post("@闪电 can you check?", false).await;
    w.until("the reply", || async {
        !w.agent_messages().await.is_empty()
    })
    .await;
    let req = &w.standin.requests()[0];
    assert!(
        req.system_blocks()
            .join("\n")
            .contains("several AIs are members (the instructions say which rooms)"),
        "multi_ai part in the preamble"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_back_off_and_only_the_second_posts_the_note() {
    let w = World::new(Opts::default()).await;
    w.standin.push(Reply::server_error());
    w.standin.push(Reply::server_error());
    w.standin.push(Reply::server_error());
    w.standin
        .push(Reply::bash(w.say_cmd("sorry for the wait"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    let asked = w.post("@bolt status?", false).await;
    w.until("the answer after three failures", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "sorry for the wait")
    })
    .await;
    // Exactly one note, on the second failure, then the answer.
    let mine = w.agent_bodies().await;
    assert_eq!(
        mine,
        vec![
            "⚠️ this round failed; I am still online".to_string(),
            "sorry for the wait".to_string()
        ]
    );
    d.wait_log("📌 cursor committed").await;
    assert!(w.cursor() >= Some(asked.id));
    // The cursor was never committed by a failed turn: the message was
    // offered again each time (4 turns for one message).
    assert_eq!(d.log_text().matches("🧠 turn started").count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_login_posts_one_obituary_per_hour_and_remembers_it() {
    let started = hoop_core::clock::now_unix();
    let w = World::new(Opts::default()).await;
    w.standin.set_default(Reply::auth_error());
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt hello?", false).await;
    d.wait_log_count("🧠 turn finished", 3).await;
    let obits: Vec<_> = w
        .agent_messages()
        .await
        .into_iter()
        .filter(|m| m.body.starts_with("⚰️"))
        .collect();
    assert_eq!(obits.len(), 1, "{obits:?}");
    assert_eq!(
        obits[0].body,
        "⚰️ login expired — a person must log in again"
    );
    // No message kind is relied on: a plain text message with its mark.
    assert_eq!(obits[0].kind, MessageKind::Text);
    assert!(
        !w.agent_messages()
            .await
            .iter()
            .any(|m| m.body.starts_with("⚠️"))
    );
    // The posting is remembered per cause: the cause the CLI's 401 gives,
    // at a time between the start of this test and now.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(w.home.dir().join("obituaries.json")).unwrap(),
    )
    .unwrap();
    let causes = state.as_object().expect("an object of causes");
    assert_eq!(
        causes.keys().collect::<Vec<_>>(),
        vec!["invalid api key"],
        "{state}"
    );
    let at = causes["invalid api key"].as_i64().expect("unix seconds");
    assert!(
        (started..=hoop_core::clock::now_unix()).contains(&at),
        "{at} not within the test ({started}..)"
    );
    // A restart within the hour does not post it again.
    d.kill9();
    let mut d2 = w.spawn();
    d2.ready().await;
    d2.wait_log("already posted within the hour").await;
    let count = w
        .agent_messages()
        .await
        .iter()
        .filter(|m| m.body.starts_with("⚰️"))
        .count();
    assert_eq!(count, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_limit_is_silent() {
    let w = World::new(Opts::default()).await;
    // The API's words for a plan limit, passed through by the real CLI.
    w.standin.set_default(Reply::api_error(
        429,
        "rate_limit_error",
        "You've hit your session limit · resets 3pm (UTC)",
    ));
    let mut d = w.spawn();
    d.ready().await;
    let asked = w.post("@bolt hi", false).await;
    d.wait_log_count("🧠 turn finished", 2).await;
    assert!(
        w.agent_messages().await.is_empty(),
        "nothing is posted on a limit: {:?}\n{}",
        w.agent_messages().await,
        d.log_text()
    );
    assert!(w.cursor() < Some(asked.id), "not answered: not committed");
    assert!(!d.log_text().to_lowercase().contains("quota"));
    // When the limit lifts, the same message is answered.
    w.standin.set_default(Reply::bash(w.say_cmd("back"), "ok"));
    w.until("the answer", || async {
        !w.agent_messages().await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_turn_lock_retries_the_round() {
    let w = World::new(Opts::default()).await;
    w.standin.push(Reply::bash(w.say_cmd("done"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(w.home.turn_lock_path())
        .unwrap();
    lock.lock().unwrap();
    w.post("@bolt go", false).await;
    d.wait_log("turn lock busy").await;
    assert_eq!(w.standin.request_count(), 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(lock);
    w.until("the answer after the retry", || async {
        !w.agent_messages().await.is_empty()
    })
    .await;
}

/// The first 8 hex digits of the SHA-256 of `text`.
fn hash8(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(text.as_bytes()))[..8].to_string()
}

/// [`hash8`] of a prompt part as shipped in `sentinel/prompts/`.
fn shipped_hash(file: &str) -> String {
    let path = format!("{}/sentinel/prompts/{file}", env!("CARGO_MANIFEST_DIR"));
    hash8(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

/// The value of `name=` in a log line (up to the next space).
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=");
    let at = line
        .find(&key)
        .unwrap_or_else(|| panic!("no {name}= in {line}"));
    line[at + key.len()..]
        .split_whitespace()
        .next()
        .unwrap_or("")
}

/// Whether another process holds the home's turn lock right now (decided by
/// trying it; a lock taken here is released at once).
fn turn_lock_busy(w: &World) -> bool {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(w.home.turn_lock_path())
        .unwrap();
    matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Whether process `pid` exists (and is not a zombie), read from `/proc`.
/// Without `/proc` it fails loudly: "no such process" must never be the
/// answer because the check could not look.
fn alive(pid: u32) -> bool {
    alive_in(std::path::Path::new("/proc"), pid)
}

fn alive_in(proc: &std::path::Path, pid: u32) -> bool {
    assert!(
        proc.join("self/stat").exists(),
        "{} is missing: this check needs /proc (Linux)",
        proc.display()
    );
    match std::fs::read_to_string(proc.join(format!("{pid}/stat"))) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("reading {}/{pid}/stat: {e}", proc.display()),
    }
}

#[test]
#[should_panic(expected = "this check needs /proc")]
fn alive_fails_loudly_without_proc() {
    alive_in(std::path::Path::new("/no/such/proc"), 1);
}

#[test]
fn alive_tells_a_live_process_from_a_gone_one() {
    assert!(alive(std::process::id()));
    assert!(!alive(u32::MAX / 2), "no such pid");
}

fn agent_pid(w: &World) -> Option<u32> {
    std::fs::read_to_string(w.home.dir().join("agent.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_agent_is_compacted_under_the_turn_lock_then_stopped() {
    let w = World::new(Opts {
        idle_reap_sec: Some(2),
        timings: serde_json::json!({"debounce_ms": 300, "reaper_tick_ms": 200}),
        ..Opts::default()
    })
    .await;
    w.standin.push(Reply::bash(w.say_cmd("done"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt go", false).await;
    d.wait_log("📌 cursor committed").await;
    let pid = agent_pid(&w).expect("the live agent's pid is recorded");
    assert!(alive(pid));
    // The summary takes a while: long enough to see who holds the lock.
    w.standin
        .push(Reply::Summary("nothing is pending".into()).delayed(Duration::from_secs(3)));
    d.wait_log("💤 agent idle").await;
    assert!(
        turn_lock_busy(&w),
        "the idle /compact runs under the turn lock"
    );
    d.wait_log("agent compacted and stopped").await;
    w.until("the agent process is gone", || async { !alive(pid) })
        .await;
    w.until("the turn lock released after the compaction", || async {
        !turn_lock_busy(&w)
    })
    .await;
    assert_eq!(agent_pid(&w), None, "no live agent recorded");
    assert_eq!(
        w.standin
            .requests()
            .iter()
            .filter(|r| r.is_summary_request())
            .count(),
        1
    );
}

/// A restarted daemon whose session is big compacts it before its first
/// round, holding the turn lock; a message that arrives meanwhile queues and
/// is answered once, after the compaction, by a turn that carries no
/// `/compact` of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_session_is_compacted_at_startup_while_messages_queue() {
    let w = World::new(Opts::default()).await;
    let big = hoop_standin::Usage {
        input_tokens: 50_000,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 400_000,
        output_tokens: 10,
    };
    // First life: two answered messages, every API call reporting 450k.
    w.standin.set_usage(hoop_standin::UsageScript::Fixed(big));
    let mut d = w.spawn();
    d.ready().await;
    for (i, text) in ["first", "second"].into_iter().enumerate() {
        w.standin.push(Reply::bash(w.say_cmd(text), "ok"));
        w.post(&format!("@bolt {text}"), false).await;
        d.wait_log_count("🧠 turn finished", i + 1).await;
    }
    assert!(d.term().success());
    assert!(
        w.standin.requests().iter().all(|r| !r.is_summary_request()),
        "hot: never compacted"
    );
    w.standin.set_usage(hoop_standin::UsageScript::Honest);

    // Second life.
    std::fs::write(w.home.switch_path("autocompact_auto_off"), "by hand\n").unwrap();
    let before = w.standin.request_count();
    w.standin
        .push(Reply::Summary("SUMMARY-MARK".into()).delayed(Duration::from_secs(4)));
    w.standin
        .push(Reply::bash(w.say_cmd("after the compaction"), "ok"));
    let mut d = w.spawn();
    d.wait_log("🚀").await;
    let log = d.log_text();
    let rocket = log.lines().find(|l| l.contains("🚀")).unwrap();
    assert_eq!(field(rocket, "autocompact_auto_off"), "yes", "{rocket}");
    assert_eq!(field(rocket, "cold_compact"), "400000", "{rocket}");
    d.wait_log("🗜️ cold start: compacting").await;
    assert!(
        turn_lock_busy(&w),
        "the startup /compact runs under the turn lock"
    );
    let asked = w.post("@bolt are you there?", false).await;
    d.wait_log("📌 cursor committed").await;
    assert!(w.cursor() >= Some(asked.id));
    let log = d.log_text();
    let finished = log
        .find("🗜️ cold start: compaction finished")
        .expect("logged");
    let turn = log.find("🧠 turn started").expect("a turn");
    assert!(
        finished < turn,
        "the compaction came before the first round:\n{log}"
    );
    let reqs = &w.standin.requests()[before..];
    assert!(
        reqs[0].is_summary_request(),
        "the first request is the summary"
    );
    assert_eq!(reqs.iter().filter(|r| r.is_summary_request()).count(), 1);
    assert!(
        reqs[1]
            .last_user_text()
            .contains(&format!("[message {}]", asked.id)),
        "{}",
        reqs[1].last_user_text()
    );
    assert_eq!(
        w.agent_messages()
            .await
            .iter()
            .filter(|m| m.body == "after the compaction")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_websocket_frames_are_logged_and_skipped() {
    let w = World::new(Opts::default()).await;
    // The home reaches the backend through a proxy that injects garbage
    // frames after the upgrade and after every real frame.
    let proxy = proxy::spawn(w.backend_addr).await;
    let mut cfg = w.home.load_config().unwrap();
    cfg.base_url = format!("http://{proxy}");
    hoop_core::fsutil::write_json_atomic(&w.home.config_path(), &cfg, Default::default()).unwrap();
    w.standin.push(Reply::bash(w.say_cmd("still fine"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt are you ok?", false).await;
    w.until("the answer through garbage frames", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "still fine")
    })
    .await;
    let log = d.log_text();
    assert!(
        log.contains("skipping an unreadable WebSocket frame"),
        "{log}"
    );
    assert!(log.contains("skipping a binary WebSocket frame"), "{log}");
    assert!(!log.contains("panicked"), "{log}");
    assert_eq!(
        d.child.try_wait().unwrap(),
        None,
        "the daemon is still running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alarm_catches_what_the_websocket_missed() {
    let mut w = World::new(Opts {
        timings: serde_json::json!({
            "debounce_ms": 300,
            "alarm_ms": 1500,
            // After the backend comes back the socket stays down for a long
            // while: only the alarm can find the new message.
            "ws_backoff_start_ms": 45_000,
            "ws_backoff_max_ms": 45_000,
        }),
        ..Opts::default()
    })
    .await;
    w.standin.push(Reply::bash(w.say_cmd("found it"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    w.stop_backend().await;
    d.wait_log("WebSocket lost").await;
    w.start_backend().await;
    w.post("@bolt posted while the socket is down", false).await;
    w.until("the answer found by the alarm", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "found it")
    })
    .await;
    assert_eq!(
        d.log_text().matches("🔌 WS connected").count(),
        1,
        "the socket did not come back: the alarm did it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_prompt_overrides_and_task_reach_the_preamble_and_heartbeats_flow() {
    let w = World::new(Opts::default()).await;
    std::fs::create_dir_all(w.home.prompts_dir()).unwrap();
    std::fs::write(w.home.prompts_dir().join("core.md"), "CORE-OVERRIDE-MARK").unwrap();
    std::fs::write(w.home.task_path(), "TASK-MARK: watch the nightly build").unwrap();
    w.standin.push(Reply::bash(w.say_cmd("ok"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    let log = d.log_text();
    let rocket = log.lines().find(|l| l.contains("🚀")).unwrap();
    assert_eq!(
        field(rocket, "prompts"),
        format!(
            "core*@{},workroom@{},multi_ai@{}+task@{}",
            hash8("CORE-OVERRIDE-MARK"),
            shipped_hash("workroom.md"),
            shipped_hash("multi_ai.md"),
            hash8("TASK-MARK: watch the nightly build")
        ),
        "{rocket}"
    );
    w.post("@bolt hi", false).await;
    w.until("the answer", || async {
        !w.agent_messages().await.is_empty()
    })
    .await;
    let system = w.standin.requests()[0].system_blocks().join("\n");
    assert!(system.contains("CORE-OVERRIDE-MARK"), "override used");
    assert!(
        !system.contains("Reply before you start working"),
        "default replaced"
    );
    assert!(
        system.contains("TASK-MARK: watch the nightly build"),
        "task.md appended"
    );
    // The heartbeat made the account present.
    w.until("present", || async {
        w.agent_client
            .presence()
            .await
            .unwrap()
            .iter()
            .any(|p| p.user_id == w.agent.id && p.present)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_runs_out_of_time_is_a_failure_not_a_death() {
    let w = World::new(Opts {
        // The retried turn starts a new process and must finish within the
        // same bound on a loaded machine: not cut fine.
        turn_timeout_sec: Some(8),
        ..Opts::default()
    })
    .await;
    w.standin
        .push(Reply::text("too late").delayed(Duration::from_secs(60)));
    w.standin.push(Reply::bash(w.say_cmd("on time now"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    let asked = w.post("@bolt quick one", false).await;
    w.until("the answer after the timeout", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "on time now")
    })
    .await;
    let log = d.log_text();
    assert!(log.contains("class=Timeout"), "{log}");
    let mine = w.agent_bodies().await;
    assert_eq!(
        mine,
        vec!["on time now".to_string()],
        "one timeout is one failure: no note, no obituary\n{log}"
    );
    d.wait_log("📌 cursor committed").await;
    assert!(w.cursor() >= Some(asked.id));
}

/// The log without terminal colour codes (fields read `name=value`).
fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ … final byte in @..~
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) && d != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_failures_are_logged_on_the_1st_10th_and_100th_only() {
    let mut w = World::new(Opts {
        timings: serde_json::json!({
            "heartbeat_ms": 50,
            "heartbeat_retry_ms": 5,
            "ws_backoff_start_ms": 200,
            "ws_backoff_max_ms": 1000,
        }),
        ..Opts::default()
    })
    .await;
    let mut d = w.spawn();
    d.ready().await;
    w.stop_backend().await;
    d.wait_log("heartbeat failed").await;
    w.until("a hundred failed beats in a row", || async {
        plain(&d.log_text()).contains("consecutive=100 ")
    })
    .await;
    w.start_backend().await;
    d.wait_log("heartbeat recovered").await;
    let log = plain(&d.log_text());
    let logged: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("heartbeat failed"))
        .collect();
    assert_eq!(logged.len(), 3, "only the 1st, 10th and 100th:\n{log}");
    for (line, n) in logged.iter().zip([1, 10, 100]) {
        assert!(line.contains(&format!("consecutive={n} ")), "{line}");
    }
    let recovered = log
        .lines()
        .find(|l| l.contains("heartbeat recovered"))
        .expect("recovered line");
    let after: u64 = recovered
        .split("after=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .expect("after=N");
    assert!(after >= 100, "{recovered}");
}
