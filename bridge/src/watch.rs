//! The watcher: the shell around the pure cores. One [`Watcher::round`] is
//! what the seed's doorbell does every 5 s: window sync when due (30 s),
//! `chat_list`, `chat_read limit 10` for each room whose entry changed,
//! `work_tasks` every 6th round, `work_beat` every 12th. Every id is
//! remembered and the room's baseline advanced, and the state written,
//! BEFORE the round's events are handed back for printing; rooms this
//! window does not handle still advance.
//!
//! Time comes from the injected [`Clock`]; the caller decides when the next
//! round runs (5 s polling, or an event on the push stream).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hoop_api::types::mcp::{
    self as t, ChatList, ChatMembers, ChatRead, ChatReadArgs, WindowSyncArgs, WorkTasks,
    WorkTasksArgs,
};
use hoop_api::types::{
    ConversationId, HeartbeatResponse, Member, MessageId, RegisterWindow, RegisteredWindow, UserId,
    WindowSync,
};
use hoop_api::{Error as ApiError, McpClient, McpConfig};
use serde_json::json;

use crate::clock::Clock;
use crate::config::{Allowlist, Endpoint};
use crate::constants::{
    BEAT_EVERY_ROUNDS, MEMBERS_TTL, READ_LIMIT, READ_PAGE_LIMIT, READ_PAGES_MAX,
    TASKS_EVERY_ROUNDS, WINDOW_SYNC_INTERVAL,
};
use crate::detect::{self, Account, Event, RoomView};
use crate::health::Health;
use crate::state::State;
use crate::window::{self, Assignment, Local, SyncOutcome};

/// The one line printed when the key is refused.
pub const KEY_REJECTED: &str = "key rejected (expired, revoked or account disabled?)";

/// Which calls a round makes besides the window sync (which runs whenever
/// 30 s have passed). Polling: `chat_list` every round, `work_tasks` every
/// 6th, `work_beat` every 12th; push: what the event or the schedule asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plan {
    pub list: bool,
    pub tasks: bool,
    pub beat: bool,
}

impl Plan {
    /// The polling plan of round `n` (0-based).
    pub fn polling(n: u64) -> Plan {
        Plan {
            list: true,
            tasks: n.is_multiple_of(TASKS_EVERY_ROUNDS),
            beat: n.is_multiple_of(BEAT_EVERY_ROUNDS),
        }
    }
}

/// Why the watcher stops for good.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stop {
    /// 401/403: the key is expired, revoked or the account disabled.
    #[error("{KEY_REJECTED}")]
    KeyRejected,
}

/// Why a watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("state file: {0}")]
    State(String),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// Everything one window's watcher needs.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub endpoint: Endpoint,
    /// The account's user id (whose messages never ring, whose mentions do).
    pub me: UserId,
    /// What `window_register` sends.
    pub register: RegisterWindow,
    /// `--rooms`: the local rule's rooms while never synced.
    pub local_rooms: Vec<ConversationId>,
    pub state_path: PathBuf,
    /// The machine's claims file (`{"<room>": pid}`), re-read every round.
    pub claims_path: Option<PathBuf>,
    pub allowlist: Allowlist,
}

/// Whether an error means the key was refused. A tool call refused with
/// 403 `not_member` (production's MCP text carries the API's status, seed
/// 002 L51) is about one room, not the key.
pub fn key_rejected(e: &ApiError) -> bool {
    match e {
        ApiError::Unauthorized { .. } => true,
        ApiError::Refused {
            status: 403, code, ..
        } => code != hoop_api::types::codes::NOT_MEMBER,
        _ => false,
    }
}

pub struct Watcher {
    mcp: McpClient,
    cfg: WatchConfig,
    clock: Arc<dyn Clock>,
    state: State,
    first_start: bool,
    rounds: u64,
    assignment: Assignment,
    claimed: HashSet<ConversationId>,
    last_sync: Option<Duration>,
    health: Health,
    members: HashMap<ConversationId, (Duration, Vec<Member>)>,
    /// Each room's title as last listed (the overflow line names rooms).
    titles: BTreeMap<ConversationId, String>,
    /// Rooms whose backlog this round went past [`READ_PAGES_MAX`] reads.
    unread: BTreeSet<ConversationId>,
    /// The oldest message the event stream delivered per room since the
    /// last listing: a room seen for the first time keeps these.
    streamed: BTreeMap<ConversationId, MessageId>,
    /// Rooms first seen by a listing with no streamed message to witness the
    /// join, and the baseline that listing took. A streamed message at or
    /// below it (the listing won the race against the stream) lowers the
    /// baseline to just before it, once.
    unwitnessed: BTreeMap<ConversationId, MessageId>,
    /// Whether the start report (which rooms this window rings for) was
    /// given.
    reported: bool,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("cfg", &self.cfg)
            .field("rounds", &self.rounds)
            .field("assignment", &self.assignment)
            .finish_non_exhaustive()
    }
}

