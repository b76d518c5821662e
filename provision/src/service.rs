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
    /// The manager this machine has, with why (see [`detect_from`]).
    pub fn detect() -> Detected {
        detect_from(&DetectFacts::from_process())
    }

    /// The word `--manager` takes for it.
    pub fn word(self) -> &'static str {
        match self {
            Manager::Systemd => "systemd",
            Manager::Launchd => "launchd",
            Manager::None => "none",
        }
    }
}

/// What [`detect_from`] looks at (read from the process by
/// [`DetectFacts::from_process`], so the decision is a plain function).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DetectFacts {
    pub macos: bool,
    /// `/run/systemd/system` exists: systemd is this machine's init.
    pub systemd_booted: bool,
    /// `systemctl` is on `PATH`: systemd is installed.
    pub systemctl: bool,
    /// `$XDG_RUNTIME_DIR`, when set.
    pub xdg_runtime_dir: Option<std::path::PathBuf>,
    /// `$XDG_RUNTIME_DIR/bus` exists: the user manager's bus.
    pub user_bus: bool,
    /// The login name, for the fixes.
    pub user: String,
    /// `$SUDO_USER`, when this runs under `sudo`.
    pub sudo_user: Option<String>,
}

impl DetectFacts {
    pub fn from_process() -> DetectFacts {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let xdg = var("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
        let path = var("PATH");
        DetectFacts {
            macos: cfg!(target_os = "macos"),
            systemd_booted: std::path::Path::new(SYSTEMD_BOOTED_DIR).is_dir(),
            systemctl: path
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("systemctl").is_file())),
            user_bus: xdg.as_ref().is_some_and(|d| d.join("bus").exists()),
            xdg_runtime_dir: xdg,
            user: nix::unistd::User::from_uid(nix::unistd::getuid())
                .ok()
                .flatten()
                .map(|u| u.name)
                .unwrap_or_else(|| "$USER".into()),
            sudo_user: var("SUDO_USER").map(|v| v.to_string_lossy().into_owned()),
        }
    }
}

/// systemd creates this directory when it is the machine's init.
pub const SYSTEMD_BOOTED_DIR: &str = "/run/systemd/system";

/// The manager [`Manager::detect`] chose, why, and — when it fell back to
/// `none` although the machine should have one — what is wrong, with the
/// fixes. `problem` set means nothing will keep a sentinel running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub manager: Manager,
    pub why: String,
    pub problem: Option<Problem>,
}

/// What is wrong with a machine's service manager, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub cause: String,
    pub fix: String,
}

/// How to reach a user's systemd manager when its bus is missing: one text,
/// used by detection and by a `systemctl --user` call that could not
/// connect.
pub fn bus_fixes(user: &str, sudo_user: Option<&str>) -> String {
    let sudo = match sudo_user {
        Some(s) => format!(
            " (this runs under sudo from {s}: `sudo -u` gives no user bus; use \
             `machinectl shell {user}@` or `sudo -iu {user}` after enabling linger)"
        ),
        None => String::new(),
    };
    format!(
        "`loginctl enable-linger {user}` (the user manager then runs without a login), \
         run this from a login session of {user}{sudo}, or set \
         XDG_RUNTIME_DIR=/run/user/$(id -u) where that directory holds the bus; \
         or pass `--manager none` to run the sentinels some other way on purpose"
    )
}

