//! The sentinel's own constants (the spec's numbers live in
//! `hoop_core::limits`; these are this crate's decisions), each with its reason.

use std::time::Duration;

/// A conversation this home has never seen: messages younger than this are
/// answered, older history is not (an operator starting a new home must not
/// see it answer last month's backlog, but a question asked while the home
/// was being set up still gets its answer).
pub const NEW_ROOM_BACKLOG: Duration = Duration::from_secs(3600);

/// After a failed WebSocket login or an unreachable backend, the heartbeat
/// waits this long (the spec's regular cadence) before trying again.
pub const HEARTBEAT_RETRY: Duration = Duration::from_secs(60);

/// How often the idle reaper looks at the agent process. A minute is far
/// below the 1,800 s idle limit and costs one wakeup per minute.
pub const REAPER_TICK: Duration = Duration::from_secs(60);

/// How often the lease renewer lists the account's working cards when none
/// is known (the backend's `renew_after_sec` governs once one is).
pub const LEASE_POLL: Duration = Duration::from_secs(60);

/// File in the home holding the last obituary time per cause.
pub const OBITUARIES_FILE: &str = "obituaries.json";
/// File in the home holding the sentinel's settings.
pub const SENTINEL_CONFIG_FILE: &str = "sentinel.json";
/// The incremental state earlier versions kept in the home for the usage
/// snapshot; the account's ledger (`hoop_meter::ledger`, in the home)
/// replaces it, and the first ledger removes it.
pub const USAGE_CACHE_FILE: &str = "usage-cache.bin";
/// How long a usage snapshot waits for the account's ledger lock (another
/// process of the home — a worker's supervisor — reading it). A sync takes
/// milliseconds; past this the holder is stuck, and the snapshot is given
/// up (nothing is reported, which keeps the stored totals) rather than
/// holding up a turn.
pub const USAGE_LEDGER_LOCK_WAIT: Duration = Duration::from_secs(10);
/// File in the home naming the loopback endpoint the card tools' hook
/// (`hoop card-snapshot`) asks for a usage snapshot.
pub const CARD_SNAPSHOT_ENDPOINT_FILE: &str = "usage-snapshot.endpoint";
/// The path of that endpoint.
pub const CARD_SNAPSHOT_PATH: &str = "/usage/snapshot";
/// The hook gives up on the snapshot after this long and lets the card
/// call go on: a snapshot is a ledger sync (milliseconds) and one POST to
/// the backend; a backend that hangs must not hold the agent's call longer.
pub const CARD_SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the snapshot waits for the response that makes the card call
/// to reach its transcript (Claude Code writes it around the time it runs
/// the hook; observed within tens of milliseconds). Below
/// [`CARD_SNAPSHOT_TIMEOUT`], leaving time for the POST.
pub const CARD_SNAPSHOT_CALL_WAIT: Duration = Duration::from_secs(2);
/// How often it looks.
pub const CARD_SNAPSHOT_POLL: Duration = Duration::from_millis(5);
/// How much of the transcript's end it looks in (the call's response is
/// among its last lines).
pub const CARD_SNAPSHOT_TAIL_BYTES: u64 = 1 << 20;
/// Largest hook payload read (a card finish carries its result text, a
/// summary; anything longer is cut and the hook still decides from it).
pub const CARD_SNAPSHOT_PAYLOAD_MAX: usize = 1 << 20;
/// Largest request the endpoint accepts (the hook sends the tool's name).
pub const CARD_SNAPSHOT_BODY_MAX: usize = 4096;
/// After a turn, how long the usage snapshot waits for the CLI to write the
/// turn's last response to its transcript (it does so around the result
/// line). Past it the snapshot is reported as read: the next one catches up.
pub const USAGE_CATCH_UP_WAIT: Duration = Duration::from_secs(5);
/// How often the snapshot re-reads the transcripts while it waits (the
/// read is incremental: only the appended bytes).
pub const USAGE_CATCH_UP_POLL: Duration = Duration::from_millis(100);
/// File in the home where the daemon records its last round (for `hoop status`).
pub const STATUS_FILE: &str = "sentinel-status.json";

/// The failure note (SPEC §2), posted on the second consecutive failure.
pub const FAILURE_NOTICE: &str = "⚠️ this round failed; I am still online";
/// The obituary (SPEC §2), posted at most once per hour per cause.
pub const OBITUARY: &str = "⚰️ login expired — a person must log in again";

/// A conversation seen for the first time pages back to the
/// [`NEW_ROOM_BACKLOG`] limit, at most this many pages after the first
/// (16 × 15 = 240 messages: four times the backend's per-sender rate of a
/// minute, while a runaway room still cannot make a round page forever).
pub const NEW_ROOM_EXTRA_PAGES: u32 = 15;

/// A room whose pull keeps failing is logged once per cause and this long:
/// a broken room must be visible in the log without flooding it every round.
pub const ROOM_FAILURE_LOG_EVERY: Duration = Duration::from_secs(3600);

