//! The projection store: one file per run, `<runtime>/hook-status/<mission>/<run>.json`,
//! holding the registration (the SHA-256 of the run's token, never the token)
//! and the latest signal. The endpoint's only write is [`record_signal`];
//! readers re-read from disk every time.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::signal::{Signal, scrub_detail};
use crate::limits::{
    LANE_ID_MAX_CHARS, LANE_READ_CAP, LANE_RECENT_CAP, LANE_REGISTRATION_TTL_SECS,
};
use hoop_core::fsutil::{WriteOptions, write_atomic};

/// Schema version of the projection entries and of the spec file.
pub const SPEC_VERSION: u32 = 1;

/// The directory of the lane under a runtime dir.
pub const LANE_DIR: &str = "hook-status";

/// The file inside a mission's directory where the running sentinel writes
/// the address of its endpoint (`http://127.0.0.1:<port>`) while it serves
/// it; removed when it stops.
pub const ENDPOINT_FILE: &str = "endpoint";

/// The file inside a mission's directory recording the lane's port for good:
/// every start of the sentinel serves the lane on it again, so a worker's
/// spec (which holds the address from its spawn) reaches the sentinel
/// across its restarts, and a worker spawned while it is down gets an
/// address that works once it is back.
pub const PORT_FILE: &str = "port";

/// A safe id: 1–[`LANE_ID_MAX_CHARS`] of ASCII letters, digits, `-`, `_`
/// and `.`, not starting with `.` — so it is always one plain path
/// component, never `..`, a hidden file or a separator.
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= LANE_ID_MAX_CHARS
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A mission's directory (ids must already be safe).
fn mission_dir(runtime: &Path, mission: &str) -> PathBuf {
    runtime.join(LANE_DIR).join(mission)
}

/// The projection file of one run, or `None` when an id is not safe.
pub fn run_path(runtime: &Path, mission: &str, run: &str) -> Option<PathBuf> {
    (is_safe_id(mission) && is_safe_id(run))
        .then(|| mission_dir(runtime, mission).join(format!("{run}.json")))
}

/// Where the sentinel of `mission` publishes its endpoint address.
pub fn endpoint_path(runtime: &Path, mission: &str) -> Option<PathBuf> {
    is_safe_id(mission).then(|| mission_dir(runtime, mission).join(ENDPOINT_FILE))
}

/// Where the lane's port of `mission` is recorded.
pub fn port_path(runtime: &Path, mission: &str) -> Option<PathBuf> {
    is_safe_id(mission).then(|| mission_dir(runtime, mission).join(PORT_FILE))
}

/// The lane's recorded port, if one was ever recorded (and is a port).
pub fn recorded_port(runtime: &Path, mission: &str) -> Option<u16> {
    let text = std::fs::read_to_string(port_path(runtime, mission)?).ok()?;
    text.trim().parse().ok().filter(|p| *p != 0)
}

/// The lane's stable address: the loopback endpoint on the recorded port.
pub fn lane_address(runtime: &Path, mission: &str) -> Option<String> {
    recorded_port(runtime, mission).map(|p| format!("http://127.0.0.1:{p}"))
}

/// A run's capability token. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A fresh token: a uuid v4 in simple hex (32 characters).
    pub fn mint() -> Token {
        Token(uuid::Uuid::new_v4().simple().to_string())
    }
    pub fn from_string(s: String) -> Token {
        Token(s)
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

/// The SHA-256 of a token, lower-case hex.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A registered lane: what the spawner needs to install the hooks. The
/// cleartext token lives only here (the spawner's memory) and in the
/// worker's spec file.
#[derive(Debug, Clone)]
pub struct RunLane {
    pub mission: String,
    pub run: String,
    /// The endpoint base (`http://127.0.0.1:<port>`).
    pub endpoint: String,
    pub token: Token,
}

/// One accepted signal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalRecord {
    pub signal: Signal,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Unix seconds when the endpoint accepted it.
    pub at: i64,
}

/// One run's projection entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    version: u32,
    mission_id: String,
    run_id: String,
    token_sha256: String,
    registered_at: i64,
    #[serde(default)]
    latest: Option<SignalRecord>,
    /// The last [`LANE_RECENT_CAP`] signals, oldest first.
    #[serde(default)]
    recent: Vec<SignalRecord>,
    #[serde(default)]
    received: u64,
}

