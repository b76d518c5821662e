//! The daemon's log in a file (launchd's `StandardErrorPath`, journald's
//! pipe): plain text, no colour escapes.

use std::process::{Command, Stdio};
use std::time::Instant;

use hoop_core::home::{Home, HomeConfig, ROOT_ENV};

use crate::harness::WAIT;

/// A home whose backend is not there: the daemon prints its `🚀` line, then
/// keeps retrying the login, which is all this test needs.
fn unreachable_home(root: &std::path::Path, name: &str) -> Home {
    let home = Home::new(root, name).unwrap();
    std::fs::create_dir_all(home.dir()).unwrap();
    hoop_core::fsutil::write_json_atomic(
        &home.config_path(),
        &HomeConfig {
            base_url: "http://127.0.0.1:9".into(),
            email: "plain@example.com".into(),
            login_code: None,
        },
        Default::default(),
    )
    .unwrap();
    home
}

#[test]
fn a_daemon_logging_into_a_file_writes_no_colour_escapes() {
    let root = tempfile::tempdir().unwrap();
    let home = unreachable_home(root.path(), "plain");
    let log = root.path().join("sentinel.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["sentinel", "run", "--home", &home.name])
        .env(ROOT_ENV, root.path())
        .env_remove("NO_COLOR")
        .env("HOOP_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // The login retry comes after the 🚀 line: both are in the file.
        if text.contains("🚀") && text.contains("login failed") {
            break text;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the daemon exited ({st}):\n{text}");
        }
        assert!(Instant::now() < deadline, "no 🚀 line:\n{text}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    for line in text.lines() {
        assert!(!line.contains('\u{1b}'), "an escape code in {line:?}");
    }
    assert!(text.contains(" INFO "), "levels stay readable:\n{text}");
}
