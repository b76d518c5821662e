//! `hoop demo`: the README's first command. In one process it starts the
//! reference backend and (unless `--real-model`) the model stand-in, creates
//! a human, an agent and a room, writes a temporary home for the agent,
//! starts `hoop sentinel run` for it as a child process, posts a message that
//! mentions the agent, and prints a readable live transcript — the event, the
//! wake, the turn, the reply landing in the room, the cursor commit, the card
//! — then stops everything and removes the temporary home.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hoop_api::admin::{AdminClient, AdminCreateCard, CreateConversation, CreateUser, PostAs};
use hoop_api::types::{AssignTask, Mention, SendMessage};
use hoop_api::{Client, ClientConfig};
use hoop_core::home::{Home, HomeConfig, ROOT_ENV};
use hoop_standin::{Reply, Standin};

/// The whole demo must finish well inside a minute; this bounds every wait.
const DEMO_DEADLINE: Duration = Duration::from_secs(55);
/// Exit code when no `claude` CLI can be found.
const EXIT_NO_CLAUDE: u8 = 2;
/// The agent's home name inside the temporary root.
const AGENT_HOME: &str = "bolt";
/// Where `npm install --prefix tests` puts the pinned CLI, relative to a checkout.
const LOCAL_CLAUDE: &str = "tests/node_modules/.bin/claude";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Use the real model with your own `claude` credentials instead of the
    /// built-in stand-in (costs tokens; needs a logged-in `claude`).
    #[arg(long)]
    pub real_model: bool,
    /// Use this `claude` binary instead of searching PATH.
    #[arg(long, env = "HOOP_CLAUDE_BIN")]
    pub claude: Option<PathBuf>,
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

fn find_claude(args: &Args) -> Option<(PathBuf, &'static str)> {
    if let Some(p) = &args.claude {
        return p.is_file().then(|| (p.clone(), "given"));
    }
    if let Some(p) = find_on_path("claude") {
        return Some((p, "from PATH"));
    }
    let local = std::env::current_dir().ok()?.join(LOCAL_CLAUDE);
    local
        .is_file()
        .then_some((local, "from tests/node_modules"))
}

/// The card line's cost: the figures once the sentinel reported the turn's
/// usage, else why there are none (never a bare 0/0/0 that reads as a
/// broken meter).
fn card_cost(c: &hoop_api::types::Card, usage_line: Option<&str>) -> String {
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let figures = format!(
        "tokens in/cached/out = {}/{}/{}",
        opt(c.tokens_in),
        opt(c.tokens_cached_in),
        opt(c.tokens_out)
    );
    match usage_line {
        Some(l) if l == USAGE_LINES[0] => figures,
        Some(l) => format!("no token figures: the sentinel logged {l:?} (see its lines above)"),
        None => format!(
            "no token figures: the sentinel reported no usage within {} s",
            USAGE_REPORT_WAIT.as_secs()
        ),
    }
}

struct Transcript {
    t0: Instant,
}

impl Transcript {
    fn say(&self, who: &str, what: &str) {
        let t = self.t0.elapsed().as_secs_f64();
        println!("[{t:5.1}s] {who:<9} {what}");
        let _ = std::io::stdout().flush();
    }
}

/// A daemon log line without timestamp, level padding and ANSI colours.
fn readable(line: &str) -> Option<String> {
    let mut clean = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            clean.push(c);
        }
    }
    let mut rest = clean.trim();
    // `2026-…Z  INFO target: message`
    if rest
        .get(..4)
        .is_some_and(|y| y.chars().all(|c| c.is_ascii_digit()))
    {
        rest = rest.split_once(' ').map_or(rest, |(_, r)| r.trim_start());
    }
    for lvl in ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"] {
        if let Some(r) = rest.strip_prefix(lvl) {
            rest = r.trim_start();
        }
    }
    if let Some((target, msg)) = rest.split_once(": ")
        && !target.contains(' ')
    {
        rest = msg;
    }
    (!rest.is_empty()).then(|| rest.to_string())
}

struct Sentinel {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line read so far (a wait may look for one already passed).
    seen: Vec<String>,
}

/// The sentinel's lines about the turn's usage report: the one that says
/// it landed, then those that say why it did not.
const USAGE_LINES: [&str; 4] = [
    "usage reported",
    "usage report failed",
    "usage not read",
    "usage totals unreadable",
];

/// How long the demo waits for the usage report after the cursor commit:
/// the sentinel's own catch-up wait plus time for the report's request.
const USAGE_REPORT_WAIT: Duration =
    Duration::from_secs(hoop_sentinel::constants::USAGE_CATCH_UP_WAIT.as_secs() + 10);

