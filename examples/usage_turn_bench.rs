//! Per-turn cost of the account's usage snapshot as the months go by: a
//! home with a year of generated transcripts (beside the operator's own
//! projects in the same config dir) and 1, 100 or 1,000 finished workers.
//!
//! For each case it times what the sentinel does around one turn (a full
//! reading before it, the turn's lines appended, a full reading after it),
//! twenty turns, median and worst:
//! - `before`: the previous design's reading, `hoop_meter::collect` over
//!   the agent's whole config dir and every worker's, with the incremental
//!   state file (what `sentinel::usage::read_totals` did);
//! - `ledger`: `hoop_sentinel::usage::read_account`, whose first reading
//!   folds the finished workers (timed apart: once per worker, not per
//!   turn).
//!
//! `cargo run --release --example usage_turn_bench [-- <scratch dir>]`
//! (default: a temporary directory). Prints a markdown table.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hoop_core::home::Home;
use hoop_meter::claude_dirs::project_slug;
use hoop_sentinel::usage::{Scope, read_account};
use hoop_sentinel::worker::{self, AgentKind, WorkerRecord, WorkerState};

/// A year of the home's turns: one session file a month, this many turns a
/// day, each of a user line, a tool round trip and three responses.
const DAYS: i64 = 365;
const TURNS_PER_DAY: usize = 40;
/// The operator's own projects in the same config dir.
const OPERATOR_FILES: usize = 300;
const OPERATOR_LINES: usize = 200;
/// Responses per finished worker.
const WORKER_RESPONSES: usize = 20;
/// Turns timed per case.
const TURNS: usize = 20;

const DAY_MS: i64 = 86_400_000;

fn ts(ms: i64) -> String {
    hoop_meter::timefmt::fmt_ts(ms)
}

fn assistant(id: &str, cwd: &Path, session: &str, at: i64, n: u64) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"message":{{"id":"{id}","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{{"type":"text","text":"{}"}}],"stop_reason":"end_turn","usage":{{"input_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"output_tokens":{}}}}},"requestId":"req_{id}","type":"assistant","uuid":"u-{id}","timestamp":"{}","cwd":"{}","sessionId":"{session}","version":"2.1.197"}}"#,
        "x".repeat(180),
        3 + n % 7,
        200 + n % 50,
        40_000 + n % 1000,
        30 + n % 90,
        ts(at),
        cwd.display()
    )
}

fn user(cwd: &Path, session: &str, at: i64) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_x","content":"{}"}}]}},"uuid":"u","timestamp":"{}","cwd":"{}","sessionId":"{session}","version":"2.1.197"}}"#,
        "y".repeat(400),
        ts(at),
        cwd.display()
    )
}

/// One turn's lines at `at`.
fn turn(next: &mut u64, cwd: &Path, session: &str, at: i64) -> String {
    let mut s = String::new();
    for k in 0..3 {
        *next += 1;
        let _ = writeln!(s, "{}", user(cwd, session, at + k));
        let _ = writeln!(
            s,
            "{}",
            assistant(&format!("msg_{next}"), cwd, session, at + k, *next)
        );
    }
    s
}

struct Case {
    _dir: tempfile::TempDir,
    home: Home,
    env: Vec<(String, String)>,
    claude: PathBuf,
    current: PathBuf,
    next: u64,
    now_ms: i64,
}

