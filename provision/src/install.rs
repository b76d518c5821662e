//! The install shell around [`crate::manifest`]: gather the machine's facts
//! and homes, observe each desired item (files on disk; services through the
//! one [`Runner`]), and plan, apply or check.
//!
//! `plan` is a list of [`Row`]s (add / change / remove / ok per item);
//! `apply` makes every row ok, each file atomically (`core::fsutil`), and is
//! idempotent (a second apply finds every row ok and does nothing);
//! [`check`] turns every drifted row into a [`Finding`] that names the item
//! and how to fix it. `hoop doctor` and `hoop status` call [`check`].

use std::path::{Path, PathBuf};

use hoop_core::fsutil::{self, WriteOptions};
use hoop_core::home::Home;
use hoop_guards::install as hooks;

use crate::manifest::{
    self, BrokenHome, HomeEntry, INSTALL_FILE, InstallSettings, Item, Machine, ManifestError,
    Options, Os, Want,
};
use crate::service::{Call, Manager, Runner};
use crate::units;

/// The programs the daemon's agent needs on the unit's `PATH`.
pub const TOOLS: [&str; 2] = ["claude", "node"];

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("no home directory: set HOME")]
    NoHome,
    #[error("reading {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("{0}")]
    Apply(String),
}

/// The facts `gather` reads from the process environment (so tests pass
/// their own).
#[derive(Debug, Clone)]
pub struct Env {
    pub user_home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub path: Option<std::ffi::OsString>,
    pub hoop_binary: PathBuf,
    /// Build the unit's `PATH` from `path` even when the install record
    /// has one (`hoop install --apply --path-from-shell`).
    pub path_from_shell: bool,
}

impl Env {
    /// From this process: `HOME`, `XDG_CONFIG_HOME`, `PATH`; `hoop_binary`
    /// is what the stable link should point at.
    pub fn from_process(hoop_binary: PathBuf) -> Env {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Env {
            user_home: var("HOME").map(PathBuf::from),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            path: var("PATH"),
            hoop_binary,
            path_from_shell: false,
        }
    }
}

/// Find `program` on `path` (an executable file).
pub fn which(path: Option<&std::ffi::OsStr>, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

/// An executable regular file.
pub fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// The machine's facts and its homes (every directory under the root with a
/// `config.json`). A home whose files do not parse is kept in
/// `Machine::broken`, not an error: the other homes go on.
pub fn gather(root: &Path, env: &Env) -> Result<(Machine, Vec<HomeEntry>), InstallError> {
    let user_home = env.user_home.clone().ok_or(InstallError::NoHome)?;
    let uid = nix::unistd::getuid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    let (homes, broken) = read_homes(root, &user_home)?;
    let mut tool_dirs: Vec<PathBuf> = Vec::new();
    let mut push = |d: PathBuf| {
        if !tool_dirs.contains(&d) {
            tool_dirs.push(d)
        }
    };
    for h in &homes {
        // read_homes parsed it already.
        if let Ok(cfg) = hoop_sentinel::config::SentinelConfig::load(&h.dir)
            && cfg.claude_bin.is_absolute()
            && let Some(d) = cfg.claude_bin.parent()
        {
            push(d.to_path_buf());
        }
    }
    // The tools' directories as recorded at install time, so that the unit
    // never depends on the shell a later command runs from.
    let record = crate::record::load(root).ok().flatten();
    let owned_units = record.as_ref().map(|r| r.units.clone());
    let recorded = record.filter(|r| !env.path_from_shell && !r.tool_dirs.is_empty());
    match recorded {
        Some(r) => r.tool_dirs.into_iter().for_each(&mut push),
        None => {
            for t in TOOLS {
                if let Some(d) =
                    which(env.path.as_deref(), t).and_then(|p| p.parent().map(Path::to_path_buf))
                {
                    push(d);
                }
            }
        }
    }
    let mut m = Machine {
        os: Os::current(),
        user,
        uid: uid.as_raw(),
        user_home,
        xdg_config_home: env.xdg_config_home.clone(),
        root: root.to_path_buf(),
        hoop_binary: env.hoop_binary.clone(),
        tool_dirs,
        installed_units: Vec::new(),
        broken,
        dropins: Vec::new(),
        foreign_root: None,
        owned_units,
    };
    m.installed_units = installed_units(&m);
    m.dropins = dropins(&m);
    m.foreign_root = foreign_root(&m);
    Ok((m, homes))
}

/// The directories of `claude` and `node` on `path` (what the record keeps).
pub fn tool_dirs_on(path: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    for t in TOOLS {
        if let Some(d) = which(path, t).and_then(|p| p.parent().map(Path::to_path_buf))
            && !v.contains(&d)
        {
            v.push(d);
        }
    }
    v
}

/// The homes under `root`, by name, and those that cannot be read.
fn read_homes(
    root: &Path,
    user_home: &Path,
) -> Result<(Vec<HomeEntry>, Vec<BrokenHome>), InstallError> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(cause) => {
            return Err(InstallError::Read {
                path: root.to_path_buf(),
                cause,
            });
        }
    };
    let mut homes = Vec::new();
    let mut broken = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(home) = Home::new(root, &name) else {
            continue;
        };
        if !home.config_path().is_file() {
            continue;
        }
        let parsed = read_home(&home, user_home);
        match parsed {
            Ok(h) => homes.push(h),
            Err(b) => broken.push(b),
        }
    }
    homes.sort_by(|a, b| a.name.cmp(&b.name));
    broken.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((homes, broken))
}

/// A home with its files read: its entry, or why it is broken
/// (`config.json`, `sentinel.json` or `install.json` unreadable).
pub fn read_home(home: &Home, user_home: &Path) -> Result<HomeEntry, BrokenHome> {
    let name = home.name.clone();
    home.load_config()
        .map_err(|e| BrokenHome {
            name: name.clone(),
            file: home.config_path(),
            message: config_message(&e),
        })
        .and_then(|_| {
            home_entry(home, user_home).map_err(|e| match e {
                InstallError::Config { path, message } => BrokenHome {
                    name: name.clone(),
                    file: path,
                    message,
                },
                other => BrokenHome {
                    name: name.clone(),
                    file: home.dir(),
                    message: other.to_string(),
                },
            })
        })
}

