//! Which rooms this window answers for: the ONE ownership rule
//! ([`handles`]) and how a sync's outcome moves the assignment
//! ([`after_sync`]). Pure; the watcher calls the backend and feeds the
//! outcome in.
//!
//! - `rooms` → the room is in the list; `fallback` → not in `exclude` and
//!   not claimed by another window in the local claims file; `none` →
//!   nothing (a revoked window is `none` and says nothing about it).
//! - Never synced → the local rule: `--rooms` when given, else every room
//!   not claimed locally.
//! - Synced before and now failing → keep the last assignment (production
//!   does not switch back to the local rule; seed 002 L7 §0.7).
//! - 404 `window_not_found` → register again.

use std::collections::HashSet;

use hoop_api::types::{ConversationId, WindowMode, WindowSync};

/// The assignment in force.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Assignment {
    /// No sync has ever succeeded: the local rule.
    #[default]
    NeverSynced,
    /// The last assignment the backend gave.
    Synced(WindowSync),
}

/// What the local side knows: `--rooms`, and the rooms other live windows
/// on this machine claimed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Local {
    pub rooms: Vec<ConversationId>,
    pub claimed_by_others: HashSet<ConversationId>,
}

/// Does this window answer for `room`?
pub fn handles(a: &Assignment, local: &Local, room: ConversationId) -> bool {
    match a {
        Assignment::NeverSynced if !local.rooms.is_empty() => local.rooms.contains(&room),
        Assignment::NeverSynced => !local.claimed_by_others.contains(&room),
        Assignment::Synced(s) => match s.mode {
            WindowMode::Rooms => s.rooms.contains(&room),
            WindowMode::Fallback => {
                !s.exclude.contains(&room) && !local.claimed_by_others.contains(&room)
            }
            WindowMode::None => false,
        },
    }
}

/// What a window rings for, in the words printed at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingsFor {
    pub text: String,
    /// True when it rings for no room at all (the text then says the fix).
    pub none: bool,
}

/// The fix for a window that rings for nothing.
pub const NO_ROOMS_FIX: &str =
    "start it with --fallback, or assign rooms to this window in the App";

fn ids(rooms: &[ConversationId]) -> String {
    rooms
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which rooms this window rings for, as the operator reads it at start.
pub fn rings_for(a: &Assignment, local: &Local) -> RingsFor {
    let rings = |text: String| RingsFor { text, none: false };
    let nothing = |why: String| RingsFor {
        text: format!("this window rings for no room ({why}): {NO_ROOMS_FIX}"),
        none: true,
    };
    match a {
        Assignment::NeverSynced if !local.rooms.is_empty() => rings(format!(
            "this window rings for room(s) {} (--rooms; the backend has not answered a window sync yet)",
            ids(&local.rooms)
        )),
        Assignment::NeverSynced => rings(
            "this window rings for every room no other window on this machine claims \
             (the backend has not answered a window sync yet)"
                .into(),
        ),
        Assignment::Synced(s) => match s.mode {
            WindowMode::Rooms if s.rooms.is_empty() => {
                nothing("the backend assigns it an empty room list".into())
            }
            WindowMode::Rooms => rings(format!(
                "this window rings for room(s) {} (assigned by the backend)",
                ids(&s.rooms)
            )),
            WindowMode::Fallback if s.exclude.is_empty() => {
                rings("this window rings for every room (fallback, assigned by the backend)".into())
            }
            WindowMode::Fallback => rings(format!(
                "this window rings for every room except {} (fallback, assigned by the backend)",
                ids(&s.exclude)
            )),
            WindowMode::None => nothing(format!(
                "the backend assigns it none{}",
                s.reason
                    .as_deref()
                    .map(|r| format!(", reason {r}"))
                    .unwrap_or_default()
            )),
        },
    }
}

/// What one `window_sync` came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncOutcome {
    Ok(WindowSync),
    /// 404 `window_not_found`.
    NotFound,
    /// Anything else (unreachable, 5xx, rate limited, no window id yet).
    Failed,
}

