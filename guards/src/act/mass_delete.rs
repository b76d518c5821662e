//! Mass deletion without `-r`: `find … -exec rm {} \;`, `find … | xargs rm`
//! and `xargs rm < list` remove every file in a list nobody has read, which
//! is the harm of `find -delete`; they are judged like it, over the same
//! roots (the `rm` rule, `destroy` when a root is vital). Scratch stays
//! scratch whichever command removes it: a `find` rooted at a temp dir
//! itself (`find /tmp -name 'x*' -exec rm -rf {} +`) only reaches what lies
//! inside it.

use super::exec;
use super::paths::{Place, place};
use super::rm::rm_targets;
use super::rules::{Hit, base, pick};
use super::shell::{Analyser, Cmd, Flow, Word};
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
    pick(a, hits)
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

/// `find ROOTS … -delete | -exec CMD {} ;`: returns the roots (what a
/// following `xargs` receives, approximately).
pub(super) fn find(a: &mut Analyser<'_>, cmd: &Cmd, argv: &[Word]) -> Vec<Word> {
    let mut j = 1;
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if matches!(t, "-H" | "-L" | "-P") || t.starts_with("-O") {
            j += 1;
        } else if t == "-D" {
            j += 2;
        } else {
            break;
        }
    }
    let mut roots = Vec::new();
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if t.starts_with('-') || matches!(t, "(" | "!" | ")" | "\\(") {
            break;
        }
        roots.push(argv[j].clone());
        j += 1;
    }
    if roots.is_empty() {
        roots.push(Word::lit("."));
    }
    let roots: Vec<Word> = roots.iter().map(|r| scratch_root(a, r)).collect();
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if t == "-delete" {
            let mut hits = Vec::new();
            rm_targets(a, &roots, "find … -delete", &mut hits);
            if let Some(h) = pick(a, hits) {
                a.block(h.into_block(&cmd.span));
                return roots;
            }
        } else if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = j + 1;
            let mut end = start;
            while end < argv.len() && !matches!(argv[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            let sub = &argv[start..end.min(argv.len())];
            if let Some(h) = verdict(a, sub, &roots, "find … -exec") {
                a.block(h.into_block(&cmd.span));
                return roots;
            }
            for root in &roots {
                let replaced: Vec<Word> = sub
                    .iter()
                    .map(|w| {
                        if w.text.contains("{}") {
                            Word {
                                text: w.text.replace("{}", &root.text),
                                dynamic: w.dynamic || root.dynamic,
                            }
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                exec::exec(a, cmd, &replaced, &Flow::default(), None);
                if a.hit.is_some() {
                    return roots;
                }
            }
            j = end;
        }
        j += 1;
    }
    roots
}
