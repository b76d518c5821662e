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
    assert_eq!(
        err.trim(),
        format!(
            "hoop usage: warning: no price for claude-nova-9 (1,110 tokens): that cost is \
             UNKNOWN (shown as $…+?), not $0; add their prices to {}/prices.json",
            e.root.display()
        ),
        "one line naming the model, its tokens and where to add its price"
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

/// A home in the hoop root with a backend config and its agent's HOME.
fn make_home(e: &Env, name: &str) -> PathBuf {
    let dir = e.root.join(name);
    fs::create_dir_all(dir.join("work")).unwrap();
    fs::write(
        dir.join("config.json"),
        r#"{"base_url":"http://127.0.0.1:9","email":"a@example.com"}"#,
    )
    .unwrap();
    dir
}

/// A transcript under `<claude dir>/projects/<folder>/`.
fn write_in(claude: &Path, folder: &str, file: &str, lines: &[String]) {
    let d = claude.join("projects").join(folder);
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join(file), lines.join("\n") + "\n").unwrap();
}

/// `hoop usage home` and the sentinel's snapshot attribute by the one rule
/// over the same directories: the home's turns and its workers' scratch
/// transcripts (which live outside the user's config dir) are the home's,
/// a neighbour directory and the operator's sessions are not, and the two
/// agree number by number.
#[test]
fn the_home_report_and_the_accounts_snapshot_follow_one_rule() {
    let e = Env::new();
    let alice = make_home(&e, "alice");
    let work = alice.join("work");
    let wwork = alice.join("workers/3/work");
    fs::create_dir_all(&wwork).unwrap();
    let ts = "2026-11-01T10:00:00.000Z";
    let at = |p: &Path| p.display().to_string();
    // Each session under the folder Claude Code names after its cwd.
    let slug = |p: &str| hoop_meter::claude_dirs::project_slug(p);
    let neighbour = format!("{}-x", at(&work));
    write_in(
        &e.config,
        &slug(&at(&work)),
        "s.jsonl",
        &[assistant("a", "claude-haiku-4-5", ts, &at(&work), 1, 1)],
    );
    write_in(
        &e.config,
        &slug(&neighbour),
        "n.jsonl",
        &[assistant("n", "claude-haiku-4-5", ts, &neighbour, 16, 1)],
    );
    write_in(
        &e.config,
        &slug("/elsewhere"),
        "o.jsonl",
        &[assistant("o", "claude-haiku-4-5", ts, "/elsewhere", 4, 1)],
    );
    // The worker's scratch HOME keeps its own config dir.
    write_in(
        &alice.join("workers/3/home/.claude"),
        "-w",
        "w.jsonl",
        &[assistant("w", "claude-haiku-4-5", ts, &at(&wwork), 8, 2)],
    );
    let v = e.json(&["home"]);
    let row = |name: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["home"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no row {name}: {v}"))
    };
    let a = row("alice");
    assert_eq!(a["input_tokens"], 9, "{a}");
    assert_eq!(a["output_tokens"], 3, "{a}");
    assert_eq!(row("-")["input_tokens"], 20);
    // The sentinel's snapshot of alice over her account's directories.
    let home = hoop_core::home::Home::new(&e.root, "alice").unwrap();
    let env = vec![("HOME".to_string(), at(&e.home))];
    // The agent's config dir is the user's here (CLAUDE_CONFIG_DIR).
    let env = [env, vec![("CLAUDE_CONFIG_DIR".to_string(), at(&e.config))]].concat();
    let r = hoop_sentinel::usage::read_account(&home, &env, hoop_sentinel::usage::Scope::Agent)
        .unwrap();
    let snap = hoop_sentinel::usage::snapshot(None, r.totals.as_ref());
    // Scope::Agent leaves the workers out; the whole account adds them.
    assert_eq!(snap.tokens_in, Some(1));
    let r = hoop_sentinel::usage::read_account(&home, &env, hoop_sentinel::usage::Scope::Account)
        .unwrap();
    let snap = hoop_sentinel::usage::snapshot(None, r.totals.as_ref());
    assert_eq!(snap.tokens_in, a["input_tokens"].as_i64());
    assert_eq!(snap.tokens_out, a["output_tokens"].as_i64());
    assert_eq!(
        snap.tokens_cached_in,
        Some(
            a["cache_read_input_tokens"].as_i64().unwrap()
                + a["cache_creation_input_tokens"].as_i64().unwrap()
        )
    );
}