/// A home config error without its path (the finding names the file).
fn config_message(e: &hoop_core::home::HomeError) -> String {
    match e {
        hoop_core::home::HomeError::Parse { cause, .. } => cause.to_string(),
        other => other.to_string(),
    }
}

/// One home's entry: its install choices and the Claude config dir its
/// agent runs with (`sentinel.json`'s `env`, over the daemon's own `HOME`).
pub fn home_entry(home: &Home, user_home: &Path) -> Result<HomeEntry, InstallError> {
    let path = home.dir().join(INSTALL_FILE);
    let settings = match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| InstallError::Config {
            path: path.clone(),
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => InstallSettings::default(),
        Err(cause) => return Err(InstallError::Read { path, cause }),
    };
    let cfg = hoop_sentinel::config::SentinelConfig::load(&home.dir()).map_err(|e| {
        InstallError::Config {
            path: home.dir().join("sentinel.json"),
            message: e.to_string(),
        }
    })?;
    let env: Vec<(String, String)> = cfg.env.into_iter().collect();
    let claude_config_dir = hoop_sentinel::context::config_dir(&env, |k| {
        (k == "HOME").then(|| user_home.as_os_str().to_os_string())
    })
    .unwrap_or_else(|| user_home.join(".claude"));
    Ok(HomeEntry {
        name: home.name.clone(),
        dir: home.dir(),
        claude_config_dir,
        settings,
    })
}

/// Homes with a unit on this machine: enabled systemd instances
/// (`default.target.wants/hoop-sentinel@<home>.service`) or launchd agents.
fn installed_units(m: &Machine) -> Vec<String> {
    let (dir, prefix, suffix) = match m.os {
        Os::Linux => (
            manifest::systemd_unit_dir(m).join("default.target.wants"),
            "hoop-sentinel@",
            ".service",
        ),
        Os::Macos => (
            manifest::launch_agents_dir(m),
            units::LAUNCHD_LABEL_PREFIX,
            ".plist",
        ),
    };
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let home = n.strip_prefix(prefix)?.strip_suffix(suffix)?;
            (!home.is_empty()).then(|| home.to_string())
        })
        .collect();
    v.sort();
    v
}

/// A unit file of this user that serves another hoop root that still
/// exists (the shared systemd template, or a home's launchd agent).
fn foreign_root(m: &Machine) -> Option<(PathBuf, PathBuf)> {
    let files: Vec<PathBuf> = match m.os {
        Os::Linux => vec![manifest::systemd_unit_dir(m).join(units::SYSTEMD_UNIT_FILE)],
        Os::Macos => m
            .installed_units
            .iter()
            .map(|h| manifest::plist_path(m, h))
            .collect(),
    };
    files.into_iter().find_map(|unit| {
        let bytes = std::fs::read(&unit).ok()?;
        let other = PathBuf::from(units::unit_env(&bytes, hoop_core::home::ROOT_ENV)?);
        let same = other == m.root
            || std::fs::canonicalize(&other).ok() == std::fs::canonicalize(&m.root).ok();
        (!same && other.is_dir()).then_some((unit, other))
    })
}

/// The template's drop-ins (`*.conf` in `hoop-sentinel@.service.d/`), by
/// name; none on macOS.
fn dropins(m: &Machine) -> Vec<PathBuf> {
    if m.os != Os::Linux {
        return Vec::new();
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(manifest::dropin_dir(m))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    v.sort();
    v
}

/// What an item needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Add,
    Change,
    Remove,
    /// A service under `--manager none`: nothing to ask.
    Unchecked,
    /// A home that cannot be read: fixed by hand, never by `--apply`.
    Broken,
}

impl Status {
    pub fn is_drift(self) -> bool {
        matches!(
            self,
            Status::Add | Status::Change | Status::Remove | Status::Broken
        )
    }
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Add => "add",
            Status::Change => "change",
            Status::Remove => "remove",
            Status::Unchecked => "skip",
            Status::Broken => "broken",
        }
    }
}

/// One item of the plan and what it needs.
#[derive(Debug, Clone)]
pub struct Row {
    pub item: Item,
    pub subject: String,
    pub status: Status,
    /// Why it drifted (empty when ok).
    pub detail: String,
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:7} {:8} {}",
            self.status.word(),
            self.item.kind,
            self.subject
        )?;
        if !self.detail.is_empty() {
            write!(f, "  ({})", self.detail)?;
        }
        Ok(())
    }
}

/// How long `--apply` waits, and how often it retries, around a launchd
/// reload.
#[derive(Debug, Clone)]
pub struct Waits {
    /// A running turn of a home whose agent is reloaded (a bootout stops
    /// the daemon mid-turn): waited for as `hoop restart` waits.
    pub turn: std::time::Duration,
    pub poll: std::time::Duration,
    /// launchd refuses a bootstrap for a few seconds after a bootout ("5:
    /// Input/output error"): the bootstrap is tried again after each of
    /// these.
    pub bootstrap_retries: Vec<std::time::Duration>,
}

/// The bootstrap's backoff: 1 + 2 + 4 + 8 = 15 s in all, longer than the
/// few seconds launchd takes to let go of a booted-out label.
pub const BOOTSTRAP_RETRIES_SECS: [u64; 4] = [1, 2, 4, 8];

impl Default for Waits {
    fn default() -> Self {
        Waits {
            turn: crate::restart::TURN_WAIT,
            poll: crate::restart::POLL,
            bootstrap_retries: BOOTSTRAP_RETRIES_SECS
                .iter()
                .map(|s| std::time::Duration::from_secs(*s))
                .collect(),
        }
    }
}

