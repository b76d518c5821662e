//! `hoop status` against real sentinel state: a real daemon on the
//! reference backend, a home whose lock a process really holds, a home
//! nobody runs.

use std::process::Command;

use hoop_core::home::{Home, HomeConfig, ROOT_ENV};
use serde_json::Value;

use crate::harness::*;

/// `hoop status --json` for `root`, parsed.
pub fn status_json(root: &std::path::Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["status", "--json", "--manager", "none"])
        .env(ROOT_ENV, root)
        // A machine of its own: nothing installed in this HOME yet.
        .env("HOME", root.join("machine-home"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "hoop.status/1");
    v
}

/// The row of `home` in a report.
pub fn row<'a>(report: &'a Value, home: &str) -> &'a Value {
    report["homes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["home"] == home)
        .unwrap_or_else(|| panic!("no row for {home}: {report:#}"))
}

fn plain_home(root: &std::path::Path, name: &str) -> Home {
    let home = Home::new(root, name).unwrap();
    std::fs::create_dir_all(home.dir()).unwrap();
    hoop_core::fsutil::write_json_atomic(
        &home.config_path(),
        &HomeConfig {
            base_url: "http://127.0.0.1:9".into(),
            email: format!("{name}@example.com"),
            login_code: None,
        },
        Default::default(),
    )
    .unwrap();
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_live_daemon_a_held_lock_and_an_idle_home() {
    let w = World::new(Opts::default()).await;
    // A home nobody runs, with a lock file left behind: not alive.
    let idle = plain_home(w.root.path(), "idle");
    std::fs::write(idle.account_lock_path(), "999999\n").unwrap();
    // A home whose account lock this test process really holds, with a
    // status file a predecessor wrote.
    let held = plain_home(w.root.path(), "held");
    let _lock = hoop_sentinel::lock::account(&held.account_lock_path()).unwrap();
    // ... and a message it gave up on two minutes ago.
    let gave_up_at = hoop_core::clock::now_unix() - 120;
    std::fs::write(
        held.dir().join("sentinel-status.json"),
        format!(
            r#"{{"pid":1,"started_at":1,"ws_connected":true,"last_round_at":5,"last_round_result":"auth_dead","consecutive_failures":3,"gave_up":[{{"conversation_id":7,"message_id":41,"offers":3,"at":{gave_up_at}}}]}}"#
        ),
    )
    .unwrap();

    let mut d = w.spawn();
    d.ready().await;
    let pid = d.pid();
    // The connect kicks a first round; the status shows the socket and it.
    let mut report = Value::Null;
    until("status shows the daemon connected after a round", || {
        report = status_json(w.root.path());
        let r = row(&report, HOME_NAME);
        let ok = r["ws_connected"] == true && !r["last_round_result"].is_null();
        async move { ok }
    })
    .await;
    let bolt = row(&report, HOME_NAME);
    assert_eq!(bolt["alive"], true, "{bolt:#}");
    assert_eq!(bolt["pid"], pid, "{bolt:#}");
    assert_eq!(bolt["consecutive_failures"], 0, "{bolt:#}");
    assert_eq!(bolt["problems"], serde_json::json!([]), "{bolt:#}");
    // Nothing installed on this machine: the install plan says so.
    assert_eq!(bolt["unit"]["installed"], false, "{bolt:#}");
    assert!(
        bolt["unit"]["enabled"].is_null(),
        "no manager asked: {bolt:#}"
    );
    assert!(bolt["unit"]["running"].is_null(), "{bolt:#}");
    let drift: Vec<&str> = bolt["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(drift.iter().any(|d| d.starts_with("dir ")), "{drift:?}");
    let machine: Vec<&str> = report["machine_drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        machine.iter().any(|d| d.starts_with("unit ")),
        "{machine:?}"
    );

    let h = row(&report, "held");
    assert_eq!(h["alive"], true, "{h:#}");
    assert_eq!(h["pid"], std::process::id(), "{h:#}");
    assert!(
        h["ws_connected"].is_null(),
        "a predecessor's file does not speak for the holder: {h:#}"
    );
    assert_eq!(h["last_round_result"], "auth_dead", "{h:#}");
    assert_eq!(h["consecutive_failures"], 3, "{h:#}");
    assert_eq!(
        h["gave_up"],
        serde_json::json!([{"conversation_id": 7, "message_id": 41, "offers": 3, "at": gave_up_at}]),
        "{h:#}"
    );

    let i = row(&report, "idle");
    assert_eq!(i["alive"], false, "a lock file is not a live daemon: {i:#}");
    assert!(i["pid"].is_null(), "{i:#}");
    assert_eq!(i["ws_connected"], false, "{i:#}");

    // Guards: not armed until the home's hooks are in the agent's settings;
    // then armed, until act_guard is disarmed with `none`.
    assert_eq!(bolt["guards"]["hooks_installed"], false, "{bolt:#}");
    assert_eq!(bolt["guards"]["armed"], false, "{bolt:#}");
    let settings = w.root.path().join("claude-home/.claude/settings.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args([
            "hooks",
            "install",
            "--claude",
            "--home",
            HOME_NAME,
            "--settings",
        ])
        .arg(&settings)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let guards = |root: &std::path::Path| row(&status_json(root), HOME_NAME)["guards"].clone();
    let g = guards(w.root.path());
    assert_eq!(g["hooks_installed"], true, "{g:#}");
    assert_eq!(g["armed"], true, "{g:#}");
    assert!(!g["act_rules"].as_array().unwrap().is_empty(), "{g:#}");
    std::fs::write(w.root.path().join("act_guard_rules"), "none\n").unwrap();
    let g = guards(w.root.path());
    assert_eq!(g["act_rules"], serde_json::json!([]), "{g:#}");
    assert_eq!(g["armed"], false, "{g:#}");

    // The table: one line per home.
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["status", "--manager", "none"])
        .env(ROOT_ENV, w.root.path())
        .env("HOME", w.root.path().join("machine-home"))
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    for home in [HOME_NAME, "held", "idle"] {
        assert_eq!(
            table
                .lines()
                .filter(|l| l.starts_with(&format!("{home} ")))
                .count(),
            1,
            "{home}:\n{table}"
        );
    }
    // A given-up message is named with the command that tells its story;
    // the other homes gave up on nothing.
    let gave_up: Vec<&str> = table.lines().filter(|l| l.contains("gave up")).collect();
    assert_eq!(
        gave_up,
        vec![
            "held: gave up on message 41 in room 7 2m ago, after 3 offers with neither a reply nor a pass; `hoop why --home held --message 41` tells its story, answer it by hand"
        ],
        "{table}"
    );
    assert_eq!(i["gave_up"], serde_json::json!([]), "{i:#}");

    // Stopped: not alive, not connected; the last round stays readable.
    assert!(d.term().success());
    let report = status_json(w.root.path());
    let bolt = row(&report, HOME_NAME);
    assert_eq!(bolt["alive"], false, "{bolt:#}");
    assert_eq!(bolt["ws_connected"], false, "{bolt:#}");
    assert!(!bolt["last_round_result"].is_null(), "{bolt:#}");
}

/// A dropped socket shows at once (the WebSocket task writes the status
/// file), and so does its return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_follows_the_socket_down_and_up() {
    let mut w = World::new(Opts::default()).await;
    let mut d = w.spawn();
    d.ready().await;
    let ws = |root: &std::path::Path| row(&status_json(root), HOME_NAME)["ws_connected"].clone();
    until("connected", || {
        let ok = ws(w.root.path()) == true;
        async move { ok }
    })
    .await;
    w.stop_backend().await;
    d.wait_log("WebSocket lost").await;
    let report = status_json(w.root.path());
    let bolt = row(&report, HOME_NAME);
    assert_eq!(bolt["alive"], true, "{bolt:#}");
    assert_eq!(bolt["ws_connected"], false, "{bolt:#}");
    w.start_backend().await;
    d.wait_log_count("🔌 WS connected", 2).await;
    until("connected again", || {
        let ok = ws(w.root.path()) == true;
        async move { ok }
    })
    .await;
    assert!(d.term().success());
}
