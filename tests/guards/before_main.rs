//! On Linux with glibc `hoop guard …` is answered before Rust's start-up
//! (`src/early.rs`); every other command meets that start-up as usual.
//! Seen from outside through `/proc`: Rust's start-up catches SIGSEGV and
//! SIGBUS (its stack-overflow report) and ignores SIGPIPE; the early path
//! ignores SIGPIPE only. Each process is inspected while it waits for its
//! payload on stdin, so start-up is over whichever door it took.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{CLAUDE_PRE, Env, HOOP};

const SIGBUS: u32 = 7;
const SIGSEGV: u32 = 11;
const SIGPIPE: u32 = 13;

/// The `read` system call's number, as `/proc/<pid>/syscall` shows it.
#[cfg(target_arch = "x86_64")]
const SYS_READ: &str = "0";
#[cfg(target_arch = "aarch64")]
const SYS_READ: &str = "63";

/// The signal masks of a process blocked reading its stdin.
struct Masks {
    caught: u64,
    ignored: u64,
}

impl Masks {
    fn catches(&self, sig: u32) -> bool {
        self.caught & (1 << (sig - 1)) != 0
    }
    fn ignores(&self, sig: u32) -> bool {
        self.ignored & (1 << (sig - 1)) != 0
    }
}

/// Waits (bounded) until `child` blocks in `read(0, …)`, then reads its masks.
fn masks_while_reading_stdin(child: &Child) -> Masks {
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let syscall = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
        let mut fields = syscall.split_whitespace();
        if fields.next() == Some(SYS_READ) && fields.next() == Some("0x0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hoop (pid {pid}) never blocked reading stdin: {syscall}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = |key: &str| {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        u64::from_str_radix(line[key.len()..].trim(), 16).unwrap()
    };
    Masks {
        caught: mask("SigCgt:"),
        ignored: mask("SigIgn:"),
    }
}

fn spawn(env: &Env, args: &[&str]) -> Child {
    Command::new(HOOP)
        .args(args)
        .env("HOOP_ROOT", env.root())
        .env("HOME", env.home_dir())
        .env_remove("TMPDIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_guard_is_answered_before_rust_start_up_and_answers_the_same() {
    let env = Env::new();
    let mut child = spawn(&env, &["guard", "act"]);
    let masks = masks_while_reading_stdin(&child);
    assert!(
        !masks.catches(SIGSEGV) && !masks.catches(SIGBUS),
        "Rust's start-up ran before the guard (SigCgt {:#x})",
        masks.caught
    );
    assert!(masks.ignores(SIGPIPE), "SigIgn {:#x}", masks.ignored);
    let mut payload: serde_json::Value = serde_json::from_str(CLAUDE_PRE).unwrap();
    payload["tool_input"]["command"] = "rm -rf ~".into();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "rm -rf ~ is blocked");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rule `destroy`"), "{stderr}");
}

#[test]
fn other_commands_meet_rust_start_up_as_usual() {
    let env = Env::new();
    // hook-status reads its payload on stdin too, but is dispatched by main.
    let mut child = spawn(&env, &["hook-status", "--config", "/nonexistent/spec.json"]);
    let masks = masks_while_reading_stdin(&child);
    assert!(
        masks.catches(SIGSEGV) && masks.catches(SIGBUS),
        "SigCgt {:#x}",
        masks.caught
    );
    assert!(masks.ignores(SIGPIPE), "SigIgn {:#x}", masks.ignored);
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "hook-status always exits 0");
}
