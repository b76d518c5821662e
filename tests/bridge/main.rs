//! `hoop bridge …` as a process: the real binary against the reference
//! backend over loopback, its stdout read line by line.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod window;

use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::types::{SendMessage, User};

/// A child killed when the test ends, whatever way it ends.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every wait here is bounded by this.
const WAIT: Duration = Duration::from_secs(20);

struct Backend {
    run: hoop_refbackend::Running,
    admin: AdminClient,
}

async fn backend() -> Backend {
    let run = hoop_refbackend::spawn("127.0.0.1:0".parse().unwrap(), Default::default())
        .await
        .unwrap();
    let admin = AdminClient::new(&run.base_url(), &run.admin_token);
    Backend { run, admin }
}

async fn user(b: &Backend, name: &str, agent: bool) -> User {
    b.admin
        .create_user(&CreateUser {
            email: format!("{name}@example.test"),
            username: name.into(),
            nickname: None,
            is_agent: agent,
        })
        .await
        .unwrap()
}

/// Run a command expected to exit, within [`WAIT`], its stdout and stderr
/// captured: one that keeps running is killed and fails the test instead
/// of hanging it (or a runtime's blocking pool).
fn exits(mut c: Command) -> std::process::Output {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(WAIT) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{c:?} did not exit within {WAIT:?}");
        }
    }
}

/// A stand-in `codex` in `dir` that appends its arguments (`a|b|…|`, one
/// call a line) to `dir/<name>.calls` and accepts: the `--codex-cmd` that
/// runs it, and the calls file.
fn codex_recorder(dir: &std::path::Path, name: &str) -> (String, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let calls = dir.join(format!("{name}.calls"));
    let script = dir.join(name);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> {}\necho >> {0}\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cmd = format!(
        "{} queue --thread {{thread}} --message {{text}}",
        script.display()
    );
    (cmd, calls)
}

fn watch_cmd(b: &Backend, me: &User, key_file: &std::path::Path, dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
    c.args([
        "bridge",
        "watch",
        "--fallback",
        "--me",
        &me.id.to_string(),
        "--poll-secs",
        "0.2",
    ])
    .arg("--key-file")
    .arg(key_file)
    .args(["--url", &format!("{}/mcp", b.run.base_url())])
    .arg("--state-dir")
    .arg(dir)
    .env("HOOP_LOG", "warn")
    .env_remove("HOOP_WINDOW_SESSION")
    .env_remove("CLAUDE_CODE_SESSION_ID")
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_prints_the_exact_line_and_never_the_key() {
    let b = backend().await;
    let bolt = user(&b, "bolt", true).await;
    let ann = user(&b, "ann", false).await;
    let room = b
        .admin
        .create_conversation(&CreateConversation {
            title: "dm".into(),
            is_workroom: false,
            member_ids: vec![bolt.id, ann.id],
        })
        .await
        .unwrap();
    let key = b.admin.mint_mcp_key(bolt.id).await.unwrap().key;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, &key).unwrap();
    let mut child = Reaped(watch_cmd(&b, &bolt, &key_file, dir.path()).spawn().unwrap());
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    // The first round has taken its baseline once the state is written.
    let state = dir.path().join("state-default.json");
    let start = Instant::now();
    while !state.exists() {
        assert!(start.elapsed() < WAIT, "the watcher never wrote its state");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m = b
        .admin
        .post_as(
            room.id,
            &PostAs {
                sender_id: ann.id,
                message: SendMessage {
                    body: "ping".into(),
                    mentions: vec![],
                },
                kind: Default::default(),
            },
        )
        .await
        .unwrap();
    // Off the runtime's workers: the backend serves the watcher meanwhile.
    let line = tokio::task::spawn_blocking(move || rx.recv_timeout(WAIT))
        .await
        .unwrap()
        .expect("a line");
    drop(child);
    assert_eq!(
        line,
        format!(
            "🔔 @ann in dm: ping | type=dm conversation_id={} message_id={} sender_id={}",
            room.id, m.id, ann.id
        )
    );
    assert!(!line.contains(&key));
    let state_text = std::fs::read_to_string(&state).unwrap();
    assert!(!state_text.contains(&key), "the key is not in the state");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_key_prints_one_line_and_exits_77() {
    let b = backend().await;
    let bolt = user(&b, "bolt", true).await;
    let key = b
        .admin
        .mint_mcp_key_for(bolt.id, Some(60))
        .await
        .unwrap()
        .key;
    b.admin.advance_clock(200).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, &key).unwrap();
    let c = watch_cmd(&b, &bolt, &key_file, dir.path());
    let out = tokio::task::spawn_blocking(move || exits(c)).await.unwrap();
    assert_eq!(out.status.code(), Some(77));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "🔔 key rejected (expired, revoked or account disabled?) | type=notice kind=key_rejected\n"
    );
}

