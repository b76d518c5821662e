//! `hoop bridge watch` as an operator runs it: no `--me` (the account comes
//! from the home redeem wrote), two windows of one account in one bridge
//! directory, a burst, a card while down, a room join with history, a
//! two-AI mention. Every message is checked by id: rang exactly once in
//! the right window, or counted in an overflow line that names its room.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use hoop_api::admin::{AdminCreateCard, CreateConversation, PostAs};
use hoop_api::types::{AssignTask, Conversation, Mention, Message, SendMessage, User};

use super::{Backend, Reaped, WAIT, backend, codex_recorder, exits, user};

/// A running watcher: its stdout and stderr lines as they come.
struct Win {
    _child: Reaped,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
}

fn lines_of(r: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    rx
}

/// Lines from `rx` up to and including the first that `stop` accepts.
fn until(rx: &mpsc::Receiver<String>, stop: impl Fn(&str) -> bool) -> Vec<String> {
    let end = Instant::now() + WAIT;
    let mut got = vec![];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                let done = stop(&l);
                got.push(l);
                if done {
                    return got;
                }
            }
            Err(e) => panic!("no awaited line ({e}); got so far: {got:#?}"),
        }
    }
}

/// The machine: a hoop root holding the reinforcement home redeem wrote
/// (key and record), and one bridge directory.
struct Machine {
    root: tempfile::TempDir,
    url: String,
    key_file: PathBuf,
}

impl Machine {
    fn new(b: &Backend, me: &User, key: &str) -> Machine {
        let root = tempfile::tempdir().unwrap();
        let home = hoop_core::home::Home::new(root.path(), "bolt").unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        std::fs::write(home.mcp_key_path(), format!("{key}\n")).unwrap();
        let record = hoop_provision::redeem::ReinforcementRecord {
            base_url: b.run.base_url(),
            user_id: me.id,
            username: me.username.clone(),
        };
        std::fs::write(
            hoop_provision::redeem::ReinforcementRecord::path(&home),
            serde_json::to_vec(&record).unwrap(),
        )
        .unwrap();
        Machine {
            key_file: home.mcp_key_path(),
            url: format!("{}/mcp", b.run.base_url()),
            root,
        }
    }

    fn bridge_dir(&self) -> PathBuf {
        self.root.path().join("bridge")
    }

    /// `hoop bridge watch` with no `--me`.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
        c.args(["bridge", "watch", "--poll-secs", "0.2"])
            .args(args)
            .arg("--key-file")
            .arg(&self.key_file)
            .args(["--url", &self.url])
            .env("HOOP_ROOT", self.root.path())
            .env_remove("HOOP_BRIDGE_ME")
            .env_remove("HOOP_WINDOW_SESSION")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env("HOOP_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn start(&self, args: &[&str]) -> Win {
        let mut child = Reaped(self.cmd(args).spawn().unwrap());
        let out = lines_of(child.0.stdout.take().unwrap());
        let err = lines_of(child.0.stderr.take().unwrap());
        Win {
            _child: child,
            out,
            err,
        }
    }
}

/// The start report, once the first round is done.
fn start_line(w: &Win) -> String {
    until(&w.err, |l| l.starts_with("hoop bridge: "))
        .pop()
        .unwrap()
}

