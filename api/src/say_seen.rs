//! The `hoop say` watermark of a home: `say_seen.json`, `{"<conversation
//! id>": <message id>, …}` — per room, the newest message id this account
//! is known to have seen. `hoop say` reads it for its gap gate; whoever
//! shows messages to the agent (the `hoop say` gate itself, the sentinel
//! when it hands messages to a turn) advances it.
//!
//! This module is the file's one owner: the daemon (what a turn's prompt
//! showed), `hoop say` and `hoop read` (what they printed) all move it
//! through [`SaySeen::advance_file`] / [`SaySeen::advance_all`], which
//! re-read it and write the merge atomically under the `flock` beside it
//! (`say_seen.json.lock`, `hoop_core::fsutil::with_lock_beside`), so no
//! writer loses another's advance. It only moves forward. A file that
//! cannot be parsed reads as empty (every message unread: the safe
//! direction), with a warning, for every reader alike; the next advance
//! replaces it.

use std::collections::BTreeMap;
use std::path::Path;

use hoop_core::fsutil::{WriteOptions, with_lock_beside, write_json_atomic};

use crate::types::{ConversationId, MessageId};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SaySeen(BTreeMap<String, MessageId>);

impl SaySeen {
    /// Absent → empty. Malformed → empty (everything reads as unread, the
    /// safe direction), with a warning.
    pub fn load(path: &Path) -> SaySeen {
        match std::fs::read(path) {
            Err(_) => SaySeen::default(),
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(map) => SaySeen(map),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "say_seen.json unreadable; treating every message as unread");
                    SaySeen::default()
                }
            },
        }
    }

    /// The watermark of one room.
    pub fn get(&self, room: ConversationId) -> Option<MessageId> {
        self.0.get(&room.to_string()).copied()
    }

    /// Move one room's watermark forward (never back).
    pub fn advance(&mut self, room: ConversationId, to: MessageId) {
        let e = self.0.entry(room.to_string()).or_insert(to);
        *e = (*e).max(to);
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        write_json_atomic(path, &self.0, WriteOptions::default())
    }

    /// Under the lock beside `path`: re-read it, advance `room` to `to`,
    /// write it back atomically.
    pub fn advance_file(path: &Path, room: ConversationId, to: MessageId) -> std::io::Result<()> {
        SaySeen::advance_all(path, &[(room, to)])
    }

    /// [`SaySeen::advance_file`] for several rooms in one write.
    pub fn advance_all(path: &Path, marks: &[(ConversationId, MessageId)]) -> std::io::Result<()> {
        with_lock_beside(path, || {
            let mut seen = SaySeen::load(path);
            if marks
                .iter()
                .all(|(room, to)| seen.get(*room).is_some_and(|w| w >= *to))
            {
                return Ok(());
            }
            for (room, to) in marks {
                seen.advance(*room, *to);
            }
            seen.save(path)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_moves_forward_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("say_seen.json");
        assert_eq!(SaySeen::load(&p).get(5), None);
        SaySeen::advance_file(&p, 5, 10).unwrap();
        SaySeen::advance_file(&p, 5, 7).unwrap();
        SaySeen::advance_file(&p, 6, 1).unwrap();
        let back = SaySeen::load(&p);
        assert_eq!((back.get(5), back.get(6)), (Some(10), Some(1)));
        let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(raw, serde_json::json!({"5": 10, "6": 1}));
        std::fs::write(&p, "garbage").unwrap();
        assert_eq!(SaySeen::load(&p), SaySeen::default());
        // A bad file is replaced by the next advance (everything else reads
        // as unread, the safe direction).
        SaySeen::advance_all(&p, &[(5, 3), (6, 4)]).unwrap();
        let back = SaySeen::load(&p);
        assert_eq!((back.get(5), back.get(6)), (Some(3), Some(4)));
        assert!(p.with_file_name("say_seen.json.lock").exists());
    }
}
