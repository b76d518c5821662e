//! The daemon's persistent state in the home, each file written atomically
//! through `hoop_core::fsutil` (a crash leaves the old content or the new):
//! - `cursors.json` — `{conversation_id: last_message_id}`, the newest message
//!   answered or deliberately skipped per conversation;
//! - `obituaries.json` — `{cause: unix_secs}`, when the obituary for each
//!   cause was last posted (so a restart does not post it again within the
//!   hour);
//! - `rooms.json` — `{conversation_id: {"floor"?, "offers"?}}`: per room,
//!   the first-sight floor of a room that has no cursor yet (fixed when the
//!   room is first seen, so a long pause cannot age its first messages out
//!   of the backlog window) and how often each open message was offered
//!   without a reply or a pass;
//! - `sentinel-status.json` — the last round and its result, for `hoop status`.
//!
//! These are the daemon's alone (the account lock makes it one process).
//! The files the agent's commands write too are `say_seen.json`
//! (`hoop_api::say_seen`) and those of [`crate::ledger`].
//!
//! A state file that exists but cannot be parsed is an error naming the
//! file: the daemon refuses to guess (a guessed cursor would lose or double
//! messages).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hoop_api::types::{ConversationId, MessageId, UnixSecs};
use hoop_core::fsutil::{WriteOptions, write_json_atomic};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StateError {
    #[error("reading {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} is not valid ({error}); fix or move it away, then start again")]
    Parse {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("writing {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

fn load<T: DeserializeOwned + Default>(path: &Path) -> Result<T, StateError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|source| StateError::Parse {
            path: path.to_path_buf(),
            error: source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(source) => Err(StateError::Read {
            path: path.to_path_buf(),
            error: source,
        }),
    }
}

fn save<T: Serialize>(path: &Path, value: &T) -> Result<(), StateError> {
    write_json_atomic(path, value, WriteOptions::default()).map_err(|source| StateError::Write {
        path: path.to_path_buf(),
        error: source,
    })
}

/// Per-conversation cursors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursors(pub BTreeMap<ConversationId, MessageId>);

impl Cursors {
    pub fn load(path: &Path) -> Result<Cursors, StateError> {
        load(path)
    }
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        save(path, self)
    }
    pub fn get(&self, c: ConversationId) -> Option<MessageId> {
        self.0.get(&c).copied()
    }
    /// Move a cursor forward (never back: a stale plan must not undo a newer
    /// commit).
    pub fn advance(&mut self, c: ConversationId, to: MessageId) -> bool {
        let cur = self.0.entry(c).or_insert(to);
        if *cur < to {
            *cur = to;
            return true;
        }
        *cur == to
    }
}

/// Merge `updates` into the cursors file on disk (re-read first, so nothing
/// written meanwhile is lost) and save it atomically.
pub fn commit_cursors(
    path: &Path,
    updates: &[(ConversationId, MessageId)],
) -> Result<Cursors, StateError> {
    let mut c = Cursors::load(path)?;
    for (conv, to) in updates {
        c.advance(*conv, *to);
    }
    c.save(path)?;
    Ok(c)
}

/// What the daemon remembers of one room besides its cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomMemo {
    /// First sight of a room without a cursor: messages older than this
    /// (Unix seconds) are history, not work. Kept until the room has a cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<UnixSecs>,
    /// How often each open message was offered without a reply or a pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub offers: BTreeMap<MessageId, u32>,
}

impl RoomMemo {
    fn is_empty(&self) -> bool {
        self.floor.is_none() && self.offers.is_empty()
    }
}

/// `rooms.json`: every room's [`RoomMemo`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Rooms(pub BTreeMap<ConversationId, RoomMemo>);