/// A room's baseline in a window's state file, once it has one.
fn wait_baseline(state: &Path, room: i64) -> i64 {
    let end = Instant::now() + WAIT;
    loop {
        let v: Option<i64> = std::fs::read(state)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["rooms"][room.to_string()].as_i64());
        if let Some(v) = v {
            return v;
        }
        assert!(
            Instant::now() < end,
            "{} never took room {room}",
            state.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn room(
    rt: &tokio::runtime::Runtime,
    b: &Backend,
    title: &str,
    work: bool,
    members: &[&User],
) -> Conversation {
    rt.block_on(b.admin.create_conversation(&CreateConversation {
        title: title.into(),
        is_workroom: work,
        member_ids: members.iter().map(|u| u.id).collect(),
    }))
    .unwrap()
}

fn post(
    rt: &tokio::runtime::Runtime,
    b: &Backend,
    room: i64,
    from: &User,
    body: &str,
    mentions: Vec<Mention>,
) -> Message {
    rt.block_on(b.admin.post_as(
        room,
        &PostAs {
            sender_id: from.id,
            message: SendMessage {
                body: body.into(),
                mentions,
            },
            kind: Default::default(),
        },
    ))
    .unwrap()
}

/// The message id of a rung line, if it is one.
fn rung_id(line: &str) -> Option<i64> {
    line.split(" message_id=")
        .nth(1)?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

#[test]
fn without_me_the_window_finds_its_account_and_says_it_rings_for_nothing() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let dm = room(&rt, &b, "dm", false, &[&bolt, &ann]);
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);

    // No --rooms, no --fallback: the backend assigns nothing; the window
    // says so and how to fix it, on stderr and as one notice line.
    let w = m.start(&["--session", "s-none"]);
    let fix = "this window rings for no room (the backend assigns it none, reason \
               no_assignment): start it with --fallback, or assign rooms to this window in the App";
    assert_eq!(start_line(&w), format!("hoop bridge: {fix}"));
    assert_eq!(
        until(&w.out, |_| true),
        vec![format!("🔔 {fix} | type=notice kind=no_rooms")]
    );
    drop(w);

    // --fallback: the account is the home's; its own message never rings,
    // the person's does.
    let w = m.start(&["--session", "s-fb", "--fallback"]);
    assert_eq!(
        start_line(&w),
        "hoop bridge: this window rings for every room (fallback, assigned by the backend)"
    );
    wait_baseline(&m.bridge_dir().join("state-s-fb.json"), dm.id);
    let own = post(&rt, &b, dm.id, &bolt, "my own words", vec![]);
    let theirs = post(&rt, &b, dm.id, &ann, "ping", vec![]);
    let got = until(&w.out, |_| true);
    assert_eq!(
        got,
        vec![format!(
            "🔔 @ann in dm: ping | type=dm conversation_id={} message_id={} sender_id={}",
            dm.id, theirs.id, ann.id
        )],
        "own message {} never rings",
        own.id
    );
    drop(w);

    // A key no home holds: the refusal names the cause and the fix.
    let other = tempfile::tempdir().unwrap();
    let mut c = m.cmd(&["--fallback"]);
    c.env("HOOP_ROOT", other.path());
    let out = exits(c);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot tell which account this key belongs to: no home under {} holds it with its \
             reinforcement.json (hoop provision redeem writes both); give --me <the account's user id>",
            other.path().display()
        )),
        "{err}"
    );
    // --me overrides the home.
    let w = m.start(&[
        "--session",
        "s-me",
        "--fallback",
        "--me",
        &ann.id.to_string(),
    ]);
    start_line(&w);
    wait_baseline(&m.bridge_dir().join("state-s-me.json"), dm.id);
    let from_bolt = post(&rt, &b, dm.id, &bolt, "seen as someone else", vec![]);
    let line = until(&w.out, |_| true).pop().unwrap();
    assert_eq!(rung_id(&line), Some(from_bolt.id), "{line}");
}