/// The assignment after a sync, and whether to register again.
pub fn after_sync(a: &Assignment, outcome: SyncOutcome) -> (Assignment, bool) {
    match outcome {
        SyncOutcome::Ok(s) => (Assignment::Synced(s), false),
        SyncOutcome::NotFound => (a.clone(), true),
        SyncOutcome::Failed => (a.clone(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(mode: WindowMode, rooms: &[i64], exclude: &[i64]) -> Assignment {
        Assignment::Synced(WindowSync {
            mode,
            rooms: rooms.to_vec(),
            exclude: exclude.to_vec(),
            reason: None,
        })
    }

    #[test]
    fn handles_table() {
        let claimed = Local {
            rooms: vec![],
            claimed_by_others: HashSet::from([3]),
        };
        let with_rooms = Local {
            rooms: vec![1],
            claimed_by_others: HashSet::from([3]),
        };
        // (assignment, local, room, want)
        let cases: Vec<(Assignment, &Local, i64, bool)> = vec![
            (Assignment::NeverSynced, &with_rooms, 1, true),
            (Assignment::NeverSynced, &with_rooms, 2, false),
            (Assignment::NeverSynced, &claimed, 2, true),
            (Assignment::NeverSynced, &claimed, 3, false),
            (sync(WindowMode::Rooms, &[1, 2], &[]), &claimed, 2, true),
            (sync(WindowMode::Rooms, &[1, 2], &[]), &claimed, 4, false),
            // rooms mode ignores the local claims and --rooms
            (sync(WindowMode::Rooms, &[3], &[]), &claimed, 3, true),
            (sync(WindowMode::Rooms, &[2], &[]), &with_rooms, 1, false),
            (sync(WindowMode::Fallback, &[], &[1]), &claimed, 1, false),
            (sync(WindowMode::Fallback, &[], &[1]), &claimed, 3, false),
            (sync(WindowMode::Fallback, &[], &[1]), &claimed, 2, true),
            (sync(WindowMode::None, &[2], &[]), &claimed, 2, false),
        ];
        for (a, local, room, want) in &cases {
            assert_eq!(handles(a, local, *room), *want, "{a:?} {local:?} {room}");
        }
    }

    #[test]
    fn rings_for_table() {
        let none = Local::default();
        let local = Local {
            rooms: vec![4, 6],
            claimed_by_others: HashSet::new(),
        };
        let none_sync = Assignment::Synced(WindowSync {
            mode: WindowMode::None,
            rooms: vec![],
            exclude: vec![],
            reason: Some("no_assignment".into()),
        });
        // (assignment, local, want text, want none)
        let cases = [
            (
                sync(WindowMode::Rooms, &[1, 2], &[]),
                &none,
                "this window rings for room(s) 1, 2 (assigned by the backend)",
                false,
            ),
            (
                sync(WindowMode::Rooms, &[], &[]),
                &none,
                "this window rings for no room (the backend assigns it an empty room list): \
                 start it with --fallback, or assign rooms to this window in the App",
                true,
            ),
            (
                sync(WindowMode::Fallback, &[], &[3]),
                &none,
                "this window rings for every room except 3 (fallback, assigned by the backend)",
                false,
            ),
            (
                sync(WindowMode::Fallback, &[], &[]),
                &none,
                "this window rings for every room (fallback, assigned by the backend)",
                false,
            ),
            (
                none_sync,
                &local,
                "this window rings for no room (the backend assigns it none, reason \
                 no_assignment): start it with --fallback, or assign rooms to this window in the App",
                true,
            ),
            (
                Assignment::NeverSynced,
                &local,
                "this window rings for room(s) 4, 6 (--rooms; the backend has not answered a \
                 window sync yet)",
                false,
            ),
            (
                Assignment::NeverSynced,
                &none,
                "this window rings for every room no other window on this machine claims (the \
                 backend has not answered a window sync yet)",
                false,
            ),
        ];
        for (a, local, text, is_none) in cases {
            let r = rings_for(&a, local);
            assert_eq!((r.text.as_str(), r.none), (text, is_none), "{a:?}");
        }
    }

    #[test]
    fn sync_transitions_table() {
        let last = sync(WindowMode::Rooms, &[1], &[]);
        let new = WindowSync {
            mode: WindowMode::None,
            rooms: vec![],
            exclude: vec![],
            reason: Some("revoked".into()),
        };
        // (before, outcome, want after, want re-register)
        let cases = vec![
            (
                Assignment::NeverSynced,
                SyncOutcome::Failed,
                Assignment::NeverSynced,
                false,
            ),
            (last.clone(), SyncOutcome::Failed, last.clone(), false),
            (last.clone(), SyncOutcome::NotFound, last.clone(), true),
            (
                Assignment::NeverSynced,
                SyncOutcome::NotFound,
                Assignment::NeverSynced,
                true,
            ),
            (
                last.clone(),
                SyncOutcome::Ok(new.clone()),
                Assignment::Synced(new.clone()),
                false,
            ),
        ];
        for (before, outcome, after, rereg) in cases {
            assert_eq!(
                after_sync(&before, outcome.clone()),
                (after, rereg),
                "{before:?} {outcome:?}"
            );
        }
    }
}
