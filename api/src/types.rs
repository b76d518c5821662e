//! Wire types of the backend contract (REST bodies, WebSocket events, error
//! bodies). Shared by the clients and the reference backend so that both sides
//! of every test speak the same shapes. Ids are 64-bit integers that grow with
//! time (messages are ordered by id); see `docs/backend-contract.md`. What
//! production does not pin down decodes tolerantly ([`crate::tolerant`]):
//! ids as numbers or strings, times as seconds or RFC 3339, one bad item of
//! a list skipped by its id.

use serde::{Deserialize, Serialize};

pub use hoop_core::mention::{EveryoneTag, Mention};

pub type UserId = i64;
pub type ConversationId = i64;
pub type MessageId = i64;
pub type CardId = i64;
pub type WindowId = String;

/// Unix time in seconds.
pub type UnixSecs = i64;

// ---------------------------------------------------------------- auth

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoginRequest {
    pub email: String,
    /// The fixed one-time code of agent accounts (`123456` by convention).
    pub code: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoginResponse {
    /// A JWT; expires after 15 minutes.
    pub token: String,
    #[serde(deserialize_with = "crate::tolerant::time")]
    pub expires_at: UnixSecs,
    pub user: User,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub id: UserId,
    pub email: String,
    pub username: String,
    #[serde(default)]
    pub nickname: Option<String>,
    pub is_agent: bool,
}

// ---------------------------------------------------------------- conversations

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Conversation {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub id: ConversationId,
    /// Null or absent reads as empty (a DM may have no title).
    #[serde(default, deserialize_with = "crate::tolerant::text")]
    pub title: String,
    /// A workroom is a room where work cards are run.
    pub is_workroom: bool,
    /// Newest message id, if any.
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub latest_message_id: Option<MessageId>,
    /// How many members are agents (`is_agent`). Absent or null reads as
    /// [`AI_MEMBER_COUNT_UNKNOWN`]: a room whose count is unknown asks for
    /// an @ like a multi-AI room.
    #[serde(
        default = "ai_member_count_unknown",
        deserialize_with = "ai_member_count"
    )]
    pub ai_member_count: u32,
}

/// What an absent or null `ai_member_count` reads as: 2, so that the room
/// asks for an @ — production's doorbell treats a room whose AI count it
/// cannot learn as one that needs an @ (seed 002 L19 "查不到按要 @").
pub const AI_MEMBER_COUNT_UNKNOWN: u32 = 2;

fn ai_member_count_unknown() -> u32 {
    AI_MEMBER_COUNT_UNKNOWN
}

fn ai_member_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    Ok(Option::<u32>::deserialize(d)?.unwrap_or(AI_MEMBER_COUNT_UNKNOWN))
}

/// What an absent redeem `kind` reads as (see [`RedeemResponse::kind`]).
fn redeem_kind_default() -> String {
    "sentinel".to_string()
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Member {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub user_id: UserId,
    pub username: String,
    #[serde(default)]
    pub nickname: Option<String>,
    pub is_agent: bool,
}

/// What a message is, beyond its text. Production has text, image and voice
/// messages; any other word decodes as [`MessageKind::Unknown`] (kept, never
/// a decoding failure) and is written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum MessageKind {
    /// An ordinary chat message.
    #[default]
    Text,
    /// An image (the body is its caption).
    Image,
    /// A voice message (the body is its waveform, not text to answer).
    Voice,
    /// A kind this toolkit does not know (the word as sent).
    Unknown(String),
}

impl MessageKind {
    /// The wire word.
    pub fn as_str(&self) -> &str {
        match self {
            MessageKind::Text => "text",
            MessageKind::Image => "image",
            MessageKind::Voice => "voice",
            MessageKind::Unknown(w) => w,
        }
    }

    /// From the wire word; never fails.
    pub fn from_word(w: &str) -> MessageKind {
        match w {
            "text" => MessageKind::Text,
            "image" => MessageKind::Image,
            "voice" => MessageKind::Voice,
            other => MessageKind::Unknown(other.to_string()),
        }
    }
}

