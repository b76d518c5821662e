//! Workers (`hoop worker spawn`): a one-shot `claude` on a sub-card of the
//! agent's card, in its own scratch HOME and working directory; its result,
//! error and usage written on the card; the sentinel's renewer keeping its
//! lease and stopping it when the parent's finish cancels its card. The real
//! CLI against the model stand-in, the reference backend, real processes.

use std::path::Path;
use std::process::Command;

use crate::harness::*;
use hoop_api::CardFilter;
use hoop_api::types::{AssignTask, Card, CardStatus, FinishTask};
use hoop_core::home::ROOT_ENV;
use hoop_sentinel::worker::{self, WorkerState};
use hoop_standin::{Reply, Usage, UsageScript};
use serde_json::json;

const PER_RESPONSE: Usage = Usage {
    input_tokens: 1_000,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 20_000,
    output_tokens: 7,
};

/// Kills every worker process tree of the home when the test ends, passed
/// or failed: a worker is detached from the test by design.
struct ReapWorkers(hoop_core::home::Home);

impl Drop for ReapWorkers {
    fn drop(&mut self) {
        for w in worker::live_workers(&self.0) {
            for p in hoop_sentinel::proctree::live_tree(w.pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", &p.to_string()])
                    .status();
            }
        }
    }
}

fn spawn_cmd(parent: i64, title: &str, prompt: &str) -> String {
    format!(
        "hoop worker spawn --home {HOME_NAME} --card {parent} --title \"{title}\" -- \"{prompt}\""
    )
}

/// `hoop worker spawn` run from the test (as an operator would), bounded in
/// time so a spawn that hangs fails the test instead of the suite.
async fn spawn_worker(w: &World, parent: i64, title: &str, prompt: &str) -> std::process::Output {
    run_bounded(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(["worker", "spawn", "--home", HOME_NAME, "--card"])
            .arg(parent.to_string())
            .args(["--title", title, "--", prompt])
            .env(ROOT_ENV, w.root.path())
            .env("NO_COLOR", "1"),
    )
    .await
}

async fn sub_cards(w: &World, parent: i64) -> Vec<Card> {
    w.agent_client
        .cards(&CardFilter {
            assignee: Some("any".into()),
            parent_id: Some(parent),
            ..CardFilter::default()
        })
        .await
        .unwrap()
}

async fn card_now(w: &World, id: i64) -> Card {
    w.agent_client.card(w.room.id, id).await.unwrap()
}

