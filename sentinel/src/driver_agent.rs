//! The `claude` driver as the round's [`Agent`], plus the leftover-process
//! rule: the pid of the live agent process is recorded in the home
//! (`agent.pid`) so that a daemon started after a crash can stop a process
//! the dead daemon left running (it would otherwise finish its turn — and
//! answer — while the new daemon answers the same message again).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{Agent, TurnResult, TurnUsage};
use crate::daemon::AgentSetup;
use crate::driver::{Driver, DriverConfig, Outcome, Permissions};
use crate::policy::TurnClass;

/// File in the home holding the live agent process's pid.
pub const AGENT_PID_FILE: &str = "agent.pid";

/// The driver behind the [`Agent`] seam.
pub struct DriverAgent {
    driver: Driver,
    pid_file: PathBuf,
}

impl DriverAgent {
    pub fn new(setup: AgentSetup) -> DriverAgent {
        let mut cfg = DriverConfig::new(&setup.claude_bin, setup.home.clone());
        cfg.env = setup.env.into_iter().collect();
        cfg.permissions = Permissions {
            mode: Some(setup.permission_mode).filter(|m| !m.is_empty() && m != "default"),
            allowed_tools: setup.allowed_tools,
        };
        cfg.turn_timeout = setup.turn_timeout;
        let pid_file = setup.home.dir().join(AGENT_PID_FILE);
        cfg.pid_file = Some(pid_file.clone());
        DriverAgent {
            driver: Driver::new(cfg),
            pid_file,
        }
    }

    fn record_pid(&self) {
        let text = self
            .driver
            .pid()
            .map(|p| format!("{p}\n"))
            .unwrap_or_default();
        if let Err(e) =
            hoop_core::fsutil::write_atomic(&self.pid_file, text.as_bytes(), Default::default())
        {
            tracing::debug!(error = %e, "agent.pid not written");
        }
    }
}

fn to_i64(v: Option<u64>) -> Option<i64> {
    v.and_then(|n| i64::try_from(n).ok())
}

fn detail(o: &Outcome) -> String {
    match o {
        Outcome::Ok => "ok".into(),
        Outcome::Failed { reason } => format!("failed: {reason}"),
        Outcome::Timeout => "timeout".into(),
        Outcome::AuthDead { cause } => format!("login dead ({cause})"),
        // The word for this limit never reaches a log line that could be
        // pasted into chat; "limit" is enough.
        Outcome::UsageLimit { .. } => "usage/session limit".into(),
        Outcome::PromptTooLong { .. } => "prompt too long".into(),
        Outcome::NoConversation { .. } => "session not found".into(),
    }
}

impl Agent for DriverAgent {
    async fn run_turn(&mut self, preamble: &str, message: &str) -> TurnResult {
        self.run_turn_showing(preamble, message, &|| {}).await
    }

    async fn run_turn_showing(
        &mut self,
        preamble: &str,
        message: &str,
        shown: &(dyn Fn() + Send + Sync),
    ) -> TurnResult {
        let report = self.driver.run_turn_showing(preamble, message, shown).await;
        self.record_pid();
        let usage = report.usage.as_ref().map(|_| TurnUsage {
            tokens_in: to_i64(report.tokens.tokens_in),
            tokens_cached_in: to_i64(report.tokens.tokens_cached_in),
            tokens_out: to_i64(report.tokens.tokens_out),
        });
        let mut d = detail(&report.outcome);
        if report.garbage_lines > 0 {
            d.push_str(&format!(
                "; {} unreadable output line(s) skipped",
                report.garbage_lines
            ));
        }
        TurnResult {
            class: TurnClass::from(&report.outcome),
            usage,
            detail: d,
        }
    }

    async fn cold_start(&mut self) {
        // The driver logs what it did; nothing due is the common case.
        self.driver.cold_start().await;
        self.record_pid();
    }

    async fn compact_and_stop(&mut self) {
        match self.driver.compact_and_stop().await {
            Some(Outcome::Ok) => tracing::info!("agent compacted and stopped"),
            Some(o) => {
                tracing::warn!(outcome = %detail(&o), "agent compaction failed; stopped")
            }
            None => tracing::info!("agent was not running; nothing to compact"),
        }
        self.record_pid();
    }

    async fn stop(&mut self) {
        self.driver.stop().await;
        self.record_pid();
    }

    fn idle_for(&self) -> Option<Duration> {
        self.driver.is_hot().then(|| self.driver.idle_for())
    }
}

/// How long a leftover agent gets after SIGTERM before SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

/// Stop agent processes a previous daemon of this home left behind (a
/// SIGKILLed daemon cannot stop its child; the child would finish its turn
/// and answer while the new daemon answers the same message again).
///
/// Found two ways: every process whose working directory is the home's
/// fixed agent directory (Linux, `/proc`; the agent and the commands it runs
/// all live there and nothing else does), and the pid recorded in
/// `agent.pid` if it is still a process-group leader whose command line
/// names `claude_bin`'s file (a recycled pid is left alone). Each one's
/// process group gets SIGTERM, then SIGKILL after a grace.
pub async fn stop_leftover(home_dir: &Path, workdir: &Path, claude_bin: &Path) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::{Pid, getpgid};
        let own = getpgid(None).ok();
        let mut groups: Vec<Pid> = processes_in(workdir)
            .into_iter()
            .filter_map(|p| getpgid(Some(Pid::from_raw(p))).ok())
            .filter(|g| Some(*g) != own && g.as_raw() > 1)
            .collect();
        if let Some(p) = recorded_agent(home_dir, claude_bin) {
            groups.push(p);
        }
        groups.sort_unstable_by_key(|g| g.as_raw());
        groups.dedup();
        if groups.is_empty() {
            return;
        }
        tracing::warn!(groups = ?groups.iter().map(|g| g.as_raw()).collect::<Vec<_>>(), "agent processes of a previous run are still alive; stopping them");
        for g in &groups {
            let _ = killpg(*g, Signal::SIGTERM);
        }
        let until = tokio::time::Instant::now() + LEFTOVER_GRACE;
        while tokio::time::Instant::now() < until {
            if groups.iter().all(|g| killpg(*g, None).is_err()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for g in &groups {
            let _ = killpg(*g, Signal::SIGKILL);
        }
    }
}

/// Pids whose working directory is `dir` (Linux; elsewhere none).
fn processes_in(dir: &Path) -> Vec<i32> {
    let Ok(want) = dir.canonicalize() else {
        return vec![];
    };
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == want))
        .collect()
}

#[cfg(unix)]
fn recorded_agent(home_dir: &Path, claude_bin: &Path) -> Option<nix::unistd::Pid> {
    use nix::unistd::{Pid, getpgid};
    let pid = std::fs::read_to_string(home_dir.join(AGENT_PID_FILE))
        .ok()?
        .trim()
        .parse::<i32>()
        .ok()
        .filter(|p| *p > 1)?;
    let p = Pid::from_raw(pid);
    if getpgid(Some(p)).ok() != Some(p) {
        return None;
    }
    let name = claude_bin.file_name()?.to_string_lossy().into_owned();
    let args = std::process::Command::new("ps")
        .args(["-o", "args=", "-p", &pid.to_string()])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    (!name.is_empty() && args.contains(&name)).then_some(p)
}
