//! The context meter: where the agent CLI keeps a session's transcript, and
//! how big the session's context is according to it.
//!
//! The CLI writes `<config dir>/projects/<escaped cwd>/<session>.jsonl`, where
//! the config dir is `$CLAUDE_CONFIG_DIR` or `$HOME/.claude` of the CLI's own
//! environment, and the cwd is the physical (symlink-resolved) working
//! directory escaped by [`project_slug`]. The meter reads only the last
//! [`CONTEXT_METER_TAIL_BYTES`] of that file through the one transcript
//! reader in `core::transcript`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hoop_core::limits::CONTEXT_METER_TAIL_BYTES;

/// The CLI cuts an escaped cwd longer than this and appends a hash.
pub const SLUG_MAX: usize = 200;

/// The CLI's 32-bit Java-style string hash over UTF-16 code units
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

/// The CLI's project folder name for a cwd: every UTF-16 code unit outside
/// `[A-Za-z0-9]` becomes `-`; a name longer than 200 is cut to 200 and gets
/// `-<base36 of |hash(cwd)|>`.
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

/// The CLI's config dir for an environment: `CLAUDE_CONFIG_DIR`, else
/// `$HOME/.claude`. `env` (the child's extra environment) wins over
/// `inherited` (the daemon's own).
pub fn config_dir(
    env: &[(String, String)],
    inherited: impl Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    let get = |k: &str| {
        env.iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| OsString::from(v))
            .or_else(|| inherited(k))
            .filter(|v| !v.is_empty())
    };
    if let Some(d) = get("CLAUDE_CONFIG_DIR") {
        return Some(PathBuf::from(d));
    }
    get("HOME").map(|h| PathBuf::from(h).join(".claude"))
}

/// The transcript of `session` run from `cwd` (resolved to its physical path
/// when it exists).
pub fn transcript_path(config_dir: &Path, cwd: &Path, session: &str) -> PathBuf {
    let physical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    config_dir
        .join("projects")
        .join(project_slug(&physical.to_string_lossy()))
        .join(format!("{session}.jsonl"))
}

/// The session's context size from the tail of its transcript; `None` when
/// the transcript is absent, unreadable or holds no usage yet.
pub fn context_tokens(transcript: &Path) -> Option<u64> {
    match hoop_core::transcript::context_tokens_from_tail(transcript, CONTEXT_METER_TAIL_BYTES) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(path = %transcript.display(), error = %e, "context meter cannot read the transcript");
            None
        }
    }
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

    #[test]
    fn config_dir_prefers_claude_config_dir_then_home() {
        let none = |_: &str| None;
        let env = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            config_dir(&env(&[("HOME", "/h")]), none),
            Some(PathBuf::from("/h/.claude"))
        );
        assert_eq!(
            config_dir(&env(&[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "/c")]), none),
            Some(PathBuf::from("/c"))
        );
        assert_eq!(
            config_dir(&[], |k| (k == "HOME").then(|| OsString::from("/inh"))),
            Some(PathBuf::from("/inh/.claude"))
        );
        assert_eq!(config_dir(&[], none), None);
    }
}
