//! `hoop say` / `hoop send-image` end to end: the real binary against the
//! reference backend, posting as a home's account through the gates.

use std::process::Stdio;

use hoop_api::types::{Message, MessageKind};
use hoop_core::limits::{MAX_BODY_CHARS, SEND_RATE_PER_MIN};
use tokio::io::AsyncWriteExt;
use tokio::time::timeout;

use crate::support::{Agent, BOUND, Env};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn hoop(env: &Env, args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"));
    cmd.args(args)
        .env("HOOP_ROOT", env.root.path())
        .env("HOOP_LOG", "warn")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("the hoop binary runs");
    if let Some(text) = stdin {
        let mut w = child.stdin.take().unwrap();
        w.write_all(text.as_bytes()).await.unwrap();
        drop(w);
    }
    let out = timeout(BOUND, child.wait_with_output())
        .await
        .expect("hoop finishes in time")
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

async fn say(env: &Env, a: &Agent, room: i64, extra: &[&str], text: &str) -> Out {
    let room = room.to_string();
    let mut args = vec!["say", "--home", &a.home.name, "--room", &room];
    args.extend_from_slice(extra);
    args.push(text);
    hoop(env, &args, None).await
}

fn watermark(a: &Agent, room: i64) -> Option<i64> {
    let text = std::fs::read_to_string(a.home.say_seen_path()).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.get(room.to_string()).and_then(|x| x.as_i64())
}

async fn newest(env: &Env, a: &Agent, room: i64) -> Message {
    env.newest(a, room, 1).await.remove(0)
}

/// A room with the agent and a human who has already said something.
async fn setup(env: &Env) -> (Agent, hoop_api::types::User, i64) {
    let a = env.agent("bolt").await;
    let ann = env.user("ann", false).await;
    let room = env.room("ops", &[a.user.id, ann.id]).await.id;
    (a, ann, room)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_messages_are_printed_and_nothing_is_sent_then_the_next_say_goes() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let m1 = env
        .post_as(room, ann.id, "can you look at the build?")
        .await;
    let m2 = env.post_as(room, ann.id, "line one\nline two").await;
    let out = say(&env, &a, room, &[], "on it").await;
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("can you look at the build?"),
        "{}",
        out.stdout
    );
    let p1 = out.stdout.find(&format!("#{}", m1.id)).unwrap();
    let p2 = out.stdout.find(&format!("#{}", m2.id)).unwrap();
    assert!(p1 < p2, "oldest first:\n{}", out.stdout);
    assert_eq!(newest(&env, &a, room).await.id, m2.id, "nothing was sent");
    assert_eq!(watermark(&a, room), Some(m2.id), "what was printed is seen");

    let out = say(&env, &a, room, &[], "on it").await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = newest(&env, &a, room).await;
    assert_eq!((sent.body.as_str(), sent.sender_id), ("on it", a.user.id));
    // Up to what was shown, not to the sent message: the text route has no
    // atomic gap check, so something may land between the read and the
    // send; the account's own message never counts as unread anyway.
    assert_eq!(
        watermark(&a, room),
        Some(m2.id),
        "the watermark stays at what was shown"
    );
    // Nothing new: the next one goes straight through.
    assert_eq!(say(&env, &a, room, &[], "done").await.code, 0);
}

/// Send `text` the way an agent does: the first say prints what is unread
/// (and refuses), the second goes.
async fn catch_up(env: &Env, a: &Agent, room: i64, text: &str) {
    let out = say(env, a, room, &[], text).await;
    if out.code == 2 {
        let again = say(env, a, room, &[], text).await;
        assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    } else {
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    }
}

/// `--anyway` sends without the unread check, but the watermark moves only
/// over what was printed: the messages it skipped stay unread (the sentinel
/// offers them again; the next plain say prints them). Before, the mark
/// jumped to the newest message, and the skipped ones counted as handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anyway_sends_but_never_moves_the_watermark_over_what_it_skipped() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let first = env.post_as(room, ann.id, "hello").await;
    catch_up(&env, &a, room, "hi").await;
    assert_eq!(watermark(&a, room), Some(first.id));
    let mut skipped = vec![];
    for i in 0..11 {
        skipped.push(env.post_as(room, ann.id, &format!("q{i}")).await);
    }
    let out = say(&env, &a, room, &["--anyway"], "read it, answering").await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(newest(&env, &a, room).await.body, "read it, answering");
    assert_eq!(
        watermark(&a, room),
        Some(first.id),
        "the mark stays below the skipped messages"
    );
    // The next plain say prints them, oldest first, and only then moves.
    let out = say(&env, &a, room, &[], "and now").await;
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(&format!("#{} @ann: q0", skipped[0].id)),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("--anyway"),
        "the refusal never suggests it: {}",
        out.stdout
    );
    assert_eq!(watermark(&a, room), Some(skipped[7].id));
}

