//! Shared setup of the sentinel suite: a reference backend and a model
//! stand-in in this process, a human, an agent and a room, a temporary hoop
//! root with the agent's home, and `hoop sentinel run` as a real child
//! process whose log goes to a file (so a SIGKILL loses nothing of it).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::types::{Conversation, Mention, Message, MessageKind, SendMessage, User};
use hoop_api::{Client, ClientConfig};
use hoop_core::home::{Home, HomeConfig, ROOT_ENV};
use hoop_refbackend::Running;
use hoop_standin::Standin;
use hoop_standin::work::answered_ids;
use serde_json::{Value, json};

/// Every wait in the suite is bounded by this (generous: the machine may be
/// busy building while the suite runs).
pub const WAIT: Duration = Duration::from_secs(120);
/// A timed-out wait shows this many of the daemon log's last lines.
const DIAGNOSIS_LOG_LINES: usize = 80;
/// At most this many worlds (backend + stand-in + daemon + claude) at once:
/// each runs a real CLI process, and a machine with few cores stalls when
/// every test starts one together.
const MAX_WORLDS: usize = 3;

static LIVE_WORLDS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// A slot among [`MAX_WORLDS`], released on drop.
pub struct Slot;

impl Slot {
    async fn take() -> Slot {
        let deadline = Instant::now() + WAIT * 10;
        loop {
            {
                let mut n = LIVE_WORLDS.lock().unwrap_or_else(|e| e.into_inner());
                if *n < MAX_WORLDS {
                    *n += 1;
                    return Slot;
                }
            }
            assert!(Instant::now() < deadline, "no free world slot");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut n = LIVE_WORLDS.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
    }
}
pub const HOME_NAME: &str = "bolt";

/// The real `claude` CLI; the suite fails loudly without it.
pub fn claude_bin() -> PathBuf {
    let p = std::env::var_os("HOOP_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "HOOP_CLAUDE_BIN is not set: these tests drive the real claude CLI. \
             Run ./tests/run, or set HOOP_CLAUDE_BIN=$PWD/tests/node_modules/.bin/claude \
             after `npm ci --prefix tests`."
            )
        });
    assert!(
        p.is_file(),
        "HOOP_CLAUDE_BIN={} does not exist: run `npm ci --prefix tests`",
        p.display()
    );
    p
}

pub struct World {
    pub backend: Option<Running>,
    pub backend_addr: std::net::SocketAddr,
    pub db: PathBuf,
    pub standin: Standin,
    pub admin: AdminClient,
    pub human: User,
    pub agent: User,
    pub room: Conversation,
    pub root: tempfile::TempDir,
    pub home: Home,
    pub agent_client: Client,
    /// Last: released after everything above is dropped.
    pub _slot: Slot,
}

/// Options of the agent's `sentinel.json`.
#[derive(Clone)]
pub struct Opts {
    pub timings: Value,
    pub idle_reap_sec: Option<u64>,
    pub turn_timeout_sec: Option<u64>,
    pub claude_bin: Option<PathBuf>,
    pub ai_count: usize,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            // Short clocks so the suite stays fast; the rules are the same.
            timings: json!({
                "debounce_ms": 300,
                "alarm_ms": 60_000,
                "turn_lock_retry_ms": 1_000,
                "failure_backoff_ms": [500, 500, 500],
                "ws_backoff_start_ms": 200,
                "ws_backoff_max_ms": 1_000,
                "ws_stable_after_ms": 500,
            }),
            idle_reap_sec: None,
            turn_timeout_sec: None,
            claude_bin: None,
            ai_count: 1,
        }
    }
}

impl World {
    /// A card in the room assigned to and claimed by the agent, whose
    /// account first reports zero totals (a fresh account's truth), so the
    /// card's start snapshot is known and its cost is end − start.
    pub async fn claimed_card(&self, title: &str) -> hoop_api::types::Card {
        let card = self
            .admin
            .create_card(&hoop_api::admin::AdminCreateCard {
                conversation_id: self.room.id,
                task: hoop_api::types::AssignTask {
                    title: title.into(),
                    assignee_id: Some(self.agent.id),
                    ..Default::default()
                },
                creator_id: Some(self.human.id),
            })
            .await
            .unwrap();
        self.agent_client
            .usage(&hoop_api::types::UsageReport {
                card_id: None,
                tokens_in: Some(0),
                tokens_cached_in: Some(0),
                tokens_out: Some(0),
            })
            .await
            .unwrap();
        self.agent_client
            .claim_task(self.room.id, card.id)
            .await
            .unwrap();
        card
    }