fn build(base: &Path, workers: usize) -> Case {
    let dir = tempfile::tempdir_in(base).unwrap();
    let root = dir.path().join("hoop");
    let home = Home::new(&root, "bolt").unwrap();
    std::fs::create_dir_all(home.workdir()).unwrap();
    let work = home.workdir();
    let agent_home = dir.path().join("agent");
    let claude = agent_home.join(".claude");
    let folder = claude
        .join("projects")
        .join(project_slug(&work.to_string_lossy()));
    std::fs::create_dir_all(&folder).unwrap();
    let now_ms = hoop_core::clock::now_unix() * 1000;
    let start = now_ms - DAYS * DAY_MS;
    let mut next = 0u64;
    let mut current = PathBuf::new();
    for month in 0..12 {
        let session = format!("session-{month:02}");
        let path = folder.join(format!("{session}.jsonl"));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let days = DAYS / 12;
        for d in 0..days {
            let day = start + (month * days + d) * DAY_MS;
            for t in 0..TURNS_PER_DAY {
                let at = day + t as i64 * 60_000;
                f.write_all(turn(&mut next, &work, &session, at).as_bytes())
                    .unwrap();
            }
        }
        current = path;
    }
    for i in 0..OPERATOR_FILES {
        let cwd = PathBuf::from(format!("/home/ops/project-{i}"));
        let d = claude
            .join("projects")
            .join(project_slug(&cwd.to_string_lossy()));
        std::fs::create_dir_all(&d).unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(d.join("s.jsonl")).unwrap());
        for j in 0..OPERATOR_LINES {
            let line = assistant(&format!("op-{i}-{j}"), &cwd, "op", start, j as u64);
            writeln!(f, "{line}").unwrap();
        }
    }
    for card in 1..=workers as i64 {
        let wwork = worker::workdir(&home, card);
        std::fs::create_dir_all(&wwork).unwrap();
        let d = worker::scratch_home(&home, card)
            .join(".claude/projects")
            .join(project_slug(&wwork.to_string_lossy()));
        std::fs::create_dir_all(&d).unwrap();
        let mut body = String::new();
        for j in 0..WORKER_RESPONSES {
            let id = format!("w-{card}-{j}");
            let _ = writeln!(
                body,
                "{}",
                assistant(&id, &wwork, "w", now_ms - DAY_MS, j as u64)
            );
        }
        std::fs::write(d.join("w.jsonl"), body).unwrap();
        worker::write_record(
            &home,
            &WorkerRecord {
                card_id: card,
                parent_id: 1,
                conversation_id: 1,
                title: "bench".into(),
                agent: AgentKind::Claude,
                state: WorkerState::Finished,
                pid: None,
                started_at: 0,
                ended_at: Some(1),
                detail: None,
            },
        )
        .unwrap();
    }
    let env = vec![("HOME".to_string(), agent_home.display().to_string())];
    Case {
        _dir: dir,
        home,
        env,
        claude,
        current,
        next,
        now_ms,
    }
}

fn append_turn(c: &mut Case) {
    c.now_ms += 60_000;
    let text = turn(&mut c.next, &c.home.workdir(), "session-11", c.now_ms);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&c.current)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// The previous design's reading: collect over the whole config dir and
/// every worker's, with the state file in the home.
fn old_reading(c: &Case) -> hoop_core::transcript::Usage {
    let mut dirs = vec![c.claude.clone()];
    if let Ok(rd) = std::fs::read_dir(c.home.workers_dir()) {
        let mut w: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path().join("home/.claude"))
            .filter(|p| p.is_dir())
            .collect();
        w.sort();
        dirs.extend(w);
    }
    let col = hoop_meter::collect(
        &dirs,
        &hoop_meter::CollectOptions {
            state_path: Some(c.home.dir().join("old-usage-cache.bin")),
            threads: 1,
            ..Default::default()
        },
    )
    .unwrap();
    hoop_meter::sum(&col.entries)
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[v.len() / 2]), ms(*v.last().unwrap()))
}

fn main() {
    let base = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).unwrap();
    println!(
        "| finished workers | home transcripts | before: median / worst per turn | ledger: median / worst per turn | ledger: first reading (folds) |"
    );
    println!("|---|---|---|---|---|");
    for workers in [1usize, 100, 1000] {
        // The previous design, on its own copy.
        let mut old = build(&base, workers);
        old_reading(&old); // its cache primed, as a running daemon has it
        let mut times = Vec::new();
        for _ in 0..TURNS {
            let t = Instant::now();
            old_reading(&old);
            append_turn(&mut old);
            old_reading(&old);
            times.push(t.elapsed());
        }
        let (old_med, old_max) = stats(times);
        let size: u64 = std::fs::read_dir(old.current.parent().unwrap())
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        drop(old);
        // The ledger.
        let mut new = build(&base, workers);
        let t = Instant::now();
        let first = read_account(&new.home, &new.env, Scope::Account).unwrap();
        let first_ms = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(first.folded.len(), workers, "every finished worker folded");
        let mut times = Vec::new();
        for _ in 0..TURNS {
            let t = Instant::now();
            read_account(&new.home, &new.env, Scope::Account).unwrap();
            append_turn(&mut new);
            read_account(&new.home, &new.env, Scope::Account).unwrap();
            times.push(t.elapsed());
        }
        let (new_med, new_max) = stats(times);
        println!(
            "| {workers} | 365 days, {} responses, {:.0} MB | {old_med:.1} / {old_max:.1} ms | {new_med:.1} / {new_max:.1} ms | {first_ms:.0} ms |",
            new.next,
            size as f64 / 1e6,
        );
    }
}
