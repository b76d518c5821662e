//! The bridge's cost and speed, polling against push, with the reference
//! backend's request counter:
//!
//! - backend calls per idle hour: an hour of rounds on a hand-moved clock
//!   (720 polling rounds of 5 s; for push, the open stream plus the 5 s
//!   timer's plans from `drive::PushSchedule`), each a real call over
//!   loopback, counted by the backend;
//! - detection latency: post → the line, in real time, with the real loop
//!   (`drive::drive`) at the real 5 s poll, several samples each.
//!
//! `cargo build --workspace -j 2 --example bridge_bench &&
//! target/debug/examples/bridge_bench`

use std::sync::Arc;
use std::time::{Duration, Instant};

use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::events::EventStream;
use hoop_api::types::{Conversation, RegisterWindow, SendMessage, User};
use hoop_bridge::clock::{ManualClock, SystemClock};
use hoop_bridge::config::{Allowlist, Endpoint};
use hoop_bridge::constants::BRIDGE_POLL;
use hoop_bridge::drive::{DriveConfig, PushSchedule, Trigger, drive};
use hoop_bridge::watch::{WatchConfig, Watcher};

const HOUR_TICKS: u32 = 720;
const SAMPLES: usize = 6;

struct World {
    run: hoop_refbackend::Running,
    admin: AdminClient,
    bolt: User,
    ann: User,
    room: Conversation,
    key: String,
    dir: tempfile::TempDir,
}

async fn world() -> World {
    let run = hoop_refbackend::spawn("127.0.0.1:0".parse().unwrap(), Default::default())
        .await
        .unwrap();
    let admin = AdminClient::new(&run.base_url(), &run.admin_token);
    let user = |name: &str, agent| CreateUser {
        email: format!("{name}@example.test"),
        username: name.into(),
        nickname: None,
        is_agent: agent,
    };
    let bolt = admin.create_user(&user("bolt", true)).await.unwrap();
    let ann = admin.create_user(&user("ann", false)).await.unwrap();
    let room = admin
        .create_conversation(&CreateConversation {
            title: "dm".into(),
            is_workroom: false,
            member_ids: vec![bolt.id, ann.id],
        })
        .await
        .unwrap();
    let key = admin.mint_mcp_key(bolt.id).await.unwrap().key;
    World {
        run,
        admin,
        bolt,
        ann,
        room,
        key,
        dir: tempfile::tempdir().unwrap(),
    }
}

fn config(w: &World, session: &str) -> WatchConfig {
    WatchConfig {
        endpoint: Endpoint {
            base_url: w.run.base_url(),
            key: w.key.clone(),
        },
        me: w.bolt.id,
        register: RegisterWindow {
            installation_id: "bench".into(),
            machine: "bench".into(),
            client: "claude-code".into(),
            native_session_id: session.into(),
            runtime_id: "rt".into(),
            rooms_hint: vec![],
            fallback_hint: true,
        },
        local_rooms: vec![],
        state_path: w.dir.path().join(format!("state-{session}.json")),
        claims_path: None,
        allowlist: Allowlist::default(),
    }
}

async fn idle_hour_polling(w: &World) -> u64 {
    let clock = ManualClock::default();
    let mut b = Watcher::new(config(w, "poll-idle"), Arc::new(clock.clone())).unwrap();
    let before = w.run.requests();
    for _ in 0..HOUR_TICKS {
        b.round().await.unwrap();
        clock.advance(BRIDGE_POLL);
        // The server's time moves too: its per-minute rate windows see an
        // hour, not the few seconds the simulation takes.
        w.run.clock().advance(BRIDGE_POLL.as_secs() as i64);
    }
    w.run.requests() - before
}

async fn idle_hour_push(w: &World) -> u64 {
    let clock = ManualClock::default();
    let mut b = Watcher::new(config(w, "push-idle"), Arc::new(clock.clone())).unwrap();
    let before = w.run.requests();
    let _stream = EventStream::connect(&w.run.base_url(), &w.key)
        .await
        .unwrap();
    let mut s = PushSchedule::default();
    let plan = s.plan(clock.now_dur(), Trigger::Connected);
    b.round_with(plan).await.unwrap();
    for _ in 1..HOUR_TICKS {
        clock.advance(BRIDGE_POLL);
        w.run.clock().advance(BRIDGE_POLL.as_secs() as i64);
        let plan = s.plan(clock.now_dur(), Trigger::Tick);
        b.round_with(plan).await.unwrap();
    }
    w.run.requests() - before
}

trait NowDur {
    fn now_dur(&self) -> Duration;
}
impl NowDur for ManualClock {
    fn now_dur(&self) -> Duration {
        hoop_bridge::clock::Clock::now(self)
    }
}

async fn latency(w: &World, push: bool, session: &str) -> Vec<Duration> {
    let cfg = config(w, session);
    let state = cfg.state_path.clone();
    let mut b = Watcher::new(cfg, Arc::new(SystemClock::default())).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let sink = move |evs: Vec<hoop_bridge::detect::Event>| {
            let tx = tx.clone();
            async move {
                for e in evs {
                    if e.message_id.is_some() {
                        let _ = tx.send((Instant::now(), e.message_id));
                    }
                }
                true
            }
        };
        let _ = drive(
            &mut b,
            DriveConfig {
                push,
                poll: BRIDGE_POLL,
            },
            sink,
        )
        .await;
    });
    while !state.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut out = vec![];
    for i in 0..SAMPLES {
        // Off the poll's phase: each sample lands somewhere else in it.
        tokio::time::sleep(Duration::from_millis(1_300 + 900 * i as u64)).await;
        let sent = Instant::now();
        let m = w
            .admin
            .post_as(
                w.room.id,
                &PostAs {
                    sender_id: w.ann.id,
                    message: SendMessage {
                        body: format!("sample {i}"),
                        mentions: vec![],
                    },
                    kind: Default::default(),
                },
            )
            .await
            .unwrap();
        loop {
            let (at, id) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .expect("a line within 30 s")
                .unwrap();
            if id == Some(m.id) {
                out.push(at - sent);
                break;
            }
        }
    }
    task.abort();
    out
}

fn summary(v: &[Duration]) -> String {
    let mut ms: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    format!(
        "mean {mean:.0} ms, median {:.0} ms, max {:.0} ms (n={})",
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        ms.len()
    )
}

#[tokio::main]
async fn main() {
    let w = world().await;
    let poll_calls = idle_hour_polling(&w).await;
    let push_calls = idle_hour_push(&w).await;
    println!(
        "backend calls per idle hour: polling {poll_calls}, push {push_calls} ({:.1}x fewer)",
        poll_calls as f64 / push_calls.max(1) as f64
    );
    let poll_lat = latency(&w, false, "poll-lat").await;
    let push_lat = latency(&w, true, "push-lat").await;
    println!("post -> line, polling: {}", summary(&poll_lat));
    println!("post -> line, push:    {}", summary(&push_lat));
}
