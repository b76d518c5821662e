//! `rsync --delete…` (rule `rsync-delete`): deletes on the target whatever
//! the source lacks, so a wrong source or a swapped pair of paths wipes the
//! target. A dry run (`-n`) deletes nothing.

use super::Rule;
use super::paths::{Place, place};
use super::rules::Hit;
use super::shell::{Analyser, Word};

const INSTEAD_RSYNC: &str = "run rsync without --delete (add --dry-run to see what it would remove) and ask a human before deleting on the target";

/// rsync's options that delete files (on the target, or the sources).
const RSYNC_DELETING: &[&str] = &[
    "--del",
    "--delete",
    "--delete-before",
    "--delete-during",
    "--delete-delay",
    "--delete-after",
    "--delete-excluded",
    "--delete-missing-args",
    "--remove-source-files",
];

pub(super) fn verdict(a: &Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>) {
    // Deleting inside a temp dir is scratch.
    if let Some(dest) = argv[1..].iter().rfind(|w| !w.text.starts_with('-'))
        && place(a, dest) == Place::Temp
    {
        return;
    }
    let mut del = None;
    let mut dry = false;
    for w in &argv[1..] {
        let t = w.text.as_str();
        // Whole option names, as rsync matches them (`--delay-updates` is
        // not `--del`).
        let opt = t.split_once('=').map_or(t, |(o, _)| o);
        if RSYNC_DELETING.contains(&opt) {
            del = Some(t.to_string());
        } else if t == "--dry-run"
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('n'))
        {
            dry = true;
        }
    }
    if let Some(opt) = del
        && !dry
    {
        hits.push(Hit::new(
            Rule::RsyncDelete,
            format!("`rsync {opt}` deletes files on the target that are missing from the source"),
            INSTEAD_RSYNC,
        ));
    }
}
