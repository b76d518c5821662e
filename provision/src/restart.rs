//! `hoop restart <home>… [--canary] [--now]`: restart sentinels through the
//! service manager without cutting a turn short and without taking an old
//! log line for the new process.
//!
//! Per home, one at a time, in the order named (the canary — the first —
//! first), stopping at the first failure with its reason:
//! 1. a turn is running when TRYING the home's turn flock fails (never
//!    because a lock file exists); wait until it ends, at most
//!    [`TURN_WAIT`] (`--now` skips the wait);
//! 2. note the daemon's pid (the account lock's holder) and where its log
//!    ends;
//! 3. restart through the service manager — every call through a
//!    [`Runner`];
//! 4. wait, at most [`COME_UP`], for a `🚀` line of a NEW process (a pid other
//!    than the old one, after the noted end of the log) and then its
//!    `🔌 WS connected`;
//! 5. `--canary`: the canary must also finish a round that did not fail
//!    (its status file, written by the new pid).
//!
//! A turn that starts between step 1 and step 3 is cut by SIGTERM; that
//! loses nothing (a cursor moves only after a turn that exited 0, and an
//! answer already posted is not posted again: the account's own reply is
//! newest).
//!
//! The decisions — the order, the calls, what a log shows — are pure
//! functions; [`run`] is the thin shell over the lock, the log and the
//! runner.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hoop_core::home::Home;
use hoop_sentinel::lock::{self, Probe};
use hoop_sentinel::state::{RoundResult, Status};

use crate::service::{Call, Manager, Runner};
use crate::units::{launchd_label, systemd_instance};

/// How long a restart waits for a running turn to end: the longest a turn
/// may run (the sentinel's turn timeout) plus a minute for its commit and
/// usage report.
pub const TURN_WAIT: Duration = Duration::from_secs(hoop_core::limits::TURN_TIMEOUT.as_secs() + 60);
/// How long a restarted daemon has to print `🚀` and connect its socket:
/// start-up, the login and the first connect take seconds; the margin
/// covers a slow backend and the reconnect backoff's first steps.
pub const COME_UP: Duration = Duration::from_secs(120);
/// How often the lock, the log and the status file are looked at while
/// waiting (cheap reads; a second is far below any deadline above).
pub const POLL: Duration = Duration::from_secs(1);

/// The log file launchd writes a home's stderr to (the template's
/// `StandardErrorPath`), also the default when no manager runs it.
pub fn log_file(home: &Home) -> PathBuf {
    home.sentinel_log_path()
}

/// This user's id (launchd's `gui/<uid>` domain).
pub fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// The homes in restart order: as named, the first (the canary) first,
/// each once.
pub fn order(homes: &[String]) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for h in homes {
        if !out.contains(h) {
            out.push(h.clone());
        }
    }
    out
}

/// The service-manager calls that restart one home (`None`: no manager,
/// nothing to call).
pub fn restart_calls(manager: Manager, home: &str, uid: u32) -> Vec<Call> {
    match manager {
        Manager::Systemd => vec![Call::new(
            "systemctl",
            &["--user", "restart", &systemd_instance(home)],
        )],
        Manager::Launchd => vec![Call::new(
            "launchctl",
            &[
                "kickstart",
                "-k",
                &format!("gui/{uid}/{}", launchd_label(home)),
            ],
        )],
        Manager::None => vec![],
    }
}

/// The journal of a home's unit since `since` (unix seconds): where a
/// systemd-run daemon's log goes.
pub fn journal_call(home: &str, since: i64) -> Call {
    Call::new(
        "journalctl",
        &[
            "--user",
            "--unit",
            &systemd_instance(home),
            "--since",
            &format!("@{since}"),
            "--output",
            "cat",
            "--no-pager",
        ],
    )
}

/// What the log shows of a new process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Nothing,
    /// A `🚀` line of a process other than the old one.
    Started {
        pid: u32,
    },
    /// …and after it, that process's `🔌 WS connected`.
    Connected {
        pid: u32,
    },
}