impl Serialize for MessageKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MessageKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Whatever the value is (a word, a number, null), a message is kept.
        Ok(match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(w) => MessageKind::from_word(&w),
            serde_json::Value::Null => MessageKind::Text,
            other => MessageKind::Unknown(other.to_string()),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Message {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub id: MessageId,
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub conversation_id: ConversationId,
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub sender_id: UserId,
    #[serde(default)]
    pub sender_username: String,
    /// The text (a caption for an image; a voice message's is not text to
    /// answer). Absent reads as empty.
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub mentions: Vec<Mention>,
    #[serde(default)]
    pub kind: MessageKind,
    #[serde(deserialize_with = "crate::tolerant::time")]
    pub created_at: UnixSecs,
}

/// `GET …/messages?limit=&before=` → newest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessagePage {
    /// A message that does not decode is left out (logged by its id).
    #[serde(deserialize_with = "crate::tolerant::each")]
    pub messages: Vec<Message>,
    /// Whether older messages exist before the oldest one returned.
    pub has_more: bool,
}

/// `POST /v1/conversations/{id}/text`. Production's REST route applies the
/// message rate limit and drops non-member mentions; it runs neither the
/// markdown gate nor the gap check (those live in the MCP tool
/// `chat_send_text`, and `hoop say` runs `core::gates` itself first).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct SendMessage {
    pub body: String,
    #[serde(default)]
    pub mentions: Vec<Mention>,
}

/// `POST …/images`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct SendImage {
    /// Base64 of the image bytes.
    pub data_base64: String,
    pub mime: String,
    #[serde(default)]
    pub caption: String,
}

// ---------------------------------------------------------------- presence, usage

/// `POST /v1/workrooms/heartbeat` body (`{}` or empty is a plain beat).
/// Production accepts agents only, and a reported conversation must be one
/// the account is a member of.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct HeartbeatRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// What the agent is doing now; absent (or a word this toolkit does not
    /// know) reports nothing and keeps what the backend had.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "agent_state"
    )]
    pub state: Option<AgentState>,
}

/// What a heartbeat reports the agent doing. Production's heartbeats report
/// idle (seed 002 L57 "主人心跳新鲜却报 idle") and finishing a card beats
/// idle (L19 step 7 "事务外心跳回 idle"); the field name `state` and the
/// words are [A].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// No turn is running.
    Idle,
    /// A turn is running.
    Working,
}

impl AgentState {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Idle => "idle",
            AgentState::Working => "working",
        }
    }

    /// From the wire word; `None` for a word this toolkit does not know.
    pub fn from_word(w: &str) -> Option<AgentState> {
        match w {
            "idle" => Some(AgentState::Idle),
            "working" => Some(AgentState::Working),
            _ => None,
        }
    }
}

/// An optional [`AgentState`]: null, absent or an unknown word → `None`.
fn agent_state<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<AgentState>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(w) => AgentState::from_word(&w),
        _ => None,
    })
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub next_beat_sec: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Presence {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub user_id: UserId,
    #[serde(default, deserialize_with = "crate::tolerant::opt_time")]
    pub last_beat_at: Option<UnixSecs>,
    /// Computed on read: a heartbeat within the last 3 minutes.
    pub present: bool,
    /// What the last heartbeat that said so reported; null when none did.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "agent_state"
    )]
    pub state: Option<AgentState>,
}

/// `POST /v1/workrooms/usage`: the account's CUMULATIVE totals, never a
/// turn's own numbers. Production keeps one row per agent and upserts it
/// field by field (`COALESCE(new, old)`): a null never overwrites, a negative
/// is "not reported". A field not known is null, never 0. `card_id` is not
/// part of that upsert (a card's cost comes from the snapshots taken at its
/// start and end); backends ignore it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct UsageReport {
    #[serde(default)]
    pub card_id: Option<CardId>,
    /// Full-price input tokens only.
    pub tokens_in: Option<i64>,
    /// Cache read + cache write.
    pub tokens_cached_in: Option<i64>,
    pub tokens_out: Option<i64>,
}

// ---------------------------------------------------------------- work cards

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CardStatus {
    Queued,
    Working,
    Done,
    Failed,
    Cancelled,
}

impl CardStatus {
    /// Queued or working: not finished.
    pub fn is_live(self) -> bool {
        matches!(self, CardStatus::Queued | CardStatus::Working)
    }
}