#[test]
fn a_burst_a_card_while_down_a_join_and_a_two_ai_mention_ring_once_in_the_right_window() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let nova = rt.block_on(user(&b, "nova", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let cy = rt.block_on(user(&b, "cy", false));
    // Window 1 answers for the burst room, window 2 for everything else.
    let burst = room(&rt, &b, "burst", true, &[&bolt, &ann, &cy]);
    let two_ai = room(&rt, &b, "two-ai", false, &[&bolt, &nova, &ann]);
    let old = room(&rt, &b, "old", false, &[&ann, &cy]);
    let old_ids: Vec<i64> = (0..12)
        .map(|i| post(&rt, &b, old.id, &ann, &format!("history {i}"), vec![]).id)
        .collect();
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    let rooms_arg = burst.id.to_string();
    let w1_args = ["--session", "w1", "--rooms", rooms_arg.as_str()];
    let w2_args = ["--session", "w2", "--fallback"];
    let state1 = m.bridge_dir().join("state-w1.json");
    let state2 = m.bridge_dir().join("state-w2.json");

    // First start: baselines, then both stop.
    let w1 = m.start(&w1_args);
    assert_eq!(
        start_line(&w1),
        format!(
            "hoop bridge: this window rings for room(s) {} (assigned by the backend)",
            burst.id
        )
    );
    wait_baseline(&state1, burst.id);
    let w2 = m.start(&w2_args);
    assert_eq!(
        start_line(&w2),
        format!(
            "hoop bridge: this window rings for every room except {} (fallback, assigned by the \
             backend)",
            burst.id
        )
    );
    wait_baseline(&state2, two_ai.id);
    drop((w1, w2));

    // While both are down: 25 posts into the burst room, all but the first
    // mentioning the account (more mentions than one round shows), and
    // then an urgent card for it there.
    let mut burst_ids = vec![];
    for i in 0..25 {
        let body = if i >= 1 {
            format!("@bolt burst {i}")
        } else {
            format!("burst {i}")
        };
        burst_ids.push(post(&rt, &b, burst.id, &ann, &body, vec![]).id);
    }
    let card = rt
        .block_on(b.admin.create_card(&AdminCreateCard {
            conversation_id: burst.id,
            task: AssignTask {
                title: "URGENT hotfix".into(),
                assignee_id: Some(bolt.id),
                ..Default::default()
            },
            creator_id: Some(ann.id),
        }))
        .unwrap();

    let w1 = m.start(&w1_args);
    let w2 = m.start(&w2_args);
    // Each has connected (its event stream is open before its first round)
    // once it reports what it rings for.
    start_line(&w1);
    start_line(&w2);
    let overflow = |l: &str| l.ends_with("type=notice kind=overflow");
    let mut lines1 = until(&w1.out, overflow);
    // The card first, then the oldest direct mentions; the rest counted
    // per kind, its room named.
    let line_of = |id: i64, body: &str, kind: &str| {
        format!(
            "🔔 @ann in burst: {body} | type={kind} conversation_id={} message_id={id} sender_id={}",
            burst.id, ann.id
        )
    };
    let mut want1 = vec![format!(
        "🔔 card #{} \"URGENT hotfix\" is queued | type=task_assigned conversation_id={} \
         message_id=- sender_id=-",
        card.id, burst.id
    )];
    for (i, id) in burst_ids.iter().enumerate().take(20).skip(1) {
        want1.push(line_of(*id, &format!("@bolt burst {i}"), "mention"));
    }
    want1.push(format!(
        "🔔 6 more event(s) this round not shown (5 mention, 1 group) in room(s) {} \"burst\": \
         read the rooms | type=notice kind=overflow",
        burst.id
    ));
    assert_eq!(lines1, want1);

    // A room the account joins after start: its history never rings, the
    // message that follows the join does (window 2, the fallback, on the
    // event stream).
    rt.block_on(b.admin.add_member(old.id, bolt.id)).unwrap();
    let welcome = post(&rt, &b, old.id, &ann, "welcome", vec![]);
    // Two AIs in the room, the array names the other one, the body names
    // this account: it rings (window 2).
    let two = post(
        &rt,
        &b,
        two_ai.id,
        &ann,
        "@bolt can you look, @nova too",
        vec![Mention::User(nova.id)],
    );
    let only_nova = post(
        &rt,
        &b,
        two_ai.id,
        &ann,
        "@novak and @nova only",
        vec![Mention::User(nova.id)],
    );
    // A voice message rings as one, never as its waveform.
    let waveform = "▁▃▅▇▅▃▁";
    let voice = rt
        .block_on(b.admin.post_as(
            old.id,
            &PostAs {
                sender_id: ann.id,
                message: SendMessage {
                    body: waveform.into(),
                    mentions: vec![],
                },
                kind: hoop_api::types::MessageKind::Voice,
            },
        ))
        .unwrap();
    // The end of each window's lines: one more message in a room of each.
    let end1 = post(&rt, &b, burst.id, &ann, "end one", vec![]);
    let end2 = post(&rt, &b, old.id, &ann, "end two", vec![]);
    lines1.extend(until(&w1.out, |l| rung_id(l) == Some(end1.id)));
    let lines2 = until(&w2.out, |l| rung_id(l) == Some(end2.id));

    let count = |lines: &[String], id: i64| lines.iter().filter(|l| rung_id(l) == Some(id)).count();
    for (i, id) in burst_ids.iter().enumerate() {
        let want = if (1..20).contains(&i) { 1 } else { 0 };
        assert_eq!(count(&lines1, *id), want, "burst {i} (#{id}) in window 1");
        assert_eq!(
            count(&lines2, *id),
            0,
            "burst {i} (#{id}) never in window 2"
        );
    }
    for id in &old_ids {
        assert_eq!(
            count(&lines1, *id) + count(&lines2, *id),
            0,
            "history #{id}"
        );
    }
    let voice_line: Vec<&String> = lines2
        .iter()
        .filter(|l| rung_id(l) == Some(voice.id))
        .collect();
    assert_eq!(voice_line.len(), 1, "{lines2:#?}");
    assert!(
        voice_line[0].contains(" in old: voice message | type=")
            && !voice_line[0].contains(waveform),
        "{}",
        voice_line[0]
    );
    for (id, what) in [
        (welcome.id, "welcome"),
        (two.id, "two-AI mention"),
        (end2.id, "end two"),
    ] {
        assert_eq!(
            count(&lines2, id),
            1,
            "{what} once in window 2: {lines2:#?}"
        );
        assert_eq!(count(&lines1, id), 0, "{what} never in window 1");
    }
    assert_eq!(
        count(&lines1, only_nova.id) + count(&lines2, only_nova.id),
        0
    );
    assert_eq!(count(&lines1, end1.id), 1);
    assert!(
        lines2.iter().any(|l| l
            == &format!(
                "🔔 @ann in two-ai: @bolt can you look, @nova too | type=mention conversation_id={} \
                 message_id={} sender_id={}",
                two_ai.id, two.id, ann.id
            )),
        "{lines2:#?}"
    );
    assert_eq!(
        lines2.iter().filter(|l| l.contains("card #")).count(),
        0,
        "the card is window 1's"
    );
}

#[test]
fn the_windows_own_card_actions_do_not_ring_a_card_from_someone_else_does() {
    use hoop_api::types::Card;
    use hoop_api::types::mcp::{WorkTaskProgressArgs, WorkTaskStartArgs};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let work = room(&rt, &b, "work", true, &[&bolt, &ann]);
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    // Polling: every card change is looked at within six rounds.
    let w = m.start(&["--session", "s1", "--fallback", "--no-push"]);
    start_line(&w);
    wait_baseline(&m.bridge_dir().join("state-s1.json"), work.id);
    let mcp = hoop_api::McpClient::new(hoop_api::McpConfig::new(b.run.base_url(), key)).unwrap();
    let mine: Card = rt
        .block_on(mcp.call(
            hoop_api::types::mcp::WORK_TASK_START,
            &WorkTaskStartArgs {
                conversation_id: work.id,
                title: "my own".into(),
                message_id: None,
                parent_id: None,
            },
        ))
        .unwrap();
    let _: serde_json::Value = rt
        .block_on(mcp.call(
            hoop_api::types::mcp::WORK_TASK_PROGRESS,
            &WorkTaskProgressArgs {
                task_id: mine.id,
                line: "halfway".into(),
            },
        ))
        .unwrap();
    let theirs = rt
        .block_on(b.admin.create_card(&AdminCreateCard {
            conversation_id: work.id,
            task: AssignTask {
                title: "from ann".into(),
                assignee_id: Some(bolt.id),
                ..Default::default()
            },
            creator_id: Some(ann.id),
        }))
        .unwrap();
    // The first line is the card someone else made: the window's own
    // start and progress rang nothing before it.
    assert_eq!(
        until(&w.out, |_| true),
        vec![format!(
            "🔔 card #{} \"from ann\" is queued | type=task_assigned conversation_id={} \
             message_id=- sender_id=-",
            theirs.id, work.id
        )],
        "own card #{}",
        mine.id
    );
}

#[test]
fn a_reply_sent_under_another_account_is_reported_not_passed_as_sent() {
    use std::io::Write as _;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let dm = room(&rt, &b, "dm", false, &[&bolt, &ann]);
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    let channel = |me: i64| {
        let mut c = m.cmd(&["--session", "ch", "--fallback", "--me", &me.to_string()]);
        let mut args: Vec<std::ffi::OsString> = c.get_args().map(|a| a.to_owned()).collect();
        args[1] = "channel".into();
        let mut ch = Command::new(env!("CARGO_BIN_EXE_hoop"));
        ch.args(args)
            .env("HOOP_ROOT", m.root.path())
            .env("HOOP_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        c = ch;
        let mut child = Reaped(c.spawn().unwrap());
        let stdin = child.0.stdin.take().unwrap();
        let out = lines_of(child.0.stdout.take().unwrap());
        (child, stdin, out)
    };
    let answer = |stdin: &mut std::process::ChildStdin,
                  out: &mpsc::Receiver<String>,
                  id: i64,
                  text: &str| {
        let msgs = [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "reply", "arguments": {"conversation_id": dm.id, "text": text}}}),
        ];
        for v in msgs {
            writeln!(stdin, "{v}").unwrap();
        }
        stdin.flush().unwrap();
        let line = until(out, |l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["id"] == id)
        })
        .pop()
        .unwrap();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    // The window says it is ann, the key is bolt's: the reply goes out as
    // bolt, and the window is told so.
    let (_c, mut stdin, out) = channel(ann.id);
    let r = answer(&mut stdin, &out, 7, "hello from the window");
    let sent = rt.block_on(b.admin.read_messages(dm.id, 5, None)).unwrap();
    let m1 = sent
        .messages
        .iter()
        .find(|x| x.body == "hello from the window")
        .unwrap();
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(
        r["result"]["content"][0]["text"],
        format!(
            "sent #{} to room {}, but as @bolt (user {}), not as this window's account (user {}): \
             the key this window uses belongs to another account; fix the key (or --me) before \
             replying again",
            m1.id, dm.id, bolt.id, ann.id
        )
    );
    drop((_c, stdin));
    // The right account: a plain success.
    let (_c, mut stdin, out) = channel(bolt.id);
    let r = answer(&mut stdin, &out, 8, "second");
    assert_eq!(r["result"]["isError"], false, "{r}");
}