/// The pid of a `🚀 <home> pid=N …` line.
fn rocket_pid(line: &str, home: &str) -> Option<u32> {
    let rest = &line[line.find("🚀 ")? + "🚀 ".len()..];
    let rest = rest.strip_prefix(home)?.strip_prefix(" pid=")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// What `text` (the log written since the restart began) shows of a new
/// process: the last `🚀` line of this home whose pid is not `old_pid`, and
/// whether a `🔌 WS connected` follows it.
pub fn seen(text: &str, home: &str, old_pid: Option<u32>) -> Seen {
    let mut out = Seen::Nothing;
    for line in text.lines() {
        if let Some(pid) = rocket_pid(line, home) {
            out = if Some(pid) == old_pid {
                Seen::Nothing
            } else {
                Seen::Started { pid }
            };
        } else if line.contains("🔌 WS connected")
            && let Seen::Started { pid } = out
        {
            out = Seen::Connected { pid };
        }
    }
    out
}

/// What the daemon's own status file shows of a new process: written by a
/// pid other than `old_pid` that started at or after `since` (unix
/// seconds), and whether its socket is up. The primary signal: the journal
/// is empty for system-UID accounts on older systemd and with volatile
/// journald, the status file never is.
pub fn seen_status(status: Option<&Status>, old_pid: Option<u32>, since: i64) -> Seen {
    match status {
        Some(s) if Some(s.pid) != old_pid && s.started_at >= since => {
            if s.ws_connected {
                Seen::Connected { pid: s.pid }
            } else {
                Seen::Started { pid: s.pid }
            }
        }
        _ => Seen::Nothing,
    }
}

/// The further along of two readings.
fn further(a: Seen, b: Seen) -> Seen {
    let rank = |s: Seen| match s {
        Seen::Nothing => 0,
        Seen::Started { .. } => 1,
        Seen::Connected { .. } => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The daemon's cold-start compaction line that opens it, and the one
/// that ends it (`hoop_sentinel::driver`).
pub const COMPACTION_STARTED: &str = "🗜️ cold start: compacting the session";
pub const COMPACTION_FINISHED: &str = "🗜️ cold start: compaction finished";

/// Where a new process's cold-start compaction is, from its log since its
/// `🚀`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// None started (none was due, or not yet).
    None,
    Running,
    Finished,
}

/// The compaction state of `log` (the text after the new process's `🚀`).
pub fn compaction(log: &str) -> Compaction {
    match (
        log.rfind(COMPACTION_STARTED),
        log.rfind(COMPACTION_FINISHED),
    ) {
        (Some(s), Some(f)) if f > s => Compaction::Finished,
        (Some(_), _) => Compaction::Running,
        (None, Some(_)) => Compaction::Finished,
        (None, None) => Compaction::None,
    }
}

/// The log after the `🚀` line of `pid` (empty when it has none yet).
fn after_rocket<'a>(log: &'a str, home: &str, pid: u32) -> &'a str {
    let mut at = None;
    let mut offset = 0;
    for line in log.split_inclusive('\n') {
        offset += line.len();
        if rocket_pid(line, home) == Some(pid) {
            at = Some(offset);
        }
    }
    at.map_or("", |a| &log[a..])
}

/// A round the canary may pass with: it ran and nothing failed.
pub fn healthy(r: RoundResult) -> bool {
    matches!(
        r,
        RoundResult::Quiet | RoundResult::Ok | RoundResult::Busy | RoundResult::Limit
    )
}

/// Where a home's log is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    /// A file the daemon's stderr is appended to.
    File(PathBuf),
    /// systemd's journal of the home's unit.
    Journal,
}

