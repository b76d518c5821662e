//! `hoop usage` end to end: the real binary over real CLI transcript lines
//! (copied from the meter's test data) and generated ones, in temporary
//! config dirs and hoop roots.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("meter/tests/data")
        .join(name)
}

struct Env {
    _dir: tempfile::TempDir,
    config: PathBuf,
    root: PathBuf,
    home: PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("claude");
        let root = dir.path().join("hoop");
        let home = dir.path().join("home");
        fs::create_dir_all(&home).unwrap();
        Env {
            config,
            root,
            home,
            _dir: dir,
        }
    }
    fn copy(&self, rel: &str, src: &str) {
        let p = self.config.join("projects").join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::copy(data(src), p).unwrap();
    }
    fn write(&self, rel: &str, body: &str) {
        let p = self.config.join("projects").join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    }
    fn run_with(&self, config_env: &str, args: &[&str]) -> Output {
        assert_cmd::Command::cargo_bin("hoop")
            .unwrap()
            .arg("usage")
            .args(args)
            .env("CLAUDE_CONFIG_DIR", config_env)
            .env("HOOP_ROOT", &self.root)
            .env("HOME", &self.home)
            .env_remove("RUST_LOG")
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap()
    }
    fn run(&self, args: &[&str]) -> Output {
        self.run_with(self.config.to_str().unwrap(), args)
    }
    fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.run(&a);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn assistant(id: &str, model: &str, ts: &str, cwd: &str, input: u64, output: u64) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[],"usage":{{"input_tokens":{input},"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":{output},"cache_creation":{{"ephemeral_5m_input_tokens":40,"ephemeral_1h_input_tokens":60}}}}}},"requestId":"req_{id}","type":"assistant","timestamp":"{ts}","cwd":"{cwd}","sessionId":"s-{id}"}}"#
    )
}