/// Everything plan, apply and check need.
pub struct Ctx<'a> {
    pub machine: Machine,
    pub homes: Vec<HomeEntry>,
    pub manager: Manager,
    pub runner: &'a dyn Runner,
    /// Set when the manager is `none` because detection found nothing
    /// usable (not chosen on purpose): nothing will restart a sentinel.
    pub manager_problem: Option<crate::service::Problem>,
    pub waits: Waits,
}

impl<'a> Ctx<'a> {
    /// Gather this machine's facts and homes under `root` (what `hoop
    /// status` needs before calling [`check`]).
    pub fn gather(
        root: &Path,
        env: &Env,
        manager: Manager,
        runner: &'a dyn Runner,
    ) -> Result<Ctx<'a>, InstallError> {
        let (machine, homes) = gather(root, env)?;
        Ok(Ctx {
            machine,
            homes,
            manager,
            runner,
            manager_problem: None,
            waits: Waits::default(),
        })
    }

    fn domain(&self) -> String {
        format!("gui/{}", self.machine.uid)
    }
}

/// The plan: every desired item and what it needs.
pub fn plan(ctx: &Ctx) -> Result<Vec<Row>, InstallError> {
    let items = manifest::manifest(
        &ctx.machine,
        &ctx.homes,
        Options {
            manager: ctx.manager,
        },
    )?;
    Ok(items
        .into_iter()
        .map(|item| {
            let (status, detail) = observe(ctx, &item);
            Row {
                subject: item.subject(),
                item,
                status,
                detail,
            }
        })
        .collect())
}

fn observe(ctx: &Ctx, item: &Item) -> (Status, String) {
    match &item.want {
        Want::Link { path, target } => match std::fs::read_link(path) {
            Ok(t) if &t == target => (Status::Ok, String::new()),
            Ok(t) => (Status::Change, format!("points at {}", t.display())),
            Err(_) if path.symlink_metadata().is_ok() => {
                (Status::Change, "is not a symlink".into())
            }
            Err(_) => (Status::Add, "missing".into()),
        },
        Want::Dir { path } => {
            if path.is_dir() {
                (Status::Ok, String::new())
            } else if path.exists() {
                (Status::Change, "is not a directory".into())
            } else {
                (Status::Add, "missing".into())
            }
        }
        Want::File { path, bytes } => match std::fs::read(path) {
            Ok(b) if &b == bytes => (Status::Ok, String::new()),
            Ok(_) => (
                Status::Change,
                "differs from what hoop renders (edited by hand?)".into(),
            ),
            Err(_) => (Status::Add, "missing".into()),
        },
        Want::Hooks {
            target,
            path,
            program,
            specs,
        } => match hooks::merge_plan(*target, path, program, specs) {
            Ok((_, None)) => (Status::Ok, String::new()),
            Ok((changes, Some(_))) => {
                let status = if path.exists() {
                    Status::Change
                } else {
                    Status::Add
                };
                let what: Vec<String> = changes
                    .iter()
                    .filter(|c| c.is_drift())
                    .map(|c| {
                        c.to_string()
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect();
                (status, what.join("; "))
            }
            Err(e) => (Status::Change, e.to_string()),
        },
        Want::Service { unit, .. } => service_state(ctx, unit),
        Want::Retired { .. } => (Status::Remove, "its home is gone".into()),
        Want::Broken { home } => (Status::Broken, home.problem()),
        Want::Kept { .. } => (
            Status::Ok,
            "a local change, kept (`systemctl --user edit` writes these)".into(),
        ),
    }
}

fn service_state(ctx: &Ctx, name: &str) -> (Status, String) {
    let call = match ctx.manager {
        Manager::None => return (Status::Unchecked, "--manager none".into()),
        Manager::Systemd => Call::new("systemctl", &["--user", "is-enabled", name]),
        Manager::Launchd => Call::new("launchctl", &["print", &format!("{}/{name}", ctx.domain())]),
    };
    match ctx.runner.run(&call) {
        Ok(out) if out.success() => (Status::Ok, String::new()),
        Ok(out) => {
            let said = out.stdout.trim();
            let said = if said.is_empty() {
                out.stderr.trim()
            } else {
                said
            };
            let first = said.lines().next().unwrap_or("");
            match ctx.manager {
                Manager::Systemd => (Status::Add, format!("not enabled: {first}")),
                _ => (Status::Add, format!("not loaded: {first}")),
            }
        }
        Err(e) => (Status::Add, e.to_string()),
    }
}

/// The service-manager calls that make a service row ok.
fn service_calls(ctx: &Ctx, row: &Row, unit_changed: bool) -> Vec<Call> {
    let m = &ctx.machine;
    let manager = match ctx.manager {
        Manager::None => match m.os {
            Os::Linux => Manager::Systemd,
            Os::Macos => Manager::Launchd,
        },
        other => other,
    };
    let name = &row.subject;
    let domain = ctx.domain();
    let target = format!("{domain}/{name}");
    match (&row.item.want, manager) {
        (Want::Service { .. }, Manager::Systemd) if row.status != Status::Ok => {
            vec![Call::new("systemctl", &["--user", "enable", "--now", name])]
        }
        (Want::Service { home, .. }, Manager::Launchd) => {
            let plist = manifest::plist_path(m, home).to_string_lossy().into_owned();
            let mut v = Vec::new();
            if row.status == Status::Ok && unit_changed {
                // launchd reads the plist only when it is bootstrapped.
                v.push(Call::new("launchctl", &["bootout", &target]));
            }
            if row.status != Status::Ok || unit_changed {
                v.push(Call::new("launchctl", &["bootstrap", &domain, &plist]));
            }
            v
        }
        (Want::Retired { .. }, Manager::Systemd) => {
            vec![Call::new(
                "systemctl",
                &["--user", "disable", "--now", name],
            )]
        }
        (Want::Retired { .. }, Manager::Launchd) => {
            vec![Call::new("launchctl", &["bootout", &target])]
        }
        _ => Vec::new(),
    }
}

/// What `apply` did.
#[derive(Debug, Default)]
pub struct Applied {
    /// One line per row changed.
    pub done: Vec<String>,
    /// The service-manager calls made (or, under `--manager none`, to make).
    pub calls: Vec<Call>,
    /// Things an operator should know (a unit changed under a running daemon).
    pub notes: Vec<String>,
}

/// The service-manager calls `--apply` makes for `rows`, in order, and the
/// notes to print with them. Pure: `--plan` prints exactly these.
pub fn service_plan(ctx: &Ctx, rows: &[Row]) -> (Vec<Call>, Vec<String>) {
    let changed_units: Vec<Option<String>> = rows
        .iter()
        .filter(|r| r.item.kind == "unit" && r.status.is_drift())
        .map(|r| r.item.home.clone())
        .collect();
    let systemd = match ctx.manager {
        Manager::Systemd => true,
        Manager::Launchd => false,
        Manager::None => ctx.machine.os == Os::Linux,
    };
    let services: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.item.want, Want::Service { .. } | Want::Retired { .. }))
        .collect();
    let mut calls = Vec::new();
    let mut notes = Vec::new();
    if systemd && (!changed_units.is_empty() || services.iter().any(|r| r.status.is_drift())) {
        calls.push(Call::new("systemctl", &["--user", "daemon-reload"]));
    }
    for row in &services {
        let unit_changed = changed_units
            .iter()
            .any(|h| h.is_none() || h.as_deref() == row.item.home.as_deref());
        if systemd && row.status == Status::Ok && unit_changed {
            notes.push(format!(
                "{} runs the old unit until it restarts: hoop restart {}",
                row.subject,
                row.item.home.as_deref().unwrap_or("")
            ));
        }
        calls.extend(service_calls(ctx, row, unit_changed));
    }
    (calls, notes)
}

