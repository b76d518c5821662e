//! Git aliases defined in the command line itself: `git -c alias.x='reset
//! --hard' x`, or `git config alias.w 'reset --hard' && git w`. Git expands
//! an alias where it is used, so the guard does too: a plain alias becomes
//! the git command it names (with the arguments that follow it), and a `!`
//! alias is shell text that goes back to the analyser. Defining an alias
//! runs nothing; using one this text did not define is not known here (it
//! lives in a config file), as before.
//!
//! Git's own rules, checked against git 2.47: alias names are
//! case-insensitive (`alias.X` serves `git x` and `git X`), the last
//! definition of a name wins, an alias may name another alias (a loop is
//! refused by git, so nothing runs), an alias named like a git command is
//! ignored (`alias.status` never replaces `git status`), and a `!` alias gets
//! its arguments appended to the shell text.

use super::exec::exec;
use super::shell::{Analyser, Cmd, Flow, Word};
use super::words::{GIT_GLOBAL_WITH_VALUE, shell_quote};

/// `git …` run by the analyser: `git config alias.NAME VALUE` is
/// remembered for the rest of the text, and a subcommand that is an alias
/// defined here (by `-c` or earlier) is replaced by what it runs, which is
/// analysed instead. True when the command was handled that way.
pub(super) fn nested(
    a: &mut Analyser<'_>,
    cmd: &Cmd,
    argv: &[Word],
    input: &Flow,
    stdin: Option<&str>,
) -> bool {
    let (i, inline) = split_globals(argv);
    let Some(sub) = argv.get(i) else {
        return false;
    };
    if sub.text == "config" {
        if let Some(d) = config_definition(&argv[i + 1..]) {
            a.git_aliases.push(d);
        }
        return false;
    }
    if sub.dynamic {
        return false;
    }
    // `-c` aliases live for this one git command (and what it runs).
    let saved = a.git_aliases.len();
    a.git_aliases.extend(inline);
    let expansion = expand(&sub.text, &a.git_aliases);
    let handled = match expansion {
        Expansion::NotAlias => false,
        Expansion::Nothing => true,
        Expansion::Git(words) => {
            let mut v: Vec<Word> = argv[..i].to_vec();
            v.extend(words.iter().map(|w| Word::lit(w)));
            v.extend_from_slice(&argv[i + 1..]);
            exec(a, cmd, &v, input, stdin);
            true
        }
        Expansion::Shell(code) => {
            let mut text = code;
            for w in &argv[i + 1..] {
                text.push(' ');
                if w.dynamic {
                    text.push_str(&format!("\"{}\"", w.text));
                } else {
                    text.push_str(&shell_quote(&w.text));
                }
            }
            a.shell(&text);
            true
        }
    };
    a.git_aliases.truncate(saved);
    handled
}

/// Git's own commands (`git --list-cmds=main`, git 2.47): an alias with one
/// of these names is ignored by git, so it never expands. Commands that are
/// not here (a `git-foo` on PATH, newer commands) are assumed to be
/// aliases when this text defines one: the stricter reading.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archimport",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout--worker",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-cache--daemon",
    "credential-store",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "daemon",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "difftool--helper",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "fsmonitor--daemon",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "hook",
    "http-backend",
    "http-fetch",
    "http-push",
    "imap-send",
    "index-pack",
    "init",
    "init-db",
    "instaweb",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-octopus",
    "merge-one-file",
    "merge-ours",
    "merge-recursive",
    "merge-recursive-ours",
    "merge-recursive-theirs",
    "merge-resolve",
    "merge-subtree",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "p4",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "pickaxe",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "quiltimport",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "remote-ext",
    "remote-fd",
    "remote-ftp",
    "remote-ftps",
    "remote-http",
    "remote-https",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-email",
    "send-pack",
    "sh-i18n--envsubst",
    "shell",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "submodule--helper",
    "svn",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-archive--writer",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "web--browse",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// How deep an alias may name another alias before the guard stops
/// following it (git stops at a loop; a real chain is one or two long).
const MAX_CHAIN: usize = 16;

/// Where the subcommand of `git GLOBAL-OPTIONS SUB …` is, and the aliases
/// its `-c alias.NAME=VALUE` options define (in order; names lowercased).
pub(super) fn split_globals(argv: &[Word]) -> (usize, Vec<(String, String)>) {
    let mut defs = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let t = argv[i].text.as_str();
        if t == "-c" {
            if let Some(d) = argv.get(i + 1).and_then(|w| definition(&w.text)) {
                defs.push(d);
            }
            i += 2;
        } else if GIT_GLOBAL_WITH_VALUE.contains(&t) {
            i += 2;
        } else if t.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    (i, defs)
}

/// `alias.NAME=VALUE` (the key case-insensitive) as (name, value).
fn definition(kv: &str) -> Option<(String, String)> {
    let (k, v) = kv.split_once('=')?;
    let name = alias_key(k)?;
    Some((name, v.to_string()))
}

/// `alias.NAME` (any case) → `name`.
fn alias_key(k: &str) -> Option<String> {
    let (section, name) = k.split_once('.')?;
    (section.eq_ignore_ascii_case("alias") && !name.is_empty()).then(|| name.to_lowercase())
}

/// Options of `git config` that read, remove or rename rather than set.
const CONFIG_NOT_SETTING: &[&str] = &[
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "--get-color",
    "--get-colorbool",
    "--unset",
    "--unset-all",
    "--rename-section",
    "--remove-section",
    "-l",
    "--list",
    "-e",
    "--edit",
];

