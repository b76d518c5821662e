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

/// `hoop worker spawn` run from the test (as an operator would).
fn spawn_worker(w: &World, parent: i64, title: &str, prompt: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["worker", "spawn", "--home", HOME_NAME, "--card"])
        .arg(parent.to_string())
        .args(["--title", title, "--", prompt])
        .env(ROOT_ENV, w.root.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
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
        let out = spawn_worker(&w, parent.id, &format!("part {i}"), &prompt);
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
        until("the worker's card finished", || async {
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
        let r = worker::read_record(&w.home, sub.id).unwrap();
        assert_eq!(r.state, WorkerState::Finished);
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
    let out = spawn_worker(&w, parent.id, "one too many", "WORKER-PROMPT");
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

    until("the worker's agent is running", || async {
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
    until("the renewer opened the worker card's lease", || async {
        card_now(&w, sub.id).await.lease_expires_at.is_some()
    })
    .await;
    // `hoop status` lists the live worker with its card and the last
    // hook-status signal its agent's lifecycle hooks sent.
    until(
        "hoop status shows the worker and its last hook signal",
        || async {
            let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
                .args(["status", "--json"])
                .env(ROOT_ENV, w.root.path())
                .output()
                .unwrap();
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
    until("the worker's Bash command runs", || {
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
        until(&format!("worker process {p} is gone"), || async move {
            !hoop_sentinel::proctree::is_live(p)
        })
        .await;
    }
    assert!(worker::live_workers(&w.home).is_empty());
    assert_eq!(
        worker::read_record(&w.home, sub.id).unwrap().state,
        WorkerState::Stopped
    );
    // The card stays as the backend left it (the stopped supervisor did
    // not finish it).
    assert_eq!(card_now(&w, sub.id).await.status, CardStatus::Cancelled);
    assert!(d.term().success());
}