#[test]
fn a_second_watcher_on_the_same_session_in_one_directory_is_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let dm = room(&rt, &b, "dm", false, &[&bolt, &ann]);
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    let rooms = dm.id.to_string();
    // No --session: the first takes "default".
    let w1 = m.start(&["--rooms", &rooms]);
    start_line(&w1);
    let out = exits(m.cmd(&["--fallback"]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let dir = m.bridge_dir();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "another watcher already runs for window session \"default\" in {} (pid {} holds \
             {}): give this window its own --session (Claude Code exports CLAUDE_CODE_SESSION_ID \
             to the commands it starts), or stop the other watcher",
            dir.display(),
            w1._child.0.id(),
            dir.join("window-default.lock").display()
        )),
        "{err}"
    );
    // Claude Code's session id names the window: a second window runs.
    let mut c = m.cmd(&["--fallback"]);
    c.env("CLAUDE_CODE_SESSION_ID", "9f1c-window-two");
    let mut child = Reaped(c.spawn().unwrap());
    let err2 = lines_of(child.0.stderr.take().unwrap());
    assert!(
        until(&err2, |l| l.starts_with("hoop bridge: "))
            .last()
            .unwrap()
            .contains("rings for")
    );
    wait_baseline(&dir.join("state-9f1c-window-two.json"), dm.id);
}

