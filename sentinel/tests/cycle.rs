//! `cycle::run` end to end over the real reference backend, with a scripted
//! agent in place of the CLI (it reads the round's instructions as a real
//! agent would, and answers, passes, stays silent or fails per room as the
//! test says), so each rule of a room's fate is checked in seconds:
//! one quiet or failing room never holds another, silence is offered three
//! times in all and then given up with a warning in the status file, a pass
//! is handled, a failed reply is retried in its own room and only the
//! second failure in a row posts the note there, a room first seen during a
//! long pause keeps its floor, and the cycle ends when the kicks do.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::types::{ConversationId, Message, SendMessage, User};
use hoop_api::{Client, ClientConfig};
use hoop_core::clock::now_unix;
use hoop_core::home::Home;
use hoop_sentinel::agent::{Agent, TurnResult};
use hoop_sentinel::config::{SentinelConfig, SentinelFile, TimingsFile};
use hoop_sentinel::ledger::{FAILED_SENDS_FILE, FailedSends, PASSES_FILE, Pass, Passes};
use hoop_sentinel::policy::TurnClass;
use hoop_sentinel::round::RoundCtx;
use hoop_sentinel::state::{Status, StatusBoard};
use hoop_sentinel::tasks::Kick;
use hoop_standin::work::work_in_instructions;

/// Every wait is bounded by this.
const WAIT: Duration = Duration::from_secs(30);

/// What the scripted agent does in a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Answer,
    Pass,
    Silent,
    /// The send fails: recorded as `hoop say` records it, nothing posted.
    FailSend,
}

/// The scripted agent: per room, a queue of acts (the last one repeats);
/// a queue of turn classes for the whole turn (default Ok).
#[derive(Clone, Default)]
struct Script {
    acts: Arc<Mutex<BTreeMap<ConversationId, Vec<Act>>>>,
    classes: Arc<Mutex<Vec<TurnClass>>>,
    /// Per room, the ids each turn listed as work.
    offered: Arc<Mutex<BTreeMap<ConversationId, Vec<Vec<i64>>>>>,
}

impl Script {
    fn set(&self, room: ConversationId, acts: &[Act]) {
        self.acts.lock().unwrap().insert(room, acts.to_vec());
    }
    fn next_act(&self, room: ConversationId) -> Act {
        let mut all = self.acts.lock().unwrap();
        let q = all.entry(room).or_insert_with(|| vec![Act::Answer]);
        if q.len() > 1 { q.remove(0) } else { q[0] }
    }
    fn offers(&self, room: ConversationId) -> Vec<Vec<i64>> {
        self.offered
            .lock()
            .unwrap()
            .get(&room)
            .cloned()
            .unwrap_or_default()
    }
}

struct ScriptAgent {
    script: Script,
    client: Arc<Client>,
    home: Home,
}

impl Agent for ScriptAgent {
    async fn run_turn(&mut self, _preamble: &str, message: &str) -> TurnResult {
        let class = {
            let mut c = self.script.classes.lock().unwrap();
            if c.is_empty() {
                TurnClass::Ok
            } else {
                c.remove(0)
            }
        };
        if class == TurnClass::Ok {
            for w in work_in_instructions(message) {
                let ids: Vec<i64> = w
                    .ids
                    .iter()
                    .chain(w.passes.iter().map(|(i, _)| i))
                    .copied()
                    .collect();
                self.script
                    .offered
                    .lock()
                    .unwrap()
                    .entry(w.room)
                    .or_default()
                    .push(ids.clone());
                let text = format!(
                    "answer to {}",
                    ids.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")
                );
                match self.script.next_act(w.room) {
                    Act::Answer => {
                        let body = SendMessage {
                            body: text,
                            mentions: vec![],
                        };
                        self.client
                            .send(w.room, &body)
                            .await
                            .expect("the answer is posted");
                    }
                    Act::Pass => Passes::record(
                        &self.home.dir().join(PASSES_FILE),
                        w.room,
                        Pass {
                            ids,
                            up_to: None,
                            why: "thanks only".into(),
                            at: now_unix(),
                        },
                    )
                    .unwrap(),
                    Act::Silent => {}
                    Act::FailSend => FailedSends::record(
                        &self.home.dir().join(FAILED_SENDS_FILE),
                        w.room,
                        "the backend could not be reached",
                        now_unix(),
                    )
                    .unwrap(),
                }
            }
        }
        TurnResult {
            class,
            usage: None,
            detail: "scripted".into(),
        }
    }
    async fn cold_start(&mut self) {}
    async fn compact_and_stop(&mut self) {}
    async fn stop(&mut self) {}
    fn idle_for(&self) -> Option<Duration> {
        None
    }
}

