//! Every number of the bridge in one place, each with the reason it has its
//! value (SPEC §3 and seed 002's doorbell unless it says otherwise). The poll
//! and window-sync intervals are shared with the rest of the toolkit and live
//! in `hoop_core::limits`.

use std::time::Duration;

pub use hoop_core::limits::{BRIDGE_POLL, WINDOW_SYNC_INTERVAL};

/// `work_tasks` runs every 6th round (30 s at the 5 s poll): cards change
/// far less often than chat, and each call counts against the key's 300/min.
pub const TASKS_EVERY_ROUNDS: u64 = 6;
/// `work_beat` runs every 12th round (60 s): the backend's `next_beat_sec`,
/// well inside the 3-minute presence timeout.
pub const BEAT_EVERY_ROUNDS: u64 = 12;
/// A room whose list entry changed is read with `chat_read limit 10` (the
/// seed's number: one round's usual traffic in one call).
pub const READ_LIMIT: u32 = 10;
/// When that read says `truncated` and its oldest message is still past the
/// room's baseline, older pages are read with `before` at this size (the
/// backend's most, seed 002 L19 item 3) until the baseline is reached —
/// the seed's doorbell stopped at 10 and "more than 10 may miss a ring".
pub const READ_PAGE_LIMIT: u32 = 50;
/// At most this many reads of one room in one round (10 + 4 × 50 = 210
/// messages, within the 300-id dedup memory). Past it the overflow line
/// names the room: a flood cannot spend the key's 300 calls a minute.
pub const READ_PAGES_MAX: usize = 5;
/// At most this many event lines a round; the rest become one overflow line,
/// so a flood cannot bury the window's own conversation.
pub const MAX_LINES_PER_ROUND: usize = 20;
/// The dedup memory holds this many message ids (oldest forgotten first).
pub const DEDUP_IDS: usize = 300;
/// A room's member list is reused this long before `chat_members` again.
pub const MEMBERS_TTL: Duration = Duration::from_secs(10 * 60);
/// Rooms with at least this many AI members ring only on a mention.
pub const MULTI_AI_MEMBERS: usize = 2;
/// Backend unreachable for longer than this → one `kind=down` line.
pub const DOWN_AFTER: Duration = Duration::from_secs(2 * 60);
/// A summary is cut after this many characters: one line in a terminal.
pub const SUMMARY_MAX_CHARS: usize = 120;
/// Exit code when the key is refused (401/403): distinct from every other
/// failure so the window's Monitor can tell "fix the key" from "retry"
/// (sysexits' EX_NOPERM).
pub const EXIT_KEY_REJECTED: u8 = 77;
/// Exit code of `hoop bridge handover` when no handover summary could be
/// produced (sysexits' EX_CONFIG, production's `codex_handover.py` rc=78).
pub const EXIT_NO_HANDOVER: u8 = 78;
/// The `codex` command gets this long to accept an event.
pub const CODEX_DELIVER_TIMEOUT: Duration = Duration::from_secs(15);
/// An event delivered but without a receipt for this long → one alert line.
pub const CODEX_RECEIPT_ALERT: Duration = Duration::from_secs(120);
/// A handover summary command gets this long (it may ask a model).
pub const HANDOVER_SUMMARY_TIMEOUT: Duration = Duration::from_secs(300);
/// With the push stream up, a full round (list and cards) still runs this
/// often, in case the stream missed something: the stream is the doorbell,
/// this is the alarm clock. Ten minutes keeps an idle hour at about a fifth
/// of polling's calls.
pub const PUSH_SAFETY_ROUND: Duration = Duration::from_secs(10 * 60);
/// The stream sends a keep-alive every 15 s; silence for this long means it
/// is dead and is reconnected (with a full round to catch up).
pub const PUSH_QUIET_LIMIT: Duration = Duration::from_secs(45);
/// A stream that cannot be opened (other than "not offered") is tried
/// again after this long; polling runs meanwhile.
pub const PUSH_RETRY: Duration = Duration::from_secs(60);
/// Events arriving within this of each other become one round.
pub const PUSH_COALESCE: Duration = Duration::from_millis(100);
/// A watcher restarted quickly (its Monitor restarted it) waits this long
/// for the previous watcher of the same window session to finish dying and
/// free the session lock, before refusing to start.
pub const SESSION_LOCK_WAIT: Duration = Duration::from_secs(5);
/// How often that wait tries the lock again.
pub const SESSION_LOCK_RETRY: Duration = Duration::from_millis(100);
