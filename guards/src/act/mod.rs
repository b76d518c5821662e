//! act_guard: the verdict on one shell command line that an agent is about to
//! run. The command is parsed with tree-sitter-bash (see ARCHITECTURE.md for
//! why that parser); every simple command that would really RUN — including
//! those inside `bash -c`, `eval`, heredocs fed to a shell, `$(…)` and
//! wrappers (one table, [`wrappers`]: `sudo`, `docker exec`, `time`, …) — is checked against the named
//! rules. Text that only mentions a command (a quoted argument, an `echo`, a
//! heredoc fed to `cat`) is data and never checked as a command.
//!
//! [`check`] is a pure function of the command text and an [`ActConfig`];
//! [`ActConfig::load`] is the only place that reads configuration.

mod caches;
mod code;
mod config;
mod copies;
mod decode;
mod disks;
mod exec;
mod expand;
mod flutter;
mod git;
mod git_alias;
mod history;
mod interp;
mod longopt;
mod mass_delete;
mod overwrite;
mod paths;
mod release;
mod rm;
mod rsync;
mod rules;
mod shell;
mod sql;
mod steal;
pub mod table;
mod words;
mod wrappers;

use std::fmt;

pub use config::{
    ActConfig, DEFAULT_PROTECTED, DEFAULT_RELEASE_COMMANDS, PROTECTED_FILE, RELEASE_FILE,
    RULES_FILE, ReleaseConfig, RulesFile, armed_rules, load_rules, parse_rules,
};

/// One named rule. The names are what `~/.hoop/act_guard_rules` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `rsync --delete…` (anything but a dry run).
    RsyncDelete,
    /// `git add .` / `-A` / `--all` / `-u` (without a narrowing pathspec),
    /// `git stage` alike, `git commit -a`: the team shares work trees, so
    /// staging everything commits other people's work.
    GitAddAll,
    /// A bare `git stash pop`: pops whatever stash is on top, often someone
    /// else's.
    StashPop,
    /// `flutter run` aimed at a physical device id.
    FlutterRunDevice,
    /// Release / upload commands, allowed only for the release owner.
    Release,
    /// Recursive removal outside the system temp dirs.
    Rm,
    /// Irrecoverable damage: `rm -r /` (and `find -exec rm` / `xargs rm` over
    /// vital roots), files shredded or truncated in place, disks wiped,
    /// partitioned or written to, force-push (`--force-with-lease` too) to
    /// a protected branch, history rewrites, discarding uncommitted work,
    /// SQL `DROP` / `FLUSHALL` on a client's command line or stdin.
    Destroy,
    /// Secrets leaving the machine.
    Steal,
}

impl Rule {
    /// Every rule, in the order a single command is checked against them
    /// (the most specific first, so a block names the gravest rule).
    pub const ALL: [Rule; 8] = [
        Rule::Destroy,
        Rule::Steal,
        Rule::Rm,
        Rule::RsyncDelete,
        Rule::GitAddAll,
        Rule::StashPop,
        Rule::FlutterRunDevice,
        Rule::Release,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::RsyncDelete => "rsync-delete",
            Rule::GitAddAll => "git-add-all",
            Rule::StashPop => "stash-pop",
            Rule::FlutterRunDevice => "flutter-run-device",
            Rule::Release => "release",
            Rule::Rm => "rm",
            Rule::Destroy => "destroy",
            Rule::Steal => "steal",
        }
    }

    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == name)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The set of armed rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleSet(u16);

impl RuleSet {
    pub const NONE: RuleSet = RuleSet(0);
    pub const ALL: RuleSet = RuleSet(0xff);

    pub fn contains(self, r: Rule) -> bool {
        self.0 & r.bit() != 0
    }
    pub fn insert(&mut self, r: Rule) {
        self.0 |= r.bit();
    }
    /// True when no rule is armed (only an explicit `none` does this).
    pub fn is_disarmed(self) -> bool {
        self.0 == 0
    }
    pub fn rules(self) -> impl Iterator<Item = Rule> {
        Rule::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

/// Why a command was blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub rule: Rule,
    /// The exact sub-command that triggered the rule, as written.
    pub command: String,
    /// What it would do.
    pub why: String,
    /// What to do instead.
    pub instead: String,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cmd = one_line(&self.command, 200);
        write!(
            f,
            "hoop act_guard blocked this command (rule `{}`): `{}` — {}. Instead: {}",
            self.rule, cmd, self.why, self.instead
        )
    }
}

/// The decision on one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Allowed, but (part of) the text could not be parsed; the caller logs it.
    Unparsed(String),
    Block(Block),
    /// Refused without a rule: too complex to check (fail closed).
    Unchecked(String),
}

impl Verdict {
    /// Does the command get refused (by a rule, or unchecked)?
    pub fn is_block(&self) -> bool {
        matches!(self, Verdict::Block(_) | Verdict::Unchecked(_))
    }
    pub fn block(&self) -> Option<&Block> {
        match self {
            Verdict::Block(b) => Some(b),
            _ => None,
        }
    }
}

/// The verdict on `command` under `cfg`. Never panics on any input (a panic
/// here would be a bug; the hook shell turns it into a fail-closed block).
pub fn check(command: &str, cfg: &ActConfig) -> Verdict {
    if cfg.rules.is_disarmed() {
        return Verdict::Allow;
    }
    shell::analyse(command, cfg, rules::run)
}

/// The regenerable cache folders (paths relative to `cfg.cwd`) that are
/// the only thing blocking `command`: the hook shell asks git about these
/// (`crate::cache_facts`) and checks again with
/// [`ActConfig::untracked_caches`]. Empty when no cache folder is involved
/// or something else blocks anyway, so that no git process starts then.
pub fn cache_candidates(command: &str, cfg: &ActConfig) -> Vec<String> {
    if cfg.rules.is_disarmed() {
        return Vec::new();
    }
    match shell::analyse_collecting(command, cfg, rules::run) {
        (Verdict::Allow | Verdict::Unparsed(_), paths) => paths,
        _ => Vec::new(),
    }
}

/// Collapse whitespace runs and cut to `max` characters, for messages.
fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 3));
    let mut n = 0;
    for w in s.split_whitespace() {
        if n > 0 {
            out.push(' ');
        }
        for c in w.chars() {
            if n >= max {
                out.push('…');
                return out;
            }
            out.push(c);
            n += 1;
        }
        n += 1;
    }
    out
}
