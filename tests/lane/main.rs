//! The hook-status lane end to end over real sockets and processes: the
//! `hoop hook-status` relay (the real binary, payload on stdin) against the
//! sentinel's endpoint served on loopback, each refusal the lane promises
//! with its outcome, and a real `claude` run (HOOP_CLAUDE_BIN, against the
//! model stand-in) whose installed lifecycle hooks reach the endpoint.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hoop_guards::lane::store::{register_run_at, token_hash};
use hoop_guards::lane::{self, Agent, RunLane, RunView, Signal};
use hoop_guards::limits::{LANE_BODY_MAX_BYTES, LANE_POST_TIMEOUT_MS, LANE_REGISTRATION_TTL_SECS};
use hoop_standin::{Reply, Standin};
use serde_json::{Value, json};

#[path = "../support/claude.rs"]
mod claude;

const HOOP: &str = env!("CARGO_BIN_EXE_hoop");
const MISSION: &str = "bolt";

struct World {
    _dir: tempfile::TempDir,
    runtime: PathBuf,
    scratch: PathBuf,
    addr: SocketAddr,
}

impl World {
    async fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("root");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        let (listener, addr) = hoop_sentinel::tasks::hook_status::bind(&runtime, MISSION)
            .await
            .expect("the endpoint binds on loopback");
        assert!(addr.ip().is_loopback());
        tokio::spawn(hoop_sentinel::tasks::hook_status::run(
            listener,
            runtime.clone(),
            MISSION.into(),
            hoop_sentinel::constants::HOOK_STATUS_KEEP,
        ));
        World {
            _dir: dir,
            runtime,
            scratch,
            addr,
        }
    }

    fn register(&self, run: &str) -> RunLane {
        lane::register_run(&self.runtime, MISSION, run).expect("registered")
    }

    fn spec_path(&self, run: &str) -> PathBuf {
        self.scratch.join(format!("{run}.spec.json"))
    }

    /// Install the lane for `run` and return its spec path.
    fn install(&self, lane: &RunLane) -> PathBuf {
        let spec = self.spec_path(&lane.run);
        lane::install_lifecycle_hooks(&self.scratch, Agent::Claude, &spec, lane, Path::new(HOOP))
            .expect("installed");
        spec
    }

    fn view(&self, run: &str) -> Option<RunView> {
        lane::latest_signals(&self.runtime, MISSION)
            .into_iter()
            .find(|v| v.run_id == run)
    }

    fn projection(&self, run: &str) -> Vec<u8> {
        std::fs::read(
            self.runtime
                .join(format!("hook-status/{MISSION}/{run}.json")),
        )
        .unwrap()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Everything under the runtime dir, relative paths, sorted.
    fn files(&self) -> Vec<String> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    out.push(p.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.runtime, &self.runtime, &mut out);
        out.sort();
        out
    }
}

