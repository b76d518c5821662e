//! Mass deletion without `-r`: `find … -exec rm {} \;`, `find … | xargs rm`
//! and `xargs rm < list` remove every file in a list nobody has read, which
//! is the harm of `find -delete`; they are judged like it, over the same
//! roots (the `rm` rule, `destroy` when a root is vital). Scratch stays
//! scratch whichever command removes it: a `find` rooted at a temp dir
//! itself (`find /tmp -name 'x*' -exec rm -rf {} +`) only reaches what lies
//! inside it.

use super::rules::{Hit, Place, base, place, rm_targets};
use super::shell::{Analyser, Word};
use super::wrappers::{self, Peeled};

/// Commands that remove the files named on their command line.
const DELETERS: &[&str] = &["rm", "unlink"];

/// The verdict on `sub` (the command `find -exec` or `xargs` runs) removing
/// every path of `items`; None when `sub` removes nothing or the items are
/// all scratch.
pub(super) fn verdict(a: &Analyser<'_>, sub: &[Word], items: &[Word], via: &str) -> Option<Hit> {
    // `xargs sudo rm`, `-exec nice rm {} +`: the wrappers pass the argv on.
    let mut sub = sub;
    while let Some(first) = sub.first() {
        match wrappers::peel(sub, base(first)) {
            Peeled::At(k) if k > 0 && k <= sub.len() => sub = &sub[k..],
            _ => break,
        }
    }
    let name = sub.first().map(base)?;
    if !DELETERS.contains(&name) {
        return None;
    }
    let mut hits = Vec::new();
    rm_targets(
        a,
        items,
        &format!("{via} {name} (every file in the list, like find -delete)"),
        &mut hits,
    );
    super::rules::pick(a, hits)
}

/// A `find` root as the place of what `find` lists under it: a root that
/// is a temp dir itself (`/tmp`, `$TMPDIR`) yields paths inside it.
pub(super) fn scratch_root(a: &Analyser<'_>, root: &Word) -> Word {
    let inside = Word {
        text: format!("{}/*", root.text.trim_end_matches('/')),
        dynamic: root.dynamic,
    };
    if place(a, root) != Place::Temp && place(a, &inside) == Place::Temp {
        inside
    } else {
        root.clone()
    }
}
