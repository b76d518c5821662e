//! `hoop worker …`: hand heavy work to a one-shot agent on a sub-card
//! (`hoop_sentinel::worker` holds the rules; this file only moves data
//! between the backend, files and processes).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use anyhow::{Context, anyhow, bail};
use hoop_api::types::{AssignTask, CardId, CardStatus, FinishTask, codes};
use hoop_api::{CardFilter, Client, ClientConfig, Error as ApiError};
use hoop_core::clock::now_unix;
use hoop_core::fsutil::{self, WriteOptions};
use hoop_core::home::{Home, ROOT_ENV};
use hoop_core::limits::MAX_LIVE_SUBCARDS;
use hoop_sentinel::config::SentinelConfig;
use hoop_sentinel::constants::WORKER_TIMEOUT;
use hoop_sentinel::worker::{self, AgentKind, Outcome, WorkerRecord, WorkerState};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Start a one-shot agent on a new sub-card of CARD, in its own scratch
    /// HOME and working directory; prints the sub-card and returns at once.
    Spawn(SpawnArgs),
    /// The home's live workers (card, parent, agent, pid).
    List {
        #[arg(long, env = "HOOP_HOME")]
        home: String,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// The supervisor `spawn` starts (runs the agent, then finishes its card).
    #[command(hide = true)]
    Run {
        #[arg(long)]
        home: String,
        #[arg(long)]
        card: CardId,
    },
}

#[derive(clap::Args)]
pub struct SpawnArgs {
    /// The home (account) whose agent hands the work over.
    #[arg(long, env = "HOOP_HOME")]
    home: String,
    /// The parent card (the caller's own card).
    #[arg(long)]
    card: CardId,
    /// The sub-card's title.
    #[arg(long)]
    title: String,
    /// `claude` (default) or `cursor-agent`.
    #[arg(long, default_value = "claude")]
    agent: String,
    /// The prompt, or the path of a file holding it (after `--`).
    #[arg(last = true, required = true)]
    prompt: Vec<String>,
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    match c {
        Command::Spawn(a) => rt.block_on(spawn(a)),
        Command::List { home, json } => list(&home, json),
        Command::Run { home, card } => rt.block_on(supervise(&home, card)),
    }
}

fn client_for(home: &Home) -> anyhow::Result<Client> {
    Ok(Client::new(ClientConfig::from_home(home)?)?)
}

/// The prompt: a readable file's text, else the words themselves.
fn read_prompt(words: &[String]) -> anyhow::Result<String> {
    let text = match words {
        [one] if Path::new(one).is_file() => std::fs::read_to_string(one)
            .with_context(|| format!("reading the prompt file {one}"))?,
        _ => words.join(" "),
    };
    if text.trim().is_empty() {
        bail!("the prompt is empty");
    }
    Ok(text)
}

async fn spawn(a: SpawnArgs) -> anyhow::Result<ExitCode> {
    let agent = AgentKind::parse(&a.agent)
        .ok_or_else(|| anyhow!("--agent is `claude` or `cursor-agent`, not {:?}", a.agent))?;
    let prompt = read_prompt(&a.prompt)?;
    let home = Home::open(&a.home)?;
    let cfg = SentinelConfig::load(&home.dir())?;
    let client = client_for(&home)?;
    let me = client.me().await.context("logging in")?;
    let filter = CardFilter {
        assignee: Some("any".into()),
        id: Some(a.card),
        ..CardFilter::default()
    };
    let parent = client
        .cards(&filter)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("card {} is not a card this account can see", a.card))?;
    if !parent.status.is_live() {
        bail!(
            "card {} is finished; a worker needs a live parent card",
            parent.id
        );
    }
    let room = parent.conversation_id;
    let task = AssignTask {
        title: a.title.clone(),
        assignee_id: Some(me.id),
        parent_id: Some(parent.id),
        message_id: None,
    };
    let card = match client.start_task(room, &task).await {
        Ok(c) => c,
        Err(ApiError::Refused { code, message, .. }) if code == codes::TOO_MANY_SUBCARDS => {
            bail!(
                "no worker started: card {} already has {MAX_LIVE_SUBCARDS} live sub-cards, \
                 the most a card may have ({message}); wait for a worker to end or finish \
                 one of its sub-cards first",
                parent.id
            )
        }
        Err(ApiError::Orphaned {
            task_id, message, ..
        }) => {
            // Production's two steps: the card stands, unclaimed. It is
            // ours: finish it so that no orphan stays on the board.
            let why = format!("the worker could not claim its card: {message}");
            let _ = client.finish_task(room, task_id, &failed(&why)).await;
            bail!("no worker started: {why} (card {task_id} was failed)")
        }
        Err(e) => return Err(e).context("creating the worker's sub-card"),
    };
    match prepare_and_start(&home, &cfg, agent, &card, &prompt) {
        Ok(pid) => {
            println!(
                "worker started: card {} under card {} (room {room}), {} pid {pid}; log {}",
                card.id,
                parent.id,
                agent.word(),
                worker::log_path(&home, card.id).display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let why = format!("the worker could not start: {e:#}");
            let _ = client.finish_task(room, card.id, &failed(&why)).await;
            Err(anyhow!("{why} (card {} was failed)", card.id))
        }
    }
}

