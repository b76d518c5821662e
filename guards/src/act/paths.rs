//! Where a path lies, as far as the text says: vital (the root, a home
//! directory, a system directory), strictly inside a system temp dir
//! (scratch), or elsewhere. Shared by every family that removes or
//! overwrites files (`rm`, `find -delete`, mass deletion, overwrites, git in
//! a scratch clone): scratch is scratch whichever command touches it, and
//! vital places are never touched.

use super::shell::{Analyser, Word};

/// Where a removal target lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// `/`, a home directory, or a system directory.
    Vital,
    /// Strictly inside a system temp dir.
    Temp,
    Other,
}

/// Second-level directories that are still system directories.
const SYSTEM_PARENTS: &[&str] = &[
    "usr",
    "var",
    "etc",
    "System",
    "Library",
    "private",
    "lib",
    "lib64",
    "bin",
    "sbin",
    "boot",
    "dev",
    "proc",
    "sys",
    "home",
    "Users",
    "root",
    "opt",
    "snap",
    "run",
    "srv",
    "Applications",
];

const TEMP_DIRS: &[&[&str]] = &[
    &["tmp"],
    &["var", "tmp"],
    &["private", "tmp"],
    &["private", "var", "tmp"],
];

pub(super) fn place(a: &Analyser<'_>, w: &Word) -> Place {
    place_text(a, &w.text, 0)
}

fn place_text(a: &Analyser<'_>, t: &str, depth: u8) -> Place {
    if t.is_empty() {
        return Place::Other;
    }
    for home in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = t.strip_prefix(home)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let comps = normalise(rest);
            return if effective(&comps).is_empty() {
                Place::Vital
            } else {
                Place::Other
            };
        }
    }
    if t.starts_with("~") {
        // `~user`: another user's home.
        let rest = t.split_once('/').map(|(_, r)| r).unwrap_or("");
        return if effective(&normalise(rest)).is_empty() {
            Place::Vital
        } else {
            Place::Other
        };
    }
    for tmp in [
        "$TMPDIR",
        "${TMPDIR}",
        "${TMPDIR:-/tmp}",
        "${TMPDIR:-/tmp/}",
        "${TMPDIR-/tmp}",
    ] {
        if let Some(rest) = t.strip_prefix(tmp)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let comps = normalise(rest);
            // `..` may climb out of the temp dir: not known to stay inside.
            return if comps.is_empty() || rest.split('/').any(|c| c == "..") {
                Place::Other
            } else {
                Place::Temp
            };
        }
    }
    if let Some(abs) = t.strip_prefix('/') {
        let comps = normalise(abs);
        let mut temps: Vec<Vec<String>> = TEMP_DIRS
            .iter()
            .map(|d| d.iter().map(|s| s.to_string()).collect())
            .collect();
        if let Some(td) = &a.cfg.tmpdir {
            let c = normalise(td.trim_start_matches('/'));
            if !c.is_empty() {
                temps.push(c);
            }
        }
        if temps
            .iter()
            .any(|d| comps.len() > d.len() && comps[..d.len()] == d[..])
        {
            return Place::Temp;
        }
        let eff = effective(&comps);
        let vital = eff.len() <= 1 || (eff.len() == 2 && SYSTEM_PARENTS.contains(&eff[0].as_str()));
        return if vital { Place::Vital } else { Place::Other };
    }
    if t.contains('$') || t.contains('`') {
        return Place::Other;
    }
    match &a.cwd {
        Some(cwd) if depth == 0 => place_text(a, &format!("{cwd}/{t}"), 1),
        _ => Place::Other,
    }
}

/// Lexically normalised path components (`.`, `..`, empty removed).
pub(super) fn normalise(p: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if out.pop().is_none() {
                    // above the root stays at the root
                }
            }
            c => out.push(c.to_string()),
        }
    }
    out
}

/// Components without trailing globs or expansions, which may match or
/// expand to everything (or nothing) at that level.
fn effective(comps: &[String]) -> &[String] {
    let mut n = comps.len();
    while n > 0 {
        let c = &comps[n - 1];
        if c.contains('*') || c.contains('?') || c.contains('[') || c.contains('$') {
            n -= 1;
        } else {
            break;
        }
    }
    &comps[..n]
}

/// Is `path` strictly inside a temp dir?
pub(super) fn is_temp_dir(a: &Analyser<'_>, path: &str) -> bool {
    place_text(a, path, 0) == Place::Temp
}