impl Sentinel {
    /// Wait for a log line containing `needle`, echoing every line.
    fn wait_for(&mut self, tr: &Transcript, needle: &str, deadline: Instant) -> anyhow::Result<()> {
        self.wait_for_any(tr, &[needle], deadline).map(|_| ())
    }

    /// Wait for a log line containing any of `needles` (one already read
    /// counts); the needle found.
    fn wait_for_any<'n>(
        &mut self,
        tr: &Transcript,
        needles: &[&'n str],
        deadline: Instant,
    ) -> anyhow::Result<&'n str> {
        for n in needles {
            if self.seen.iter().any(|l| l.contains(n)) {
                return Ok(n);
            }
        }
        let needle = needles.join(" | ");
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("timed out waiting for the sentinel to log {needle:?}");
            }
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(line) => {
                    let hit = needles.iter().find(|n| line.contains(**n)).copied();
                    if let Some(r) = readable(&line) {
                        tr.say("sentinel", &r);
                    }
                    self.seen.push(line);
                    if let Some(n) = hit {
                        return Ok(n);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(st)) = self.child.try_wait() {
                        bail!("the sentinel exited early ({st})");
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => bail!("the sentinel's log ended"),
            }
        }
    }

    fn drain(&mut self, tr: &Transcript) {
        while let Ok(line) = self.lines.try_recv() {
            if let Some(r) = readable(&line) {
                tr.say("sentinel", &r);
            }
        }
    }

    fn stop(&mut self, tr: &Transcript) {
        // A graceful stop first (the daemon stops its agent process).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.drain(tr);
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some((claude, found)) = find_claude(&args) else {
        eprintln!(
            "hoop demo needs the `claude` CLI (Claude Code) and found none on PATH or at ./{LOCAL_CLAUDE}.\n\
             Get the pinned version with `npm install --prefix tests` (or run `./tests/run`) from the\n\
             repository root, or install it with `npm install -g @anthropic-ai/claude-code`."
        );
        return Ok(ExitCode::from(EXIT_NO_CLAUDE));
    };
    let rt = super::runtime()?;
    rt.block_on(demo(&args, &claude, found))
}

