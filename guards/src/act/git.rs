//! git in a shared work tree: staging everything (`add -A`, `commit -a`,
//! rule `git-add-all`) commits other people's work; a bare `stash pop`
//! (rule `stash-pop`) applies someone else's stash; discarding uncommitted
//! work (`reset --hard`, `checkout .`, `restore`, `clean -f`, `stash
//! drop`, `branch -D`), rewriting history ([`super::history`]) and force-
//! pushing or deleting a protected branch (rule `destroy`) lose work for
//! good. A clone under a temp dir is nobody's work tree.

use super::Rule;
use super::git_alias;
use super::history;
use super::longopt;
use super::paths::is_temp_dir;
use super::rules::Hit;
use super::shell::{Analyser, Word};

const INSTEAD_PUSH: &str = "push to your own branch (or use --force-with-lease on a branch only you use); protected branches move only through review";
const INSTEAD_DISCARD: &str = "the work tree is shared: keep uncommitted work (commit it, or `git stash push -m <note>`), and revert only files you changed yourself with `git diff` + a targeted edit";
const INSTEAD_ADD: &str = "stage the files you changed by name (`git add path/to/file …`); others' changes are in the same work tree";
const INSTEAD_POP: &str =
    "check `git stash list`, then `git stash apply stash@{N}` for the stash you made yourself";

