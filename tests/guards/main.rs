//! End to end through the real `hoop` binary: the hook commands read real
//! payload shapes (captured from Claude Code, and Cursor's hooks.json v1) on
//! stdin and answer in both contracts; `hoop hooks install` merges into real
//! settings files that already hold other people's hooks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod before_main;
mod real_cli;

const HOOP: &str = env!("CARGO_BIN_EXE_hoop");
const CLAUDE_PRE: &str = include_str!("../../guards/tests/data/claude_pretooluse.json");
const CLAUDE_POST: &str = include_str!("../../guards/tests/data/claude_posttooluse.json");
const CURSOR_SHELL: &str = include_str!("../../guards/tests/data/cursor_before_shell.json");
const CURSOR_MCP: &str = include_str!("../../guards/tests/data/cursor_before_mcp.json");

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A sandbox: its own hoop root and HOME, no inherited guard settings.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn home_dir(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(HOOP);
        c.args(args)
            .env("HOOP_ROOT", self.root())
            .env("HOME", self.home_dir())
            .env_remove("HOOP_AGENT")
            .env_remove("HOOP_HOME")
            .env_remove("TMPDIR")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("HOOP_MEMORY_MAX_BYTES");
        c
    }
    fn run(&self, args: &[&str], stdin: &[u8]) -> Out {
        self.run_with(self.cmd(args), stdin)
    }
    fn run_with(&self, mut c: Command, stdin: &[u8]) -> Out {
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hoop");
        {
            let mut si = child.stdin.take().unwrap();
            // A guard may stop reading early (oversized payload): ignore EPIPE.
            let _ = si.write_all(stdin);
        }
        let o = child.wait_with_output().unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

fn table() -> Vec<(Option<String>, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("guards/tests/data/act");
    hoop_guards::act::table::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the act_guard table: {e}"))
        .into_iter()
        .map(|r| (r.want, r.cmd))
        .collect()
}

fn claude_payload(command: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
    v["tool_input"]["command"] = json!(command);
    // The table is written for an unknown working directory.
    v.as_object_mut().unwrap().remove("cwd");
    serde_json::to_vec(&v).unwrap()
}

fn cursor_payload(command: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(CURSOR_SHELL).unwrap();
    v["command"] = json!(command);
    v.as_object_mut().unwrap().remove("cwd");
    serde_json::to_vec(&v).unwrap()
}

fn rule_in(text: &str) -> Option<String> {
    if text.contains("could not check this command") {
        return Some("unchecked".into());
    }
    let start = text.find("(rule `")? + "(rule `".len();
    let end = text[start..].find('`')? + start;
    Some(text[start..end].to_string())
}

/// The whole verdict table, in all three answer forms.
#[test]
fn act_table_through_both_hook_formats() {
    let env = Env::new();
    let rows = table();
    assert!(rows.len() >= 300);
    let mut failures = Vec::new();
    for (want, cmd) in &rows {
        // Claude Code, exit-code form.
        let o = env.run(&["guard", "act"], &claude_payload(cmd));
        let got = match o.code {
            0 => None,
            2 => rule_in(&o.stderr),
            c => Some(format!("exit {c}: {}", o.stderr)),
        };
        if &got != want || !o.stdout.is_empty() {
            failures.push(format!(
                "claude exit-code {cmd:?}: want {want:?}, got {got:?}"
            ));
        }
        // Claude Code, JSON form.
        let o = env.run(&["guard", "act", "--format", "json"], &claude_payload(cmd));
        let got = if o.stdout.trim().is_empty() {
            None
        } else {
            let v: Value = serde_json::from_str(&o.stdout).unwrap();
            assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
            assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
            rule_in(
                v["hookSpecificOutput"]["permissionDecisionReason"]
                    .as_str()
                    .unwrap(),
            )
        };
        if &got != want || o.code != 0 {
            failures.push(format!("claude json {cmd:?}: want {want:?}, got {got:?}"));
        }
        // Cursor.
        let o = env.run(&["guard", "act"], &cursor_payload(cmd));
        let v: Value = serde_json::from_str(&o.stdout).unwrap_or(Value::Null);
        let got = match v["permission"].as_str() {
            Some("allow") => None,
            Some("deny") => {
                assert_eq!(v["user_message"], v["userMessage"]);
                assert_eq!(v["agent_message"], v["agentMessage"]);
                rule_in(v["agentMessage"].as_str().unwrap_or(""))
            }
            _ => Some(format!("bad answer {:?}", o.stdout)),
        };
        if &got != want || o.code != 0 {
            failures.push(format!("cursor {cmd:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} rows:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn the_captured_payload_is_allowed_and_a_block_names_rule_command_and_remedy() {
    let env = Env::new();
    let o = env.run(&["guard", "act"], CLAUDE_PRE.as_bytes());
    assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{}", o.stderr);
    let o = env.run(
        &["guard", "act"],
        &claude_payload("cd /srv && ls; bash -c 'git push --force origin main'"),
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("(rule `destroy`)"), "{}", o.stderr);
    assert!(
        o.stderr.contains("`git push --force origin main`"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("Instead:"), "{}", o.stderr);
    // `--cursor` forces Cursor's answer even on a Claude-shaped payload.
    let o = env.run(&["guard", "act", "--cursor"], &claude_payload("git add -A"));
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["permission"], "deny");
}

#[test]
fn rules_file_empty_arms_all_none_disarms_names_select() {
    let env = Env::new();
    std::fs::create_dir_all(env.root()).unwrap();
    let rules = env.root().join("act_guard_rules");
    let rm = claude_payload("rm -rf build");
    let add = claude_payload("git add .");
    std::fs::write(&rules, "").unwrap();
    assert_eq!(
        env.run(&["guard", "act"], &rm).code,
        2,
        "empty file arms all"
    );
    std::fs::write(&rules, "none\n").unwrap();
    assert_eq!(env.run(&["guard", "act"], &rm).code, 0, "none disarms");
    std::fs::write(&rules, "git-add-all\n").unwrap();
    assert_eq!(env.run(&["guard", "act"], &rm).code, 0);
    assert_eq!(env.run(&["guard", "act"], &add).code, 2);
    std::fs::write(&rules, "all\n").unwrap();
    assert_eq!(env.run(&["guard", "act"], &rm).code, 2);
}

#[test]
fn release_is_allowed_only_for_the_configured_owner() {
    let env = Env::new();
    std::fs::create_dir_all(env.root()).unwrap();
    std::fs::write(
        env.root().join("act_guard_release"),
        "owner nova\ncommand make ship\n",
    )
    .unwrap();
    let p = claude_payload("make ship VERSION=1.2");
    assert_eq!(env.run(&["guard", "act"], &p).code, 2);
    let mut c = env.cmd(&["guard", "act"]);
    c.env("HOOP_AGENT", "bolt");
    assert_eq!(env.run_with(c, &p).code, 2);
    let mut c = env.cmd(&["guard", "act"]);
    c.env("HOOP_AGENT", "nova");
    assert_eq!(env.run_with(c, &p).code, 0);
    // The configured list replaces the default one.
    assert_eq!(
        env.run(&["guard", "act"], &claude_payload("npm publish"))
            .code,
        0
    );
}

#[test]
fn unreadable_payloads_fail_closed_and_other_tools_pass() {
    let env = Env::new();
    let o = env.run(&["guard", "act"], b"not json");
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("fail closed"));
    let big = vec![b' '; hoop_core::limits::HOOK_STDIN_CAP_BYTES + 10];
    let o = env.run(&["guard", "act"], &big);
    assert_eq!(o.code, 2, "an oversized payload is not parsed");
    let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
    v["tool_name"] = json!("Read");
    v["tool_input"] = json!({"file_path": "/etc/passwd"});
    let o = env.run(&["guard", "act"], &serde_json::to_vec(&v).unwrap());
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
}

#[test]
fn payload_cwd_resolves_relative_removals() {
    let env = Env::new();
    let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
    v["tool_input"]["command"] = json!("rm -rf build");
    v["cwd"] = json!("/tmp/job-1");
    assert_eq!(
        env.run(&["guard", "act"], &serde_json::to_vec(&v).unwrap())
            .code,
        0
    );
    v["cwd"] = json!("/home/user/work");
    assert_eq!(
        env.run(&["guard", "act"], &serde_json::to_vec(&v).unwrap())
            .code,
        2
    );
}

// ------------------------------------------------------------ memory_guard

fn memory_payload(tool: &str, input: Value, cwd: &Path) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
    v["tool_name"] = json!(tool);
    v["tool_input"] = input;
    v["cwd"] = json!(cwd);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn memory_guard_measures_the_file_after_the_edit() {
    let env = Env::new();
    let dir = env.dir.path().join("mem");
    std::fs::create_dir_all(&dir).unwrap();
    let mem = dir.join("MEMORY.md");
    std::fs::write(&mem, "a".repeat(90)).unwrap();
    let run = |tool: &str, input: Value| {
        let mut c = env.cmd(&["guard", "memory"]);
        c.env("HOOP_MEMORY_MAX_BYTES", "100");
        env.run_with(c, &memory_payload(tool, input, &dir))
    };
    // Grows past the limit: blocked, with the size after the edit.
    let o = run(
        "Edit",
        json!({"file_path": mem, "old_string": "aaaa", "new_string": "b".repeat(20)}),
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("106 bytes"), "{}", o.stderr);
    // Stays within: allowed.
    let o = run(
        "Edit",
        json!({"file_path": mem, "old_string": "aaaa", "new_string": "bbbbbbbb"}),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    // replace_all counts every occurrence.
    let o = run(
        "Edit",
        json!({"file_path": "MEMORY.md", "old_string": "a", "new_string": "aa", "replace_all": true}),
    );
    assert_eq!(o.code, 2, "relative path resolved against the payload cwd");
    // MultiEdit and Write.
    let o = run(
        "MultiEdit",
        json!({"file_path": mem, "edits": [
            {"old_string": "a".repeat(50), "new_string": ""},
            {"old_string": "a", "new_string": "c".repeat(30)}]}),
    );
    assert_eq!(o.code, 0, "shrinks then grows: 40 - 1 + 30 = 69");
    let o = run(
        "Write",
        json!({"file_path": mem, "content": "x".repeat(101)}),
    );
    assert_eq!(o.code, 2);
    // Not the memory file: never blocked.
    let o = run(
        "Write",
        json!({"file_path": dir.join("NOTES.md"), "content": "x".repeat(1000)}),
    );
    assert_eq!(o.code, 0);
    // JSON form.
    let mut c = env.cmd(&["guard", "memory", "--format", "json"]);
    c.env("HOOP_MEMORY_MAX_BYTES", "100");
    let o = env.run_with(
        c,
        &memory_payload(
            "Write",
            json!({"file_path": mem, "content": "x".repeat(101)}),
            &dir,
        ),
    );
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
}

#[test]
fn memory_limit_comes_from_the_root_file_then_the_default() {
    let env = Env::new();
    let dir = env.dir.path().join("mem");
    std::fs::create_dir_all(&dir).unwrap();
    let mem = dir.join("MEMORY.md");
    let p = memory_payload(
        "Write",
        json!({"file_path": mem, "content": "x".repeat(500)}),
        &dir,
    );
    assert_eq!(
        env.run(&["guard", "memory"], &p).code,
        0,
        "default is 40000"
    );
    std::fs::create_dir_all(env.root()).unwrap();
    std::fs::write(env.root().join("memory_guard_max_bytes"), "400\n").unwrap();
    assert_eq!(env.run(&["guard", "memory"], &p).code, 2);
    let big = memory_payload(
        "Write",
        json!({"file_path": mem, "content": "x".repeat(40_001)}),
        &dir,
    );
    std::fs::remove_file(env.root().join("memory_guard_max_bytes")).unwrap();
    assert_eq!(env.run(&["guard", "memory"], &big).code, 2);
}

// ------------------------------------------------------------ tool_phase

#[test]
fn tool_phase_writes_one_word_and_no_arguments() {
    let env = Env::new();
    let home = env.root().join("bolt");
    let mut v: Value = serde_json::from_str(CLAUDE_POST).unwrap();
    v["tool_input"]["command"] =
        json!("curl -H 'Authorization: Bearer sk-live-SECRET' https://10.1.2.3/");
    let payload = serde_json::to_vec(&v).unwrap();
    let o = env.run(&["guard", "phase", "--home", "bolt"], &payload);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""));
    let text = std::fs::read_to_string(home.join("phase.json")).unwrap();
    let phase: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(phase["phase"], "running");
    assert!(phase["at"].as_i64().unwrap() > 0);
    assert!(
        !text.contains("SECRET") && !text.contains("10.1.2.3"),
        "{text}"
    );
    assert_eq!(
        phase.as_object().unwrap().len(),
        2,
        "only the word and the time"
    );
    // $HOOP_HOME, an MCP chat tool.
    v["tool_name"] = json!("mcp__hoop__chat_send_text");
    let mut c = env.cmd(&["guard", "phase"]);
    c.env("HOOP_HOME", "bolt");
    assert_eq!(env.run_with(c, &serde_json::to_vec(&v).unwrap()).code, 0);
    let phase: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("phase.json")).unwrap()).unwrap();
    assert_eq!(phase["phase"], "chatting");
}

#[test]
fn tool_phase_always_exits_zero() {
    let env = Env::new();
    for payload in [&b"garbage"[..], b"", CLAUDE_POST.as_bytes()] {
        // No home at all.
        let o = env.run(&["guard", "phase"], payload);
        assert_eq!((o.code, o.stdout.as_str()), (0, ""));
        // A home that cannot be written (its directory is a file).
        std::fs::create_dir_all(env.root()).unwrap();
        std::fs::write(env.root().join("blocked"), "").unwrap();
        let o = env.run(&["guard", "phase", "--home", "blocked"], payload);
        assert_eq!((o.code, o.stdout.as_str()), (0, ""));
        // A bad home name.
        let o = env.run(&["guard", "phase", "--home", "../x"], payload);
        assert_eq!(o.code, 0);
    }
}

// ------------------------------------------------------------ mcp_gate

#[test]
fn mcp_gate_allowlist_and_ledger() {
    let env = Env::new();
    let home = env.root().join("bolt");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("mcp_allow"),
        "mcp__hoop__chat_read\nmcp__hoop__work_*\n",
    )
    .unwrap();
    let call = |tool: &str| {
        let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
        v["tool_name"] = json!(tool);
        v["tool_input"] = json!({"body": "hi", "token": "sk-live-SECRET"});
        serde_json::to_vec(&v).unwrap()
    };
    let args = ["guard", "mcp", "--home", "bolt"];
    assert_eq!(env.run(&args, &call("mcp__hoop__chat_read")).code, 0);
    assert_eq!(env.run(&args, &call("mcp__hoop__work_task_start")).code, 0);
    assert_eq!(env.run(&args, &call("Bash")).code, 0, "not an MCP tool");
    let o = env.run(&args, &call("mcp__hoop__chat_send_text"));
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("mcp__hoop__chat_send_text"),
        "{}",
        o.stderr
    );
    let ledger = std::fs::read_to_string(home.join("mcp_refusals.jsonl")).unwrap();
    let lines: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["tool"], "mcp__hoop__chat_send_text");
    assert_eq!(lines[0]["client"], "claude");
    assert_eq!(lines[0]["session"], "99f8a31e-8961-4940-b348-a6f67ce815f0");
    assert!(
        !ledger.contains("SECRET") && !ledger.contains("body"),
        "{ledger}"
    );
    // Cursor: bare tool names, JSON answer, same ledger.
    let o = env.run(&args, CURSOR_MCP.as_bytes());
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["permission"], "deny");
    let mut cur: Value = serde_json::from_str(CURSOR_MCP).unwrap();
    cur["tool_name"] = json!("chat_read");
    let o = env.run(&args, &serde_json::to_vec(&cur).unwrap());
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["permission"], "allow");
    let ledger = std::fs::read_to_string(home.join("mcp_refusals.jsonl")).unwrap();
    let lines: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "one more line, for Cursor's refusal: {ledger}"
    );
    assert_eq!(lines[0]["tool"], "mcp__hoop__chat_send_text", "{ledger}");
    assert_eq!(lines[0]["client"], "claude", "{ledger}");
    // The allowed chat_read left no line; the refused one is Cursor's.
    assert_eq!(lines[1]["tool"], "chat_send_text", "{ledger}");
    assert_eq!(lines[1]["client"], "cursor", "{ledger}");
    assert_eq!(
        lines[1]["session"], "3f1c2a9e-0000-4000-8000-000000000001",
        "Cursor's conversation id: {ledger}"
    );
    assert!(!ledger.contains("SECRET"));
    // A home without an allowlist allows nothing; no home enforces nothing.
    let o = env.run(
        &["guard", "mcp", "--home", "other"],
        &call("mcp__hoop__chat_read"),
    );
    assert_eq!(o.code, 2);
    let o = env.run(&["guard", "mcp"], &call("mcp__hoop__chat_send_text"));
    assert_eq!(o.code, 0);
    // Unreadable payload: closed.
    assert_eq!(env.run(&args, b"{").code, 2);
}

