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
use hoop_sentinel::state::{Obituaries, RoundResult, Status};
use serde::{Deserialize, Serialize};

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
    pub act_rules: Option<Vec<String>>,
    pub phase: Option<Result<Option<Phase>, String>>,
    pub unit: Unit,
    pub drift: Option<Vec<String>>,
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
    }
}

/// The home's unit and its drift from the install manifest. Not known yet
/// (every field `null`): the manifest and its check live in
/// `provision::install`; this is the one place that wires them in.
pub fn unit_and_drift(_home: &Home) -> (Unit, Option<Vec<String>>) {
    (Unit::default(), None)
}

/// The homes under `root`: directories holding a `config.json`, by name.
pub fn homes(root: &Path) -> Result<Vec<Home>, HomeError> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(source) => {
            return Err(HomeError::Io {
                path: root.to_path_buf(),
                source,
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
    let hooks_installed = match (&cfg, &config_dir) {
        (Err(e), _) => Some(Err(e.to_string())),
        (Ok(_), None) => None,
        (Ok(_), Some(d)) => Some(hooks_installed(&d.join("settings.json"), &home.name)),
    };
    let act_rules = Some(
        hoop_guards::act::armed_rules(&home.root)
            .rules()
            .map(|r| r.name().to_string())
            .collect(),
    );
    let (unit, drift) = unit_and_drift(home);
    Facts {
        home: home.name.clone(),
        lock,
        status,
        obituaries,
        context_tokens,
        hooks_installed,
        act_rules,
        phase: Some(read_phase(&home.phase_path())),
        unit,
        drift,
    }
}

/// Are all the home's hooks in this Claude Code settings file? Asked of the
/// guards' own installer (a dry merge: nothing it would add).
fn hooks_installed(settings: &Path, home: &str) -> Result<bool, String> {
    use hoop_guards::install::{Change, Target, merge, specs};
    let mut value: serde_json::Value = match std::fs::read_to_string(settings) {
        Ok(text) => {
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", settings.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("{}: {e}", settings.display())),
    };
    let changes = merge(
        Target::Claude,
        &mut value,
        "hoop",
        &specs(Target::Claude, Some(home)),
    )
    .map_err(|e| format!("{}: {e}", settings.display()))?;
    Ok(!changes.iter().any(|c| matches!(c, Change::Added(_))))
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
            match h.guards.armed {
                Some(true) => "armed".into(),
                Some(false) => "DISARMED".into(),
                None => "?".into(),
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
    }
}
