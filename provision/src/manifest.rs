//! The ONE install manifest: a pure function from the machine's facts, its
//! homes and the options to the list of items that must be true on it.
//! `hoop install --plan | --apply | --check` and `hoop doctor` all read this
//! list (through [`crate::install`]); nothing else decides what an install
//! is, so no second installer can drift from it.
//!
//! Items: the stable `hoop` link (units and hooks run it, never a build
//! directory); per home its `logs/` and `prompts/` directories (prompt parts
//! ship in the binary; `prompts/<part>.md` overrides one), the Codex home's
//! `hoop` link where the home names one, the hooks merged into the
//! account's Claude Code `settings.json` (and Cursor's `hooks.json` when
//! asked) through `hoop_guards::install`, the service unit and the service
//! itself; and every unit of a home that is no longer on the machine, to
//! retire.

use std::path::{Path, PathBuf};

use hoop_guards::install::{self as hooks, Spec, Target};
use serde::{Deserialize, Serialize};

use crate::service::Manager;
use crate::units::{self, UnitFacts};

/// A home's install choices: `<home>/install.json`, optional.
pub const INSTALL_FILE: &str = "install.json";
/// Where the stable `hoop` link lives, under the hoop root.
pub const LINK_DIR: &str = "bin";
/// The directories every unit's `PATH` ends with, after the stable link's
/// directory and the ones holding `claude` and `node` (launchd starts jobs
/// with a bare `PATH`; systemd's user manager with its own short one).
pub const LINUX_SYSTEM_PATH: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];
/// The same for macOS (Homebrew's prefix on Apple silicon first).
pub const MACOS_SYSTEM_PATH: &[&str] = &["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    Macos,
}

impl Os {
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::Macos
        } else {
            Os::Linux
        }
    }
}

/// What the installer knows about the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub os: Os,
    /// The user's login name (for `loginctl`).
    pub user: String,
    /// The user's uid (launchd's `gui/<uid>` domain).
    pub uid: u32,
    /// `$HOME`.
    pub user_home: PathBuf,
    /// `$XDG_CONFIG_HOME`, when set.
    pub xdg_config_home: Option<PathBuf>,
    /// The hoop root (`~/.hoop` or `$HOOP_ROOT`).
    pub root: PathBuf,
    /// The binary the stable link points at.
    pub hoop_binary: PathBuf,
    /// Directories holding `claude` and `node` (found on the installer's PATH).
    pub tool_dirs: Vec<PathBuf>,
    /// Homes that have a unit installed on this machine (enabled systemd
    /// instances, launchd agents), whether or not they are still homes.
    pub installed_units: Vec<String>,
    /// Homes whose files could not be read: reported, never installed,
    /// never retired.
    pub broken: Vec<BrokenHome>,
    /// systemd drop-ins of the template (`hoop-sentinel@.service.d/*.conf`):
    /// the operator's local changes, kept and reported, never drift.
    pub dropins: Vec<PathBuf>,
    /// A unit file of this user that serves another hoop root (which still
    /// exists): the unit and that root. One user runs one root.
    pub foreign_root: Option<(PathBuf, PathBuf)>,
    /// The homes whose units this root installed (its install record);
    /// `None` before the first `--apply` that kept a record. Only these
    /// are retired when their home is gone.
    pub owned_units: Option<Vec<String>>,
}

/// A home whose `config.json`, `sentinel.json` or `install.json` does not
/// parse: every command that walks the homes names it (the file and the
/// error) and goes on with the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenHome {
    pub name: String,
    pub file: PathBuf,
    pub message: String,
}

impl BrokenHome {
    /// The one line an operator reads about it (without the fix).
    pub fn problem(&self) -> String {
        format!("{}: {}", self.file.display(), self.message)
    }

    /// How to fix it.
    pub fn fix(&self) -> String {
        format!(
            "fix {} by hand (or redeem the home again with `hoop provision redeem --force`); \
             until then its sentinel is not installed, started or retired",
            self.file.display()
        )
    }
}

/// Which guard hooks a home wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Guard {
    Act,
    Memory,
    Phase,
    Mcp,
    /// The card tools' usage snapshot (`hoop card-snapshot`).
    Card,
}