fn failed(error: &str) -> FinishTask {
    FinishTask {
        error: Some(worker::bounded(error)),
        ..FinishTask::status(CardStatus::Failed)
    }
}

/// Scratch HOME, working directory, prompt, lane, record; then the detached
/// supervisor. Returns its pid.
fn prepare_and_start(
    home: &Home,
    cfg: &SentinelConfig,
    agent: AgentKind,
    card: &hoop_api::types::Card,
    prompt: &str,
) -> anyhow::Result<u32> {
    let scratch = worker::scratch_home(home, card.id);
    let account_home = cfg
        .env
        .get("HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .ok_or_else(|| anyhow!("no HOME for the account's agent"))?;
    let seeded = worker::seed_scratch_home(&account_home, &scratch, agent)?;
    tracing::debug!(card = card.id, ?seeded, "scratch HOME seeded");
    let work = worker::workdir(home, card.id);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    fsutil::write_atomic(
        &worker::prompt_path(home, card.id),
        prompt.as_bytes(),
        WriteOptions::SECRET,
    )?;
    let lane = attach_lane(home, card.id, &scratch, agent);
    tracing::debug!(card = card.id, lane, "hook-status lane");
    let mut record = WorkerRecord {
        card_id: card.id,
        parent_id: card.parent_id.unwrap_or_default(),
        conversation_id: card.conversation_id,
        title: card.title.clone(),
        agent,
        state: WorkerState::Running,
        pid: None,
        started_at: now_unix(),
        ended_at: None,
        detail: None,
    };
    worker::write_record(home, &record)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(worker::log_path(home, card.id))?;
    let exe = std::env::current_exe().context("locating the hoop binary")?;
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new(exe)
        .args(["worker", "run", "--home", &home.name, "--card"])
        .arg(card.id.to_string())
        .env(ROOT_ENV, &home.root)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        // Its own process group: the sentinel stops the supervisor and the
        // agent under it together, and the caller's shell can exit.
        .process_group(0)
        .spawn()
        .context("starting the worker's supervisor")?;
    record.pid = Some(child.id());
    worker::write_record(home, &record)?;
    Ok(child.id())
}

/// The hook-status lane of a worker: a per-run token registered with the
/// home's sentinel (mission = the home, run = the card) and the lifecycle
/// hooks in the scratch HOME. Any failure means a worker without a lane,
/// never a failed spawn.
fn attach_lane(home: &Home, card: CardId, scratch: &Path, agent: AgentKind) -> bool {
    use hoop_guards::lane;
    let runtime = lane::runtime_dir(home);
    let Some(run) = lane::register_run(&runtime, &home.name, &card.to_string()) else {
        return false;
    };
    let program = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(card, error = %e, "hook-status: no program path; the worker has no lane");
            return false;
        }
    };
    let which = match agent {
        AgentKind::Claude => lane::Agent::Claude,
        AgentKind::CursorAgent => lane::Agent::CursorAgent,
    };
    let spec = worker::lane_spec_path(home, card);
    match lane::install_lifecycle_hooks(scratch, which, &spec, &run, &program) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(card, error = %e, "hook-status: hooks not installed; the worker has no lane");
            false
        }
    }
}