fn files_under(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A worker that ends on its own: `done` with its result and exactly its
/// own tokens as the card's cost; one whose model fails: `failed` carrying
/// the error text. Each runs in its scratch HOME, never the account's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_writes_its_result_usage_or_error_on_its_sub_card() {
    let w = World::new(Opts::default()).await;
    let _reap = ReapWorkers(w.home.clone());
    w.standin.set_usage(UsageScript::Fixed(PER_RESPONSE));
    let parent = w.claimed_card("the big job").await;
    // (model reply, status, result, error) per worker, in order.
    let table = [
        (
            Reply::text("the heavy thing is done"),
            CardStatus::Done,
            Some("the heavy thing is done"),
            None,
        ),
        (
            Reply::server_error(),
            CardStatus::Failed,
            None,
            Some("Internal server error"),
        ),
    ];
    for (i, (reply, status, result, error)) in table.into_iter().enumerate() {
        w.standin.push(reply);
        let prompt = format!("WORKER-PROMPT number {i}");
        let out = spawn_worker(&w, parent.id, &format!("part {i}"), &prompt).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let subs = sub_cards(&w, parent.id).await;
        let sub = subs
            .iter()
            .find(|c| c.title == format!("part {i}"))
            .expect("the sub-card")
            .clone();
        assert_eq!(
            (sub.parent_id, sub.conversation_id, sub.assignee_id),
            (Some(parent.id), w.room.id, Some(w.agent.id))
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&format!("card {}", sub.id)), "{stdout}");
        w.until("the worker's card finished", || async {
            !card_now(&w, sub.id).await.status.is_live()
        })
        .await;
        let c = card_now(&w, sub.id).await;
        assert_eq!(
            (c.status, c.result.as_deref()),
            (status, result),
            "worker {i}: {c:?}"
        );
        match error {
            Some(e) => assert!(
                c.error.as_deref().is_some_and(|t| t.contains(e)),
                "worker {i}: {c:?}"
            ),
            None => assert_eq!(c.error, None),
        }
        if status == CardStatus::Done {
            // One model response: exactly its numbers, as end − start.
            let p = PER_RESPONSE;
            assert_eq!(
                (c.tokens_in, c.tokens_cached_in, c.tokens_out),
                (
                    Some(p.input_tokens as i64),
                    Some((p.cache_read_input_tokens + p.cache_creation_input_tokens) as i64),
                    Some(p.output_tokens as i64)
                ),
                "{c:?}"
            );
        }
        // The card is finished before the supervisor closes its record.
        until_closed(&w, sub.id).await;
        // The model got the prompt from this worker.
        assert!(
            w.standin
                .requests()
                .iter()
                .any(|q| q.last_user_text().contains(&prompt)),
            "worker {i}'s prompt never reached the model"
        );
        // Its transcript is in its scratch HOME.
        let scratch = worker::scratch_home(&w.home, sub.id);
        let transcripts = files_under(&scratch.join(".claude/projects"));
        assert_eq!(
            transcripts
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .count(),
            1,
            "{transcripts:?}"
        );
    }
    // Nothing of the workers in the account's own HOME or the home's state.
    let account = files_under(&w.root.path().join("claude-home"));
    assert!(
        account
            .iter()
            .all(|p| !p.to_string_lossy().contains("workers")),
        "{account:?}"
    );
    assert!(!w.home.session_id_path().exists(), "no session was minted");
    assert!(!w.home.cursors_path().exists(), "no cursor was written");
}

/// The ninth live sub-card is refused with a clear message, and nothing is
/// stored or started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ninth_live_worker_is_refused_in_words() {
    let w = World::new(Opts::default()).await;
    let parent = w.claimed_card("the big job").await;
    for i in 0..8 {
        w.agent_client
            .assign_task(
                w.room.id,
                &AssignTask {
                    title: format!("sub {i}"),
                    assignee_id: Some(w.agent.id),
                    parent_id: Some(parent.id),
                    message_id: None,
                },
            )
            .await
            .unwrap();
    }
    let out = spawn_worker(&w, parent.id, "one too many", "WORKER-PROMPT").await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "no worker started: card {} already has 8 live sub-cards",
            parent.id
        )),
        "{err}"
    );
    assert_eq!(sub_cards(&w, parent.id).await.len(), 8);
    assert!(!w.home.workers_dir().exists());
    assert_eq!(w.standin.request_count(), 0);
}

