//! Benchmark figures of one sentinel daemon (not a test; prints numbers):
//! - idle RSS of `hoop sentinel run` (the daemon alone, not its agent);
//! - wakeups per minute while idle (context switches of all its threads);
//! - overhead from a `message.new` frame to the turn's stdin write, beyond
//!   the debounce (from the daemon's own log timestamps).
//!
//! Linux only (reads `/proc`). Run:
//!   scripts/build-release.sh && HOOP_CLAUDE_BIN=$PWD/tests/node_modules/.bin/claude \
//!     cargo run --release --example sentinel_bench [idle_secs]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::types::SendMessage;
use hoop_core::home::{Home, HomeConfig};
use hoop_standin::{Reply, Standin};
use serde_json::json;

fn hoop_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/examples/sentinel_bench → target/<profile>/hoop
    exe.parent().unwrap().parent().unwrap().join("hoop")
}

fn proc_status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Context switches of every thread of `pid` (each one is a wakeup).
fn switches(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|t| t.ok())
                .map(|t| {
                    let s = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
                    s.lines()
                        .filter(|l| l.contains("ctxt_switches"))
                        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                        .sum::<u64>()
                })
                .sum()
        })
        .unwrap_or(0)
}

fn log_time(line: &str) -> Option<f64> {
    // 2026-12-02T13:27:57.630998Z …
    let ts = line.split_whitespace().next()?;
    let t = ts.split('T').nth(1)?.trim_end_matches('Z');
    let mut parts = t.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

#[tokio::main]
async fn main() {
    let idle_secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let claude = std::env::var("HOOP_CLAUDE_BIN").expect("set HOOP_CLAUDE_BIN to the claude CLI");
    let root = tempfile::tempdir().unwrap();
    let backend = hoop_refbackend::spawn("127.0.0.1:0".parse().unwrap(), Default::default())
        .await
        .unwrap();
    let standin = Standin::spawn().await.unwrap();
    let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
    let human = admin
        .create_user(&CreateUser {
            email: "h@example.com".into(),
            username: "h".into(),
            nickname: None,
            is_agent: false,
        })
        .await
        .unwrap();
    let agent = admin
        .create_user(&CreateUser {
            email: "a@example.com".into(),
            username: "a".into(),
            nickname: None,
            is_agent: true,
        })
        .await
        .unwrap();
    let room = admin
        .create_conversation(&CreateConversation {
            title: "bench".into(),
            is_workroom: false,
            member_ids: vec![human.id, agent.id],
        })
        .await
        .unwrap();
    let home = Home::new(root.path(), "a").unwrap();
    std::fs::create_dir_all(home.dir()).unwrap();
    hoop_core::fsutil::write_json_atomic(
        &home.config_path(),
        &HomeConfig {
            base_url: backend.base_url(),
            email: agent.email.clone(),
            login_code: None,
        },
        Default::default(),
    )
    .unwrap();
    let claude_home = root.path().join("claude-home");
    std::fs::create_dir_all(&claude_home).unwrap();
    let mut env: serde_json::Map<String, serde_json::Value> = standin
        .claude_env()
        .into_iter()
        .map(|(k, v)| (k, v.into()))
        .collect();
    env.insert("HOME".into(), claude_home.display().to_string().into());
    hoop_core::fsutil::write_json_atomic(
        &home.dir().join("sentinel.json"),
        &json!({"claude_bin": claude, "env": env}),
        Default::default(),
    )
    .unwrap();
    let log = root.path().join("daemon.log");
    let mut child = Command::new(hoop_bin())
        .args(["sentinel", "run", "--home", "a"])
        .env("HOOP_ROOT", root.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    let wait_log = |needle: &str, n: usize| {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let t = std::fs::read_to_string(&log).unwrap_or_default();
            if t.matches(needle).count() >= n {
                return t;
            }
            assert!(Instant::now() < until, "no {needle:?} in:\n{t}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_log("🔌 WS connected", 1);
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Idle: RSS and wakeups.
    let s0 = switches(pid);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(idle_secs)).await;
    let per_min = (switches(pid) - s0) as f64 * 60.0 / t0.elapsed().as_secs_f64();
    let rss_kb = proc_status(pid, "VmRSS:");
    let threads = proc_status(pid, "Threads:");
    println!(
        "idle RSS of the daemon: {:.1} MiB ({threads} threads)",
        rss_kb as f64 / 1024.0
    );
    println!(
        "idle wakeups (context switches, all threads): {per_min:.1} per minute over {idle_secs} s"
    );

    // Frame → stdin overhead, hot process: N messages, one at a time.
    const N: usize = 10;
    standin.set_default(Reply::text("ok"));
    let mut overheads = vec![];
    let mut end_to_end = vec![];
    for i in 0..N {
        let before = standin.request_count();
        let posted = Instant::now();
        admin
            .post_as(
                room.id,
                &PostAs {
                    sender_id: human.id,
                    message: SendMessage {
                        body: format!("@a message {i}"),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        while standin.request_count() == before {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        end_to_end.push((posted.elapsed().as_secs_f64() - 3.0) * 1000.0);
        let text = wait_log("📌 cursor committed", i + 1);
        let bell = text
            .lines()
            .filter(|l| l.contains("🔔 message.new"))
            .nth(i)
            .and_then(log_time);
        let turn = text
            .lines()
            .filter(|l| l.contains("🧠 turn started"))
            .nth(i)
            .and_then(log_time);
        if let (Some(b), Some(t)) = (bell, turn) {
            overheads.push((t - b - 3.0) * 1000.0);
        }
    }
    overheads.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "message.new frame → turn's stdin write, beyond the 3 s debounce: median {:.1} ms, max {:.1} ms (n={})",
        overheads[overheads.len() / 2],
        overheads.last().unwrap(),
        overheads.len()
    );
    println!(
        "RSS of the daemon after {N} turns: {:.1} MiB",
        proc_status(pid, "VmRSS:") as f64 / 1024.0
    );
    end_to_end.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "post → model API request (daemon + the warm claude process), beyond the debounce: median {:.1} ms, max {:.1} ms",
        end_to_end[end_to_end.len() / 2],
        end_to_end.last().unwrap()
    );
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let _ = child.wait();
    standin.shutdown().await;
    backend.shutdown().await;
}