fn list(home: &str, json: bool) -> anyhow::Result<ExitCode> {
    let home = Home::open(home)?;
    let live = worker::live_workers(&home);
    let mut out = std::io::stdout().lock();
    for w in &live {
        if json {
            writeln!(out, "{}", serde_json::to_string(w)?)?;
        } else {
            writeln!(
                out,
                "card {} (parent {}, room {}) {} pid {} since {}: {}",
                w.card_id,
                w.parent_id,
                w.conversation_id,
                w.agent.word(),
                w.pid,
                w.started_at,
                w.title
            )?;
        }
    }
    if live.is_empty() && !json {
        writeln!(out, "no live workers")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The supervisor: run the agent in the scratch HOME, then report the
/// account's usage and finish the card with the result or the error.
async fn supervise(name: &str, card: CardId) -> anyhow::Result<ExitCode> {
    let home = Home::open(name)?;
    let cfg = SentinelConfig::load(&home.dir())?;
    let record = worker::read_record(&home, card)?;
    let prompt = std::fs::read_to_string(worker::prompt_path(&home, card))?;
    let exe = std::env::current_exe()?;
    let base = hoop_sentinel::daemon::agent_env(&home, &cfg, &exe);
    let (env, removed) = worker::worker_env(&base, &worker::scratch_home(&home, card));
    let program = match record.agent {
        AgentKind::Claude => cfg.claude_bin.clone(),
        AgentKind::CursorAgent => PathBuf::from("cursor-agent"),
    };
    let mut args = worker::agent_args(record.agent, &cfg.permission_mode);
    if record.agent == AgentKind::CursorAgent {
        args.push(prompt.clone());
    }
    let mut cmd = tokio::process::Command::new(&program);
    for k in removed {
        cmd.env_remove(k);
    }
    cmd.args(&args)
        .envs(&env)
        .current_dir(worker::workdir(&home, card))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    tracing::info!(card, agent = record.agent.word(), "worker agent starting");
    let outcome = match cmd.spawn() {
        Err(e) => Outcome::Failed {
            error: format!("could not start {}: {e}", program.display()),
        },
        Ok(mut child) => {
            if let Some(mut stdin) = child.stdin.take() {
                use tokio::io::AsyncWriteExt;
                if record.agent == AgentKind::Claude {
                    let _ = stdin.write_all(prompt.as_bytes()).await;
                }
                drop(stdin);
            }
            match tokio::time::timeout(WORKER_TIMEOUT, child.wait_with_output()).await {
                Ok(Ok(out)) => worker::outcome(
                    out.status.code(),
                    &String::from_utf8_lossy(&out.stdout),
                    &String::from_utf8_lossy(&out.stderr),
                ),
                Ok(Err(e)) => Outcome::Failed {
                    error: format!("waiting for the agent: {e}"),
                },
                Err(_) => Outcome::Failed {
                    error: format!(
                        "the agent ran past the worker limit of {} s and was stopped",
                        WORKER_TIMEOUT.as_secs()
                    ),
                },
            }
        }
    };
    let client = client_for(&home)?;
    report_usage(&home, &cfg, &client).await;
    let (finish, detail) = match &outcome {
        Outcome::Done { result } => (
            FinishTask {
                result: Some(result.clone()),
                ..FinishTask::status(CardStatus::Done)
            },
            "done".to_string(),
        ),
        Outcome::Failed { error } => (failed(error), format!("failed: {error}")),
    };
    // Recorded as finished before the finish, so the renewer never stops a
    // supervisor that is finishing its own card.
    let mut r = record;
    r.state = WorkerState::Finished;
    r.ended_at = Some(now_unix());
    r.detail = Some(worker::bounded(&detail));
    worker::write_record(&home, &r)?;
    match client.finish_task(r.conversation_id, card, &finish).await {
        Ok(a) if a.updated => tracing::info!(card, "worker card finished: {detail}"),
        Ok(_) => tracing::info!(card, "worker card was already finished; nothing changed"),
        Err(e) => tracing::warn!(card, error = %e, "finishing the worker card failed"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The account's cumulative totals (the home's ledger, over the home's and
/// every worker's transcripts), so the card's end snapshot holds this
/// worker's tokens (production records a card's cost as end − start
/// snapshots).
async fn report_usage(home: &Home, cfg: &SentinelConfig, client: &Client) {
    use hoop_sentinel::usage::{Scope, read_account, snapshot};
    let env: Vec<(String, String)> = cfg.env.clone().into_iter().collect();
    let h = home.clone();
    let totals =
        match tokio::task::spawn_blocking(move || read_account(&h, &env, Scope::Account)).await {
            Ok(Ok(r)) => r.totals,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "usage not read; nothing reported");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "usage reader stopped; nothing reported");
                return;
            }
        };
    let report = snapshot(None, totals.as_ref());
    if let Err(e) = client.usage(&report).await {
        tracing::warn!(error = %e, "worker usage report failed");
    }
}
