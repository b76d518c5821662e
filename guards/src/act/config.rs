//! act_guard configuration: which rules are armed, who may release and with
//! which commands, which branches are protected. Read from small files under
//! the hoop root (`~/.hoop`, or `$HOOP_ROOT`); nothing else is read.
//!
//! - `act_guard_rules`: one rule name per line, `all`, or `none`. Missing,
//!   empty, or listing no known name → every rule armed. Only `none` disarms.
//! - `act_guard_release`: `owner NAME` lines (the `HOOP_AGENT` values allowed
//!   to release) and `command WORDS…` lines (replacing the default list).
//! - `act_guard_protected`: one branch pattern per line (`*` globs), replacing
//!   the default `main`, `master`, `release/*`.
//!
//! `#` starts a comment in every file.

use std::path::Path;

use super::{Rule, RuleSet};

pub const RULES_FILE: &str = "act_guard_rules";
pub const RELEASE_FILE: &str = "act_guard_release";
pub const PROTECTED_FILE: &str = "act_guard_protected";

/// Branches a force-push must never rewrite unless configured otherwise:
/// the shared integration branches.
pub const DEFAULT_PROTECTED: &[&str] = &["main", "master", "release/*"];

/// Release / upload commands (matched as a command name followed by the
/// other words in order). They publish builds to stores and registries,
/// which cannot be taken back, so only the release owner runs them.
pub const DEFAULT_RELEASE_COMMANDS: &[&str] = &[
    "fastlane",
    "xcrun altool",
    "xcrun notarytool submit",
    "firebase appdistribution:distribute",
    "eas submit",
    "gh release create",
    "npm publish",
    "cargo publish",
    "twine upload",
];

/// Words that make a release command publish nothing: a rehearsal
/// (`cargo publish --dry-run`, `npm publish --dry-run`), a draft that only
/// its author sees (`gh release create v1 --draft`), or a question
/// (`--help`, `--version`).
pub const RELEASE_HARMLESS_WORDS: &[&str] = &[
    "--dry-run",
    "--dryrun",
    "--draft",
    "--help",
    "-h",
    "--version",
    "-v",
];

/// fastlane lanes and actions that test, build or inspect and upload
/// nothing (`fastlane test`, `fastlane ios lanes`). Any other lane may be a
/// release lane (`beta`, `release`, `deliver`, a project's own lane), so
/// `fastlane` stays a release command unless its lane is listed here.
pub const FASTLANE_SAFE_LANES: &[&str] = &[
    "test",
    "tests",
    "unit_tests",
    "lanes",
    "list",
    "scan",
    "run_tests",
    "snapshot",
    "screenshots",
    "env",
    "init",
    "actions",
    "action",
    "docs",
    "lint",
    "build",
    "gym",
    "build_app",
    "match",
    "certificates",
];

/// Who may release and what counts as releasing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseConfig {
    pub owners: Vec<String>,
    pub commands: Vec<Vec<String>>,
}

impl Default for ReleaseConfig {
    fn default() -> Self {
        ReleaseConfig {
            owners: Vec::new(),
            commands: DEFAULT_RELEASE_COMMANDS
                .iter()
                .map(|c| c.split_whitespace().map(str::to_string).collect())
                .collect(),
        }
    }
}

/// Everything [`super::check`] needs besides the command text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActConfig {
    pub rules: RuleSet,
    pub release: ReleaseConfig,
    /// Protected branch patterns (`*` globs).
    pub protected: Vec<String>,
    /// `HOOP_AGENT`: who is running the command.
    pub agent: Option<String>,
    /// `$TMPDIR`, when set: a temp dir like `/tmp`.
    pub tmpdir: Option<String>,
    /// The command's working directory (from the hook payload), used to
    /// resolve relative paths.
    pub cwd: Option<String>,
    /// Cache folders (paths relative to `cwd`) that git tracks nothing
    /// under and that no symbolic link leads through, as the hook shell
    /// found them (`crate::cache_facts`); removing them is allowed. Empty
    /// by default: without the facts their removal stays blocked.
    pub untracked_caches: Vec<String>,
}

impl Default for ActConfig {
    fn default() -> Self {
        ActConfig {
            rules: RuleSet::ALL,
            release: ReleaseConfig::default(),
            protected: DEFAULT_PROTECTED.iter().map(|s| s.to_string()).collect(),
            agent: None,
            tmpdir: None,
            cwd: None,
            untracked_caches: Vec::new(),
        }
    }
}

impl ActConfig {
    /// Load from `root` and the process environment (`HOOP_AGENT`, `TMPDIR`).
    pub fn load(root: Option<&Path>) -> ActConfig {
        ActConfig {
            agent: std::env::var("HOOP_AGENT").ok().filter(|s| !s.is_empty()),
            tmpdir: std::env::var("TMPDIR").ok().filter(|s| s.starts_with('/')),
            ..ActConfig::from_files(root)
        }
    }

