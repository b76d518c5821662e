//! Where Claude Code keeps its files: the one rule, used by the usage
//! reports, the sentinel's context meter and usage snapshots, `hoop hooks
//! install`, `hoop install` and `hoop status`.
//!
//! Claude Code writes under `$CLAUDE_CONFIG_DIR` when that is set, else
//! under `$HOME/.claude` (observed with 2.1.197: `claude-cli/OBSERVED.md`
//! §5.1); some earlier versions wrote their transcripts under
//! `$HOME/.config/claude`, which is therefore read too. Like ccusage, a
//! comma-separated `CLAUDE_CONFIG_DIR` names several directories to read;
//! the first is the one Claude Code writes to.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Replaces the defaults, as it does for Claude Code itself.
pub const CLAUDE_CONFIG_DIR_ENV: &str = "CLAUDE_CONFIG_DIR";

/// Claude Code's directories for one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeDirs {
    /// Where Claude Code writes (settings, transcripts of new sessions).
    pub primary: PathBuf,
    /// Every directory that may hold its transcripts, `primary` included.
    pub all: Vec<PathBuf>,
}

/// The directories for an environment read through `get` (a variable that
/// is unset or empty counts as absent); `None` when neither
/// `CLAUDE_CONFIG_DIR` nor `HOME` is set.
pub fn claude_dirs(get: impl Fn(&str) -> Option<OsString>) -> Option<ClaudeDirs> {
    let get = |k: &str| get(k).filter(|v| !v.is_empty());
    if let Some(v) = get(CLAUDE_CONFIG_DIR_ENV) {
        let v = v.to_string_lossy().into_owned();
        let all: Vec<PathBuf> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if let Some(primary) = all.first().cloned() {
            return Some(ClaudeDirs { primary, all });
        }
    }
    let home = PathBuf::from(get("HOME")?);
    let primary = home.join(".claude");
    Some(ClaudeDirs {
        all: vec![home.join(".config/claude"), primary.clone()],
        primary,
    })
}

/// [`claude_dirs`] for a child whose extra environment is `env` (it wins,
/// the last setting of a name counting) over the `inherited` one.
pub fn claude_dirs_for(
    env: &[(String, String)],
    inherited: impl Fn(&str) -> Option<OsString>,
) -> Option<ClaudeDirs> {
    claude_dirs(|k| {
        env.iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| OsString::from(v))
            .or_else(|| inherited(k))
    })
}

/// [`claude_dirs`] of this process's own environment.
pub fn claude_dirs_here() -> Option<ClaudeDirs> {
    claude_dirs(|k| std::env::var_os(k))
}

/// Claude Code cuts an escaped cwd longer than this and appends a hash.
pub const SLUG_MAX: usize = 200;

/// Claude Code's 32-bit Java-style string hash over UTF-16 code units
/// (`h = h*31 + c`, wrapping).
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| {
        h.wrapping_shl(5).wrapping_sub(h).wrapping_add(c as i32)
    })
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Claude Code's project folder name for a cwd: every UTF-16 code unit
/// outside `[A-Za-z0-9]` becomes `-`; a name longer than 200 is cut to 200
/// and gets `-<base36 of |hash(cwd)|>` (OBSERVED §5.1).
pub fn project_slug(cwd: &str) -> String {
    let escaped: Vec<u16> = cwd
        .encode_utf16()
        .map(|u| {
            if u < 128 && (u as u8).is_ascii_alphanumeric() {
                u
            } else {
                b'-' as u16
            }
        })
        .collect();
    let s = String::from_utf16_lossy(&escaped);
    if escaped.len() <= SLUG_MAX {
        return s;
    }
    let head = String::from_utf16_lossy(&escaped[..SLUG_MAX]);
    format!(
        "{head}-{}",
        base36(u64::from(java_hash(cwd).unsigned_abs()))
    )
}