async fn demo(args: &Args, claude: &Path, found: &str) -> anyhow::Result<ExitCode> {
    let tr = Transcript { t0: Instant::now() };
    let deadline = Instant::now() + DEMO_DEADLINE;
    let root = TempRoot::create()?;

    let backend = hoop_refbackend::spawn(
        "127.0.0.1:0".parse().expect("literal address"),
        hoop_refbackend::Config::default(),
    )
    .await
    .context("starting the reference backend")?;
    tr.say(
        "demo",
        &format!("reference backend on {}", backend.base_url()),
    );

    let standin = if args.real_model {
        tr.say(
            "demo",
            &format!(
                "using claude {found} ({}) with the REAL model and your own credentials",
                claude.display()
            ),
        );
        None
    } else {
        let s = Standin::spawn()
            .await
            .context("starting the model stand-in")?;
        tr.say(
            "demo",
            &format!(
                "using claude {found} ({}) against the built-in model stand-in on {} (no account, no tokens spent; --real-model uses yours)",
                claude.display(),
                s.base_url()
            ),
        );
        Some(s)
    };

    let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
    let ada = admin
        .create_user(&CreateUser {
            email: "ada@example.com".into(),
            username: "ada".into(),
            nickname: None,
            is_agent: false,
        })
        .await?;
    let bolt = admin
        .create_user(&CreateUser {
            email: "bolt@example.com".into(),
            username: "bolt".into(),
            nickname: None,
            is_agent: true,
        })
        .await?;
    let room = admin
        .create_conversation(&CreateConversation {
            title: "demo".into(),
            is_workroom: true,
            member_ids: vec![ada.id, bolt.id],
        })
        .await?;
    tr.say(
        "demo",
        &format!(
            "created human @ada, agent @bolt and workroom #{} {:?}",
            room.id, room.title
        ),
    );

    // A card for the work, claimed by the agent: its lease is opened by the
    // sentinel's renewer and the turn's usage is kept on it.
    let agent_client = Client::new(ClientConfig {
        base_url: backend.base_url(),
        email: bolt.email.clone(),
        login_code: hoop_core::limits::FIXED_LOGIN_CODE.into(),
        agent_secret: None,
        token_cache: None,
    })?;
    let card = admin
        .create_card(&AdminCreateCard {
            conversation_id: room.id,
            task: AssignTask {
                title: "Answer Ada about the build".into(),
                assignee_id: Some(bolt.id),
                ..AssignTask::default()
            },
            creator_id: Some(ada.id),
        })
        .await?;
    // The agent's home is new: its cumulative totals are zero, so the card's
    // start snapshot is known and its cost shows once the turn reports.
    agent_client
        .usage(&hoop_api::types::UsageReport {
            card_id: None,
            tokens_in: Some(0),
            tokens_cached_in: Some(0),
            tokens_out: Some(0),
        })
        .await?;
    agent_client.claim_task(room.id, card.id).await?;
    tr.say(
        "demo",
        &format!("card #{} {:?} is working for @bolt", card.id, card.title),
    );

    // The agent's home.
    let home = Home::new(root.path(), AGENT_HOME)?;
    std::fs::create_dir_all(home.dir())?;
    hoop_core::fsutil::write_json_atomic(
        &home.config_path(),
        &HomeConfig {
            base_url: backend.base_url(),
            email: bolt.email.clone(),
            login_code: None,
        },
        Default::default(),
    )?;
    let mut env = serde_json::Map::new();
    // The CLI keeps scratch files under TMPDIR: inside the demo's root, so
    // they go when it goes.
    let scratch = root.path().join("tmp");
    std::fs::create_dir_all(&scratch)?;
    env.insert("TMPDIR".into(), scratch.display().to_string().into());
    if let Some(s) = &standin {
        for (k, v) in s.claude_env() {
            env.insert(k, v.into());
        }
        let claude_home = root.path().join("claude-home");
        std::fs::create_dir_all(&claude_home)?;
        env.insert("HOME".into(), claude_home.display().to_string().into());
    }
    let sentinel_json = serde_json::json!({
        "claude_bin": claude,
        "env": env,
    });
    hoop_core::fsutil::write_json_atomic(
        &home.dir().join("sentinel.json"),
        &sentinel_json,
        Default::default(),
    )?;
    let reply_text = "Hi Ada, the build is green. I checked it just now.";
    if let Some(s) = &standin {
        s.push(Reply::bash(
            format!(
                "hoop say --home {AGENT_HOME} --room {} \"{reply_text}\"",
                room.id
            ),
            "I answered Ada in the room.",
        ));
    }
    tr.say("demo", &format!("temporary home {}", home.dir().display()));

    let exe = std::env::current_exe()?;
    let mut child = Command::new(&exe)
        .args(["sentinel", "run", "--home", AGENT_HOME])
        .env(ROOT_ENV, root.path())
        .env("HOOP_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting hoop sentinel run")?;
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut sentinel = Sentinel {
        child,
        lines: rx,
        seen: Vec::new(),
    };
    let outcome = async {
        sentinel.wait_for(&tr, "🚀", deadline)?;
        sentinel.wait_for(&tr, "🔌 WS connected", deadline)?;
        let body = "@bolt is the build green?";
        admin
            .post_as(
                room.id,
                &PostAs {
                    sender_id: ada.id,
                    message: SendMessage {
                        body: body.into(),
                        mentions: vec![Mention::User(bolt.id)],
                    },
                    ..Default::default()
                },
            )
            .await?;
        tr.say("ada", &format!("posts in #{}: {body}", room.id));
        sentinel.wait_for(&tr, "📌 cursor committed", deadline)?;
        let page = agent_client.messages(room.id, 5, None).await?;
        let reply = page
            .messages
            .iter()
            .find(|m| m.sender_id == bolt.id)
            .context("the agent's reply is not in the room")?;
        tr.say(
            "room",
            &format!(
                "@{} (message {}): {}",
                reply.sender_username, reply.id, reply.body
            ),
        );
        // The card's cost is known once the sentinel reported the turn's
        // usage; wait for that line (or the one saying why it could not).
        let usage = sentinel.wait_for_any(&tr, &USAGE_LINES, Instant::now() + USAGE_REPORT_WAIT);
        let c = agent_client.card(room.id, card.id).await?;
        sentinel.drain(&tr);
        tr.say(
            "card",
            &format!(
                "#{} {:?} {:?}, {}, {}",
                c.id,
                c.title,
                c.status,
                c.lease_expires_at.map_or("no lease".into(), |t| format!(
                    "lease renewed by the sentinel (expires in {} s)",
                    t - hoop_core::clock::now_unix()
                )),
                card_cost(&c, usage.ok())
            ),
        );
        anyhow::Ok(())
    }
    .await;
    sentinel.stop(&tr);
    if let Some(s) = standin {
        s.shutdown().await;
    }
    backend.shutdown().await;
    drop(root);
    match outcome {
        Ok(()) => {
            tr.say(
                "demo",
                "done; everything stopped and the temporary home removed",
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(e.context("the demo did not finish")),
    }
}

/// The demo's temporary root, removed on drop.
struct TempRoot(tempfile::TempDir);

impl TempRoot {
    fn create() -> anyhow::Result<TempRoot> {
        let dir = tempfile::Builder::new()
            .prefix("hoop-demo-")
            .tempdir()
            .context("creating the demo's temporary directory")?;
        Ok(TempRoot(dir))
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
}