/// Done when (issue 13): the sentinel's agent spawns a worker through a
/// Bash tool call the stand-in model issues; the worker runs on its
/// sub-card with its lease kept by the sentinel's renewer; the parent's
/// finish cancels the sub-card and the sentinel stops the worker and logs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sentinels_agent_spawns_a_worker_and_the_parents_finish_stops_it() {
    let mut opts = Opts::default();
    opts.timings["worker_poll_ms"] = json!(300);
    let w = World::new(opts).await;
    let _reap = ReapWorkers(w.home.clone());
    let parent = w.claimed_card("the big job").await;
    // The sentinel's turn: spawn the worker. The worker's own first request
    // takes the next reply: a long Bash command, so it is still running.
    w.standin.push(Reply::bash(
        format!(
            "{} && {}",
            spawn_cmd(parent.id, "heavy lifting", "WORKER-PROMPT lift it"),
            w.say_cmd("a worker is on it")
        ),
        "handed over",
    ));
    w.standin.push(Reply::bash("sleep 297", "the sleep ended"));
    let mut d = w.spawn();
    d.ready().await;
    w.post("@bolt please do the big job", false).await;

    w.until("the worker's agent is running", || async {
        w.standin
            .requests()
            .iter()
            .any(|q| q.last_user_text().contains("WORKER-PROMPT lift it"))
    })
    .await;
    let sub = {
        let subs = sub_cards(&w, parent.id).await;
        assert_eq!(subs.len(), 1, "{subs:?}");
        subs[0].clone()
    };
    assert_eq!(
        (sub.title.as_str(), sub.status, sub.assignee_id),
        ("heavy lifting", CardStatus::Working, Some(w.agent.id))
    );
    let live = worker::live_workers(&w.home);
    assert_eq!(live.iter().map(|l| l.card_id).collect::<Vec<_>>(), [sub.id]);
    let pid = live[0].pid;
    // The renewer keeps the worker's card: its lease is open.
    w.until("the renewer opened the worker card's lease", || async {
        card_now(&w, sub.id).await.lease_expires_at.is_some()
    })
    .await;
    // `hoop status` lists the live worker with its card and the last
    // hook-status signal its agent's lifecycle hooks sent.
    w.until(
        "hoop status shows the worker and its last hook signal",
        || async {
            let out = run_bounded(
                tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
                    .args(["status", "--json"])
                    .env(ROOT_ENV, w.root.path()),
            )
            .await;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let workers = &v["homes"][0]["workers"];
            workers[0]["card_id"] == json!(sub.id)
                && workers[0]["parent_id"] == json!(parent.id)
                && workers.as_array().is_some_and(|a| a.len() == 1)
                && workers[0]["last_signal"].as_str().is_some_and(|l| {
                    l.starts_with(&format!("{}: running", sub.id))
                        && l.contains("non-authoritative")
                })
        },
    )
    .await;
    // The worker's processes: the supervisor, the CLI, and the Bash command
    // it runs in a process group of its own.
    let mut procs = hoop_sentinel::proctree::live_tree(pid);
    w.until("the worker's Bash command runs", || {
        procs = hoop_sentinel::proctree::live_tree(pid);
        let sleeping = procs.iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with("sleep\x00297"))
        });
        async move { sleeping }
    })
    .await;
    // The parent's finish cancels the live sub-card (the backend) …
    let fin = w
        .agent_client
        .finish_task(w.room.id, parent.id, &FinishTask::status(CardStatus::Done))
        .await
        .unwrap();
    assert!(fin.updated);
    assert_eq!(card_now(&w, sub.id).await.status, CardStatus::Cancelled);
    // … and the sentinel stops the worker and says so.
    d.wait_log("🛑 worker stopped").await;
    let line = d
        .log_text()
        .lines()
        .find(|l| l.contains("🛑 worker stopped"))
        .unwrap()
        .to_string();
    assert!(line.contains(&format!("card={}", sub.id)), "{line}");
    assert!(line.contains("cancelled"), "{line}");
    for p in procs {
        w.until(&format!("worker process {p} is gone"), || async move {
            !hoop_sentinel::proctree::is_live(p)
        })
        .await;
    }
    assert!(worker::live_workers(&w.home).is_empty());
    let r = worker::read_record(&w.home, sub.id).unwrap();
    assert_eq!(r.state, WorkerState::Stopped);
    assert!(
        r.detail.as_deref().is_some_and(|d| d.contains("cancelled")),
        "the reason is kept with the worker: {r:?}"
    );
    assert_only_record_and_transcripts(&w, sub.id);
    // The card stays as the backend left it (the stopped supervisor did
    // not finish it).
    assert_eq!(card_now(&w, sub.id).await.status, CardStatus::Cancelled);
    assert!(d.term().success());
}

/// The cards of the home's live workers.
fn live_cards(w: &World) -> Vec<i64> {
    worker::live_workers(&w.home)
        .iter()
        .map(|l| l.card_id)
        .collect()
}

/// Wait until the worker's record says it finished (its closing is over).
async fn until_closed(w: &World, card: i64) {
    w.until("the worker's record is closed", || async {
        worker::read_record(&w.home, card).is_ok_and(|r| r.state == WorkerState::Finished)
    })
    .await;
}

