//! `rm -r`: recursive removal outside the temp dirs loses work nobody can
//! get back (rule `rm`); of the root, a home or a system directory it is
//! irrecoverable damage (rule `destroy`). [`rm_targets`] is the one judgement
//! of a list of removed paths, also used by `find -delete` and mass deletion.

use super::Rule;
use super::caches;
use super::longopt;
use super::paths::{Place, place};
use super::rules::Hit;
use super::shell::{Analyser, Word};

pub(super) const INSTEAD_RM: &str = "delete the specific files by name without -r, or move the directory under /tmp and remove it there; if a whole tree really must go, ask a human";
const INSTEAD_CACHE: &str = "run the removal from the project's directory in a git work tree, naming only the cache folder (`rm -rf node_modules`), or use the tool's own clean command (`cargo clean`, `npm ci`)";
const INSTEAD_RM_ROOT: &str = "never remove the root, a home directory or a system directory; name the exact files you created";

pub(super) fn verdict(a: &Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>) {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut after = false;
    for w in &argv[1..] {
        let t = w.text.as_str();
        if after || w.dynamic && !t.starts_with('-') {
            targets.push(w.clone());
        } else if t == "--" {
            after = true;
        } else if t.starts_with("--") {
            if longopt::meaning(t, RM_LONG) == Some("recursive") {
                recursive = true;
            }
        } else if t.starts_with('-') && t.len() > 1 {
            if t.contains('r') || t.contains('R') {
                recursive = true;
            }
        } else {
            targets.push(w.clone());
        }
    }
    if recursive {
        rm_targets(a, &targets, "rm -r", hits);
        return;
    }
    // `rm *`, `rm -f dir/*`: every file of a directory, the harm of
    // `rm -r` on its files; a narrowing pattern (`*.log`) names a kind.
    let every: Vec<Word> = targets
        .into_iter()
        .filter(|w| {
            w.text
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .is_some_and(caches::takes_every_name)
        })
        .collect();
    rm_targets(a, &every, "rm with a glob that takes every name", hits);
}

/// GNU rm's long options (what a prefix may be read as).
const RM_LONG: &[(&str, &str)] = &[
    ("force", "force"),
    ("interactive", "interactive"),
    ("one-file-system", "one-file-system"),
    ("no-preserve-root", "no-preserve-root"),
    ("preserve-root", "preserve-root"),
    ("recursive", "recursive"),
    ("dir", "dir"),
    ("verbose", "verbose"),
    ("help", "help"),
    ("version", "version"),
];

pub(super) fn rm_targets(a: &Analyser<'_>, targets: &[Word], how: &str, hits: &mut Vec<Hit>) {
    for t in targets {
        let shown = if t.text.is_empty() {
            "(unknown paths)"
        } else {
            t.text.as_str()
        };
        match place(a, t) {
            Place::Vital => {
                hits.push(Hit::new(
                    Rule::Destroy,
                    format!("{how} of `{shown}`, which is the root, a home directory or a system directory"),
                    INSTEAD_RM_ROOT,
                ));
                hits.push(Hit::new(
                    Rule::Rm,
                    format!("{how} of `{shown}`, outside the temp dirs"),
                    INSTEAD_RM,
                ));
                return;
            }
            Place::Other => match caches::candidate(a, t) {
                Some(c) if a.cfg.untracked_caches.contains(&c) => {}
                Some(c) if a.collect_caches => {
                    let mut caches = a.caches.borrow_mut();
                    if !caches.contains(&c) {
                        caches.push(c);
                    }
                }
                Some(_) => hits.push(Hit::new(
                    Rule::Rm,
                    format!(
                        "{how} of `{shown}`, outside the temp dirs; a regenerable cache folder is removed only when git tracks no file under it"
                    ),
                    INSTEAD_CACHE,
                )),
                None => hits.push(Hit::new(
                    Rule::Rm,
                    format!("{how} of `{shown}`, outside the temp dirs (/tmp, /var/tmp, $TMPDIR)"),
                    INSTEAD_RM,
                )),
            },
            Place::Temp => {}
        }
    }
}
