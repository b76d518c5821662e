//! `hoop demo`, the README's first command: it must show the whole path of
//! one message with the real `claude` CLI, finish in under a minute, clean
//! up after itself, and say how to get the CLI when there is none.

use std::process::Command;
use std::time::{Duration, Instant};

fn claude_bin() -> String {
    let p = std::env::var("HOOP_CLAUDE_BIN").unwrap_or_else(|_| {
        panic!(
            "HOOP_CLAUDE_BIN is not set: run ./tests/run (the demo test drives the real claude CLI)"
        )
    });
    assert!(
        std::path::Path::new(&p).is_file(),
        "HOOP_CLAUDE_BIN={p} does not exist"
    );
    p
}

#[test]
fn the_demo_shows_one_message_answered_live_and_cleans_up() {
    let claude = claude_bin();
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .arg("demo")
        .env("HOOP_CLAUDE_BIN", &claude)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed:\n{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(60), "the demo took {took:?}");
    for needle in [
        "model stand-in",
        "🚀",
        "🔌 WS connected",
        "🔔 message.new",
        "👋 wake",
        "🧠 turn finished class=Ok",
        "📌 cursor committed",
        "@bolt (message",
        "tokens in/cached/out",
        "temporary home removed",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // The card line shows the turn's real cost, never a 0/0/0 read before
    // the sentinel reported it.
    let card = stdout
        .lines()
        .find(|l| l.contains(" card ") && l.contains("tokens in/cached/out = "))
        .unwrap_or_else(|| panic!("no card line with figures in:\n{stdout}"));
    let figures: Vec<u64> = card
        .rsplit_once("tokens in/cached/out = ")
        .unwrap()
        .1
        .split('/')
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert_eq!(figures.len(), 3, "{card}");
    assert!(figures[0] > 0 && figures[2] > 0, "{card}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the demo left files behind: {left:?}");
}

#[test]
fn without_claude_it_says_how_to_get_it_and_fails() {
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .arg("demo")
        .current_dir(empty.path())
        .env_remove("HOOP_CLAUDE_BIN")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("npm install --prefix tests"), "{err}");
    assert!(err.contains("./tests/run"), "{err}");
}