#[test]
fn two_codex_windows_in_one_directory_never_hand_over_each_others_events() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let r2 = room(&rt, &b, "two", false, &[&bolt, &ann]);
    let r3 = room(&rt, &b, "three", false, &[&bolt, &ann]);
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    // Window C's codex refuses everything; window D's records what it got.
    let (d_cmd, calls) = codex_recorder(m.root.path(), "codex-d");
    let (s2, s3) = (r2.id.to_string(), r3.id.to_string());
    let c = m.start(&[
        "--client",
        "codex",
        "--thread",
        "TC",
        "--rooms",
        &s2,
        "--codex-cmd",
        "false {thread} {text}",
    ]);
    let d = m.start(&[
        "--client",
        "codex",
        "--thread",
        "TD",
        "--rooms",
        &s3,
        "--codex-cmd",
        &d_cmd,
    ]);
    start_line(&c);
    start_line(&d);
    let dir = m.bridge_dir();
    wait_baseline(&dir.join("state-TC.json"), r2.id);
    wait_baseline(&dir.join("state-TD.json"), r3.id);
    let for_c = post(&rt, &b, r2.id, &ann, "for window C", vec![]);
    let c_pending = dir
        .join("codex")
        .join("windows")
        .join("TC")
        .join("pending")
        .join(format!("m{}.json", for_c.id));
    let end = Instant::now() + WAIT;
    while !c_pending.exists() {
        assert!(Instant::now() < end, "C never kept its event pending");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Once C's event waits in C's store, D hands over its own next event;
    // C's never reaches D's thread.
    let for_d = post(&rt, &b, r3.id, &ann, "for window D", vec![]);
    let end = Instant::now() + WAIT;
    let text = loop {
        let text = std::fs::read_to_string(&calls).unwrap_or_default();
        if text.contains(&format!("message_id={}", for_d.id)) {
            break text;
        }
        assert!(
            Instant::now() < end,
            "D never handed over its event: {text:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        text,
        format!(
            "queue|--thread|TD|--message|🔔 @ann in three: for window D | type=dm conversation_id={} \
             message_id={} sender_id={} (when read: hoop bridge ack m{} --state-dir {})|\n",
            r3.id,
            for_d.id,
            ann.id,
            for_d.id,
            dir.display()
        ),
        "C's event #{} never handed to D",
        for_c.id
    );
    assert!(c_pending.exists(), "C's event still pending in C's store");

    // A handover names its window: without --session, two stores are two
    // candidates and nothing moves.
    let summary = m.root.path().join("summary.txt");
    std::fs::write(&summary, "C did the first half").unwrap();
    let (h_cmd, handed) = codex_recorder(m.root.path(), "codex-h");
    let handover = |session: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hoop"));
        cmd.args(["bridge", "handover", "--to", "TC2", "--summary-file"])
            .arg(&summary)
            .arg("--state-dir")
            .arg(&dir)
            .args(["--codex-cmd", &h_cmd])
            .env_remove("HOOP_WINDOW_SESSION")
            .env("HOOP_LOG", "warn");
        if let Some(s) = session {
            cmd.args(["--session", s]);
        }
        exits(cmd)
    };
    let out = handover(None);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "hoop: 2 windows have a store in {}: give --session with one of TC, TD",
            dir.display()
        )
    );
    assert!(!handed.exists(), "nothing was handed over");
    // C's handover reaches C's new thread with the summary only, and
    // moves C's thread alone.
    let out = handover(Some("TC"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&handed).unwrap(),
        "queue|--thread|TC2|--message|Handover summary from the previous thread:\nC did the first half|\n"
    );
    let thread = |w: &str| {
        std::fs::read_to_string(dir.join("codex").join("windows").join(w).join("thread")).ok()
    };
    assert_eq!(thread("TC").as_deref(), Some("TC2"));
    assert_eq!(thread("TD"), None, "D's thread is D's own");
    // D's next event still goes to TD, and C's event never reached D.
    let again = post(&rt, &b, r3.id, &ann, "again for D", vec![]);
    let end = Instant::now() + WAIT;
    let text = loop {
        let text = std::fs::read_to_string(&calls).unwrap_or_default();
        if text.contains(&format!("message_id={}", again.id)) {
            break text;
        }
        assert!(
            Instant::now() < end,
            "D never handed over {}: {text:?}",
            again.id
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text:?}");
    assert!(
        lines[1].starts_with("queue|--thread|TD|--message|"),
        "{text:?}"
    );
    assert!(
        !text.contains(&format!("message_id={}", for_c.id)),
        "C's event #{} never handed to D: {text:?}",
        for_c.id
    );
}

