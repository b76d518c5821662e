//! Regenerable build and cache folders (`rm -rf node_modules`, `rm -rf
//! target`, `rm -rf __pycache__`): removing one loses nothing a build or an
//! install does not make again, so it is allowed when BOTH hold:
//!
//! - the folder's name is in [`CACHE_NAMES`] (or the path lies inside such
//!   a folder, `target/debug`) (each with why it is
//!   regenerable), spelled as a plain path inside the command's working
//!   directory (no `..`, no `~`, no variable, no absolute path), and nothing
//!   ran before it in the line but `cd` into a plain subdirectory and
//!   commands that create nothing (a link made earlier in the same line
//!   would be invisible to the check below);
//! - git tracks no file under it, and no component of its path is a
//!   symbolic link. That is a fact about the disk, gathered by the hook
//!   shell (`crate::cache_facts`, one `git ls-files`) and handed in as
//!   [`super::ActConfig::untracked_caches`]; without it the removal stays
//!   blocked (fail closed), which is what the table shows.
//!
//! A `build/` that holds tracked sources therefore stays protected, and so
//! does a cache name outside the work tree (`~/node_modules/..`,
//! `/srv/app/node_modules`).

use super::paths::normalise;
use super::shell::{Analyser, Word};

/// Folder names that only hold what a tool regenerates, and why.
pub(super) const CACHE_NAMES: &[(&str, &str)] = &[
    (
        "node_modules",
        "npm, yarn and pnpm install it again from package.json and the lock file",
    ),
    ("target", "cargo's (and maven's) build output"),
    ("__pycache__", "CPython's bytecode, written again on import"),
    (".pytest_cache", "pytest's cache of the last run"),
    (".mypy_cache", "mypy's incremental cache"),
    (".ruff_cache", "ruff's cache"),
    (".next", "Next.js build output"),
    (".nuxt", "Nuxt build output"),
    (".turbo", "Turborepo's task cache"),
    (".parcel-cache", "Parcel's cache"),
    (".svelte-kit", "SvelteKit's generated output"),
    (".angular", "the Angular CLI's cache"),
    (
        ".dart_tool",
        "Dart and Flutter tool output, rebuilt by `pub get`",
    ),
    (".tox", "tox's virtualenvs, recreated on the next run"),
    (".nox", "nox's virtualenvs, recreated on the next run"),
    ("dist", "a build's packaged output"),
    ("build", "a build's output"),
    (
        "coverage",
        "coverage reports, written again by the test run",
    ),
    ("htmlcov", "coverage.py's HTML report"),
    (
        "*.egg-info",
        "setuptools metadata, written again by `pip install -e` or a build",
    ),
];

/// Commands that may run earlier in the line without spoiling the check:
/// they create no file, link or directory that the facts gathered before
/// the line ran would miss.
const CREATE_NOTHING: &[&str] = &[
    "cd", "pushd", "echo", "printf", "pwd", "true", ":", "ls", "du",
];

pub(super) fn creates_nothing(name: &str) -> bool {
    CREATE_NOTHING.contains(&name)
}

/// Is `name` (one path component) a cache folder's name?
fn is_cache_name(name: &str) -> bool {
    CACHE_NAMES.iter().any(|(n, _)| match n.strip_prefix('*') {
        // `*.egg-info` as written, or one literal `foo.egg-info`.
        Some(suffix) => {
            name == *n || (name.ends_with(suffix) && !has_glob(name) && name.len() > suffix.len())
        }
        None => name == *n,
    })
}

fn has_glob(c: &str) -> bool {
    c.contains(['*', '?', '[', '{'])
}

/// A component that takes every name of its directory (`*`, `.*`, `*.*`).
pub(super) fn takes_every_name(c: &str) -> bool {
    c.contains('*') && c.chars().all(|ch| matches!(ch, '*' | '?' | '.'))
}

/// The cache folder `w` removes, as a path relative to the payload's
/// working directory (what `cache_facts` asks git about), or None when
/// the target is not a plain cache path inside it.
pub(super) fn candidate(a: &Analyser<'_>, w: &Word) -> Option<String> {
    let root = a.cfg.cwd.as_deref().filter(|c| c.starts_with('/'))?;
    let t = w.text.as_str();
    if a.ran_before_rm || w.dynamic || t.starts_with(['/', '~']) || t.contains(['$', '`', '\\']) {
        return None;
    }
    let raw: Vec<&str> = t
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if raw.contains(&"..") {
        return None;
    }
    // `node_modules/*` empties the folder: the same folder.
    let mut n = raw.len();
    while n > 0 && takes_every_name(raw[n - 1]) {
        n -= 1;
    }
    // A cache folder, or a path inside one (`target/debug`).
    let (last, dirs) = raw[..n].split_last()?;
    let plain_last = !has_glob(last) || is_cache_name(last);
    let in_cache = raw[..n].iter().any(|c| is_cache_name(c));
    if !plain_last || !in_cache || dirs.iter().any(|c| has_glob(c)) {
        return None;
    }
    // Where `cd` took the line, relative to the payload's directory.
    let root_c = normalise(root);
    let here = normalise(a.cwd.as_deref()?);
    if here.len() < root_c.len() || here[..root_c.len()] != root_c[..] {
        return None;
    }
    let mut path: Vec<&str> = here[root_c.len()..].iter().map(String::as_str).collect();
    if path.iter().any(|c| has_glob(c) || c.contains(['$', '`'])) {
        return None;
    }
    path.extend(dirs);
    path.push(last);
    Some(path.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_cache_name("node_modules"));
        assert!(is_cache_name("*.egg-info"));
        assert!(is_cache_name("hoop.egg-info"));
        assert!(!is_cache_name(".egg-info"));
        assert!(!is_cache_name("x*.egg-info"));
        assert!(!is_cache_name("src"));
        assert!(takes_every_name("*") && takes_every_name(".*") && takes_every_name("*.*"));
        assert!(!takes_every_name("*.o") && !takes_every_name("*~"));
    }
}
