//! Codex delivery against a stand-in `codex` executable (a shell script that
//! records its arguments and accepts, refuses or hangs as told): pending
//! first, ack once, the 120 s alert, the hand-over timeout, and handover's
//! refusal to start a bare thread. Time is passed in.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hoop_bridge::codex::{self, CodexError, HandoverError, Store};
use hoop_bridge::detect::{Event, Kind};

struct StandIn {
    dir: tempfile::TempDir,
    template: String,
}

impl StandIn {
    /// `codex` that appends its argv (one per line, then `--`) to `calls`
    /// and behaves as the `mode` file says: ok (exit 0), fail (exit 1),
    /// hang (sleep).
    fn new() -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("codex");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> {calls}; done\necho -- >> {calls}\n\
                 case \"$(cat {mode} 2>/dev/null)\" in\n  fail) echo 'no such thread' >&2; exit 1;;\n  hang) exec sleep 30;;\n  hang-child) sleep 30 & echo $! > {child}; wait;;\nesac\nexit 0\n",
                calls = dir.path().join("calls").display(),
                mode = dir.path().join("mode").display(),
                child = dir.path().join("child").display(),
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let template = format!(
            "{} queue --thread {{thread}} --message {{text}}",
            script.display()
        );
        StandIn { dir, template }
    }

    fn mode(&self, m: &str) {
        std::fs::write(self.dir.path().join("mode"), m).unwrap();
    }

    /// Each call's arguments.
    fn calls(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(self.dir.path().join("calls")).unwrap_or_default();
        text.split("--\n")
            .filter(|c| !c.is_empty())
            .map(|c| c.lines().map(str::to_string).collect())
            .collect()
    }
}

fn event(id: i64) -> Event {
    Event {
        kind: Kind::Dm,
        summary: format!("@ann in dm: hello {id}"),
        conversation_id: Some(3),
        message_id: Some(id),
        sender_id: Some(2),
        notice: None,
    }
}

fn pending_file(dir: &Path, id: &str) -> PathBuf {
    dir.join("codex").join("pending").join(format!("{id}.json"))
}

const T: Duration = Duration::from_secs(5);

#[tokio::test]
async fn pending_first_then_handed_to_the_thread_until_accepted() {
    let codex_bin = StandIn::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    codex_bin.mode("fail");
    let id = store.put(&event(42), 1000).unwrap().unwrap();
    assert_eq!(id, "m42");
    assert!(
        pending_file(dir.path(), &id).exists(),
        "written before any hand-over"
    );
    assert!(codex_bin.calls().is_empty());
    store
        .pump(&codex_bin.template, Some("T1"), 1000, T)
        .await
        .unwrap();
    assert_eq!(
        store.pending().unwrap()[0].delivered_at,
        None,
        "refused: still pending"
    );
    codex_bin.mode("ok");
    store
        .pump(&codex_bin.template, Some("T1"), 1005, T)
        .await
        .unwrap();
    assert_eq!(
        store.pending().unwrap()[0].delivered_at,
        Some(1005),
        "accepted is not received"
    );
    let calls = codex_bin.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[1],
        vec![
            "queue".to_string(),
            "--thread".into(),
            "T1".into(),
            "--message".into(),
            format!(
                "🔔 @ann in dm: hello 42 | type=dm conversation_id=3 message_id=42 sender_id=2 \
                 (when read: hoop bridge ack m42 --state-dir {})",
                dir.path().display()
            ),
        ]
    );
    // Accepted once: not handed again.
    store
        .pump(&codex_bin.template, Some("T1"), 1010, T)
        .await
        .unwrap();
    assert_eq!(codex_bin.calls().len(), 2);
    // The same event offered again (a re-ring) is not a second pending entry.
    store.put(&event(42), 1011).unwrap();
    assert_eq!(store.pending().unwrap().len(), 1);
}

#[tokio::test]
async fn an_ack_makes_the_receipt_once_and_a_replay_is_refused() {
    let codex_bin = StandIn::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    store.put(&event(7), 1000).unwrap();
    store
        .pump(&codex_bin.template, Some("T1"), 1000, T)
        .await
        .unwrap();
    store.ack("m7").unwrap();
    assert!(matches!(store.ack("m7"), Err(CodexError::Replayed(_))));
    assert!(matches!(store.ack("m8"), Err(CodexError::Unknown(_))));
    assert!(matches!(store.ack("../m7"), Err(CodexError::BadId(_))));
    // Read: forgotten, never alerted, never handed again.
    let alerts = store
        .pump(&codex_bin.template, Some("T1"), 2000, T)
        .await
        .unwrap();
    assert!(alerts.is_empty());
    assert!(store.pending().unwrap().is_empty());
    store.put(&event(7), 2001).unwrap();
    assert!(
        store.pending().unwrap().is_empty(),
        "a received event is not pending again"
    );
    assert!(matches!(store.ack("m7"), Err(CodexError::Replayed(_))));
}