/// The public view of one run: no token, no hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub mission_id: String,
    pub run_id: String,
    pub registered_at: i64,
    pub latest: Option<SignalRecord>,
    /// The last few signals, oldest first (bounded).
    pub recent: Vec<SignalRecord>,
    /// How many signals were accepted for this run.
    pub received: u64,
}

/// The label every display of the lane carries: signals are what hooks
/// said, not what the card is.
pub const NON_AUTHORITATIVE: &str = "hook-derived, non-authoritative";

impl RunView {
    /// One status line: `card-5: tool-failed (Bash), 12 s ago [hook-derived,
    /// non-authoritative]`, or `no signal yet` when no hook has fired.
    pub fn describe(&self, now: i64) -> String {
        let what = match &self.latest {
            None => "no signal yet".to_string(),
            Some(r) => {
                let detail = r
                    .detail
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                format!(
                    "{}{detail}, {} s ago",
                    r.signal,
                    now.saturating_sub(r.at).max(0)
                )
            }
        };
        format!("{}: {what} [{NON_AUTHORITATIVE}]", self.run_id)
    }
}

/// The body `hoop hook-status` POSTs and the endpoint consumes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignalPost {
    pub token: String,
    pub mission_id: String,
    pub run_id: String,
    pub signal: Signal,
    #[serde(default)]
    pub detail: Option<String>,
}

impl std::fmt::Debug for SignalPost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalPost")
            .field("mission_id", &self.mission_id)
            .field("run_id", &self.run_id)
            .field("signal", &self.signal)
            .field("detail", &self.detail)
            .finish_non_exhaustive()
    }
}

/// Why a signal was not recorded. The endpoint answers every kind except
/// [`Rejection::BadId`] and [`Rejection::Io`] identically, so an answer
/// never tells whether another run exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("an id is not safe")]
    BadId,
    #[error("no registration for this run")]
    NotRegistered,
    #[error("the registration is older than its TTL")]
    Stale,
    #[error("the token does not match the registration")]
    WrongToken,
    #[error("the projection could not be written")]
    Io,
}

/// Register one run: mint its token and store only its hash. Any failure
/// (unsafe id, no endpoint published by a running sentinel, an unwritable
/// runtime dir) is logged and degrades to no lane — never an error to the
/// spawner. `runtime` is the hoop root ([`super::runtime_dir`]), `mission`
/// the home's name, `run` the worker's card id.
pub fn register_run(runtime: &Path, mission: &str, run: &str) -> Option<RunLane> {
    register_run_at(runtime, mission, run, hoop_core::clock::now_unix())
}

/// [`register_run`] at an explicit time (tests move the clock).
pub fn register_run_at(runtime: &Path, mission: &str, run: &str, now: i64) -> Option<RunLane> {
    let Some(path) = run_path(runtime, mission, run) else {
        tracing::warn!(mission, run, "hook-status: unsafe id; the run has no lane");
        return None;
    };
    // The stable address, so the lane works across the sentinel's restarts
    // and for a worker spawned while it is down.
    let endpoint = match lane_address(runtime, mission) {
        Some(e) => e,
        None => {
            tracing::warn!(
                mission,
                run,
                "hook-status: no lane port recorded (the home's sentinel has never served it); the run has no lane"
            );
            return None;
        }
    };
    let token = Token::mint();
    let entry = Entry {
        version: SPEC_VERSION,
        mission_id: mission.to_string(),
        run_id: run.to_string(),
        token_sha256: token_hash(token.expose()),
        registered_at: now,
        latest: None,
        recent: Vec::new(),
        received: 0,
    };
    if let Err(e) = write_entry(&path, &entry) {
        tracing::warn!(mission, run, error = %e, "hook-status: registration failed; the run has no lane");
        return None;
    }
    Some(RunLane {
        mission: mission.to_string(),
        run: run.to_string(),
        endpoint,
        token,
    })
}

fn write_entry(path: &Path, entry: &Entry) -> std::io::Result<()> {
    let data = serde_json::to_vec_pretty(entry).map_err(std::io::Error::other)?;
    write_atomic(path, &data, WriteOptions::SECRET)
}