/// A work card ("task" in production). Every card lives in a workroom
/// (`conversation_id`). [A] shape beyond the production facts the contract
/// marks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Card {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub id: CardId,
    #[serde(default, deserialize_with = "crate::tolerant::text")]
    pub title: String,
    pub status: CardStatus,
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub assignee_id: Option<UserId>,
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub parent_id: Option<CardId>,
    /// The workroom the card lives in.
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub conversation_id: ConversationId,
    /// The message of that room the card was assigned from, if any.
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub message_id: Option<MessageId>,
    /// Set when the card failed.
    pub error: Option<String>,
    /// What the card's finish reported.
    #[serde(default)]
    pub result: Option<String>,
    /// The room message that carries the result, if any.
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub result_message_id: Option<MessageId>,
    /// Null until a renew opens a lease.
    #[serde(default, deserialize_with = "crate::tolerant::opt_time")]
    pub lease_expires_at: Option<UnixSecs>,
    /// What the card cost: its assignee's totals at its end (now, while it
    /// works) minus those at its start (its claim); null when either is
    /// unknown.
    pub tokens_in: Option<i64>,
    pub tokens_cached_in: Option<i64>,
    pub tokens_out: Option<i64>,
    #[serde(deserialize_with = "crate::tolerant::time")]
    pub created_at: UnixSecs,
    #[serde(deserialize_with = "crate::tolerant::time")]
    pub updated_at: UnixSecs,
}

/// `POST /v1/workrooms/{cid}/tasks`: assign a card in that room (production:
/// one transaction; the assignee must be an agent member of the room,
/// `message_id` a message of the room, at most 8 live sub-cards under a
/// parent). Without an assignee the card is queued for whoever claims it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct AssignTask {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_id: Option<UserId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<CardId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
}

/// `POST …/tasks/{id}/progress`: `{"claim":true}` claims the card
/// (production); otherwise `line` is a progress line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct TaskProgress {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub claim: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LeaseResponse {
    #[serde(deserialize_with = "crate::tolerant::time")]
    pub lease_expires_at: UnixSecs,
    pub renew_after_sec: u64,
}

/// `POST …/tasks/{id}/finish` (production's `work_task_finish(status,
/// result, result_message_id)`; `failed` needs an error text).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FinishTask {
    /// `done`, `failed` or `cancelled`.
    pub status: CardStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_message_id: Option<MessageId>,
    /// Required when `status` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FinishTask {
    /// A finish with only a status.
    pub fn status(status: CardStatus) -> FinishTask {
        FinishTask {
            status,
            result: None,
            result_message_id: None,
            error: None,
        }
    }
}

/// The finish answer: `updated` false (200, production) when the card was
/// already finished — nothing changed, and the caller must look itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FinishAnswer {
    pub updated: bool,
    /// The card after the finish (absent when nothing was updated). [A]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Card>,
}

// ---------------------------------------------------------------- windows

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct RegisterWindow {
    pub installation_id: String,
    pub machine: String,
    /// `claude-code`, `codex`, …
    pub client: String,
    pub native_session_id: String,
    pub runtime_id: String,
    #[serde(default)]
    pub rooms_hint: Vec<ConversationId>,
    #[serde(default)]
    pub fallback_hint: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RegisteredWindow {
    pub window_id: WindowId,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WindowMode {
    /// Handle exactly the listed rooms.
    Rooms,
    /// Handle everything not in `exclude`.
    Fallback,
    /// Handle nothing.
    None,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WindowSync {
    pub mode: WindowMode,
    #[serde(default, deserialize_with = "crate::tolerant::ids")]
    pub rooms: Vec<ConversationId>,
    #[serde(default, deserialize_with = "crate::tolerant::ids")]
    pub exclude: Vec<ConversationId>,
    /// Why the mode is what it is, e.g. `revoked`.
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WindowInfo {
    pub window_id: WindowId,
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub user_id: UserId,
    pub machine: String,
    pub client: String,
    pub revoked: bool,
    #[serde(default, deserialize_with = "crate::tolerant::opt_time")]
    pub last_sync_at: Option<UnixSecs>,
    /// Computed on read: synced within the last 3 minutes. Never stored.
    pub present: bool,
}

// ---------------------------------------------------------------- provisioning

/// `POST PROVISION_REDEEM`: no bearer, the key is the credential.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RedeemRequest {
    pub key: String,
    /// The home name on this machine; also the new account's username.
    pub name: String,
    #[serde(default)]
    pub machine: Option<String>,
    /// A room to join on redeem (production: optional, inside the redeem's
    /// transaction); else the room the key names, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
}

impl std::fmt::Debug for RedeemRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedeemRequest")
            .field("key", &"<redacted>")
            .field("name", &self.name)
            .field("machine", &self.machine)
            .field("conversation_id", &self.conversation_id)
            .finish()
    }
}

/// What a redeem created: always a NEW agent account.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RedeemResponse {
    pub user: User,
    /// `sentinel` (login with email + fixed code) or `reinforcement` (MCP
    /// key only). Absent reads as `sentinel`: production's redeem answers
    /// only `OK` and the account (seed 002 L33) and is the sentinel path
    /// (L31).
    #[serde(default = "redeem_kind_default")]
    pub kind: String,
    /// For sentinel accounts: the fixed one-time code.
    #[serde(default)]
    pub fixed_code: Option<String>,
    /// For reinforcement accounts: the freshly minted `hoopmcp_…` key.
    #[serde(default)]
    pub mcp_key: Option<String>,
    /// For reinforcement accounts: the ready `claude mcp add …` line.
    #[serde(default)]
    pub ready_line: Option<String>,
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub conversation_id: Option<ConversationId>,
}