/// The files left in a worker's directory, relative and sorted.
fn worker_files(w: &World, card: i64) -> Vec<String> {
    let d = worker::worker_dir(&w.home, card);
    let mut left: Vec<String> = files_under(&d)
        .into_iter()
        .map(|p| p.strip_prefix(&d).unwrap().display().to_string())
        .collect();
    left.sort();
    left
}

/// Nothing of an ended worker is left on disk but its record and its
/// agent's transcripts (the account's usage totals read them).
fn assert_only_record_and_transcripts(w: &World, card: i64) {
    let left = worker_files(w, card);
    assert!(
        left.iter().any(|f| f == "worker.json"),
        "the record stays: {left:?}"
    );
    for f in &left {
        assert!(
            f == "worker.json"
                || (f.starts_with("home/.claude/projects/") && f.ends_with(".jsonl")),
            "{f} is left of worker {card}: {left:?}"
        );
    }
}

fn kill9_tree(pid: u32) {
    for p in hoop_sentinel::proctree::live_tree(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Issue 23 item 5: `kill -9` of a worker's whole tree. The sentinel sees
/// the supervisor gone, stops renewing the card and finishes it `failed`
/// with what is known (its pid and the end of its log); the worker's
/// leftovers go. Not the case it must not fire on: a live worker beside it
/// is left working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_with_its_tree_fails_its_card_with_what_is_known() {
    let mut opts = Opts::default();
    opts.timings["worker_poll_ms"] = json!(300);
    let w = World::new(opts).await;
    let _reap = ReapWorkers(w.home.clone());
    let parent = w.claimed_card("the big job").await;
    w.standin.push(Reply::bash("sleep 297.1", "never"));
    w.standin.push(Reply::bash("sleep 297.2", "never"));
    let mut d = w.spawn();
    d.ready().await;
    for (i, title) in ["doomed", "survivor"].iter().enumerate() {
        let out = spawn_worker(&w, parent.id, title, &format!("WORKER-PROMPT {i}")).await;
        assert!(out.status.success(), "{out:?}");
        w.until("the worker's command runs", || async {
            worker::live_workers(&w.home).len() == i + 1
                && hoop_sentinel::proctree::live_tree(worker::live_workers(&w.home)[i].pid).len()
                    >= 3
        })
        .await;
    }
    let subs = sub_cards(&w, parent.id).await;
    let doomed = subs.iter().find(|c| c.title == "doomed").unwrap().id;
    let survivor = subs.iter().find(|c| c.title == "survivor").unwrap().id;
    let pid = worker::read_record(&w.home, doomed).unwrap().pid.unwrap();
    w.until("the worker is announced (its log has lines)", || async {
        worker::read_record(&w.home, doomed).unwrap().announced
    })
    .await;
    kill9_tree(pid);
    w.until("the orphaned card is finished", || async {
        card_now(&w, doomed).await.status == CardStatus::Failed
    })
    .await;
    let c = card_now(&w, doomed).await;
    let error = c.error.unwrap_or_default();
    assert!(
        error.starts_with(&format!(
            "the worker's supervisor (pid {pid}) is gone before it finished its card; its log ends with:"
        )),
        "{error}"
    );
    assert!(error.contains("worker agent starting"), "{error}");
    until_closed(&w, doomed).await;
    assert_only_record_and_transcripts(&w, doomed);
    // The live one is untouched: still working, still renewed.
    assert_eq!(card_now(&w, survivor).await.status, CardStatus::Working);
    assert_eq!(live_cards(&w), [survivor]);
    assert!(
        d.log_text()
            .contains("the worker's supervisor is gone; finishing its card")
    );
    assert!(d.term().success());
}

/// Issue 23 item 5: the backend is down when the worker ends. The finish
/// is kept in the worker's record (the result text on disk), retried with
/// backoff, and lands once the backend is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_made_while_the_backend_is_down_is_kept_and_lands_later() {
    let mut w = World::new(Opts::default()).await;
    let _reap = ReapWorkers(w.home.clone());
    let parent = w.claimed_card("the big job").await;
    let go = w.root.path().join("go");
    w.standin.push(Reply::bash(
        format!("while [ ! -e {} ]; do sleep 0.1; done", go.display()),
        "the heavy thing is done",
    ));
    let out = spawn_worker(&w, parent.id, "part", "WORKER-PROMPT").await;
    assert!(out.status.success(), "{out:?}");
    let sub = sub_cards(&w, parent.id).await[0].id;
    w.until("the worker's command waits", || async {
        w.standin.requests().len() == 1
    })
    .await;
    w.stop_backend().await;
    std::fs::write(&go, "").unwrap();
    // The result is on disk while the finish cannot land.
    w.until("the finish is kept in the record", || async {
        worker::read_record(&w.home, sub).is_ok_and(|r| {
            r.state == WorkerState::Finishing
                && r.finish.as_ref().and_then(|f| f.result.as_deref())
                    == Some("the heavy thing is done")
        })
    })
    .await;
    let log = worker::log_path(&w.home, sub);
    w.until("the finish was tried again", || async {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("finishing the worker card failed; trying again")
            .count()
            >= 3
    })
    .await;
    w.start_backend().await;
    w.until("the card is done", || async {
        w.agent_client
            .card(w.room.id, sub)
            .await
            .is_ok_and(|c| c.status == CardStatus::Done)
    })
    .await;
    let c = card_now(&w, sub).await;
    assert_eq!(c.result.as_deref(), Some("the heavy thing is done"));
    until_closed(&w, sub).await;
    let r = worker::read_record(&w.home, sub).unwrap();
    assert_eq!(r.finish, None);
    assert!(
        r.log_tail
            .as_deref()
            .is_some_and(|t| t.contains("worker card finished: done")),
        "{r:?}"
    );
    assert_only_record_and_transcripts(&w, sub);
}