impl Rooms {
    pub fn load(path: &Path) -> Result<Rooms, StateError> {
        load(path)
    }
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        save(path, self)
    }
    pub fn get(&self, room: ConversationId) -> Option<&RoomMemo> {
        self.0.get(&room)
    }
    /// The room's floor: the one kept since first sight, else `now_floor`,
    /// which is then kept (returns whether it was new).
    pub fn floor_or_fix(&mut self, room: ConversationId, now_floor: UnixSecs) -> (UnixSecs, bool) {
        let m = self.0.entry(room).or_default();
        match m.floor {
            Some(f) => (f, false),
            None => {
                m.floor = Some(now_floor);
                (now_floor, true)
            }
        }
    }
    /// The room's offer counts.
    pub fn offers(&self, room: ConversationId) -> BTreeMap<MessageId, u32> {
        self.0
            .get(&room)
            .map(|m| m.offers.clone())
            .unwrap_or_default()
    }
    /// Replace the room's offer counts.
    pub fn set_offers(&mut self, room: ConversationId, offers: BTreeMap<MessageId, u32>) {
        self.0.entry(room).or_default().offers = offers;
        self.tidy(room);
    }
    /// The room has a cursor now: its floor is no longer needed, and no
    /// offer at or below the cursor matters.
    pub fn cursor_at(&mut self, room: ConversationId, cursor: MessageId) {
        if let Some(m) = self.0.get_mut(&room) {
            m.floor = None;
            m.offers.retain(|id, _| *id > cursor);
        }
        self.tidy(room);
    }
    fn tidy(&mut self, room: ConversationId) {
        if self.0.get(&room).is_some_and(RoomMemo::is_empty) {
            self.0.remove(&room);
        }
    }
}

/// When each obituary cause was last posted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Obituaries(pub BTreeMap<String, UnixSecs>);

impl Obituaries {
    pub fn load(path: &Path) -> Result<Obituaries, StateError> {
        load(path)
    }
    pub fn last(&self, cause: &str) -> Option<UnixSecs> {
        self.0.get(cause).copied()
    }
    /// Record a posting and persist it atomically.
    pub fn record(path: &Path, cause: &str, at: UnixSecs) -> Result<(), StateError> {
        let mut o = Obituaries::load(path)?;
        o.0.insert(cause.to_string(), at);
        save(path, &o)
    }
}

/// How the last round ended, as `sentinel-status.json` spells it: one
/// closed set of snake_case words that `hoop status` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundResult {
    /// Nothing to answer (cursors may have advanced without a turn).
    Quiet,
    /// The turn lock was held elsewhere; the round is retried.
    Busy,
    /// A turn ran and exited cleanly; its cursors were committed.
    Ok,
    /// A turn failed (error result, crash, garbage).
    Failed,
    /// A turn ran out of time.
    Timeout,
    /// The login is dead until a person logs in again.
    AuthDead,
    /// A usage or session limit: neither death nor failure.
    Limit,
    /// The backend or the home's state could not be read; nothing changed.
    Error,
}

impl RoundResult {
    /// Every value, in declaration order.
    pub const ALL: [RoundResult; 8] = [
        RoundResult::Quiet,
        RoundResult::Busy,
        RoundResult::Ok,
        RoundResult::Failed,
        RoundResult::Timeout,
        RoundResult::AuthDead,
        RoundResult::Limit,
        RoundResult::Error,
    ];

    /// The word for a round's outcome.
    pub fn of(outcome: &crate::round::RoundOutcome) -> RoundResult {
        use crate::policy::TurnClass;
        use crate::round::RoundOutcome;
        match outcome {
            RoundOutcome::Quiet => RoundResult::Quiet,
            RoundOutcome::Busy => RoundResult::Busy,
            RoundOutcome::Error(_) => RoundResult::Error,
            RoundOutcome::Turn { class, .. } => match class {
                TurnClass::Ok => RoundResult::Ok,
                TurnClass::Failed => RoundResult::Failed,
                TurnClass::Timeout => RoundResult::Timeout,
                TurnClass::AuthDead { .. } => RoundResult::AuthDead,
                TurnClass::Limit => RoundResult::Limit,
            },
        }
    }
}

