//! The one door to the machine's service manager. Every call to
//! `launchctl`, `systemctl` or `loginctl` goes through a [`Runner`], so tests
//! record the calls (and script their answers) and never touch the real
//! service manager, and `--manager none` prints what it would run.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Which service manager keeps the sentinels running on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Manager {
    /// A systemd user manager (`systemctl --user`).
    Systemd,
    /// launchd's per-user domain (`gui/$UID`).
    Launchd,
    /// Write every file; run nothing, print the calls instead.
    None,
}

impl Manager {
    /// The manager this machine has: launchd on macOS, systemd where
    /// `/run/systemd/system` exists, otherwise none.
    pub fn detect() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else if std::path::Path::new("/run/systemd/system").is_dir() {
            Manager::Systemd
        } else {
            Manager::None
        }
    }
}

/// One service-manager call: the program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub program: String,
    pub args: Vec<String>,
}

impl Call {
    pub fn new(program: &str, args: &[&str]) -> Call {
        Call {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.program)?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// What a call answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOutput {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CallOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("could not run {call}: {source}")]
    Spawn {
        call: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs service-manager calls. Implementations: [`SystemRunner`] (the real
/// programs), [`DryRunner`] (prints, runs nothing) and [`RecordingRunner`]
/// (tests).
pub trait Runner: Send + Sync {
    fn run(&self, call: &Call) -> Result<CallOutput, RunError>;
}

/// Runs the real program and waits for it.
#[derive(Debug, Default)]
pub struct SystemRunner;

impl Runner for SystemRunner {
    fn run(&self, call: &Call) -> Result<CallOutput, RunError> {
        let out = std::process::Command::new(&call.program)
            .args(&call.args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|source| RunError::Spawn {
                call: call.to_string(),
                source,
            })?;
        Ok(CallOutput {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// `--manager none`: remembers each call (to print) and answers success.
#[derive(Debug, Default)]
pub struct DryRunner {
    calls: Mutex<Vec<Call>>,
}

impl DryRunner {
    /// The calls it would have made, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Runner for DryRunner {
    fn run(&self, call: &Call) -> Result<CallOutput, RunError> {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call.clone());
        Ok(CallOutput {
            code: Some(0),
            ..CallOutput::default()
        })
    }
}

/// For tests: records every call and answers from a script (first matching
/// rule, in order; success with empty output when no rule matches).
#[derive(Default)]
pub struct RecordingRunner {
    calls: Mutex<Vec<Call>>,
    #[allow(clippy::type_complexity)]
    rules: Mutex<VecDeque<(Box<dyn Fn(&Call) -> bool + Send + Sync>, CallOutput)>>,
}

impl RecordingRunner {
    pub fn new() -> RecordingRunner {
        RecordingRunner::default()
    }

    /// Answer calls that `matches` accepts with `output` (kept for every
    /// later matching call too).
    pub fn answer(
        &self,
        matches: impl Fn(&Call) -> bool + Send + Sync + 'static,
        output: CallOutput,
    ) {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back((Box::new(matches), output));
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Runner for RecordingRunner {
    fn run(&self, call: &Call) -> Result<CallOutput, RunError> {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call.clone());
        let rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        Ok(rules
            .iter()
            .find(|(m, _)| m(call))
            .map(|(_, o)| o.clone())
            .unwrap_or(CallOutput {
                code: Some(0),
                ..CallOutput::default()
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recording_runner_records_in_order_and_answers_by_rule() {
        let r = RecordingRunner::new();
        r.answer(
            |c| c.args.first().map(String::as_str) == Some("is-active"),
            CallOutput {
                code: Some(3),
                stdout: "inactive\n".into(),
                stderr: String::new(),
            },
        );
        let a = r
            .run(&Call::new("systemctl", &["--user", "daemon-reload"]))
            .unwrap();
        let b = r.run(&Call::new("systemctl", &["is-active", "x"])).unwrap();
        assert!(a.success());
        assert_eq!(b.code, Some(3));
        assert_eq!(
            r.calls()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["systemctl --user daemon-reload", "systemctl is-active x"]
        );
    }

    #[test]
    fn the_dry_runner_runs_nothing_and_remembers_the_calls() {
        let r = DryRunner::default();
        let out = r
            .run(&Call::new(
                "/nonexistent/launchctl",
                &["print", "gui/501/x"],
            ))
            .unwrap();
        assert!(out.success());
        assert_eq!(r.calls().len(), 1);
    }

    #[test]
    fn the_system_runner_reports_a_missing_program_as_an_error() {
        let err = SystemRunner
            .run(&Call::new("/nonexistent/systemctl", &["--user"]))
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/systemctl --user"));
    }
}