fn read_entry(path: &Path) -> Option<Entry> {
    let text = std::fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The endpoint a running sentinel published for `mission`, if any. Only a
/// loopback `http://` address is believed.
pub fn read_endpoint(runtime: &Path, mission: &str) -> Option<String> {
    let text = std::fs::read_to_string(endpoint_path(runtime, mission)?).ok()?;
    let e = text.trim();
    super::relay::loopback_addr(e).map(|_| e.to_string())
}

/// Publish the endpoint address (the sentinel, once it listens) and record
/// its port for good.
pub fn publish_endpoint(
    runtime: &Path,
    mission: &str,
    addr: std::net::SocketAddr,
) -> std::io::Result<()> {
    let unsafe_id = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "unsafe mission id");
    let port = port_path(runtime, mission).ok_or_else(unsafe_id)?;
    if recorded_port(runtime, mission) != Some(addr.port()) {
        write_atomic(
            &port,
            format!("{}\n", addr.port()).as_bytes(),
            WriteOptions::default(),
        )?;
    }
    let path = endpoint_path(runtime, mission).ok_or_else(unsafe_id)?;
    write_atomic(
        &path,
        format!("http://{addr}\n").as_bytes(),
        WriteOptions::default(),
    )
}

/// Withdraw the endpoint address (the sentinel, when it stops): no file
/// says a lane is served while nothing serves it. The port stays recorded.
pub fn unpublish_endpoint(runtime: &Path, mission: &str) {
    if let Some(p) = endpoint_path(runtime, mission) {
        let _ = std::fs::remove_file(p);
    }
}

/// Record one signal against its registration: the endpoint's only write.
/// Every check on the untrusted body lives here: safe ids, registration
/// present, TTL, constant-time hash compare; the detail is scrubbed again.
pub fn record_signal(runtime: &Path, post: &SignalPost, now: i64) -> Result<(), Rejection> {
    let path = run_path(runtime, &post.mission_id, &post.run_id).ok_or(Rejection::BadId)?;
    let mut entry = read_entry(&path).ok_or(Rejection::NotRegistered)?;
    if entry.mission_id != post.mission_id || entry.run_id != post.run_id {
        return Err(Rejection::NotRegistered);
    }
    // Compare before the TTL so the time taken says nothing either way.
    let want = entry.token_sha256.as_bytes();
    let got = token_hash(&post.token);
    let token_ok: bool = want.ct_eq(got.as_bytes()).into();
    if now.saturating_sub(entry.registered_at) > LANE_REGISTRATION_TTL_SECS {
        return Err(Rejection::Stale);
    }
    if !token_ok {
        return Err(Rejection::WrongToken);
    }
    let record = SignalRecord {
        signal: post.signal,
        detail: scrub_detail(post.detail.as_deref()),
        at: now,
    };
    entry.recent.push(record.clone());
    let over = entry.recent.len().saturating_sub(LANE_RECENT_CAP);
    entry.recent.drain(..over);
    entry.latest = Some(record);
    entry.received = entry.received.saturating_add(1);
    write_entry(&path, &entry).map_err(|_| Rejection::Io)
}