// ------------------------------------------------------------ restarts

/// A stand-in for a systemd user manager running `hoop-sentinel@bolt`: the
/// daemon's processes carry `HOOP_TEST_CGROUP=<unit>` in their environment
/// (a process inherits its parent's cgroup, as it inherits this variable);
/// `systemctl --user restart` SIGTERMs the main process and, once it exited,
/// SIGKILLs every process still in the unit's cgroup (`KillMode=mixed`),
/// then starts a new daemon; `journalctl` answers with the daemon's stderr.
/// Its `systemd-run` (a script first on the daemon's PATH) records its
/// arguments and moves the command into the named scope before running it.
struct StandinSystemd {
    root: std::path::PathBuf,
    env: Vec<(String, String)>,
    child: std::sync::Mutex<Option<std::process::Child>>,
    calls: std::sync::Mutex<Vec<String>>,
}

const SENTINEL_UNIT: &str = "hoop-sentinel@bolt.service";

impl StandinSystemd {
    fn start(w: &World) -> std::sync::Arc<StandinSystemd> {
        let root = w.root.path().to_path_buf();
        let bin = root.join("standin-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let run = bin.join("systemd-run");
        std::fs::write(
            &run,
            r#"#!/bin/sh
printf '%s\n' "$*" >> "$HOOP_TEST_SYSTEMD_RUN_CALLS"
unit=
while [ $# -gt 0 ]; do
  case "$1" in
    --unit=*) unit="${1#--unit=}" ;;
    --) shift; break ;;
  esac
  shift
done
export HOOP_TEST_CGROUP="$unit.scope"
exec "$@"
"#,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut env: Vec<(String, String)> = std::env::vars().collect();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        env.retain(|(k, _)| k != "PATH");
        env.extend([
            ("PATH".to_string(), path),
            (ROOT_ENV.to_string(), root.display().to_string()),
            (
                "HOOP_LOG".to_string(),
                "info,hoop_sentinel=debug".to_string(),
            ),
            ("NO_COLOR".to_string(), "1".to_string()),
            ("INVOCATION_ID".to_string(), "0f3a9c2b7d".to_string()),
            ("HOOP_TEST_CGROUP".to_string(), SENTINEL_UNIT.to_string()),
            (
                "HOOP_TEST_SYSTEMD_RUN_CALLS".to_string(),
                root.join("systemd-run.calls").display().to_string(),
            ),
        ]);
        let m = std::sync::Arc::new(StandinSystemd {
            root,
            env,
            child: std::sync::Mutex::new(None),
            calls: std::sync::Mutex::new(vec![]),
        });
        *m.child.lock().unwrap() = Some(m.spawn());
        m
    }

    fn journal(&self) -> std::path::PathBuf {
        self.root.join("journal.log")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.journal()).unwrap_or_default()
    }