/// A room that never had a watermark is read back to its start, not just
/// its newest page: the oldest unread are printed first, the mark stops at
/// the newest printed, and the rest is named. Before, the newest 8 were
/// read, taken as complete, and the mark jumped over q1..q4 unprinted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_without_a_watermark_is_read_from_its_start() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let mut qs = vec![];
    for i in 1..=12 {
        qs.push(env.post_as(room, ann.id, &format!("q{i}")).await);
    }
    assert_eq!(watermark(&a, room), None);
    let out = say(&env, &a, room, &[], "hello").await;
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    for (i, m) in qs.iter().enumerate() {
        assert_eq!(
            out.stdout.contains(&format!("#{} @ann:", m.id)),
            i < 8,
            "q1..q8 printed, q9..q12 not yet: {}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains("4 more unread after these"),
        "{}",
        out.stdout
    );
    assert_eq!(
        watermark(&a, room),
        Some(qs[7].id),
        "no further than printed"
    );
    assert_eq!(newest(&env, &a, room).await.id, qs[11].id, "nothing sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_markdown_gate_and_the_cap_refuse_before_any_network() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let last = env.post_as(room, ann.id, "hi").await;
    let out = say(&env, &a, room, &["--anyway"], "this is **bold**").await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("markdown"), "{}", out.stderr);
    let long = "x".repeat(MAX_BODY_CHARS + 1);
    let out = say(&env, &a, room, &["--anyway"], &long).await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("65536"), "{}", out.stderr);
    assert_eq!(newest(&env, &a, room).await.id, last.id, "nothing sent");
    assert_eq!(watermark(&a, room), None, "a refused send reads nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_report_passes_the_gap_and_markdown_gates() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    env.post_as(room, ann.id, "unread one").await;
    env.post_as(room, ann.id, "unread two").await;
    let body = "⚠️ this round failed; I am still online\n# trace\n**boom**";
    let out = say(&env, &a, room, &["--failure"], body).await;
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let sent = newest(&env, &a, room).await;
    // No message kind is relied on: the failure mark is in the body.
    assert_eq!((sent.kind, sent.body.as_str()), (MessageKind::Text, body));
    assert_eq!(
        watermark(&a, room),
        None,
        "nothing was read, nothing marked seen"
    );
    // The ordinary gate still holds for the next normal send.
    assert_eq!(say(&env, &a, room, &[], "ok").await.code, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_unread_than_the_window_are_shown_oldest_first_and_hoop_read_shows_the_rest() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let first = env.post_as(room, ann.id, "one").await;
    catch_up(&env, &a, room, "seen").await;
    assert_eq!(watermark(&a, room), Some(first.id));
    // Many messages arrive: more than one refusal shows.
    let mut burst = vec![];
    for i in 0..12 {
        burst.push(env.post_as(room, ann.id, &format!("burst {i}")).await);
    }
    let out = say(&env, &a, room, &[], "answer").await;
    assert_eq!(out.code, 2);
    for (i, m) in burst.iter().enumerate() {
        assert_eq!(
            out.stdout.contains(&format!("#{} @", m.id)),
            i < 8,
            "the oldest 8 are shown, the rest not: {}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains(&format!(
            "4 more unread after these: run hoop read --home bolt --room {room}"
        )),
        "{}",
        out.stdout
    );
    assert_eq!(
        watermark(&a, room),
        Some(burst[7].id),
        "the watermark stops at the newest message shown"
    );
    // Still unread: the next say refuses again.
    assert_eq!(say(&env, &a, room, &[], "answer").await.code, 2);
    assert_eq!(watermark(&a, room), Some(burst[11].id));
    let room_s = room.to_string();
    // `hoop read` with nothing unread shows the newest as context.
    let out = hoop(&env, &["read", "--home", "bolt", "--room", &room_s], None).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("nothing unread"), "{}", out.stdout);
    // Older history with --before, own messages marked.
    let before = burst[0].id.to_string();
    let out = hoop(
        &env,
        &[
            "read", "--home", "bolt", "--room", &room_s, "--before", &before,
        ],
        None,
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("(you): seen"), "{}", out.stdout);
    assert!(out.stdout.contains(": one"), "{}", out.stdout);
    assert_eq!(say(&env, &a, room, &[], "answer").await.code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hoop_read_shows_the_unread_and_moves_the_watermark_over_them_only() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    env.post_as(room, ann.id, "one").await;
    catch_up(&env, &a, room, "seen").await;
    let mut burst = vec![];
    for i in 0..15 {
        burst.push(env.post_as(room, ann.id, &format!("burst {i}")).await);
    }
    let room_s = room.to_string();
    let out = hoop(&env, &["read", "--home", "bolt", "--room", &room_s], None).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("12 unread message(s), oldest first"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("3 more unread after these"),
        "{}",
        out.stdout
    );
    assert_eq!(watermark(&a, room), Some(burst[11].id));
    let out = hoop(&env, &["read", "--home", "bolt", "--room", &room_s], None).await;
    assert!(out.stdout.contains("3 unread message(s)"), "{}", out.stdout);
    assert_eq!(watermark(&a, room), Some(burst[14].id));
    assert_eq!(say(&env, &a, room, &[], "answer").await.code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_backend_is_retried_then_says_nothing_was_sent() {
    let env = Env::start().await;
    let (a, _ann, room) = setup(&env).await;
    // Point the home at a port nobody listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let cfg_path = a.home.config_path();
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&cfg_path).unwrap()).unwrap();
    cfg["base_url"] = format!("http://127.0.0.1:{port}").into();
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();
    let out = say(&env, &a, room, &[], "hello").await;
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("NOTHING WAS SENT"), "{}", out.stderr);
    assert!(
        out.stderr.contains("backend unreachable; trying again"),
        "retried before giving up: {}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_and_stdin_text() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let room_s = room.to_string();
    let ann_s = ann.id.to_string();
    let out = hoop(
        &env,
        &[
            "say",
            "--home",
            "bolt",
            "--room",
            &room_s,
            "--mention",
            &ann_s,
            "--mention",
            "everyone",
            "-",
        ],
        Some("from stdin\nsecond line\n"),
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let m = newest(&env, &a, room).await;
    assert_eq!(m.body, "from stdin\nsecond line");
    assert_eq!(
        m.mentions,
        [
            hoop_api::types::Mention::User(ann.id),
            hoop_api::types::Mention::EVERYONE
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_is_reported_clearly() {
    let env = Env::start().await;
    let (a, _ann, room) = setup(&env).await;
    env.start_of_a_minute();
    for i in 0..SEND_RATE_PER_MIN {
        a.client
            .send(room, &crate::support::text(&format!("n{i}")))
            .await
            .unwrap();
    }
    let out = say(&env, &a, room, &[], "one more").await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("rate limited"), "{}", out.stderr);
    assert!(out.stderr.contains("retry in"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_image_posts_an_image_through_the_same_gates() {
    let env = Env::start().await;
    let (a, ann, room) = setup(&env).await;
    let file = env.root.path().join("chart.png");
    std::fs::write(&file, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let file_s = file.to_str().unwrap();
    let room_s = room.to_string();
    env.post_as(room, ann.id, "send the chart").await;
    let args = [
        "send-image",
        "--home",
        "bolt",
        "--room",
        &room_s,
        "--file",
        file_s,
        "--caption",
        "the chart",
    ];
    let out = hoop(&env, &args, None).await;
    assert_eq!(out.code, 2, "the unread message comes first");
    assert!(out.stdout.contains("send the chart"));
    let out = hoop(&env, &args, None).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let m = newest(&env, &a, room).await;
    assert_eq!((m.kind, m.body.as_str()), (MessageKind::Image, "the chart"));
    let txt = env.root.path().join("notes.txt");
    std::fs::write(&txt, "x").unwrap();
    let out = hoop(
        &env,
        &[
            "send-image",
            "--home",
            "bolt",
            "--room",
            &room_s,
            "--file",
            txt.to_str().unwrap(),
        ],
        None,
    )
    .await;
    assert_eq!(out.code, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_without_config_is_an_error_and_secrets_stay_out_of_output() {
    let env = Env::start().await;
    let (a, _ann, room) = setup(&env).await;
    let out = say(&env, &a, room, &[], "an empty room has nothing unread").await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let token = hoop_api::token::load(&a.home.token_path()).expect("the say logged in");
    assert!(!out.stdout.contains(&token.token) && !out.stderr.contains(&token.token));
    let out = hoop(&env, &["say", "--home", "ghost", "--room", "1", "hi"], None).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("config.json"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_report_outwaits_the_rate_limit() {
    use tokio::io::AsyncBufReadExt;
    let env = Env::start().await;
    let (a, _ann, room) = setup(&env).await;
    env.start_of_a_minute();
    for i in 0..SEND_RATE_PER_MIN {
        a.client
            .send(room, &crate::support::text(&format!("n{i}")))
            .await
            .unwrap();
    }
    let room_s = room.to_string();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args([
            "say",
            "--home",
            "bolt",
            "--room",
            &room_s,
            "--failure",
            "⚠️ this round failed",
        ])
        .env("HOOP_ROOT", env.root.path())
        .env("HOOP_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait until it is waiting on the rate limit, then move the window.
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    timeout(BOUND, async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if l.contains("rate limited; waiting") {
                return;
            }
        }
        panic!("hoop say ended without waiting on the rate limit");
    })
    .await
    .expect("it reports the wait");
    env.backend.clock().advance(61);
    let status = timeout(BOUND, child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0));
    let m = newest(&env, &a, room).await;
    assert_eq!(
        (m.kind, m.body.as_str()),
        (MessageKind::Text, "⚠️ this round failed")
    );
}