struct World {
    _backend: hoop_refbackend::Running,
    _root: tempfile::TempDir,
    admin: AdminClient,
    human: User,
    agent: User,
    home: Home,
    client: Arc<Client>,
    script: Script,
    kicks: Option<tokio::sync::mpsc::UnboundedSender<Kick>>,
    cycle: tokio::task::JoinHandle<()>,
    status: std::path::PathBuf,
}

impl World {
    async fn start(timings: TimingsFile, backlog_sec: Option<u64>) -> World {
        let backend = hoop_refbackend::spawn(
            "127.0.0.1:0".parse().unwrap(),
            hoop_refbackend::Config {
                admin_token: Some("admin".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
        let user = |email: &str, name: &str, is_agent| CreateUser {
            email: email.into(),
            username: name.into(),
            nickname: None,
            is_agent,
        };
        let human = admin
            .create_user(&user("ada@example.com", "ada", false))
            .await
            .unwrap();
        let agent = admin
            .create_user(&user("bolt@example.com", "bolt", true))
            .await
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        let home = Home::new(root.path(), "bolt").unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        let client = Arc::new(
            Client::new(ClientConfig {
                base_url: backend.base_url(),
                email: agent.email.clone(),
                login_code: hoop_core::limits::FIXED_LOGIN_CODE.into(),
                agent_secret: None,
                token_cache: None,
            })
            .unwrap(),
        );
        let me = client.login().await.unwrap().user;
        let cfg = SentinelConfig::resolve(SentinelFile {
            timings: Some(timings),
            new_room_backlog_sec: backlog_sec,
            ..Default::default()
        });
        let ctx = Arc::new(RoundCtx {
            client: client.clone(),
            home: home.clone(),
            me,
            cfg,
            current_card: Arc::new(Mutex::new(None)),
            warm_parts: Mutex::new(None),
            journal: hoop_sentinel::journal::Journal::off(),
        });
        let script = Script::default();
        let agent_proc = Arc::new(tokio::sync::Mutex::new(ScriptAgent {
            script: script.clone(),
            client: client.clone(),
            home: home.clone(),
        }));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let status = home.dir().join("sentinel-status.json");
        let board = StatusBoard::new(status.clone(), Status::default());
        let cycle = tokio::spawn(hoop_sentinel::tasks::cycle::run(
            ctx, agent_proc, rx, None, board,
        ));
        World {
            _backend: backend,
            _root: root,
            admin,
            human,
            agent,
            home,
            client,
            script,
            kicks: Some(tx),
            cycle,
            status,
        }
    }

    async fn room(&self, title: &str) -> ConversationId {
        self.admin
            .create_conversation(&CreateConversation {
                title: title.into(),
                is_workroom: false,
                member_ids: vec![self.human.id, self.agent.id],
            })
            .await
            .unwrap()
            .id
    }

    /// Post as the person and ring the cycle for the room.
    async fn post(&self, room: ConversationId, body: &str) -> Message {
        let m = self
            .admin
            .post_as(
                room,
                &PostAs {
                    sender_id: self.human.id,
                    message: SendMessage {
                        body: body.into(),
                        mentions: vec![],
                    },
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        if let Some(k) = &self.kicks {
            let _ = k.send(Kick::Conversation(room));
        }
        m
    }

    async fn mine(&self, room: ConversationId) -> Vec<Message> {
        let page = self.client.messages(room, 50, None).await.unwrap();
        page.messages
            .into_iter()
            .rev()
            .filter(|m| m.sender_id == self.agent.id)
            .collect()
    }

    fn cursor(&self, room: ConversationId) -> Option<i64> {
        let text = std::fs::read_to_string(self.home.cursors_path()).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v[room.to_string()].as_i64()
    }

    fn status(&self) -> Status {
        Status::load(&self.status).unwrap()
    }
}

async fn until<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn timings(backoff_ms: u64) -> TimingsFile {
    TimingsFile {
        debounce_ms: Some(30),
        alarm_ms: Some(3_600_000),
        turn_lock_retry_ms: Some(200),
        failure_backoff_ms: Some([backoff_ms, backoff_ms, backoff_ms]),
        ..Default::default()
    }
}

fn is_note(m: &Message) -> bool {
    hoop_core::gates::is_failure_report(&m.body)
}

/// Room A stays silent and then waits an hour before it is offered again;
/// room B, asked before and after, is answered at once both times, and
/// neither room gets a failure note. (Before, the silent room failed the
/// whole turn and held every room for the backoff.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_room_never_holds_the_others() {
    let w = World::start(timings(3_600_000), None).await;
    let (a, b) = (w.room("a").await, w.room("b").await);
    w.script.set(a, &[Act::Silent]);
    let qa = w.post(a, "thanks, all good").await;
    let qb = w.post(b, "is the build green?").await;
    until("b answered", || async { !w.mine(b).await.is_empty() }).await;
    let qb2 = w.post(b, "and the deploy?").await;
    until("b's second question answered", || async {
        w.mine(b).await.len() == 2
    })
    .await;
    assert_eq!(w.mine(b).await[1].body, format!("answer to {}", qb2.id));
    assert_eq!(w.mine(b).await[0].body, format!("answer to {}", qb.id));
    assert!(
        w.mine(a).await.is_empty(),
        "nothing posted in the silent room: no note"
    );
    assert_eq!(
        w.script.offers(a),
        vec![vec![qa.id]],
        "a waits its own hour"
    );
    assert!(w.cursor(a).is_none_or(|c| c < qa.id), "a is not handled");
}

/// Silence is offered three times in all (the first offer and two more),
/// then the cursor moves past it with a warning in the status file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silence_is_offered_three_times_then_given_up_with_a_warning() {
    let w = World::start(timings(100), None).await;
    let a = w.room("a").await;
    w.script.set(a, &[Act::Silent]);
    let q = w.post(a, "anyone?").await;
    until("the cursor past the message", || async {
        w.cursor(a) == Some(q.id)
    })
    .await;
    assert_eq!(
        w.script.offers(a),
        vec![vec![q.id]; 3],
        "offered exactly three times"
    );
    until("the warning in the status file", || async {
        !w.status().gave_up.is_empty()
    })
    .await;
    let g = &w.status().gave_up[0];
    assert_eq!((g.conversation_id, g.message_id, g.offers), (a, q.id, 3));
    assert!(
        w.mine(a).await.is_empty(),
        "silence is never a failure: no note"
    );
}

/// A pass is handled at once (never offered again, nothing posted); a
/// failed send is offered again in its own room after its backoff, and the
/// second failure in a row posts the note in that room only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_is_handled_and_a_failed_reply_is_retried_in_its_own_room() {
    let w = World::start(timings(150), None).await;
    let (a, b) = (w.room("a").await, w.room("b").await);
    w.script.set(a, &[Act::Pass]);
    w.script
        .set(b, &[Act::FailSend, Act::FailSend, Act::Answer]);
    let qa = w.post(a, "thanks, that's all").await;
    let qb = w.post(b, "status?").await;
    until("b answered on the third try", || async {
        w.mine(b)
            .await
            .iter()
            .any(|m| m.body == format!("answer to {}", qb.id))
    })
    .await;
    until("a's cursor past the pass", || async {
        w.cursor(a) == Some(qa.id)
    })
    .await;
    assert_eq!(
        w.script.offers(a),
        vec![vec![qa.id]],
        "a pass is never offered again"
    );
    assert!(
        w.mine(a).await.is_empty(),
        "a pass is never posted, and no note in a"
    );
    assert_eq!(w.script.offers(b), vec![vec![qb.id]; 3]);
    let notes: Vec<String> = w
        .mine(b)
        .await
        .iter()
        .filter(|m| is_note(m))
        .map(|m| m.body.clone())
        .collect();
    assert_eq!(
        notes,
        vec!["⚠️ this round failed; I am still online".to_string()]
    );
    assert!(
        Passes::load(&w.home.dir().join(PASSES_FILE)).0.is_empty(),
        "a pass the cursor went past is forgotten"
    );
}

/// A room first seen while the account is held by a usage limit keeps the
/// floor of its first sight: when the limit lifts (after the backlog
/// window), its first message is answered, not baselined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_first_seen_during_a_pause_keeps_its_floor() {
    let w = World::start(timings(3_000), Some(1)).await;
    w.script.classes.lock().unwrap().push(TurnClass::Limit);
    let a = w.room("a").await;
    let q = w.post(a, "first message ever").await;
    until("answered after the limit", || async {
        !w.mine(a).await.is_empty()
    })
    .await;
    assert_eq!(w.mine(a).await[0].body, format!("answer to {}", q.id));
    assert!(
        w.mine(a).await[0].created_at >= q.created_at + 2,
        "answered after the backlog window had passed"
    );
}

/// When the kick sender is gone (the WebSocket task ended) the cycle ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cycle_ends_when_its_kicks_do() {
    let mut w = World::start(timings(100), None).await;
    drop(w.kicks.take());
    tokio::time::timeout(WAIT, &mut w.cycle)
        .await
        .expect("the cycle ends")
        .unwrap();
}