// ------------------------------------------------------------ hooks install

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn claude_install_keeps_other_hooks_and_is_idempotent() {
    let env = Env::new();
    let settings = env.home_dir().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = json!({
        "model": "opus",
        "env": {"FOO": "1"},
        "hooks": {
            "SessionStart": [{"hooks": [{"type": "command", "command": "/opt/team/session-check.sh"}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/team/audit.sh"}]},
                {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier-hook"}]}
            ],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "/opt/team/log.sh"}]}]
        },
        "permissions": {"allow": ["Bash(ls:*)"]}
    });
    std::fs::write(&settings, serde_json::to_string_pretty(&original).unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let install = |extra: &[&str]| {
        let mut args = vec![
            "hooks",
            "install",
            "--claude",
            "--home",
            "bolt",
            "--program",
            "/usr/local/bin/hoop",
        ];
        args.extend_from_slice(extra);
        env.run(&args, b"")
    };
    // --check before install: drift.
    assert_eq!(install(&["--check"]).code, 1);
    assert_eq!(read_json(&settings), original, "--check writes nothing");
    let o = install(&[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let after = read_json(&settings);
    // Others' settings and hooks: untouched, same order, ours appended.
    assert_eq!(after["model"], "opus");
    assert_eq!(after["permissions"], original["permissions"]);
    assert_eq!(
        after["hooks"]["SessionStart"],
        original["hooks"]["SessionStart"]
    );
    let pre = after["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0], original["hooks"]["PreToolUse"][0]);
    assert_eq!(pre[1], original["hooks"]["PreToolUse"][1]);
    let cmds: Vec<&str> = pre[2..]
        .iter()
        .map(|g| g["hooks"][0]["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        cmds,
        vec![
            "/usr/local/bin/hoop guard act",
            "/usr/local/bin/hoop guard memory",
            "/usr/local/bin/hoop guard mcp --home bolt",
            "/usr/local/bin/hoop card-snapshot"
        ]
    );
    assert_eq!(pre[2]["matcher"], "Bash");
    let post = after["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post[0], original["hooks"]["PostToolUse"][0]);
    assert_eq!(
        post[1]["hooks"][0]["command"],
        "/usr/local/bin/hoop guard phase --home bolt"
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        text.find("\"model\"").unwrap() < text.find("\"env\"").unwrap()
            && text.find("\"env\"").unwrap() < text.find("\"hooks\"").unwrap(),
        "key order kept"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&settings).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the file's permissions are kept");
    }
    // Idempotent: a second run changes nothing, --check is clean.
    let before = std::fs::read(&settings).unwrap();
    assert_eq!(install(&[]).code, 0);
    assert_eq!(std::fs::read(&settings).unwrap(), before);
    assert_eq!(install(&["--check"]).code, 0);
    // A moved binary updates our entries in place: no duplicates.
    let mut args = vec![
        "hooks",
        "install",
        "--claude",
        "--home",
        "bolt",
        "--program",
        "/opt/hoop/bin/hoop",
        "--check",
    ];
    assert_eq!(env.run(&args, b"").code, 1);
    args.pop();
    assert_eq!(env.run(&args, b"").code, 0);
    let moved = read_json(&settings);
    let pre = moved["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 6, "{pre:?}");
    assert_eq!(pre[0], original["hooks"]["PreToolUse"][0], "foreign: kept");
    assert_eq!(pre[1], original["hooks"]["PreToolUse"][1], "foreign: kept");
    let cmds: Vec<&str> = pre[2..]
        .iter()
        .map(|g| g["hooks"][0]["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        cmds,
        vec![
            "/opt/hoop/bin/hoop guard act",
            "/opt/hoop/bin/hoop guard memory",
            "/opt/hoop/bin/hoop guard mcp --home bolt",
            "/opt/hoop/bin/hoop card-snapshot"
        ],
        "every entry of ours moved, in place"
    );
    let post = moved["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post.len(), 2, "{post:?}");
    assert_eq!(
        post[0], original["hooks"]["PostToolUse"][0],
        "foreign: kept"
    );
    assert_eq!(
        post[1]["hooks"][0]["command"],
        "/opt/hoop/bin/hoop guard phase --home bolt"
    );
    assert!(
        !serde_json::to_string(&moved)
            .unwrap()
            .contains("/usr/local/bin/hoop"),
        "no entry left on the old path: {moved}"
    );
    // Someone removes our entry: --check sees it.
    let mut edited = moved.clone();
    edited["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .remove(2);
    std::fs::write(&settings, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let o = env.run(
        &args.iter().copied().chain(["--check"]).collect::<Vec<_>>(),
        b"",
    );
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("add"), "{}", o.stdout);
}

#[test]
fn claude_install_honours_claude_config_dir_and_refuses_broken_json() {
    let env = Env::new();
    let cfg = env.dir.path().join("cfgdir");
    let mut c = env.cmd(&["hooks", "install", "--claude", "--program", "hoop"]);
    c.env("CLAUDE_CONFIG_DIR", &cfg);
    assert_eq!(env.run_with(c, b"").code, 0);
    let v = read_json(&cfg.join("settings.json"));
    // No home: act, memory and the card snapshot; no home-bound guard.
    assert_eq!(
        v["hooks"]["PreToolUse"],
        json!([
            {"matcher": "Bash",
             "hooks": [{"type": "command", "command": "hoop guard act", "timeout": 10}]},
            {"matcher": "Write|Edit|MultiEdit",
             "hooks": [{"type": "command", "command": "hoop guard memory", "timeout": 10}]},
            {"matcher": "mcp__.+__work_task_(finish|start|take|progress)",
             "hooks": [{"type": "command", "command": "hoop card-snapshot", "timeout": 10}]}
        ])
    );
    assert_eq!(v["hooks"].get("PostToolUse"), None, "phase needs a home");
    let broken = env.dir.path().join("broken.json");
    std::fs::write(&broken, "{ not json").unwrap();
    let o = env.run(
        &[
            "hooks",
            "install",
            "--claude",
            "--settings",
            broken.to_str().unwrap(),
        ],
        b"",
    );
    assert_ne!(o.code, 0);
    assert_eq!(
        std::fs::read_to_string(&broken).unwrap(),
        "{ not json",
        "left alone"
    );
}

#[test]
fn cursor_install_merges_hooks_json_v1() {
    let env = Env::new();
    let file = env.home_dir().join(".cursor/hooks.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = json!({
        "version": 1,
        "hooks": {
            "beforeShellExecution": [{"command": "./hooks/audit.sh"}],
            "stop": [{"command": "./hooks/stop.sh", "timeout": 10}]
        }
    });
    std::fs::write(&file, serde_json::to_string_pretty(&original).unwrap()).unwrap();
    let args = [
        "hooks",
        "install",
        "--cursor",
        "--home",
        "bolt",
        "--program",
        "/usr/local/bin/hoop",
    ];
    assert_eq!(env.run(&args, b"").code, 0);
    let v = read_json(&file);
    assert_eq!(v["version"], 1);
    assert_eq!(v["hooks"]["stop"], original["hooks"]["stop"]);
    let shell = v["hooks"]["beforeShellExecution"].as_array().unwrap();
    assert_eq!(shell[0], json!({"command": "./hooks/audit.sh"}));
    assert_eq!(
        shell[1],
        json!({"command": "/usr/local/bin/hoop guard act --cursor", "timeout": 10})
    );
    assert_eq!(
        v["hooks"]["beforeMCPExecution"][0]["command"],
        "/usr/local/bin/hoop guard mcp --cursor --home bolt"
    );
    let before = std::fs::read(&file).unwrap();
    assert_eq!(env.run(&args, b"").code, 0);
    assert_eq!(std::fs::read(&file).unwrap(), before, "idempotent");
    let check: Vec<&str> = args.iter().copied().chain(["--check"]).collect();
    assert_eq!(env.run(&check, b"").code, 0);
    // The installed command really answers a Cursor payload.
    let o = env.run(
        &["guard", "act", "--cursor"],
        &cursor_payload("git stash pop"),
    );
    let a: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(a["permission"], "deny");
}

/// The guards are parsed on their own (start-up on every tool call), yet
/// they read like every other subcommand: the same names, usage errors that
/// name `hoop guard …`, and `hoop --help` still lists them.
#[test]
fn the_guard_parser_speaks_like_the_rest_of_the_cli() {
    let env = Env::new();
    let help = env.run(&["guard", "--help"], b"");
    assert_eq!(help.code, 0, "{}", help.stderr);
    for sub in ["act", "memory", "phase", "mcp"] {
        assert!(
            help.stdout.contains(sub),
            "{sub} missing from {}",
            help.stdout
        );
    }
    let bad = env.run(&["guard", "act", "--no-such-flag"], b"");
    assert_eq!(bad.code, 2, "a usage error is clap's exit 2");
    assert!(bad.stderr.contains("hoop guard act"), "{}", bad.stderr);
    let top = env.run(&["--help"], b"");
    assert!(top.stdout.contains("guard"), "{}", top.stdout);
    // A payload still gets its verdict through the short path.
    let out = env.run(&["guard", "act"], &claude_payload("rm -rf /"));
    assert_eq!(out.code, 2, "{}", out.stderr);
}

/// A project directory under the target dir, as a payload names it. A path
/// in a temp dir is scratch whatever its name, and the target dir may be
/// under /tmp: on Linux `/proc/self/root` names the same directory without
/// that prefix, so the cache rule, not the scratch judgment, decides.
fn payload_cwd(dir: &Path) -> String {
    if cfg!(target_os = "linux") {
        format!("/proc/self/root{}", dir.display())
    } else {
        dir.display().to_string()
    }
}

#[test]
fn cache_folders_are_removable_only_where_git_tracks_nothing_in_them() {
    let repo = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = repo.path();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .current_dir(d)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    git(&["init", "-q"]);
    for f in ["build/gen.c", "node_modules/x/index.js"] {
        std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
        std::fs::write(d.join(f), "x").unwrap();
    }
    git(&["add", "build"]);
    git(&["commit", "-qm", "sources in build/"]);
    let env = Env::new();
    let run = |cmd: &str| {
        let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
        v["tool_input"]["command"] = json!(cmd);
        v["cwd"] = json!(payload_cwd(d));
        env.run(&["guard", "act"], &serde_json::to_vec(&v).unwrap())
    };
    assert_eq!(run("rm -rf node_modules").code, 0, "untracked cache");
    let o = run("rm -rf build");
    assert_eq!(o.code, 2, "tracked sources under build/");
    assert!(o.stderr.contains("git tracks 1 file(s)"), "{}", o.stderr);
}

#[test]
fn outside_a_git_work_tree_nothing_vouches_for_a_cache_folder() {
    // The target dir may be inside a clone's work tree (`target/` is
    // ignored there, so git would vouch for it): bound git's search at the
    // target dir so this folder is outside every work tree, as a folder
    // under a plain home directory is.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = outside.path();
    std::fs::create_dir_all(d.join("node_modules/x")).unwrap();
    std::fs::write(d.join("node_modules/x/index.js"), "x").unwrap();
    let env = Env::new();
    let mut v: Value = serde_json::from_str(CLAUDE_PRE).unwrap();
    v["tool_input"]["command"] = json!("rm -rf node_modules");
    v["cwd"] = json!(payload_cwd(d));
    let mut c = env.cmd(&["guard", "act"]);
    c.env("GIT_CEILING_DIRECTORIES", env!("CARGO_TARGET_TMPDIR"));
    let o = env.run_with(c, &serde_json::to_vec(&v).unwrap());
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("not in a git work tree"), "{}", o.stderr);
    assert!(d.join("node_modules/x/index.js").exists());
}
