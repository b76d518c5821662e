//! `hoop bridge watch`'s rules, each against the reference backend over real
//! sockets, with the clock moved by hand.

mod harness;

use std::sync::atomic::Ordering;
use std::time::Duration;

use harness::{World, rung};
use hoop_api::admin::AdminCreateCard;
use hoop_api::routes;
use hoop_api::types::{AssignTask, Mention, WindowMode};
use hoop_bridge::config::Allowlist;
use hoop_bridge::constants::{DEDUP_IDS, MAX_LINES_PER_ROUND};
use hoop_bridge::watch::Stop;
use hoop_bridge::window::Assignment;

#[tokio::test]
async fn first_start_takes_a_baseline_only_then_rings_in_the_exact_format() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let before = w.post(&dm, &w.ann, "old news").await;
    let mut b = w.watcher(w.config("s1", &[], true));
    assert!(
        b.round().await.unwrap().is_empty(),
        "no backlog at first start"
    );
    assert_eq!(b.state().rooms[&dm.id], before.id, "baseline taken");
    let m = w.post(&dm, &w.ann, "are you there?\nsecond line").await;
    let lines: Vec<String> = w.tick(&mut b).await.iter().map(|e| e.line()).collect();
    assert_eq!(
        lines,
        vec![format!(
            "🔔 @ann in dm: are you there? second line | type=dm conversation_id={} message_id={} sender_id={}",
            dm.id, m.id, w.ann.id
        )]
    );
    assert!(w.tick(&mut b).await.is_empty(), "rung once");
}

#[tokio::test]
async fn filters_in_order_each_message_rings_or_not() {
    let w = World::new().await;
    let cy = w
        .admin
        .create_user(&hoop_api::admin::CreateUser {
            email: "cy@example.test".into(),
            username: "cy".into(),
            nickname: None,
            is_agent: false,
        })
        .await
        .unwrap();
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let one_ai = w.room("one-ai", &[&w.bolt, &w.ann, &cy]).await;
    let two_ai = w.room("two-ai", &[&w.bolt, &w.ann, &w.nova]).await;
    let mut b = w.watcher(w.config("s1", &[], true));
    b.round().await.unwrap();
    let me = Mention::User(w.bolt.id);
    // (message, want type or None)
    let mut want = vec![];
    want.push((w.post(&dm, &w.ann, "hi").await, Some("dm")));
    want.push((w.post(&one_ai, &w.ann, "morning all").await, Some("group")));
    want.push((
        w.post(&one_ai, &w.ann, "@bolt please look").await,
        Some("mention"),
    ));
    want.push((w.post(&two_ai, &w.ann, "morning all").await, None));
    want.push((w.post(&two_ai, &w.ann, "@everyone deploy").await, None));
    want.push((w.post(&two_ai, &w.ann, "bolt deploy").await, None));
    want.push((
        w.post(&two_ai, &w.ann, "hey @bolt-nick").await,
        Some("mention"),
    ));
    want.push((
        w.post_m(&two_ai, &w.ann, "look", vec![me]).await,
        Some("mention"),
    ));
    want.push((
        w.post_m(
            &two_ai,
            &w.ann,
            "@bolt look",
            vec![Mention::User(w.nova.id)],
        )
        .await,
        // The array names the other AI, the body names this one: the one
        // mention rule rings (array OR body).
        Some("mention"),
    ));
    want.push((
        w.post_m(
            &two_ai,
            &w.ann,
            "@boltx look",
            vec![Mention::User(w.nova.id)],
        )
        .await,
        None,
    ));
    want.push((
        w.post_m(&two_ai, &w.ann, "all", vec![Mention::EVERYONE])
            .await,
        Some("mention"),
    ));
    want.push((w.post(&two_ai, &w.bolt, "@bolt note to self").await, None));
    let got = rung(&w.tick(&mut b).await);
    for (m, kind) in &want {
        let hits: Vec<_> = got.iter().filter(|(id, _)| *id == m.id).collect();
        match kind {
            Some(k) => assert_eq!(hits, vec![&(m.id, *k)], "{:?}", m.body),
            None => assert!(hits.is_empty(), "{:?} must not ring", m.body),
        }
    }
    assert_eq!(got.len(), want.iter().filter(|(_, k)| k.is_some()).count());
}