impl std::fmt::Debug for RedeemResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedeemResponse")
            .field("user", &self.user)
            .field("kind", &self.kind)
            .field("mcp_key", &self.mcp_key.as_ref().map(|_| "<redacted>"))
            .field("conversation_id", &self.conversation_id)
            .finish_non_exhaustive()
    }
}

/// `POST REINFORCE_APPLICATIONS`: ask for a reinforcement account. The
/// backend appends `_aid` to `name` (production: `^[a-z][a-z0-9_]{1,19}$`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReinforceApply {
    pub name: String,
    #[serde(default)]
    pub nickname: Option<String>,
}

/// One reinforcement application; `agent_id` once approved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReinforceApplication {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub id: i64,
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub applicant_id: UserId,
    /// The account's username-to-be, with the `_aid` suffix.
    pub name: String,
    #[serde(default)]
    pub nickname: Option<String>,
    /// `pending` or `approved`.
    pub status: String,
    #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
    pub agent_id: Option<UserId>,
}

/// `POST REINFORCE_AGENT_KEY`: the new key (shown once) and the line that
/// installs it (`claude_add`, built by [`crate::mcp::claude_add_line`]).
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReinforceKey {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub agent_id: UserId,
    pub key: String,
    #[serde(deserialize_with = "crate::tolerant::time")]
    pub expires_at: UnixSecs,
    pub claude_add: String,
}

impl std::fmt::Debug for ReinforceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReinforceKey")
            .field("agent_id", &self.agent_id)
            .field("key", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// How many live MCP keys of an account a revoke ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RevokedKeys {
    #[serde(deserialize_with = "crate::tolerant::id")]
    pub user_id: UserId,
    pub revoked: u32,
}

// ---------------------------------------------------------------- errors

/// Every 4xx/5xx body, nested as production answers it:
/// `{"error": {"code": "<code>", "message": "<human text>", …}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The inside of an [`ErrorBody`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorDetail {
    /// A stable machine-readable code, e.g. `rate_limited`, `gap`, `window_not_found`.
    pub code: String,
    pub message: String,
    /// For `gap`: the newest message id now.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::tolerant::opt_id"
    )]
    pub latest_id: Option<MessageId>,
    /// For `gap`: the messages newer than `expect_latest_id`, newest first
    /// (empty for a key without read scope: it learns only `unread_count`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::tolerant::each"
    )]
    pub unread: Vec<Message>,
    /// For `gap`: how many messages are unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread_count: Option<u32>,
    /// For 429s: seconds to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_sec: Option<u64>,
    /// For a card that was created but could not be claimed (production's
    /// `work_task_start` is two transactions): the queued orphan to finish.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::tolerant::opt_id"
    )]
    pub task_id: Option<CardId>,
}

impl ErrorBody {
    /// A body with only a code and a message.
    pub fn new(code: &str, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: code.to_string(),
                message: message.into(),
                latest_id: None,
                unread: Vec::new(),
                unread_count: None,
                retry_after_sec: None,
                task_id: None,
            },
        }
    }
}

