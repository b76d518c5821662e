//! The context meter: where the agent CLI keeps a session's transcript, and
//! how big the session's context is according to it.
//!
//! Where Claude Code keeps its files is decided in one place,
//! `hoop_meter::claude_dirs` (`CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, of
//! the CLI's own environment); this module names the agent's directory and
//! its session transcript through it. The meter reads only the last
//! [`CONTEXT_METER_TAIL_BYTES`] of that file through the one transcript
//! reader in `core::transcript`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hoop_core::limits::CONTEXT_METER_TAIL_BYTES;
pub use hoop_meter::claude_dirs::{SLUG_MAX, project_slug, transcript_path};

/// The directory Claude Code writes to for a child whose extra environment
/// is `env` (it wins over `inherited`, the daemon's own).
pub fn config_dir(
    env: &[(String, String)],
    inherited: impl Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    hoop_meter::claude_dirs::claude_dirs_for(env, inherited).map(|d| d.primary)
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

    /// The context meter and the usage meter name the same directory: the
    /// sentinel's rule is the meter's (item 4 of issue 25: they disagreed).
    #[test]
    fn the_agents_directory_is_the_meters_primary_one() {
        let none = |_: &str| None;
        let env = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        // (the agent's environment, the directory Claude Code writes to)
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: &[Case] = &[
            (&[("HOME", "/h")], Some("/h/.claude")),
            (&[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "/c")], Some("/c")),
            // A comma-separated list: Claude Code writes to the first.
            (
                &[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", "/c1,/c2")],
                Some("/c1"),
            ),
            (&[], None),
        ];
        for (vars, want) in cases {
            assert_eq!(
                config_dir(&env(vars), none),
                want.map(PathBuf::from),
                "{vars:?}"
            );
            let meter = hoop_meter::claude_dirs::claude_dirs_for(&env(vars), none);
            assert_eq!(config_dir(&env(vars), none), meter.map(|d| d.primary));
        }
        assert_eq!(
            config_dir(&[], |k| (k == "HOME").then(|| OsString::from("/inh"))),
            Some(PathBuf::from("/inh/.claude"))
        );
    }
}