#[tokio::test]
async fn allowlist_only_mention_narrows_every_room() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let mut cfg = w.config("s1", &[], true);
    cfg.allowlist = Allowlist::parse(r#"{"bolt":"only:mention"}"#).unwrap();
    let mut b = w.watcher(cfg);
    b.round().await.unwrap();
    let plain = w.post(&dm, &w.ann, "hi").await;
    let at = w.post(&dm, &w.ann, "@bolt hi").await;
    let got = rung(&w.tick(&mut b).await);
    assert_eq!(got, vec![(at.id, "dm")], "plain {} stays quiet", plain.id);
}

#[tokio::test]
async fn twenty_lines_then_one_overflow_line() {
    let w = World::new().await;
    let rooms = [
        w.room("a", &[&w.bolt, &w.ann]).await,
        w.room("b", &[&w.bolt, &w.ann]).await,
        w.room("c", &[&w.bolt, &w.ann]).await,
    ];
    let mut b = w.watcher(w.config("s1", &[], true));
    b.round().await.unwrap();
    let mut posted = vec![];
    for r in &rooms {
        for i in 0..8 {
            posted.push(w.post(r, &w.ann, &format!("m{i}")).await.id);
        }
    }
    let evs = w.tick(&mut b).await;
    assert_eq!(evs.len(), MAX_LINES_PER_ROUND + 1);
    // Which 20, in which order: every room read in list order, each
    // oldest first; the last 4 of room c are the ones counted.
    let shown: Vec<i64> = evs.iter().filter_map(|e| e.message_id).collect();
    assert_eq!(shown, posted[..MAX_LINES_PER_ROUND].to_vec());
    let last = evs.last().unwrap().line();
    assert_eq!(
        last,
        format!(
            "🔔 4 more event(s) this round not shown (4 dm) in room(s) {} \"c\": read the rooms \
             | type=notice kind=overflow",
            rooms[2].id
        )
    );
    // Every posted id is remembered and every baseline advanced to the
    // room's last posted id, rung or not.
    for id in &posted {
        assert!(b.state().seen(*id), "{id} remembered");
    }
    for (r, ids) in rooms.iter().zip(posted.chunks(8)) {
        assert_eq!(
            b.state().rooms[&r.id],
            *ids.last().unwrap(),
            "room {}",
            r.title
        );
    }
    assert!(
        w.tick(&mut b).await.is_empty(),
        "the overflow is not replayed"
    );
}

#[tokio::test]
async fn a_restart_neither_rings_again_nor_misses() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let cfg = w.config("s1", &[], true);
    let mut b = w.watcher(cfg.clone());
    b.round().await.unwrap();
    let first = w.post(&dm, &w.ann, "one").await;
    assert_eq!(rung(&w.tick(&mut b).await), vec![(first.id, "dm")]);
    drop(b);
    // While it is down, a message lands.
    let second = w.post(&dm, &w.ann, "two").await;
    let mut b = w.watcher(cfg);
    assert_eq!(
        rung(&w.tick(&mut b).await),
        vec![(second.id, "dm")],
        "no re-ring of {}, no miss",
        first.id
    );
}

#[tokio::test]
async fn the_dedup_memory_stops_a_second_ring_even_below_the_baseline() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let cfg = w.config("s1", &[], true);
    let mut b = w.watcher(cfg.clone());
    b.round().await.unwrap();
    let m = w.post(&dm, &w.ann, "one").await;
    assert_eq!(rung(&w.tick(&mut b).await), vec![(m.id, "dm")]);
    drop(b);
    // The baseline goes back (an old state file, a hand edit): the id is
    // still in the dedup memory.
    let mut st = hoop_bridge::state::State::load(&cfg.state_path)
        .unwrap()
        .unwrap();
    st.rooms.insert(dm.id, 0);
    st.save(&cfg.state_path).unwrap();
    let mut b = w.watcher(cfg.clone());
    assert!(w.tick(&mut b).await.is_empty());
    // The memory is bounded, and it is the oldest ids that go: the newest
    // DEDUP_IDS, in order.
    let mut st = hoop_bridge::state::State::default();
    for id in 0..(DEDUP_IDS as i64 + 50) {
        st.remember(dm.id, id);
    }
    assert_eq!(
        st.seen.iter().copied().collect::<Vec<_>>(),
        (50..DEDUP_IDS as i64 + 50).collect::<Vec<_>>()
    );
    assert!(!st.seen(49) && st.seen(50));
}