impl Watcher {
    pub fn new(cfg: WatchConfig, clock: Arc<dyn Clock>) -> Result<Watcher, StartError> {
        let mcp = McpClient::new(McpConfig::new(
            cfg.endpoint.base_url.clone(),
            cfg.endpoint.key.clone(),
        ))?;
        let loaded = State::load(&cfg.state_path).map_err(StartError::State)?;
        Ok(Watcher {
            mcp,
            first_start: loaded.is_none(),
            state: loaded.unwrap_or_default(),
            cfg,
            clock,
            rounds: 0,
            assignment: Assignment::NeverSynced,
            claimed: HashSet::new(),
            last_sync: None,
            health: Health::default(),
            members: HashMap::new(),
            titles: BTreeMap::new(),
            unread: BTreeSet::new(),
            streamed: BTreeMap::new(),
            unwitnessed: BTreeMap::new(),
            reported: false,
        })
    }

    /// The assignment in force (for status output and tests).
    pub fn assignment(&self) -> &Assignment {
        &self.assignment
    }

    /// The injected clock's now.
    pub fn now(&self) -> Duration {
        self.clock.now()
    }

    /// The endpoint (the push stream connects with the same key).
    pub fn endpoint(&self) -> &Endpoint {
        &self.cfg.endpoint
    }

    /// What the watcher remembers (baselines, dedup memory, cards).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The MCP client (the push path and the channel share it).
    pub fn mcp(&self) -> &McpClient {
        &self.mcp
    }

    fn local(&self) -> Local {
        Local {
            rooms: self.cfg.local_rooms.clone(),
            claimed_by_others: self.claimed.clone(),
        }
    }

    /// The event stream delivered message `id` of `room`.
    pub fn heard(&mut self, room: ConversationId, id: MessageId) {
        let oldest = self.streamed.entry(room).or_insert(id);
        *oldest = (*oldest).min(id);
    }

    /// Does this window answer for `room` now?
    pub fn handles(&self, room: ConversationId) -> bool {
        window::handles(&self.assignment, &self.local(), room)
    }

    fn refresh_claims(&mut self) {
        let Some(p) = &self.cfg.claims_path else {
            return;
        };
        let text = std::fs::read_to_string(p).unwrap_or_default();
        self.claimed = crate::config::claimed_by_others(&text, std::process::id(), pid_alive);
    }

    /// `window_register`; the id is kept in the state. A failure leaves the
    /// window unregistered until the next sync time.
    async fn register(&mut self) -> Result<(), Stop> {
        match self
            .mcp
            .call::<_, RegisteredWindow>(t::WINDOW_REGISTER, &self.cfg.register)
            .await
        {
            Ok(r) => {
                tracing::info!(window_id = %r.window_id, "window registered");
                self.state.window_id = Some(r.window_id);
                Ok(())
            }
            Err(e) if key_rejected(&e) => Err(Stop::KeyRejected),
            Err(e) => {
                tracing::warn!(error = %e, "window_register failed; trying again at the next sync");
                self.state.window_id = None;
                Ok(())
            }
        }
    }

    async fn sync_once(&mut self) -> Result<SyncOutcome, Stop> {
        let Some(id) = self.state.window_id.clone() else {
            return Ok(SyncOutcome::Failed);
        };
        match self
            .mcp
            .call::<_, WindowSync>(t::WINDOW_SYNC, &WindowSyncArgs { window_id: id })
            .await
        {
            Ok(s) => Ok(SyncOutcome::Ok(s)),
            Err(ApiError::NotFound { .. }) => Ok(SyncOutcome::NotFound),
            Err(e) if key_rejected(&e) => Err(Stop::KeyRejected),
            Err(e) => {
                tracing::warn!(error = %e, "window_sync failed; keeping the last assignment");
                Ok(SyncOutcome::Failed)
            }
        }
    }

    /// Register when needed, sync, and on 404 register again and sync once
    /// more.
    async fn sync(&mut self, now: Duration) -> Result<(), Stop> {
        self.last_sync = Some(now);
        if self.state.window_id.is_none() || self.rounds == 0 {
            // At start the registration is always sent (an upsert: same
            // window, fresh runtime id).
            self.register().await?;
        }
        for _ in 0..2 {
            let outcome = self.sync_once().await?;
            let (a, reregister) = window::after_sync(&self.assignment, outcome);
            if a != self.assignment {
                tracing::info!(assignment = ?a, "window assignment");
            }
            self.assignment = a;
            if !reregister {
                break;
            }
            tracing::info!("window unknown to the backend; registering again");
            self.state.window_id = None;
            self.register().await?;
        }
        Ok(())
    }

