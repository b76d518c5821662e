//! Wire types of the backend contract (REST bodies, WebSocket events, error
//! bodies). Shared by the clients and the reference backend so that both sides
//! of every test speak the same shapes. Ids are 64-bit integers that grow with
//! time (messages are ordered by id); see `docs/backend-contract.md`.

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
    pub expires_at: UnixSecs,
    pub user: User,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
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
    pub id: ConversationId,
    pub title: String,
    /// A workroom is a room where work cards are run.
    pub is_workroom: bool,
    /// Newest message id, if any.
    #[serde(default)]
    pub latest_message_id: Option<MessageId>,
    /// How many members are agents (`is_agent`).
    pub ai_member_count: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Member {
    pub user_id: UserId,
    pub username: String,
    #[serde(default)]
    pub nickname: Option<String>,
    pub is_agent: bool,
}

/// What a message is, beyond its text.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// An ordinary chat message.
    #[default]
    Text,
    /// An image (the body is its caption).
    Image,
    /// A status broadcast (e.g. "working on card 12"); an agent's own status
    /// broadcast as the newest message does not count as "I spoke last".
    Status,
    /// A failure report ("⚠️ this round failed…", an obituary). No gate ever
    /// blocks one.
    Failure,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Message {
    pub id: MessageId,
    pub conversation_id: ConversationId,
    pub sender_id: UserId,
    pub sender_username: String,
    pub body: String,
    #[serde(default)]
    pub mentions: Vec<Mention>,
    #[serde(default)]
    pub kind: MessageKind,
    pub created_at: UnixSecs,
}

/// `GET …/messages?limit=&before=` → newest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessagePage {
    pub messages: Vec<Message>,
    /// Whether older messages exist before the oldest one returned.
    pub has_more: bool,
}

/// `POST …/messages`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct SendMessage {
    pub body: String,
    #[serde(default)]
    pub mentions: Vec<Mention>,
    /// The newest message id the sender has seen; a newer one → 409 `gap`.
    #[serde(default)]
    pub expect_latest_id: Option<MessageId>,
    /// Send despite the gap check.
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub kind: MessageKind,
}

/// `POST …/images`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct SendImage {
    /// Base64 of the image bytes.
    pub data_base64: String,
    pub mime: String,
    #[serde(default)]
    pub caption: String,
    #[serde(default)]
    pub expect_latest_id: Option<MessageId>,
    #[serde(default)]
    pub force: bool,
}

// ---------------------------------------------------------------- presence, usage

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub next_beat_sec: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Presence {
    pub user_id: UserId,
    pub last_beat_at: Option<UnixSecs>,
    /// Computed on read: a heartbeat within the last 3 minutes.
    pub present: bool,
}

/// `POST /v1/workrooms/usage`. A field not known is null, never 0; a negative
/// number is treated by the backend as not reported.
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Card {
    pub id: CardId,
    pub title: String,
    pub status: CardStatus,
    pub assignee_id: Option<UserId>,
    pub parent_id: Option<CardId>,
    pub conversation_id: Option<ConversationId>,
    pub error: Option<String>,
    /// Null until a renew opens a lease.
    pub lease_expires_at: Option<UnixSecs>,
    /// Totals of the usage reports carrying this card's id; null when none.
    pub tokens_in: Option<i64>,
    pub tokens_cached_in: Option<i64>,
    pub tokens_out: Option<i64>,
    pub created_at: UnixSecs,
    pub updated_at: UnixSecs,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct CreateCard {
    pub title: String,
    #[serde(default)]
    pub assignee_id: Option<UserId>,
    #[serde(default)]
    pub parent_id: Option<CardId>,
    #[serde(default)]
    pub conversation_id: Option<ConversationId>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct CardProgress {
    pub note: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LeaseResponse {
    pub lease_expires_at: UnixSecs,
    pub renew_after_sec: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FinishCard {
    /// `done`, `failed` or `cancelled`.
    pub status: CardStatus,
    /// Required when `status` is `failed`.
    #[serde(default)]
    pub error: Option<String>,
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
    #[serde(default)]
    pub rooms: Vec<ConversationId>,
    #[serde(default)]
    pub exclude: Vec<ConversationId>,
    /// Why the mode is what it is, e.g. `revoked`.
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WindowInfo {
    pub window_id: WindowId,
    pub user_id: UserId,
    pub machine: String,
    pub client: String,
    pub revoked: bool,
    pub last_sync_at: Option<UnixSecs>,
    /// Computed on read: synced within the last 3 minutes. Never stored.
    pub present: bool,
}

// ---------------------------------------------------------------- provisioning

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RedeemRequest {
    pub key: String,
    /// The home name on this machine.
    pub name: String,
    #[serde(default)]
    pub machine: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RedeemResponse {
    pub user: User,
    /// `sentinel` (login with email + fixed code) or `reinforcement` (MCP key only).
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
    #[serde(default)]
    pub conversation_id: Option<ConversationId>,
}

// ---------------------------------------------------------------- errors

/// Every 4xx/5xx body: `{"error": "<code>", "message": "<human text>", …}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    /// A stable machine-readable code, e.g. `rate_limited`, `gap`, `window_not_found`.
    pub error: String,
    pub message: String,
    /// For `gap`: the newest message id now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_id: Option<MessageId>,
    /// For `gap`: the messages newer than `expect_latest_id`, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<Message>,
    /// For 429s: seconds to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_sec: Option<u64>,
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
    pub const ALREADY_WORKING: &str = "already_working";
    pub const TOO_MANY_SUBCARDS: &str = "too_many_subcards";
    pub const NOT_WORKING: &str = "not_working";
    pub const INVALID_TRANSITION: &str = "invalid_transition";
    pub const ERROR_REQUIRED: &str = "error_required";
    pub const WINDOW_NOT_FOUND: &str = "window_not_found";
    pub const KEY_INVALID: &str = "key_invalid";
    pub const PAYLOAD_TOO_LARGE: &str = "payload_too_large";
}

// ---------------------------------------------------------------- WebSocket

/// A server → client WebSocket frame (JSON text).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type")]
pub enum WsEvent {
    /// Sent once after the upgrade: the connection is authenticated.
    #[serde(rename = "hello")]
    Hello { user_id: UserId },
    /// A message in a conversation the account is a member of.
    #[serde(rename = "message.new")]
    MessageNew {
        conversation_id: ConversationId,
        message: Message,
    },
    /// Re-pull everything.
    #[serde(rename = "workroom.task.recheck")]
    TaskRecheck {
        #[serde(default)]
        conversation_id: Option<ConversationId>,
    },
    /// A provisioning key waits for this account.
    #[serde(rename = "provision.pending")]
    ProvisionPending {},
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
    }
}
