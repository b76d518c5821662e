//! The one attribution rule: which of Claude Code's transcript records
//! belong to a hoop home (an account). The sentinel's usage snapshot
//! (`hoop_sentinel::usage`) and `hoop usage home` both decide with it.
//!
//! **Where to look** (`hoop_sentinel::usage::account_roots`): the Claude
//! directories of the home's agent (its `sentinel.json` environment over the
//! daemon's, through [`crate::claude_dirs`]) and those of each of the
//! home's workers' scratch HOMEs. Homes usually share the machine user's
//! `~/.claude` with each other and with the operator's own sessions, so
//! where a transcript lies says little.
//!
//! **What belongs** ([`home_of`]): a record whose working directory (the
//! `cwd` Claude Code writes on it, the physical path) is
//! - the home's working directory `<root>/<home>/work` or below it — the
//!   home's own turns and its patrols, which the agent always runs there —
//!   or
//! - below `<root>/<home>/workers/` — a worker's scratch directories.
//!
//! Nothing else: the operator's sessions, another home's, a record without
//! a cwd. The root is compared as given and resolved ([`hoop_roots`]),
//! since Claude Code records resolved paths.
//!
//! Record by record, not file by file: one session file never mixes homes
//! (its cwd is fixed at start), and an agent that `cd`s inside its working
//! directory stays its home's.

use std::path::{Component, Path, PathBuf};

use hoop_core::home::Home;

/// The home a record's `cwd` belongs to under one of `roots`, if any.
pub fn home_of(cwd: &str, roots: &[PathBuf]) -> Option<String> {
    let cwd = Path::new(cwd);
    if !cwd.is_absolute() || cwd.components().any(|c| c == Component::ParentDir) {
        return None;
    }
    for root in roots {
        let Ok(rest) = cwd.strip_prefix(root) else {
            continue;
        };
        let Some(Component::Normal(name)) = rest.components().next() else {
            continue;
        };
        let Ok(home) = Home::new(root, &name.to_string_lossy()) else {
            continue;
        };
        let workers = home.workers_dir();
        let theirs = cwd.starts_with(home.workdir())
            || (cwd.starts_with(&workers) && cwd != workers.as_path());
        if theirs {
            return Some(home.name);
        }
    }
    None
}

/// The roots to match homes against: the root as given and resolved.
pub fn hoop_roots(root: &Path) -> Vec<PathBuf> {
    let mut v = vec![root.to_path_buf()];
    if let Ok(c) = root.canonicalize()
        && c != root
    {
        v.push(c);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_as_a_table() {
        let roots = vec![PathBuf::from("/srv/hoop")];
        let cases: &[(&str, Option<&str>)] = &[
            // The home's turns and patrols.
            ("/srv/hoop/alice/work", Some("alice")),
            ("/srv/hoop/alice/work/sub/dir", Some("alice")),
            // Its workers' scratch directories.
            ("/srv/hoop/alice/workers/12/work", Some("alice")),
            ("/srv/hoop/alice/workers/12/work/deep", Some("alice")),
            ("/srv/hoop/alice/workers/12/home", Some("alice")),
            // Not the home's agent: its state directory, other folders.
            ("/srv/hoop/alice/workers", None),
            ("/srv/hoop/alice", None),
            ("/srv/hoop/alice/logs", None),
            ("/srv/hoop/alice/workx", None),
            ("/srv/hoop/alice/work/../../bob/work", None),
            // Another root that merely shares a prefix, the operator's own
            // sessions, a home name hoop would refuse, no cwd.
            ("/srv/hoopx/alice/work", None),
            ("/home/ops/project", None),
            ("/srv/hoop/.hidden/work", None),
            ("/srv/hoop", None),
            ("srv/hoop/alice/work", None),
            ("", None),
        ];
        for (cwd, want) in cases {
            assert_eq!(home_of(cwd, &roots).as_deref(), *want, "{cwd}");
        }
        // Each of several roots counts (as given and resolved).
        let two = vec![PathBuf::from("/a"), PathBuf::from("/real/a")];
        assert_eq!(home_of("/real/a/bob/work", &two).as_deref(), Some("bob"));
        assert_eq!(home_of("/a/bob/work", &two).as_deref(), Some("bob"));
    }
}