/// The last round, for `hoop status` and `hoop doctor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub started_at: UnixSecs,
    pub ws_connected: bool,
    #[serde(default)]
    pub last_round_at: Option<UnixSecs>,
    /// One of [`RoundResult`]: `quiet`, `busy`, `ok`, `failed`, `timeout`,
    /// `auth_dead`, `limit`, `error`.
    #[serde(default)]
    pub last_round_result: Option<RoundResult>,
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Why the daemon cannot log in, while it cannot (a refused login is
    /// retried for ever; this is where an operator sees it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_error: Option<String>,
    /// The latest messages given up on: offered
    /// [`crate::constants::MAX_OFFERS`] times with neither a reply nor a
    /// pass, then passed by the cursor (newest last, at most
    /// [`crate::constants::GAVE_UP_KEPT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gave_up: Vec<GaveUp>,
    /// Journal lines dropped since the daemon started (its writer was
    /// behind, or the journal at its byte bound): `hoop why` may miss events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub journal_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A message the sentinel stopped offering without an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GaveUp {
    pub conversation_id: ConversationId,
    pub message_id: MessageId,
    pub offers: u32,
    pub at: UnixSecs,
}

impl Status {
    /// Add given-up messages, keeping the newest [`crate::constants::GAVE_UP_KEPT`].
    pub fn add_gave_up(&mut self, more: impl IntoIterator<Item = GaveUp>) {
        self.gave_up.extend(more);
        let extra = self
            .gave_up
            .len()
            .saturating_sub(crate::constants::GAVE_UP_KEPT);
        self.gave_up.drain(..extra);
    }
}

impl Status {
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        save(path, self)
    }
    pub fn load(path: &Path) -> Result<Status, StateError> {
        load(path)
    }
}

/// The status file's one writer in the daemon: the cycle (after each round)
/// and the WebSocket task (when the socket comes up or drops) update it
/// under one mutex, so neither overwrites the other's news, and `hoop
/// status` sees a dropped socket at once, not at the next round.
#[derive(Debug, Clone)]
pub struct StatusBoard {
    status: std::sync::Arc<std::sync::Mutex<Status>>,
    path: PathBuf,
}

impl StatusBoard {
    /// Start the board with `status` and write it.
    pub fn new(path: PathBuf, status: Status) -> StatusBoard {
        let board = StatusBoard {
            status: std::sync::Arc::new(std::sync::Mutex::new(status)),
            path,
        };
        board.update(|_| {});
        board
    }

