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

/// Start the daemon of an unreachable home with its stderr appended to
/// `stderr_file`, and wait until `log` (the file the daemon ends up writing)
/// holds its `🚀` line and a login retry.
fn run_until_logged(
    root: &std::path::Path,
    home: &Home,
    stderr_file: &std::path::Path,
    log: &std::path::Path,
) -> String {
    let stderr = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(stderr_file)
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["sentinel", "run", "--home", &home.name])
        .env(ROOT_ENV, root)
        .env("HOOP_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    let text = loop {
        let text = tail_text(log);
        if text.contains("🚀") && text.contains("login failed") {
            break text;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the daemon exited ({st}):\n{text}");
        }
        assert!(Instant::now() < deadline, "no 🚀 line in {log:?}:\n{text}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    text
}

/// The file's text after the old line and its filler, if it has them.
fn tail_text(path: &std::path::Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let rest = match bytes.strip_prefix(OLD_LINE) {
        Some(rest) => &rest[rest.iter().take_while(|b| **b == b'#').count()..],
        None => &bytes[..],
    };
    String::from_utf8_lossy(rest).into_owned()
}

const OLD_LINE: &[u8] = b"an old line from last month\n";

/// A log file already at the bound: an old line, then filler up to it.
fn full_log(path: &std::path::Path) {
    let max = hoop_core::limits::SENTINEL_LOG_MAX_BYTES as usize;
    let mut bytes = OLD_LINE.to_vec();
    bytes.resize(max, b'#');
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_full_launchd_log_moves_to_dot_1_and_the_daemon_goes_on_in_a_fresh_file() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let home = unreachable_home(root.path(), "rolled");
    let log = home.sentinel_log_path();
    full_log(&log);
    let text = run_until_logged(root.path(), &home, &log, &log);

    let old = log.with_file_name("sentinel.err.log.1");
    let moved = std::fs::read(&old).expect("the full log was moved to .1");
    assert!(moved.starts_with(OLD_LINE), "the old lines are kept in .1");
    assert!(
        moved.len() as u64 >= hoop_core::limits::SENTINEL_LOG_MAX_BYTES,
        ".1 is the full file: {} bytes",
        moved.len()
    );
    let fresh = std::fs::read(&log).unwrap();
    assert!(
        (fresh.len() as u64) < hoop_core::limits::SENTINEL_LOG_MAX_BYTES / 2,
        "the daemon writes on in a fresh file, not the full one: {} bytes",
        fresh.len()
    );
    assert!(!fresh.starts_with(OLD_LINE), "{text}");
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the fresh log is its owner's only");
}

#[test]
fn a_log_the_operator_chose_is_never_rotated() {
    let root = tempfile::tempdir().unwrap();
    let home = unreachable_home(root.path(), "chosen");
    // A full file at the operator's own path, and a full file at the home's
    // log path that is NOT the daemon's stderr: neither is the daemon's to move.
    let chosen = root.path().join("chosen.log");
    full_log(&chosen);
    full_log(&home.sentinel_log_path());
    run_until_logged(root.path(), &home, &chosen, &chosen);

    let bytes = std::fs::read(&chosen).unwrap();
    assert!(
        bytes.starts_with(OLD_LINE),
        "the operator's file is untouched"
    );
    assert!(!root.path().join("chosen.log.1").exists());
    assert!(
        !home
            .sentinel_log_path()
            .with_file_name("sentinel.err.log.1")
            .exists(),
        "the home's log path was not the daemon's stderr: nothing moved"
    );
}