    async fn wait_log_count(&self, needle: &str, n: usize) {
        until_or(
            &format!("{needle:?} x{n} in the journal"),
            || async { self.log_text().matches(needle).count() >= n },
            || self.log_text(),
        )
        .await;
    }

    fn spawn(&self) -> std::process::Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.journal())
            .unwrap();
        Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(["sentinel", "run", "--home", HOME_NAME])
            .env_clear()
            .envs(self.env.iter().cloned())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::from(log))
            .spawn()
            .unwrap()
    }

    /// Pids whose environment puts them in `unit`'s cgroup.
    fn cgroup(unit: &str) -> Vec<u32> {
        let want = format!("HOOP_TEST_CGROUP={unit}");
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()))
            })
            .filter(|p| hoop_sentinel::proctree::is_live(*p))
            .collect()
    }

    fn restart_unit(&self) {
        let mut guard = self.child.lock().unwrap();
        if let Some(mut c) = guard.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
        // KillMode=mixed: what is left in the unit's cgroup goes.
        for p in Self::cgroup(SENTINEL_UNIT) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        *guard = Some(self.spawn());
    }

    fn stop(&self) -> Option<std::process::ExitStatus> {
        let mut c = self.child.lock().unwrap().take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        c.wait().ok()
    }
}

impl hoop_provision::service::Runner for StandinSystemd {
    fn run(
        &self,
        call: &hoop_provision::service::Call,
    ) -> Result<hoop_provision::service::CallOutput, hoop_provision::service::RunError> {
        self.calls.lock().unwrap().push(call.to_string());
        let args: Vec<&str> = call.args.iter().map(String::as_str).collect();
        let mut out = hoop_provision::service::CallOutput {
            code: Some(0),
            ..Default::default()
        };
        match (call.program.as_str(), args.as_slice()) {
            ("systemctl", ["--user", "restart", unit]) if *unit == SENTINEL_UNIT => {
                self.restart_unit()
            }
            ("journalctl", _) => out.stdout = self.log_text(),
            _ => out.code = Some(1),
        }
        Ok(out)
    }
}