/// Read stdout lines until one parses as JSON and matches, within [`WAIT`].
async fn next_json(
    rx: &std::sync::Arc<std::sync::Mutex<mpsc::Receiver<String>>>,
    pred: impl Fn(&serde_json::Value) -> bool + Send + 'static,
) -> serde_json::Value {
    let rx = rx.clone();
    tokio::task::spawn_blocking(move || {
        let rx = rx.lock().unwrap();
        let end = Instant::now() + WAIT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).expect("an answer in time");
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && pred(&v)
            {
                return v;
            }
        }
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn channel_speaks_mcp_over_stdio_pushes_events_and_replies_through_the_gates() {
    use std::io::Write as _;
    let b = backend().await;
    let bolt = user(&b, "bolt", true).await;
    let ann = user(&b, "ann", false).await;
    let room = b
        .admin
        .create_conversation(&CreateConversation {
            title: "dm".into(),
            is_workroom: false,
            member_ids: vec![bolt.id, ann.id],
        })
        .await
        .unwrap();
    let key = b.admin.mint_mcp_key(bolt.id).await.unwrap().key;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, &key).unwrap();
    // The watcher's flags, the channel subcommand.
    let cmd = watch_cmd(&b, &bolt, &key_file, dir.path());
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut cmd2 = Command::new(env!("CARGO_BIN_EXE_hoop"));
    cmd2.args(["bridge", "channel"])
        .args(&args[2..])
        .env("HOOP_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Reaped(cmd2.spawn().unwrap());
    let mut stdin = child.0.stdin.take().unwrap();
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let mut send = |v: serde_json::Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    let init = next_json(&rx, |v| v["id"] == 1).await;
    assert!(
        init["result"]["capabilities"]["experimental"]["claude/channel"].is_object(),
        "{init}"
    );
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = next_json(&rx, |v| v["id"] == 2).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["reply"]);
    // First round = baseline; then a message.
    let state = dir.path().join("state-default.json");
    let start = Instant::now();
    while !state.exists() {
        assert!(start.elapsed() < WAIT, "the channel never watched");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m = b
        .admin
        .post_as(
            room.id,
            &PostAs {
                sender_id: ann.id,
                message: SendMessage {
                    body: "can you check?".into(),
                    mentions: vec![],
                },
                kind: Default::default(),
            },
        )
        .await
        .unwrap();
    let n = next_json(&rx, |v| v["method"] == "notifications/claude/channel").await;
    assert_eq!(
        n["params"],
        serde_json::json!({"content": "@ann in dm: can you check?", "meta": {
            "type": "dm", "conversation_id": room.id.to_string(),
            "message_id": m.id.to_string(), "sender_id": ann.id.to_string()}})
    );
    // The reply goes through the gates: the unread message is shown first,
    // nothing sent; then the same reply goes out.
    let reply = |id: i64| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "reply", "arguments": {"conversation_id": room.id, "text": "on it"}}})
    };
    send(reply(3));
    let r = next_json(&rx, |v| v["id"] == 3).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("#{} @ann: can you check?", m.id)),
        "{text}"
    );
    assert!(text.contains("chat_read conversation_id="), "{text}");
    send(reply(4));
    let r = next_json(&rx, |v| v["id"] == 4).await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    let page = b.admin.read_messages(room.id, 5, None).await.unwrap();
    let mine: Vec<_> = page
        .messages
        .iter()
        .filter(|x| x.sender_id == bolt.id)
        .map(|x| x.body.as_str())
        .collect();
    assert_eq!(mine, vec!["on it"], "sent exactly once");
    // Markdown is refused before anything is sent.
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "reply", "arguments": {"conversation_id": room.id, "text": "**bold**"}}}),
    );
    let r = next_json(&rx, |v| v["id"] == 5).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let page = b.admin.read_messages(room.id, 5, None).await.unwrap();
    let mine: Vec<_> = page
        .messages
        .iter()
        .filter(|x| x.sender_id == bolt.id)
        .map(|x| x.body.as_str())
        .collect();
    assert_eq!(mine, vec!["on it"], "the refused markdown sent nothing");
    drop(child);
}