impl Guard {
    /// The guard a hook spec runs (`hoop guard <name> …`, or the card
    /// snapshot hook).
    fn of(spec: &Spec) -> Option<Guard> {
        if spec.args.first().map(String::as_str) == Some("card-snapshot") {
            return Some(Guard::Card);
        }
        match spec.args.get(1).map(String::as_str) {
            Some("act") => Some(Guard::Act),
            Some("memory") => Some(Guard::Memory),
            Some("phase") => Some(Guard::Phase),
            Some("mcp") => Some(Guard::Mcp),
            _ => None,
        }
    }
}

fn default_guards() -> Vec<Guard> {
    vec![Guard::Act, Guard::Memory, Guard::Card]
}

/// `<home>/install.json`. Absent → the act and memory guards and the card
/// snapshot hook into Claude Code, no Cursor, no Codex home. phase and mcp are per-home guards (they take
/// `--home`), so a home that wants them needs its own Claude config dir
/// (`CLAUDE_CONFIG_DIR` or `HOME` in `sentinel.json`'s `env`) unless it is
/// the only home on the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallSettings {
    #[serde(default = "default_guards")]
    pub guards: Vec<Guard>,
    /// Also merge the guards into Cursor's `~/.cursor/hooks.json`.
    #[serde(default)]
    pub cursor: bool,
    /// A Codex home (`CODEX_HOME`) this account also runs in: it gets a
    /// `bin/hoop` link to the stable link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_home: Option<PathBuf>,
}

impl Default for InstallSettings {
    fn default() -> Self {
        InstallSettings {
            guards: default_guards(),
            cursor: false,
            codex_home: None,
        }
    }
}

/// One home as the manifest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeEntry {
    pub name: String,
    /// The home's directory.
    pub dir: PathBuf,
    /// The Claude Code config dir the home's agent runs with.
    pub claude_config_dir: PathBuf,
    pub settings: InstallSettings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub manager: Manager,
}

/// What must be true of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// `path` is a symlink to `target`.
    Link { path: PathBuf, target: PathBuf },
    /// `path` is a directory.
    Dir { path: PathBuf },
    /// `path` holds exactly `bytes`.
    File { path: PathBuf, bytes: Vec<u8> },
    /// The settings file at `path` carries `specs`, running `program`.
    Hooks {
        target: Target,
        path: PathBuf,
        program: String,
        specs: Vec<Spec>,
    },
    /// The home's service `unit` (systemd instance or launchd label) is
    /// enabled and loaded under the manager.
    Service { home: String, unit: String },
    /// A home that cannot be read ([`BrokenHome`]): nothing to do but fix it.
    Broken { home: BrokenHome },
    /// An operator's drop-in next to the unit: kept as it is.
    Kept { path: PathBuf },
    /// A unit of a home that is gone: stop and remove it.
    Retired {
        home: String,
        unit: String,
        file: Option<PathBuf>,
    },
}

/// One desired item: a short kind, what it is about, and the want.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// `link`, `dir`, `hooks`, `unit`, `service`, `codex`.
    pub kind: &'static str,
    /// The home the item belongs to; `None` for what the machine shares.
    pub home: Option<String>,
    pub want: Want,
}

impl Item {
    /// What the item is about, for a plan line: a path or a unit.
    pub fn subject(&self) -> String {
        match &self.want {
            Want::Link { path, target } => format!("{} -> {}", path.display(), target.display()),
            Want::Dir { path }
            | Want::File { path, .. }
            | Want::Hooks { path, .. }
            | Want::Kept { path } => path.display().to_string(),
            Want::Service { unit, .. } | Want::Retired { unit, .. } => unit.clone(),
            Want::Broken { home } => home.name.clone(),
        }
    }
}

