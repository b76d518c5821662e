//! `hoop worker …`: hand heavy work to a one-shot agent on a sub-card
//! (`hoop_sentinel::worker` holds the rules; this file only moves data
//! between the backend, files and processes).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use anyhow::{Context, anyhow, bail};
use hoop_api::types::{AssignTask, CardId, FinishTask, codes};
use hoop_api::{CardFilter, Client, ClientConfig, Error as ApiError};
use hoop_core::clock::now_unix;
use hoop_core::fsutil::{self, WriteOptions};
use hoop_core::home::{Home, ROOT_ENV};
use hoop_core::limits::MAX_LIVE_SUBCARDS;
use hoop_sentinel::config::SentinelConfig;
use hoop_sentinel::constants::{
    WORKER_FINISH_PATIENCE, WORKER_FINISH_RETRY_MAX, WORKER_FINISH_RETRY_START,
    WORKER_OUTPUT_KEEP_BYTES, WORKER_PIPE_DRAIN, WORKER_STOP_GRACE, WORKER_TIMEOUT,
};
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
    /// Words given before `--` (only to say where they belong).
    #[arg(hide = true)]
    stray: Vec<String>,
    /// The prompt, or the path of a file holding it (after `--`).
    #[arg(last = true)]
    prompt: Vec<String>,
}