#[tokio::test]
async fn never_synced_uses_local_rooms_and_claims() {
    let w = World::new().await;
    let r1 = w.room("r1", &[&w.bolt, &w.ann]).await;
    let r2 = w.room("r2", &[&w.bolt, &w.ann]).await;
    let r3 = w.room("r3", &[&w.bolt, &w.ann]).await;
    w.faults.windows.store(true, Ordering::SeqCst);
    // --rooms r1: only r1.
    let mut a = w.watcher(w.config("with-rooms", &[r1.id], false));
    // No --rooms: everything not claimed by another live process (pid 1
    // is alive; this process's own claim does not count).
    std::fs::write(
        w.dir.path().join("claims.json"),
        format!(r#"{{"{}": 1, "{}": {}}}"#, r2.id, r3.id, std::process::id()),
    )
    .unwrap();
    let mut f = w.watcher(w.config("no-rooms", &[], false));
    a.round().await.unwrap();
    f.round().await.unwrap();
    assert_eq!(a.assignment(), &Assignment::NeverSynced);
    let m1 = w.post(&r1, &w.ann, "in r1").await;
    let m2 = w.post(&r2, &w.ann, "in r2").await;
    let m3 = w.post(&r3, &w.ann, "in r3").await;
    assert_eq!(rung(&w.tick(&mut a).await), vec![(m1.id, "dm")]);
    assert_eq!(
        rung(&f.round().await.unwrap()),
        vec![(m1.id, "dm"), (m3.id, "dm")],
        "r2 ({}) is claimed by a live process",
        m2.id
    );
    // Unhandled rooms advanced all the same.
    assert_eq!(a.state().rooms[&r2.id], m2.id);
}

#[tokio::test]
async fn synced_then_failing_keeps_the_last_assignment() {
    let w = World::new().await;
    let r1 = w.room("r1", &[&w.bolt, &w.ann]).await;
    let r2 = w.room("r2", &[&w.bolt, &w.ann]).await;
    // Local rooms say r2; the backend assigns r1 (the hint is only the
    // registration's): after a sync, r1 rules.
    let mut cfg = w.config("s1", &[r2.id], false);
    cfg.register.rooms_hint = vec![r1.id];
    let mut b = w.watcher(cfg);
    b.round().await.unwrap();
    assert!(
        matches!(b.assignment(), Assignment::Synced(s) if s.mode == WindowMode::Rooms && s.rooms == vec![r1.id])
    );
    w.faults.windows.store(true, Ordering::SeqCst);
    w.clock.advance(Duration::from_secs(30));
    let m1 = w.post(&r1, &w.ann, "r1").await;
    let m2 = w.post(&r2, &w.ann, "r2").await;
    assert_eq!(
        rung(&w.tick(&mut b).await),
        vec![(m1.id, "dm")],
        "kept r1, not back to local r2 ({})",
        m2.id
    );
}

#[tokio::test]
async fn a_revoked_window_goes_silent() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let cfg = w.config("s1", &[], true);
    let mut b = w.watcher(cfg.clone());
    b.round().await.unwrap();
    let id = b.state().window_id.clone().unwrap();
    let t = w.login(&w.bolt).await;
    let r = reqwest::Client::new()
        .post(format!(
            "{}{}",
            w.run.base_url(),
            routes::fill(routes::WINDOW_REVOKE, &id)
        ))
        .bearer_auth(t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    w.clock.advance(Duration::from_secs(30));
    let m = w.post(&dm, &w.ann, "anyone?").await;
    let evs = w.tick(&mut b).await;
    assert!(evs.is_empty(), "silent, not even a notice: {evs:?}");
    assert!(matches!(b.assignment(), Assignment::Synced(s) if s.mode == WindowMode::None));
    assert_eq!(b.state().rooms[&dm.id], m.id, "still advances");
}

#[tokio::test]
async fn an_unknown_window_registers_again() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let mut b = w.watcher(w.config("s1", &[], true));
    b.round().await.unwrap();
    let old = b.state().window_id.clone().unwrap();
    // The backend forgets the window.
    let c = rusqlite::Connection::open(&w.db).unwrap();
    assert_eq!(
        c.execute("DELETE FROM windows WHERE id = ?1", [&old])
            .unwrap(),
        1
    );
    w.clock.advance(Duration::from_secs(30));
    let m = w.post(&dm, &w.ann, "hi").await;
    assert_eq!(rung(&w.tick(&mut b).await), vec![(m.id, "dm")]);
    let new = b.state().window_id.clone().unwrap();
    assert_ne!(new, old, "registered again");
    assert!(matches!(b.assignment(), Assignment::Synced(s) if s.mode == WindowMode::Fallback));
}