/// Stable error codes.
pub mod codes {
    pub const BAD_REQUEST: &str = "bad_request";
    pub const UNAUTHORIZED: &str = "unauthorized";
    pub const FORBIDDEN: &str = "forbidden";
    pub const NOT_FOUND: &str = "not_found";
    pub const NOT_MEMBER: &str = "not_member";
    pub const MARKDOWN_REFUSED: &str = "markdown_refused";
    pub const BODY_TOO_LONG: &str = "body_too_long";
    pub const GAP: &str = "gap";
    pub const RATE_LIMITED: &str = "rate_limited";
    /// Claiming a second top-level card while one is working (production).
    pub const AGENT_BUSY: &str = "agent_busy";
    /// Claiming a card that is not queued (production, seed 002 L83).
    pub const NOT_CLAIMABLE: &str = "not_claimable";
    /// A gated action without the caller's own working card of that room
    /// (production's card gate; this toolkit never calls a gated action).
    pub const NEED_TASK_CARD: &str = "need_task_card";
    pub const TOO_MANY_SUBCARDS: &str = "too_many_subcards";
    pub const NOT_WORKING: &str = "not_working";
    pub const INVALID_TRANSITION: &str = "invalid_transition";
    pub const ERROR_REQUIRED: &str = "error_required";
    pub const WINDOW_NOT_FOUND: &str = "window_not_found";
    pub const KEY_INVALID: &str = "key_invalid";
    pub const PAYLOAD_TOO_LARGE: &str = "payload_too_large";
    /// A unique field (email, username, home name on a machine) is taken.
    pub const CONFLICT: &str = "conflict";
    /// The route exists but not with this HTTP method.
    pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
    /// The server failed; nothing was written.
    pub const INTERNAL: &str = "internal";

    /// Every code above, for finding one in a refusal's text.
    pub const ALL: &[&str] = &[
        BAD_REQUEST,
        UNAUTHORIZED,
        FORBIDDEN,
        NOT_FOUND,
        NOT_MEMBER,
        MARKDOWN_REFUSED,
        BODY_TOO_LONG,
        GAP,
        RATE_LIMITED,
        AGENT_BUSY,
        NOT_CLAIMABLE,
        NEED_TASK_CARD,
        TOO_MANY_SUBCARDS,
        NOT_WORKING,
        INVALID_TRANSITION,
        ERROR_REQUIRED,
        WINDOW_NOT_FOUND,
        KEY_INVALID,
        PAYLOAD_TOO_LARGE,
        CONFLICT,
        METHOD_NOT_ALLOWED,
        INTERNAL,
        // Production's card gate (seed 002 L7 §0.6).
        "task_card_mismatch",
    ];

    /// The code a status means when a refusal's text names none.
    pub fn for_status(status: u16) -> &'static str {
        match status {
            401 => UNAUTHORIZED,
            403 => FORBIDDEN,
            404 => NOT_FOUND,
            405 => METHOD_NOT_ALLOWED,
            409 => CONFLICT,
            413 => PAYLOAD_TOO_LARGE,
            429 => RATE_LIMITED,
            500..=599 => INTERNAL,
            _ => BAD_REQUEST,
        }
    }
}

// ---------------------------------------------------------------- MCP tools

/// Arguments and results of the MCP tools (`tools/call`). A tool's result is
/// returned both as `structuredContent` and as the JSON text of its single
/// `text` content item; a refused call has `isError: true` and an
/// [`ErrorBody`] as its structured content.
pub mod mcp {
    use serde::{Deserialize, Serialize};

    use super::{Card, CardId, Conversation, ConversationId, Member, Mention, Message, MessageId};

    pub const CHAT_LIST: &str = "chat_list";
    pub const CHAT_READ: &str = "chat_read";
    pub const CHAT_MEMBERS: &str = "chat_members";
    pub const CHAT_SEND_TEXT: &str = "chat_send_text";
    pub const CHAT_SEND_IMAGE: &str = "chat_send_image";
    pub const WORK_TASKS: &str = "work_tasks";
    pub const WORK_BEAT: &str = "work_beat";
    pub const WORK_TASK_START: &str = "work_task_start";
    pub const WORK_TASK_TAKE: &str = "work_task_take";
    pub const WORK_TASK_PROGRESS: &str = "work_task_progress";
    pub const WORK_TASK_LEASE: &str = "work_task_lease";
    pub const WORK_TASK_FINISH: &str = "work_task_finish";
    pub const WINDOW_REGISTER: &str = "window_register";
    pub const WINDOW_SYNC: &str = "window_sync";