/// The unit a home runs as: `hoop-sentinel@<home>.service` or the launchd label.
pub fn service_name(m: &Machine, manager: Manager, home: &str) -> String {
    match (manager, m.os) {
        (Manager::Systemd, _) | (Manager::None, Os::Linux) => units::systemd_instance(home),
        (Manager::Launchd, _) | (Manager::None, Os::Macos) => units::launchd_label(home),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error(
        "{what} {path} is under {folder}: launchd jobs cannot read it (macOS privacy \
         protection) and would fail silently; move it elsewhere (homes belong under ~/.hoop)"
    )]
    Protected {
        what: String,
        path: PathBuf,
        folder: String,
    },
    #[error(
        "homes {homes} share {path} but the per-home guards (phase, mcp) run for one home \
         only; give each home its own CLAUDE_CONFIG_DIR in sentinel.json's env, or list \
         only act and memory in their install.json"
    )]
    SharedHomeHooks { path: PathBuf, homes: String },
    #[error(
        "{unit} serves the hoop root {other}, and one user runs one root: installing {this} \
         would take that root's units and hooks over. Install from that root \
         (HOOP_ROOT={other} hoop install --plan) and move this root's homes into it; or, if \
         {other} is retired, stop its sentinels and remove {unit} first"
    )]
    SecondRoot {
        unit: PathBuf,
        other: PathBuf,
        this: PathBuf,
    },
}

/// The stable link: `<root>/bin/hoop`.
pub fn link_path(m: &Machine) -> PathBuf {
    m.root.join(LINK_DIR).join("hoop")
}

/// The systemd user unit directory (`$XDG_CONFIG_HOME` honoured).
pub fn systemd_unit_dir(m: &Machine) -> PathBuf {
    m.xdg_config_home
        .clone()
        .unwrap_or_else(|| m.user_home.join(".config"))
        .join("systemd")
        .join("user")
}

/// Where the template's drop-ins live: `hoop-sentinel@.service.d/`.
pub fn dropin_dir(m: &Machine) -> PathBuf {
    systemd_unit_dir(m).join(format!("{}.d", units::SYSTEMD_UNIT_FILE))
}

/// `~/Library/LaunchAgents`.
pub fn launch_agents_dir(m: &Machine) -> PathBuf {
    m.user_home.join("Library").join("LaunchAgents")
}

/// A home's launchd agent file.
pub fn plist_path(m: &Machine, home: &str) -> PathBuf {
    launch_agents_dir(m).join(format!("{}.plist", units::launchd_label(home)))
}