    /// Load the files under `root` only (no environment).
    pub fn from_files(root: Option<&Path>) -> ActConfig {
        let mut cfg = ActConfig::default();
        let Some(root) = root else { return cfg };
        cfg.rules = load_rules(root).rules;
        if let Some(text) = read_small(&root.join(RELEASE_FILE)) {
            cfg.release = parse_release(&text);
        }
        if let Some(text) = read_small(&root.join(PROTECTED_FILE)) {
            let pats: Vec<String> = lines(&text).map(str::to_string).collect();
            if !pats.is_empty() {
                cfg.protected = pats;
            }
        }
        cfg
    }
}

/// What `act_guard_rules` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesFile {
    pub rules: RuleSet,
    /// Lines that name no rule (reported, otherwise ignored).
    pub unknown: Vec<String>,
}

/// Parse the rules file text.
pub fn parse_rules(text: &str) -> RulesFile {
    let mut set = RuleSet::NONE;
    let mut any = false;
    let mut none = false;
    let mut unknown = Vec::new();
    for line in lines(text) {
        match line {
            "all" => {
                set = RuleSet::ALL;
                any = true;
            }
            "none" => none = true,
            name => match Rule::from_name(name) {
                Some(r) => {
                    set.insert(r);
                    any = true;
                }
                None => unknown.push(name.to_string()),
            },
        }
    }
    let rules = if none {
        RuleSet::NONE
    } else if any {
        set
    } else {
        RuleSet::ALL
    };
    RulesFile { rules, unknown }
}

/// Read `<root>/act_guard_rules` (missing or unreadable → every rule armed).
pub fn load_rules(root: &Path) -> RulesFile {
    match read_small(&root.join(RULES_FILE)) {
        Some(text) => parse_rules(&text),
        None => RulesFile {
            rules: RuleSet::ALL,
            unknown: Vec::new(),
        },
    }
}

/// The armed rules under `root`; `hoop doctor` reports
/// `armed_rules(root).is_disarmed()`.
pub fn armed_rules(root: &Path) -> RuleSet {
    load_rules(root).rules
}

fn parse_release(text: &str) -> ReleaseConfig {
    let mut owners = Vec::new();
    let mut commands = Vec::new();
    for line in lines(text) {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("owner") => owners.extend(words.map(str::to_string)),
            Some("command") => {
                let c: Vec<String> = words.map(str::to_string).collect();
                if !c.is_empty() {
                    commands.push(c);
                }
            }
            _ => {}
        }
    }
    let mut cfg = ReleaseConfig {
        owners,
        ..ReleaseConfig::default()
    };
    if !commands.is_empty() {
        cfg.commands = commands;
    }
    cfg
}

/// Config files are tiny; anything larger than this is not a config file.
const CONFIG_FILE_CAP: u64 = 64 * 1024;

fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut s = String::new();
    f.take(CONFIG_FILE_CAP).read_to_string(&mut s).ok()?;
    Some(s)
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_file_semantics() {
        assert_eq!(parse_rules("").rules, RuleSet::ALL, "empty arms everything");
        assert_eq!(parse_rules("# only a comment\n").rules, RuleSet::ALL);
        assert_eq!(parse_rules("all\n").rules, RuleSet::ALL);
        assert!(parse_rules("none\n").rules.is_disarmed());
        assert!(parse_rules("rm\nnone\n").rules.is_disarmed());
        let r = parse_rules("rm\nsteal # secrets\nbogus\n");
        assert!(r.rules.contains(Rule::Rm) && r.rules.contains(Rule::Steal));
        assert!(!r.rules.contains(Rule::Destroy));
        assert_eq!(r.unknown, vec!["bogus".to_string()]);
        assert_eq!(parse_rules("bogus\n").rules, RuleSet::ALL);
    }

    #[test]
    fn missing_file_arms_everything_and_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(armed_rules(dir.path()), RuleSet::ALL);
        std::fs::write(dir.path().join(RULES_FILE), "").unwrap();
        assert_eq!(armed_rules(dir.path()), RuleSet::ALL);
        std::fs::write(dir.path().join(RULES_FILE), "none\n").unwrap();
        assert!(armed_rules(dir.path()).is_disarmed());
        std::fs::write(
            dir.path().join(RELEASE_FILE),
            "owner nova\ncommand make ship\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(PROTECTED_FILE), "trunk\n").unwrap();
        let cfg = ActConfig::load(Some(dir.path()));
        assert_eq!(cfg.release.owners, vec!["nova".to_string()]);
        assert_eq!(
            cfg.release.commands,
            vec![vec!["make".to_string(), "ship".to_string()]]
        );
        assert_eq!(cfg.protected, vec!["trunk".to_string()]);
    }
}
