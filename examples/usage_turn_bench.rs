//! Per-turn cost of the account's usage snapshot as the months go by: a
//! home with a year of generated transcripts (beside the operator's own
//! projects in the same config dir) and 1, 100 or 1,000 finished workers.
//!
//! For each case it times what the sentinel does around one turn (a full
//! reading before it, the turn's lines appended, a full reading after it,
//! the finished workers folded), twenty turns, median and worst:
//! - `before`: the previous design's reading, `hoop_meter::collect` over
//!   the agent's whole config dir and every worker's, with the incremental
//!   state file (what `sentinel::usage::read_totals` did);
//! - `ledger`: `hoop_sentinel::usage::read_account` and `fold_finished`.
//!   Timed apart, once each: its first reading of the year (an upgraded
//!   daemon's), and the reading that folds the finished workers (their
//!   transcripts read to the end, their directories removed: on this
//!   machine's disk, mounted with `discard`, a deletion waits for its
//!   TRIM, about 8 ms per small directory with `rm -rf` too).
//!
//! `cargo run --release --example usage_turn_bench [-- <scratch dir>
//! [worker counts…]]` (default: a temporary directory; 1, 100, 1000).
//! Prints a markdown table.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hoop_core::home::Home;
use hoop_meter::claude_dirs::project_slug;
use hoop_sentinel::usage::{Scope, fold_finished, read_account};
use hoop_sentinel::worker::{self, AgentKind, WorkerRecord, WorkerState};

/// A year of the home's turns: one session file a month, this many turns a
/// day, each of a user line, a tool round trip and three responses (and a
/// month, for the first row: flat means the same after a year).
const DAYS: i64 = 365;
const MONTH: i64 = 30;
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

fn build(base: &Path, days_total: i64) -> Case {
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
    let start = now_ms - days_total * DAY_MS;
    let mut next = 0u64;
    let mut current = PathBuf::new();
    for month in 0..12 {
        let session = format!("session-{month:02}");
        let path = folder.join(format!("{session}.jsonl"));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let days = days_total / 12;
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
    // The agent's own config dir, whatever this process inherited.
    let env = vec![
        ("HOME".to_string(), agent_home.display().to_string()),
        (
            "CLAUDE_CONFIG_DIR".to_string(),
            claude.display().to_string(),
        ),
    ];
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

/// `workers` finished workers, each with its scratch transcript.
fn add_workers(c: &Case, workers: usize) {
    let home = &c.home;
    let now_ms = c.now_ms;
    for card in 1..=workers as i64 {
        let wwork = worker::workdir(home, card);
        std::fs::create_dir_all(&wwork).unwrap();
        let d = worker::scratch_home(home, card)
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
            home,
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
                announced: false,
                finish: None,
                log_tail: None,
            },
        )
        .unwrap();
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
        "| finished workers | home transcripts | before: median / worst per turn | ledger: median / worst per turn | ledger: the reading that folds them (once) | ledger: first reading of the history (once) |"
    );
    println!("|---|---|---|---|---|---|");
    // Optional: the worker counts to run (default 1, 100 and 1,000).
    let counts: Vec<usize> = std::env::args()
        .skip(2)
        .filter_map(|a| a.parse().ok())
        .collect();
    let cases: Vec<(i64, usize)> = if counts.is_empty() {
        vec![(MONTH, 1), (DAYS, 1), (DAYS, 100), (DAYS, 1000)]
    } else {
        counts.into_iter().map(|n| (DAYS, n)).collect()
    };
    for (days, workers) in cases {
        // The previous design, on its own copy.
        let mut old = build(&base, days);
        add_workers(&old, workers);
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
        let mut new = build(&base, days);
        // The year read once (an upgraded daemon's first reading), then
        // the workers finish and the next reading folds them.
        let t = Instant::now();
        read_account(&new.home, &new.env, Scope::Account).unwrap();
        let year_ms = t.elapsed().as_secs_f64() * 1000.0;
        add_workers(&new, workers);
        let t = Instant::now();
        read_account(&new.home, &new.env, Scope::Account).unwrap();
        let folded = fold_finished(&new.home, &new.env).unwrap();
        let first_ms = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(folded.len(), workers, "every finished worker folded");
        let mut times = Vec::new();
        for _ in 0..TURNS {
            let t = Instant::now();
            let before = read_account(&new.home, &new.env, Scope::Account).unwrap();
            append_turn(&mut new);
            let after = read_account(&new.home, &new.env, Scope::Account).unwrap();
            fold_finished(&new.home, &new.env).unwrap();
            times.push(t.elapsed());
            // The turn is in the second reading, and only it.
            let (b, a) = (before.totals.unwrap(), after.totals.unwrap());
            assert_eq!(after.sync.added, 3, "{:?}", after.sync);
            assert!(a.output > b.output && a.input > b.input);
        }
        let (new_med, new_max) = stats(times);
        println!(
            "| {workers} | {days} days, {} responses, {:.0} MB | {old_med:.1} / {old_max:.1} ms | {new_med:.1} / {new_max:.1} ms | {first_ms:.0} ms | {year_ms:.0} ms |",
            new.next,
            size as f64 / 1e6,
        );
    }
}
