//! `hoop status`: every home on this machine at a glance.
//!
//! Two halves. [`gather`] is the I/O: it lists the homes under the hoop
//! root and reads, for each, what the sentinel left there — it TRIES the
//! account lock (alive means the kernel says someone holds it, never that a
//! lock or pid file exists), reads the pid the holder wrote into it, the
//! status file, the obituaries, the agent's context meter, the hooks in the
//! agent's Claude Code settings and the act_guard rules, the phase file —
//! into plain [`Facts`]. [`home_status`] is the pure decision from facts to
//! one row ([`HomeStatus`]), table-tested; [`table`] prints the rows.
//!
//! `--json` prints a [`Report`]: a stable shape documented in
//! `docs/status-json.md` (`schema` names its version; fields are only ever
//! added). `null` always means "not known", never "no" or "zero".

use std::path::{Path, PathBuf};

use hoop_core::home::{Home, HomeError};
use hoop_sentinel::lock::{self, Probe};
use hoop_sentinel::state::{GaveUp, Obituaries, RoundResult, Status};
use serde::{Deserialize, Serialize};

use crate::install::{self, Row, Status as PlanStatus};
use crate::service::{Call, Manager, Runner};
use crate::units;

/// The version of the `--json` shape. A change that removes or retypes a
/// field gets a new version; adding a field does not.
pub const SCHEMA: &str = "hoop.status/1";

/// The whole machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: String,
    /// The machine's host name (`null` when it cannot be read).
    pub host: Option<String>,
    /// The hoop root the homes were found under.
    pub root: String,
    /// When the report was made (unix seconds).
    pub at: i64,
    /// One per home, sorted by name.
    pub homes: Vec<HomeStatus>,
    /// Drifted install-manifest items the machine shares (the `hoop` link,
    /// the systemd template); `[]` none; `null` not checked.
    pub machine_drift: Option<Vec<String>>,
}

/// One home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HomeStatus {
    pub home: String,
    /// A daemon holds the account lock (decided by trying it); `null` when
    /// the lock could not be tried.
    pub alive: Option<bool>,
    /// The holder's pid, as it wrote it into the lock.
    pub pid: Option<u32>,
    /// The live daemon's WebSocket is up; `false` when no daemon runs;
    /// `null` when the live daemon has not written its status yet.
    pub ws_connected: Option<bool>,
    /// The last round (of this daemon or, when none runs, of the last one).
    pub last_round_at: Option<i64>,
    /// `quiet`, `busy`, `ok`, `failed`, `timeout`, `auth_dead`, `limit`, `error`.
    pub last_round_result: Option<RoundResult>,
    pub consecutive_failures: Option<u32>,
    /// Why the daemon cannot log in, while it cannot.
    pub login_error: Option<String>,
    /// The agent session's context size in tokens.
    pub context_tokens: Option<u64>,
    /// The obituary last posted (`null`: none ever).
    pub obituary: Option<Obituary>,
    pub guards: Guards,
    /// What the agent was last doing, as `tool_phase` wrote it.
    pub phase: Option<Phase>,
    pub unit: Unit,
    /// Items of the install manifest that differ from the machine; `[]`
    /// none; `null` not checked.
    pub drift: Option<Vec<String>>,
    /// Files that could not be read, each with why (the row says `null`
    /// for what they would have told).
    pub problems: Vec<String>,
    /// The home's live workers (`hoop worker spawn`), oldest card first.
    #[serde(default)]
    pub workers: Vec<WorkerRow>,
    /// Patrol findings skipped after rounds that kept failing, one line
    /// each (`<patrol>: findings …`), until one of its rounds lands.
    #[serde(default)]
    pub patrol_skipped: Vec<String>,
    /// Messages the sentinel stopped offering after three offers with
    /// neither a reply nor a pass (the newest kept in its status file),
    /// oldest first. History: kept whether or not a daemon runs.
    #[serde(default)]
    pub gave_up: Vec<GaveUp>,
}

/// One live worker: its card and the last hook-status signal its agent's
/// lifecycle hooks sent (hook-derived, non-authoritative: the card on the
/// backend is the truth).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRow {
    pub card_id: i64,
    pub parent_id: i64,
    pub conversation_id: i64,
    pub title: String,
    /// `claude` or `cursor-agent`.
    pub agent: String,
    pub pid: u32,
    pub started_at: i64,
    /// `<run>: <signal> (<detail>), <n> s ago [hook-derived,
    /// non-authoritative]`, or `… no signal yet …`; `null` when the worker
    /// has no lane (its registration failed).
    pub last_signal: Option<String>,
}