/// The options of one `hoop restart`.
#[derive(Debug, Clone)]
pub struct Options {
    pub manager: Manager,
    /// Skip waiting for a running turn.
    pub now: bool,
    /// The first home must also finish a healthy round before the next.
    pub canary: bool,
    /// The user id (launchd's `gui/<uid>` domain).
    pub uid: u32,
    pub turn_wait: Duration,
    pub come_up: Duration,
    pub poll: Duration,
    /// How long the canary has, once up, to finish its first round (time
    /// spent in a cold-start compaction not counted).
    pub round_wait: Duration,
    /// How long a canary's cold-start compaction may run before its first
    /// round (`None`: the home's turn timeout, which bounds `/compact` in
    /// the daemon too).
    pub compaction_wait: Option<Duration>,
}

impl Options {
    pub fn new(manager: Manager, uid: u32) -> Options {
        Options {
            manager,
            now: false,
            canary: false,
            uid,
            turn_wait: TURN_WAIT,
            come_up: COME_UP,
            poll: POLL,
            round_wait: COME_UP,
            compaction_wait: None,
        }
    }
}

/// The log of a home under `manager`: the journal for systemd, else the
/// file launchd appends to.
pub fn default_log(manager: Manager, home: &Home) -> LogSource {
    match manager {
        Manager::Systemd => LogSource::Journal,
        _ => LogSource::File(log_file(home)),
    }
}

/// How one home's restart ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Up again: the new process connected (and, for the canary, served a
    /// round).
    Restarted {
        old_pid: Option<u32>,
        new_pid: u32,
    },
    /// `--manager none`: the calls were printed, nothing restarted.
    NotRestarted,
    Failed {
        reason: String,
    },
    /// Not tried: an earlier home failed.
    Skipped,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Restarted { old_pid, new_pid } => match old_pid {
                Some(o) => write!(f, "restarted (pid {o} → {new_pid}), WS connected"),
                None => write!(f, "started (pid {new_pid}), WS connected"),
            },
            Outcome::NotRestarted => f.write_str("no service manager: nothing restarted"),
            Outcome::Failed { reason } => write!(f, "FAILED: {reason}"),
            Outcome::Skipped => f.write_str("skipped (an earlier home failed)"),
        }
    }
}

/// Restart `homes` one at a time (see the module doc); returns each home's
/// outcome, in order. `say` receives progress lines for the operator.
pub fn run(
    root: &std::path::Path,
    homes: &[String],
    opts: &Options,
    runner: &dyn Runner,
    say: &mut dyn FnMut(&str),
) -> Vec<(String, Outcome)> {
    let mut out = vec![];
    let mut failed = false;
    for (i, name) in order(homes).into_iter().enumerate() {
        if failed {
            out.push((name, Outcome::Skipped));
            continue;
        }
        let outcome = match Home::new(root, &name) {
            Ok(home) => one(&home, opts.canary && i == 0, opts, runner, say),
            Err(e) => Outcome::Failed {
                reason: e.to_string(),
            },
        };
        failed = matches!(outcome, Outcome::Failed { .. });
        say(&format!("{name}: {outcome}"));
        out.push((name, outcome));
    }
    out
}

fn fail(reason: impl Into<String>) -> Outcome {
    Outcome::Failed {
        reason: reason.into(),
    }
}

/// Wait until `done` gives `Some`, polling; `None` past `limit`.
fn wait_for<T>(limit: Duration, poll: Duration, mut done: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = done() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(poll);
    }
}