    /// Change the status and write the file (a failed write is logged: the
    /// status file informs operators, it decides nothing).
    pub fn update(&self, change: impl FnOnce(&mut Status)) {
        let mut st = self.status.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut st);
        if let Err(e) = st.save(&self.path) {
            tracing::debug!(error = %e, "status file not written");
        }
    }

    /// The status as last updated.
    pub fn get(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_never_go_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cursors.json");
        assert_eq!(Cursors::load(&p).unwrap(), Cursors::default());
        commit_cursors(&p, &[(1, 10), (2, 20)]).unwrap();
        commit_cursors(&p, &[(1, 5), (2, 25)]).unwrap();
        let c = Cursors::load(&p).unwrap();
        assert_eq!(c.get(1), Some(10), "a cursor never moves back");
        assert_eq!(c.get(2), Some(25));
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("\"1\": 10"), "{text}");
    }

    #[test]
    fn a_broken_file_is_a_clear_error_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cursors.json");
        std::fs::write(&p, "{not json").unwrap();
        let e = Cursors::load(&p).unwrap_err();
        assert!(e.to_string().contains("cursors.json"), "{e}");
        assert!(commit_cursors(&p, &[(1, 1)]).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{not json");
    }

    /// Every round outcome maps to its word, and the status file spells
    /// each word in snake_case and reads it back.
    #[test]
    fn round_results_are_one_closed_set_of_snake_case_words() {
        use crate::policy::{AfterTurn, TurnClass};
        use crate::round::RoundOutcome;
        let after = AfterTurn {
            commit: false,
            backoff: None,
            post_failure_notice: false,
            obituary_cause: None,
        };
        let turn = |class| RoundOutcome::Turn {
            class,
            after: after.clone(),
        };
        let cases = [
            (RoundOutcome::Quiet, RoundResult::Quiet, "quiet"),
            (RoundOutcome::Busy, RoundResult::Busy, "busy"),
            (turn(TurnClass::Ok), RoundResult::Ok, "ok"),
            (turn(TurnClass::Failed), RoundResult::Failed, "failed"),
            (turn(TurnClass::Timeout), RoundResult::Timeout, "timeout"),
            (
                turn(TurnClass::AuthDead {
                    cause: "please run /login".into(),
                }),
                RoundResult::AuthDead,
                "auth_dead",
            ),
            (turn(TurnClass::Limit), RoundResult::Limit, "limit"),
            (
                RoundOutcome::Error("backend: 502".into()),
                RoundResult::Error,
                "error",
            ),
        ];
        assert_eq!(cases.len(), RoundResult::ALL.len());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sentinel-status.json");
        for (outcome, want, word) in cases {
            let r = RoundResult::of(&outcome);
            assert_eq!(r, want, "{outcome:?}");
            let st = Status {
                last_round_result: Some(r),
                ..Status::default()
            };
            st.save(&p).unwrap();
            let raw: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            assert_eq!(raw["last_round_result"], word, "{outcome:?}");
            assert_eq!(Status::load(&p).unwrap(), st);
        }
    }

    /// The socket's news and the round's news land in the same file
    /// without one erasing the other.
    #[test]
    fn the_status_board_keeps_every_writers_news() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sentinel-status.json");
        let board = StatusBoard::new(
            p.clone(),
            Status {
                pid: 42,
                ..Status::default()
            },
        );
        assert_eq!(Status::load(&p).unwrap().pid, 42, "written at start");
        let ws = board.clone();
        ws.update(|s| s.ws_connected = true);
        board.update(|s| s.last_round_result = Some(RoundResult::Ok));
        let st = Status::load(&p).unwrap();
        assert!(st.ws_connected);
        assert_eq!(st.last_round_result, Some(RoundResult::Ok));
        ws.update(|s| s.ws_connected = false);
        let st = Status::load(&p).unwrap();
        assert!(!st.ws_connected, "a drop is written at once");
        assert_eq!(st.last_round_result, Some(RoundResult::Ok));
        assert_eq!(board.get(), st);
    }

    #[test]
    fn rooms_keep_the_first_floor_until_a_cursor_and_drop_passed_offers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rooms.json");
        let mut r = Rooms::load(&p).unwrap();
        assert_eq!(r.floor_or_fix(5, 1_000), (1_000, true));
        assert_eq!(
            r.floor_or_fix(5, 9_000),
            (1_000, false),
            "the first floor stays"
        );
        r.set_offers(5, BTreeMap::from([(10, 1), (12, 2)]));
        r.save(&p).unwrap();
        let mut back = Rooms::load(&p).unwrap();
        assert_eq!(back, r);
        back.cursor_at(5, 10);
        assert_eq!(back.get(5).unwrap().floor, None);
        assert_eq!(back.offers(5), BTreeMap::from([(12, 2)]));
        back.cursor_at(5, 12);
        assert_eq!(back.get(5), None, "nothing left to remember");
        std::fs::write(&p, "{broken").unwrap();
        assert!(
            Rooms::load(&p)
                .unwrap_err()
                .to_string()
                .contains("rooms.json")
        );
    }

    #[test]
    fn gave_up_keeps_the_newest() {
        let mut st = Status::default();
        let g = |i| GaveUp {
            conversation_id: 1,
            message_id: i,
            offers: 3,
            at: 0,
        };
        st.add_gave_up((0..25).map(g));
        assert_eq!(st.gave_up.len(), crate::constants::GAVE_UP_KEPT);
        assert_eq!(st.gave_up.last().unwrap().message_id, 24);
        assert_eq!(st.gave_up[0].message_id, 5);
    }

    #[test]
    fn obituaries_persist_per_cause() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("obituaries.json");
        Obituaries::record(&p, "oauth", 100).unwrap();
        Obituaries::record(&p, "login", 200).unwrap();
        let o = Obituaries::load(&p).unwrap();
        assert_eq!(o.last("oauth"), Some(100));
        assert_eq!(o.last("login"), Some(200));
        assert_eq!(o.last("other"), None);
    }
}
