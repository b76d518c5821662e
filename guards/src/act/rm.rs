//! `rm -r`: recursive removal outside the temp dirs loses work nobody can
//! get back (rule `rm`); of the root, a home or a system directory it is
//! irrecoverable damage (rule `destroy`). [`rm_targets`] is the one judgement
//! of a list of removed paths, also used by `find -delete` and mass deletion.

use super::Rule;
use super::paths::{Place, place};
use super::rules::Hit;
use super::shell::{Analyser, Word};

const INSTEAD_RM: &str = "delete the specific files by name without -r, or move the directory under /tmp and remove it there; if a whole tree really must go, ask a human";
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
        } else if let Some(long) = t.strip_prefix("--") {
            if long == "recursive" {
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
    }
}

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
            Place::Other => hits.push(Hit::new(
                Rule::Rm,
                format!("{how} of `{shown}`, outside the temp dirs (/tmp, /var/tmp, $TMPDIR)"),
                INSTEAD_RM,
            )),
            Place::Temp => {}
        }
    }
}