/// The projection files of one mission with their change times, most
/// recently changed first (no file is parsed here).
fn projection_files(
    runtime: &Path,
    mission: &str,
) -> Vec<(std::time::SystemTime, String, PathBuf)> {
    let Ok(dir) = std::fs::read_dir(mission_dir(runtime, mission)) else {
        return Vec::new();
    };
    let mut files: Vec<(std::time::SystemTime, String, PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let run = name.to_str()?.strip_suffix(".json")?.to_string();
            if !is_safe_id(&run) {
                return None;
            }
            let changed = e.metadata().ok()?.modified().ok()?;
            Some((changed, run, e.path()))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files
}

/// Every run of one mission, newest registration first, at most
/// [`LANE_READ_CAP`]; an unreadable entry is skipped. Re-reads the disk on
/// every call, the most recently changed files first, and stops parsing at
/// the cap (a registration is never newer than its file's last change).
/// Non-authoritative: a hook may never have fired.
pub fn latest_signals(runtime: &Path, mission: &str) -> Vec<RunView> {
    if !is_safe_id(mission) {
        return Vec::new();
    }
    let mut out: Vec<RunView> = Vec::new();
    for (_, run, path) in projection_files(runtime, mission) {
        if out.len() >= LANE_READ_CAP {
            break;
        }
        let Some(entry) = read_entry(&path) else {
            continue;
        };
        if entry.run_id == run && entry.mission_id == mission {
            out.push(RunView {
                mission_id: entry.mission_id,
                run_id: entry.run_id,
                registered_at: entry.registered_at,
                latest: entry.latest,
                recent: entry.recent,
                received: entry.received,
            });
        }
    }
    out.sort_by(|a, b| {
        b.registered_at
            .cmp(&a.registered_at)
            .then(a.run_id.cmp(&b.run_id))
    });
    out
}

/// Whether a run's projection is kept no longer at `now`: `keep` seconds
/// after its end signal (`ended` / `ended-error`), or `keep` seconds after
/// its registration went stale (a run whose end never came: killed, or an
/// agent without the hook). Pure.
pub fn projection_expired(
    latest: Option<&SignalRecord>,
    registered_at: i64,
    now: i64,
    keep: i64,
) -> bool {
    let ended_at = latest
        .filter(|r| matches!(r.signal, Signal::Ended | Signal::EndedError))
        .map(|r| r.at);
    match ended_at {
        Some(at) => now.saturating_sub(at) > keep,
        None => now.saturating_sub(registered_at) > LANE_REGISTRATION_TTL_SECS.saturating_add(keep),
    }
}

/// Remove the projections of `mission` that [`projection_expired`] at
/// `now`; only projection files are ever removed (never the endpoint, the
/// port or an unreadable file). Returns the runs removed.
pub fn sweep(runtime: &Path, mission: &str, now: i64, keep: i64) -> Vec<String> {
    if !is_safe_id(mission) {
        return Vec::new();
    }
    let mut gone = Vec::new();
    for (_, run, path) in projection_files(runtime, mission) {
        let Some(entry) = read_entry(&path) else {
            continue;
        };
        if projection_expired(entry.latest.as_ref(), entry.registered_at, now, keep)
            && std::fs::remove_file(&path).is_ok()
        {
            gone.push(run);
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn runtime_with_endpoint(mission: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        publish_endpoint(dir.path(), mission, "127.0.0.1:4560".parse().unwrap()).unwrap();
        dir
    }

    fn post(lane: &RunLane, signal: Signal) -> SignalPost {
        SignalPost {
            token: lane.token.expose().to_string(),
            mission_id: lane.mission.clone(),
            run_id: lane.run.clone(),
            signal,
            detail: Some("Bash".into()),
        }
    }

    #[test]
    fn registration_stores_only_the_hash() {
        let rt = runtime_with_endpoint("bolt");
        let lane = register_run_at(rt.path(), "bolt", "card-1", NOW).expect("registered");
        assert_eq!(lane.token.expose().len(), 32);
        assert!(lane.token.expose().chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(lane.endpoint, "http://127.0.0.1:4560");
        let path = rt.path().join("hook-status/bolt/card-1.json");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(lane.token.expose()), "{text}");
        assert!(text.contains(&token_hash(lane.token.expose())), "{text}");
        assert!(!format!("{lane:?}").contains(lane.token.expose()));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Two runs never share a token.
        let other = register_run_at(rt.path(), "bolt", "card-2", NOW).unwrap();
        assert_ne!(other.token, lane.token);
    }

    #[test]
    fn registration_failures_degrade_to_no_lane() {
        let rt = runtime_with_endpoint("bolt");
        for (mission, run) in [
            ("bolt", "../x"),
            ("bolt", ".hidden"),
            ("bolt", "a/b"),
            ("bolt", ""),
            ("../bolt", "card"),
            ("bolt", &"x".repeat(LANE_ID_MAX_CHARS + 1)),
        ] {
            assert!(
                register_run_at(rt.path(), mission, run, NOW).is_none(),
                "{mission:?}/{run:?}"
            );
        }
        // No sentinel has published an endpoint for this mission.
        assert!(register_run_at(rt.path(), "other", "card", NOW).is_none());
        // A published endpoint that is not loopback is not believed.
        let p = endpoint_path(rt.path(), "far").unwrap();
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "http://10.0.0.1:80\n").unwrap();
        assert!(register_run_at(rt.path(), "far", "card", NOW).is_none());
        // An unwritable runtime dir.
        let file = rt.path().join("plain-file");
        std::fs::write(&file, "").unwrap();
        assert!(register_run_at(&file, "bolt", "card", NOW).is_none());
    }

    #[test]
    fn a_good_post_is_recorded_and_shown_without_secrets() {
        let rt = runtime_with_endpoint("bolt");
        let lane = register_run_at(rt.path(), "bolt", "card-1", NOW).unwrap();
        record_signal(rt.path(), &post(&lane, Signal::Running), NOW + 5).unwrap();
        let mut p = post(&lane, Signal::ToolFailed);
        p.detail = Some("Bash /home/me/.ssh $(id)".into());
        record_signal(rt.path(), &p, NOW + 6).unwrap();
        let views = latest_signals(rt.path(), "bolt");
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].run_id, "card-1");
        assert_eq!(views[0].received, 2);
        let latest = views[0].latest.clone().unwrap();
        assert_eq!(latest.signal, Signal::ToolFailed);
        assert_eq!(latest.at, NOW + 6);
        assert_eq!(latest.detail.as_deref(), Some("Bash"));
        assert_eq!(
            views[0].recent.iter().map(|r| r.signal).collect::<Vec<_>>(),
            vec![Signal::Running, Signal::ToolFailed]
        );
        for i in 0..LANE_RECENT_CAP as i64 + 3 {
            record_signal(rt.path(), &post(&lane, Signal::TurnFinished), NOW + 10 + i).unwrap();
        }
        let views = latest_signals(rt.path(), "bolt");
        assert_eq!(views[0].recent.len(), LANE_RECENT_CAP, "recent is bounded");
        assert_eq!(views[0].recent[0].at, NOW + 13, "the oldest go first");
        assert_eq!(views[0].received, LANE_RECENT_CAP as u64 + 5);
        assert_eq!(
            views[0].describe(NOW + 60),
            format!("card-1: turn-finished (Bash), 32 s ago [{NON_AUTHORITATIVE}]")
        );
        let shown = serde_json::to_string(&views).unwrap();
        assert!(!shown.contains(lane.token.expose()));
        assert!(!shown.contains(&token_hash(lane.token.expose())));
    }

    #[test]
    fn each_bad_post_is_rejected_and_writes_nothing() {
        let rt = runtime_with_endpoint("bolt");
        let lane = register_run_at(rt.path(), "bolt", "card-1", NOW).unwrap();
        let path = rt.path().join("hook-status/bolt/card-1.json");
        let before = std::fs::read(&path).unwrap();
        let good = post(&lane, Signal::Running);
        let with = |f: &dyn Fn(&mut SignalPost)| {
            let mut p = good.clone();
            f(&mut p);
            p
        };
        let table: Vec<(&str, SignalPost, i64, Rejection)> = vec![
            (
                "path traversal in the run id",
                with(&|p| p.run_id = "../../etc/passwd".into()),
                NOW,
                Rejection::BadId,
            ),
            (
                "path traversal in the mission id",
                with(&|p| p.mission_id = "..".into()),
                NOW,
                Rejection::BadId,
            ),
            (
                "a run never registered",
                with(&|p| p.run_id = "card-9".into()),
                NOW,
                Rejection::NotRegistered,
            ),
            (
                "another mission",
                with(&|p| p.mission_id = "other".into()),
                NOW,
                Rejection::NotRegistered,
            ),
            (
                "wrong token",
                with(&|p| p.token = Token::mint().expose().to_string()),
                NOW,
                Rejection::WrongToken,
            ),
            (
                "empty token",
                with(&|p| p.token.clear()),
                NOW,
                Rejection::WrongToken,
            ),
            (
                "the hash itself as the token",
                with(&|p| p.token = token_hash(lane.token.expose())),
                NOW,
                Rejection::WrongToken,
            ),
            (
                "stale registration",
                good.clone(),
                NOW + LANE_REGISTRATION_TTL_SECS + 1,
                Rejection::Stale,
            ),
        ];
        for (name, p, at, want) in table {
            assert_eq!(record_signal(rt.path(), &p, at), Err(want), "{name}");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                before,
                "{name}: nothing written"
            );
        }
        // Still inside the TTL on its last second.
        record_signal(rt.path(), &good, NOW + LANE_REGISTRATION_TTL_SECS).unwrap();
        // Nothing but the projection file was ever created.
        let names: Vec<String> = std::fs::read_dir(rt.path().join("hook-status/bolt"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut names = names;
        names.sort();
        assert_eq!(names, vec!["card-1.json", "endpoint", "port"]);
    }

    #[test]
    fn projection_expiry_table() {
        let keep = 3600;
        let at = |signal, at| {
            Some(SignalRecord {
                signal,
                detail: None,
                at,
            })
        };
        let ttl = LANE_REGISTRATION_TTL_SECS;
        // (why, latest, registered at, now, expired)
        let rows: Vec<(&str, Option<SignalRecord>, i64, i64, bool)> = vec![
            (
                "ended, within keep",
                at(Signal::Ended, NOW),
                NOW,
                NOW + keep,
                false,
            ),
            (
                "ended, past keep",
                at(Signal::Ended, NOW),
                NOW,
                NOW + keep + 1,
                true,
            ),
            (
                "ended on error, past keep",
                at(Signal::EndedError, NOW),
                NOW,
                NOW + keep + 1,
                true,
            ),
            (
                "a turn finished is not an end",
                at(Signal::TurnFinished, NOW),
                NOW,
                NOW + keep + 1,
                false,
            ),
            (
                "interrupted is not an end",
                at(Signal::Interrupted, NOW),
                NOW,
                NOW + keep + 1,
                false,
            ),
            ("no signal, fresh", None, NOW, NOW + keep + 1, false),
            (
                "no signal, stale but within keep",
                None,
                NOW,
                NOW + ttl + keep,
                false,
            ),
            (
                "no signal, stale past keep",
                None,
                NOW,
                NOW + ttl + keep + 1,
                true,
            ),
            (
                "running, stale past keep",
                at(Signal::Running, NOW),
                NOW,
                NOW + ttl + keep + 1,
                true,
            ),
        ];
        for (why, latest, reg, now, want) in rows {
            assert_eq!(
                projection_expired(latest.as_ref(), reg, now, keep),
                want,
                "{why}"
            );
        }
    }

    #[test]
    fn a_sweep_removes_only_expired_projections() {
        let rt = runtime_with_endpoint("bolt");
        let a = register_run_at(rt.path(), "bolt", "card-1", NOW).unwrap();
        register_run_at(rt.path(), "bolt", "card-2", NOW).unwrap();
        record_signal(rt.path(), &post(&a, Signal::Ended), NOW).unwrap();
        std::fs::write(rt.path().join("hook-status/bolt/card-3.json"), "{not json").unwrap();
        assert!(sweep(rt.path(), "bolt", NOW + 10, 10).is_empty());
        assert_eq!(sweep(rt.path(), "bolt", NOW + 11, 10), ["card-1"]);
        let mut names: Vec<String> = std::fs::read_dir(rt.path().join("hook-status/bolt"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["card-2.json", "card-3.json", "endpoint", "port"]);
        assert!(sweep(rt.path(), "..", NOW + 11, 10).is_empty());
    }

    /// Reads take the most recently changed projections first: a run
    /// registered long ago that signalled last is shown even when the cap
    /// is full of newer registrations.
    #[test]
    fn reads_take_the_most_recently_changed_runs_first() {
        let rt = runtime_with_endpoint("bolt");
        let old = register_run_at(rt.path(), "bolt", "old", NOW - 1000).unwrap();
        for i in 0..LANE_READ_CAP {
            register_run_at(rt.path(), "bolt", &format!("card-{i}"), NOW + i as i64).unwrap();
        }
        record_signal(rt.path(), &post(&old, Signal::Running), NOW).unwrap();
        let views = latest_signals(rt.path(), "bolt");
        assert_eq!(views.len(), LANE_READ_CAP);
        assert!(views.iter().any(|v| v.run_id == "old"));
        // Newest registration first, still.
        assert_eq!(views[0].run_id, format!("card-{}", LANE_READ_CAP - 1));
        assert_eq!(views.last().unwrap().run_id, "old");
    }

    #[test]
    fn a_corrupt_entry_is_not_registered_and_skipped_by_readers() {
        let rt = runtime_with_endpoint("bolt");
        let lane = register_run_at(rt.path(), "bolt", "card-1", NOW).unwrap();
        register_run_at(rt.path(), "bolt", "card-2", NOW + 1).unwrap();
        std::fs::write(rt.path().join("hook-status/bolt/card-1.json"), "{not json").unwrap();
        assert_eq!(
            record_signal(rt.path(), &post(&lane, Signal::Running), NOW),
            Err(Rejection::NotRegistered)
        );
        let views = latest_signals(rt.path(), "bolt");
        assert_eq!(
            views.iter().map(|v| v.run_id.as_str()).collect::<Vec<_>>(),
            vec!["card-2"]
        );
        assert_eq!(
            views[0].describe(NOW),
            format!("card-2: no signal yet [{NON_AUTHORITATIVE}]")
        );
        assert!(latest_signals(rt.path(), "..").is_empty());
        assert!(latest_signals(rt.path(), "never-used").is_empty());
    }
}