/// The prompt goes after `--`: say so with the line to run, rather than
/// clap's bare "unexpected argument".
fn prompt_words(a: &SpawnArgs) -> anyhow::Result<&[String]> {
    match (a.prompt.is_empty(), a.stray.is_empty()) {
        (false, true) => Ok(&a.prompt),
        (_, false) => bail!(
            "the agent's prompt goes after `--`: hoop worker spawn --home {} --card {} \
             --title {:?} -- {}",
            a.home,
            a.card,
            a.title,
            a.stray.join(" ")
        ),
        (true, true) => bail!("no prompt: add `-- <the prompt, or a file holding it>`"),
    }
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
    let prompt = read_prompt(prompt_words(&a)?)?;
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
            let _ = client
                .finish_task(room, task_id, &worker::failed_finish(&why))
                .await;
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
            let why = format!(
                "the worker could not start: {}",
                hoop_api::error::render_chain(e.as_ref())
            );
            let _ = client
                .finish_task(room, card.id, &worker::failed_finish(&why))
                .await;
            // Nothing of it stays but its record (the copied credentials
            // least of all).
            if worker::read_record(&home, card.id).is_ok() {
                let _ = worker::close(&home, card.id, |r| {
                    r.state = WorkerState::Finished;
                    r.detail = Some(worker::bounded(&why));
                });
            } else {
                let _ = std::fs::remove_dir_all(worker::worker_dir(&home, card.id));
            }
            Err(anyhow!("{why} (card {} was failed)", card.id))
        }
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
    // Held until the supervisor's pid is recorded: the sentinel's renewer
    // reads a running record without a pid as a spawner that died, and
    // would fail the card and remove the prompt and the working directory
    // the supervisor is about to use.
    let _starting = worker::hold_for_start(home, card.id)?;
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
        announced: false,
        finish: None,
        log_tail: None,
    };
    worker::write_record(home, &record)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(worker::log_path(home, card.id))?;
    let exe = std::env::current_exe().context("locating the hoop binary")?;
    let in_scope = worker::under_systemd(std::env::var("INVOCATION_ID").ok().as_deref());
    let argv = worker::supervisor_argv(&exe, &home.name, card.id, in_scope);
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env(ROOT_ENV, &home.root)
        // Never the caller's directory: a sentinel's agent runs `spawn` in
        // the home's work directory, whose processes a starting sentinel
        // stops as its predecessor's leftovers.
        .current_dir(worker::worker_dir(home, card.id))
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        // Its own process group: the sentinel stops the supervisor and the
        // agent under it together, the caller's shell can exit, and a
        // launchd job's stop (by process group) never reaches it.
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting the worker's supervisor ({})", argv[0]))?;
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
/// account's usage and finish the card with the result or the error. Every
/// path after the record is read ends in a finish (an error is a `failed`
/// one), kept in the record until it lands.
async fn supervise(name: &str, card: CardId) -> anyhow::Result<ExitCode> {
    let home = Home::open(name)?;
    let record = worker::read_record(&home, card)?;
    // Orphans of the agent's tree come to this process, which stops them
    // with the run (a Bash tool's `cmd &` must not outlive the worker).
    hoop_sentinel::proctree::become_subreaper();
    let cfg = SentinelConfig::load(&home.dir());
    let outcome = match &cfg {
        Ok(cfg) => run_agent(&home, cfg, &record).await,
        Err(e) => Outcome::Failed {
            error: format!("the worker could not read its home's settings: {e}"),
        },
    };
    // The run is over: nothing may log in with the copied credentials.
    worker::remove_credentials(&home, card);
    let client = client_for(&home);
    if let (Ok(cfg), Ok(client)) = (&cfg, &client) {
        report_usage(&home, cfg, client).await;
    }
    let (finish, detail) = worker::finish_for(&outcome);
    // Recorded before the finish is tried: the renewer never stops a
    // supervisor finishing its own card, and the text outlives this process.
    let r = worker::update_record(&home, card, |r| {
        r.state = WorkerState::Finishing;
        r.ended_at = Some(now_unix());
        r.detail = Some(detail.clone());
        r.finish = Some(finish.clone());
    })?;
    let landed = match &client {
        Ok(client) => land_finish(client, &r, &finish).await,
        Err(e) => {
            tracing::warn!(card, error = %e, "no backend client; the sentinel lands the finish");
            false
        }
    };
    if landed {
        tracing::info!(card, "worker card finished: {detail}");
        worker::close(&home, card, |r| {
            r.state = WorkerState::Finished;
            r.finish = None;
        })?;
    } else {
        // Kept in the record: the sentinel lands it once this process is gone.
        tracing::warn!(
            card,
            "the worker's finish did not land; the sentinel tries again"
        );
        worker::close(&home, card, |_| {})?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Try the finish with backoff until it lands, is refused for good, or
/// [`WORKER_FINISH_PATIENCE`] passes. True when nothing more is to be done.
async fn land_finish(client: &Client, r: &WorkerRecord, finish: &FinishTask) -> bool {
    let card = r.card_id;
    let give_up = tokio::time::Instant::now() + WORKER_FINISH_PATIENCE;
    let mut wait = WORKER_FINISH_RETRY_START;
    loop {
        match client.finish_task(r.conversation_id, card, finish).await {
            Ok(a) => {
                if !a.updated {
                    tracing::info!(card, "worker card was already finished; nothing changed");
                }
                return true;
            }
            Err(e) if worker::finish_retryable(&e) => {
                tracing::warn!(card, error = %e, secs = wait.as_secs(), "finishing the worker card failed; trying again");
            }
            Err(e) => {
                tracing::warn!(card, error = %e, "finishing the worker card was refused");
                return true;
            }
        }
        if tokio::time::Instant::now() + wait > give_up {
            return false;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(WORKER_FINISH_RETRY_MAX);
    }
}

/// Run the agent to its end, within [`WORKER_TIMEOUT`]; then stop its whole
/// tree and whatever it orphaned (this process is their subreaper). Every
/// failure is an outcome, never an early return.
async fn run_agent(home: &Home, cfg: &SentinelConfig, record: &WorkerRecord) -> Outcome {
    let card = record.card_id;
    let prompt = match std::fs::read_to_string(worker::prompt_path(home, card)) {
        Ok(p) => p,
        Err(e) => {
            return Outcome::Failed {
                error: format!("the worker's prompt is unreadable: {e}"),
            };
        }
    };
    // Read once: the file goes when the run ends.
    worker::remove_prompt(home, card);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return Outcome::Failed {
                error: format!("locating the hoop binary: {e}"),
            };
        }
    };
    let base = hoop_sentinel::daemon::agent_env(home, cfg, &exe);
    let (env, removed) = worker::worker_env(&base, &worker::scratch_home(home, card));
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
        .current_dir(worker::workdir(home, card))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own, so whatever its tools leave behind is never
        // in this process's group (the orphan rule tells them apart so).
        .process_group(0)
        .kill_on_drop(true);
    tracing::info!(card, agent = record.agent.word(), "worker agent starting");
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Outcome::Failed {
                error: format!("could not start {}: {e}", program.display()),
            };
        }
    };
    let pid = child.id();
    let _own = pid.map(hoop_sentinel::proctree::own);
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        if record.agent == AgentKind::Claude {
            let _ = stdin.write_all(prompt.as_bytes()).await;
        }
        drop(stdin);
    }
    // The pipes are read beside the wait: a leftover holding them open must
    // not keep the run from ending.
    let out = tokio::spawn(read_all(child.stdout.take()));
    let err = tokio::spawn(read_all(child.stderr.take()));
    let status = tokio::time::timeout(WORKER_TIMEOUT, child.wait()).await;
    // Over either way: the agent's tree and every orphan it left.
    if let Some(pid) = pid {
        hoop_sentinel::proctree::stop_tree(pid, WORKER_STOP_GRACE).await;
    }
    let _ = child.wait().await;
    hoop_sentinel::proctree::stop_adopted(|_| false, WORKER_STOP_GRACE).await;
    let read = |h: tokio::task::JoinHandle<Vec<u8>>| async move {
        match tokio::time::timeout(WORKER_PIPE_DRAIN, h).await {
            Ok(Ok(b)) => b,
            _ => Vec::new(),
        }
    };
    let (stdout, stderr) = (read(out).await, read(err).await);
    match status {
        Ok(Ok(s)) => worker::outcome(
            s.code(),
            &String::from_utf8_lossy(&stdout),
            &String::from_utf8_lossy(&stderr),
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

/// A pipe read to its end, keeping at most [`WORKER_OUTPUT_KEEP_BYTES`]
/// (the last ones: the result line comes last).
async fn read_all(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let Some(mut pipe) = pipe else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                let over = kept.len().saturating_sub(WORKER_OUTPUT_KEEP_BYTES);
                kept.drain(..over);
            }
        }
    }
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