#[test]
fn json_totals_carry_the_five_numbers_beside_the_rows() {
    let e = Env::new();
    e.copy(
        "-srv-obs-work/e9e9.jsonl",
        "transcript-sample-tool-use.jsonl",
    );
    let v = e.json(&[]);
    assert_eq!(v["report"], "daily");
    assert_eq!(v["rows"].as_array().unwrap().len(), 1);
    let t = &v["totals"];
    assert_eq!(t["input_tokens"], 2003);
    assert_eq!(t["output_tokens"], 14);
    assert_eq!(t["cache_creation_input_tokens"], 400);
    assert_eq!(t["cache_read_input_tokens"], 6000);
    assert!(t["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(v["rows"][0]["date"], "2026-12-02");
}

#[test]
fn every_report_renders_a_table() {
    let e = Env::new();
    e.copy(
        "-srv-obs-work/e9e9.jsonl",
        "transcript-sample-tool-use.jsonl",
    );
    for (kind, head) in [
        ("daily", "Date"),
        ("session", "Session"),
        ("project", "Project"),
        ("home", "Home"),
        ("blocks", "Block start"),
    ] {
        let out = e.run(&[kind]);
        assert!(out.status.success());
        let s = String::from_utf8(out.stdout).unwrap();
        assert!(s.starts_with(head), "{kind}: {s}");
        assert!(s.contains("Total") && s.contains("2,003"), "{kind}: {s}");
    }
}

#[test]
fn the_second_run_reads_nothing_and_the_state_is_private() {
    let e = Env::new();
    e.copy(
        "-srv-obs-work/a.jsonl",
        "transcript-two-turns-resume-reactive-compact.jsonl",
    );
    let first = e.json(&[]);
    assert_eq!(first["files"]["read"], 1);
    let second = e.json(&[]);
    assert_eq!(second["files"]["read"], 0);
    assert_eq!(second["files"]["bytes_read"], 0);
    assert_eq!(first["totals"], second["totals"]);
    let state = e.root.join("usage-cache.bin");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // --no-cache reads everything again and leaves the state alone.
    let before = fs::read(&state).unwrap();
    let cold = e.json(&["--no-cache"]);
    assert_eq!(cold["files"]["read"], 1);
    assert_eq!(cold["totals"], first["totals"]);
    assert_eq!(fs::read(&state).unwrap(), before);
}

#[test]
fn comma_separated_config_dirs_are_all_read() {
    let e = Env::new();
    e.copy("-x/a.jsonl", "transcript-sample-tool-use.jsonl");
    let other = e.home.join("second");
    let p = other.join("projects/-y/b.jsonl");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(
        &p,
        assistant(
            "zz",
            "claude-haiku-4-5",
            "2026-11-01T10:00:00.000Z",
            "/w",
            5,
            5,
        ) + "\n",
    )
    .unwrap();
    let list = format!("{},{}", e.config.display(), other.display());
    let out = e.run_with(&list, &["--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"]["seen"], 2);
    assert_eq!(v["totals"]["input_tokens"], 2003 + 5);
}

#[test]
fn since_and_until_select_days() {
    let e = Env::new();
    let lines = [
        assistant(
            "a",
            "claude-haiku-4-5",
            "2026-11-01T10:00:00.000Z",
            "/w",
            1,
            1,
        ),
        assistant(
            "b",
            "claude-haiku-4-5",
            "2026-11-02T10:00:00.000Z",
            "/w",
            10,
            1,
        ),
        assistant(
            "c",
            "claude-haiku-4-5",
            "2026-11-03T10:00:00.000Z",
            "/w",
            100,
            1,
        ),
    ];
    e.write("-w/s.jsonl", &(lines.join("\n") + "\n"));
    for extra in [&[][..], &["--no-cache"][..]] {
        let mut a = vec!["--since", "2026-11-02", "--until", "20261102"];
        a.extend_from_slice(extra);
        let v = e.json(&a);
        assert_eq!(v["totals"]["input_tokens"], 10, "{extra:?}");
    }
    let out = e.run(&["--since", "2026-11-31"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
    let out = e.run(&["--since", "2026-11-03", "--until", "2026-11-01"]);
    assert!(!out.status.success());
}

#[test]
fn an_unknown_model_is_warned_about_and_its_cost_is_null() {
    let e = Env::new();
    e.write(
        "-w/s.jsonl",
        &(assistant("a", "claude-nova-9", "2026-11-01T10:00:00.000Z", "/w", 7, 3) + "\n"),
    );
    let out = e.run(&["--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("claude-nova-9") && err.contains("UNKNOWN cost"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["totals"]["cost_usd"], Value::Null);
    let table = String::from_utf8(e.run(&[]).stdout).unwrap();
    assert!(table.contains("+?"), "{table}");
}

#[test]
fn the_home_report_maps_hoop_workdirs_to_homes() {
    let e = Env::new();
    let alice = format!("{}/alice/work", e.root.display());
    let lines = [
        assistant(
            "a",
            "claude-haiku-4-5",
            "2026-11-01T10:00:00.000Z",
            &alice,
            1,
            1,
        ),
        assistant(
            "b",
            "claude-haiku-4-5",
            "2026-11-01T10:00:00.000Z",
            &format!("{alice}/sub"),
            2,
            1,
        ),
        assistant(
            "c",
            "claude-haiku-4-5",
            "2026-11-01T10:00:00.000Z",
            "/elsewhere",
            4,
            1,
        ),
    ];
    e.write("-alice/s.jsonl", &(lines.join("\n") + "\n"));
    let v = e.json(&["home"]);
    let rows: Vec<(String, u64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["home"].as_str().unwrap().to_string(),
                r["input_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, vec![("-".to_string(), 4), ("alice".to_string(), 3)]);
}

#[test]
fn no_transcripts_is_an_empty_report_not_an_error() {
    let e = Env::new();
    let v = e.json(&[]);
    assert_eq!(v["rows"], serde_json::json!([]));
    assert_eq!(v["totals"]["input_tokens"], 0);
}

fn claude_bin() -> PathBuf {
    match std::env::var_os("HOOP_CLAUDE_BIN") {
        Some(p) if !p.is_empty() && Path::new(&p).exists() => PathBuf::from(p),
        other => panic!(
            "HOOP_CLAUDE_BIN must name the real claude CLI (tests/run sets it; locally \
             tests/node_modules/.bin/claude after `npm ci --prefix tests`); got {other:?}"
        ),
    }
}

/// The real CLI, pointed at the stand-in, runs a tool loop (two API calls)
/// from `work` with `home` as its HOME; returns its `result` line.
async fn real_cli_tool_loop(standin: &hoop_standin::Standin, home: &Path, work: &Path) -> Value {
    standin.push(hoop_standin::Reply::bash("echo metered", "all done"));
    fs::create_dir_all(work).unwrap();
    let child = tokio::process::Command::new(claude_bin())
        .args([
            "-p",
            "run the command",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
        ])
        .envs(standin.claude_env())
        .env("HOME", home)
        .env("IS_SANDBOX", "1")
        .env_remove("CLAUDE_CONFIG_DIR")
        .current_dir(work)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), child)
        .await
        .expect("the claude CLI finishes within 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap_or_else(|| {
            panic!(
                "no result line: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert_eq!(result["is_error"], false, "{result}");
    result
}

/// `hoop usage <args> --json` over the CLI's default config dir.
fn usage_over_home(e: &Env, args: &[&str]) -> Value {
    let out = assert_cmd::Command::cargo_bin("hoop")
        .unwrap()
        .arg("usage")
        .args(args)
        .arg("--json")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("HOME", &e.home)
        .env("HOOP_ROOT", &e.root)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The transcript the real CLI wrote for `session` under `home`.
fn cli_transcript(home: &Path, session: &str) -> PathBuf {
    fs::read_dir(home.join(".claude/projects"))
        .unwrap()
        .flatten()
        .map(|d| d.path().join(format!("{session}.jsonl")))
        .find(|p| p.exists())
        .expect("the session's transcript")
}

/// The real CLI runs a tool loop; the meter's totals over the transcript it
/// wrote equal the CLI's own `result.usage` for the turn, read through the
/// same `core::transcript::Usage`, and the home report names the home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_meter_agrees_with_the_real_cli_result_usage() {
    let standin = hoop_standin::Standin::spawn().await.unwrap();
    let e = Env::new();
    let result = real_cli_tool_loop(&standin, &e.home, &e.root.join("alice/work")).await;
    let turn = hoop_core::transcript::Usage::from_json(&result["usage"]).unwrap();
    assert_eq!(standin.request_count(), 2, "a tool loop is two API calls");

    // The CLI wrote its transcript under $HOME/.claude (no CLAUDE_CONFIG_DIR).
    let v = usage_over_home(&e, &["home"]);
    let t = &v["totals"];
    assert_eq!(t["responses"], 2);
    assert_eq!(t["input_tokens"], turn.input);
    assert_eq!(t["cache_creation_input_tokens"], turn.cache_write());
    assert_eq!(t["cache_read_input_tokens"], turn.cache_read);
    assert_eq!(t["output_tokens"], turn.output);
    assert_eq!(v["rows"][0]["home"], "alice", "{v}");
    assert_eq!(v["skipped_lines"]["malformed"], 0);

    // The context meter reads the same transcript through the same reader.
    let transcript = cli_transcript(&e.home, result["session_id"].as_str().unwrap());
    let ctx = hoop_core::transcript::context_tokens_from_tail(
        &transcript,
        hoop_core::limits::CONTEXT_METER_TAIL_BYTES,
    )
    .unwrap()
    .expect("a context size");
    assert!(ctx > 0 && ctx <= turn.context_tokens(), "{ctx} vs {turn:?}");
    standin.shutdown().await;
}

/// Copies of the real CLI's records under other request ids — replayed
/// into a sidechain file and copied into a resumed session's transcript, as
/// the CLI does — are the same API responses and count once, cold and
/// through the incremental cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_real_cli_responses_under_other_request_ids_count_once() {
    let standin = hoop_standin::Standin::spawn().await.unwrap();
    let e = Env::new();
    let result = real_cli_tool_loop(&standin, &e.home, &e.root.join("alice/work")).await;
    let session = result["session_id"].as_str().unwrap();
    let before = usage_over_home(&e, &[]);
    assert_eq!(before["totals"]["responses"], 2);

    let transcript = cli_transcript(&e.home, session);
    let text = fs::read_to_string(&transcript).unwrap();
    let assistant: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "assistant" && v["message"]["usage"].is_object())
        .collect();
    let ids: std::collections::BTreeSet<&str> = assistant
        .iter()
        .map(|v| v["message"]["id"].as_str().expect("a message id"))
        .collect();
    assert_eq!(ids.len(), 2, "two responses");
    assert!(
        assistant.iter().all(|v| v["requestId"].is_string()),
        "the real CLI writes request ids"
    );
    let copies = |sidechain: bool, session_id: &str, tag: &str| -> String {
        assistant
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut v = v.clone();
                v["requestId"] = Value::String(format!("req_{tag}_{i}"));
                v["isSidechain"] = Value::Bool(sidechain);
                v["sessionId"] = Value::String(session_id.to_string());
                v.to_string() + "\n"
            })
            .collect()
    };
    let dir = transcript.parent().unwrap();
    let side = dir.join(session).join("subagents/agent-copy.jsonl");
    fs::create_dir_all(side.parent().unwrap()).unwrap();
    fs::write(&side, copies(true, session, "side")).unwrap();
    let resumed = "00000000-0000-4000-8000-00000000abcd";
    fs::write(
        dir.join(format!("{resumed}.jsonl")),
        copies(false, resumed, "resumed"),
    )
    .unwrap();

    for args in [&[][..], &["--no-cache"][..], &[][..]] {
        let after = usage_over_home(&e, args);
        assert_eq!(after["files"]["seen"], 3, "{args:?}");
        assert_eq!(after["totals"], before["totals"], "{args:?}");
    }
    standin.shutdown().await;
}