/// A worker's result or error text on its card is at most this many
/// characters: a card carries a summary, the transcript stays on disk.
pub const WORKER_DETAIL_CAP: usize = 4000;
/// The record of one worker inside its directory (`workers/<card>/`).
pub const WORKER_RECORD_FILE: &str = "worker.json";
/// A stopped worker gets this long after SIGTERM before SIGKILL (the CLI
/// exits on SIGTERM at once; this only bounds a wedged one).
pub const WORKER_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// The renewer looks at the home's worker records this often (a local
/// directory read; the backend is asked only while workers live), so a new
/// worker's lease opens and a worker whose card was cancelled (its parent
/// finished) stops within seconds rather than at the next renew a minute
/// later.
pub const WORKER_POLL: std::time::Duration = std::time::Duration::from_secs(10);
/// A worker's agent runs at most this long; heavy work, but never forever.
pub const WORKER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2 * 3600);
/// How often the orphan keeper looks for live processes a finished turn
/// left to the daemon (an exited one is reaped at once, on SIGCHLD):
/// adoption sends no signal, so a leftover lives at most this long after
/// its turn; a `/proc` walk every few seconds costs nothing measurable.
pub const ORPHAN_TICK: Duration = Duration::from_secs(5);
/// A leftover gets this long after SIGTERM before SIGKILL (the same bound
/// as a stopped worker: a tool that traps SIGTERM must still go).
pub const ORPHAN_STOP_GRACE: Duration = Duration::from_secs(5);
/// The last bytes of a worker's log kept in its record when the log is
/// removed, and carried by an orphaned card's failure: enough for the
/// error a crashed run printed last.
pub const WORKER_LOG_TAIL_BYTES: usize = 2048;
/// A worker's finish that did not land is tried again after this long,
/// doubling up to [`WORKER_FINISH_RETRY_MAX`] (a backend restart takes
/// seconds; a longer outage is retried about twice a minute).
pub const WORKER_FINISH_RETRY_START: Duration = Duration::from_secs(1);
pub const WORKER_FINISH_RETRY_MAX: Duration = Duration::from_secs(30);
/// The supervisor keeps trying its finish this long; past it the finish
/// stays in the worker's record and the sentinel lands it (a supervisor
/// must not linger for ever, the text must not be lost).
pub const WORKER_FINISH_PATIENCE: Duration = Duration::from_secs(15 * 60);
/// After a worker's agent exited and its tree was stopped, its output
/// pipes are read at most this much longer (what is buffered is there at
/// once; a pipe still open after the stop is held by nothing of ours).
pub const WORKER_PIPE_DRAIN: Duration = Duration::from_secs(2);
/// Of a worker agent's stdout and stderr, the last this many bytes are
/// kept (the JSON result comes last; the card takes 4,000 characters).
pub const WORKER_OUTPUT_KEEP_BYTES: usize = 1024 * 1024;
/// A worker run's hook-status projection is removed this long after its
/// end signal (`hook_status_keep_sec` in `sentinel.json`): `hoop status`
/// shows live workers only, and an hour leaves time to read why one ended.
pub const HOOK_STATUS_KEEP: Duration = Duration::from_secs(3600);
/// A patrol span whose round did not land is offered again this many times
/// (seed 000: "after two replays and an hour the first lost round's content
/// is skipped") before it may be skipped…
pub const PATROL_REPLAYS: u32 = 2;
/// …and only once this long has passed since its first failure (seed 000:
/// an hour), so a passing outage never costs findings.
pub const PATROL_SKIP_AFTER: Duration = Duration::from_secs(3600);
/// A brief names at most this many skipped spans (the newest; the count of
/// the rest), so the digest never crowds out the findings.
pub const PATROL_DIGEST_SPANS: usize = 5;
/// A prescan may print at most this much: a day of findings is kilobytes,
/// and a megabyte is some sixty briefs. More is a failed prescan (its
/// cursor is not trusted), never a silent cut that would lose findings.
pub const PATROL_OUTPUT_CAP_BYTES: usize = 1024 * 1024;
/// After a prescan exited, its output is read at most this much longer (a
/// child it left behind may hold the pipe open; its group is stopped).
pub const PATROL_DRAIN: Duration = Duration::from_secs(2);

/// A message the agent leaves with neither a reply nor a pass is offered
/// at most this many times in all (the first offer and two more): silence
/// must be possible, a forgotten message gets two reminders, and then the
/// cursor moves on with a warning in the log and the status file rather
/// than the room asking for ever.
pub const MAX_OFFERS: u32 = 3;

/// The status file keeps this many of the latest messages given up on
/// (offered [`MAX_OFFERS`] times without an answer), for `hoop status`.
pub const GAVE_UP_KEPT: usize = 20;

/// A round's instructions list at most this many characters of message
/// text (newest first, shared round-robin between the woken rooms; the
/// rest behind the `hoop read` pointer the instructions give). About 15–30k
/// tokens: a busy day stays a small part of a 200k context window, so a
/// round can never fail with "Prompt is too long" because of its own text.
pub const ROUND_TEXT_CAP_CHARS: usize = 60_000;

/// A message body longer than this is cut in the instructions (the full text
/// stays in the room): one flooded room of maximal messages cannot fill the
/// round.
pub const INSTRUCTION_BODY_CAP_CHARS: usize = 8_000;

/// File in the home holding, per room, the first-sight floor and the offer
/// counts (`state::Rooms`).
pub const ROOMS_FILE: &str = "rooms.json";

/// The journal (`<home>/journal/`, `hoop why`) keeps this many days:
/// "why didn't it answer me last week?" is still answerable, and a month
/// of a busy home is tens of megabytes.
pub const JOURNAL_KEEP_DAYS: u32 = 30;
/// The journal folder is at most this large, whatever the days say (oldest
/// days dropped first): 30 days of 10,000 events a day take about 45 MB,
/// so this only bounds a runaway (a room flooding for days) on a small disk.
pub const JOURNAL_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Journal lines waiting for the writer at most. A round writes a few
/// lines per message (a flooded room's 240 messages, about a thousand);
/// four thousand outlast a disk stalled for several rounds. A full queue
/// drops journal lines (counted), never holds up a round.
pub const JOURNAL_QUEUE: usize = 4096;
/// How much of the newest day files the daemon reads at start (the turn
/// number goes on, answered and passed messages are not written twice):
/// today's and yesterday's.
pub const JOURNAL_RECALL_DAYS: usize = 2;