/// Make every row ok. Files are written atomically; a second run changes
/// nothing. Stops at the first failure, naming it.
pub fn apply(ctx: &Ctx, rows: &[Row]) -> Result<Applied, InstallError> {
    let mut out = Applied::default();
    let fail = |row: &Row, e: &dyn std::fmt::Display| {
        InstallError::Apply(format!("{} {}: {e}", row.item.kind, row.subject))
    };
    let (calls, notes) = service_plan(ctx, rows);
    out.notes = notes;
    // A launchd reload stops the daemon: wait for its turn before anything
    // is written, so a refusal leaves the old plist (and the next --apply
    // still sees the change to load).
    for call in &calls {
        if let Some(home) = reloaded_home(ctx, call) {
            wait_for_turn(ctx, home)?;
        }
    }
    for row in rows.iter().filter(|r| r.status.is_drift()) {
        match &row.item.want {
            Want::Link { path, target } => {
                fsutil::symlink_atomic(target, path).map_err(|e| fail(row, &e))?
            }
            Want::Dir { path } => std::fs::create_dir_all(path).map_err(|e| fail(row, &e))?,
            Want::File { path, bytes } => {
                fsutil::write_atomic(path, bytes, WriteOptions::default())
                    .map_err(|e| fail(row, &e))?;
            }
            Want::Hooks {
                target,
                path,
                program,
                specs,
            } => {
                hooks::merge_file(*target, path, program, specs).map_err(|e| fail(row, &e))?;
            }
            Want::Service { .. } | Want::Retired { .. } => {}
            Want::Broken { .. } | Want::Kept { .. } => continue,
        }
        out.done.push(row.to_string());
    }
    let services: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.item.want, Want::Service { .. } | Want::Retired { .. }))
        .collect();
    for call in calls {
        let res = if ctx.manager == Manager::Launchd
            && call.program == "launchctl"
            && call.args.first().is_some_and(|a| a == "bootstrap")
        {
            bootstrap(ctx, &call, &mut out.notes)
        } else {
            ctx.runner.run(&call)
        };
        out.calls.push(call.clone());
        // Booting out an agent launchd no longer has loaded is not a failure:
        // the goal (not loaded) holds.
        let may_fail =
            call.program == "launchctl" && call.args.first().is_some_and(|a| a == "bootout");
        match res {
            Ok(o) if o.success() => {}
            Ok(o) if may_fail => out.notes.push(format!(
                "`{call}`: {} (not loaded; nothing to stop)",
                o.stderr.trim()
            )),
            Ok(o) => {
                let said = o.stderr.trim();
                let fixes = if said.contains("Failed to connect to bus") {
                    format!(
                        "\n  systemd's user manager cannot be reached from here; fix: {}",
                        crate::service::bus_fixes(
                            &ctx.machine.user,
                            std::env::var("SUDO_USER").ok().as_deref()
                        )
                    )
                } else {
                    String::new()
                };
                return Err(InstallError::Apply(format!(
                    "`{call}` exited {}: {said}{fixes}",
                    o.code.map_or("by a signal".into(), |c| c.to_string()),
                )));
            }
            Err(e) => return Err(InstallError::Apply(e.to_string())),
        }
    }
    // A retired launchd agent's file goes after it is booted out.
    for row in &services {
        if let Want::Retired {
            file: Some(path), ..
        } = &row.item.want
            && let Err(e) = std::fs::remove_file(path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(fail(row, &e));
        }
    }
    Ok(out)
}

/// The home whose agent `call` boots out to reload it (a live home, not a
/// retired one).
fn reloaded_home<'c>(ctx: &'c Ctx, call: &Call) -> Option<&'c HomeEntry> {
    if call.program != "launchctl" || call.args.first().map(String::as_str) != Some("bootout") {
        return None;
    }
    let label = call.args.get(1)?.rsplit('/').next()?;
    ctx.homes
        .iter()
        .find(|h| units::launchd_label(&h.name) == label)
}