/// Options of `git config` that take the next word as their value.
const CONFIG_WITH_VALUE: &[&str] = &[
    "-f",
    "--file",
    "--blob",
    "--type",
    "--default",
    "--comment",
    "--value",
];

/// The alias `git config … alias.NAME VALUE` (or `git config set …`,
/// `--add`, `--replace-all`) defines; `rest` is what follows `config`.
pub(super) fn config_definition(rest: &[Word]) -> Option<(String, String)> {
    let mut pos: Vec<&str> = Vec::new();
    let mut k = 0;
    while k < rest.len() {
        let t = rest[k].text.as_str();
        if CONFIG_NOT_SETTING.contains(&t) {
            return None;
        }
        if CONFIG_WITH_VALUE.contains(&t) {
            k += 2;
            continue;
        }
        if !t.starts_with('-') || t == "-" {
            pos.push(t);
        }
        k += 1;
    }
    if pos.first() == Some(&"set") {
        pos.remove(0);
    }
    match pos[..] {
        [key, value, ..] => alias_key(key).map(|n| (n, value.to_string())),
        _ => None,
    }
}

/// What using `name` runs, given the aliases defined so far (later ones
/// win).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Expansion {
    /// Not an alias this text defined (or a git command): run as written.
    NotAlias,
    /// A git command: these words replace the alias name.
    Git(Vec<String>),
    /// A `!` alias: shell text, run with the arguments appended.
    Shell(String),
    /// An alias loop: git refuses it and runs nothing.
    Nothing,
}

pub(super) fn expand(name: &str, defs: &[(String, String)]) -> Expansion {
    let lookup = |n: &str| -> Option<&str> {
        if GIT_COMMANDS.contains(&n) {
            return None;
        }
        let n = n.to_lowercase();
        defs.iter()
            .rev()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.as_str())
    };
    let Some(mut value) = lookup(name) else {
        return Expansion::NotAlias;
    };
    let mut words: Vec<String> = Vec::new();
    for _ in 0..MAX_CHAIN {
        if let Some(code) = value.strip_prefix('!') {
            if !words.is_empty() {
                // `alias.a=b`, `alias.b=!cmd`: git runs the shell text with
                // a's remaining words as arguments.
                return Expansion::Shell(format!("{code} {}", words.join(" ")));
            }
            return Expansion::Shell(code.to_string());
        }
        let mut vw = split_value(value);
        if vw.is_empty() {
            return Expansion::Nothing;
        }
        vw.extend(words);
        words = vw;
        match lookup(&words[0]) {
            Some(next) => {
                words.remove(0);
                value = next;
            }
            None => return Expansion::Git(words),
        }
    }
    Expansion::Nothing
}

/// An alias value split into words the way git does (`split_cmdline`):
/// blanks separate, single and double quotes group, a backslash escapes.
fn split_value(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut any = false;
    let mut quote: Option<char> = None;
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                any = true;
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), _) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            _ => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(d: &[(&str, &str)]) -> Vec<(String, String)> {
        d.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn expansion_follows_gits_rules() {
        let d = defs(&[("x", "reset --hard"), ("status", "reset --hard")]);
        assert_eq!(
            expand("x", &d),
            Expansion::Git(vec!["reset".into(), "--hard".into()])
        );
        assert_eq!(
            expand("X", &d),
            Expansion::Git(vec!["reset".into(), "--hard".into()])
        );
        assert_eq!(
            expand("status", &d),
            Expansion::NotAlias,
            "git commands win"
        );
        assert_eq!(expand("y", &d), Expansion::NotAlias);
        let chain = defs(&[("a", "b -v"), ("b", "reset --hard")]);
        assert_eq!(
            expand("a", &chain),
            Expansion::Git(vec!["reset".into(), "--hard".into(), "-v".into()])
        );
        let l = defs(&[("a", "b"), ("b", "a")]);
        assert_eq!(expand("a", &l), Expansion::Nothing, "a loop runs nothing");
        let last = defs(&[("w", "reset --hard"), ("w", "status")]);
        assert_eq!(expand("w", &last), Expansion::Git(vec!["status".into()]));
        let bang = defs(&[("n", "!git clean -fdx")]);
        assert_eq!(
            expand("n", &bang),
            Expansion::Shell("git clean -fdx".into())
        );
    }

    #[test]
    fn values_split_like_git() {
        assert_eq!(
            split_value(r#"log --format='%h %s' "a b" c\ d"#),
            vec!["log", "--format=%h %s", "a b", "c d"]
        );
        assert_eq!(split_value("  "), Vec::<String>::new());
        assert_eq!(split_value("x ''"), vec!["x", ""]);
    }

    #[test]
    fn definitions_inline_and_by_config() {
        let w = |s: &str| s.split(' ').map(Word::lit).collect::<Vec<_>>();
        let (i, d) = split_globals(&w("git -C repo -c ALIAS.X=status -c color.ui=never x"));
        assert_eq!(i, 7);
        assert_eq!(d, defs(&[("x", "status")]));
        assert_eq!(
            config_definition(&w("--global alias.co checkout")),
            Some(("co".into(), "checkout".into()))
        );
        assert_eq!(
            config_definition(&w("set alias.co checkout")),
            Some(("co".into(), "checkout".into()))
        );
        assert_eq!(config_definition(&w("--get alias.co")), None);
        assert_eq!(config_definition(&w("--unset alias.co")), None);
        assert_eq!(config_definition(&w("alias.co")), None, "a read");
        assert_eq!(config_definition(&w("user.name bot")), None);
    }
}
