//! Words of shell text that the parser, the wrappers and the rules all need
//! to read or write the same way: what a fresh `$(mktemp …)` stands for, how
//! a word is quoted back into shell text, which of git's global options
//! take a value. Nothing here judges a command.

/// Git's global options that take their value as the next word (read by
/// the git rules and by the wrappers that peel `git … submodule foreach`).
pub(super) const GIT_GLOBAL_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
];

/// What a fresh `$(mktemp -d)` stands for: some new directory under the
/// temp dir (the `rm` rule allows what lies there).
pub(super) const FRESH_TEMP: &str = "$TMPDIR/mktemp.XXXXXXXXXX";

/// Is `t` exactly the output of `mktemp` in the default temp dir
/// (`$(mktemp -d)`, `` `mktemp -d -t x.XXXX` ``)? GNU mktemp makes a
/// TEMPLATE relative to the working directory unless `-t`/`--tmpdir` is
/// given, and `-p DIR` / `--tmpdir=DIR` put it elsewhere: those do not count.
pub(super) fn is_mktemp(t: &str) -> bool {
    let inner = t
        .strip_prefix("$(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| t.strip_prefix('`').and_then(|r| r.strip_suffix('`')));
    let Some(inner) = inner else { return false };
    let mut words = inner.split_whitespace();
    if words.next() != Some("mktemp") {
        return false;
    }
    let (mut in_tmp, mut template) = (false, false);
    for x in words {
        if x == "-p" || x.starts_with("--tmpdir=") || (x.starts_with("-p") && !x.starts_with("--"))
        {
            return false;
        }
        if x == "-t"
            || x == "--tmpdir"
            || (x.starts_with('-') && !x.starts_with("--") && x.contains('t'))
        {
            in_tmp = true;
        } else if !x.starts_with('-') {
            if x.contains('/') || x.contains('$') {
                return false;
            }
            template = true;
        }
    }
    in_tmp || !template
}

/// `s` quoted for a shell, so that parsing it again gives back one word.
pub(super) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,~".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}
