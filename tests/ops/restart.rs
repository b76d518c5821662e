//! `hoop restart` with real sentinels: a stand-in service manager (a
//! `Runner` that stops the daemon with SIGTERM and starts a new one, its
//! stderr appended to the log file as launchd does) restarts a real daemon
//! while it answers a message.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hoop_core::home::{Home, ROOT_ENV};
use hoop_provision::restart::{self, Options, Outcome};
use hoop_provision::service::{Call, CallOutput, Manager, RunError, Runner};
use hoop_standin::Reply;

use crate::harness::*;
use crate::status::{row, status_json};

/// A service manager for one home: `kickstart -k` stops the running daemon
/// (SIGTERM, waits for it) and starts a new one. Records each call and
/// whether a turn was running (the turn flock, tried) when it came.
pub struct StandinManager {
    launch: Launch,
    home: Home,
    child: Mutex<Option<Child>>,
    pub calls: Mutex<Vec<(Call, bool)>>,
}

/// How the manager starts a home's daemon: the program and its arguments,
/// and the whole environment (as a unit gives it, nothing inherited).
#[derive(Clone, Debug)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Launch {
    /// `hoop sentinel run --home <home>` from the build, in this process's
    /// environment with the hoop root set.
    pub fn from_build(root: &Path, home: &Home) -> Launch {
        let mut env: Vec<(String, String)> = std::env::vars().collect();
        env.push((ROOT_ENV.into(), root.display().to_string()));
        env.push(("HOOP_LOG".into(), "info,hoop_sentinel=debug".into()));
        Launch {
            argv: vec![
                env!("CARGO_BIN_EXE_hoop").into(),
                "sentinel".into(),
                "run".into(),
                "--home".into(),
                home.name.clone(),
            ],
            env,
        }
    }
}

impl StandinManager {
    pub fn start(root: &Path, home: &Home) -> Arc<StandinManager> {
        StandinManager::start_with(home, Launch::from_build(root, home))
    }

    pub fn start_with(home: &Home, launch: Launch) -> Arc<StandinManager> {
        let m = Arc::new(StandinManager {
            launch,
            home: home.clone(),
            child: Mutex::new(None),
            calls: Mutex::new(vec![]),
        });
        *m.child.lock().unwrap() = Some(m.spawn());
        m
    }

