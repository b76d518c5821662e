//! Rewriting git history: `filter-branch`, `filter-repo`, `reflog expire`
//! to now, `gc --prune=now`, `prune`, `update-ref -d refs/heads/…`. Each
//! rewrites or deletes commits, or throws away the reflog and the loose
//! objects that are the only way back after a mistake; in the shared
//! repository that is `destroy`. In a clone under a temp dir it is nobody
//! else's history and passes (the caller decides that). `git submodule
//! foreach CMD` is a wrapper (`wrappers.rs`): CMD meets every rule there.

use super::Rule;
use super::rules::Hit;
use super::shell::Word;

const INSTEAD: &str = "history and the reflog are how the team gets work back; rewrite in a fresh clone under /tmp and ask a human to review and push it, or leave the objects to git's own expiry";

/// Expiry times that mean "everything, now".
const NOW: &[&str] = &["now", "all", "0"];

/// The verdict on `git SUB REST…` (global options already skipped).
pub(super) fn verdict(sub: &str, rest: &[Word]) -> Option<Hit> {
    let opts: Vec<&str> = rest
        .iter()
        .map(|w| w.text.as_str())
        .take_while(|t| *t != "--")
        .collect();
    let has = |names: &[&str]| opts.iter().any(|t| names.contains(t));
    if has(&["--help", "-h"]) {
        return None;
    }
    let why = match sub {
        "filter-branch" => "`git filter-branch` rewrites every commit it touches".to_string(),
        "filter-repo" if !has(&["--analyze", "--dry-run"]) => {
            "`git filter-repo` rewrites the repository's whole history".to_string()
        }
        "reflog" if opts.first() == Some(&"expire") && !has(&["--dry-run", "-n"]) => {
            let now = opts.iter().any(|t| {
                ["--expire=", "--expire-unreachable="]
                    .iter()
                    .any(|p| t.strip_prefix(p).is_some_and(|v| NOW.contains(&v)))
            });
            if !now {
                return None;
            }
            "`git reflog expire` to now throws away the reflog, the record that recovers reset or dropped commits".to_string()
        }
        "gc" if opts
            .iter()
            .any(|t| t.strip_prefix("--prune=").is_some_and(|v| NOW.contains(&v))) =>
        {
            "`git gc --prune=now` deletes unreachable commits at once, before they can be recovered"
                .to_string()
        }
        "prune"
            if !has(&["--dry-run", "-n"])
                && !opts.iter().any(|t| {
                    t.strip_prefix("--expire=")
                        .is_some_and(|v| !NOW.contains(&v))
                }) =>
        {
            "`git prune` deletes every unreachable commit now, before it can be recovered"
                .to_string()
        }
        "update-ref" if has(&["-d"]) => {
            let branch = opts.iter().find(|t| t.starts_with("refs/heads/"))?;
            format!(
                "`git update-ref -d {branch}` deletes the branch without any check that its commits are merged"
            )
        }
        _ => return None,
    };
    Some(Hit::new(Rule::Destroy, why, INSTEAD))
}