/// The rows for the home's live workers, each with its run's lane view
/// (run id = card id). Pure.
pub fn worker_rows(
    live: &[hoop_sentinel::worker::LiveWorker],
    runs: &[hoop_guards::lane::RunView],
    now: i64,
) -> Vec<WorkerRow> {
    live.iter()
        .map(|w| WorkerRow {
            card_id: w.card_id,
            parent_id: w.parent_id,
            conversation_id: w.conversation_id,
            title: w.title.clone(),
            agent: w.agent.word().to_string(),
            pid: w.pid,
            started_at: w.started_at,
            last_signal: runs
                .iter()
                .find(|r| r.run_id == w.card_id.to_string())
                .map(|r| r.describe(now)),
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obituary {
    pub cause: String,
    pub at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Guards {
    /// Every hook of the home is in the agent's Claude Code `settings.json`.
    pub hooks_installed: Option<bool>,
    /// The act_guard rules armed (`[]`: disarmed by `none`).
    pub act_rules: Option<Vec<String>>,
    /// Hooks installed and at least one act_guard rule armed.
    pub armed: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    pub phase: String,
    pub at: i64,
}

/// The home's service unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Unit {
    pub installed: Option<bool>,
    pub enabled: Option<bool>,
    pub running: Option<bool>,
}

/// What [`gather`] read for one home; each `Err` is why a file could not be
/// read.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub home: String,
    /// The account lock, tried.
    pub lock: Option<Result<Probe, String>>,
    /// `sentinel-status.json` (`Ok(None)`: absent).
    pub status: Option<Result<Option<Status>, String>>,
    pub obituaries: Option<Result<Obituaries, String>>,
    pub context_tokens: Option<u64>,
    pub hooks_installed: Option<Result<bool, String>>,
    /// The home's own files (`config.json`, `sentinel.json`,
    /// `install.json`) parse; the error names the file and the fix.
    pub config: Option<Result<(), String>>,
    pub act_rules: Option<Vec<String>>,
    pub phase: Option<Result<Option<Phase>, String>>,
    pub unit: Unit,
    pub drift: Option<Vec<String>>,
    pub workers: Vec<WorkerRow>,
    pub patrol_skipped: Vec<String>,
}

/// The row for one home: a pure function of what was read.
pub fn home_status(f: &Facts) -> HomeStatus {
    let mut problems = vec![];
    let mut known = |r: &Option<Result<_, String>>, what: &str| -> bool {
        if let Some(Err(e)) = r {
            problems.push(format!("{what}: {e}"));
            return false;
        }
        r.is_some()
    };
    known(&f.config, "home");
    let lock_known = known(&f.lock.clone().map(|r| r.map(|_| ())), "account lock");
    let status_known = known(&f.status.clone().map(|r| r.map(|_| ())), "status file");
    known(&f.obituaries.clone().map(|r| r.map(|_| ())), "obituaries");
    known(&f.hooks_installed.clone().map(|r| r.map(|_| ())), "hooks");
    known(&f.phase.clone().map(|r| r.map(|_| ())), "phase");
    let (alive, pid) = match (&f.lock, lock_known) {
        (Some(Ok(Probe::Held { pid })), _) => (Some(true), *pid),
        (Some(Ok(Probe::Free)), _) => (Some(false), None),
        _ => (None, None),
    };
    let status = match (&f.status, status_known) {
        (Some(Ok(Some(s))), true) => Some(s),
        _ => None,
    };
    // The status file speaks for the live daemon only when that daemon
    // wrote it; a dead daemon's socket is down whatever its file says.
    let ws_connected = match alive {
        Some(false) => Some(false),
        Some(true) => status
            .filter(|s| pid.is_some_and(|p| p == s.pid))
            .map(|s| s.ws_connected),
        None => None,
    };
    let mine = |s: &&Status| alive != Some(true) || pid.is_none_or(|p| p == s.pid);
    let login_error = status.filter(mine).and_then(|s| s.login_error.clone());
    let obituary = match &f.obituaries {
        Some(Ok(o)) => {
            o.0.iter()
                .max_by_key(|(cause, at)| (**at, (*cause).clone()))
                .map(|(cause, at)| Obituary {
                    cause: cause.clone(),
                    at: *at,
                })
        }
        _ => None,
    };
    let hooks_installed = match &f.hooks_installed {
        Some(Ok(b)) => Some(*b),
        _ => None,
    };
    let armed = match (hooks_installed, &f.act_rules) {
        (Some(false), _) => Some(false),
        (_, Some(r)) if r.is_empty() => Some(false),
        (Some(true), Some(_)) => Some(true),
        _ => None,
    };
    HomeStatus {
        home: f.home.clone(),
        alive,
        pid,
        ws_connected,
        last_round_at: status.and_then(|s| s.last_round_at),
        last_round_result: status.and_then(|s| s.last_round_result),
        consecutive_failures: status.map(|s| s.consecutive_failures),
        login_error,
        context_tokens: f.context_tokens,
        obituary,
        guards: Guards {
            hooks_installed,
            act_rules: f.act_rules.clone(),
            armed,
        },
        phase: match &f.phase {
            Some(Ok(p)) => p.clone(),
            _ => None,
        },
        unit: f.unit,
        drift: f.drift.clone(),
        problems,
        workers: f.workers.clone(),
        patrol_skipped: f.patrol_skipped.clone(),
        gave_up: status.map(|s| s.gave_up.clone()).unwrap_or_default(),
    }
}

/// The home's unit from the install manifest's plan: installed when every
/// unit file it runs from is there (a drifted file is still installed),
/// enabled when its service row is ok; `null` when the plan has no such row
/// or could not ask (`--manager none`). Whether it runs is asked apart
/// ([`unit_running`]).
pub fn unit_from_plan(rows: &[Row], home: &str) -> Unit {
    let mine = |r: &&Row| r.item.home.as_deref().is_none_or(|h| h == home);
    let files: Vec<&Row> = rows
        .iter()
        .filter(|r| r.item.kind == "unit")
        .filter(mine)
        .collect();
    let installed = (!files.is_empty()).then(|| files.iter().all(|r| r.status != PlanStatus::Add));
    let enabled = rows
        .iter()
        .find(|r| r.item.kind == "service" && r.item.home.as_deref() == Some(home))
        .and_then(|r| match r.status {
            PlanStatus::Ok => Some(true),
            PlanStatus::Unchecked => None,
            _ => Some(false),
        });
    Unit {
        installed,
        enabled,
        running: None,
    }
}

/// The drifted items of the plan that belong to `home` (`None`) or to
/// the machine (`Some(None)`), each as `kind subject: status (why)`.
pub fn drift_from_plan(rows: &[Row], home: Option<&str>) -> Vec<String> {
    rows.iter()
        .filter(|r| r.item.home.as_deref() == home)
        // A broken home is one of its problems already.
        .filter(|r| r.status != PlanStatus::Broken)
        .filter_map(install::finding)
        .map(|f| format!("{}: {}", f.item, f.problem))
        .collect()
}

/// Is the home's service running, as its manager says (`None` without a
/// manager or when the call fails).
pub fn unit_running(manager: Manager, runner: &dyn Runner, uid: u32, home: &str) -> Option<bool> {
    match manager {
        Manager::None => None,
        Manager::Systemd => {
            let unit = units::systemd_instance(home);
            let out = runner
                .run(&Call::new("systemctl", &["--user", "is-active", &unit]))
                .ok()?;
            Some(out.success())
        }
        Manager::Launchd => {
            let target = format!("gui/{uid}/{}", units::launchd_label(home));
            let out = runner
                .run(&Call::new("launchctl", &["print", &target]))
                .ok()?;
            Some(out.success() && out.stdout.contains("state = running"))
        }
    }
}

/// Fill the report's unit and drift fields from the install manifest's
/// plan (or why it could not be made) and the manager.
pub fn wire(
    report: &mut Report,
    plan: Result<&[Row], String>,
    manager: Manager,
    runner: &dyn Runner,
    uid: u32,
) {
    match plan {
        Ok(rows) => {
            report.machine_drift = Some(drift_from_plan(rows, None));
            for h in &mut report.homes {
                h.unit = Unit {
                    running: unit_running(manager, runner, uid, &h.home),
                    ..unit_from_plan(rows, &h.home)
                };
                h.drift = Some(drift_from_plan(rows, Some(&h.home)));
            }
        }
        Err(e) => {
            report.machine_drift = Some(vec![format!("manifest: {e}")]);
            for h in &mut report.homes {
                h.unit.running = unit_running(manager, runner, uid, &h.home);
            }
        }
    }
}

/// The homes under `root`: directories holding a `config.json`, by name.
pub fn homes(root: &Path) -> Result<Vec<Home>, HomeError> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(cause) => {
            return Err(HomeError::Io {
                path: root.to_path_buf(),
                cause,
            });
        }
    };
    let mut out: Vec<Home> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|name| Home::new(root, &name).ok())
        .filter(|h| h.config_path().is_file())
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Read everything [`home_status`] needs for `home`.
pub fn facts(home: &Home) -> Facts {
    let dir = home.dir();
    let lock = Some(lock::probe(&home.account_lock_path()).map_err(|e| e.to_string()));
    let status_path = dir.join(hoop_sentinel::constants::STATUS_FILE);
    let status = Some(if status_path.exists() {
        Status::load(&status_path)
            .map(Some)
            .map_err(|e| e.to_string())
    } else {
        Ok(None)
    });
    let obituaries = Some(
        Obituaries::load(&dir.join(hoop_sentinel::constants::OBITUARIES_FILE))
            .map_err(|e| e.to_string()),
    );
    let cfg = hoop_sentinel::config::SentinelConfig::load(&dir);
    let config_dir = cfg.as_ref().ok().and_then(|c| {
        let env: Vec<(String, String)> =
            c.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        hoop_sentinel::context::config_dir(&env, |k| std::env::var_os(k))
    });
    let context_tokens = config_dir.as_ref().and_then(|d| {
        let session = hoop_sentinel::driver::session::read(home)?;
        hoop_sentinel::context::context_tokens(&hoop_sentinel::context::transcript_path(
            d,
            &home.workdir(),
            &session,
        ))
    });
    let user_home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let entry = user_home
        .as_ref()
        .map(|u| crate::install::read_home(home, u));
    let config = entry.as_ref().map(|e| match e {
        Ok(_) => Ok(()),
        Err(b) => Err(format!("{}; {}", b.problem(), b.fix())),
    });
    let hooks_installed = match (&entry, &user_home) {
        (Some(Ok(e)), Some(u)) => Some(hooks_installed(e, u)),
        _ => None,
    };
    let act_rules = Some(
        hoop_guards::act::armed_rules(&home.root)
            .rules()
            .map(|r| r.name().to_string())
            .collect(),
    );
    let live = hoop_sentinel::worker::live_workers(home);
    let workers = if live.is_empty() {
        Vec::new()
    } else {
        let runs =
            hoop_guards::lane::latest_signals(&hoop_guards::lane::runtime_dir(home), &home.name);
        worker_rows(&live, &runs, hoop_core::clock::now_unix())
    };
    Facts {
        home: home.name.clone(),
        lock,
        status,
        obituaries,
        context_tokens,
        hooks_installed,
        config,
        act_rules,
        phase: Some(read_phase(&home.phase_path())),
        unit: Unit::default(),
        drift: None,
        workers,
        patrol_skipped: hoop_sentinel::patrol::skipped_lines(&home.dir()),
    }
}