pub(super) fn verdict(a: &Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>) {
    let (i, _) = git_alias::split_globals(argv);
    let Some(sub) = argv.get(i) else { return };
    let rest = &argv[i + 1..];
    // A long option is read as git reads it: any unique prefix (`--forc`)
    // of the subcommand's options where their list is held.
    let table = git_long_options(&sub.text);
    let flags = |long: &[&str], short: char| -> bool {
        rest.iter().take_while(|w| w.text != "--").any(|w| {
            let t = w.text.as_str();
            long.contains(&t)
                || longopt::meaning_in(t, table)
                    .is_some_and(|m| long.iter().any(|l| l.strip_prefix("--") == Some(m)))
                || (t.starts_with('-') && !t.starts_with("--") && t[1..].contains(short))
        })
    };
    if !in_temp_repo(a, argv) {
        hits.extend(history::verdict(&sub.text, rest));
    }
    match sub.text.as_str() {
        // `git stage` is `git add`.
        "add" | "stage" if add_takes_all(rest) => hits.push(Hit::new(
            Rule::GitAddAll,
            "it stages every change in the shared work tree, including other people's",
            INSTEAD_ADD,
        )),
        "commit" => {
            let mut all = false;
            let mut k = 0;
            while k < rest.len() {
                let t = rest[k].text.as_str();
                if t == "--" {
                    break;
                }
                if matches!(
                    t,
                    "-m" | "-F"
                        | "-C"
                        | "-c"
                        | "-t"
                        | "--message"
                        | "--file"
                        | "--author"
                        | "--date"
                        | "--template"
                        | "--fixup"
                        | "--squash"
                        | "--reuse-message"
                        | "--reedit-message"
                        | "--trailer"
                        | "--cleanup"
                ) {
                    k += 2;
                    continue;
                }
                if t == "--all" {
                    all = true;
                } else if t.starts_with('-') && !t.starts_with("--") {
                    for c in t[1..].chars() {
                        if c == 'a' {
                            all = true;
                            break;
                        }
                        // -m/-F/-C/-c/-t take a value; -S<keyid> and
                        // -u<mode> an attached optional one: the rest of
                        // the cluster is that value, not flags.
                        if "mFCctSu".contains(c) {
                            break;
                        }
                    }
                }
                k += 1;
            }
            if all {
                hits.push(Hit::new(
                    Rule::GitAddAll,
                    "`commit -a` stages every modified file in the shared work tree, including other people's",
                    INSTEAD_ADD,
                ));
            }
        }
        "stash" => match rest.first().map(|w| w.text.as_str()) {
            Some("pop") if !rest[1..].iter().any(|w| !w.text.starts_with('-')) => {
                hits.push(Hit::new(
                    Rule::StashPop,
                    "a bare `git stash pop` applies and drops whatever stash is on top, often someone else's",
                    INSTEAD_POP,
                ))
            }
            Some(op @ ("drop" | "clear")) => hits.push(Hit::new(
                Rule::Destroy,
                format!("`git stash {op}` throws stashed work away for good"),
                INSTEAD_DISCARD,
            )),
            _ => {}
        },
        // A clone under a temp dir is nobody's work tree.
        "reset" if in_temp_repo(a, argv) => {}
        "reset" => {
            if let Some(m) = rest.iter().find(|w| {
                matches!(
                    longopt::meaning(&w.text, GIT_RESET_LONG),
                    Some("hard" | "merge")
                )
            }) {
                hits.push(Hit::new(
                    Rule::Destroy,
                    format!(
                        "`git reset {}` discards uncommitted work in the shared work tree",
                        m.text
                    ),
                    INSTEAD_DISCARD,
                ));
            }
        }
        "checkout" => {
            let dd = rest.iter().position(|w| w.text == "--");
            let paths_after_dd = dd.is_some_and(|p| p + 1 < rest.len());
            let dot = rest.iter().any(|w| w.text == "." || w.text == "./");
            let force = flags(&["--force"], 'f');
            if paths_after_dd || dot || force {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "this checkout overwrites uncommitted changes in the shared work tree",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "switch" if flags(&["--discard-changes", "--force"], 'f') => hits.push(Hit::new(
            Rule::Destroy,
            "`git switch --discard-changes` overwrites uncommitted changes in the shared work tree",
            INSTEAD_DISCARD,
        )),
        "restore" => {
            let staged = flags(&["--staged"], 'S');
            let worktree = flags(&["--worktree"], 'W');
            if !staged || worktree {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "`git restore` without --staged overwrites uncommitted changes in the shared work tree",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "clean" if in_temp_repo(a, argv) => {}
        "clean" => {
            let force = flags(&["--force"], 'f');
            let dry = flags(&["--dry-run"], 'n');
            if force && !dry {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "`git clean -f` deletes untracked files, which may be someone else's new work",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "branch" => {
            let big_d = rest.iter().any(|w| {
                let t = w.text.as_str();
                t.starts_with('-') && !t.starts_with("--") && t.contains('D')
            });
            let del = flags(&["--delete"], 'd');
            let force = flags(&["--force"], 'f');
            if big_d || (del && force) {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "`git branch -D` deletes a branch even when its commits are merged nowhere",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "push" => push(a, rest, hits),
        _ => {}
    }
}

/// Does `git add ARGS` stage the whole work tree? `.`, `:/`, `*` do; `-A`,
/// `-u`, `--all` do unless pathspecs narrow them (`git add -u src/a.rs`);
/// a dry run (`-n`) stages nothing.
fn add_takes_all(rest: &[Word]) -> bool {
    let mut all_flag = false;
    let mut paths = Vec::new();
    let mut after = false;
    for w in rest {
        let t = w.text.as_str();
        if after || !t.starts_with('-') || t == "-" {
            paths.push(t);
        } else if t == "--" {
            after = true;
        } else if longopt::meaning(t, GIT_ADD_LONG) == Some("dry-run") {
            return false;
        } else if matches!(t, "-A" | "-u")
            || matches!(
                longopt::meaning(t, GIT_ADD_LONG),
                Some("all" | "update" | "no-ignore-removal")
            )
        {
            all_flag = true;
        } else if !t.starts_with("--") {
            if t.contains('n') {
                return false;
            }
            if t.contains('A') || t.contains('u') {
                all_flag = true;
            }
        }
    }
    let whole = |p: &str| matches!(p, "." | "./" | ":/" | ":/*" | "*" | ":(top)" | "-A");
    paths.iter().any(|p| whole(p)) || (all_flag && paths.is_empty())
}

/// Is this git command run in a repository under a temp dir (`git -C
/// /tmp/x …`, or a working directory known to be one)?
fn in_temp_repo(a: &Analyser<'_>, argv: &[Word]) -> bool {
    if let Some(k) = argv.iter().position(|w| w.text == "-C") {
        return argv.get(k + 1).is_some_and(|d| {
            !d.text.starts_with('/') && a.cwd.as_deref().is_some_and(|c| is_temp_dir(a, c))
                || is_temp_dir(a, &d.text)
        });
    }
    a.cwd.as_deref().is_some_and(|c| is_temp_dir(a, c))
}

fn push(a: &Analyser<'_>, rest: &[Word], hits: &mut Vec<Hit>) {
    let mut force = false;
    let mut delete = false;
    let mut all = false;
    let mut positional: Vec<&Word> = Vec::new();
    let mut k = 0;
    while k < rest.len() {
        let t = rest[k].text.as_str();
        if t == "--" {
            positional.extend(rest[k + 1..].iter());
            break;
        }
        if matches!(
            t,
            "-o" | "--push-option" | "--repo" | "--receive-pack" | "--exec"
        ) {
            k += 2;
            continue;
        }
        let long = longopt::meaning(t, GIT_PUSH_LONG);
        if long == Some("dry-run") {
            // A rehearsal: nothing is sent.
            return;
        }
        if matches!(long, Some("force" | "mirror")) {
            force = true;
            if long == Some("mirror") {
                all = true;
            }
        } else if long == Some("delete") {
            delete = true;
        } else if matches!(long, Some("all" | "branches")) {
            all = true;
        } else if t.starts_with("--") {
        } else if t.starts_with('-') && t.len() > 1 {
            if t.contains('f') {
                force = true;
            }
            if t.contains('d') {
                delete = true;
            }
            if t.contains('n') {
                return; // -n is --dry-run
            }
        } else {
            positional.push(&rest[k]);
        }
        k += 1;
    }
    let refspecs: Vec<&Word> = positional.iter().skip(1).copied().collect();
    // Destination branch of each refspec; None = not known statically.
    let dst = |w: &Word| -> Option<String> {
        if w.dynamic {
            return None;
        }
        let t = w.text.trim_start_matches('+');
        let d = t.rsplit_once(':').map(|(_, d)| d).unwrap_or(t);
        let d = d.strip_prefix("refs/heads/").unwrap_or(d);
        // `refs/heads/*` names every branch, the protected ones included.
        if d.is_empty() || d == "HEAD" || d == "@" || d.contains('*') {
            None
        } else {
            Some(d.to_string())
        }
    };
    let protected = |b: &Option<String>| match b {
        Some(b) => a.cfg.protected.iter().any(|p| glob(p, b)),
        None => true,
    };
    let deny = |what: String, hits: &mut Vec<Hit>| {
        hits.push(Hit::new(Rule::Destroy, what, INSTEAD_PUSH));
    };
    if force && (all || refspecs.is_empty()) {
        deny(
            "a force-push whose target branch is not named (it may rewrite a protected branch)"
                .into(),
            hits,
        );
        return;
    }
    for r in &refspecs {
        let b = dst(r);
        let forced = force || r.text.starts_with('+');
        let deleting = delete || (r.text.starts_with(':') && r.text.len() > 1);
        if (forced || deleting) && protected(&b) {
            let name = b.unwrap_or_else(|| r.text.clone());
            let verb = if deleting { "deletes" } else { "force-pushes" };
            deny(
                format!("this {verb} the protected or unknown branch `{name}`"),
                hits,
            );
            return;
        }
    }
}

/// `*` glob over a branch name (`*` matches any run, `/` included).
fn glob(pat: &str, s: &str) -> bool {
    fn m(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| m(rest, &s[i..])),
            Some((c, rest)) => s.first() == Some(c) && m(rest, &s[1..]),
        }
    }
    m(pat.as_bytes(), s.as_bytes())
}

/// Long options of the git subcommands whose options are read here (git
/// 2.47's lists, as `git <sub> --git-completion-helper-all` prints them; a
/// prefix shared with any of them is ambiguous, and git refuses it).
const GIT_RESET_LONG: &[(&str, &str)] = &[
    ("hard", "hard"),
    ("soft", "-"),
    ("mixed", "-"),
    ("merge", "merge"),
    ("keep", "-"),
    ("quiet", "-"),
    ("no-quiet", "-"),
    ("patch", "-"),
    ("intent-to-add", "-"),
    ("pathspec-from-file", "-"),
    ("pathspec-file-nul", "-"),
    ("recurse-submodules", "-"),
    ("no-recurse-submodules", "-"),
    ("refresh", "-"),
    ("no-refresh", "-"),
];
const GIT_CLEAN_LONG: &[(&str, &str)] = &[
    ("force", "force"),
    ("dry-run", "dry-run"),
    ("quiet", "-"),
    ("interactive", "-"),
    ("exclude", "-"),
];
const GIT_ADD_LONG: &[(&str, &str)] = &[
    ("all", "all"),
    ("update", "update"),
    ("no-ignore-removal", "no-ignore-removal"),
    ("ignore-removal", "-"),
    ("no-all", "-"),
    ("dry-run", "dry-run"),
    ("verbose", "-"),
    ("force", "-"),
    ("interactive", "-"),
    ("patch", "-"),
    ("edit", "-"),
    ("intent-to-add", "-"),
    ("refresh", "-"),
    ("ignore-errors", "-"),
    ("ignore-missing", "-"),
    ("sparse", "-"),
    ("chmod", "-"),
    ("renormalize", "-"),
    ("pathspec-from-file", "-"),
    ("pathspec-file-nul", "-"),
];
/// `--force-with-lease` and `--force-if-includes` replace the remote
/// branch like `--force` (the lease only checks that nobody pushed since
/// the last fetch): all three mean `force`, so `--forc` is one too.
const GIT_PUSH_LONG: &[(&str, &str)] = &[
    ("force", "force"),
    ("force-with-lease", "force"),
    ("force-if-includes", "force"),
    ("mirror", "mirror"),
    ("delete", "delete"),
    ("all", "all"),
    ("branches", "branches"),
    ("dry-run", "dry-run"),
    ("repo", "-"),
    ("tags", "-"),
    ("porcelain", "-"),
    ("recurse-submodules", "-"),
    ("thin", "-"),
    ("no-thin", "-"),
    ("receive-pack", "-"),
    ("exec", "-"),
    ("set-upstream", "-"),
    ("progress", "-"),
    ("prune", "-"),
    ("no-verify", "-"),
    ("verify", "-"),
    ("follow-tags", "-"),
    ("signed", "-"),
    ("atomic", "-"),
    ("push-option", "-"),
    ("ipv4", "-"),
    ("ipv6", "-"),
    ("quiet", "-"),
    ("verbose", "-"),
];

// git's checkout, switch and restore share groups of options (its
// builtin/checkout.c adds them group by group); each group is written once.

/// Options of `git checkout`, `switch` and `restore` alike.
const GIT_CHECKOUT_COMMON_LONG: &[(&str, &str)] = &[
    ("quiet", "-"),
    ("recurse-submodules", "-"),
    ("progress", "-"),
    ("merge", "-"),
    ("conflict", "-"),
    ("no-quiet", "-"),
    ("no-recurse-submodules", "-"),
    ("no-progress", "-"),
    ("no-merge", "-"),
    ("no-conflict", "-"),
];
/// Options of `git checkout` and `switch`, which change the branch:
/// `--force` throws local changes away.
const GIT_SWITCH_BRANCH_LONG: &[(&str, &str)] = &[
    ("guess", "-"),
    ("detach", "-"),
    ("track", "-"),
    ("force", "force"),
    ("orphan", "-"),
    ("overwrite-ignore", "-"),
    ("ignore-other-worktrees", "-"),
    ("no-guess", "-"),
    ("no-detach", "-"),
    ("no-track", "-"),
    ("no-force", "-"),
    ("no-orphan", "-"),
    ("no-overwrite-ignore", "-"),
    ("no-ignore-other-worktrees", "-"),
];
/// Options of `git checkout` and `restore`, which write paths.
const GIT_CHECKOUT_PATHS_LONG: &[(&str, &str)] = &[
    ("overlay", "-"),
    ("ours", "-"),
    ("theirs", "-"),
    ("patch", "-"),
    ("ignore-skip-worktree-bits", "-"),
    ("pathspec-from-file", "-"),
    ("pathspec-file-nul", "-"),
    ("no-overlay", "-"),
    ("no-patch", "-"),
    ("no-ignore-skip-worktree-bits", "-"),
    ("no-pathspec-from-file", "-"),
    ("no-pathspec-file-nul", "-"),
];
/// `git switch` alone: `--discard-changes` and its alias `--force` throw
/// local changes away (`--forc` is ambiguous with `--force-create`: git
/// refuses it).
const GIT_SWITCH_ONLY_LONG: &[(&str, &str)] = &[
    ("create", "-"),
    ("force-create", "-"),
    ("discard-changes", "discard-changes"),
    ("no-create", "-"),
    ("no-force-create", "-"),
    ("no-discard-changes", "-"),
];
/// `git restore` alone: without `--staged`, or with `--worktree`, it
/// overwrites the work tree.
const GIT_RESTORE_ONLY_LONG: &[(&str, &str)] = &[
    ("source", "-"),
    ("staged", "staged"),
    ("worktree", "worktree"),
    ("ignore-unmerged", "-"),
    ("no-source", "-"),
    ("no-staged", "-"),
    ("no-worktree", "-"),
    ("no-ignore-unmerged", "-"),
];
/// `git branch`: `--delete --force` (`-D`) deletes unmerged work.
const GIT_BRANCH_LONG: &[(&str, &str)] = &[
    ("verbose", "-"),
    ("quiet", "-"),
    ("track", "-"),
    ("set-upstream", "-"),
    ("set-upstream-to", "-"),
    ("unset-upstream", "-"),
    ("color", "-"),
    ("remotes", "-"),
    ("contains", "-"),
    ("no-contains", "-"),
    ("with", "-"),
    ("without", "-"),
    ("abbrev", "-"),
    ("all", "-"),
    ("delete", "delete"),
    ("move", "-"),
    ("omit-empty", "-"),
    ("copy", "-"),
    ("list", "-"),
    ("show-current", "-"),
    ("create-reflog", "-"),
    ("edit-description", "-"),
    ("force", "force"),
    ("merged", "-"),
    ("no-merged", "-"),
    ("column", "-"),
    ("sort", "-"),
    ("points-at", "-"),
    ("ignore-case", "-"),
    ("recurse-submodules", "-"),
    ("format", "-"),
    ("no-verbose", "-"),
    ("no-quiet", "-"),
    ("no-track", "-"),
    ("no-set-upstream", "-"),
    ("no-set-upstream-to", "-"),
    ("no-unset-upstream", "-"),
    ("no-color", "-"),
    ("no-abbrev", "-"),
    ("no-delete", "-"),
    ("no-move", "-"),
    ("no-omit-empty", "-"),
    ("no-copy", "-"),
    ("no-list", "-"),
    ("no-show-current", "-"),
    ("no-create-reflog", "-"),
    ("no-edit-description", "-"),
    ("no-force", "-"),
    ("no-column", "-"),
    ("no-sort", "-"),
    ("no-points-at", "-"),
    ("no-ignore-case", "-"),
    ("no-recurse-submodules", "-"),
    ("no-format", "-"),
];

/// The long options held for a git subcommand, in parts that make one
/// list (empty: exact names only).
type LongParts = &'static [&'static [(&'static str, &'static str)]];
fn git_long_options(sub: &str) -> LongParts {
    match sub {
        "reset" => &[GIT_RESET_LONG],
        "clean" => &[GIT_CLEAN_LONG],
        "add" | "stage" => &[GIT_ADD_LONG],
        "push" => &[GIT_PUSH_LONG],
        "checkout" => &[
            GIT_CHECKOUT_COMMON_LONG,
            GIT_SWITCH_BRANCH_LONG,
            GIT_CHECKOUT_PATHS_LONG,
        ],
        "switch" => &[
            GIT_CHECKOUT_COMMON_LONG,
            GIT_SWITCH_BRANCH_LONG,
            GIT_SWITCH_ONLY_LONG,
        ],
        "restore" => &[
            GIT_CHECKOUT_COMMON_LONG,
            GIT_CHECKOUT_PATHS_LONG,
            GIT_RESTORE_ONLY_LONG,
        ],
        "branch" => &[GIT_BRANCH_LONG],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The protected-branch pattern: `*` matches any run of characters,
    /// `/` and the empty run included; everything else, `?` and `[` too,
    /// matches itself only, case and all, over the whole name.
    #[test]
    fn globs() {
        let cases: &[(&str, &str, bool)] = &[
            ("main", "main", true),
            ("main", "Main", false),
            ("main", "mainline", false),
            ("main", "old-main", false),
            ("main", "", false),
            ("", "", true),
            ("", "main", false),
            ("release/*", "release/1.2", true),
            ("release/*", "release/", true),
            ("release/*", "release/1.x/hotfix", true),
            ("release/*", "release", false),
            ("release/*", "feature/x", false),
            ("release/*", "xrelease/1.2", false),
            ("*", "", true),
            ("*", "any/branch", true),
            ("*-stable", "1.0-stable", true),
            ("*-stable", "-stable", true),
            ("*-stable", "1.0-stable-old", false),
            ("v*.*", "v1.2", true),
            ("v*.*", "v12", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "a-b-c", true),
            ("a*b*c", "acb", false),
            ("a*b*c", "abcx", false),
            ("**", "x", true),
            ("release-?", "release-?", true),
            ("release-?", "release-1", false),
            ("hotfix-[0-9]", "hotfix-[0-9]", true),
            ("hotfix-[0-9]", "hotfix-1", false),
        ];
        for &(pat, name, want) in cases {
            assert_eq!(glob(pat, name), want, "glob({pat:?}, {name:?})");
        }
    }
}