#[test]
fn breakdown_lists_each_model_under_its_row() {
    let e = Env::new();
    let lines = [
        assistant(
            "a",
            "claude-opus-5-5",
            "2026-11-01T10:00:00.000Z",
            "/w",
            1_000_000,
            10,
        ),
        assistant(
            "b",
            "claude-sonnet-5-5",
            "2026-11-01T11:00:00.000Z",
            "/w",
            2_000_000,
            20,
        ),
        assistant(
            "c",
            "claude-sonnet-5-5",
            "2026-11-02T11:00:00.000Z",
            "/w",
            3,
            30,
        ),
    ];
    e.write("-w/s.jsonl", &(lines.join("\n") + "\n"));
    let v = e.json(&["daily", "--breakdown"]);
    let day1 = &v["rows"][0];
    assert_eq!(day1["date"], "2026-11-01");
    let b = day1["breakdown"].as_array().unwrap();
    let models: Vec<(&str, u64)> = b
        .iter()
        .map(|m| {
            (
                m["model"].as_str().unwrap(),
                m["input_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        models,
        [
            ("claude-opus-5-5", 1_000_000),
            ("claude-sonnet-5-5", 2_000_000)
        ]
    );
    // The sub-rows add up to their row, cost included.
    let sum: f64 = b.iter().map(|m| m["cost_usd"].as_f64().unwrap()).sum();
    assert!(
        (sum - day1["cost_usd"].as_f64().unwrap()).abs() < 1e-9,
        "{day1}"
    );
    // Priced at today's table: Opus 5.5 input $4/MTok, Sonnet 5.5 $2.
    assert!(
        (b[0]["cost_usd"].as_f64().unwrap()
            - (1_000_000.0 * 4.0 + 40.0 * 5.0 + 60.0 * 8.0 + 1000.0 * 0.2 + 10.0 * 20.0) / 1e6)
            .abs()
            < 1e-9,
        "{}",
        b[0]
    );
    // Without the flag, no breakdown.
    assert!(e.json(&["daily"])["rows"][0].get("breakdown").is_none());
    // Sessions too; the table shows the sub-rows.
    let v = e.json(&["session", "--breakdown"]);
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["breakdown"].is_array())
    );
    let table = String::from_utf8(e.run(&["daily", "--breakdown"]).stdout).unwrap();
    assert!(table.contains("  └ claude-opus-5-5"), "{table}");
    // Blocks have no breakdown: said, not ignored.
    let out = e.run(&["blocks", "--breakdown"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--breakdown is for daily"));
}

#[test]
fn a_price_file_in_the_root_adds_a_model_and_a_broken_one_is_refused() {
    let e = Env::new();
    e.write(
        "-w/s.jsonl",
        &(assistant(
            "a",
            "claude-nova-9",
            "2026-11-01T10:00:00.000Z",
            "/w",
            1_000_000,
            0,
        ) + "\n"),
    );
    fs::create_dir_all(&e.root).unwrap();
    let prices = e.root.join("prices.json");
    fs::write(
        &prices,
        r#"{"claude-nova-9": {"input": 7, "cache_write_5m": 8, "cache_write_1h": 9, "cache_read": 1, "output": 30}}"#,
    )
    .unwrap();
    let out = e.run(&["--json"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "priced: no warning"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = (1_000_000.0 * 7.0 + 40.0 * 8.0 + 60.0 * 9.0 + 1000.0 * 1.0) / 1e6;
    assert!(
        (v["totals"]["cost_usd"].as_f64().unwrap() - want).abs() < 1e-9,
        "{v}"
    );
    fs::write(&prices, r#"{"claude-nova-9": {"input": 7}}"#).unwrap();
    let out = e.run(&["--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&prices.display().to_string())
            && err.contains("missing field")
            && err.contains("fix or remove the file"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no half-priced report");
}

// ---------------------------------------------------------------- hooks

/// Run `hoop <args>` with `stdin`, in a hoop root, bounded.
fn hoop(root: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> Output {
    let mut c = assert_cmd::Command::cargo_bin("hoop").unwrap();
    c.args(args)
        .env("HOOP_ROOT", root)
        .env_remove("RUST_LOG")
        .write_stdin(stdin.to_vec())
        .timeout(std::time::Duration::from_secs(60));
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn card_call(tool: &str, cwd: &Path) -> Vec<u8> {
    serde_json::json!({
        "session_id": "s", "transcript_path": "/nowhere.jsonl", "cwd": cwd,
        "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": {"task_id": 1, "status": "done"}, "tool_use_id": "toolu_1",
    })
    .to_string()
    .into_bytes()
}

/// `hoop card-snapshot` lets every call through (exit 0, nothing on
/// stdout, so Claude Code decides as it would without it), says on stderr
/// when a snapshot could not be posted, and asks the home's sentinel only
/// for a card call made from the home.
#[test]
fn the_card_hook_never_blocks_a_call_and_says_when_it_could_not_report() {
    let e = Env::new();
    let alice = make_home(&e, "alice");
    let work = alice.join("work");
    let run = |payload: &[u8]| hoop(&e.root, &["card-snapshot"], payload, &[]);
    let quiet = |o: &Output, what: &str| {
        assert!(o.status.success(), "{what}: {o:?}");
        assert!(o.stdout.is_empty(), "{what}: {o:?}");
        assert!(o.stderr.is_empty(), "{what}: {o:?}");
    };
    // Not a card boundary, not a home's session, not a payload at all.
    quiet(
        &run(&card_call("mcp__hoop__work_task_lease", &work)),
        "lease",
    );
    quiet(
        &run(&card_call("mcp__hoop__work_task_finish", Path::new("/tmp"))),
        "no home",
    );
    quiet(&run(b"not json"), "garbage");
    quiet(&run(b""), "empty");
    // A card call of the home, whose sentinel is not running.
    let o = run(&card_call("mcp__hoop__work_task_finish", &work));
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(
            "hoop card-snapshot: no usage snapshot before mcp__hoop__work_task_finish for home alice: "
        ) && err.contains("usage-snapshot.endpoint")
            && err.contains("is the home's sentinel running?")
            && err.trim_end().ends_with("; the call goes on")
            && err.lines().count() == 1,
        "{err}"
    );
    // A sentinel that answers: the hook sends it the call, reads its answer.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    fs::write(
        alice.join("usage-snapshot.endpoint"),
        format!("http://{addr}\n"),
    )
    .unwrap();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut got = Vec::new();
        for answer in [
            r#"{"reported":true}"#,
            r#"{"reported":false,"why":"backend down"}"#,
        ] {
            let (mut s, _) = listener.accept().unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            // Read the head and the body announced by Content-Length.
            loop {
                let n = s.read(&mut buf).unwrap();
                req.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&req).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .unwrap()
                        .parse()
                        .unwrap();
                    if body.len() >= len {
                        got.push(text);
                        break;
                    }
                }
            }
            write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
        }
        got
    });
    quiet(
        &run(&card_call("mcp__hoop__work_task_take", &work)),
        "reported",
    );
    let o = run(&card_call("mcp__hoop__work_task_start", &work));
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("backend down; the call goes on"),
        "{o:?}"
    );
    let requests = server.join().unwrap();
    assert!(
        requests[0].starts_with("POST /usage/snapshot HTTP/1.1\r\n"),
        "{requests:?}"
    );
    assert!(
        requests[0].contains(r#""tool":"mcp__hoop__work_task_take""#),
        "{requests:?}"
    );
    assert!(
        requests[0].contains(r#""tool_use_id":"toolu_1""#),
        "{requests:?}"
    );
    // A sentinel that takes the call and never answers: the hook gives up
    // on its own and the call goes on.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    fs::write(
        alice.join("usage-snapshot.endpoint"),
        format!("http://{}\n", mute.local_addr().unwrap()),
    )
    .unwrap();
    let o = run(&card_call("mcp__hoop__work_task_finish", &work));
    assert!(o.status.success() && o.stdout.is_empty(), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no answer within 5s"),
        "{o:?}"
    );
    drop(mute);
}

#[test]
fn hooks_install_sets_the_status_line_and_replaces_another_one_saying_so() {
    let e = Env::new();
    let settings = e.home.join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    fs::write(
        &settings,
        r#"{"model":"opus","statusLine":{"type":"command","command":"ccusage statusline"}}"#,
    )
    .unwrap();
    let install = |extra: &[&str]| {
        let mut a = vec![
            "hooks",
            "install",
            "--claude",
            "--statusline",
            "--program",
            "/opt/hoop",
        ];
        a.extend_from_slice(extra);
        let mut c = assert_cmd::Command::cargo_bin("hoop").unwrap();
        c.args(&a)
            .env("HOME", &e.home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .timeout(std::time::Duration::from_secs(60));
        c.output().unwrap()
    };
    let o = install(&[]);
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("update   ccusage statusline -> /opt/hoop statusline"),
        "{out}"
    );
    let v: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        v["statusLine"],
        serde_json::json!({"type": "command", "command": "/opt/hoop statusline", "padding": 0})
    );
    assert_eq!(v["model"], "opus");
    assert!(install(&["--check"]).status.success(), "up to date after");
    // Without --statusline the status line is not checked or touched.
    let mut c = assert_cmd::Command::cargo_bin("hoop").unwrap();
    c.args(["hooks", "install", "--cursor", "--statusline"])
        .env("HOME", &e.home)
        .timeout(std::time::Duration::from_secs(60));
    assert!(
        !c.output().unwrap().status.success(),
        "--statusline is Claude Code's"
    );
}

// ---------------------------------------------------------------- status line

fn now_ts(minus_secs: i64) -> String {
    hoop_meter::timefmt::fmt_ts((hoop_core::clock::now_unix() - minus_secs) * 1000)
}

#[test]
fn the_status_line_shows_context_today_the_block_and_pending_events() {
    let e = Env::new();
    fs::create_dir_all(&e.root).unwrap();
    // Today's responses (two minutes ago, or at midnight when the UTC day
    // is younger than that), in the session's transcript.
    let ts = now_ts(120.min(hoop_core::clock::now_unix().rem_euclid(86_400)));
    let lines = [
        assistant("a", "claude-opus-5-5", &ts, "/w", 1_000_000, 10),
        assistant("b", "claude-opus-5-5", &ts, "/w", 2_000, 20),
    ];
    e.write("-w/s.jsonl", &(lines.join("\n") + "\n"));
    let transcript = e.config.join("projects/-w/s.jsonl");
    // Two doorbell events waiting for their receipt.
    let pending = e.root.join("bridge/codex/pending");
    fs::create_dir_all(&pending).unwrap();
    for id in ["e1", "e2"] {
        fs::write(
            pending.join(format!("{id}.json")),
            serde_json::json!({"id": id, "line": "🔔 x", "created_at": 1, "delivered_at": null, "alerted": false}).to_string(),
        )
        .unwrap();
    }
    let payload = serde_json::json!({
        "session_id": "s", "transcript_path": transcript,
        "model": {"id": "claude-opus-5-5[1m]", "display_name": "Opus"},
        "workspace": {"current_dir": "/w"},
    })
    .to_string();
    let o = hoop(
        &e.root,
        &["statusline"],
        payload.as_bytes(),
        &[("CLAUDE_CONFIG_DIR", &e.config), ("HOME", &e.home)],
    );
    assert!(o.status.success() && o.stderr.is_empty(), "{o:?}");
    let line = String::from_utf8(o.stdout).unwrap();
    // Context: the latest response's prompt and output (2,000 + 100 +
    // 1,000 + 20) over the 1M window of a [1m] model.
    let cost = |input: f64, out: f64| {
        (input * 4.0 + 40.0 * 5.0 + 60.0 * 8.0 + 1000.0 * 0.2 + out * 20.0) / 1e6
    };
    let today = cost(1_000_000.0, 10.0) + cost(2_000.0, 20.0);
    let (head, tail) = line
        .trim_end()
        .split_once(" block (")
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(
        head,
        format!("🧠 3,120/1M (0%) | 💰 ${today:.2} today · ${today:.2}"),
        "{line}"
    );
    assert!(tail.ends_with("m left) | 🔔 2"), "{line}");
    assert_eq!(line.lines().count(), 1);
    // Warm: a second run reads the state the first one wrote.
    assert!(e.root.join("statusline-cache.bin").exists());
}

#[test]
fn the_status_line_never_shows_an_error() {
    let e = Env::new();
    let file = e.home.join("not-a-dir");
    fs::write(&file, "x").unwrap();
    let cases: Vec<(&str, Vec<u8>, &Path)> = vec![
        ("garbage", b"not json".to_vec(), &e.root),
        ("nothing", Vec::new(), &e.root),
        (
            "no transcript",
            br#"{"transcript_path":"/nope/x.jsonl"}"#.to_vec(),
            &e.root,
        ),
        ("a file as the root", b"{}".to_vec(), &file),
    ];
    for (what, payload, root) in cases {
        let o = hoop(
            root,
            &["statusline"],
            &payload,
            &[("CLAUDE_CONFIG_DIR", &file), ("HOME", &e.home)],
        );
        assert!(o.status.success(), "{what}: {o:?}");
        assert!(o.stderr.is_empty(), "{what}: {o:?}");
        let line = String::from_utf8(o.stdout).unwrap();
        assert_eq!(line.lines().count(), 1, "{what}: {line}");
        assert!(!line.to_lowercase().contains("error"), "{what}: {line}");
        assert!(line.starts_with("🧠 — | 💰 "), "{what}: {line}");
    }
}