/// Wait (bounded) until no turn of `home` runs: booting its agent out
/// would stop the daemon mid-turn.
fn wait_for_turn(ctx: &Ctx, home: &HomeEntry) -> Result<(), InstallError> {
    let lock = match Home::new(&ctx.machine.root, &home.name) {
        Ok(h) => h.turn_lock_path(),
        Err(e) => return Err(InstallError::Apply(e.to_string())),
    };
    let deadline = std::time::Instant::now() + ctx.waits.turn;
    loop {
        match hoop_sentinel::lock::probe(&lock) {
            Ok(hoop_sentinel::lock::Probe::Free) => return Ok(()),
            Ok(_) if std::time::Instant::now() < deadline => std::thread::sleep(ctx.waits.poll),
            Ok(_) => {
                return Err(InstallError::Apply(format!(
                    "a turn of {} is still running after {} s, so its agent was not reloaded \
                     (a bootout would stop it mid-turn); run `hoop install --apply` again when \
                     it ends",
                    home.name,
                    ctx.waits.turn.as_secs()
                )));
            }
            Err(e) => return Err(InstallError::Apply(format!("{}: {e}", lock.display()))),
        }
    }
}

/// `launchctl bootstrap`, retried with backoff while launchd still holds a
/// label it just booted out ("5: Input/output error"), then verified with
/// `launchctl print` (a bootstrap that answered yes but loaded nothing is
/// a failure). Retries and the check are notes, not planned calls.
fn bootstrap(
    ctx: &Ctx,
    call: &Call,
    notes: &mut Vec<String>,
) -> Result<crate::service::CallOutput, crate::service::RunError> {
    let mut res = ctx.runner.run(call)?;
    for delay in &ctx.waits.bootstrap_retries {
        if res.success() || !bootstrap_busy(&res) {
            break;
        }
        notes.push(format!(
            "`{call}`: {} (launchd still holds the label); again in {} s",
            res.stderr.trim(),
            delay.as_secs_f64()
        ));
        std::thread::sleep(*delay);
        res = ctx.runner.run(call)?;
    }
    if !res.success() {
        return Ok(res);
    }
    let Some(label) = call
        .args
        .get(2)
        .and_then(|p| Path::new(p).file_stem())
        .map(|s| s.to_string_lossy().into_owned())
    else {
        return Ok(res);
    };
    let print = Call::new(
        "launchctl",
        &["print", &format!("{}/{label}", ctx.domain())],
    );
    let seen = ctx.runner.run(&print)?;
    if seen.success() {
        return Ok(res);
    }
    Ok(crate::service::CallOutput {
        code: Some(1),
        stdout: String::new(),
        stderr: format!(
            "it answered yes, but `{print}` does not find the job ({}); see `log show --last \
             5m --predicate 'process == \"launchd\"'`",
            seen.stderr.trim()
        ),
    })
}

/// launchd's answer while a booted-out label is still being torn down.
fn bootstrap_busy(o: &crate::service::CallOutput) -> bool {
    o.code == Some(5) || o.stderr.contains("Input/output error")
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// One thing `--check` or `hoop doctor` found, with how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub level: Level,
    /// The home it concerns; `None` for the machine.
    pub home: Option<String>,
    /// What it is about (`unit /…/hoop-sentinel@.service`).
    pub item: String,
    pub problem: String,
    pub fix: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.level {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        };
        match &self.home {
            Some(h) => write!(f, "{level:7} [{h}] ")?,
            None => write!(f, "{level:7} ")?,
        }
        write!(
            f,
            "{}: {}\n        fix: {}",
            self.item, self.problem, self.fix
        )
    }
}

/// The finding for one drifted row (`None` when it is ok).
pub fn finding(row: &Row) -> Option<Finding> {
    if !row.status.is_drift() {
        return None;
    }
    if let Want::Broken { home } = &row.item.want {
        return Some(Finding {
            level: Level::Error,
            home: Some(home.name.clone()),
            item: format!("home {}", home.name),
            problem: format!("broken: {}", home.problem()),
            fix: home.fix(),
        });
    }
    let fix = match (&row.item.want, row.status) {
        (Want::Service { .. }, _) => format!(
            "`hoop install --apply` ({})",
            if row.subject.ends_with(".service") {
                format!("systemctl --user enable --now {}", row.subject)
            } else {
                format!("launchctl bootstrap gui/$UID <plist> for {}", row.subject)
            }
        ),
        (Want::Retired { .. }, _) => format!(
            "`hoop install --apply` stops and removes {} (its home is gone)",
            row.subject
        ),
        (Want::File { path, .. }, Status::Change) if row.item.kind == "unit" => {
            if path.extension().is_some_and(|x| x == "service") {
                format!(
                    "`hoop install --apply` rewrites it; keep local changes in a drop-in, which \
                     install keeps: {}/local.conf (`systemctl --user edit {}`)",
                    path.with_extension("service.d").display(),
                    units::SYSTEMD_UNIT_FILE
                )
            } else {
                "`hoop install --apply` rewrites it; launchd has no drop-ins, so keep local \
                 changes in the home's files (sentinel.json, prompts/) instead"
                    .into()
            }
        }
        _ => "`hoop install --apply`".into(),
    };
    Some(Finding {
        level: Level::Error,
        home: row.item.home.clone(),
        item: format!("{} {}", row.item.kind, row.subject),
        problem: format!("{} ({})", row.status.word(), row.detail),
        fix,
    })
}