/// The project folder names a working directory's sessions are written
/// under: its slug as given and resolved (Claude Code records the physical
/// path; the two differ behind a symlink).
pub fn project_slugs(cwd: &Path) -> Vec<String> {
    let mut v = vec![project_slug(&cwd.to_string_lossy())];
    if let Ok(c) = cwd.canonicalize() {
        let s = project_slug(&c.to_string_lossy());
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

/// The transcript of `session` run from `cwd` (resolved to its physical
/// path when it exists) under the config dir `dir`.
pub fn transcript_path(dir: &Path, cwd: &Path, session: &str) -> PathBuf {
    let physical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    dir.join(crate::PROJECTS_DIR)
        .join(project_slug(&physical.to_string_lossy()))
        .join(format!("{session}.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_match_the_cli() {
        // Observed directory names (OBSERVED §5.1).
        for (cwd, want) in [
            ("/srv/obs/work", "-srv-obs-work"),
            (
                "/srv/obs/dir.with_dots and spaces",
                "-srv-obs-dir-with-dots-and-spaces",
            ),
            ("/srv/obs/Mixed-Case_x~y@z+w", "-srv-obs-Mixed-Case-x-y-z-w"),
            ("/srv/obs/unicodé", "-srv-obs-unicod-"),
        ] {
            assert_eq!(project_slug(cwd), want, "{cwd}");
        }
    }

    #[test]
    fn long_slugs_are_cut_and_hashed() {
        let cwd = format!("/{}", "a".repeat(250));
        let s = project_slug(&cwd);
        assert!(s.starts_with(&format!("-{}", "a".repeat(199))));
        let (head, tail) = s.split_at(SLUG_MAX);
        assert_eq!(head.len(), SLUG_MAX);
        assert!(tail.starts_with('-') && tail.len() > 1);
        assert!(tail[1..].chars().all(|c| c.is_ascii_alphanumeric()));
        // The hash is the JS `(h<<5)-h+c|0` fold: "ab" = 97*31+98.
        assert_eq!(java_hash("ab"), 97 * 31 + 98);
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_rule_as_a_table() {
        // (environment, primary, all)
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<(&'a str, &'a [&'a str])>);
        let cases: &[Case] = &[
            (
                &[("HOME", "/h")],
                Some(("/h/.claude", &["/h/.config/claude", "/h/.claude"])),
            ),
            (
                &[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "/c")],
                Some(("/c", &["/c"])),
            ),
            (
                &[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", " /a , /b,,")],
                Some(("/a", &["/a", "/b"])),
            ),
            // Empty means unset, for both.
            (
                &[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "")],
                Some(("/h/.claude", &["/h/.config/claude", "/h/.claude"])),
            ),
            (
                &[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", " , ")],
                Some(("/h/.claude", &["/h/.config/claude", "/h/.claude"])),
            ),
            (&[("HOME", "")], None),
            (&[], None),
            (&[("CLAUDE_CONFIG_DIR", "/c")], Some(("/c", &["/c"]))),
        ];
        for (vars, want) in cases {
            let got = claude_dirs(env(vars));
            let want = want.map(|(p, all)| ClaudeDirs {
                primary: PathBuf::from(p),
                all: all.iter().map(PathBuf::from).collect(),
            });
            assert_eq!(got, want, "{vars:?}");
        }
    }

    #[test]
    fn a_childs_environment_wins_over_the_inherited_one() {
        let child = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let inherited = env(&[("HOME", "/inh"), ("CLAUDE_CONFIG_DIR", "/inh-c")]);
        let primary =
            |e: &[(&str, &str)]| claude_dirs_for(&child(e), &inherited).map(|d| d.primary);
        assert_eq!(primary(&[]), Some(PathBuf::from("/inh-c")));
        assert_eq!(
            primary(&[("CLAUDE_CONFIG_DIR", "/c")]),
            Some(PathBuf::from("/c"))
        );
        // The last setting of a name counts.
        assert_eq!(
            primary(&[("CLAUDE_CONFIG_DIR", "/c1"), ("CLAUDE_CONFIG_DIR", "/c2")]),
            Some(PathBuf::from("/c2"))
        );
        // A child that clears the config dir falls back to its HOME.
        assert_eq!(
            primary(&[("HOME", "/w"), ("CLAUDE_CONFIG_DIR", "")]),
            Some(PathBuf::from("/w/.claude"))
        );
    }
}