    pub async fn new(opts: Opts) -> World {
        let slot = Slot::take().await;
        let claude = opts.claude_bin.clone().unwrap_or_else(claude_bin);
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join("backend.sqlite");
        let backend = hoop_refbackend::spawn(
            "127.0.0.1:0".parse().unwrap(),
            hoop_refbackend::Config {
                db: Some(db.clone()),
                agent_secret: None,
                admin_token: Some("admin-test-token".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let standin = Standin::spawn().await.unwrap();
        let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
        let human = admin
            .create_user(&CreateUser {
                email: "ada@example.com".into(),
                username: "ada".into(),
                nickname: None,
                is_agent: false,
            })
            .await
            .unwrap();
        let agent = admin
            .create_user(&CreateUser {
                email: "bolt@example.com".into(),
                username: "bolt".into(),
                nickname: Some("闪电".into()),
                is_agent: true,
            })
            .await
            .unwrap();
        let mut members = vec![human.id, agent.id];
        for i in 1..opts.ai_count {
            let other = admin
                .create_user(&CreateUser {
                    email: format!("ai{i}@example.com"),
                    username: format!("ai{i}"),
                    nickname: None,
                    is_agent: true,
                })
                .await
                .unwrap();
            members.push(other.id);
        }
        let room = admin
            .create_conversation(&CreateConversation {
                title: "ops".into(),
                is_workroom: false,
                member_ids: members,
            })
            .await
            .unwrap();
        let home = Home::new(root.path(), HOME_NAME).unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        hoop_core::fsutil::write_json_atomic(
            &home.config_path(),
            &HomeConfig {
                base_url: backend.base_url(),
                email: agent.email.clone(),
                login_code: None,
            },
            Default::default(),
        )
        .unwrap();
        let claude_home = root.path().join("claude-home");
        std::fs::create_dir_all(&claude_home).unwrap();
        let mut env: serde_json::Map<String, Value> = standin
            .claude_env()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        env.insert("HOME".into(), claude_home.display().to_string().into());
        let mut cfg = json!({
            "claude_bin": claude,
            "env": env,
            "timings": opts.timings,
        });
        if let Some(s) = opts.idle_reap_sec {
            cfg["idle_reap_sec"] = s.into();
        }
        if let Some(s) = opts.turn_timeout_sec {
            cfg["turn_timeout_sec"] = s.into();
        }
        hoop_core::fsutil::write_json_atomic(
            &home.dir().join("sentinel.json"),
            &cfg,
            Default::default(),
        )
        .unwrap();
        let agent_client = Client::new(ClientConfig {
            base_url: backend.base_url(),
            email: agent.email.clone(),
            login_code: hoop_core::limits::FIXED_LOGIN_CODE.into(),
            agent_secret: None,
            token_cache: None,
        })
        .unwrap();
        World {
            _slot: slot,
            backend_addr: backend.addr,
            backend: Some(backend),
            db,
            standin,
            admin,
            human,
            agent,
            room,
            root,
            home,
            agent_client,
        }
    }

    /// The `hoop say` command a scripted model reply runs.
    pub fn say_cmd(&self, text: &str) -> String {
        format!(
            "hoop say --home {HOME_NAME} --room {} \"{text}\"",
            self.room.id
        )
    }

    /// Post as the human; `mention` adds the structured mention of the agent.
    pub async fn post(&self, body: &str, mention: bool) -> Message {
        self.admin
            .post_as(
                self.room.id,
                &PostAs {
                    sender_id: self.human.id,
                    message: SendMessage {
                        body: body.into(),
                        mentions: if mention {
                            vec![Mention::User(self.agent.id)]
                        } else {
                            vec![]
                        },
                    },
                    ..Default::default()
                },
            )
            .await
            .unwrap()
    }

    /// The room's messages, oldest first (up to 50).
    pub async fn messages(&self) -> Vec<Message> {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.agent_client.messages(self.room.id, 50, None).await {
                Ok(p) => {
                    let mut v = p.messages;
                    v.reverse();
                    return v;
                }
                // A busy machine or a backend being restarted: try again.
                Err(e) if Instant::now() < deadline => {
                    eprintln!("reading the room: {e}; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("reading the room: {e}"),
            }
        }
    }

    pub async fn agent_messages(&self) -> Vec<Message> {
        self.messages()
            .await
            .into_iter()
            .filter(|m| m.sender_id == self.agent.id)
            .collect()
    }

    /// The bodies of the agent's messages, oldest first.
    pub async fn agent_bodies(&self) -> Vec<String> {
        self.agent_messages()
            .await
            .into_iter()
            .map(|m| m.body)
            .collect()
    }

    pub fn cursor(&self) -> Option<i64> {
        let text = std::fs::read_to_string(self.home.cursors_path()).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        v[self.room.id.to_string()].as_i64()
    }

    pub fn spawn(&self) -> Daemon {
        Daemon::spawn(self.root.path(), &self.log_path(self.next_log()))
    }

    fn next_log(&self) -> usize {
        (0..)
            .find(|i| !self.log_path(*i).exists())
            .unwrap_or_default()
    }

    pub fn log_path(&self, i: usize) -> PathBuf {
        self.root.path().join(format!("sentinel-{i}.log"))
    }

    /// Every daemon log of this world, concatenated.
    pub fn all_logs(&self) -> String {
        (0..self.next_log())
            .map(|i| std::fs::read_to_string(self.log_path(i)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("")
    }

    /// What a wait that timed out shows: the tail of the daemon's log, what
    /// the stand-in was asked and answered, and the home's workers (their
    /// state, how they ended, their log's tail).
    pub fn diagnosis(&self) -> String {
        let logs = self.all_logs();
        let lines: Vec<&str> = logs.lines().collect();
        let tail = lines[lines.len().saturating_sub(DIAGNOSIS_LOG_LINES)..].join("\n");
        let mut out = format!(
            "--- the daemon's log, last {DIAGNOSIS_LOG_LINES} lines:\n{tail}\n\
             --- the stand-in's requests:\n{}",
            self.standin.summary()
        );
        for r in hoop_sentinel::worker::records(&self.home) {
            let log = hoop_sentinel::worker::read_log_tail(&self.home, r.card_id)
                .or(r.log_tail.clone())
                .unwrap_or_default();
            out.push_str(&format!(
                "\n--- worker on card {}: {:?}, pid {:?}, {:?}; its log ends with:\n{}",
                r.card_id,
                r.state,
                r.pid,
                r.detail,
                log.trim_end()
            ));
        }
        out
    }

    /// [`until`], and on timeout the panic carries [`World::diagnosis`].
    pub async fn until<F, Fut>(&self, what: &str, f: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        until_or(what, f, || self.diagnosis()).await
    }

    pub async fn stop_backend(&mut self) {
        if let Some(b) = self.backend.take() {
            b.shutdown().await;
        }
    }

    pub async fn start_backend(&mut self) {
        assert!(self.backend.is_none());
        let until = Instant::now() + WAIT;
        loop {
            match hoop_refbackend::spawn(
                self.backend_addr,
                hoop_refbackend::Config {
                    db: Some(self.db.clone()),
                    agent_secret: None,
                    admin_token: Some("admin-test-token".into()),
                    ..Default::default()
                },
            )
            .await
            {
                Ok(b) => {
                    self.backend = Some(b);
                    return;
                }
                Err(e) if Instant::now() < until => {
                    eprintln!("backend restart: {e}; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("backend restart failed: {e}"),
            }
        }
    }
}

/// A running `hoop sentinel run`.
pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub fn spawn(root: &Path, log: &Path) -> Daemon {
        let out = File::create(log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(["sentinel", "run", "--home", HOME_NAME])
            .env(ROOT_ENV, root)
            .env("HOOP_LOG", "info,hoop_sentinel=debug")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(out))
            .spawn()
            .unwrap();
        Daemon {
            child,
            log: log.to_path_buf(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until the log contains `needle` (panics with the log otherwise).
    pub async fn wait_log(&mut self, needle: &str) {
        self.wait_log_count(needle, 1).await
    }

    pub async fn wait_log_count(&mut self, needle: &str, n: usize) {
        let until = Instant::now() + WAIT;
        loop {
            let text = self.log_text();
            if text.matches(needle).count() >= n {
                return;
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("the daemon exited ({st}) before logging {needle:?}:\n{text}");
            }
            if Instant::now() > until {
                panic!("timed out waiting for {needle:?} x{n} in the log:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn ready(&mut self) {
        self.wait_log("🚀").await;
        self.wait_log("🔌 WS connected").await;
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for the exit status.
    pub fn term(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let until = Instant::now() + WAIT;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st;
            }
            assert!(Instant::now() < until, "the daemon ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Run a command to its end within [`WAIT`] (killed and a panic past it:
/// a regression that hangs fails the suite instead of hanging it).
pub async fn run_bounded(cmd: &mut tokio::process::Command) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the command starts");
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{cmd:?} did not finish within {WAIT:?}"))
        .expect("its output is read")
}

/// Poll an async condition until it holds (panics with `what` on timeout;
/// [`World::until`] adds what the world knows).
pub async fn until<F, Fut>(what: &str, f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    until_or(what, f, String::new).await
}

/// [`until`], the panic carrying `explain()` too.
pub async fn until_or<F, Fut>(what: &str, mut f: F, explain: impl FnOnce() -> String)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !f().await {
        if Instant::now() >= deadline {
            panic!("timed out waiting for: {what}\n{}", explain());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Per message id: every message a person posted is named by exactly one
/// answer of the agent (the stand-in's `answer to …` names the ids it was
/// given as work or was shown), and no answer names anything else. Failure
/// notes and status broadcasts are not answers.
pub fn assert_answered_once_by(agent: i64, msgs: &[Message]) {
    let people: BTreeSet<i64> = msgs
        .iter()
        .filter(|m| m.sender_id != agent && m.kind == MessageKind::Text)
        .map(|m| m.id)
        .collect();
    let mut named: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for m in msgs.iter().filter(|m| {
        m.sender_id == agent
            && matches!(m.kind, MessageKind::Text | MessageKind::Image)
            && !hoop_core::gates::is_failure_report(&m.body)
    }) {
        for id in answered_ids(&m.body) {
            named.entry(id).or_default().push(m.id);
        }
    }
    let room = || {
        msgs.iter()
            .map(|m| (m.id, m.sender_id, m.kind.clone(), m.body.as_str()))
            .collect::<Vec<_>>()
    };
    for id in &people {
        let answers = named.get(id).map_or(0, Vec::len);
        assert_eq!(
            answers,
            1,
            "message {id} answered {answers} time(s) (answers: {:?}); room: {:#?}",
            named.get(id),
            room()
        );
    }
    for (id, by) in &named {
        assert!(
            people.contains(id),
            "answers {by:?} name message {id}, which no person posted; room: {:#?}",
            room()
        );
    }
}

/// Every message a person posted is answered (by id) by `agent`.
pub fn every_message_answered_by(agent: i64, msgs: &[Message]) -> bool {
    let named: BTreeSet<i64> = msgs
        .iter()
        .filter(|m| m.sender_id == agent && m.kind == MessageKind::Text)
        .flat_map(|m| answered_ids(&m.body))
        .collect();
    msgs.iter()
        .filter(|m| m.sender_id != agent && m.kind == MessageKind::Text)
        .all(|m| named.contains(&m.id))
}

/// Post `body` into `room` as `sender`, with structured `mentions`.
pub async fn post_in(
    w: &World,
    room: hoop_api::types::ConversationId,
    sender: &hoop_api::types::User,
    body: &str,
    mentions: Vec<hoop_api::types::Mention>,
) -> hoop_api::types::Message {
    w.admin
        .post_as(
            room,
            &hoop_api::admin::PostAs {
                sender_id: sender.id,
                message: hoop_api::types::SendMessage {
                    body: body.into(),
                    mentions,
                },
                ..Default::default()
            },
        )
        .await
        .unwrap()
}
