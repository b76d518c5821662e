//! What the agent's own commands record in the home for the daemon, each
//! file with this module as its one owner and every change made under the
//! `flock` beside it (`hoop_core::fsutil::with_lock_beside`), since the
//! daemon and the agent's commands write them from different processes:
//! - `passes.json` — `{"<room>": [{"ids": [..]} or {"up_to": id}, "why",
//!   "at"}]`: messages the agent deliberately leaves unanswered (`hoop
//!   pass`). Recorded in the home, never posted. The daemon counts a passed
//!   message as handled and drops the entries its cursor has passed.
//! - `failed_sends.json` — `{"<room>": {"count", "at", "why"}}`: a `hoop
//!   say` / `hoop send-image` into the room that posted nothing (the backend
//!   unreachable, a refusal, the rate limit). The daemon compares the count
//!   before and after a turn: a room whose send failed and whose work is
//!   still open had its reply FAIL (offered again after its backoff), which
//!   is not the agent staying silent.
//!
//! A file that cannot be parsed reads as empty, with a warning: a lost pass
//! is offered again and a lost failure counts as silence — the safe
//! direction; the next change replaces it.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use hoop_api::types::{ConversationId, MessageId, UnixSecs};
use hoop_core::fsutil::{WriteOptions, with_lock_beside, write_json_atomic};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::plan::RoomPasses;

/// The passes file in a home.
pub const PASSES_FILE: &str = "passes.json";
/// The failed-sends file in a home.
pub const FAILED_SENDS_FILE: &str = "failed_sends.json";

fn load_lenient<T: DeserializeOwned + Default>(path: &Path) -> T {
    match std::fs::read(path) {
        Err(_) => T::default(),
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "state file unreadable; read as empty");
            T::default()
        }),
    }
}

fn change<T: DeserializeOwned + Default + Serialize>(
    path: &Path,
    f: impl FnOnce(&mut T),
) -> io::Result<()> {
    with_lock_beside(path, || {
        let mut v: T = load_lenient(path);
        f(&mut v);
        write_json_atomic(path, &v, WriteOptions::default())
    })
}

/// One pass: these ids, or everything up to `up_to`, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pass {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<MessageId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_to: Option<MessageId>,
    pub why: String,
    pub at: UnixSecs,
}

impl Pass {
    pub fn covers(&self, id: MessageId) -> bool {
        self.ids.contains(&id) || self.up_to.is_some_and(|u| id <= u)
    }
}

/// Every room's passes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Passes(pub BTreeMap<ConversationId, Vec<Pass>>);

impl Passes {
    pub fn load(path: &Path) -> Passes {
        load_lenient(path)
    }

    /// One room's passes, as the plan reads them.
    pub fn room(&self, room: ConversationId) -> RoomPasses {
        let mut out = RoomPasses::default();
        for p in self.0.get(&room).into_iter().flatten() {
            out.ids.extend(&p.ids);
            out.up_to = out.up_to.max(p.up_to);
        }
        out
    }

    /// Why the agent passed on `id` (the first pass that covers it).
    pub fn why(&self, room: ConversationId, id: MessageId) -> Option<&str> {
        self.0
            .get(&room)?
            .iter()
            .find(|p| p.covers(id))
            .map(|p| p.why.as_str())
    }

    /// Record a pass.
    pub fn record(path: &Path, room: ConversationId, pass: Pass) -> io::Result<()> {
        change(path, |p: &mut Passes| {
            p.0.entry(room).or_default().push(pass)
        })
    }

    /// Forget what the cursors have passed: ids at or below a room's cursor,
    /// and passes left with nothing to cover.
    pub fn prune(path: &Path, cursors: &[(ConversationId, MessageId)]) -> io::Result<()> {
        let touches = |p: &Passes| {
            cursors.iter().any(|(room, c)| {
                p.0.get(room).is_some_and(|v| {
                    v.iter()
                        .any(|x| x.ids.iter().any(|i| i <= c) || x.up_to.is_some_and(|u| u <= *c))
                })
            })
        };
        if !touches(&Passes::load(path)) {
            return Ok(());
        }
        change(path, |p: &mut Passes| {
            for (room, c) in cursors {
                if let Some(v) = p.0.get_mut(room) {
                    for x in v.iter_mut() {
                        x.ids.retain(|i| i > c);
                        if x.up_to.is_some_and(|u| u <= *c) {
                            x.up_to = None;
                        }
                    }
                    v.retain(|x| !x.ids.is_empty() || x.up_to.is_some());
                }
            }
            p.0.retain(|_, v| !v.is_empty());
        })
    }
}

/// The latest failed send of a room, and how many there were.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedSend {
    pub count: u64,
    pub at: UnixSecs,
    pub why: String,
}

/// Every room's failed sends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FailedSends(pub BTreeMap<ConversationId, FailedSend>);

impl FailedSends {
    pub fn load(path: &Path) -> FailedSends {
        load_lenient(path)
    }

    /// How many sends into `room` have failed so far.
    pub fn count(&self, room: ConversationId) -> u64 {
        self.0.get(&room).map_or(0, |f| f.count)
    }

    /// Record a failed send into `room`.
    pub fn record(path: &Path, room: ConversationId, why: &str, at: UnixSecs) -> io::Result<()> {
        change(path, |f: &mut FailedSends| {
            let e = f.0.entry(room).or_default();
            e.count += 1;
            e.at = at;
            e.why = why.chars().take(300).collect();
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(ids: &[i64], up_to: Option<i64>) -> Pass {
        Pass {
            ids: ids.to_vec(),
            up_to,
            why: "thanks only".into(),
            at: 1,
        }
    }

    #[test]
    fn passes_are_recorded_read_and_pruned_by_the_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(PASSES_FILE);
        Passes::record(&p, 5, pass(&[10, 12], None)).unwrap();
        Passes::record(&p, 5, pass(&[], Some(8))).unwrap();
        Passes::record(&p, 6, pass(&[3], None)).unwrap();
        let all = Passes::load(&p);
        let r = all.room(5);
        assert!(r.covers(10) && r.covers(12) && r.covers(7) && !r.covers(11));
        assert_eq!(all.why(5, 12), Some("thanks only"));
        assert_eq!(all.why(5, 11), None);
        Passes::prune(&p, &[(5, 10)]).unwrap();
        let r = Passes::load(&p).room(5);
        assert!(!r.covers(10) && r.covers(12) && !r.covers(7));
        Passes::prune(&p, &[(5, 12), (6, 3)]).unwrap();
        assert_eq!(Passes::load(&p), Passes::default());
        assert_eq!(std::fs::read_to_string(&p).unwrap().trim(), "{}");
    }

    #[test]
    fn failed_sends_count_per_room_and_a_bad_file_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FAILED_SENDS_FILE);
        assert_eq!(FailedSends::load(&p).count(5), 0);
        FailedSends::record(&p, 5, "unreachable", 10).unwrap();
        FailedSends::record(&p, 5, "rate limited", 11).unwrap();
        let f = FailedSends::load(&p);
        assert_eq!((f.count(5), f.count(6)), (2, 0));
        assert_eq!(f.0[&5].why, "rate limited");
        std::fs::write(&p, "{broken").unwrap();
        assert_eq!(FailedSends::load(&p).count(5), 0);
        FailedSends::record(&p, 5, "again", 12).unwrap();
        assert_eq!(FailedSends::load(&p).count(5), 1);
    }
}