#[test]
fn windows_started_together_keep_their_window_ids_across_a_restart() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    let sessions: Vec<String> = (0..6).map(|i| format!("s{i}")).collect();
    let run_all = || {
        // All at the same moment, one round each, on a fresh directory the
        // first time: each must end with the one installation id.
        let children: Vec<_> = sessions
            .iter()
            .map(|s| {
                let mut c = m.cmd(&["--session", s, "--fallback", "--max-rounds", "1"]);
                c.stdout(Stdio::null()).stderr(Stdio::null());
                c
            })
            .collect();
        let handles: Vec<_> = children
            .into_iter()
            .map(|c| std::thread::spawn(move || exits(c)))
            .collect();
        for h in handles {
            assert!(h.join().unwrap().status.success());
        }
        sessions
            .iter()
            .map(|s| {
                let st: serde_json::Value = serde_json::from_slice(
                    &std::fs::read(m.bridge_dir().join(format!("state-{s}.json"))).unwrap(),
                )
                .unwrap();
                st["window_id"].as_str().unwrap().to_string()
            })
            .collect::<Vec<_>>()
    };
    let first = run_all();
    let again = run_all();
    for (s, (a, b)) in sessions.iter().zip(first.iter().zip(&again)) {
        assert_eq!(a, b, "window {s} kept its id across a restart");
    }
}