fn one(
    home: &Home,
    canary: bool,
    opts: &Options,
    runner: &dyn Runner,
    say: &mut dyn FnMut(&str),
) -> Outcome {
    if !home.config_path().is_file() {
        return fail(format!(
            "no home at {} (no config.json); fix: `hoop status` lists this machine's homes",
            home.dir().display()
        ));
    }
    // 1. A running turn: wait for it to end (trying the flock each time).
    let turn_lock = home.turn_lock_path();
    let turn_running = || match lock::probe(&turn_lock) {
        Ok(p) => Ok(p != Probe::Free),
        Err(e) => Err(e.to_string()),
    };
    match turn_running() {
        Err(e) => return fail(e),
        Ok(true) if opts.now => say(&format!(
            "{}: a turn is running; --now: not waiting",
            home.name
        )),
        Ok(true) => {
            say(&format!(
                "{}: a turn is running; waiting for it to end",
                home.name
            ));
            let ended = wait_for(opts.turn_wait, opts.poll, || match turn_running() {
                Ok(false) => Some(Ok(())),
                Ok(true) => None,
                Err(e) => Some(Err(e)),
            });
            match ended {
                Some(Ok(())) => {}
                Some(Err(e)) => return fail(e),
                None => {
                    return fail(format!(
                        "a turn was still running after {} s (use --now to restart anyway)",
                        opts.turn_wait.as_secs()
                    ));
                }
            }
        }
        Ok(false) => {}
    }
    // 2. Who runs now, and where its log ends.
    let old_pid = match lock::probe(&home.account_lock_path()) {
        Ok(Probe::Held { pid }) => pid,
        Ok(Probe::Free) => None,
        Err(e) => return fail(e.to_string()),
    };
    let source = default_log(opts.manager, home);
    // One second of slack: started_at and --since are whole seconds.
    let since = hoop_core::clock::now_unix().saturating_sub(1).max(0);
    let mark = match &source {
        LogSource::File(p) => std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
        LogSource::Journal => since as u64,
    };
    let status_path = home.dir().join(hoop_sentinel::constants::STATUS_FILE);
    // 3. The restart.
    let calls = restart_calls(opts.manager, &home.name, opts.uid);
    if calls.is_empty() {
        return Outcome::NotRestarted;
    }
    for call in &calls {
        match runner.run(call) {
            Ok(o) if o.success() => {}
            Ok(o) => {
                return fail(format!(
                    "`{call}` exited {}: {}",
                    o.code.map_or("by a signal".into(), |c| c.to_string()),
                    o.stderr.trim()
                ));
            }
            Err(e) => return fail(e.to_string()),
        }
    }
    // 4. The new process's 🚀 and then its socket: its own status file
    // first, its log (file or journal) only when that shows less.
    let read_log = || -> String {
        match &source {
            LogSource::File(p) => read_from(p, mark),
            LogSource::Journal => runner
                .run(&journal_call(&home.name, mark as i64))
                .map(|o| o.stdout)
                .unwrap_or_default(),
        }
    };
    let mut last = Seen::Nothing;
    let up = wait_for(opts.come_up, opts.poll, || {
        let status = Status::load(&status_path).ok();
        last = seen_status(status.as_ref(), old_pid, since);
        if !matches!(last, Seen::Connected { .. }) {
            last = further(last, seen(&read_log(), &home.name, old_pid));
        }
        match last {
            Seen::Connected { pid } => Some(pid),
            _ => None,
        }
    });
    let new_pid = match up {
        Some(p) => p,
        None => {
            return fail(match last {
                Seen::Nothing => format!(
                    "no 🚀 line of a new process within {} s",
                    opts.come_up.as_secs()
                ),
                Seen::Started { pid } => format!(
                    "the new process (pid {pid}) did not connect its WebSocket within {} s",
                    opts.come_up.as_secs()
                ),
                Seen::Connected { .. } => unreachable!("connected is success"),
            });
        }
    };
    // 5. The canary serves a round.
    if canary {
        say(&format!(
            "{}: canary up; waiting for its first round",
            home.name
        ));
        // A due cold-start compaction runs before the first round: its
        // time does not count against come_up, but is bounded by its own
        // timeout (the home's turn timeout).
        let compaction_wait = opts.compaction_wait.unwrap_or_else(|| {
            hoop_sentinel::config::SentinelConfig::load(&home.dir())
                .map(|c| c.turn_timeout)
                .unwrap_or(hoop_core::limits::TURN_TIMEOUT)
        });
        let mut deadline = Instant::now() + opts.round_wait;
        let mut compacting_since: Option<Instant> = None;
        let round = loop {
            let status = Status::load(&status_path)
                .ok()
                .filter(|s| s.pid == new_pid)
                .and_then(|s| s.last_round_result);
            if status.is_some() {
                break Ok(status);
            }
            let now = Instant::now();
            match compaction(after_rocket(&read_log(), &home.name, new_pid)) {
                Compaction::Running => {
                    let started = *compacting_since.get_or_insert_with(|| {
                        say(&format!(
                            "{}: canary compacting its session before its first round \
                             (up to {} s)",
                            home.name,
                            compaction_wait.as_secs()
                        ));
                        now
                    });
                    if now >= started + compaction_wait {
                        break Err(format!(
                            "the canary's cold-start compaction did not finish within {} s",
                            compaction_wait.as_secs()
                        ));
                    }
                    deadline = now + opts.round_wait;
                }
                Compaction::Finished if compacting_since.take().is_some() => {
                    deadline = now + opts.round_wait;
                }
                _ => {}
            }
            if now >= deadline {
                break Ok(None);
            }
            std::thread::sleep(opts.poll);
        };
        let round = match round {
            Ok(r) => r,
            Err(reason) => return fail(reason),
        };
        match round {
            Some(r) if healthy(r) => {}
            Some(r) => {
                let word = serde_json::to_value(r).unwrap_or_default();
                return fail(format!("the canary's first round ended {word}"));
            }
            None => {
                return fail(format!(
                    "the canary finished no round within {} s",
                    opts.round_wait.as_secs()
                ));
            }
        }
    }
    Outcome::Restarted { old_pid, new_pid }
}