    /// `chat_list` → the caller's conversations.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
    pub struct ChatList {
        #[serde(deserialize_with = "crate::tolerant::each")]
        pub conversations: Vec<Conversation>,
    }

    /// `chat_read` arguments: `limit` 1–50, default 20; `before` pages back.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct ChatReadArgs {
        pub conversation_id: ConversationId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub limit: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub before: Option<MessageId>,
        /// Include deleted messages (production's default: true).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub with_deleted: Option<bool>,
    }

    /// `chat_read` → newest first.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
    pub struct ChatRead {
        #[serde(deserialize_with = "crate::tolerant::id")]
        pub conversation_id: ConversationId,
        /// A message that does not decode is left out (logged by its id).
        #[serde(deserialize_with = "crate::tolerant::each")]
        pub messages: Vec<Message>,
        pub count: usize,
        /// Always `newest_first`.
        pub order: String,
        /// `created_at` of the oldest message returned; null when none.
        #[serde(default, deserialize_with = "crate::tolerant::opt_time")]
        pub oldest_created_at: Option<i64>,
        /// Older messages exist beyond the ones returned.
        pub truncated: bool,
    }

    /// `chat_members` → the conversation's members.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
    pub struct ChatMembers {
        #[serde(deserialize_with = "crate::tolerant::id")]
        pub conversation_id: ConversationId,
        #[serde(deserialize_with = "crate::tolerant::each")]
        pub members: Vec<Member>,
    }

    /// `chat_send_text` arguments (the result is the stored [`Message`]).
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct ChatSendTextArgs {
        pub conversation_id: ConversationId,
        pub body: String,
        #[serde(default)]
        pub mentions: Vec<Mention>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub expect_latest_id: Option<MessageId>,
        /// Skips BOTH gates (markdown and gap).
        #[serde(default)]
        pub force: bool,
    }

    /// `chat_send_image` arguments (the result is the stored [`Message`]).
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct ChatSendImageArgs {
        pub conversation_id: ConversationId,
        pub data_base64: String,
        pub mime: String,
        #[serde(default)]
        pub caption: String,
    }

    /// `work_tasks` arguments: the caller's cards, optionally one status.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct WorkTasksArgs {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<super::CardStatus>,
    }

    /// `work_tasks` → the caller's cards, newest first.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
    pub struct WorkTasks {
        #[serde(deserialize_with = "crate::tolerant::each")]
        pub cards: Vec<Card>,
    }

    /// `work_task_start(conversation_id, title, message_id)` (production
    /// names; `parent_id` [A]): assign a card to the caller in that room,
    /// then claim it — two transactions, so a refused claim leaves the
    /// queued card and the error carries its `task_id`. Result: [`Card`].
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct WorkTaskStartArgs {
        pub conversation_id: ConversationId,
        pub title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub message_id: Option<MessageId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub parent_id: Option<CardId>,
    }

    /// `work_task_take` (production name, seed 002 L83): claim a queued
    /// card; `work_task_lease` takes the same. Result: [`Card`] /
    /// [`super::LeaseResponse`].
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct TaskIdArgs {
        pub task_id: CardId,
    }

    /// `work_task_progress(line)` (production name): extends the lease and
    /// beats. Result: [`Card`].
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct WorkTaskProgressArgs {
        pub task_id: CardId,
        pub line: String,
    }

    /// `work_task_finish(status, result, result_message_id)` (production
    /// names; `error` for `failed` [A]). Result: [`super::FinishAnswer`].
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
    pub struct WorkTaskFinishArgs {
        pub task_id: CardId,
        pub status: super::CardStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result_message_id: Option<MessageId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
    }

    /// `window_sync` arguments. Result: [`super::WindowSync`].
    /// (`window_register` takes [`super::RegisterWindow`] and answers
    /// [`super::RegisteredWindow`].)
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
    pub struct WindowSyncArgs {
        pub window_id: super::WindowId,
    }
}

// ---------------------------------------------------------------- WebSocket