#[test]
fn handover_without_a_summary_exits_78_and_keeps_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let thread = dir.path().join("codex").join("thread");
    std::fs::create_dir_all(thread.parent().unwrap()).unwrap();
    std::fs::write(&thread, "OLD").unwrap();
    let mut out = Command::new(env!("CARGO_BIN_EXE_hoop"));
    out.args([
        "bridge",
        "handover",
        "--to",
        "NEW",
        "--summary-cmd",
        "false",
    ])
    .arg("--state-dir")
    .arg(dir.path())
    .args(["--codex-cmd", "true {thread} {text}"])
    .env("HOOP_LOG", "warn");
    let out = exits(out);
    assert_eq!(out.status.code(), Some(78), "{out:?}");
    assert_eq!(std::fs::read_to_string(&thread).unwrap(), "OLD");
    // With a summary the switch happens.
    let summary = dir.path().join("summary.txt");
    std::fs::write(&summary, "we did X").unwrap();
    let mut out = Command::new(env!("CARGO_BIN_EXE_hoop"));
    out.args(["bridge", "handover", "--to", "NEW", "--summary-file"])
        .arg(&summary)
        .arg("--state-dir")
        .arg(dir.path())
        .args(["--codex-cmd", "true {thread} {text}"]);
    let out = exits(out);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(&thread).unwrap(), "NEW");
}

#[test]
fn a_second_ack_of_the_same_event_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pending = dir.path().join("codex").join("pending");
    std::fs::create_dir_all(&pending).unwrap();
    std::fs::write(
        pending.join("m5.json"),
        r#"{"id":"m5","line":"x","created_at":0,"delivered_at":1}"#,
    )
    .unwrap();
    let ack = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
        c.args(["bridge", "ack", "m5", "--state-dir"])
            .arg(dir.path());
        exits(c)
    };
    assert_eq!(ack().status.code(), Some(0));
    let again = ack();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already acknowledged"),
        "{again:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_for_codex_keeps_the_event_pending_until_acked() {
    let b = backend().await;
    let bolt = user(&b, "bolt", true).await;
    let ann = user(&b, "ann", false).await;
    let room = b
        .admin
        .create_conversation(&CreateConversation {
            title: "dm".into(),
            is_workroom: false,
            member_ids: vec![bolt.id, ann.id],
        })
        .await
        .unwrap();
    let key = b.admin.mint_mcp_key(bolt.id).await.unwrap().key;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, &key).unwrap();
    // A stand-in codex: records its arguments, accepts.
    let (codex_cmd, calls) = codex_recorder(dir.path(), "codex-standin");
    let mut cmd = watch_cmd(&b, &bolt, &key_file, dir.path());
    cmd.args(["--client", "codex", "--thread", "T1", "--codex-cmd"])
        .arg(&codex_cmd);
    let child = Reaped(cmd.spawn().unwrap());
    // A Codex window's session is its thread.
    let state = dir.path().join("state-T1.json");
    let start = Instant::now();
    while !state.exists() {
        assert!(start.elapsed() < WAIT, "the watcher never wrote its state");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m = b
        .admin
        .post_as(
            room.id,
            &PostAs {
                sender_id: ann.id,
                message: SendMessage {
                    body: "for codex".into(),
                    mentions: vec![],
                },
                kind: Default::default(),
            },
        )
        .await
        .unwrap();
    let pending = dir
        .path()
        .join("codex")
        .join("windows")
        .join("T1")
        .join("pending")
        .join(format!("m{}.json", m.id));
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&calls).unwrap_or_default();
        if text.contains(&format!("message_id={}", m.id)) {
            assert!(
                text.starts_with("queue|--thread|T1|--message|🔔 @ann in dm: for codex"),
                "{text}"
            );
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "codex was never called: {text:?}; pending: {:?}",
            std::fs::read_dir(
                dir.path()
                    .join("codex")
                    .join("windows")
                    .join("T1")
                    .join("pending")
            )
            .map(|d| d
                .filter_map(Result::ok)
                .map(|e| e.file_name())
                .collect::<Vec<_>>())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(child);
    let p: serde_json::Value = serde_json::from_slice(&std::fs::read(&pending).unwrap()).unwrap();
    assert!(p["delivered_at"].is_i64(), "accepted, still pending: {p}");
    let mut ack = Command::new(env!("CARGO_BIN_EXE_hoop"));
    ack.args(["bridge", "ack", &format!("m{}", m.id), "--state-dir"])
        .arg(dir.path());
    let out = tokio::task::spawn_blocking(move || exits(ack))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("receipt written for m{}\n", m.id)
    );
    assert!(
        dir.path()
            .join("codex")
            .join("windows")
            .join("T1")
            .join("receipts")
            .join(format!("m{}", m.id))
            .exists(),
        "the receipt exists"
    );
    // The next round forgets what was read: the pending entry is gone.
    let mut again = watch_cmd(&b, &bolt, &key_file, dir.path());
    again
        .args(["--client", "codex", "--thread", "T1", "--codex-cmd"])
        .arg(&codex_cmd)
        .args(["--max-rounds", "1"]);
    let out = tokio::task::spawn_blocking(move || exits(again))
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        !pending.exists(),
        "{} still pending after its ack",
        pending.display()
    );
}