#[tokio::test]
async fn down_for_over_two_minutes_then_recovered_one_line_each() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let mut b = w.watcher(w.config("s1", &[], true));
    b.round().await.unwrap();
    w.faults.down.store(true, Ordering::SeqCst);
    let mut notices = vec![];
    for _ in 0..30 {
        // 150 s of failing rounds
        for e in w.tick(&mut b).await {
            notices.push(e.line());
        }
    }
    assert_eq!(
        notices,
        vec![
            "🔔 hoop backend unreachable for more than 120 s; still trying | type=notice kind=down"
        ]
    );
    let m = w.post(&dm, &w.ann, "back?").await;
    w.faults.down.store(false, Ordering::SeqCst);
    let evs = w.tick(&mut b).await;
    assert_eq!(
        evs[0].line(),
        "🔔 hoop backend reachable again | type=notice kind=recovered"
    );
    assert_eq!(rung(&evs), vec![(m.id, "dm")], "nothing missed while down");
    assert!(w.tick(&mut b).await.is_empty());
}

#[tokio::test]
async fn an_expired_key_stops_with_key_rejected() {
    let w = World::new().await;
    let mut cfg = w.config("s1", &[], true);
    cfg.endpoint.key = w
        .admin
        .mint_mcp_key_for(w.bolt.id, Some(60))
        .await
        .unwrap()
        .key;
    let mut b = w.watcher(cfg);
    b.round().await.unwrap();
    w.admin.advance_clock(200).await.unwrap();
    w.clock.advance(Duration::from_secs(5));
    assert_eq!(b.round().await.unwrap_err(), Stop::KeyRejected);
}

#[tokio::test]
async fn a_new_card_rings_as_assigned_within_six_rounds() {
    let w = World::new().await;
    let room = w
        .admin
        .create_conversation(&hoop_api::admin::CreateConversation {
            title: "work".into(),
            is_workroom: true,
            member_ids: vec![w.bolt.id, w.ann.id],
        })
        .await
        .unwrap();
    let mut b = w.watcher(w.config("s1", &[], true));
    b.round().await.unwrap();
    let card = w
        .admin
        .create_card(&AdminCreateCard {
            conversation_id: room.id,
            task: AssignTask {
                title: "ship it".into(),
                assignee_id: Some(w.bolt.id),
                ..Default::default()
            },
            creator_id: Some(w.ann.id),
        })
        .await
        .unwrap();
    let mut lines = vec![];
    for _ in 0..6 {
        lines.extend(w.tick(&mut b).await.iter().map(|e| e.line()));
    }
    assert_eq!(
        lines,
        vec![format!(
            "🔔 card #{} \"ship it\" is queued | type=task_assigned conversation_id={} message_id=- sender_id=-",
            card.id, room.id
        )]
    );
}

/// Run a watcher under `drive` in the background; its events arrive on the
/// returned channel.
fn driven(
    mut b: hoop_bridge::watch::Watcher,
    cfg: hoop_bridge::drive::DriveConfig,
) -> tokio::sync::mpsc::UnboundedReceiver<hoop_bridge::detect::Event> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let sink = move |evs: Vec<hoop_bridge::detect::Event>| {
            let tx = tx.clone();
            async move { evs.into_iter().all(|e| tx.send(e).is_ok()) }
        };
        let _ = hoop_bridge::drive::drive(&mut b, cfg, sink).await;
    });
    rx
}