/// The file from byte `mark` on (from the start when it shrank: rotated
/// or truncated; the pid check keeps old lines out either way).
fn read_from(path: &std::path::Path, mark: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = if len < mark { 0 } else { mark };
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{CallOutput, RecordingRunner};

    #[test]
    fn the_order_is_as_named_canary_first_each_once() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(order(&s(&["b", "a", "b", "c"])), s(&["b", "a", "c"]));
        assert_eq!(order(&s(&[])), s(&[]));
    }

    #[test]
    fn each_manager_restarts_the_home_its_own_way() {
        let calls = |m| {
            restart_calls(m, "bolt", 501)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            calls(Manager::Systemd),
            ["systemctl --user restart hoop-sentinel@bolt.service"]
        );
        assert_eq!(
            calls(Manager::Launchd),
            ["launchctl kickstart -k gui/501/dev.hoop.sentinel.bolt"]
        );
        assert!(calls(Manager::None).is_empty());
    }

    /// Only a new pid's `🚀` counts, and only a `🔌` after it.
    #[test]
    fn only_the_new_process_lines_count() {
        let r = |pid: u32| format!("INFO 🚀 bolt pid={pid} backend=http://x email=e\n");
        let ws = "INFO 🔌 WS connected\n";
        let cases: Vec<(String, Option<u32>, Seen)> = vec![
            (String::new(), Some(7), Seen::Nothing),
            (format!("{}{ws}", r(7)), Some(7), Seen::Nothing),
            (r(8), Some(7), Seen::Started { pid: 8 }),
            (format!("{ws}{}", r(8)), Some(7), Seen::Started { pid: 8 }),
            (format!("{}{ws}", r(8)), Some(7), Seen::Connected { pid: 8 }),
            (format!("{}{ws}", r(8)), None, Seen::Connected { pid: 8 }),
            // The old process's lines after the new one's do not undo it…
            (
                format!("{}{ws}{ws}", r(8)),
                Some(7),
                Seen::Connected { pid: 8 },
            ),
            // …but a third process's start does.
            (
                format!("{}{ws}{}", r(8), r(9)),
                Some(7),
                Seen::Started { pid: 9 },
            ),
            // Another home's line is not this home's.
            (
                "🚀 bolt2 pid=8 x\n🔌 WS connected\n".into(),
                Some(7),
                Seen::Nothing,
            ),
            (
                "🚀 bolt pid=x\n🔌 WS connected\n".into(),
                Some(7),
                Seen::Nothing,
            ),
        ];
        for (text, old, want) in cases {
            assert_eq!(seen(&text, "bolt", old), want, "{text:?} old={old:?}");
        }
    }

    #[test]
    fn a_canary_passes_only_a_round_that_did_not_fail() {
        for r in RoundResult::ALL {
            let want = !matches!(
                r,
                RoundResult::Failed
                    | RoundResult::Timeout
                    | RoundResult::AuthDead
                    | RoundResult::Error
            );
            assert_eq!(healthy(r), want, "{r:?}");
        }
    }

    fn root_with(homes: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for h in homes {
            let d = root.path().join(h);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("config.json"), "{}").unwrap();
        }
        root
    }

    fn quick(manager: Manager) -> Options {
        Options {
            turn_wait: Duration::from_millis(300),
            come_up: Duration::from_millis(300),
            poll: Duration::from_millis(20),
            ..Options::new(manager, 501)
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The first failure stops the roll: its reason is given, and no
    /// later home is touched.
    #[test]
    fn the_roll_stops_at_the_first_failure_with_its_reason() {
        let root = root_with(&["a", "b", "c"]);
        let r = RecordingRunner::new();
        r.answer(
            |c| c.args.iter().any(|a| a.contains("@a.")),
            CallOutput {
                code: Some(5),
                stdout: String::new(),
                stderr: "Unit hoop-sentinel@a.service not found.\n".into(),
            },
        );
        let out = run(
            root.path(),
            &names(&["a", "b", "c"]),
            &quick(Manager::Systemd),
            &r,
            &mut |_| {},
        );
        assert_eq!(out.len(), 3);
        match &out[0].1 {
            Outcome::Failed { reason } => {
                assert!(reason.contains("exited 5"), "{reason}");
                assert!(reason.contains("not found"), "{reason}");
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(out[1].1, Outcome::Skipped);
        assert_eq!(out[2].1, Outcome::Skipped);
        assert_eq!(
            r.calls()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["systemctl --user restart hoop-sentinel@a.service"]
        );
    }

    /// A held turn flock is a running turn: no restart until it ends, and
    /// a turn that outlasts the wait fails the home without a call.
    #[test]
    fn a_running_turn_is_waited_for_and_now_skips_the_wait() {
        let root = root_with(&["a"]);
        let home = Home::new(root.path(), "a").unwrap();
        let turn = lock::turn(&home.turn_lock_path()).unwrap();
        let r = RecordingRunner::new();
        let out = run(
            root.path(),
            &names(&["a"]),
            &quick(Manager::Systemd),
            &r,
            &mut |_| {},
        );
        match &out[0].1 {
            Outcome::Failed { reason } => assert!(reason.contains("turn"), "{reason}"),
            o => panic!("{o:?}"),
        }
        assert!(r.calls().is_empty(), "no restart while a turn runs");
        // --now: restarted at once (the journal then shows nothing: the
        // home fails on the deadline, after the call).
        let now = Options {
            now: true,
            ..quick(Manager::Systemd)
        };
        let out = run(root.path(), &names(&["a"]), &now, &r, &mut |_| {});
        assert!(matches!(&out[0].1, Outcome::Failed { reason } if reason.contains("🚀")));
        assert_eq!(
            r.calls()[0].to_string(),
            "systemctl --user restart hoop-sentinel@a.service"
        );
        drop(turn);
    }

    /// Under systemd the log is the unit's journal, read through the same
    /// runner from the moment of the restart.
    #[test]
    fn under_systemd_the_new_process_is_read_from_the_journal() {
        let root = root_with(&["a"]);
        let r = RecordingRunner::new();
        r.answer(
            |c| c.program == "journalctl",
            CallOutput {
                code: Some(0),
                stdout: "INFO 🚀 a pid=4242 backend=x\nINFO logged in\nINFO 🔌 WS connected\n"
                    .into(),
                stderr: String::new(),
            },
        );
        let out = run(
            root.path(),
            &names(&["a"]),
            &quick(Manager::Systemd),
            &r,
            &mut |_| {},
        );
        assert_eq!(
            out[0].1,
            Outcome::Restarted {
                old_pid: None,
                new_pid: 4242
            }
        );
        let calls: Vec<String> = r.calls().iter().map(ToString::to_string).collect();
        assert_eq!(calls[0], "systemctl --user restart hoop-sentinel@a.service");
        assert!(
            calls[1].starts_with("journalctl --user --unit hoop-sentinel@a.service --since @"),
            "{calls:?}"
        );
    }

    #[test]
    fn no_manager_restarts_nothing_and_an_unknown_home_fails() {
        let root = root_with(&["a"]);
        let r = RecordingRunner::new();
        let out = run(
            root.path(),
            &names(&["a"]),
            &quick(Manager::None),
            &r,
            &mut |_| {},
        );
        assert_eq!(out[0].1, Outcome::NotRestarted);
        let out = run(
            root.path(),
            &names(&["ghost", "a"]),
            &quick(Manager::Systemd),
            &r,
            &mut |_| {},
        );
        assert!(matches!(&out[0].1, Outcome::Failed { reason } if reason.contains("no home")));
        assert_eq!(out[1].1, Outcome::Skipped);
        assert!(r.calls().is_empty());
    }

    /// The status file speaks for a new process only: another pid, started
    /// since the restart began; connected when its socket is up.
    #[test]
    fn the_status_file_shows_a_new_process_only() {
        let st = |pid, started_at, ws_connected| Status {
            pid,
            started_at,
            ws_connected,
            last_round_at: None,
            last_round_result: None,
            consecutive_failures: 0,
            login_error: None,
            gave_up: vec![],
        };
        let cases: Vec<(Option<Status>, Option<u32>, Seen)> = vec![
            (None, Some(7), Seen::Nothing),
            (Some(st(7, 200, true)), Some(7), Seen::Nothing),
            (Some(st(8, 99, true)), Some(7), Seen::Nothing),
            (Some(st(8, 100, false)), Some(7), Seen::Started { pid: 8 }),
            (Some(st(8, 100, true)), Some(7), Seen::Connected { pid: 8 }),
            (Some(st(8, 150, true)), None, Seen::Connected { pid: 8 }),
            (Some(st(8, 50, true)), None, Seen::Nothing),
        ];
        for (status, old, want) in cases {
            assert_eq!(
                seen_status(status.as_ref(), old, 100),
                want,
                "{status:?} {old:?}"
            );
        }
        assert_eq!(
            further(Seen::Started { pid: 8 }, Seen::Nothing),
            Seen::Started { pid: 8 }
        );
        assert_eq!(
            further(Seen::Started { pid: 8 }, Seen::Connected { pid: 8 }),
            Seen::Connected { pid: 8 }
        );
    }

    /// A compaction is running from its opening line until its end line
    /// (of the new process: only the log after its 🚀 is read).
    #[test]
    fn a_cold_start_compaction_is_read_from_its_two_lines() {
        let start = "INFO hoop_sentinel::driver: 🗜️ cold start: compacting the session before \
                     the first round home=bolt context=450000 threshold=400000\n";
        let end = "INFO hoop_sentinel::driver: 🗜️ cold start: compaction finished home=bolt \
                   outcome=Ok\n";
        assert_eq!(compaction(""), Compaction::None);
        assert_eq!(compaction(start), Compaction::Running);
        assert_eq!(compaction(&format!("{start}{end}")), Compaction::Finished);
        assert_eq!(
            compaction(&format!("{start}{end}{start}")),
            Compaction::Running
        );
        let log = format!("🚀 bolt pid=7 x\n{start}{end}🚀 bolt pid=8 y\n{start}");
        assert_eq!(
            compaction(after_rocket(&log, "bolt", 8)),
            Compaction::Running
        );
        assert_eq!(after_rocket(&log, "bolt", 9), "");
    }
}