/// Which manager keeps the sentinels running here, and why: launchd on
/// macOS; systemd when it is the init and the user's bus answers; otherwise
/// none — with the problem spelled out when systemd is installed but cannot
/// be reached, or when there is no manager at all.
pub fn detect_from(f: &DetectFacts) -> Detected {
    if f.macos {
        return Detected {
            manager: Manager::Launchd,
            why: "macOS: launchd".into(),
            problem: None,
        };
    }
    if f.systemd_booted && f.user_bus {
        return Detected {
            manager: Manager::Systemd,
            why: format!(
                "systemd is the init and the user bus is at {}",
                f.xdg_runtime_dir
                    .as_deref()
                    .unwrap_or(std::path::Path::new("?"))
                    .join("bus")
                    .display()
            ),
            problem: None,
        };
    }
    let supervisor = "run the sentinels under this machine's own supervisor and pass \
                      `--manager none` to say so on purpose"
        .to_string();
    let problem = if f.systemd_booted {
        let bus = match &f.xdg_runtime_dir {
            None => "XDG_RUNTIME_DIR is not set".to_string(),
            Some(d) => format!("there is no bus at {}", d.join("bus").display()),
        };
        Problem {
            cause: format!(
                "systemd runs this machine but {}'s user bus is not reachable ({bus}), so \
                 nothing will keep the sentinels running",
                f.user
            ),
            fix: bus_fixes(&f.user, f.sudo_user.as_deref()),
        }
    } else if f.systemctl {
        Problem {
            cause: format!(
                "systemctl is installed but systemd is not this machine's init \
                 ({SYSTEMD_BOOTED_DIR} is missing), so nothing will keep the sentinels running"
            ),
            fix: supervisor,
        }
    } else {
        Problem {
            cause: "no service manager found (not macOS, no systemd), so nothing will keep \
                    the sentinels running"
                .into(),
            fix: supervisor,
        }
    };
    Detected {
        manager: Manager::None,
        why: "no usable service manager".into(),
        problem: Some(problem),
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
    #[error("could not run {call}: {cause}")]
    Spawn { call: String, cause: std::io::Error },
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
            .map_err(|cause| RunError::Spawn {
                call: call.to_string(),
                cause,
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
    rules: Mutex<
        VecDeque<(
            Box<dyn Fn(&Call) -> bool + Send + Sync>,
            CallOutput,
            Option<usize>,
        )>,
    >,
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
            .push_back((Box::new(matches), output, None));
    }

    /// Answer the next `times` calls that `matches` accepts with `output`;
    /// later ones go on to the next rule (a manager whose answer changes:
    /// launchd refusing a bootstrap, then taking it).
    pub fn answer_times(
        &self,
        matches: impl Fn(&Call) -> bool + Send + Sync + 'static,
        output: CallOutput,
        times: usize,
    ) {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back((Box::new(matches), output, Some(times)));
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
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let hit = rules
            .iter_mut()
            .find(|(m, _, left)| *left != Some(0) && m(call));
        Ok(match hit {
            Some((_, o, left)) => {
                if let Some(n) = left {
                    *n -= 1;
                }
                o.clone()
            }
            None => CallOutput {
                code: Some(0),
                ..CallOutput::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every branch of detection: the manager, and whether it is a problem.
    #[test]
    fn detection_table() {
        let base = DetectFacts {
            user: "ops".into(),
            ..DetectFacts::default()
        };
        let bus = std::path::PathBuf::from("/run/user/1000");
        let cases: Vec<(&str, DetectFacts, Manager, Option<&str>)> = vec![
            (
                "macOS",
                DetectFacts {
                    macos: true,
                    ..base.clone()
                },
                Manager::Launchd,
                None,
            ),
            (
                "systemd with its bus",
                DetectFacts {
                    systemd_booted: true,
                    systemctl: true,
                    xdg_runtime_dir: Some(bus.clone()),
                    user_bus: true,
                    ..base.clone()
                },
                Manager::Systemd,
                None,
            ),
            (
                "systemd, XDG_RUNTIME_DIR unset",
                DetectFacts {
                    systemd_booted: true,
                    systemctl: true,
                    ..base.clone()
                },
                Manager::None,
                Some(
                    "systemd runs this machine but ops's user bus is not reachable (XDG_RUNTIME_DIR is not set)",
                ),
            ),
            (
                "systemd, no bus in XDG_RUNTIME_DIR",
                DetectFacts {
                    systemd_booted: true,
                    systemctl: true,
                    xdg_runtime_dir: Some(bus.clone()),
                    ..base.clone()
                },
                Manager::None,
                Some(
                    "systemd runs this machine but ops's user bus is not reachable (there is no bus at /run/user/1000/bus)",
                ),
            ),
            (
                "systemctl in a container",
                DetectFacts {
                    systemctl: true,
                    xdg_runtime_dir: Some(bus.clone()),
                    user_bus: true,
                    ..base.clone()
                },
                Manager::None,
                Some("systemctl is installed but systemd is not this machine's init"),
            ),
            (
                "nothing",
                base.clone(),
                Manager::None,
                Some("no service manager found (not macOS, no systemd)"),
            ),
        ];
        for (what, facts, manager, cause) in cases {
            let d = detect_from(&facts);
            assert_eq!(d.manager, manager, "{what}");
            match (cause, &d.problem) {
                (None, None) => {}
                (Some(c), Some(p)) => {
                    assert!(p.cause.starts_with(c), "{what}: {}", p.cause);
                    assert!(p.fix.contains("--manager none"), "{what}: {}", p.fix);
                }
                _ => panic!("{what}: {d:?}"),
            }
        }
        // Under sudo the fix says why the bus is missing and how to get one.
        let d = detect_from(&DetectFacts {
            systemd_booted: true,
            sudo_user: Some("admin".into()),
            ..base
        });
        assert!(d.problem.unwrap().fix.contains(
            "this runs under sudo from admin: `sudo -u` gives no user bus; use `machinectl \
                 shell ops@`"
        ));
    }

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