/// Collect (message id, type) pairs until `n` arrived, within a bound.
async fn collect(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<hoop_bridge::detect::Event>,
    n: usize,
) -> Vec<(i64, &'static str)> {
    let mut got = vec![];
    let end = tokio::time::Instant::now() + Duration::from_secs(15);
    while got.len() < n {
        match tokio::time::timeout_at(end, rx.recv()).await {
            Ok(Some(e)) => got.extend(rung(std::slice::from_ref(&e))),
            _ => break,
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread")]
async fn push_and_polling_detect_the_same_events() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    let two_ai = w.room("two-ai", &[&w.bolt, &w.ann, &w.nova]).await;
    // Polling window through the proxy; push window straight at the
    // backend, polling only once a minute: what it sees in time came by
    // the stream.
    let mut poller = w.watcher(w.config("poll", &[], true));
    poller.round().await.unwrap();
    let mut push_cfg = w.config("push", &[], true);
    push_cfg.endpoint.base_url = w.run.base_url();
    let pusher = hoop_bridge::watch::Watcher::new(
        push_cfg.clone(),
        std::sync::Arc::new(hoop_bridge::clock::ManualClock::default()),
    )
    .unwrap();
    let mut rx = driven(
        pusher,
        hoop_bridge::drive::DriveConfig {
            push: true,
            poll: Duration::from_secs(60),
        },
    );
    // The push window's first (catch-up) round has taken its baseline. That
    // alone does not prove the stream is up (a refused stream falls back to
    // polling, whose first tick also writes the state); what does is below:
    // the events arrive within `collect`'s 15 s while the next poll is 60 s
    // away.
    let start = tokio::time::Instant::now();
    while !push_cfg.state_path.exists() {
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let posted = [
        w.post(&dm, &w.ann, "one").await,
        w.post(&two_ai, &w.ann, "plain: not for me").await,
        w.post_m(&two_ai, &w.ann, "for me", vec![Mention::User(w.bolt.id)])
            .await,
        w.post(&dm, &w.ann, "two").await,
    ];
    let mut by_poll = rung(&w.tick(&mut poller).await);
    let mut by_push = collect(&mut rx, by_poll.len()).await;
    by_poll.sort();
    by_push.sort();
    // The ids are pinned: the DM twice, the mention; the plain two-AI
    // message in neither.
    let want = vec![
        (posted[0].id, "dm"),
        (posted[2].id, "mention"),
        (posted[3].id, "dm"),
    ];
    assert_eq!(by_poll, want, "polling");
    assert_eq!(by_push, want, "push: the same events, each once");
    // Nothing more comes by push (no double ring).
    assert!(
        tokio::time::timeout(Duration::from_millis(500), rx.recv())
            .await
            .is_err(),
        "rung once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_an_event_stream_the_loop_polls() {
    let w = World::new().await;
    let dm = w.room("dm", &[&w.bolt, &w.ann]).await;
    // The proxy serves /mcp only: the stream is "not offered".
    let cfg = w.config("s1", &[], true);
    let b = hoop_bridge::watch::Watcher::new(
        cfg.clone(),
        std::sync::Arc::new(hoop_bridge::clock::ManualClock::default()),
    )
    .unwrap();
    let mut rx = driven(
        b,
        hoop_bridge::drive::DriveConfig {
            push: true,
            poll: Duration::from_millis(100),
        },
    );
    let start = tokio::time::Instant::now();
    while !cfg.state_path.exists() {
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let m = w.post(&dm, &w.ann, "polled").await;
    assert_eq!(collect(&mut rx, 1).await, vec![(m.id, "dm")]);
}

/// A room the account joins after start, listed before the event stream
/// delivers the first message after the join (the listing won the race):
/// the streamed message still rings, once; the history never does.
#[tokio::test]
async fn a_streamed_message_rings_even_when_a_listing_saw_its_new_room_first() {
    let w = World::new().await;
    let _home = w.room("home", &[&w.bolt, &w.ann]).await;
    let later = w.room("later", &[&w.ann]).await;
    let mut history = vec![];
    for i in 0..3 {
        history.push(w.post(&later, &w.ann, &format!("old {i}")).await.id);
    }
    let mut b = w.watcher(w.config("s1", &[], true));
    b.round().await.unwrap();
    w.admin.add_member(later.id, w.bolt.id).await.unwrap();
    let welcome = w.post(&later, &w.ann, "welcome").await;
    // The listing first: no witness yet, the newest is the baseline.
    assert_eq!(rung(&w.tick(&mut b).await), vec![]);
    // Then the stream's event for it.
    b.heard(later.id, welcome.id);
    assert_eq!(rung(&w.tick(&mut b).await), vec![(welcome.id, "dm")]);
    // Heard again (a reconnect replays it): never twice.
    b.heard(later.id, welcome.id);
    assert_eq!(rung(&w.tick(&mut b).await), vec![]);
    for id in history {
        assert!(!b.state().seen(id), "history #{id} never rang");
    }
}
