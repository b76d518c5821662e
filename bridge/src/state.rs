//! The watcher's memory across restarts (`<state dir>/state-<window>.json`,
//! written atomically through `hoop_core::fsutil`): each room's baseline,
//! the last 300 message ids rung or passed over, the cards' last marks. A
//! restarted bridge therefore neither rings again nor misses what arrived
//! while it was down. No file = first start: take a baseline, ring nothing.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use hoop_api::types::{CardId, ConversationId, MessageId};
use hoop_core::fsutil::{WriteOptions, write_json_atomic};
use serde::{Deserialize, Serialize};

use crate::constants::DEDUP_IDS;
use crate::detect::CardMark;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Newest message id taken into account, per room.
    #[serde(default)]
    pub rooms: BTreeMap<ConversationId, MessageId>,
    /// The dedup memory, oldest first, at most [`DEDUP_IDS`].
    #[serde(default)]
    pub seen: VecDeque<MessageId>,
    /// Cards as last listed; `None` = not listed yet (the first listing is a
    /// baseline).
    #[serde(default)]
    pub cards: Option<BTreeMap<CardId, CardMark>>,
    /// The window id the backend gave at the last registration.
    #[serde(default)]
    pub window_id: Option<String>,
}

impl State {
    /// The saved state; `Ok(None)` when there is none (first start). An
    /// unreadable file is an error: guessing would ring the backlog again.
    pub fn load(path: &Path) -> Result<Option<State>, String> {
        match std::fs::read(path) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| format!("{}: {e} (move it away to start afresh)", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        write_json_atomic(path, self, WriteOptions::SECRET)
    }

    pub fn seen(&self, id: MessageId) -> bool {
        self.seen.contains(&id)
    }

    /// Remember `id` (the oldest forgotten past [`DEDUP_IDS`]) and move the
    /// room's baseline up to it.
    pub fn remember(&mut self, room: ConversationId, id: MessageId) {
        if !self.seen(id) {
            self.seen.push_back(id);
            while self.seen.len() > DEDUP_IDS {
                self.seen.pop_front();
            }
        }
        self.advance(room, id);
    }

    /// Move a room's baseline forward (never back).
    pub fn advance(&mut self, room: ConversationId, to: MessageId) {
        let b = self.rooms.entry(room).or_insert(to);
        *b = (*b).max(to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_keeps_the_newest_300_and_baselines_only_rise() {
        let mut s = State::default();
        for id in 1..=310 {
            s.remember(7, id);
        }
        assert_eq!(s.seen.len(), DEDUP_IDS);
        assert!(!s.seen(10) && s.seen(11) && s.seen(310));
        s.advance(7, 5);
        assert_eq!(s.rooms[&7], 310);
        s.remember(7, 310);
        assert_eq!(s.seen.len(), DEDUP_IDS, "no duplicate entry");
    }

    #[test]
    fn save_load_round_trip_and_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        assert_eq!(State::load(&p), Ok(None));
        let mut s = State::default();
        s.remember(3, 44);
        s.save(&p).unwrap();
        assert_eq!(State::load(&p), Ok(Some(s)));
        std::fs::write(&p, "{").unwrap();
        assert!(State::load(&p).is_err());
    }
}
