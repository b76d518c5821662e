//! Reliability: kill -9 at random points, a backend that goes away and
//! comes back, paging after downtime, garbage CLI output. Every wait is
//! bounded (see `harness::WAIT`).

use std::time::Duration;

use crate::harness::*;
use hoop_api::admin::CreateUser;
use hoop_api::types::Message;
use hoop_standin::Reply;

/// No two agent replies without a human message between them (a double
/// answer), and the newest message is the agent's (nothing left unanswered).
fn assert_each_answered_once(w: &World, msgs: &[Message]) {
    let mut last_was_agent = false;
    for m in msgs {
        let agent = m.sender_id == w.agent.id;
        assert!(
            !(agent && last_was_agent),
            "answered twice around message {}: {:#?}",
            m.id,
            msgs.iter()
                .map(|m| (m.id, m.sender_id, &m.body))
                .collect::<Vec<_>>()
        );
        last_was_agent = agent;
    }
    assert!(last_was_agent, "the newest human message is unanswered");
}

/// A small deterministic generator; the seed is printed for reproduction.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_points_never_loses_or_doubles_a_message() {
    let w = World::new(Opts::default()).await;
    w.standin.set_default(Reply::bash(w.say_cmd("ack"), "ok"));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill -9 schedule seed: {seed}");
    let mut rng = Lcg(seed);
    let mut d = w.spawn();
    d.ready().await;
    const ROUNDS: usize = 8;
    for k in 0..ROUNDS {
        w.post(&format!("@bolt question {k}"), false).await;
        // Anywhere from before the debounce ends to after the reply lands.
        let delay = rng.next(2500);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        d.kill9();
        d = w.spawn();
        d.ready().await;
    }
    until("every question answered", || async {
        w.messages()
            .await
            .last()
            .is_some_and(|m| m.sender_id == w.agent.id)
    })
    .await;
    // Let any straggler (a second answer) show up before judging.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let msgs = w.messages().await;
    let logs = w.all_logs();
    eprintln!(
        "kills: {ROUNDS}; agent processes left behind and stopped: {}; turns: {}",
        logs.matches("previous run are still alive").count(),
        logs.matches("🧠 turn started").count()
    );
    assert_each_answered_once(&w, &msgs);
    let newest = msgs.last().unwrap().id;
    until("the cursor at the newest message", || async {
        w.cursor() == Some(newest)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_restarts_and_websocket_drops_lose_nothing() {
    let mut w = World::new(Opts {
        timings: serde_json::json!({
            "debounce_ms": 300,
            "alarm_ms": 1500,
            "failure_backoff_ms": [500, 500, 500],
            "ws_backoff_start_ms": 200,
            "ws_backoff_max_ms": 1000,
            "ws_stable_after_ms": 500,
        }),
        ..Opts::default()
    })
    .await;
    w.standin.set_default(Reply::bash(w.say_cmd("ack"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    for k in 0..3 {
        w.stop_backend().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        w.start_backend().await;
        // Posted at once: the socket may still be down, so the event may
        // never arrive; the reconnect's full pull or the alarm finds it.
        w.post(&format!("@bolt after restart {k}"), false).await;
        until("the answer after a restart", || async {
            w.messages()
                .await
                .last()
                .is_some_and(|m| m.sender_id == w.agent.id)
        })
        .await;
    }
    let msgs = w.messages().await;
    assert_each_answered_once(&w, &msgs);
    // The socket comes back after each restart (maybe after the answer).
    d.wait_log_count("🔌 WS connected", 4).await;
    let log = d.log_text();
    assert!(log.contains("WebSocket lost"), "{log}");
    assert!(
        log.matches("logged in again for the WebSocket").count()
            >= log.matches("🔌 WS connected").count(),
        "every (re)connect logs in again: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_downtime_it_pages_back_to_the_cursor_and_says_when_it_gave_up() {
    let w = World::new(Opts::default()).await;
    w.standin.set_default(Reply::bash(w.say_cmd("ack"), "ok"));
    // Enough senders to stay under the backend's 60 messages/min per user.
    let mut senders = vec![w.human.clone()];
    for i in 0..2 {
        let u = w
            .admin
            .create_user(&CreateUser {
                email: format!("h{i}@example.com"),
                username: format!("h{i}"),
                nickname: None,
                is_agent: false,
            })
            .await
            .unwrap();
        w.admin.add_member(w.room.id, u.id).await.unwrap();
        senders.push(u);
    }
    let post_as = |n: usize, tag: &'static str| {
        let w = &w;
        let senders = senders.clone();
        async move {
            let mut ids = vec![];
            for i in 0..n {
                let s = &senders[i % senders.len()];
                let m = w
                    .admin
                    .post_as(
                        w.room.id,
                        &hoop_api::admin::PostAs {
                            sender_id: s.id,
                            message: hoop_api::types::SendMessage {
                                body: format!("{tag} {i}"),
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                    )
                    .await
                    .unwrap();
                ids.push(m.id);
            }
            ids
        }
    };
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt first", false).await;
    until("first answer", || async {
        !w.agent_messages().await.is_empty()
    })
    .await;
    d.wait_log("📌 cursor committed").await;
    d.kill9();

    // 20 messages while down: two pages back, nothing missed.
    let ids = post_as(20, "backlog").await;
    let before = w.standin.request_count();
    let mut d = w.spawn();
    d.ready().await;
    until("backlog answered", || async {
        w.messages()
            .await
            .last()
            .is_some_and(|m| m.sender_id == w.agent.id)
    })
    .await;
    let req = &w.standin.requests()[before];
    let text = req.last_user_text();
    assert!(
        text.contains(&format!("[message {}]", ids[0])),
        "the oldest is offered: {text}"
    );
    assert!(!text.contains("older messages may have been missed"));
    d.wait_log_count("📌 cursor committed", 1).await;
    d.kill9();

    // 70 while down: beyond 1 + 3 pages of 15 → said in the log and the instructions.
    post_as(70, "flood").await;
    let before = w.standin.request_count();
    let mut d = w.spawn();
    d.ready().await;
    until("flood answered", || async {
        w.messages()
            .await
            .last()
            .is_some_and(|m| m.sender_id == w.agent.id)
    })
    .await;
    let text = w.standin.requests()[before].last_user_text();
    assert!(
        text.contains("older messages may have been missed"),
        "{text}"
    );
    assert!(d.log_text().contains("older messages may have been missed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_cli_output_fails_the_round_cleanly_and_it_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let real = claude_bin();
    let mark = dir.path().join("first-run-done");
    let script = dir.path().join("claude-garbage.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ ! -e '{mark}' ]; then\n  touch '{mark}'\n  echo 'this is not json {{{{'\n  printf '\\x00\\xff garbage\\n'\n  echo '{{\"type\":\"result\",'\n  exit 1\nfi\nexec '{real}' \"$@\"\n",
            mark = mark.display(),
            real = real.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let w = World::new(Opts {
        claude_bin: Some(script),
        ..Opts::default()
    })
    .await;
    w.standin.push(Reply::bash(w.say_cmd("recovered"), "ok"));
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt ping", false).await;
    until("the answer after the garbage run", || async {
        w.agent_messages()
            .await
            .iter()
            .any(|m| m.body == "recovered")
    })
    .await;
    let log = d.log_text();
    assert!(
        log.contains("class=Failed"),
        "the garbage run is a failed round: {log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    assert_eq!(
        d.child.try_wait().unwrap(),
        None,
        "the daemon is still running"
    );
    assert_eq!(
        w.agent_messages().await.len(),
        1,
        "one failure posts no note; one answer"
    );
}

/// A refused login (here: an email the backend does not know) is retried,
/// and an operator sees why once — on stderr and in the status file — not
/// once per retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_is_told_once_and_kept_in_the_status_file() {
    let w = World::new(Opts::default()).await;
    let mut cfg: hoop_core::home::HomeConfig = w.home.load_config().unwrap();
    cfg.email = "nobody@example.com".into();
    hoop_core::fsutil::write_json_atomic(&w.home.config_path(), &cfg, Default::default()).unwrap();
    let mut d = w.spawn();
    // Several retries (backoff 200 ms doubling to 1 s)…
    d.wait_log_count("login failed; retrying", 4).await;
    let log = d.log_text();
    // …and the notice, in words an operator can act on, exactly once.
    assert_eq!(log.matches("cannot log in, retrying").count(), 1, "{log}");
    assert!(
        log.contains("AGENT_LOGIN_SECRET or AGENT_LOGIN_CIDRS"),
        "{log}"
    );
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(w.home.dir().join("sentinel-status.json")).unwrap())
            .unwrap();
    assert!(
        status["login_error"]
            .as_str()
            .is_some_and(|s| s.contains("login refused")),
        "{status}"
    );
}