    async fn members(&mut self, room: ConversationId) -> Option<Vec<Member>> {
        let now = self.clock.now();
        if let Some((at, ms)) = self.members.get(&room)
            && now.saturating_sub(*at) < MEMBERS_TTL
        {
            return Some(ms.clone());
        }
        match self
            .mcp
            .call::<_, ChatMembers>(t::CHAT_MEMBERS, &json!({"conversation_id": room}))
            .await
        {
            Ok(m) => {
                self.members.insert(room, (now, m.members.clone()));
                Some(m.members)
            }
            Err(e) => {
                tracing::warn!(room, error = %e, "chat_members failed; the room requires a mention");
                self.members.remove(&room);
                None
            }
        }
    }

    /// A call failed: key refused stops; anything else counts toward down.
    fn failed(&mut self, e: ApiError, what: &str) -> Result<Option<Event>, Stop> {
        if key_rejected(&e) {
            return Err(Stop::KeyRejected);
        }
        tracing::warn!(error = %e, what, "backend call failed");
        Ok(self.health.failed(self.clock.now()))
    }

    fn save(&self) {
        if let Err(e) = self.state.save(&self.cfg.state_path) {
            // The lines are still printed: a missed save can ring again
            // after a restart, never lose a message.
            tracing::error!(path = %self.cfg.state_path.display(), error = %e, "cannot write the bridge state");
        }
    }

    /// One polling round. The events are capped (20 + one overflow line)
    /// and the state is already written when they are returned.
    pub async fn round(&mut self) -> Result<Vec<Event>, Stop> {
        self.round_with(Plan::polling(self.rounds)).await
    }

    /// One round with the calls `plan` asks for (and the window sync when
    /// due). Same detection whatever the plan: rooms whose list entry
    /// changed are read, filtered and remembered the same way.
    pub async fn round_with(&mut self, plan: Plan) -> Result<Vec<Event>, Stop> {
        let now = self.clock.now();
        let mut events = vec![];
        self.refresh_claims();
        if self
            .last_sync
            .is_none_or(|t| now.saturating_sub(t) >= WINDOW_SYNC_INTERVAL)
        {
            self.sync(now).await?;
        }
        if !self.reported {
            self.reported = true;
            let r = window::rings_for(&self.assignment, &self.local());
            eprintln!("hoop bridge: {}", r.text);
            if r.none {
                events.push(Event::notice("no_rooms", r.text));
            }
        }
        self.rounds += 1;
        self.unread.clear();
        if plan.list {
            self.list_and_read(&mut events).await?;
        }
        if plan.tasks {
            match self
                .mcp
                .call::<_, WorkTasks>(t::WORK_TASKS, &WorkTasksArgs::default())
                .await
            {
                Ok(w) => {
                    events.extend(self.health.ok());
                    events.extend(self.take_cards(&w));
                }
                Err(e) => events.extend(self.failed(e, "work_tasks")?),
            }
        }
        if plan.beat {
            match self
                .mcp
                .call::<_, HeartbeatResponse>(t::WORK_BEAT, &json!({}))
                .await
            {
                Ok(_) => events.extend(self.health.ok()),
                Err(e) => events.extend(self.failed(e, "work_beat")?),
            }
        }
        self.save();
        Ok(detect::cap(events, &self.titles, &self.unread))
    }

    /// `chat_list`, then each changed room read (the first start only takes
    /// a baseline).
    async fn list_and_read(&mut self, events: &mut Vec<Event>) -> Result<(), Stop> {
        let list = match self.mcp.call::<_, ChatList>(t::CHAT_LIST, &json!({})).await {
            Ok(l) => l,
            Err(e) => {
                events.extend(self.failed(e, "chat_list")?);
                return Ok(());
            }
        };
        events.extend(self.health.ok());
        for c in &list.conversations {
            self.titles.insert(c.id, c.title.clone());
        }
        if self.first_start {
            // First start: a baseline only, no backlog.
            for c in &list.conversations {
                self.state.advance(c.id, c.latest_message_id.unwrap_or(0));
            }
            self.first_start = false;
            return Ok(());
        }
        let streamed = std::mem::take(&mut self.streamed);
        for (room, first) in &streamed {
            // The stream delivered a message of a room a listing baselined
            // without a witness: the join came before that message, so it
            // and everything after it are new (dedup keeps what rang).
            if let Some(base) = self.unwitnessed.remove(room)
                && *first <= base
            {
                tracing::info!(
                    room,
                    base = first - 1,
                    "new room: baseline lowered to the first streamed message"
                );
                self.state.rooms.insert(*room, first - 1);
            }
        }
        for c in &list.conversations {
            if !self.state.rooms.contains_key(&c.id) {
                // A room seen for the first time after start (the account
                // was just added to it): a baseline like the first start,
                // its history never rings (seed 002 L19: never replay old
                // messages). What the event stream delivered for it came
                // after the join and still rings; polling has no such
                // witness and takes the newest message as the baseline.
                let base = match streamed.get(&c.id) {
                    Some(first) => first - 1,
                    None => {
                        let base = c.latest_message_id.unwrap_or(0);
                        self.unwitnessed.insert(c.id, base);
                        base
                    }
                };
                tracing::info!(room = c.id, base, "new room: baseline taken");
                self.state.advance(c.id, base);
            }
        }
        for room in detect::changed_rooms(&list.conversations, &self.state.rooms) {
            let title = list
                .conversations
                .iter()
                .find(|c| c.id == room)
                .map(|c| c.title.clone())
                .unwrap_or_default();
            match self.read_room(room, &title).await {
                Ok(evs) => events.extend(evs),
                Err(e) => events.extend(self.failed(e, "chat_read")?),
            }
        }
        Ok(())
    }

