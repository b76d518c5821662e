//! Installing the lane into one worker's session-private scratch HOME: the
//! spec file, `.cursor/hooks.json`, and for a `claude` worker the same
//! lifecycle hooks in `.claude/settings.json`. Entries are merged through
//! the one hook merge ([`crate::install::merge`]), so a settings file seeded
//! from the account keeps everything else it holds.
//!
//! Install hygiene: the files land only under the scratch HOME the worker
//! receives. A directory that is a project checkout (it holds `.git`) is
//! refused: a project's tracked `.cursor/hooks.json` or
//! `.claude/settings.json` is never written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::relay::HookStatusSpec;
use super::signal::{CLAUDE_EVENTS, CURSOR_EVENTS};
use super::store::{RunLane, SPEC_VERSION};
use crate::install::{self, Spec, Target};
use crate::limits::LANE_HOOK_TIMEOUT_SECS;
use hoop_core::fsutil::{WriteOptions, write_atomic};

/// Which agent CLI the worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Claude,
    CursorAgent,
}

impl std::str::FromStr for Agent {
    type Err = String;
    fn from_str(s: &str) -> Result<Agent, String> {
        match s {
            "claude" => Ok(Agent::Claude),
            "cursor-agent" => Ok(Agent::CursorAgent),
            other => Err(format!(
                "unknown agent {other:?}: use claude or cursor-agent"
            )),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{0} is a project checkout (it holds .git), not a scratch HOME")]
    ProjectCheckout(PathBuf),
    #[error("{path} is not usable hook config: {source}")]
    Settings {
        path: PathBuf,
        source: install::InstallError,
    },
    #[error("{path} is not JSON: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What was written, for the spawner's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub spec: PathBuf,
    pub files: Vec<PathBuf>,
}

/// The hook command's arguments after the program.
fn args(spec_path: &Path) -> Vec<String> {
    vec![
        "hook-status".into(),
        "--config".into(),
        spec_path.to_string_lossy().into_owned(),
    ]
}

/// The hook entries for one target: every mapped lifecycle event, each
/// running `<program> hook-status --config <spec_path>` with the lane's
/// timeout.
pub fn lane_specs(target: Target, spec_path: &Path) -> Vec<Spec> {
    let events = match target {
        Target::Claude => CLAUDE_EVENTS,
        Target::Cursor => CURSOR_EVENTS,
    };
    events
        .iter()
        .map(|ev| Spec {
            event: ev,
            matcher: None,
            args: args(spec_path),
            timeout: Some(LANE_HOOK_TIMEOUT_SECS),
        })
        .collect()
}

/// The `hooks.json` (Cursor) or `settings.json` (Claude) content with the
/// lane merged into `existing` (`Value::Null` for no file). Pure.
pub fn merged_config(
    target: Target,
    existing: Value,
    program: &str,
    spec_path: &Path,
) -> Result<Value, install::InstallError> {
    let mut v = existing;
    install::merge(target, &mut v, program, &lane_specs(target, spec_path))?;
    Ok(v)
}

/// Install the lane for one run into `scratch_home`: the spec file at
/// `spec_path` (0600: it holds the token), `<scratch_home>/.cursor/hooks.json`,
/// and for [`Agent::Claude`] `<scratch_home>/.claude/settings.json`. The
/// hook command is `<program> hook-status --config <spec_path>`, the spec's
/// path its only argument. An error means the worker runs without a lane.
pub fn install_lifecycle_hooks(
    scratch_home: &Path,
    agent: Agent,
    spec_path: &Path,
    lane: &RunLane,
    program: &Path,
) -> Result<Installed, InstallError> {
    if scratch_home.join(".git").exists() {
        return Err(InstallError::ProjectCheckout(scratch_home.to_path_buf()));
    }
    let spec = HookStatusSpec {
        version: SPEC_VERSION,
        endpoint: lane.endpoint.clone(),
        token: lane.token.expose().to_string(),
        mission_id: lane.mission.clone(),
        run_id: lane.run.clone(),
    };
    let data = serde_json::to_vec_pretty(&spec).expect("a spec serialises");
    write_atomic(spec_path, &data, WriteOptions::SECRET).map_err(|source| InstallError::Io {
        path: spec_path.to_path_buf(),
        source,
    })?;
    let program = program.to_string_lossy();
    let mut targets = vec![(Target::Cursor, scratch_home.join(".cursor/hooks.json"))];
    if agent == Agent::Claude {
        targets.push((Target::Claude, scratch_home.join(".claude/settings.json")));
    }
    let mut files = Vec::new();
    for (target, path) in targets {
        let existing = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|source| InstallError::Parse {
                path: path.clone(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
            Err(source) => return Err(InstallError::Io { path, source }),
        };
        let v = merged_config(target, existing, &program, spec_path).map_err(|source| {
            InstallError::Settings {
                path: path.clone(),
                source,
            }
        })?;
        let mut data = serde_json::to_vec_pretty(&v).expect("JSON serialises");
        data.push(b'\n');
        write_atomic(&path, &data, WriteOptions::SECRET).map_err(|source| InstallError::Io {
            path: path.clone(),
            source,
        })?;
        files.push(path);
    }
    Ok(Installed {
        spec: spec_path.to_path_buf(),
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lane::store::{Token, token_hash};
    use serde_json::json;

    fn lane() -> RunLane {
        RunLane {
            mission: "bolt".into(),
            run: "card-1".into(),
            endpoint: "http://127.0.0.1:4560".into(),
            token: Token::from_string("0123456789abcdef0123456789abcdef".into()),
        }
    }

    #[test]
    fn cursor_hooks_json_has_the_documented_shape_and_mapped_events_only() {
        let v = merged_config(
            Target::Cursor,
            Value::Null,
            "/opt/hoop",
            Path::new("/s/spec.json"),
        )
        .unwrap();
        // Written out: the lifecycle events cursor-agent documents and the
        // relay maps, nothing else.
        let h = json!([{"command": "/opt/hoop hook-status --config /s/spec.json", "timeout": 10}]);
        assert_eq!(
            v,
            json!({"version": 1, "hooks": {
                "sessionStart": h, "stop": h, "sessionEnd": h, "postToolUseFailure": h,
            }})
        );
    }

    #[test]
    fn claude_settings_get_every_mapped_event_and_keep_the_rest() {
        let seeded = json!({
            "model": "opus",
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "hoop guard act"}]}]}
        });
        let v = merged_config(
            Target::Claude,
            seeded,
            "/opt/hoop",
            Path::new("/s/spec.json"),
        )
        .unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "hoop guard act"
        );
        // Written out: the Claude Code lifecycle events the relay maps.
        let want = [
            "SessionStart",
            "Stop",
            "StopFailure",
            "SessionEnd",
            "PostToolUseFailure",
            "Notification",
        ];
        for ev in want {
            assert_eq!(
                v["hooks"][ev],
                json!([{"matcher": "", "hooks": [{"type": "command",
                    "command": "/opt/hoop hook-status --config /s/spec.json", "timeout": 10}]}]),
                "{ev}"
            );
        }
        let mut events: Vec<&str> = v["hooks"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        events.sort_unstable();
        let mut all = want.to_vec();
        all.push("PreToolUse");
        all.sort_unstable();
        assert_eq!(
            events, all,
            "the mapped events and the seeded guard, nothing else"
        );
        // Installing twice changes nothing.
        let again = merged_config(
            Target::Claude,
            v.clone(),
            "/opt/hoop",
            Path::new("/s/spec.json"),
        )
        .unwrap();
        assert_eq!(again, v);
    }