    pub fn log(&self) -> PathBuf {
        restart::log_file(&self.home)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    fn spawn(&self) -> Child {
        std::fs::create_dir_all(self.log().parent().unwrap()).unwrap();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .unwrap();
        Command::new(&self.launch.argv[0])
            .args(&self.launch.argv[1..])
            .env_clear()
            .envs(self.launch.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap().as_ref().unwrap().id()
    }

    /// Wait (bounded) until the log holds `needle` `n` times.
    pub async fn wait_log_count(&self, needle: &str, n: usize) {
        let until = Instant::now() + WAIT;
        loop {
            let text = self.log_text();
            if text.matches(needle).count() >= n {
                return;
            }
            assert!(
                Instant::now() < until,
                "no {needle:?} x{n} in the log:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn stop(&self) {
        let mut guard = self.child.lock().unwrap();
        if let Some(mut c) = guard.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let until = Instant::now() + WAIT;
            while c.try_wait().ok().flatten().is_none() {
                if Instant::now() > until {
                    let _ = c.kill();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Runner for StandinManager {
    fn run(&self, call: &Call) -> Result<CallOutput, RunError> {
        let turn_running = !hoop_sentinel::lock::is_free(&self.home.turn_lock_path()).unwrap();
        self.calls
            .lock()
            .unwrap()
            .push((call.clone(), turn_running));
        let restart = match call.program.as_str() {
            "launchctl" => call.args.first().map(String::as_str) == Some("kickstart"),
            "systemctl" => call.args.get(1).map(String::as_str) == Some("restart"),
            _ => false,
        };
        if restart {
            self.stop();
            let new = self.spawn();
            *self.child.lock().unwrap() = Some(new);
        }
        // journalctl answers nothing: the journal of a system-UID account
        // on an older systemd, or a volatile journald.
        Ok(CallOutput {
            code: Some(0),
            ..CallOutput::default()
        })
    }
}

impl Drop for StandinManager {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `--manager none` restarts nothing: it prints the calls a manager would
/// get and says so.
#[test]
fn restart_without_a_manager_prints_the_calls() {
    let root = tempfile::tempdir().unwrap();
    let home = Home::new(root.path(), "bolt").unwrap();
    std::fs::create_dir_all(home.dir()).unwrap();
    std::fs::write(home.config_path(), "{}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["restart", "bolt", "--manager", "none"])
        .env(ROOT_ENV, root.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("bolt: would run: systemctl --user restart hoop-sentinel@bolt.service"),
        "{text}"
    );
    assert!(
        !text.contains("launchctl"),
        "not this machine's manager: {text}"
    );
    assert!(text.contains("nothing restarted"), "{text}");
    let missing = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["restart", "ghost", "--manager", "none"])
        .env(ROOT_ENV, root.path())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stdout).contains("no home"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_waits_for_the_turn_and_the_new_process_and_loses_nothing() {
    let w = World::new(Opts::default()).await;
    let mgr = StandinManager::start(w.root.path(), &w.home);
    mgr.wait_log_count("🔌 WS connected", 1).await;
    let old_pid = mgr.pid();

    // A slow model: the turn is still running when the restart begins.
    w.standin
        .push(Reply::bash(w.say_cmd("the answer"), "answered").delayed(Duration::from_secs(4)));
    let asked = w.post("@bolt a question", false).await;
    mgr.wait_log_count("🧠 turn started", 1).await;

    let (root, m) = (w.root.path().to_path_buf(), mgr.clone());
    let (results, said) = tokio::task::spawn_blocking(move || {
        let opts = Options {
            canary: true,
            come_up: WAIT,
            poll: Duration::from_millis(100),
            ..Options::new(Manager::Launchd, restart::uid())
        };
        let mut said = vec![];
        let r = restart::run(&root, &[HOME_NAME.to_string()], &opts, &*m, &mut |l| {
            said.push(l.to_string())
        });
        (r, said)
    })
    .await
    .unwrap();

    let new_pid = mgr.pid();
    assert_ne!(new_pid, old_pid);
    assert_eq!(
        results,
        [(
            HOME_NAME.to_string(),
            Outcome::Restarted {
                old_pid: Some(old_pid),
                new_pid
            }
        )],
        "{said:?}\n{}",
        mgr.log_text()
    );
    let calls = mgr.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0].0.to_string(),
        format!(
            "launchctl kickstart -k gui/{}/dev.hoop.sentinel.{HOME_NAME}",
            restart::uid()
        )
    );
    assert!(!calls[0].1, "the restart came while a turn was running");
    assert!(
        said.iter()
            .any(|l| l.contains("a turn is running; waiting")),
        "{said:?}"
    );

    // The old daemon finished its turn before it was stopped; the new one
    // printed its own lines after.
    let log = mgr.log_text();
    let finished = log.find("🧠 turn finished").expect("the turn finished");
    let new_rocket = log
        .find(&format!("🚀 {HOME_NAME} pid={new_pid}"))
        .expect("the new 🚀");
    assert!(finished < new_rocket, "{log}");

    // The question was answered exactly once, and the new daemon is up.
    let answers: Vec<_> = w
        .agent_messages()
        .await
        .into_iter()
        .filter(|m| m.body.contains("the answer"))
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers[0].id > asked.id);
    let report = status_json(w.root.path());
    let bolt = row(&report, HOME_NAME);
    assert_eq!(bolt["pid"], new_pid, "{bolt:#}");
    assert_eq!(bolt["ws_connected"], true, "{bolt:#}");
    assert!(
        bolt["context_tokens"].as_u64().is_some_and(|n| n > 0),
        "the session's context after a turn: {bolt:#}"
    );
    // Nothing is left to answer: the new daemon's first round had no turn.
    assert_eq!(log.matches("🧠 turn started").count(), 1, "{log}");
}

/// Under systemd the journal may hold nothing for the unit (issue 22 item
/// 3): the restart sees the new process through its own status file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_systemd_restart_with_an_empty_journal_reads_the_status_file() {
    let w = World::new(Opts::default()).await;
    let mgr = StandinManager::start(w.root.path(), &w.home);
    mgr.wait_log_count("🔌 WS connected", 1).await;
    let old_pid = mgr.pid();
    let (root, m) = (w.root.path().to_path_buf(), mgr.clone());
    let results = tokio::task::spawn_blocking(move || {
        let opts = Options {
            come_up: WAIT,
            poll: Duration::from_millis(100),
            ..Options::new(Manager::Systemd, restart::uid())
        };
        restart::run(&root, &[HOME_NAME.to_string()], &opts, &*m, &mut |_| {})
    })
    .await
    .unwrap();
    let new_pid = mgr.pid();
    assert_eq!(
        results,
        [(
            HOME_NAME.to_string(),
            Outcome::Restarted {
                old_pid: Some(old_pid),
                new_pid
            }
        )],
        "{}",
        mgr.log_text()
    );
    let calls: Vec<String> = mgr
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|(c, _)| c.to_string())
        .collect();
    assert_eq!(
        calls.first().map(String::as_str),
        Some(format!("systemctl --user restart hoop-sentinel@{HOME_NAME}.service").as_str())
    );
    // Whatever else was asked was the journal, which answered nothing.
    assert!(
        calls[1..]
            .iter()
            .all(|c| c.starts_with("journalctl --user --unit")),
        "{calls:?}"
    );
}

/// A canary whose session is due a cold-start compaction longer than the
/// round wait is still restarted: the wait for its first round starts
/// when the compaction's end line is logged (issue 22 item 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_canary_waits_for_its_cold_start_compaction_before_its_first_round() {
    let w = World::new(Opts::default()).await;
    let big = hoop_standin::Usage {
        input_tokens: 50_000,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 400_000,
        output_tokens: 10,
    };
    // First life: one answered message, every API call reporting 450k.
    w.standin.set_usage(hoop_standin::UsageScript::Fixed(big));
    let mgr = StandinManager::start(w.root.path(), &w.home);
    mgr.wait_log_count("🔌 WS connected", 1).await;
    w.standin.push(Reply::bash(w.say_cmd("first"), "ok"));
    w.post("@bolt first", false).await;
    mgr.wait_log_count("🧠 turn finished", 1).await;
    w.standin.set_usage(hoop_standin::UsageScript::Honest);
    std::fs::write(w.home.switch_path("autocompact_auto_off"), "by hand\n").unwrap();
    // The new process's /compact takes longer than the round wait.
    let round_wait = Duration::from_secs(3);
    w.standin
        .push(Reply::Summary("SUMMARY".into()).delayed(round_wait * 3));
    let (root, m) = (w.root.path().to_path_buf(), mgr.clone());
    let (results, said) = tokio::task::spawn_blocking(move || {
        let opts = Options {
            canary: true,
            come_up: WAIT,
            round_wait,
            compaction_wait: Some(WAIT),
            poll: Duration::from_millis(100),
            ..Options::new(Manager::Launchd, restart::uid())
        };
        let mut said = vec![];
        let r = restart::run(&root, &[HOME_NAME.to_string()], &opts, &*m, &mut |l| {
            said.push(l.to_string())
        });
        (r, said)
    })
    .await
    .unwrap();
    assert!(
        matches!(results[0].1, Outcome::Restarted { .. }),
        "{results:?} {said:?}\n{}",
        mgr.log_text()
    );
    assert!(
        said.contains(&format!(
            "{HOME_NAME}: canary compacting its session before its first round (up to {} s)",
            WAIT.as_secs()
        )),
        "{said:?}"
    );
    let log = mgr.log_text();
    assert!(log.contains(restart::COMPACTION_FINISHED), "{log}");
}