impl Drop for StandinSystemd {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A `from=… to=… of=…` span of a `📬 patrol findings delivered` line.
fn delivered_spans(log: &str) -> Vec<(usize, usize)> {
    let field = |line: &str, name: &str| -> usize {
        let at = line.find(&format!(" {name}=")).unwrap() + name.len() + 2;
        line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    log.lines()
        .filter(|l| l.contains("📬 patrol findings delivered"))
        .map(|l| (field(l, "from"), field(l, "to")))
        .collect()
}

/// Done when (issue 23, with issue 22 item 1): the sentinel is restarted
/// through `hoop restart` under (a stand-in of) systemd while a worker runs
/// and while a patrol's big round — 2,000 findings, many briefs — is being
/// delivered. The worker runs in a scope of its own, so the unit's
/// `KillMode=mixed` does not stop it; it finishes its sub-card with its
/// result; its lane's end signals reach the restarted sentinel on the same
/// port; its card got one "worker running" line, not two; nothing of it is
/// left on disk but its record and transcripts. Every finding is delivered
/// exactly once and reaches the model in at most one first offer and one
/// re-offer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_under_systemd_keeps_the_worker_and_the_patrols_big_round() {
    let mut opts = Opts::default();
    opts.timings["worker_poll_ms"] = json!(300);
    let w = World::new(opts).await;
    let _reap = ReapWorkers(w.home.clone());
    let flag = w.root.path().join("patrol-on");
    let scan = w.root.path().join("scan.sh");
    std::fs::write(
        &scan,
        format!(
            r#"#!/bin/sh
[ -e {flag} ] || exit 3
since=$(cat "$HOOP_PATROL_CURSOR" 2>/dev/null || echo 0)
[ "$since" -ge 2000 ] && exit 3
seq -f 'finding %04g: ticket is new, please look' 1 2000
echo 2000 > "$HOOP_PATROL_CURSOR_NEXT"
"#,
            flag = flag.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&scan, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg_path = w.home.dir().join("sentinel.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg_path).unwrap()).unwrap();
    cfg["patrols"] = json!([{"name": "scan", "interval_sec": 1, "prescan": [scan],
        "quiet_exit": 3, "brief": "Post one line per finding to the ops room."}]);
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();

    let parent = w.claimed_card("the big job").await;
    let go = w.root.path().join("go");
    // The sentinel's turn spawns the worker; the worker's agent waits for
    // `go` in a Bash command, then answers.
    w.standin.push(Reply::bash(
        format!(
            "{} && {}",
            spawn_cmd(parent.id, "heavy lifting", "WORKER-PROMPT lift it"),
            w.say_cmd("a worker is on it")
        ),
        "handed over",
    ));
    w.standin.push(Reply::bash(
        format!("while [ ! -e {} ]; do sleep 0.1; done", go.display()),
        "the heavy thing is done",
    ));
    let sd = StandinSystemd::start(&w);
    sd.wait_log_count("🔌 WS connected", 1).await;
    let port_before = std::fs::read_to_string(w.root.path().join("hook-status/bolt/port")).unwrap();
    w.post("@bolt please do the big job", false).await;
    let deadline = std::time::Instant::now() + WAIT;
    while !w
        .standin
        .requests()
        .iter()
        .any(|q| q.last_user_text().contains("WORKER-PROMPT lift it"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the worker's agent never asked the model; {} request(s); journal:\n{}",
            w.standin.request_count(),
            sd.log_text()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let sub = sub_cards(&w, parent.id).await[0].id;
    w.until("the worker is announced", || async {
        worker::read_record(&w.home, sub).is_ok_and(|r| r.announced)
    })
    .await;
    // The supervisor was started in a scope of its own.
    let run_calls = std::fs::read_to_string(w.root.path().join("systemd-run.calls")).unwrap();
    assert_eq!(
        run_calls,
        format!(
            "--user --scope --quiet --collect --unit=hoop-worker-bolt-{sub} -- {} worker run --home bolt --card {sub}\n",
            env!("CARGO_BIN_EXE_hoop")
        )
    );
    // The patrol's big round starts; restart once its first span landed.
    std::fs::write(&flag, "").unwrap();
    sd.wait_log_count("📬 patrol findings delivered", 1).await;
    let old_pid = sd.child.lock().unwrap().as_ref().unwrap().id();
    let (root, m) = (w.root.path().to_path_buf(), sd.clone());
    let results = tokio::task::spawn_blocking(move || {
        let opts = hoop_provision::restart::Options {
            come_up: WAIT,
            poll: std::time::Duration::from_millis(100),
            ..hoop_provision::restart::Options::new(
                hoop_provision::service::Manager::Systemd,
                hoop_provision::restart::uid(),
            )
        };
        hoop_provision::restart::run(&root, &[HOME_NAME.to_string()], &opts, &*m, &mut |_| {})
    })
    .await
    .unwrap();
    let new_pid = sd.child.lock().unwrap().as_ref().unwrap().id();
    assert_eq!(
        results,
        [(
            HOME_NAME.to_string(),
            hoop_provision::restart::Outcome::Restarted {
                old_pid: Some(old_pid),
                new_pid
            }
        )],
        "{}",
        sd.log_text()
    );
    let calls = sd.calls.lock().unwrap().clone();
    assert_eq!(
        calls[0],
        format!("systemctl --user restart {SENTINEL_UNIT}")
    );
    assert!(
        calls[1..]
            .iter()
            .all(|c| c.starts_with("journalctl --user --unit hoop-sentinel@bolt.service ")),
        "{calls:?}"
    );
    // The worker survived the restart; let it finish.
    assert_eq!(live_cards(&w), [sub]);
    assert_eq!(
        std::fs::read_to_string(w.root.path().join("hook-status/bolt/port")).unwrap(),
        port_before,
        "the lane kept its port"
    );
    std::fs::write(&go, "").unwrap();
    w.until("the worker's card is done", || async {
        card_now(&w, sub).await.status == CardStatus::Done
    })
    .await;
    assert_eq!(
        card_now(&w, sub).await.result.as_deref(),
        Some("the heavy thing is done")
    );
    // Its end signals reached the restarted sentinel's lane.
    w.until("the worker's end signal is recorded", || async {
        hoop_guards::lane::latest_signals(w.root.path(), HOME_NAME)
            .iter()
            .any(|v| {
                v.run_id == sub.to_string()
                    && v.recent
                        .iter()
                        .any(|r| r.signal == hoop_guards::lane::Signal::Ended)
            })
    })
    .await;
    until_closed(&w, sub).await;
    assert_only_record_and_transcripts(&w, sub);
    assert_eq!(
        sd.log_text()
            .matches("worker announced on its card")
            .count(),
        1,
        "one 'worker running' line across the restart"
    );
    // The big round completes across the restart.
    sd.wait_log_count("📌 patrol cursor committed", 1).await;
    let mut spans = delivered_spans(&sd.log_text());
    spans.sort();
    let mut next = 1;
    for (from, to) in &spans {
        assert_eq!(*from, next, "delivered spans {spans:?}");
        next = to + 1;
    }
    assert_eq!(next, 2001, "delivered spans {spans:?}");
    let mut first: std::collections::BTreeMap<String, usize> = Default::default();
    let mut again: std::collections::BTreeMap<String, usize> = Default::default();
    for q in w.standin.requests() {
        // The last instruction block only: a cut turn leaves its message in
        // the next request's last user turn.
        let full = q.last_user_text();
        let Some(at) = full.rfind("📬 本轮指令") else {
            continue;
        };
        let text = &full[at..];
        if !text.contains("Patrol \"scan\"") {
            continue;
        }
        let book = if text.contains("This is offered again") {
            &mut again
        } else {
            &mut first
        };
        for l in text.lines().filter(|l| l.starts_with("finding ")) {
            *book.entry(l.to_string()).or_default() += 1;
        }
    }
    for i in 1..=2000 {
        let f = format!("finding {i:04}: ticket is new, please look");
        let (a, b) = (
            first.get(&f).copied().unwrap_or(0),
            again.get(&f).copied().unwrap_or(0),
        );
        assert!(a + b >= 1 && a <= 1 && b <= 1, "{f}: first {a}, again {b}");
    }
    // Shut down: the lane's address is withdrawn, its port kept.
    assert!(sd.stop().is_some_and(|s| s.success()));
    assert!(!w.root.path().join("hook-status/bolt/endpoint").exists());
    assert!(w.root.path().join("hook-status/bolt/port").exists());
}

/// Issue 23 item 6: what a worker's agent left running — here a command
/// in a session of its own whose parent exited — is stopped when the
/// worker ends (its supervisor adopts it as a subreaper).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_leaves_no_process_behind() {
    let w = World::new(Opts::default()).await;
    let _reap = ReapWorkers(w.home.clone());
    let parent = w.claimed_card("the big job").await;
    w.standin.push(Reply::bash(
        "(setsid sleep 603.31 &) ; echo started",
        "left it running",
    ));
    let out = spawn_worker(&w, parent.id, "part", "WORKER-PROMPT").await;
    assert!(out.status.success(), "{out:?}");
    let sub = sub_cards(&w, parent.id).await[0].id;
    w.until("the worker's card is done", || async {
        card_now(&w, sub).await.status == CardStatus::Done
    })
    .await;
    assert_eq!(
        card_now(&w, sub).await.result.as_deref(),
        Some("left it running")
    );
    until_closed(&w, sub).await;
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c == b"sleep\x00603.31\x00")
            })
            .filter(|p| hoop_sentinel::proctree::is_live(*p))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        sleeping(),
        Vec::<u32>::new(),
        "the worker's orphan outlived it"
    );
}