    #[test]
    fn install_writes_the_spec_and_both_files_under_the_scratch_home_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("scratch");
        let spec_path = home.join("hook-status/spec.json");
        let got = install_lifecycle_hooks(
            &home,
            Agent::Claude,
            &spec_path,
            &lane(),
            Path::new("/opt/hoop"),
        )
        .unwrap();
        assert_eq!(
            got.files,
            vec![
                home.join(".cursor/hooks.json"),
                home.join(".claude/settings.json")
            ]
        );
        let spec: Value = serde_json::from_slice(&std::fs::read(&spec_path).unwrap()).unwrap();
        assert_eq!(
            spec,
            json!({"version": 1, "endpoint": "http://127.0.0.1:4560",
                   "token": "0123456789abcdef0123456789abcdef",
                   "missionId": "bolt", "runId": "card-1"})
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&spec_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        for f in &got.files {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(!text.contains("0123456789abcdef0123456789abcdef"), "{text}");
            assert!(!text.contains(&token_hash("0123456789abcdef0123456789abcdef")));
        }
        // A cursor-agent worker gets no Claude settings.
        let home2 = dir.path().join("scratch2");
        let got = install_lifecycle_hooks(
            &home2,
            Agent::CursorAgent,
            &home2.join("spec.json"),
            &lane(),
            Path::new("/opt/hoop"),
        )
        .unwrap();
        assert_eq!(got.files, vec![home2.join(".cursor/hooks.json")]);
        assert!(!home2.join(".claude").exists());
    }

    #[test]
    fn a_project_checkout_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join(".cursor")).unwrap();
        std::fs::write(project.join(".cursor/hooks.json"), "{\"version\":1}").unwrap();
        let err = install_lifecycle_hooks(
            &project,
            Agent::Claude,
            &dir.path().join("spec.json"),
            &lane(),
            Path::new("/opt/hoop"),
        )
        .unwrap_err();
        assert!(matches!(err, InstallError::ProjectCheckout(_)), "{err}");
        assert_eq!(
            std::fs::read_to_string(project.join(".cursor/hooks.json")).unwrap(),
            "{\"version\":1}"
        );
        assert!(!project.join(".claude").exists());
        assert!(!dir.path().join("spec.json").exists());
    }

    #[test]
    fn a_broken_seeded_settings_file_is_an_error_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("scratch");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), "{oops").unwrap();
        let err = install_lifecycle_hooks(
            &home,
            Agent::Claude,
            &home.join("spec.json"),
            &lane(),
            Path::new("/opt/hoop"),
        )
        .unwrap_err();
        assert!(matches!(err, InstallError::Parse { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
            "{oops"
        );
    }
}
