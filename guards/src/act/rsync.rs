//! `rsync --delete…` (rule `rsync-delete`): deletes on the target whatever
//! the source lacks, so a wrong source or a swapped pair of paths wipes the
//! target. A dry run (`-n`) deletes nothing.

use super::Rule;
use super::longopt;
use super::paths::{Place, place};
use super::rules::Hit;
use super::shell::{Analyser, Word};

const INSTEAD_RSYNC: &str = "run rsync without --delete (add --dry-run to see what it would remove) and ask a human before deleting on the target";

/// rsync's long options, the deleting ones read as `delete`. rsync's own
/// parser (popt) takes only whole names, but macOS's openrsync parses with
/// getopt_long, which takes any unique prefix (`--delet`); whole names
/// still never match a longer one (`--delay-updates` is not `--del`).
const RSYNC_LONG: &[(&str, &str)] = &[
    ("del", "delete"),
    ("delete", "delete"),
    ("delete-before", "delete"),
    ("delete-during", "delete"),
    ("delete-delay", "delete"),
    ("delete-after", "delete"),
    ("delete-excluded", "delete"),
    ("delete-missing-args", "delete"),
    ("remove-source-files", "delete"),
    ("remove-sent-files", "delete"),
    ("dry-run", "dry-run"),
    ("delay-updates", "-"),
    ("devices", "-"),
    ("debug", "-"),
    ("dirs", "-"),
    ("dparam", "-"),
    ("daemon", "-"),
    ("remote-option", "-"),
    ("recursive", "-"),
    ("relative", "-"),
    ("read-batch", "-"),
    ("rsh", "-"),
    ("rsync-path", "-"),
    ("verbose", "-"),
    ("version", "-"),
    ("archive", "-"),
    ("exclude", "-"),
    ("include", "-"),
    ("filter", "-"),
    ("checksum", "-"),
    ("compress", "-"),
    ("progress", "-"),
    ("partial", "-"),
    ("human-readable", "-"),
    ("itemize-changes", "-"),
    ("stats", "-"),
    ("links", "-"),
    ("perms", "-"),
    ("times", "-"),
    ("group", "-"),
    ("owner", "-"),
    ("update", "-"),
    ("inplace", "-"),
    ("append", "-"),
    ("backup", "-"),
    ("backup-dir", "-"),
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
        let long = longopt::meaning(t, RSYNC_LONG);
        if long == Some("delete") {
            del = Some(t.to_string());
        } else if long == Some("dry-run")
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