/// A server → client WebSocket frame (JSON text).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type")]
pub enum WsEvent {
    /// Sent once after the upgrade: the connection is authenticated.
    #[serde(rename = "hello")]
    Hello {
        #[serde(deserialize_with = "crate::tolerant::id")]
        user_id: UserId,
    },
    /// A message in a conversation the account is a member of.
    #[serde(rename = "message.new")]
    MessageNew {
        #[serde(deserialize_with = "crate::tolerant::id")]
        conversation_id: ConversationId,
        message: Message,
    },
    /// Re-pull everything.
    #[serde(rename = "workroom.task.recheck")]
    TaskRecheck {
        #[serde(default, deserialize_with = "crate::tolerant::opt_id")]
        conversation_id: Option<ConversationId>,
    },
    /// A provisioning key waits for this account.
    #[serde(rename = "provision.pending")]
    ProvisionPending {},
    /// An event type this toolkit does not know: skipped, never an error.
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_events_are_tagged_by_type() {
        let e: WsEvent = serde_json::from_str(r#"{"type":"workroom.task.recheck"}"#).unwrap();
        assert_eq!(
            e,
            WsEvent::TaskRecheck {
                conversation_id: None
            }
        );
        let e: WsEvent = serde_json::from_str(r#"{"type":"provision.pending"}"#).unwrap();
        assert_eq!(e, WsEvent::ProvisionPending {});
        let e: WsEvent = serde_json::from_str(r#"{"type":"typing","user_id":3}"#).unwrap();
        assert_eq!(e, WsEvent::Unknown);
    }

    /// Production may send what the reference backend does not: ids as
    /// strings, times as RFC 3339, a null title, no AI count, a redeem
    /// answer without `kind`. Each decodes (table per field).
    #[test]
    fn production_shapes_decode_tolerantly() {
        let c: Conversation = serde_json::from_str(
            r#"{"id": "12", "title": null, "is_workroom": false, "latest_message_id": "40"}"#,
        )
        .unwrap();
        assert_eq!(
            (
                c.id,
                c.title.as_str(),
                c.latest_message_id,
                c.ai_member_count
            ),
            (12, "", Some(40), AI_MEMBER_COUNT_UNKNOWN)
        );
        let c: Conversation =
            serde_json::from_str(r#"{"id": 12, "is_workroom": true, "ai_member_count": null}"#)
                .unwrap();
        assert_eq!((c.title.as_str(), c.ai_member_count), ("", 2));
        // A count that is there is kept, 0 and 1 included.
        for n in [0u32, 1, 3] {
            let c: Conversation = serde_json::from_value(serde_json::json!({
                "id": 1, "title": "t", "is_workroom": false, "ai_member_count": n
            }))
            .unwrap();
            assert_eq!(c.ai_member_count, n);
        }
        let m: Message = serde_json::from_str(
            r#"{"id": "9", "conversation_id": "12", "sender_id": "3",
                "created_at": "2023-11-14T22:13:20Z"}"#,
        )
        .unwrap();
        assert_eq!(
            (m.id, m.conversation_id, m.sender_id, m.created_at),
            (9, 12, 3, 1_700_000_000)
        );
        let r: RedeemResponse = serde_json::from_str(
            r#"{"user": {"id": "5", "email": "k@x", "username": "kai", "is_agent": true}}"#,
        )
        .unwrap();
        assert_eq!((r.kind.as_str(), r.user.id), ("sentinel", 5));
        let r: RedeemResponse = serde_json::from_str(
            r#"{"user": {"id": 5, "email": "k@x", "username": "kai", "is_agent": true},
                "kind": "reinforcement"}"#,
        )
        .unwrap();
        assert_eq!(r.kind, "reinforcement");
        let card: Card = serde_json::from_str(
            r#"{"id": "4", "title": null, "status": "working", "assignee_id": "5",
                "parent_id": null, "conversation_id": "12", "error": null,
                "lease_expires_at": "2023-11-14T22:14:20Z", "tokens_in": null,
                "tokens_cached_in": null, "tokens_out": null,
                "created_at": 1700000000, "updated_at": "1700000001"}"#,
        )
        .unwrap();
        assert_eq!(
            (
                card.id,
                card.assignee_id,
                card.lease_expires_at,
                card.updated_at
            ),
            (4, Some(5), Some(1_700_000_060), 1_700_000_001)
        );
        let w: WindowSync =
            serde_json::from_str(r#"{"mode": "rooms", "rooms": ["1", 2], "exclude": null}"#)
                .unwrap();
        assert_eq!((w.rooms, w.exclude), (vec![1, 2], vec![]));
        let e: WsEvent = serde_json::from_str(
            r#"{"type": "message.new", "conversation_id": "1", "message": {"id": 2,
                "conversation_id": 1, "sender_id": 3, "created_at": 0}}"#,
        )
        .unwrap();
        assert!(matches!(
            e,
            WsEvent::MessageNew {
                conversation_id: 1,
                ..
            }
        ));
        // Written back as numbers, as the reference backend answers.
        assert_eq!(serde_json::to_value(&c).unwrap()["id"], 12);
    }