#[test]
fn a_quick_restart_waits_for_the_dying_watcher_and_claims_its_rooms_itself() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let b = rt.block_on(backend());
    let bolt = rt.block_on(user(&b, "bolt", true));
    let ann = rt.block_on(user(&b, "ann", false));
    let dm = room(&rt, &b, "dm", false, &[&bolt, &ann]);
    let key = rt.block_on(b.admin.mint_mcp_key(bolt.id)).unwrap().key;
    let m = Machine::new(&b, &bolt, &key);
    let rooms = dm.id.to_string();
    let old = m.start(&["--session", "w", "--rooms", &rooms]);
    start_line(&old);
    let old_pid = Pid::from_raw(old._child.0.id() as i32);
    // The old watcher hangs on its way out; the new one is started.
    kill(old_pid, Signal::SIGSTOP).unwrap();
    let new = m.start(&["--session", "w", "--rooms", &rooms]);
    assert_eq!(
        until(&new.err, |l| l.starts_with("hoop bridge: "))
            .pop()
            .unwrap(),
        format!(
            "hoop bridge: waiting up to 5 s for the watcher of window session \"w\" (pid {old_pid}) \
             to exit"
        )
    );
    // Then the old one dies: the new one takes over, not refused.
    kill(old_pid, Signal::SIGKILL).unwrap();
    start_line(&new);
    let claims: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.bridge_dir().join("claims.json")).unwrap())
            .unwrap();
    assert_eq!(
        claims,
        serde_json::json!({ rooms.clone(): new._child.0.id() }),
        "the room is claimed by the live watcher, not the dead {old_pid}"
    );
}