/// Are all the hooks this home should have (the install manifest's
/// [`crate::manifest::home_hooks`], from its `install.json`) in their
/// settings files? Asked of the guards' own installer (a dry merge: nothing
/// it would add).
fn hooks_installed(entry: &crate::manifest::HomeEntry, user_home: &Path) -> Result<bool, String> {
    use hoop_guards::install::{Change, merge_plan};
    for (target, path, specs) in crate::manifest::home_hooks(user_home, entry) {
        let (changes, _) = merge_plan(target, &path, "hoop", &specs).map_err(|e| e.to_string())?;
        if changes.iter().any(|c| matches!(c, Change::Added(_))) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn read_phase(path: &Path) -> Result<Option<Phase>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The machine's host name (`hostname`, on Linux and macOS alike).
fn host() -> Option<String> {
    let out = std::process::Command::new("hostname")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !name.is_empty()).then_some(name)
}

/// The report for every home under `root`.
pub fn gather(root: &Path, now: i64) -> Result<Report, HomeError> {
    let homes = homes(root)?;
    Ok(Report {
        schema: SCHEMA.to_string(),
        host: host(),
        root: root.display().to_string(),
        at: now,
        homes: homes.iter().map(|h| home_status(&facts(h))).collect(),
        machine_drift: None,
    })
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

fn ago(at: Option<i64>, now: i64) -> String {
    match at {
        None => "-".into(),
        Some(t) => {
            let d = now.saturating_sub(t).max(0);
            match d {
                0..60 => format!("{d}s ago"),
                60..3600 => format!("{}m ago", d / 60),
                3600..86400 => format!("{}h ago", d / 3600),
                _ => format!("{}d ago", d / 86400),
            }
        }
    }
}

fn word<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The report as a table an operator reads (one line per home, then any
/// problems and login errors below it).
pub fn table(r: &Report) -> String {
    let head = [
        "HOME",
        "ALIVE",
        "PID",
        "WS",
        "LAST ROUND",
        "RESULT",
        "FAILS",
        "CONTEXT",
        "OBITUARY",
        "GUARDS",
        "PHASE",
        "UNIT",
        "DRIFT",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for h in &r.homes {
        rows.push(vec![
            h.home.clone(),
            yes_no(h.alive).into(),
            h.pid.map_or("-".into(), |p| p.to_string()),
            yes_no(h.ws_connected).into(),
            ago(h.last_round_at, r.at),
            h.last_round_result.as_ref().map_or("-".into(), word),
            h.consecutive_failures.map_or("-".into(), |n| n.to_string()),
            h.context_tokens.map_or("-".into(), |n| n.to_string()),
            h.obituary.as_ref().map_or("-".into(), |o| {
                format!("{} {}", o.cause, ago(Some(o.at), r.at))
            }),
            match (h.guards.armed, h.guards.hooks_installed) {
                (Some(true), _) => "armed".into(),
                (Some(false), Some(false)) => "NO HOOKS".into(),
                (Some(false), _) => "DISARMED".into(),
                (None, _) => "?".into(),
            },
            h.phase.as_ref().map_or("-".into(), |p| p.phase.clone()),
            match h.unit {
                Unit {
                    installed: None, ..
                } => "?".into(),
                Unit {
                    installed: Some(false),
                    ..
                } => "none".into(),
                u => format!(
                    "{}{}",
                    if u.enabled == Some(true) {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    if u.running == Some(true) {
                        ",running"
                    } else {
                        ""
                    }
                ),
            },
            match &h.drift {
                None => "?".into(),
                Some(d) if d.is_empty() => "none".into(),
                Some(d) => format!("{} item(s)", d.len()),
            },
        ]);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if r.homes.is_empty() {
        out.push_str(&format!("(no home under {})\n", r.root));
    }
    for d in r.machine_drift.iter().flatten() {
        out.push_str(&format!("machine: drift: {d}\n"));
    }
    for h in &r.homes {
        if let Some(e) = &h.login_error {
            out.push_str(&format!("{}: {e}\n", h.home));
        }
        for p in &h.problems {
            out.push_str(&format!("{}: cannot read {p}\n", h.home));
        }
        for d in h.drift.iter().flatten() {
            out.push_str(&format!("{}: drift: {d}\n", h.home));
        }
        for w in &h.workers {
            out.push_str(&format!(
                "{}: worker on card {} (parent {}, room {}) {} pid {}: {}; {}\n",
                h.home,
                w.card_id,
                w.parent_id,
                w.conversation_id,
                w.agent,
                w.pid,
                w.title,
                w.last_signal.as_deref().unwrap_or("no hook-status lane")
            ));
        }
        for k in &h.patrol_skipped {
            out.push_str(&format!(
                "{}: patrol {k} (not handled; look at them by hand)\n",
                h.home
            ));
        }
        for g in &h.gave_up {
            out.push_str(&format!(
                "{home}: gave up on message {id} in room {room} {when}, after {n} offers with neither a reply nor a pass; `hoop why --home {home} --message {id}` tells its story, answer it by hand\n",
                home = h.home,
                id = g.message_id,
                room = g.conversation_id,
                when = ago(Some(g.at), r.at),
                n = g.offers,
            ));
        }
    }
    out
}

/// Where `hoop status` looks: `$HOOP_ROOT`, else `~/.hoop`.
pub fn default_root() -> Result<PathBuf, HomeError> {
    hoop_core::home::root()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(pid: u32, ws: bool) -> Status {
        Status {
            pid,
            started_at: 100,
            ws_connected: ws,
            last_round_at: Some(200),
            last_round_result: Some(RoundResult::Ok),
            consecutive_failures: 1,
            login_error: None,
            gave_up: vec![],
            journal_dropped: 0,
        }
    }

    fn facts(lock: Option<Result<Probe, String>>, status: Option<Status>) -> Facts {
        Facts {
            home: "bolt".into(),
            lock,
            status: Some(Ok(status)),
            ..Facts::default()
        }
    }

    /// Alive comes from the lock alone; the status file speaks for the
    /// socket only when the live holder wrote it.
    #[test]
    fn alive_and_socket_follow_the_lock_and_its_holder() {
        let held = |pid| Some(Ok(Probe::Held { pid }));
        let free = Some(Ok(Probe::Free));
        #[allow(clippy::type_complexity)]
        let cases: [(
            &str,
            Option<Result<Probe, String>>,
            Option<Status>,
            Option<bool>,
            Option<u32>,
            Option<bool>,
        ); 8] = [
            (
                "held, its own status, up",
                held(Some(7)),
                Some(st(7, true)),
                Some(true),
                Some(7),
                Some(true),
            ),
            (
                "held, its own status, down",
                held(Some(7)),
                Some(st(7, false)),
                Some(true),
                Some(7),
                Some(false),
            ),
            (
                "held, a predecessor's status",
                held(Some(8)),
                Some(st(7, true)),
                Some(true),
                Some(8),
                None,
            ),
            (
                "held, no status yet",
                held(Some(7)),
                None,
                Some(true),
                Some(7),
                None,
            ),
            (
                "held, pid unknown",
                held(None),
                Some(st(7, true)),
                Some(true),
                None,
                None,
            ),
            (
                "free, a status saying up",
                free.clone(),
                Some(st(7, true)),
                Some(false),
                None,
                Some(false),
            ),
            ("free, nothing", free, None, Some(false), None, Some(false)),
            (
                "lock unreadable",
                Some(Err("denied".into())),
                Some(st(7, true)),
                None,
                None,
                None,
            ),
        ];
        for (what, lock, status, alive, pid, ws) in cases {
            let row = home_status(&facts(lock, status));
            assert_eq!(row.alive, alive, "{what}: alive");
            assert_eq!(row.pid, pid, "{what}: pid");
            assert_eq!(row.ws_connected, ws, "{what}: ws");
        }
    }

    #[test]
    fn the_last_round_is_reported_even_when_the_daemon_is_gone() {
        let row = home_status(&facts(Some(Ok(Probe::Free)), Some(st(7, true))));
        assert_eq!(row.last_round_at, Some(200));
        assert_eq!(row.last_round_result, Some(RoundResult::Ok));
        assert_eq!(row.consecutive_failures, Some(1));
        let none = home_status(&facts(Some(Ok(Probe::Free)), None));
        assert_eq!(none.last_round_at, None);
        assert_eq!(none.consecutive_failures, None, "unknown, not zero");
    }

    /// Armed needs the hooks installed and a rule armed; unknown stays null.
    #[test]
    fn guards_are_armed_only_with_hooks_and_rules() {
        let rules = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let cases = [
            (Some(Ok(true)), rules(&["rm"]), Some(true)),
            (Some(Ok(true)), rules(&[]), Some(false)),
            (Some(Ok(false)), rules(&["rm"]), Some(false)),
            (None, rules(&["rm"]), None),
            (None, rules(&[]), Some(false)),
            (Some(Err("bad json".to_string())), rules(&["rm"]), None),
        ];
        for (hooks, act, want) in cases {
            let f = Facts {
                hooks_installed: hooks.clone(),
                act_rules: act.clone(),
                ..Facts::default()
            };
            let row = home_status(&f);
            assert_eq!(row.guards.armed, want, "{hooks:?} {act:?}");
            assert_eq!(
                row.problems.iter().any(|p| p.starts_with("hooks")),
                matches!(hooks, Some(Err(_))),
                "{hooks:?}"
            );
        }
    }

    fn plan_row(kind: &'static str, home: Option<&str>, status: PlanStatus) -> Row {
        use crate::manifest::{Item, Want};
        let want = match kind {
            "service" => Want::Service {
                home: home.unwrap_or_default().into(),
                unit: format!("hoop-sentinel@{}.service", home.unwrap_or_default()),
            },
            _ => Want::File {
                path: format!("/u/{kind}-{}", home.unwrap_or("shared")).into(),
                bytes: vec![],
            },
        };
        let item = Item {
            kind,
            home: home.map(str::to_string),
            want,
        };
        Row {
            subject: item.subject(),
            item,
            status,
            detail: if status == PlanStatus::Ok {
                String::new()
            } else {
                "edited by hand".into()
            },
        }
    }

    /// Each plan state of a home's unit file and service, with the unit
    /// and drift the status reports.
    #[test]
    fn unit_and_drift_come_from_the_install_plan() {
        use PlanStatus::*;
        #[allow(clippy::type_complexity)]
        let cases: [(&str, Vec<Row>, Option<bool>, Option<bool>, usize); 6] = [
            (
                "shared template ok, service enabled",
                vec![
                    plan_row("unit", None, Ok),
                    plan_row("service", Some("a"), Ok),
                ],
                Some(true),
                Some(true),
                0,
            ),
            (
                "template missing, service not enabled",
                vec![
                    plan_row("unit", None, Add),
                    plan_row("service", Some("a"), Add),
                ],
                Some(false),
                Some(false),
                1,
            ),
            (
                "own plist edited by hand: installed, drifted",
                vec![
                    plan_row("unit", Some("a"), Change),
                    plan_row("service", Some("a"), Ok),
                ],
                Some(true),
                Some(true),
                1,
            ),
            (
                "no manager to ask",
                vec![
                    plan_row("unit", None, Ok),
                    plan_row("service", Some("a"), Unchecked),
                ],
                Some(true),
                None,
                0,
            ),
            (
                "another home's items are not this one's",
                vec![
                    plan_row("unit", Some("b"), Add),
                    plan_row("service", Some("b"), Add),
                ],
                None,
                None,
                0,
            ),
            (
                "this home's hooks drifted",
                vec![plan_row("hooks", Some("a"), Change)],
                None,
                None,
                1,
            ),
        ];
        for (what, rows, installed, enabled, drifted) in cases {
            let u = unit_from_plan(&rows, "a");
            assert_eq!(u.installed, installed, "{what}: installed");
            assert_eq!(u.enabled, enabled, "{what}: enabled");
            assert_eq!(u.running, None, "{what}");
            let d = drift_from_plan(&rows, Some("a"));
            assert_eq!(d.len(), drifted, "{what}: {d:?}");
            for line in &d {
                assert!(line.contains("edited by hand"), "{what}: {line}");
            }
        }
        // The machine's own items are reported apart.
        let rows = [
            plan_row("unit", None, Add),
            plan_row("service", Some("a"), Ok),
        ];
        assert_eq!(drift_from_plan(&rows, None).len(), 1);
        assert!(drift_from_plan(&rows, Some("a")).is_empty());
    }

    /// Running is what the manager says, asked through the runner.
    #[test]
    fn running_is_asked_of_the_manager() {
        use crate::service::{CallOutput, RecordingRunner};
        let r = RecordingRunner::new();
        r.answer(
            |c| c.args.iter().any(|a| a.contains("@b.")),
            CallOutput {
                code: Some(3),
                stdout: "inactive\n".into(),
                stderr: String::new(),
            },
        );
        r.answer(
            |c| c.program == "launchctl",
            CallOutput {
                code: Some(0),
                stdout: "gui/501/dev.hoop.sentinel.a = {\n\tstate = running\n}".into(),
                stderr: String::new(),
            },
        );
        assert_eq!(unit_running(Manager::Systemd, &r, 501, "a"), Some(true));
        assert_eq!(unit_running(Manager::Systemd, &r, 501, "b"), Some(false));
        assert_eq!(unit_running(Manager::Launchd, &r, 501, "a"), Some(true));
        assert_eq!(unit_running(Manager::None, &r, 501, "a"), None);
        assert_eq!(
            r.calls()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "systemctl --user is-active hoop-sentinel@a.service",
                "systemctl --user is-active hoop-sentinel@b.service",
                "launchctl print gui/501/dev.hoop.sentinel.a",
            ]
        );
    }

    #[test]
    fn the_newest_obituary_is_shown() {
        let mut o = Obituaries::default();
        o.0.insert("oauth".into(), 50);
        o.0.insert("login".into(), 90);
        let f = Facts {
            obituaries: Some(Ok(o)),
            ..Facts::default()
        };
        assert_eq!(
            home_status(&f).obituary,
            Some(Obituary {
                cause: "login".into(),
                at: 90
            })
        );
    }

    #[test]
    fn an_unreadable_status_file_is_a_problem_not_a_guess() {
        let f = Facts {
            lock: Some(Ok(Probe::Held { pid: Some(7) })),
            status: Some(Err("sentinel-status.json is not valid".into())),
            ..Facts::default()
        };
        let row = home_status(&f);
        assert_eq!(row.ws_connected, None);
        assert_eq!(row.last_round_result, None);
        assert_eq!(row.problems.len(), 1, "{:?}", row.problems);
        assert!(row.problems[0].starts_with("status file"));
    }

    #[test]
    fn the_table_has_a_line_per_home_and_names_problems() {
        let mut a = home_status(&facts(
            Some(Ok(Probe::Held { pid: Some(7) })),
            Some(st(7, true)),
        ));
        a.home = "alpha".into();
        a.problems.push("phase: broken".into());
        let mut b = home_status(&facts(Some(Ok(Probe::Free)), None));
        b.home = "beta".into();
        let r = Report {
            schema: SCHEMA.into(),
            host: None,
            root: "/r".into(),
            at: 260,
            homes: vec![a, b],
            machine_drift: Some(vec!["link /x: change (points at /y)".into()]),
        };
        let t = table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("HOME"), "{t}");
        assert!(lines[1].starts_with("alpha  yes    7"), "{t}");
        assert!(
            lines[1].contains("1m ago") && lines[1].contains(" ok "),
            "{t}"
        );
        assert!(lines[2].starts_with("beta   no"), "{t}");
        assert!(t.contains("alpha: cannot read phase: broken"), "{t}");
        assert!(t.contains("machine: drift: link /x"), "{t}");
        // The guards column says why a home is not armed.
        let word = |hooks: Option<bool>, rules: &[&str]| {
            let f = Facts {
                home: "g".into(),
                hooks_installed: hooks.map(Ok),
                act_rules: Some(rules.iter().map(|s| s.to_string()).collect()),
                ..Facts::default()
            };
            let r = Report {
                homes: vec![home_status(&f)],
                ..r.clone()
            };
            table(&r).lines().nth(1).unwrap().to_string()
        };
        assert!(word(Some(true), &["rm"]).contains(" armed "));
        assert!(word(Some(false), &["rm"]).contains(" NO HOOKS "));
        assert!(word(Some(true), &[]).contains(" DISARMED "));
        assert!(word(None, &["rm"]).contains(" ? "));
    }

    /// Each live worker gets its own run's signal (run id = card id), and
    /// one with no registration says so with `null`.
    #[test]
    fn worker_rows_pair_each_worker_with_its_own_run() {
        use hoop_sentinel::worker::{AgentKind, LiveWorker};
        let live = |card: i64| LiveWorker {
            card_id: card,
            parent_id: 1,
            conversation_id: 7,
            title: format!("w{card}"),
            agent: AgentKind::Claude,
            pid: 100 + card as u32,
            started_at: 50,
        };
        let run = |id: &str, latest: serde_json::Value| -> hoop_guards::lane::RunView {
            serde_json::from_value(serde_json::json!({
                "missionId": "bolt", "runId": id, "registeredAt": 0,
                "latest": latest, "recent": [], "received": 1
            }))
            .unwrap()
        };
        let runs = [
            run(
                "12",
                serde_json::json!({"signal": "tool-failed", "detail": "Bash", "at": 90}),
            ),
            run("13", serde_json::Value::Null),
            run("99", serde_json::json!({"signal": "running", "at": 10})),
        ];
        let rows = worker_rows(&[live(12), live(13), live(14)], &runs, 100);
        let got: Vec<(i64, u32, Option<&str>)> = rows
            .iter()
            .map(|r| (r.card_id, r.pid, r.last_signal.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    12,
                    112,
                    Some("12: tool-failed (Bash), 10 s ago [hook-derived, non-authoritative]")
                ),
                (
                    13,
                    113,
                    Some("13: no signal yet [hook-derived, non-authoritative]")
                ),
                (14, 114, None),
            ]
        );
        assert_eq!(rows[0].agent, "claude");
    }
}