    /// One message that does not decode is left out of its page; every
    /// other message of the page is kept, each by its id.
    #[test]
    fn one_undecodable_message_does_not_lose_the_page() {
        let page: MessagePage = serde_json::from_str(
            r#"{"messages": [
                {"id": 5, "conversation_id": 1, "sender_id": 2, "body": "a", "created_at": 0},
                {"id": 4, "conversation_id": 1, "sender_id": "not-a-user", "created_at": 0},
                {"id": 3, "conversation_id": 1, "sender_id": 2, "body": "c", "created_at": "later"},
                {"id": 2, "conversation_id": 1, "sender_id": 2, "body": "d", "created_at": 0}
            ], "has_more": true}"#,
        )
        .unwrap();
        let ids: Vec<i64> = page.messages.iter().map(|m| m.id).collect();
        assert_eq!(ids, [5, 2]);
        assert!(page.has_more);
        let read: mcp::ChatRead = serde_json::from_str(
            r#"{"conversation_id": 1, "messages": [
                {"id": 7, "conversation_id": 1, "sender_id": 2, "created_at": 0},
                {"id": 6}
            ], "count": 2, "order": "newest_first", "oldest_created_at": null,
            "truncated": false}"#,
        )
        .unwrap();
        let ids: Vec<i64> = read.messages.iter().map(|m| m.id).collect();
        assert_eq!(ids, [7]);
        let list: mcp::ChatList = serde_json::from_str(
            r#"{"conversations": [
                {"id": 1, "title": "a", "is_workroom": false},
                {"id": 2, "title": "b", "is_workroom": "maybe"},
                {"id": 3, "title": null, "is_workroom": true, "ai_member_count": 1}
            ]}"#,
        )
        .unwrap();
        let ids: Vec<i64> = list.conversations.iter().map(|c| c.id).collect();
        assert_eq!(ids, [1, 3]);
    }

    /// A page with a voice message, an unknown kind, unknown mention
    /// elements and unknown fields is read whole: each message kept.
    #[test]
    fn a_page_decodes_whatever_production_adds() {
        let page: MessagePage = serde_json::from_str(
            r#"{"messages": [
                {"id": 3, "conversation_id": 1, "sender_id": 2, "sender_username": "a",
                 "body": "", "kind": "voice", "created_at": 0, "waveform": [1, 2]},
                {"id": 2, "conversation_id": 1, "sender_id": 2, "sender_username": "a",
                 "body": "x", "kind": "sticker", "mentions": [{"user_id": 7}, 7, "all"],
                 "created_at": 0, "deleted_at": null},
                {"id": 1, "conversation_id": 1, "sender_id": 2, "sender_username": "a",
                 "body": "y", "kind": 5, "created_at": 0}
            ], "has_more": false, "cursor": "abc"}"#,
        )
        .unwrap();
        let got: Vec<(i64, MessageKind, usize)> = page
            .messages
            .iter()
            .map(|m| (m.id, m.kind.clone(), m.mentions.len()))
            .collect();
        assert_eq!(
            got,
            [
                (3, MessageKind::Voice, 0),
                (2, MessageKind::Unknown("sticker".into()), 3),
                (1, MessageKind::Unknown("5".into()), 0)
            ]
        );
        assert_eq!(page.messages[1].mentions[1], Mention::User(7));
        // The word is written back as it came.
        assert_eq!(
            serde_json::to_value(&page.messages[1].kind).unwrap(),
            "sticker"
        );
    }
}