    /// Read one changed room: remember and advance over every new message,
    /// then the ones that pass the filters become events.
    async fn read_room(
        &mut self,
        room: ConversationId,
        title: &str,
    ) -> Result<Vec<Event>, ApiError> {
        let baseline = self.state.rooms.get(&room).copied().unwrap_or(0);
        let mut messages = vec![];
        let mut limit = READ_LIMIT;
        let mut before = None;
        for _ in 0..READ_PAGES_MAX {
            let read: ChatRead = self
                .mcp
                .call(
                    t::CHAT_READ,
                    &ChatReadArgs {
                        conversation_id: room,
                        limit: Some(limit),
                        before,
                        ..ChatReadArgs::default()
                    },
                )
                .await?;
            messages.extend(read.messages);
            before = messages.last().map(|m| m.id).filter(|&oldest| {
                // More pages only while the answer says older ones exist
                // and the baseline is not reached yet.
                read.truncated && oldest > baseline + 1
            });
            if before.is_none() {
                break;
            }
            limit = READ_PAGE_LIMIT;
        }
        if before.is_some() {
            tracing::warn!(room, "more new messages than one round reads");
            self.unread.insert(room);
        }
        let fresh: Vec<_> = detect::fresh(&messages, baseline, |id| self.state.seen(id))
            .into_iter()
            .cloned()
            .collect();
        for m in &fresh {
            self.state.remember(room, m.id);
        }
        if let Some(newest) = messages.iter().map(|m| m.id).max() {
            self.state.advance(room, newest);
        }
        let handled = self.handles(room);
        if !handled || fresh.iter().all(|m| m.sender_id == self.cfg.me) {
            return Ok(vec![]);
        }
        let members = self.members(room).await;
        let my_name = members
            .as_ref()
            .and_then(|ms| ms.iter().find(|m| m.user_id == self.cfg.me))
            .map(|m| m.username.clone());
        let account = Account {
            id: self.cfg.me,
            only_mention: self
                .cfg
                .allowlist
                .only_mention(self.cfg.me, my_name.as_deref()),
        };
        let view = RoomView {
            handled,
            members: members.as_deref(),
            title,
        };
        Ok(fresh
            .iter()
            .filter_map(|m| {
                detect::classify(m, &view, &account).map(|k| detect::message_event(m, k, title))
            })
            .collect())
    }

    fn take_cards(&mut self, w: &WorkTasks) -> Vec<Event> {
        let known = self.state.cards.clone();
        let (evs, marks) = detect::card_events(&w.cards, &known.clone().unwrap_or_default());
        self.state.cards = Some(marks);
        if known.is_none() {
            return vec![];
        }
        evs.into_iter()
            // A card lives in a workroom: the room's window takes it.
            .filter(|(_, c)| self.handles(c.conversation_id))
            .map(|(k, c)| detect::card_event(k, c))
            .collect()
    }
}

/// Is the process alive (a signal-0 probe; "not permitted" is alive too)?
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => !zombie(raw),
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

/// A process that has exited but whose parent has not collected it yet
/// answers signal 0, yet holds nothing (its files, locks are closed): dead
/// for every purpose here. Known where `/proc` exists; elsewhere "no".
fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod key_rejected_tests {
    use super::*;

    /// A refused key stops the bridge; a tool refused for one room (403
    /// `not_member`, as production's MCP text carries it) does not.
    #[test]
    fn key_rejected_table() {
        let refused = |status, code: &str| ApiError::Refused {
            status,
            code: code.into(),
            message: "m".into(),
        };
        let cases = [
            (
                ApiError::Unauthorized {
                    message: "m".into(),
                },
                true,
            ),
            (refused(403, "key_invalid"), true),
            (refused(403, "forbidden"), true),
            (refused(403, "not_member"), false),
            (refused(409, "agent_busy"), false),
            (ApiError::Transport("down".into()), false),
        ];
        for (e, want) in cases {
            assert_eq!(key_rejected(&e), want, "{e:?}");
        }
    }
}