/// The `PATH` every unit gives the daemon: the stable link's directory, the
/// directories of `claude` and `node`, then the system's.
pub fn unit_path(m: &Machine) -> String {
    let system = match m.os {
        Os::Linux => LINUX_SYSTEM_PATH,
        Os::Macos => MACOS_SYSTEM_PATH,
    };
    // The tools' own directories first, unless they are system directories:
    // those keep the system's order (/usr/local/bin before /usr/bin), so a
    // node found in /usr/bin does not hide one installed in /usr/local/bin.
    let mut dirs: Vec<String> = vec![m.root.join(LINK_DIR).to_string_lossy().into_owned()];
    for d in m
        .tool_dirs
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .filter(|d| !system.contains(&d.as_str()))
        .chain(system.iter().map(|s| s.to_string()))
    {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs.join(":")
}

fn unit_facts(m: &Machine) -> UnitFacts {
    UnitFacts {
        hoop_bin: link_path(m),
        path: unit_path(m),
        root: m.root.clone(),
    }
}

/// The desired items, in the order they are applied.
pub fn manifest(
    m: &Machine,
    homes: &[HomeEntry],
    opts: Options,
) -> Result<Vec<Item>, ManifestError> {
    if let Some((unit, other)) = &m.foreign_root {
        return Err(ManifestError::SecondRoot {
            unit: unit.clone(),
            other: other.clone(),
            this: m.root.clone(),
        });
    }
    if m.os == Os::Macos {
        let mut paths: Vec<(String, &Path)> = vec![
            ("the hoop root".into(), &m.root),
            ("the hoop binary".into(), &m.hoop_binary),
        ];
        for h in homes {
            paths.push((format!("home {}", h.name), &h.dir));
            paths.push((
                format!("the Claude config dir of {}", h.name),
                &h.claude_config_dir,
            ));
            if let Some(c) = &h.settings.codex_home {
                paths.push((format!("the Codex home of {}", h.name), c));
            }
        }
        for (what, path) in paths {
            if let Some(folder) = units::protected_folder(&m.user_home, path) {
                return Err(ManifestError::Protected {
                    what,
                    path: path.to_path_buf(),
                    folder,
                });
            }
        }
    }
    let link = link_path(m);
    let program = link.to_string_lossy().into_owned();
    let mut items = vec![Item {
        kind: "link",
        home: None,
        want: Want::Link {
            path: link.clone(),
            target: m.hoop_binary.clone(),
        },
    }];
    for h in homes {
        for path in [h.dir.join("logs"), h.dir.join("prompts")] {
            items.push(Item {
                kind: "dir",
                home: Some(h.name.clone()),
                want: Want::Dir { path },
            });
        }
        if let Some(c) = &h.settings.codex_home {
            items.push(Item {
                kind: "codex",
                home: Some(h.name.clone()),
                want: Want::Link {
                    path: c.join(LINK_DIR).join("hoop"),
                    target: link.clone(),
                },
            });
        }
    }
    items.extend(hook_items(m, homes, &program)?);
    let facts = unit_facts(m);
    match m.os {
        Os::Linux => {
            items.push(Item {
                kind: "unit",
                home: None,
                want: Want::File {
                    path: systemd_unit_dir(m).join(units::SYSTEMD_UNIT_FILE),
                    bytes: units::systemd_unit(&facts).into_bytes(),
                },
            });
            for path in &m.dropins {
                items.push(Item {
                    kind: "dropin",
                    home: None,
                    want: Want::Kept { path: path.clone() },
                });
            }
        }
        Os::Macos => {
            for h in homes {
                let bytes = units::launchd_plist(&facts, &h.name, &h.dir.join("logs"))
                    .expect("the shipped launchd template renders");
                items.push(Item {
                    kind: "unit",
                    home: Some(h.name.clone()),
                    want: Want::File {
                        path: plist_path(m, &h.name),
                        bytes,
                    },
                });
            }
        }
    }
    for h in homes {
        items.push(Item {
            kind: "service",
            home: Some(h.name.clone()),
            want: Want::Service {
                home: h.name.clone(),
                unit: service_name(m, opts.manager, &h.name),
            },
        });
    }
    for b in &m.broken {
        items.push(Item {
            kind: "home",
            home: Some(b.name.clone()),
            want: Want::Broken { home: b.clone() },
        });
    }
    for gone in &m.installed_units {
        if homes.iter().any(|h| &h.name == gone) || m.broken.iter().any(|b| &b.name == gone) {
            continue;
        }
        // Only what this root installed is this root's to retire.
        if m.owned_units.as_ref().is_some_and(|o| !o.contains(gone)) {
            continue;
        }
        items.push(Item {
            kind: "service",
            home: Some(gone.clone()),
            want: Want::Retired {
                home: gone.clone(),
                unit: service_name(m, opts.manager, gone),
                file: (m.os == Os::Macos).then(|| plist_path(m, gone)),
            },
        });
    }
    Ok(items)
}

/// The hooks this home should have: for each settings file its agent reads
/// (Claude Code's, and Cursor's when asked), the specs its `install.json`
/// chooses. The ONE definition: install, `--check`, doctor and `hoop
/// status` all ask this.
pub fn home_hooks(user_home: &Path, h: &HomeEntry) -> Vec<(Target, PathBuf, Vec<Spec>)> {
    let mut targets = vec![(Target::Claude, h.claude_config_dir.join("settings.json"))];
    if h.settings.cursor {
        targets.push((Target::Cursor, user_home.join(".cursor").join("hooks.json")));
    }
    targets
        .into_iter()
        .map(|(target, path)| {
            let mut all = hooks::specs(target, Some(&h.name));
            if target == Target::Claude {
                all.push(hooks::card_snapshot_spec());
            }
            let wanted: Vec<Spec> = all
                .into_iter()
                .filter(|s| Guard::of(s).is_some_and(|g| h.settings.guards.contains(&g)))
                .collect();
            (target, path, wanted)
        })
        .collect()
}

/// One hooks item per settings file: the union of what its homes want; the
/// per-home guards of two homes in one file are refused.
fn hook_items(m: &Machine, homes: &[HomeEntry], program: &str) -> Result<Vec<Item>, ManifestError> {
    struct File {
        target: Target,
        path: PathBuf,
        specs: Vec<Spec>,
        per_home: Vec<String>,
        homes: Vec<String>,
    }
    let mut files: Vec<File> = Vec::new();
    for h in homes {
        for (target, path, wanted) in home_hooks(&m.user_home, h) {
            if wanted.is_empty() {
                continue;
            }
            let idx = match files
                .iter()
                .position(|f| f.target == target && f.path == path)
            {
                Some(i) => i,
                None => {
                    files.push(File {
                        target,
                        path: path.clone(),
                        specs: Vec::new(),
                        per_home: Vec::new(),
                        homes: Vec::new(),
                    });
                    files.len() - 1
                }
            };
            let f = &mut files[idx];
            f.homes.push(h.name.clone());
            if wanted.iter().any(|s| s.args.iter().any(|a| a == "--home")) {
                f.per_home.push(h.name.clone());
            }
            for s in wanted {
                if !f.specs.contains(&s) {
                    f.specs.push(s);
                }
            }
        }
    }
    let mut items = Vec::new();
    for f in files {
        if f.per_home.len() > 1 {
            return Err(ManifestError::SharedHomeHooks {
                path: f.path,
                homes: f.per_home.join(", "),
            });
        }
        items.push(Item {
            kind: "hooks",
            home: match f.homes.as_slice() {
                [one] => Some(one.clone()),
                _ => None,
            },
            want: Want::Hooks {
                target: f.target,
                path: f.path,
                program: program.to_string(),
                specs: f.specs,
            },
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home(root: &str, name: &str, claude: &str, settings: InstallSettings) -> HomeEntry {
        HomeEntry {
            name: name.into(),
            dir: Path::new(root).join(name),
            claude_config_dir: claude.into(),
            settings,
        }
    }

    /// The plan's items as lines, with each hooks file's commands and each
    /// unit's bytes, so a snapshot shows everything the manifest decides.
    fn snapshot(m: &Machine, homes: &[HomeEntry], manager: Manager) -> String {
        let items = manifest(m, homes, Options { manager }).unwrap();
        let mut out = String::new();
        for i in &items {
            out.push_str(&format!("{:8} {}\n", i.kind, i.subject()));
            if let Want::Hooks { program, specs, .. } = &i.want {
                for s in specs {
                    out.push_str(&format!(
                        "           {} {}\n",
                        s.event,
                        hooks::command_line(program, s)
                    ));
                }
            }
        }
        out
    }

    fn linux() -> Machine {
        Machine {
            os: Os::Linux,
            user: "ops".into(),
            uid: 1000,
            user_home: "/home/ops".into(),
            xdg_config_home: None,
            root: "/home/ops/.hoop".into(),
            hoop_binary: "/opt/hoop/0.1.0/hoop".into(),
            tool_dirs: vec!["/home/ops/.npm/bin".into(), "/usr/bin".into()],
            installed_units: vec!["bolt".into(), "old".into()],
            broken: vec![],
            dropins: vec![],
            foreign_root: None,
            owned_units: None,
        }
    }

    fn macos() -> Machine {
        Machine {
            os: Os::Macos,
            user: "ops".into(),
            uid: 501,
            user_home: "/Users/ops".into(),
            xdg_config_home: None,
            root: "/Users/ops/.hoop".into(),
            hoop_binary: "/opt/homebrew/bin/hoop-0.1.0".into(),
            tool_dirs: vec!["/opt/homebrew/bin".into()],
            installed_units: vec![],
            broken: vec![],
            dropins: vec![],
            foreign_root: None,
            owned_units: None,
        }
    }

    #[test]
    fn snapshot_of_a_linux_machine_with_two_homes() {
        let m = linux();
        let homes = [
            home(
                "/home/ops/.hoop",
                "bolt",
                "/home/ops/.hoop/bolt/claude",
                InstallSettings {
                    guards: vec![Guard::Act, Guard::Memory, Guard::Phase, Guard::Mcp],
                    cursor: true,
                    codex_home: Some("/home/ops/.codex-bolt".into()),
                },
            ),
            home(
                "/home/ops/.hoop",
                "nova",
                "/home/ops/.claude",
                InstallSettings::default(),
            ),
        ];
        let want = "\
link     /home/ops/.hoop/bin/hoop -> /opt/hoop/0.1.0/hoop
dir      /home/ops/.hoop/bolt/logs
dir      /home/ops/.hoop/bolt/prompts
codex    /home/ops/.codex-bolt/bin/hoop -> /home/ops/.hoop/bin/hoop
dir      /home/ops/.hoop/nova/logs
dir      /home/ops/.hoop/nova/prompts
hooks    /home/ops/.hoop/bolt/claude/settings.json
           PreToolUse /home/ops/.hoop/bin/hoop guard act
           PreToolUse /home/ops/.hoop/bin/hoop guard memory
           PreToolUse /home/ops/.hoop/bin/hoop guard mcp --home bolt
           PostToolUse /home/ops/.hoop/bin/hoop guard phase --home bolt
hooks    /home/ops/.cursor/hooks.json
           beforeShellExecution /home/ops/.hoop/bin/hoop guard act --cursor
           beforeMCPExecution /home/ops/.hoop/bin/hoop guard mcp --cursor --home bolt
           afterShellExecution /home/ops/.hoop/bin/hoop guard phase --cursor --home bolt
           afterMCPExecution /home/ops/.hoop/bin/hoop guard phase --cursor --home bolt
           afterFileEdit /home/ops/.hoop/bin/hoop guard phase --cursor --home bolt
hooks    /home/ops/.claude/settings.json
           PreToolUse /home/ops/.hoop/bin/hoop guard act
           PreToolUse /home/ops/.hoop/bin/hoop guard memory
           PreToolUse /home/ops/.hoop/bin/hoop card-snapshot
unit     /home/ops/.config/systemd/user/hoop-sentinel@.service
service  hoop-sentinel@bolt.service
service  hoop-sentinel@nova.service
service  hoop-sentinel@old.service
";
        assert_eq!(snapshot(&m, &homes, Manager::Systemd), want);
        let items = manifest(
            &m,
            &homes,
            Options {
                manager: Manager::Systemd,
            },
        )
        .unwrap();
        assert!(matches!(
            items.last().unwrap().want,
            Want::Retired { ref home, file: None, .. } if home == "old"
        ));
        // The unit runs the stable link, with a PATH reaching claude and node.
        let unit = items
            .iter()
            .find_map(|i| match &i.want {
                Want::File { bytes, .. } => Some(String::from_utf8(bytes.clone()).unwrap()),
                _ => None,
            })
            .unwrap();
        assert!(unit.contains("ExecStart=\"/home/ops/.hoop/bin/hoop\" sentinel run"));
        assert!(unit.contains(
            "Environment=\"PATH=/home/ops/.hoop/bin:/home/ops/.npm/bin:/usr/local/bin:/usr/bin:/bin\""
        ));
    }

    #[test]
    fn snapshot_of_a_macos_machine_with_one_home() {
        let m = macos();
        let homes = [home(
            "/Users/ops/.hoop",
            "bolt",
            "/Users/ops/.claude",
            InstallSettings {
                guards: vec![Guard::Act, Guard::Phase],
                cursor: false,
                codex_home: None,
            },
        )];
        let want = "\
link     /Users/ops/.hoop/bin/hoop -> /opt/homebrew/bin/hoop-0.1.0
dir      /Users/ops/.hoop/bolt/logs
dir      /Users/ops/.hoop/bolt/prompts
hooks    /Users/ops/.claude/settings.json
           PreToolUse /Users/ops/.hoop/bin/hoop guard act
           PostToolUse /Users/ops/.hoop/bin/hoop guard phase --home bolt
unit     /Users/ops/Library/LaunchAgents/dev.hoop.sentinel.bolt.plist
service  dev.hoop.sentinel.bolt
";
        assert_eq!(snapshot(&m, &homes, Manager::Launchd), want);
    }

    #[test]
    fn xdg_config_home_moves_the_systemd_unit() {
        let mut m = linux();
        m.xdg_config_home = Some("/srv/cfg".into());
        let items = manifest(
            &m,
            &[],
            Options {
                manager: Manager::None,
            },
        )
        .unwrap();
        assert!(items.iter().any(|i| matches!(&i.want,
            Want::File { path, .. } if path == Path::new("/srv/cfg/systemd/user/hoop-sentinel@.service"))));
    }

    #[test]
    fn protected_folders_are_refused_on_macos_for_every_path_kind() {
        type Edit = fn(&mut Machine, &mut HomeEntry);
        let cases: [(&str, Edit); 5] = [
            ("the hoop root", |m, _| {
                m.root = "/Users/ops/Documents/hoop".into()
            }),
            ("the hoop binary", |m, _| {
                m.hoop_binary = "/Users/ops/Desktop/repo/target/release/hoop".into()
            }),
            ("home bolt", |_, h| {
                h.dir = "/Users/ops/Downloads/bolt".into()
            }),
            ("the Claude config dir of bolt", |_, h| {
                h.claude_config_dir = "/Users/ops/Documents/agent/.claude".into()
            }),
            ("the Codex home of bolt", |_, h| {
                h.settings.codex_home = Some("/Users/ops/Documents/codex".into())
            }),
        ];
        for (what, edit) in cases {
            let mut m = macos();
            let mut h = home(
                "/Users/ops/.hoop",
                "bolt",
                "/Users/ops/.claude",
                InstallSettings::default(),
            );
            edit(&mut m, &mut h);
            let err = manifest(
                &m,
                &[h.clone()],
                Options {
                    manager: Manager::Launchd,
                },
            )
            .unwrap_err();
            assert!(
                matches!(&err, ManifestError::Protected { what: w, .. } if w == what),
                "{what}: {err}"
            );
            // The same paths are fine on Linux (no TCC there).
            let mut l = m.clone();
            l.os = Os::Linux;
            assert!(
                manifest(
                    &l,
                    &[h],
                    Options {
                        manager: Manager::Systemd
                    }
                )
                .is_ok()
            );
        }
    }

    #[test]
    fn two_homes_sharing_a_settings_file_cannot_both_take_per_home_guards() {
        let all = InstallSettings {
            guards: vec![Guard::Act, Guard::Phase],
            ..InstallSettings::default()
        };
        let homes = [
            home("/r", "a", "/home/ops/.claude", all.clone()),
            home("/r", "b", "/home/ops/.claude", all),
        ];
        let err = manifest(
            &linux(),
            &homes,
            Options {
                manager: Manager::Systemd,
            },
        )
        .unwrap_err();
        assert_eq!(
            err,
            ManifestError::SharedHomeHooks {
                path: "/home/ops/.claude/settings.json".into(),
                homes: "a, b".into()
            }
        );
        // act and memory only: one shared item, each hook once.
        let homes = [
            home("/r", "a", "/home/ops/.claude", InstallSettings::default()),
            home("/r", "b", "/home/ops/.claude", InstallSettings::default()),
        ];
        let items = manifest(
            &linux(),
            &homes,
            Options {
                manager: Manager::Systemd,
            },
        )
        .unwrap();
        let hooks: Vec<_> = items.iter().filter(|i| i.kind == "hooks").collect();
        assert_eq!(hooks.len(), 1);
        let Want::Hooks { specs, .. } = &hooks[0].want else {
            unreachable!()
        };
        let args: Vec<String> = specs.iter().map(|s| s.args.join(" ")).collect();
        assert_eq!(args, ["guard act", "guard memory", "card-snapshot"]);
    }

    #[test]
    fn install_settings_reject_unknown_fields_and_default_to_act_and_memory() {
        let s: InstallSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(s, InstallSettings::default());
        assert_eq!(s.guards, [Guard::Act, Guard::Memory, Guard::Card]);
        let s: InstallSettings = serde_json::from_str(r#"{"guards":["card"]}"#).unwrap();
        assert_eq!(s.guards, [Guard::Card]);
        assert!(serde_json::from_str::<InstallSettings>(r#"{"gaurds":[]}"#).is_err());
        assert!(serde_json::from_str::<InstallSettings>(r#"{"guards":["nope"]}"#).is_err());
    }
}