/// Everything `--check` checks, as findings (empty = no drift). A manifest
/// that cannot be built (a protected folder, two homes fighting over one
/// settings file) is itself a finding.
pub fn check(ctx: &Ctx) -> Vec<Finding> {
    match plan(ctx) {
        Ok(rows) => rows.iter().filter_map(finding).collect(),
        Err(e) => vec![Finding {
            level: Level::Error,
            home: None,
            item: "manifest".into(),
            problem: e.to_string(),
            fix: "fix what the problem names, then `hoop install --plan`".into(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{CallOutput, RecordingRunner};

    struct World {
        _dir: tempfile::TempDir,
        user_home: PathBuf,
        root: PathBuf,
        bin: PathBuf,
    }

    fn world(homes: &[&str]) -> World {
        let dir = tempfile::tempdir().unwrap();
        let user_home = dir.path().join("u");
        let root = user_home.join(".hoop");
        for h in homes {
            let d = root.join(h);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("config.json"),
                r#"{"base_url":"http://127.0.0.1:1","email":"a@b"}"#,
            )
            .unwrap();
        }
        let bin = dir.path().join("dist/hoop");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        World {
            user_home,
            root,
            bin,
            _dir: dir,
        }
    }

    impl World {
        fn env(&self) -> Env {
            Env {
                user_home: Some(self.user_home.clone()),
                xdg_config_home: None,
                path: None,
                hoop_binary: self.bin.clone(),
                path_from_shell: false,
            }
        }
    }

    fn ctx<'a>(w: &World, runner: &'a dyn Runner, manager: Manager) -> Ctx<'a> {
        let env = w.env();
        let (mut machine, homes) = gather(&w.root, &env).unwrap();
        machine.os = Os::Linux;
        Ctx {
            machine,
            homes,
            manager,
            runner,
            manager_problem: None,
            waits: Waits::default(),
        }
    }

    fn not_enabled(r: &RecordingRunner) {
        r.answer(
            |c| c.args.get(1).map(String::as_str) == Some("is-enabled"),
            CallOutput {
                code: Some(1),
                stdout: "disabled\n".into(),
                stderr: String::new(),
            },
        );
    }

    #[test]
    fn apply_then_plan_is_all_ok_and_a_second_apply_does_nothing() {
        let w = world(&["bolt", "nova"]);
        let r = RecordingRunner::new();
        not_enabled(&r);
        let c = ctx(&w, &r, Manager::Systemd);
        let rows = plan(&c).unwrap();
        let lines: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
        assert!(rows.iter().all(|r| r.status == Status::Add), "{lines:#?}");
        let applied = apply(&c, &rows).unwrap();
        let calls: Vec<String> = applied.calls.iter().map(ToString::to_string).collect();
        assert_eq!(
            calls,
            [
                "systemctl --user daemon-reload",
                "systemctl --user enable --now hoop-sentinel@bolt.service",
                "systemctl --user enable --now hoop-sentinel@nova.service",
            ]
        );
        // Now the services answer enabled.
        let r2 = RecordingRunner::new();
        let c2 = ctx(&w, &r2, Manager::Systemd);
        let rows = plan(&c2).unwrap();
        for row in &rows {
            assert_eq!(row.status, Status::Ok, "{row}");
        }
        let again = apply(&c2, &rows).unwrap();
        assert!(again.done.is_empty() && again.calls.is_empty(), "{again:?}");
        assert_eq!(std::fs::read_link(w.root.join("bin/hoop")).unwrap(), w.bin);
    }

    #[test]
    fn check_names_each_drifted_item_and_apply_repairs_them() {
        let w = world(&["bolt"]);
        let r = RecordingRunner::new();
        let c = ctx(&w, &r, Manager::Systemd);
        apply(&c, &plan(&c).unwrap()).unwrap();
        assert_eq!(check(&c), vec![]);
        let unit = w
            .user_home
            .join(".config/systemd/user/hoop-sentinel@.service");
        let text = std::fs::read_to_string(&unit).unwrap();
        std::fs::write(&unit, text.replace("RestartSec=10", "RestartSec=1")).unwrap();
        let settings = w.user_home.join(".claude/settings.json");
        let text = std::fs::read_to_string(&settings).unwrap();
        std::fs::write(&settings, text.replace("guard memory", "guard nothing")).unwrap();
        std::fs::remove_dir(w.root.join("bolt/logs")).unwrap();
        let found = check(&c);
        let items: Vec<&str> = found.iter().map(|f| f.item.as_str()).collect();
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(items.contains(&format!("dir {}", w.root.join("bolt/logs").display()).as_str()));
        assert!(items.contains(&format!("hooks {}", settings.display()).as_str()));
        assert!(items.contains(&format!("unit {}", unit.display()).as_str()));
        for f in &found {
            assert!(f.fix.contains("hoop install --apply"), "{f}");
            assert_eq!(f.level, Level::Error);
        }
        let hooks = found.iter().find(|f| f.item.starts_with("hooks")).unwrap();
        assert!(hooks.problem.contains("guard memory"), "{hooks}");
        apply(&c, &plan(&c).unwrap()).unwrap();
        assert_eq!(check(&c), vec![]);
        // The hand-edited hook stays (it is not ours); ours is back.
        let text = std::fs::read_to_string(&settings).unwrap();
        assert!(text.contains("guard nothing") && text.contains("guard memory"));
    }

    #[test]
    fn a_service_that_is_not_enabled_is_drift_with_the_command_to_fix_it() {
        let w = world(&["bolt"]);
        let r = RecordingRunner::new();
        let c = ctx(&w, &r, Manager::Systemd);
        apply(&c, &plan(&c).unwrap()).unwrap();
        not_enabled(&r);
        let found = check(&c);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].home.as_deref(), Some("bolt"));
        assert!(
            found[0]
                .fix
                .contains("systemctl --user enable --now hoop-sentinel@bolt.service"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn a_unit_of_a_home_that_is_gone_is_retired() {
        let w = world(&["bolt"]);
        let wants = w
            .user_home
            .join(".config/systemd/user/default.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        std::os::unix::fs::symlink("/x", wants.join("hoop-sentinel@old.service")).unwrap();
        let r = RecordingRunner::new();
        let c = ctx(&w, &r, Manager::Systemd);
        let rows = plan(&c).unwrap();
        let retired = rows.iter().find(|r| r.status == Status::Remove).unwrap();
        assert_eq!(retired.subject, "hoop-sentinel@old.service");
        let applied = apply(&c, &rows).unwrap();
        assert!(
            applied.calls.iter().any(
                |c| c.to_string() == "systemctl --user disable --now hoop-sentinel@old.service"
            )
        );
    }

    #[test]
    fn manager_none_writes_every_file_and_only_lists_the_calls() {
        let w = world(&["bolt"]);
        let r = crate::service::DryRunner::default();
        let c = ctx(&w, &r, Manager::None);
        let rows = plan(&c).unwrap();
        let svc = rows.iter().find(|r| r.item.kind == "service").unwrap();
        assert_eq!(svc.status, Status::Unchecked);
        let applied = apply(&c, &rows).unwrap();
        assert!(
            w.user_home
                .join(".config/systemd/user/hoop-sentinel@.service")
                .is_file()
        );
        assert_eq!(
            r.calls()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "systemctl --user daemon-reload",
                "systemctl --user enable --now hoop-sentinel@bolt.service"
            ]
        );
        assert_eq!(applied.calls, r.calls());
        assert_eq!(check(&c), vec![]);
    }

    #[test]
    fn launchd_bootstraps_each_agent_and_reloads_one_whose_plist_changed() {
        let w = world(&["bolt", "nova"]);
        let r = RecordingRunner::new();
        // Not loaded when the plan asks; loaded once bootstrapped.
        r.answer_times(
            |c| c.args.first().map(String::as_str) == Some("print"),
            CallOutput {
                code: Some(113),
                stdout: String::new(),
                stderr: "Could not find service\n".into(),
            },
            2,
        );
        let mut c = ctx(&w, &r, Manager::Launchd);
        c.machine.os = Os::Macos;
        c.machine.uid = 501;
        let applied = apply(&c, &plan(&c).unwrap()).unwrap();
        let agents = w.user_home.join("Library/LaunchAgents");
        let calls: Vec<String> = applied.calls.iter().map(ToString::to_string).collect();
        assert_eq!(
            calls,
            [
                format!(
                    "launchctl bootstrap gui/501 {}",
                    agents.join("dev.hoop.sentinel.bolt.plist").display()
                ),
                format!(
                    "launchctl bootstrap gui/501 {}",
                    agents.join("dev.hoop.sentinel.nova.plist").display()
                ),
            ]
        );
        // Loaded now; nova's plist edited by hand: only nova is reloaded.
        let r = RecordingRunner::new();
        let mut c = ctx(&w, &r, Manager::Launchd);
        c.machine.os = Os::Macos;
        c.machine.uid = 501;
        let nova = agents.join("dev.hoop.sentinel.nova.plist");
        let text = std::fs::read_to_string(&nova).unwrap();
        std::fs::write(
            &nova,
            text.replace("<integer>60</integer>", "<integer>1</integer>"),
        )
        .unwrap();
        let found = check(&c);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].home.as_deref(), Some("nova"));
        let applied = apply(&c, &plan(&c).unwrap()).unwrap();
        let calls: Vec<String> = applied.calls.iter().map(ToString::to_string).collect();
        assert_eq!(
            calls,
            [
                "launchctl bootout gui/501/dev.hoop.sentinel.nova".to_string(),
                format!("launchctl bootstrap gui/501 {}", nova.display()),
            ]
        );
        assert_eq!(std::fs::read_to_string(&nova).unwrap(), text);
        // A home that is gone: booted out, its plist removed.
        std::fs::remove_file(w.root.join("nova/config.json")).unwrap();
        let r = RecordingRunner::new();
        let env = w.env();
        let (mut machine, homes) = gather(&w.root, &env).unwrap();
        machine.os = Os::Macos;
        machine.uid = 501;
        machine.installed_units = vec!["bolt".into(), "nova".into()];
        let c = Ctx {
            machine,
            homes,
            manager: Manager::Launchd,
            runner: &r,
            manager_problem: None,
            waits: Waits::default(),
        };
        // launchd no longer has it loaded: bootout fails, the plist still goes.
        r.answer(
            |c| c.args.first().map(String::as_str) == Some("bootout"),
            CallOutput {
                code: Some(3),
                stdout: String::new(),
                stderr: "Boot-out failed: 3: No such process".into(),
            },
        );
        let applied = apply(&c, &plan(&c).unwrap()).unwrap();
        let calls: Vec<String> = applied.calls.iter().map(ToString::to_string).collect();
        assert_eq!(calls, ["launchctl bootout gui/501/dev.hoop.sentinel.nova"]);
        assert!(!nova.exists());
        assert!(
            applied.notes[0].contains("No such process"),
            "{:?}",
            applied.notes
        );
    }

    #[test]
    fn a_broken_home_is_named_with_its_file_and_the_others_go_on() {
        let w = world(&["bolt", "nova", "tora"]);
        std::fs::write(
            w.root.join("bolt/install.json"),
            r#"{"guards":["act"],"x":1}"#,
        )
        .unwrap();
        std::fs::write(w.root.join("nova/config.json"), "{not json").unwrap();
        let r = RecordingRunner::new();
        not_enabled(&r);
        let mut c = ctx(&w, &r, Manager::Systemd);
        let names: Vec<&str> = c.homes.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["tora"]);
        // nova's unit is installed: a broken home is never retired.
        c.machine.installed_units = vec!["nova".into()];
        let rows = plan(&c).unwrap();
        let broken: Vec<String> = rows
            .iter()
            .filter(|r| r.status == Status::Broken)
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            broken,
            [
                format!(
                    "broken  home     bolt  ({}: unknown field `x`, expected one of `guards`, \
                     `cursor`, `codex_home` at line 1 column 21)",
                    w.root.join("bolt/install.json").display()
                ),
                format!(
                    "broken  home     nova  ({}: key must be a string at line 1 column 2)",
                    w.root.join("nova/config.json").display()
                ),
            ]
        );
        assert!(
            !rows.iter().any(|r| r.status == Status::Remove),
            "{rows:#?}"
        );
        // Neither broken home gets a service; tora does.
        let applied = apply(&c, &rows).unwrap();
        let calls: Vec<String> = applied.calls.iter().map(ToString::to_string).collect();
        assert_eq!(
            calls,
            [
                "systemctl --user daemon-reload",
                "systemctl --user enable --now hoop-sentinel@tora.service",
            ]
        );
        let found = check(&c);
        let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(
            lines.contains(&format!(
                "error   [nova] home nova: broken: {}: key must be a string at line 1 column 2\n        \
                 fix: fix {} by hand (or redeem the home again with `hoop provision redeem \
                 --force`); until then its sentinel is not installed, started or retired",
                w.root.join("nova/config.json").display(),
                w.root.join("nova/config.json").display()
            )),
            "{lines:#?}"
        );
    }

    fn launchd_ctx<'a>(
        machine: &Machine,
        homes: &[HomeEntry],
        waits: &Waits,
        runner: &'a dyn Runner,
    ) -> Ctx<'a> {
        Ctx {
            machine: machine.clone(),
            homes: homes.to_vec(),
            manager: Manager::Launchd,
            runner,
            manager_problem: None,
            waits: waits.clone(),
        }
    }

    /// A launchd reload (issue 22 item 2): the bootout waits for a running
    /// turn, a bootstrap launchd refuses while it still holds the label is
    /// retried, and the job is verified loaded; the calls, in order.
    #[test]
    fn a_launchd_reload_waits_for_the_turn_retries_the_bootstrap_and_verifies() {
        let w = world(&["bolt"]);
        let quick = Waits {
            turn: std::time::Duration::from_millis(200),
            poll: std::time::Duration::from_millis(10),
            bootstrap_retries: vec![std::time::Duration::ZERO; 2],
        };
        let (mut machine, homes) = gather(&w.root, &w.env()).unwrap();
        machine.os = Os::Macos;
        machine.uid = 501;
        let waits = quick;
        // Installed and loaded.
        let r = RecordingRunner::new();
        let c = launchd_ctx(&machine, &homes, &waits, &r);
        apply(&c, &plan(&c).unwrap()).unwrap();
        let plist = w
            .user_home
            .join("Library/LaunchAgents/dev.hoop.sentinel.bolt.plist");
        let text = std::fs::read_to_string(&plist).unwrap();
        let edit = || {
            std::fs::write(
                &plist,
                text.replace("<integer>60</integer>", "<integer>1</integer>"),
            )
            .unwrap()
        };
        let busy = CallOutput {
            code: Some(5),
            stdout: String::new(),
            stderr: "Bootstrap failed: 5: Input/output error\n".into(),
        };
        let is =
            |verb: &'static str| move |c: &Call| c.args.first().map(String::as_str) == Some(verb);

        // A turn is running: nothing is booted out.
        edit();
        let turn = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(w.root.join("bolt/turn.lock"))
            .unwrap();
        turn.try_lock().unwrap();
        let r = RecordingRunner::new();
        let c = launchd_ctx(&machine, &homes, &waits, &r);
        let err = apply(&c, &plan(&c).unwrap()).unwrap_err().to_string();
        assert_eq!(
            err,
            "a turn of bolt is still running after 0 s, so its agent was not reloaded (a \
             bootout would stop it mid-turn); run `hoop install --apply` again when it ends"
        );
        assert!(
            !r.calls().iter().any(|c| is("bootout")(c)),
            "{:?}",
            r.calls()
        );
        drop(turn);

        // The turn ended: bootout, a refused bootstrap, the retry, the check.
        let r = RecordingRunner::new();
        r.answer_times(is("bootstrap"), busy.clone(), 1);
        let c = launchd_ctx(&machine, &homes, &waits, &r);
        let applied = apply(&c, &plan(&c).unwrap()).unwrap();
        let calls: Vec<String> = r.calls().iter().map(ToString::to_string).collect();
        let target = "gui/501/dev.hoop.sentinel.bolt";
        let boot = format!("launchctl bootstrap gui/501 {}", plist.display());
        assert_eq!(
            calls,
            [
                format!("launchctl print {target}"),
                format!("launchctl bootout {target}"),
                boot.clone(),
                boot.clone(),
                format!("launchctl print {target}"),
            ]
        );
        assert_eq!(
            applied.notes,
            [format!(
                "`{boot}`: Bootstrap failed: 5: Input/output error (launchd still holds the \
                 label); again in 0 s"
            )]
        );
        assert_eq!(std::fs::read_to_string(&plist).unwrap(), text);

        // launchd keeps refusing: a failure after the bounded retries.
        edit();
        let r = RecordingRunner::new();
        r.answer(is("bootstrap"), busy);
        let c = launchd_ctx(&machine, &homes, &waits, &r);
        let err = apply(&c, &plan(&c).unwrap()).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("`{boot}` exited 5: Bootstrap failed: 5: Input/output error")
        );
        assert_eq!(r.calls().iter().filter(|c| is("bootstrap")(c)).count(), 3);

        // A bootstrap that said yes but loaded nothing is a failure.
        edit();
        let r = RecordingRunner::new();
        r.answer_times(
            is("print"),
            CallOutput {
                code: Some(0),
                ..CallOutput::default()
            },
            1,
        );
        r.answer(
            is("print"),
            CallOutput {
                code: Some(113),
                stdout: String::new(),
                stderr: "Could not find service \"dev.hoop.sentinel.bolt\" in domain for port\n"
                    .into(),
            },
        );
        let c = launchd_ctx(&machine, &homes, &waits, &r);
        let err = apply(&c, &plan(&c).unwrap()).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "`{boot}` exited 1: it answered yes, but `launchctl print {target}` does not \
                 find the job (Could not find service"
            )),
            "{err}"
        );
    }

    /// Only the units this root's install record lists are retired when
    /// their home is gone; another root's are left alone (issue 22 item 4).
    #[test]
    fn only_this_roots_units_are_retired() {
        let w = world(&["tora"]);
        crate::record::save(
            &w.root,
            &crate::record::Record {
                manager: Manager::Systemd,
                manager_on_purpose: true,
                tool_dirs: vec![],
                units: vec!["bolt".into(), "tora".into()],
            },
        )
        .unwrap();
        let wants = w
            .user_home
            .join(".config/systemd/user/default.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        for h in ["bolt", "other"] {
            std::os::unix::fs::symlink("/x", wants.join(format!("hoop-sentinel@{h}.service")))
                .unwrap();
        }
        let r = RecordingRunner::new();
        let c = ctx(&w, &r, Manager::Systemd);
        let retired: Vec<String> = plan(&c)
            .unwrap()
            .iter()
            .filter(|r| r.status == Status::Remove)
            .map(|r| r.subject.clone())
            .collect();
        assert_eq!(retired, ["hoop-sentinel@bolt.service"]);
    }
}