/// Run the real relay with `payload` on stdin; returns (exit code, stdout,
/// stderr, how long it took).
fn relay(spec: &Path, payload: &[u8]) -> (i32, String, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(HOOP)
        .args(["hook-status", "--config"])
        .arg(spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

/// `relay` off the async runtime (the endpoint shares the test's runtime).
async fn relay_async(spec: &Path, payload: &[u8]) -> (i32, String, String, Duration) {
    let (spec, payload) = (spec.to_path_buf(), payload.to_vec());
    tokio::task::spawn_blocking(move || relay(&spec, &payload))
        .await
        .unwrap()
}

async fn post_raw(w: &World, body: Vec<u8>) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(w.url(lane::SIGNAL_PATH))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

fn post_body(token: &str, mission: &str, run: &str) -> Vec<u8> {
    json!({"token": token, "missionId": mission, "runId": run, "signal": "running"})
        .to_string()
        .into_bytes()
}

const SESSION_START: &[u8] =
    br#"{"hook_event_name":"SessionStart","source":"startup","session_id":"s"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_signal_lands_in_the_projection_and_the_get_shows_no_secret() {
    let w = World::new().await;
    let lane = w.register("card-7");
    let spec = w.install(&lane);
    let (code, stdout, _, _) = relay_async(&spec, SESSION_START).await;
    assert_eq!(code, 0);
    assert_eq!(
        stdout, "",
        "nothing on stdout: a SessionStart hook's stdout reaches the model"
    );
    let v = w.view("card-7").expect("the run is listed");
    let latest = v.latest.expect("a signal landed");
    assert_eq!(latest.signal, Signal::Running);
    assert_eq!(latest.detail.as_deref(), Some("startup"));
    assert_eq!(v.received, 1);
    // GET re-reads from disk: a signal written behind the server's back shows.
    let get = || async {
        reqwest::get(w.url(&lane::mission_status_path(MISSION)))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let text = get().await;
    assert!(!text.contains(lane.token.expose()), "{text}");
    assert!(!text.contains(&token_hash(lane.token.expose())), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["nonAuthoritative"], true);
    assert_eq!(body["runs"][0]["runId"], "card-7");
    assert_eq!(body["runs"][0]["latest"]["signal"], "running");
    lane::record_signal(
        &w.runtime,
        &lane::SignalPost {
            token: lane.token.expose().into(),
            mission_id: MISSION.into(),
            run_id: "card-7".into(),
            signal: Signal::TurnFinished,
            detail: None,
        },
        hoop_core::clock::now_unix(),
    )
    .unwrap();
    let body: Value = serde_json::from_str(&get().await).unwrap();
    assert_eq!(body["runs"][0]["latest"]["signal"], "turn-finished");
    // Another home's status is not served here.
    let other = reqwest::get(w.url(&lane::mission_status_path("other")))
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_untrusted_post_is_refused_with_its_outcome_and_writes_nothing() {
    let w = World::new().await;
    let lane = w.register("card-1");
    let stale = register_run_at(
        &w.runtime,
        MISSION,
        "card-old",
        hoop_core::clock::now_unix() - LANE_REGISTRATION_TTL_SECS - 60,
    )
    .unwrap();
    let before = (w.projection("card-1"), w.projection("card-old"), w.files());
    let tok = lane.token.expose().to_string();
    let oversized = {
        let mut b = post_body(&tok, MISSION, "card-1");
        let pad = "x".repeat(LANE_BODY_MAX_BYTES);
        b = String::from_utf8(b)
            .unwrap()
            .replace("\"running\"", &format!("\"running\",\"detail\":\"{pad}\""))
            .into_bytes();
        b
    };
    // (what, body, status, answer)
    let table: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "path traversal in the run id",
            post_body(&tok, MISSION, "../../../etc/passwd"),
            400,
            "unsafe id",
        ),
        (
            "path traversal in the mission id",
            post_body(&tok, "../bolt", "card-1"),
            400,
            "unsafe id",
        ),
        (
            "stale registration (older than 24 h)",
            post_body(stale.token.expose(), MISSION, "card-old"),
            403,
            "rejected",
        ),
        (
            "wrong token",
            post_body("0123456789abcdef0123456789abcdef", MISSION, "card-1"),
            403,
            "rejected",
        ),
        (
            "a run that does not exist: the same answer as a wrong token",
            post_body(&tok, MISSION, "card-404"),
            403,
            "rejected",
        ),
        (
            "another home's run: the same answer",
            post_body(&tok, "other", "card-1"),
            403,
            "rejected",
        ),
        ("oversized body", oversized, 413, ""),
        (
            "unknown signal",
            br#"{"token":"t","missionId":"bolt","runId":"card-1","signal":"completed"}"#.to_vec(),
            400,
            "not a signal",
        ),
        (
            "malformed body",
            b"{\"token\":".to_vec(),
            400,
            "not a signal",
        ),
    ];
    for (what, body, status, said) in table {
        let (got, answer) = post_raw(&w, body).await;
        assert_eq!(got, status, "{what}: {answer}");
        if !said.is_empty() {
            assert_eq!(answer["status"], said, "{what}");
        }
        assert_eq!(
            (w.projection("card-1"), w.projection("card-old"), w.files()),
            before,
            "{what}: nothing written"
        );
    }
    // The same token on its own run is accepted.
    let (got, _) = post_raw(&w, post_body(&tok, MISSION, "card-1")).await;
    assert_eq!(got, 200);
    assert_eq!(w.view("card-1").unwrap().received, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_ignores_unknown_events_and_malformed_payloads_and_exits_0() {
    let w = World::new().await;
    let lane = w.register("card-2");
    let spec = w.install(&lane);
    let before = w.projection("card-2");
    let table: &[(&str, &[u8])] = &[
        ("unknown event", br#"{"hook_event_name":"NoSuchEvent"}"#),
        (
            "event not installed",
            br#"{"hook_event_name":"PreToolUse","tool_name":"Bash"}"#,
        ),
        ("malformed payload", b"{\"hook_event_name\":"),
        ("not JSON", b"\x00\xffgarbage"),
        ("empty stdin", b""),
    ];
    for (what, payload) in table {
        let (code, stdout, stderr, _) = relay_async(&spec, payload).await;
        assert_eq!(code, 0, "{what}");
        assert_eq!((stdout.as_str(), stderr.as_str()), ("", ""), "{what}");
        assert_eq!(w.projection("card-2"), before, "{what}: nothing recorded");
    }
    // A spec that is missing or unreadable: still exit 0.
    let (code, ..) = relay_async(&w.scratch.join("missing.json"), SESSION_START).await;
    assert_eq!(code, 0, "missing spec");
    std::fs::write(w.scratch.join("bad.json"), "{").unwrap();
    let (code, ..) = relay_async(&w.scratch.join("bad.json"), SESSION_START).await;
    assert_eq!(code, 0, "unreadable spec");
}

#[test]
fn a_miswired_hook_command_still_exits_0_and_says_nothing_on_stdout() {
    for args in [&[][..], &["--confg", "x"][..], &["--config"][..]] {
        let out = Command::new(HOOP)
            .arg("hook-status")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            !out.stderr.is_empty(),
            "{args:?}: the usage error is on stderr"
        );
    }
}

#[test]
fn endpoint_down_the_relay_exits_0_fast() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // A listener that accepts and never answers: the read timeout ends it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let bound = Duration::from_millis(3 * LANE_POST_TIMEOUT_MS + 2000);
    for (what, addr) in [("closed port", closed), ("silent endpoint", silent_addr)] {
        let spec = dir.path().join("spec.json");
        std::fs::write(
            &spec,
            json!({"version":1,"endpoint":format!("http://{addr}"),"token":"t",
                   "missionId":MISSION,"runId":"card-3"})
            .to_string(),
        )
        .unwrap();
        let (code, stdout, _, took) = relay(&spec, SESSION_START);
        assert_eq!(code, 0, "{what}");
        assert_eq!(stdout, "", "{what}");
        assert!(took < bound, "{what}: took {took:?}, bounded by {bound:?}");
    }
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_never_fires_leaves_a_registered_run_with_no_signal() {
    let w = World::new().await;
    let lane = w.register("card-4");
    w.install(&lane);
    let v = w.view("card-4").expect("registered runs are listed");
    assert_eq!(v.latest, None, "no signal is invented");
    assert!(v.recent.is_empty());
    assert_eq!(v.received, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_claude_run_with_the_installed_hooks_reaches_the_endpoint() {
    let w = World::new().await;
    let standin = Standin::spawn().await.expect("stand-in starts");
    let lane = w.register("card-5");
    w.install(&lane);
    let work = w.scratch.parent().unwrap().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // One Bash call that fails, then an answer.
    standin.push(Reply::bash("exit 3", "done"));
    let (ok, stream) = claude::run_claude(&standin, &w.scratch, &work, &[]).await;
    assert!(ok, "{stream}");
    // SessionEnd's hook runs as the CLI exits: wait for it (bounded).
    let deadline = Instant::now() + Duration::from_secs(20);
    let v = loop {
        let v = w.view("card-5").expect("listed");
        if v.recent.iter().any(|r| r.signal == Signal::Ended) || Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let got: Vec<(Signal, Option<String>)> = v
        .recent
        .iter()
        .map(|r| (r.signal, r.detail.clone()))
        .collect();
    let want = vec![
        (Signal::Running, Some("startup".to_string())),
        (Signal::ToolFailed, Some("Bash".to_string())),
        (Signal::TurnFinished, None),
        (Signal::Ended, Some("other".to_string())),
    ];
    assert_eq!(got, want, "stream: {stream}");
    standin.shutdown().await;
}

/// Issue 23 item 10: the lane's address is stable. A run registered while
/// no sentinel serves the lane gets the recorded address; its hooks reach
/// the endpoint as soon as it is served again, on the same port. When that
/// port is taken, the endpoint moves and records the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lane_keeps_its_port_and_a_run_registered_while_it_is_down_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("root");
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let serve = |listener| {
        tokio::spawn(hoop_sentinel::tasks::hook_status::run(
            listener,
            runtime.clone(),
            MISSION.into(),
            hoop_sentinel::constants::HOOK_STATUS_KEEP,
        ))
    };
    // Never served: no address, no lane.
    assert!(lane::register_run(&runtime, MISSION, "card-0").is_none());
    let (listener, first) = hoop_sentinel::tasks::hook_status::bind(&runtime, MISSION)
        .await
        .unwrap();
    let server = serve(listener);
    // The sentinel stops: the endpoint is withdrawn, the port stays.
    server.abort();
    let _ = server.await;
    lane::unpublish_endpoint(&runtime, MISSION);
    assert!(!runtime.join("hook-status/bolt/endpoint").exists());
    assert_eq!(lane::recorded_port(&runtime, MISSION), Some(first.port()));
    // A worker spawned meanwhile gets the stable address.
    let run = lane::register_run(&runtime, MISSION, "card-1").expect("a lane while down");
    assert_eq!(run.endpoint, format!("http://127.0.0.1:{}", first.port()));
    let spec = scratch.join("card-1.spec.json");
    lane::install_lifecycle_hooks(&scratch, Agent::Claude, &spec, &run, Path::new(HOOP)).unwrap();
    let (code, _, _, _) = relay_async(&spec, SESSION_START).await;
    assert_eq!(code, 0, "nothing listens: the hook still exits 0");
    // The sentinel is back, on the same port: the next hook lands.
    let (listener, again) = hoop_sentinel::tasks::hook_status::bind(&runtime, MISSION)
        .await
        .unwrap();
    assert_eq!(again.port(), first.port());
    let server = serve(listener);
    let stop = br#"{"hook_event_name":"Stop","session_id":"s"}"#;
    let (code, _, _, _) = relay_async(&spec, stop).await;
    assert_eq!(code, 0);
    let v = lane::latest_signals(&runtime, MISSION)
        .into_iter()
        .find(|v| v.run_id == "card-1")
        .unwrap();
    assert_eq!(v.latest.map(|l| l.signal), Some(Signal::TurnFinished));
    assert_eq!(v.received, 1);
    server.abort();
    let _ = server.await;
    // Its port taken by another program: served elsewhere, recorded anew.
    let squatter = std::net::TcpListener::bind(("127.0.0.1", first.port())).unwrap();
    let (_listener, moved) = hoop_sentinel::tasks::hook_status::bind(&runtime, MISSION)
        .await
        .unwrap();
    assert_ne!(moved.port(), first.port());
    assert_eq!(lane::recorded_port(&runtime, MISSION), Some(moved.port()));
    drop(squatter);
}

/// Issue 23 item 11: a run's projection goes `keep` after its end signal;
/// a run still going (or one whose hooks are silent, until its
/// registration is stale) stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_runs_projection_is_removed_after_the_keep_time() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("root");
    let (listener, _) = hoop_sentinel::tasks::hook_status::bind(&runtime, MISSION)
        .await
        .unwrap();
    tokio::spawn(hoop_sentinel::tasks::hook_status::run(
        listener,
        runtime.clone(),
        MISSION.into(),
        Duration::from_secs(1),
    ));
    let ended = lane::register_run(&runtime, MISSION, "card-1").unwrap();
    let going = lane::register_run(&runtime, MISSION, "card-2").unwrap();
    let now = hoop_core::clock::now_unix();
    for (lane, signal) in [(&ended, Signal::Ended), (&going, Signal::TurnFinished)] {
        lane::record_signal(
            &runtime,
            &lane::SignalPost {
                token: lane.token.expose().into(),
                mission_id: MISSION.into(),
                run_id: lane.run.clone(),
                signal,
                detail: None,
            },
            now,
        )
        .unwrap();
    }
    let gone = runtime.join("hook-status/bolt/card-1.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    while gone.exists() {
        assert!(
            Instant::now() < deadline,
            "the ended run's projection stayed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        lane::latest_signals(&runtime, MISSION)
            .iter()
            .map(|v| v.run_id.as_str())
            .collect::<Vec<_>>(),
        ["card-2"]
    );
    assert!(runtime.join("hook-status/bolt/port").exists());
    assert!(runtime.join("hook-status/bolt/endpoint").exists());
}