#[tokio::test]
async fn no_receipt_for_120_s_alerts_once() {
    let codex_bin = StandIn::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    store.put(&event(9), 1000).unwrap();
    store
        .pump(&codex_bin.template, Some("T1"), 1000, T)
        .await
        .unwrap();
    let mut lines = vec![];
    for now in [1060, 1119, 1120, 1125, 1500] {
        for e in store
            .pump(&codex_bin.template, Some("T1"), now, T)
            .await
            .unwrap()
        {
            lines.push((now, e.line()));
        }
    }
    assert_eq!(
        lines,
        vec![(
            1120,
            "🔔 event m9 was handed to codex 120 s ago and has no receipt yet | type=notice kind=unreceived"
                .to_string()
        )]
    );
    // The alert also reached the window's thread (nobody reads a Codex
    // window's stdout): the event, then the alert, nothing more.
    let calls = codex_bin.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[1],
        vec![
            "queue".to_string(),
            "--thread".into(),
            "T1".into(),
            "--message".into(),
            format!(
                "🔔 event m9 was handed to codex 120 s ago and has no receipt yet | type=notice \
                 kind=unreceived (when read: hoop bridge ack m9 --state-dir {})",
                dir.path().display()
            ),
        ]
    );
}

#[tokio::test]
async fn an_event_codex_keeps_refusing_is_alerted_once_after_120_s() {
    let codex_bin = StandIn::new();
    codex_bin.mode("fail");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::for_window(dir.path(), "w");
    store.put(&event(11), 1000).unwrap();
    let mut lines = vec![];
    for now in [1000, 1015, 1119, 1120, 1135, 1500] {
        for e in store
            .pump(&codex_bin.template, Some("T1"), now, T)
            .await
            .unwrap()
        {
            lines.push((now, e.line()));
        }
    }
    assert_eq!(
        lines,
        vec![(
            1120,
            "🔔 event m11 could not be handed to codex for 120 s (thread T1): ".to_string()
                + &format!(
                    "{} exited exit status: 1: no such thread | type=notice kind=undelivered",
                    codex_bin.dir.path().join("codex").display()
                )
        )]
    );
    assert_eq!(
        store.pending().unwrap()[0].delivered_at,
        None,
        "still pending"
    );
}

#[tokio::test]
async fn a_hanging_codex_is_cut_off_and_the_event_stays_pending() {
    let codex_bin = StandIn::new();
    codex_bin.mode("hang");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    store.put(&event(5), 1000).unwrap();
    let started = Instant::now();
    store
        .pump(
            &codex_bin.template,
            Some("T1"),
            1000,
            Duration::from_millis(300),
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "bounded by the timeout"
    );
    assert_eq!(store.pending().unwrap()[0].delivered_at, None);
}

/// Is `pid` running (a zombie waiting for its reaper is not)? Without
/// `/proc` this cannot be told: fail loudly.
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("cannot read /proc/{pid}/stat: {e}"),
    }
}

#[tokio::test]
async fn a_timed_out_codex_dies_with_the_children_it_started() {
    assert!(
        std::path::Path::new("/proc/self/stat").exists(),
        "this test needs /proc"
    );
    let codex_bin = StandIn::new();
    codex_bin.mode("hang-child");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::for_window(dir.path(), "w");
    store.put(&event(6), 1000).unwrap();
    store
        .pump(
            &codex_bin.template,
            Some("T1"),
            1000,
            Duration::from_millis(500),
        )
        .await
        .unwrap();
    let child_file = codex_bin.dir.path().join("child");
    let pid: i32 = std::fs::read_to_string(&child_file)
        .expect("the stand-in started its child before the timeout")
        .trim()
        .parse()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while running(pid) {
        assert!(
            Instant::now() < end,
            "the codex command's child {pid} outlived its timeout"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        store.pending().unwrap()[0].delivered_at,
        None,
        "still pending"
    );
}

#[tokio::test]
async fn handover_switches_only_after_the_summary_reached_the_new_thread() {
    let codex_bin = StandIn::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    store.set_thread("OLD").unwrap();
    // No summary, an empty one, a thread that refuses it: no switch.
    let r = codex::handover(
        &store,
        &codex_bin.template,
        "NEW",
        Err("summariser failed".into()),
        T,
    )
    .await;
    assert!(matches!(r, Err(HandoverError::NoSummary(_))), "{r:?}");
    let r = codex::handover(&store, &codex_bin.template, "NEW", Ok("  \n".into()), T).await;
    assert!(matches!(r, Err(HandoverError::NoSummary(_))), "{r:?}");
    assert!(codex_bin.calls().is_empty(), "no bare thread was touched");
    codex_bin.mode("fail");
    let r = codex::handover(&store, &codex_bin.template, "NEW", Ok("we did X".into()), T).await;
    assert!(matches!(r, Err(HandoverError::NotQueued(_))), "{r:?}");
    assert_eq!(store.thread().as_deref(), Some("OLD"));
    codex_bin.mode("ok");
    codex::handover(&store, &codex_bin.template, "NEW", Ok("we did X".into()), T)
        .await
        .unwrap();
    assert_eq!(store.thread().as_deref(), Some("NEW"));
    let last = codex_bin.calls().pop().unwrap();
    assert_eq!(last[..3], ["queue", "--thread", "NEW"]);
    // (The stand-in records one line per line of an argument.)
    assert_eq!(
        last[4..].join("\n"),
        "Handover summary from the previous thread:\nwe did X"
    );
    // Events now go to the new thread, whatever --thread said.
    store.put(&event(11), 3000).unwrap();
    store
        .pump(&codex_bin.template, Some("OLD"), 3000, T)
        .await
        .unwrap();
    assert_eq!(codex_bin.calls().pop().unwrap()[2], "NEW");
}
