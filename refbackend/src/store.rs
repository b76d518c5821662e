//! The data: one SQLite connection (a file with `--db`, else in memory) plus
//! the in-memory rate windows. Every operation that writes runs in ONE
//! transaction, so a refused or failed request leaves nothing half-written.
//! Decisions come from [`crate::rules`] and `hoop_core::gates`; this module
//! only loads, decides and stores.

use std::collections::HashMap;
use std::path::Path;

use axum::http::StatusCode;
use base64::Engine;
use hoop_api::admin::{
    AdminCreateCard, ApprovedApplication, CreateConversation, CreateProvisionKey, CreateUser,
    FaultPoint, ProvisionKind, UserState,
};
use hoop_api::types::{
    Card, CardId, CardStatus, Conversation, ConversationId, FinishAnswer, FinishTask,
    LeaseResponse, Member, Mention, Message, MessageId, MessageKind, MessagePage, Presence,
    RedeemRequest, RedeemResponse, RegisterWindow, RegisteredWindow, ReinforceApplication,
    ReinforceApply, RevokedKeys, SendMessage, TaskProgress, UsageReport, User, UserId, WindowInfo,
    WindowSync, codes,
};
use hoop_core::gates::{self, GateError};
use hoop_core::limits;
use rusqlite::{Connection, OptionalExtension, Row, params};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};
use crate::rules::{self, Refusal, WindowView};

use crate::constants::{self, KEY_BYTES};
pub use crate::constants::{PAGE_DEFAULT, PAGE_MAX, PROVISION_KEY_PREFIX};

const SCHEMA: &str = "
PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    email TEXT NOT NULL UNIQUE,
    username TEXT NOT NULL UNIQUE,
    nickname TEXT,
    is_agent INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    last_beat_at INTEGER,
    fixed_otp INTEGER NOT NULL DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    owner_id INTEGER REFERENCES users(id)
);
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    is_workroom INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS members (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    PRIMARY KEY (conversation_id, user_id)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    sender_id INTEGER NOT NULL REFERENCES users(id),
    body TEXT NOT NULL,
    mentions TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, id);
CREATE TABLE IF NOT EXISTS images (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id),
    mime TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS mcp_keys (
    key_sha256 TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
);
CREATE TABLE IF NOT EXISTS provision_keys (
    key_sha256 TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    kind TEXT NOT NULL,
    conversation_id INTEGER REFERENCES conversations(id),
    created_at INTEGER NOT NULL,
    redeemed_at INTEGER
);
CREATE TABLE IF NOT EXISTS provisioning_keys (
    key_sha256 TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    conversation_id INTEGER REFERENCES conversations(id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    redeemed_at INTEGER,
    user_id INTEGER REFERENCES users(id)
);
CREATE TABLE IF NOT EXISTS reinforce_applications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    applicant_id INTEGER NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    nickname TEXT,
    status TEXT NOT NULL,
    agent_id INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_pending_application_per_applicant
    ON reinforce_applications (applicant_id) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS installations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id),
    machine TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (machine, name)
);
CREATE TABLE IF NOT EXISTS cards (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    assignee_id INTEGER REFERENCES users(id),
    creator_id INTEGER REFERENCES users(id),
    parent_id INTEGER REFERENCES cards(id),
    conversation_id INTEGER REFERENCES conversations(id),
    error TEXT,
    lease_expires_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    start_tokens_in INTEGER,
    start_tokens_cached_in INTEGER,
    start_tokens_out INTEGER,
    end_tokens_in INTEGER,
    end_tokens_cached_in INTEGER,
    end_tokens_out INTEGER,
    message_id INTEGER,
    result TEXT,
    result_message_id INTEGER
);
CREATE INDEX IF NOT EXISTS cards_by_parent ON cards (parent_id);
CREATE TABLE IF NOT EXISTS card_notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    card_id INTEGER NOT NULL REFERENCES cards(id),
    author_id INTEGER REFERENCES users(id),
    note TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_usage (
    user_id INTEGER PRIMARY KEY REFERENCES users(id),
    tokens_in INTEGER,
    tokens_cached_in INTEGER,
    tokens_out INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS windows (
    id TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    installation_id TEXT NOT NULL,
    machine TEXT NOT NULL,
    client TEXT NOT NULL,
    native_session_id TEXT NOT NULL,
    runtime_id TEXT NOT NULL,
    rooms_hint TEXT NOT NULL,
    fallback_hint INTEGER NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    last_sync_at INTEGER
);
";

/// Columns added to `cards` after its first version: a database written by
/// an older server gets them on open (an old `usage_reports` table is left
/// alone and never read again).
const CARD_SNAPSHOT_COLUMNS: [&str; 6] = [
    "start_tokens_in",
    "start_tokens_cached_in",
    "start_tokens_out",
    "end_tokens_in",
    "end_tokens_cached_in",
    "end_tokens_out",
];

/// Columns added to `cards` for production's assign and finish arguments
/// (`message_id`, `result`, `result_message_id`), with their types.
const CARD_TASK_COLUMNS: [(&str, &str); 3] = [
    ("message_id", "INTEGER"),
    ("result", "TEXT"),
    ("result_message_id", "INTEGER"),
];

/// Columns added to `mcp_keys` after its first version; an older key with
/// no `expires_at` lives the default span from its `created_at`.
const MCP_KEY_COLUMNS: [&str; 2] = ["expires_at", "revoked_at"];

/// Columns added to `users` after its first version, with their
/// declarations and what fills them on an older database: every account was
/// active, and its agents were the ones logging in with the fixed code.
/// (An older `provision_keys` table, keys bound to existing users, is left
/// alone and never read again: redeem now creates the account.)
const USER_COLUMNS: [(&str, &str, &str); 3] = [
    (
        "fixed_otp",
        "INTEGER NOT NULL DEFAULT 0",
        "UPDATE users SET fixed_otp = is_agent",
    ),
    ("active", "INTEGER NOT NULL DEFAULT 1", ""),
    ("owner_id", "INTEGER REFERENCES users(id)", ""),
];

/// Add the columns [`SCHEMA`] has and an older database lacks.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info('cards')")?;
    let have = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    drop(st);
    for col in CARD_SNAPSHOT_COLUMNS {
        if !have.iter().any(|h| h == col) {
            conn.execute_batch(&format!("ALTER TABLE cards ADD COLUMN {col} INTEGER"))?;
        }
    }
    for (col, ty) in CARD_TASK_COLUMNS {
        if !have.iter().any(|h| h == col) {
            conn.execute_batch(&format!("ALTER TABLE cards ADD COLUMN {col} {ty}"))?;
        }
    }
    let mut st = conn.prepare("SELECT name FROM pragma_table_info('mcp_keys')")?;
    let have = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    drop(st);
    for col in MCP_KEY_COLUMNS {
        if !have.iter().any(|h| h == col) {
            conn.execute_batch(&format!("ALTER TABLE mcp_keys ADD COLUMN {col} INTEGER"))?;
        }
    }
    let mut st = conn.prepare("SELECT name FROM pragma_table_info('users')")?;
    let have = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    drop(st);
    for (col, decl, fill) in USER_COLUMNS {
        if !have.iter().any(|h| h == col) {
            conn.execute_batch(&format!("ALTER TABLE users ADD COLUMN {col} {decl}"))?;
            if !fill.is_empty() {
                conn.execute_batch(fill)?;
            }
        }
    }
    Ok(())
}

/// SHA-256 hex of a key: the only form in which keys are stored.
pub fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Mint one MCP key for `user` inside the caller's transaction: stored only
/// as its SHA-256, living `ttl_secs` (default and clamp: `rules::key_expiry`).
fn insert_mcp_key(
    c: &Connection,
    now: i64,
    user: UserId,
    ttl_secs: Option<i64>,
) -> ApiResult<(String, i64)> {
    let key = new_key(hoop_api::headers::MCP_KEY_PREFIX);
    let expires = rules::key_expiry(
        now,
        ttl_secs,
        constants::MCP_KEY_DEFAULT_TTL_SECS,
        constants::MCP_KEY_MAX_TTL_SECS,
    );
    c.execute(
        "INSERT INTO mcp_keys (key_sha256, user_id, created_at, expires_at) \
         VALUES (?1, ?2, ?3, ?4)",
        params![key_hash(&key), user, now, expires],
    )?;
    Ok((key, expires))
}

/// Soft-revoke every live MCP key of `user` inside the caller's
/// transaction; returns how many.
fn revoke_live_keys(c: &Connection, now: i64, user: UserId) -> ApiResult<u32> {
    let n = c.execute(
        "UPDATE mcp_keys SET revoked_at = ?1 WHERE user_id = ?2 AND revoked_at IS NULL",
        params![now, user],
    )?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// Fail here when a fault is armed for `point` (one shot per arming):
/// 500 `internal`, and the caller's transaction rolls back on drop.
fn trip(faults: &mut HashMap<FaultPoint, u32>, point: FaultPoint) -> ApiResult<()> {
    match faults.get_mut(&point) {
        Some(n) if *n > 0 => {
            *n -= 1;
            tracing::warn!(
                ?point,
                "injected fault: failing the request before its commit"
            );
            Err(ApiError::internal())
        }
        _ => Ok(()),
    }
}

/// Create an agent account inside the caller's transaction (redeem,
/// approval): `username` is the name asked for, the email is derived from it
/// under [`constants::AGENT_EMAIL_DOMAIN`]. A taken name → 409 `conflict`.
fn insert_agent(
    c: &Connection,
    now: i64,
    username: &str,
    nickname: Option<&str>,
    fixed_otp: bool,
    owner: Option<UserId>,
) -> ApiResult<User> {
    let email = format!("{username}@{}", constants::AGENT_EMAIL_DOMAIN);
    let id = insert_unique(
        c,
        "INSERT INTO users (email, username, nickname, is_agent, fixed_otp, active, owner_id, \
         created_at) VALUES (?1, ?2, ?3, 1, ?4, 1, ?5, ?6)",
        params![email, username, nickname, fixed_otp, owner, now],
        || format!("an account named {username:?} exists; choose another name"),
    )?;
    load_user(c, id)?.ok_or_else(ApiError::internal)
}

/// The caller must be the approved owner of the reinforcement account
/// `agent` (production: the applicant of its approved application).
fn require_owner(c: &Connection, caller: UserId, agent: UserId) -> ApiResult<()> {
    let owner: Option<Option<UserId>> = c
        .query_row(
            "SELECT owner_id FROM users WHERE id = ?1 AND is_agent = 1",
            [agent],
            |r| r.get(0),
        )
        .optional()?;
    match owner {
        None => Err(ApiError::not_found(format!("no agent account {agent}"))),
        Some(Some(o)) if o == caller => Ok(()),
        Some(_) => Err(ApiError::forbidden(
            "only the approved owner of this reinforcement account manages its key",
        )),
    }
}

fn is_active(c: &Connection, user: UserId) -> ApiResult<bool> {
    Ok(
        c.query_row("SELECT active FROM users WHERE id = ?1", [user], |r| {
            r.get::<_, bool>(0)
        })
        .optional()?
        .unwrap_or(false),
    )
}

fn application_row(r: &Row<'_>) -> rusqlite::Result<ReinforceApplication> {
    Ok(ReinforceApplication {
        id: r.get(0)?,
        applicant_id: r.get(1)?,
        name: r.get(2)?,
        nickname: r.get(3)?,
        status: r.get(4)?,
        agent_id: r.get(5)?,
    })
}

const APPLICATION_COLS: &str = "id, applicant_id, name, nickname, status, agent_id";

fn new_key(prefix: &str) -> String {
    let bytes: [u8; KEY_BYTES] = rand::random();
    format!("{prefix}{}", hex::encode(bytes))
}

fn status_str(s: CardStatus) -> &'static str {
    match s {
        CardStatus::Queued => "queued",
        CardStatus::Working => "working",
        CardStatus::Done => "done",
        CardStatus::Failed => "failed",
        CardStatus::Cancelled => "cancelled",
    }
}

fn parse_status(s: &str) -> CardStatus {
    match s {
        "working" => CardStatus::Working,
        "done" => CardStatus::Done,
        "failed" => CardStatus::Failed,
        "cancelled" => CardStatus::Cancelled,
        _ => CardStatus::Queued,
    }
}

fn refusal(r: Refusal, what: &str) -> ApiError {
    match r {
        Refusal::InvalidTransition => ApiError::conflict(
            codes::INVALID_TRANSITION,
            format!("{what} is not allowed from the card's current status"),
        ),
        Refusal::ErrorRequired => ApiError::new(
            StatusCode::BAD_REQUEST,
            codes::ERROR_REQUIRED,
            "a card can only fail with an error text",
        ),
        Refusal::NotWorking => ApiError::new(
            StatusCode::NOT_FOUND,
            codes::NOT_WORKING,
            "the card is not working: there is no lease to renew",
        ),
        Refusal::NotClaimable => {
            ApiError::conflict(codes::NOT_CLAIMABLE, "only a queued card can be claimed")
        }
    }
}

/// A refused content gate as the contract's error.
pub(crate) fn gate_error(e: GateError) -> ApiError {
    match e {
        GateError::Markdown(_) => ApiError::new(
            StatusCode::BAD_REQUEST,
            codes::MARKDOWN_REFUSED,
            e.to_string(),
        ),
        GateError::TooLong { .. } => {
            ApiError::new(StatusCode::BAD_REQUEST, codes::BODY_TOO_LONG, e.to_string())
        }
        GateError::Empty => ApiError::bad_request(e.to_string()),
    }
}

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

/// Run an INSERT whose unique constraint means "already exists": a
/// violation becomes 409 `conflict` with `taken`'s words; the new row's id
/// otherwise.
fn insert_unique(
    c: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    taken: impl FnOnce() -> String,
) -> ApiResult<i64> {
    match c.execute(sql, params) {
        Err(e) if is_unique_violation(&e) => Err(ApiError::conflict(codes::CONFLICT, taken())),
        r => {
            r?;
            Ok(c.last_insert_rowid())
        }
    }
}

const USER_COLS: &str = "id, email, username, nickname, is_agent";

fn user_row(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get(0)?,
        email: r.get(1)?,
        username: r.get(2)?,
        nickname: r.get(3)?,
        is_agent: r.get(4)?,
    })
}

const MESSAGE_SELECT: &str = "SELECT m.id, m.conversation_id, m.sender_id, u.username, m.body, \
     m.mentions, m.kind, m.created_at FROM messages m JOIN users u ON u.id = m.sender_id";

fn message_row(r: &Row<'_>) -> rusqlite::Result<Message> {
    let mentions: String = r.get(5)?;
    let kind: String = r.get(6)?;
    Ok(Message {
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        sender_id: r.get(2)?,
        sender_username: r.get(3)?,
        body: r.get(4)?,
        mentions: serde_json::from_str(&mentions).unwrap_or_default(),
        kind: MessageKind::from_word(&kind),
        created_at: r.get(7)?,
    })
}

/// A card with its usage snapshots (a card from a database written before
/// cards lived under workrooms has no room: it reads as room 0, under which
/// its owner can still finish it): the one taken at its start (claim) and,
/// for a finished card, the one taken at its end; a working card's end is its
/// assignee's totals now. The cost is computed by [`rules::card_cost`].
const CARD_SELECT: &str = "SELECT c.id, c.title, c.status, c.assignee_id, c.parent_id, \
     COALESCE(c.conversation_id, 0), c.error, c.lease_expires_at, \
     c.start_tokens_in, c.start_tokens_cached_in, c.start_tokens_out, \
     c.created_at, c.updated_at, c.creator_id, \
     COALESCE(c.end_tokens_in, CASE WHEN c.status = 'working' THEN u.tokens_in END), \
     COALESCE(c.end_tokens_cached_in, CASE WHEN c.status = 'working' THEN u.tokens_cached_in END), \
     COALESCE(c.end_tokens_out, CASE WHEN c.status = 'working' THEN u.tokens_out END), \
     c.message_id, c.result, c.result_message_id \
     FROM cards c LEFT JOIN agent_usage u ON u.user_id = c.assignee_id";

/// A card plus who created it (for permission checks).
struct CardRow {
    card: Card,
    creator_id: Option<UserId>,
}

fn card_row(r: &Row<'_>) -> rusqlite::Result<CardRow> {
    let status: String = r.get(2)?;
    let cost = |start: usize, end: usize| -> rusqlite::Result<Option<i64>> {
        Ok(rules::card_cost(r.get(start)?, r.get(end)?))
    };
    Ok(CardRow {
        card: Card {
            id: r.get(0)?,
            title: r.get(1)?,
            status: parse_status(&status),
            assignee_id: r.get(3)?,
            parent_id: r.get(4)?,
            conversation_id: r.get(5)?,
            message_id: r.get(17)?,
            error: r.get(6)?,
            result: r.get(18)?,
            result_message_id: r.get(19)?,
            lease_expires_at: r.get(7)?,
            tokens_in: cost(8, 14)?,
            tokens_cached_in: cost(9, 15)?,
            tokens_out: cost(10, 16)?,
            created_at: r.get(11)?,
            updated_at: r.get(12)?,
        },
        creator_id: r.get(13)?,
    })
}

/// Filters for listing cards.
#[derive(Debug, Clone, Default)]
pub struct CardFilter {
    pub assignee_id: Option<UserId>,
    pub status: Option<CardStatus>,
    pub parent_id: Option<CardId>,
    pub conversation_id: Option<ConversationId>,
    pub id: Option<CardId>,
}

pub struct Store {
    conn: Connection,
    /// Send times per user (60/min).
    send_log: HashMap<UserId, rules::FixedWindow>,
    /// Call times per MCP key hash (300/min).
    mcp_log: HashMap<String, rules::FixedWindow>,
    /// Armed faults: how many more requests fail at each point.
    faults: HashMap<FaultPoint, u32>,
}

// ---------------------------------------------------------------- reads

fn load_user(c: &Connection, id: UserId) -> ApiResult<Option<User>> {
    Ok(c.query_row(
        &format!("SELECT {USER_COLS} FROM users WHERE id = ?1"),
        [id],
        user_row,
    )
    .optional()?)
}

fn conversation_exists(c: &Connection, id: ConversationId) -> ApiResult<bool> {
    Ok(c.query_row(
        "SELECT 1 FROM conversations WHERE id = ?1",
        [id],
        |_| Ok(()),
    )
    .optional()?
    .is_some())
}

fn is_member(c: &Connection, conv: ConversationId, user: UserId) -> ApiResult<bool> {
    Ok(c.query_row(
        "SELECT 1 FROM members WHERE conversation_id = ?1 AND user_id = ?2",
        [conv, user],
        |_| Ok(()),
    )
    .optional()?
    .is_some())
}

/// 404 for an unknown conversation, 403 `not_member` for a known one the
/// caller is not in.
fn require_member(c: &Connection, conv: ConversationId, user: UserId) -> ApiResult<()> {
    if !conversation_exists(c, conv)? {
        return Err(ApiError::not_found(format!("no conversation {conv}")));
    }
    if !is_member(c, conv, user)? {
        return Err(ApiError::not_member());
    }
    Ok(())
}

fn member_ids(c: &Connection, conv: ConversationId) -> ApiResult<Vec<UserId>> {
    let mut st = c.prepare("SELECT user_id FROM members WHERE conversation_id = ?1")?;
    let ids = st
        .query_map([conv], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<UserId>>>()?;
    Ok(ids)
}

fn load_members(c: &Connection, conv: ConversationId) -> ApiResult<Vec<Member>> {
    let mut st = c.prepare(
        "SELECT u.id, u.username, u.nickname, u.is_agent FROM members m \
         JOIN users u ON u.id = m.user_id WHERE m.conversation_id = ?1 ORDER BY u.id",
    )?;
    let v = st
        .query_map([conv], |r| {
            Ok(Member {
                user_id: r.get(0)?,
                username: r.get(1)?,
                nickname: r.get(2)?,
                is_agent: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(v)
}

fn load_conversation(c: &Connection, id: ConversationId) -> ApiResult<Conversation> {
    Ok(c.query_row(
        "SELECT c.id, c.title, c.is_workroom, \
         (SELECT MAX(id) FROM messages WHERE conversation_id = c.id), \
         (SELECT COUNT(*) FROM members m JOIN users u ON u.id = m.user_id \
            WHERE m.conversation_id = c.id AND u.is_agent = 1) \
         FROM conversations c WHERE c.id = ?1",
        [id],
        |r| {
            Ok(Conversation {
                id: r.get(0)?,
                title: r.get(1)?,
                is_workroom: r.get(2)?,
                latest_message_id: r.get(3)?,
                ai_member_count: r.get(4)?,
            })
        },
    )?)
}

fn load_card(c: &Connection, id: CardId) -> ApiResult<CardRow> {
    c.query_row(&format!("{CARD_SELECT} WHERE c.id = ?1"), [id], card_row)
        .optional()?
        .ok_or_else(|| ApiError::not_found(format!("no card {id}")))
}

/// A card of room `cid`: one of another room is "no card" (404).
fn load_card_in(c: &Connection, cid: ConversationId, id: CardId) -> ApiResult<CardRow> {
    let row = load_card(c, id)?;
    if row.card.conversation_id != cid {
        return Err(ApiError::not_found(format!("no card {id} in room {cid}")));
    }
    Ok(row)
}

/// `id`, when given, must be a message of room `cid` (production checks the
/// assign's `message_id` so); one of another room or none at all get the
/// same answer.
fn require_room_message(
    c: &Connection,
    cid: ConversationId,
    id: Option<MessageId>,
    field: &str,
) -> ApiResult<()> {
    let Some(id) = id else { return Ok(()) };
    let found = c
        .query_row(
            "SELECT 1 FROM messages WHERE id = ?1 AND conversation_id = ?2",
            [id, cid],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if found {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "{field} {id} is not a message of room {cid}"
        )))
    }
}

/// Only the assignee or the creator acts on a card (`action` says how, for
/// the refusal's text).
fn require_actor(row: &CardRow, caller: UserId, action: &str) -> ApiResult<()> {
    if row.card.assignee_id == Some(caller) || row.creator_id == Some(caller) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "only the card's assignee or creator may {action}"
        )))
    }
}

/// Only agent accounts beat, report usage, work cards, hold MCP keys and are
/// provisioned (production checks `is_agent` on each of these).
fn require_agent(c: &Connection, user: UserId, what: &str) -> ApiResult<()> {
    if load_user(c, user)?.is_some_and(|u| u.is_agent) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("only agent accounts {what}")))
    }
}

/// A card's assignee must be an agent member of the card's room. Every failure gets the same answer, so a
/// refusal does not tell who is in a room (production merges them too).
fn require_assignable(c: &Connection, assignee: UserId, conv: ConversationId) -> ApiResult<()> {
    let agent = load_user(c, assignee)?.is_some_and(|u| u.is_agent);
    let in_room = is_member(c, conv, assignee)?;
    if agent && in_room {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "a card's assignee must be an agent member of the card's room",
        ))
    }
}

/// The cards `:viewer` may see: those assigned to them, those they created,
/// and those of the rooms they are a member of. The one visibility rule of
/// every card read.
const CARD_VISIBLE: &str = "(c.assignee_id = :viewer OR c.creator_id = :viewer \
     OR c.conversation_id IN (SELECT conversation_id FROM members WHERE user_id = :viewer))";

/// A card `viewer` may see; any other is "no card" (404), so its existence
/// is not told either.
fn load_visible_card(c: &Connection, id: CardId, viewer: UserId) -> ApiResult<CardRow> {
    c.query_row(
        &format!("{CARD_SELECT} WHERE c.id = :id AND {CARD_VISIBLE}"),
        rusqlite::named_params! {":id": id, ":viewer": viewer},
        card_row,
    )
    .optional()?
    .ok_or_else(|| ApiError::not_found(format!("no card {id}")))
}

/// The usage snapshot a card takes at its start (claim): its assignee's
/// totals then (`?2` is the assignee).
const START_SNAPSHOT: &str = "start_tokens_in = (SELECT tokens_in FROM agent_usage WHERE user_id = ?2), \
     start_tokens_cached_in = (SELECT tokens_cached_in FROM agent_usage WHERE user_id = ?2), \
     start_tokens_out = (SELECT tokens_out FROM agent_usage WHERE user_id = ?2)";

/// The snapshot a card takes at its end: its assignee's totals then, for a
/// card that was working (a card cancelled while queued never started).
const END_SNAPSHOT: &str = "end_tokens_in = CASE WHEN status = 'working' THEN \
       (SELECT u.tokens_in FROM agent_usage u WHERE u.user_id = cards.assignee_id) END, \
     end_tokens_cached_in = CASE WHEN status = 'working' THEN \
       (SELECT u.tokens_cached_in FROM agent_usage u WHERE u.user_id = cards.assignee_id) END, \
     end_tokens_out = CASE WHEN status = 'working' THEN \
       (SELECT u.tokens_out FROM agent_usage u WHERE u.user_id = cards.assignee_id) END";

fn window_views(c: &Connection, user: UserId) -> ApiResult<Vec<WindowView>> {
    let mut st = c.prepare(
        "SELECT id, revoked, rooms_hint, fallback_hint, last_sync_at FROM windows \
         WHERE user_id = ?1",
    )?;
    let v = st
        .query_map([user], |r| {
            let hint: String = r.get(2)?;
            Ok(WindowView {
                window_id: r.get(0)?,
                revoked: r.get(1)?,
                rooms_hint: serde_json::from_str(&hint).unwrap_or_default(),
                fallback_hint: r.get(3)?,
                last_sync_at: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(v)
}

fn window_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        codes::WINDOW_NOT_FOUND,
        format!("no window {id:?} for this account; register again"),
    )
}

fn presence_timeout() -> i64 {
    limits::PRESENCE_TIMEOUT.as_secs() as i64
}

impl Store {
    /// Open (and create the schema of) the database: a file, or memory.
    pub fn open(db: Option<&Path>) -> rusqlite::Result<Store> {
        let conn = match db {
            Some(p) => Connection::open(p)?,
            None => Connection::open_in_memory()?,
        };
        conn.execute_batch(SCHEMA)?;
        migrate(&conn)?;
        Ok(Store {
            conn,
            send_log: HashMap::new(),
            mcp_log: HashMap::new(),
            faults: HashMap::new(),
        })
    }

    // ------------------------------------------------------------ users

    pub fn create_user(&mut self, now: i64, req: &CreateUser) -> ApiResult<User> {
        let email = req.email.trim();
        let username = req.username.trim();
        if email.is_empty() || username.is_empty() {
            return Err(ApiError::bad_request("email and username are required"));
        }
        let tx = self.conn.transaction()?;
        let id = insert_unique(
            &tx,
            "INSERT INTO users (email, username, nickname, is_agent, fixed_otp, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![email, username, req.nickname, req.is_agent, now],
            || "a user with this email or username exists".into(),
        )?;
        let user = load_user(&tx, id)?.ok_or_else(ApiError::internal)?;
        tx.commit()?;
        Ok(user)
    }

    pub fn list_users(&self) -> ApiResult<Vec<User>> {
        let mut st = self
            .conn
            .prepare(&format!("SELECT {USER_COLS} FROM users ORDER BY id"))?;
        let v = st
            .query_map([], user_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    pub fn user(&self, id: UserId) -> ApiResult<Option<User>> {
        load_user(&self.conn, id)
    }

    /// The account `email` names when it may log in with the fixed code
    /// (`rules::fixed_code_login`); `None` otherwise, whatever the reason.
    pub fn fixed_code_user(&self, email: &str) -> ApiResult<Option<User>> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {USER_COLS}, fixed_otp, active FROM users WHERE email = ?1"),
                [email.trim()],
                |r| Ok((user_row(r)?, r.get::<_, bool>(5)?, r.get::<_, bool>(6)?)),
            )
            .optional()?;
        Ok(row
            .filter(|(u, fixed_otp, active)| {
                rules::fixed_code_login(u.is_agent, *fixed_otp, *active)
            })
            .map(|(u, _, _)| u))
    }

    /// The account behind a token, when it is still active.
    pub fn active_user(&self, id: UserId) -> ApiResult<Option<User>> {
        if is_active(&self.conn, id)? {
            load_user(&self.conn, id)
        } else {
            Ok(None)
        }
    }

    /// Make an account active or inactive. Nothing else changes: an
    /// inactive account's keys stay stored and work again once it is
    /// active, as production's Verify reads the account's state on every
    /// call.
    pub fn set_active(&mut self, user: UserId, active: bool) -> ApiResult<UserState> {
        let n = self.conn.execute(
            "UPDATE users SET active = ?1 WHERE id = ?2",
            params![active, user],
        )?;
        if n == 0 {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        Ok(UserState {
            user_id: user,
            active,
        })
    }

    /// Arm `point` to fail the next `times` requests reaching it.
    pub fn arm_fault(&mut self, point: FaultPoint, times: u32) {
        self.faults.insert(point, times);
    }

    // ------------------------------------------------------------ conversations

    pub fn create_conversation(
        &mut self,
        now: i64,
        req: &CreateConversation,
    ) -> ApiResult<Conversation> {
        if req.title.trim().is_empty() {
            return Err(ApiError::bad_request("a conversation needs a title"));
        }
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO conversations (title, is_workroom, created_at) VALUES (?1, ?2, ?3)",
            params![req.title, req.is_workroom, now],
        )?;
        let id = tx.last_insert_rowid();
        for uid in &req.member_ids {
            if load_user(&tx, *uid)?.is_none() {
                return Err(ApiError::not_found(format!("no user {uid}")));
            }
            tx.execute(
                "INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?1, ?2)",
                [id, *uid],
            )?;
        }
        let conv = load_conversation(&tx, id)?;
        tx.commit()?;
        Ok(conv)
    }

    pub fn add_member(&mut self, conv: ConversationId, user: UserId) -> ApiResult<Vec<Member>> {
        let tx = self.conn.transaction()?;
        if !conversation_exists(&tx, conv)? {
            return Err(ApiError::not_found(format!("no conversation {conv}")));
        }
        if load_user(&tx, user)?.is_none() {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        tx.execute(
            "INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?1, ?2)",
            [conv, user],
        )?;
        let members = load_members(&tx, conv)?;
        tx.commit()?;
        Ok(members)
    }

    pub fn conversations_of(&self, user: UserId) -> ApiResult<Vec<Conversation>> {
        let mut st = self.conn.prepare(
            "SELECT conversation_id FROM members WHERE user_id = ?1 ORDER BY conversation_id",
        )?;
        let ids = st
            .query_map([user], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<ConversationId>>>()?;
        ids.into_iter()
            .map(|id| load_conversation(&self.conn, id))
            .collect()
    }

    pub fn members(&self, caller: UserId, conv: ConversationId) -> ApiResult<Vec<Member>> {
        require_member(&self.conn, conv, caller)?;
        load_members(&self.conn, conv)
    }

    /// Newest first; `before` pages back; `limit` is clamped into `1..=max`.
    pub fn messages(
        &self,
        caller: UserId,
        conv: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> ApiResult<MessagePage> {
        require_member(&self.conn, conv, caller)?;
        self.room_page(conv, limit, before)
    }

    /// A page of `conv` without a membership check (the operator's read):
    /// newest first, `limit` at least 1, `before` pages back.
    pub fn room_page(
        &self,
        conv: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> ApiResult<MessagePage> {
        if !conversation_exists(&self.conn, conv)? {
            return Err(ApiError::not_found(format!("no conversation {conv}")));
        }
        let limit = i64::from(limit.max(1));
        let mut st = self.conn.prepare(&format!(
            "{MESSAGE_SELECT} WHERE m.conversation_id = ?1 AND (?2 IS NULL OR m.id < ?2) \
             ORDER BY m.id DESC LIMIT ?3"
        ))?;
        let mut messages = st
            .query_map(params![conv, before, limit + 1], message_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let has_more = messages.len() as i64 > limit;
        messages.truncate(limit as usize);
        Ok(MessagePage { messages, has_more })
    }

    /// Send a message as production's REST routes do: membership, the
    /// empty and length checks, the message rate limit (text only), the
    /// mention filter, one insert. No markdown gate and no gap check here:
    /// those are the MCP tool's ([`Store::gap_check`]). `kind` is `image`
    /// exactly when `image` is given; the operator surface may store any
    /// other word (e.g. `voice`) to seed a room. Returns the message and
    /// the members to notify.
    pub fn send(
        &mut self,
        now: i64,
        sender: UserId,
        conv: ConversationId,
        req: &SendMessage,
        kind: &MessageKind,
        image: Option<(&str, &[u8])>,
    ) -> ApiResult<(Message, Vec<UserId>)> {
        require_member(&self.conn, conv, sender)?;
        if image.is_some() != (*kind == MessageKind::Image) {
            return Err(ApiError::bad_request(
                "image messages are sent to the images route",
            ));
        }
        // An image may come without a caption.
        if image.is_none() || !req.body.is_empty() {
            gates::check_length(&req.body).map_err(gate_error)?;
        }
        // Only text counts against the message rate limit (production).
        let counts = *kind == MessageKind::Text;
        if counts
            && let Err(retry) = self
                .send_log
                .entry(sender)
                .or_default()
                .check(now, limits::SEND_RATE_PER_MIN)
        {
            return Err(ApiError::rate_limited(
                format!(
                    "at most {} text messages per calendar minute; retry in {retry} s",
                    limits::SEND_RATE_PER_MIN
                ),
                retry,
            ));
        }
        let tx = self.conn.transaction()?;
        let members = member_ids(&tx, conv)?;
        let mentions: Vec<Mention> = rules::filter_mentions(&req.mentions, &members);
        tx.execute(
            "INSERT INTO messages (conversation_id, sender_id, body, mentions, kind, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                conv,
                sender,
                req.body,
                serde_json::to_string(&mentions).unwrap_or_else(|_| "[]".into()),
                kind.as_str(),
                now
            ],
        )?;
        let id = tx.last_insert_rowid();
        if let Some((mime, data)) = image {
            tx.execute(
                "INSERT INTO images (message_id, mime, data) VALUES (?1, ?2, ?3)",
                params![id, mime, data],
            )?;
        }
        let msg = tx.query_row(
            &format!("{MESSAGE_SELECT} WHERE m.id = ?1"),
            [id],
            message_row,
        )?;
        tx.commit()?;
        if counts {
            self.send_log.entry(sender).or_default().record(now);
        }
        Ok((msg, members))
    }

    /// Production's gap check of `chat_send_text` (seed 002 §0.3): read the
    /// newest [`limits::GAP_CHECK_READ`] messages as the sender (membership
    /// applies) and refuse with 409 `gap` when [`gates::gap_unread`] finds
    /// any. A check that cannot read refuses the send too.
    pub fn gap_check(
        &self,
        sender: UserId,
        conv: ConversationId,
        expect_latest_id: MessageId,
    ) -> ApiResult<()> {
        let page = self.messages(sender, conv, limits::GAP_CHECK_READ, None)?;
        let unread: Vec<Message> = gates::gap_unread(
            &page.messages,
            expect_latest_id,
            |m| m.id,
            |m| m.sender_id == sender,
        )
        .into_iter()
        .cloned()
        .collect();
        if unread.is_empty() {
            return Ok(());
        }
        let mut e = ApiError::conflict(
            codes::GAP,
            format!(
                "{} message(s) you have not read since {expect_latest_id}; read them first or send with force",
                unread.len()
            ),
        );
        e.body.error.latest_id = page.messages.first().map(|m| m.id);
        e.body.error.unread_count = Some(unread.len() as u32);
        e.body.error.unread = unread;
        Err(e)
    }

    // ------------------------------------------------------------ keys

    /// Mint an MCP key; only its SHA-256 is stored. Returns the key itself.
    /// Only an active agent account can have one (seed 002 L7 §0.2).
    pub fn mint_mcp_key(
        &mut self,
        now: i64,
        user: UserId,
        ttl_secs: Option<i64>,
    ) -> ApiResult<String> {
        let tx = self.conn.transaction()?;
        if load_user(&tx, user)?.is_none() {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        require_agent(&tx, user, "can have MCP keys")?;
        if !is_active(&tx, user)? {
            return Err(ApiError::forbidden(
                "the account is inactive: no key can be minted for it",
            ));
        }
        let (key, _) = insert_mcp_key(&tx, now, user, ttl_secs)?;
        tx.commit()?;
        Ok(key)
    }

    /// Soft-revoke every live MCP key of `user`.
    pub fn revoke_mcp_keys(&mut self, now: i64, user: UserId) -> ApiResult<RevokedKeys> {
        let tx = self.conn.transaction()?;
        if load_user(&tx, user)?.is_none() {
            return Err(ApiError::not_found(format!("no user {user}")));
        }
        let revoked = revoke_live_keys(&tx, now, user)?;
        tx.commit()?;
        Ok(RevokedKeys {
            user_id: user,
            revoked,
        })
    }

    /// The user an MCP key belongs to (looked up by its hash), or `None`
    /// when the key is unknown, revoked or expired (30 s of clock skew
    /// allowed) or its account is inactive: one and the same refusal
    /// (seed 002 L7 §0.2, L48 item 7).
    pub fn mcp_user(&self, now: i64, key_sha256: &str) -> ApiResult<Option<User>> {
        let row: Option<(UserId, i64, Option<i64>, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT user_id, created_at, expires_at, revoked_at FROM mcp_keys \
                 WHERE key_sha256 = ?1",
                [key_sha256],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((id, created, expires, revoked)) = row else {
            return Ok(None);
        };
        let expires = expires.unwrap_or_else(|| {
            rules::key_expiry(
                created,
                None,
                constants::MCP_KEY_DEFAULT_TTL_SECS,
                constants::MCP_KEY_MAX_TTL_SECS,
            )
        });
        if revoked.is_some() || !rules::key_live(expires, now, constants::MCP_BEARER_SKEW_SECS) {
            return Ok(None);
        }
        self.active_user(id)
    }

    /// Count one MCP call against the key's window; `Err` = over the limit.
    pub fn mcp_rate(&mut self, key_sha256: &str, now: i64) -> Result<(), u64> {
        let w = self.mcp_log.entry(key_sha256.to_string()).or_default();
        w.check(now, limits::MCP_CALLS_PER_MIN)?;
        w.record(now);
        Ok(())
    }

    /// An admin-created provisioning key (seed 002 L31): names no account
    /// (redeeming creates one), lives 7 days unless asked otherwise, at
    /// most 90 days. Returns the key and its expiry.
    pub fn create_provision_key(
        &mut self,
        now: i64,
        req: &CreateProvisionKey,
    ) -> ApiResult<(String, i64)> {
        let tx = self.conn.transaction()?;
        if let Some(c) = req.conversation_id
            && !conversation_exists(&tx, c)?
        {
            return Err(ApiError::not_found(format!("no conversation {c}")));
        }
        let key = new_key(PROVISION_KEY_PREFIX);
        let kind = match req.kind {
            ProvisionKind::Sentinel => "sentinel",
            ProvisionKind::Reinforcement => "reinforcement",
        };
        let expires = rules::key_expiry(
            now,
            req.ttl_secs,
            constants::PROVISION_KEY_DEFAULT_TTL_SECS,
            constants::PROVISION_KEY_MAX_TTL_SECS,
        );
        tx.execute(
            "INSERT INTO provisioning_keys (key_sha256, kind, conversation_id, created_at, \
             expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key_hash(&key), kind, req.conversation_id, now, expires],
        )?;
        tx.commit()?;
        Ok((key, expires))
    }

    /// Redeem in ONE transaction, as production (seed 002 L31): take the
    /// key, create a NEW agent account (`is_agent`, and `fixed_otp` for a
    /// sentinel), join the room (the request's, else the key's), mint the
    /// MCP key (reinforcement), record the installation. Any failure rolls
    /// all of it back and the key stays usable.
    pub fn redeem(
        &mut self,
        now: i64,
        req: &RedeemRequest,
        public_base: Option<&str>,
    ) -> ApiResult<RedeemResponse> {
        let tx = self.conn.transaction()?;
        let hash = key_hash(req.key.trim());
        let row: Option<(String, Option<ConversationId>, i64, Option<i64>)> = tx
            .query_row(
                "SELECT kind, conversation_id, expires_at, redeemed_at FROM provisioning_keys \
                 WHERE key_sha256 = ?1",
                [&hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let usable = row
            .as_ref()
            .is_some_and(|(_, _, expires, redeemed)| redeemed.is_none() && now < *expires);
        let Some((kind, key_conv, _, _)) = row.filter(|_| usable) else {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                codes::KEY_INVALID,
                "unknown, expired or already redeemed provisioning key",
            ));
        };
        let reinforcement = kind == "reinforcement";
        let user = insert_agent(&tx, now, &req.name, None, !reinforcement, None)?;
        tx.execute(
            "UPDATE provisioning_keys SET redeemed_at = ?1, user_id = ?2 WHERE key_sha256 = ?3",
            params![now, user.id, hash],
        )?;
        let conv = req.conversation_id.or(key_conv);
        if let Some(c) = conv {
            if !conversation_exists(&tx, c)? {
                return Err(ApiError::not_found(format!("no conversation {c}")));
            }
            tx.execute(
                "INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?1, ?2)",
                [c, user.id],
            )?;
        }
        let (fixed_code, mcp_key, ready_line) = if reinforcement {
            let (key, _) = insert_mcp_key(&tx, now, user.id, None)?;
            let line = hoop_api::mcp::claude_add_line(public_base, &key);
            (None, Some(key), Some(line))
        } else {
            (Some(limits::FIXED_LOGIN_CODE.to_string()), None, None)
        };
        let machine = req.machine.clone().unwrap_or_default();
        insert_unique(
            &tx,
            "INSERT INTO installations (user_id, machine, name, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![user.id, machine, req.name, now],
            || {
                format!(
                    "a home named {:?} is already installed on this machine",
                    req.name
                )
            },
        )?;
        trip(&mut self.faults, FaultPoint::RedeemBeforeCommit)?;
        tx.commit()?;
        Ok(RedeemResponse {
            user,
            kind,
            fixed_code,
            mcp_key,
            ready_line,
            conversation_id: conv,
        })
    }

    // ------------------------------------------------------------ reinforcement

    /// An application for a reinforcement account (seed 002 L29): the name
    /// must match production's rule and gets `_aid`; one pending
    /// application per person (409 `conflict` for a second).
    pub fn reinforce_apply(
        &mut self,
        now: i64,
        applicant: UserId,
        req: &ReinforceApply,
    ) -> ApiResult<ReinforceApplication> {
        let name = rules::reinforcement_name(&req.name).map_err(ApiError::bad_request)?;
        let tx = self.conn.transaction()?;
        let id = insert_unique(
            &tx,
            "INSERT INTO reinforce_applications (applicant_id, name, nickname, status, created_at) \
             VALUES (?1, ?2, ?3, 'pending', ?4)",
            params![applicant, name, req.nickname, now],
            || "you already have a pending application".into(),
        )?;
        let app = tx.query_row(
            &format!("SELECT {APPLICATION_COLS} FROM reinforce_applications WHERE id = ?1"),
            [id],
            application_row,
        )?;
        tx.commit()?;
        Ok(app)
    }

    /// Approve in ONE transaction (seed 002 L29): the pending row, the new
    /// account (`is_agent`, no fixed code, owned by the applicant), the
    /// status. A name taken while it waited → 409 `conflict`, nothing
    /// written, the application still pending.
    pub fn approve(&mut self, now: i64, id: i64) -> ApiResult<ApprovedApplication> {
        let tx = self.conn.transaction()?;
        let app = tx
            .query_row(
                &format!("SELECT {APPLICATION_COLS} FROM reinforce_applications WHERE id = ?1"),
                [id],
                application_row,
            )
            .optional()?
            .ok_or_else(|| ApiError::not_found(format!("no application {id}")))?;
        if app.status != "pending" {
            return Err(ApiError::conflict(
                codes::CONFLICT,
                format!("application {id} is {}", app.status),
            ));
        }
        let agent = insert_agent(
            &tx,
            now,
            &app.name,
            app.nickname.as_deref(),
            false,
            Some(app.applicant_id),
        )?;
        tx.execute(
            "UPDATE reinforce_applications SET status = 'approved', agent_id = ?1 WHERE id = ?2",
            params![agent.id, id],
        )?;
        tx.commit()?;
        Ok(ApprovedApplication {
            application: ReinforceApplication {
                status: "approved".into(),
                agent_id: Some(agent.id),
                ..app
            },
            agent,
        })
    }

    /// The owner's key rotation (seed 002 L29): revoke the live keys and
    /// mint a new one (90 days) in ONE transaction; a failure leaves the
    /// old keys working. Returns the key and its expiry.
    pub fn rotate_reinforce_key(
        &mut self,
        now: i64,
        caller: UserId,
        agent: UserId,
    ) -> ApiResult<(String, i64)> {
        let tx = self.conn.transaction()?;
        require_owner(&tx, caller, agent)?;
        if !is_active(&tx, agent)? {
            return Err(ApiError::forbidden(
                "the account is inactive: no key can be minted for it",
            ));
        }
        revoke_live_keys(&tx, now, agent)?;
        let minted = insert_mcp_key(&tx, now, agent, None)?;
        trip(&mut self.faults, FaultPoint::RotateBeforeCommit)?;
        tx.commit()?;
        Ok(minted)
    }

    /// The owner revokes every live key of the account.
    pub fn revoke_reinforce_key(
        &mut self,
        now: i64,
        caller: UserId,
        agent: UserId,
    ) -> ApiResult<RevokedKeys> {
        let tx = self.conn.transaction()?;
        require_owner(&tx, caller, agent)?;
        let revoked = revoke_live_keys(&tx, now, agent)?;
        tx.commit()?;
        Ok(RevokedKeys {
            user_id: agent,
            revoked,
        })
    }

    // ------------------------------------------------------------ presence, usage

    /// Agents only; a reported conversation must be one the caller is a
    /// member of (404 unknown, 403 `not_member`).
    pub fn heartbeat(
        &mut self,
        now: i64,
        user: UserId,
        conversation: Option<ConversationId>,
    ) -> ApiResult<()> {
        require_agent(&self.conn, user, "send heartbeats")?;
        if let Some(conv) = conversation {
            require_member(&self.conn, conv, user)?;
        }
        self.conn.execute(
            "UPDATE users SET last_beat_at = ?1 WHERE id = ?2",
            [now, user],
        )?;
        Ok(())
    }

    /// Every agent's presence, computed now from its last heartbeat.
    pub fn presence(&self, now: i64) -> ApiResult<Vec<Presence>> {
        let mut st = self
            .conn
            .prepare("SELECT id, last_beat_at FROM users WHERE is_agent = 1 ORDER BY id")?;
        let v = st
            .query_map([], |r| {
                let last: Option<i64> = r.get(1)?;
                Ok(Presence {
                    user_id: r.get(0)?,
                    last_beat_at: last,
                    present: rules::is_present(last, now, presence_timeout()),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    /// The per-agent usage upsert: each reported number (0 or more)
    /// replaces the stored one, a null or negative one keeps it. Agents only.
    /// Answers the account's totals after the upsert; `card_id` is ignored
    /// (a card's cost comes from its snapshots).
    pub fn usage(&mut self, now: i64, user: UserId, req: &UsageReport) -> ApiResult<UsageReport> {
        let tx = self.conn.transaction()?;
        require_agent(&tx, user, "report usage")?;
        let stored: Option<(Option<i64>, Option<i64>, Option<i64>)> = tx
            .query_row(
                "SELECT tokens_in, tokens_cached_in, tokens_out FROM agent_usage WHERE user_id = ?1",
                [user],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let (old_in, old_cached, old_out) = stored.unwrap_or_default();
        let totals = UsageReport {
            card_id: None,
            tokens_in: rules::upsert_usage(old_in, req.tokens_in),
            tokens_cached_in: rules::upsert_usage(old_cached, req.tokens_cached_in),
            tokens_out: rules::upsert_usage(old_out, req.tokens_out),
        };
        tx.execute(
            "INSERT INTO agent_usage (user_id, tokens_in, tokens_cached_in, tokens_out, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (user_id) DO UPDATE SET \
             tokens_in = excluded.tokens_in, tokens_cached_in = excluded.tokens_cached_in, \
             tokens_out = excluded.tokens_out, updated_at = excluded.updated_at",
            params![
                user,
                totals.tokens_in,
                totals.tokens_cached_in,
                totals.tokens_out,
                now
            ],
        )?;
        tx.commit()?;
        Ok(totals)
    }

    // ------------------------------------------------------------ cards

    /// Assign a card in room `req.conversation_id` (one transaction).
    /// `creator` is the calling user; `None` is the operator.
    pub fn create_card(
        &mut self,
        now: i64,
        creator: Option<UserId>,
        req: &AdminCreateCard,
    ) -> ApiResult<Card> {
        let (conv, c) = (req.conversation_id, &req.task);
        if c.title.trim().is_empty() {
            return Err(ApiError::bad_request("a card needs a title"));
        }
        let tx = self.conn.transaction()?;
        if let Some(a) = c.assignee_id
            && load_user(&tx, a)?.is_none()
        {
            return Err(ApiError::not_found(format!("no user {a}")));
        }
        if !conversation_exists(&tx, conv)? {
            return Err(ApiError::not_found(format!("no conversation {conv}")));
        }
        // A user assigns cards only in rooms they are in; the operator
        // (`creator` None) anywhere. Nobody assigns to a human or outside
        // the card's room.
        if let Some(caller) = creator {
            require_member(&tx, conv, caller)?;
        }
        if let Some(a) = c.assignee_id {
            require_assignable(&tx, a, conv)?;
        }
        require_room_message(&tx, conv, c.message_id, "message_id")?;
        if let Some(parent) = c.parent_id {
            let p = load_card(&tx, parent)?;
            if let Some(caller) = creator {
                require_actor(&p, caller, "add sub-cards to it")?;
            }
            if p.card.conversation_id != conv {
                return Err(ApiError::bad_request(format!(
                    "card {parent} lives in room {}; its sub-cards live there too",
                    p.card.conversation_id
                )));
            }
            if !p.card.status.is_live() {
                return Err(ApiError::conflict(
                    codes::INVALID_TRANSITION,
                    format!("card {parent} is finished; it takes no sub-cards"),
                ));
            }
            let live: i64 = tx.query_row(
                "SELECT COUNT(*) FROM cards WHERE parent_id = ?1 \
                 AND status IN ('queued', 'working')",
                [parent],
                |r| r.get(0),
            )?;
            if live >= limits::MAX_LIVE_SUBCARDS as i64 {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    codes::TOO_MANY_SUBCARDS,
                    format!(
                        "card {parent} already has {live} live sub-cards (at most {})",
                        limits::MAX_LIVE_SUBCARDS
                    ),
                ));
            }
        }
        let creator = creator.or(req.creator_id);
        tx.execute(
            "INSERT INTO cards (title, status, assignee_id, creator_id, parent_id, \
             conversation_id, message_id, created_at, updated_at) \
             VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                c.title,
                c.assignee_id,
                creator,
                c.parent_id,
                conv,
                c.message_id,
                now
            ],
        )?;
        let id = tx.last_insert_rowid();
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(card)
    }

    /// The cards `viewer` may see that match `f`, newest first.
    pub fn list_cards(&self, viewer: UserId, f: &CardFilter) -> ApiResult<Vec<Card>> {
        self.query_cards(Some(viewer), f)
    }

    /// Every card that matches `f`, whoever may see it (the operator
    /// surface), newest first.
    pub fn admin_cards(&self, f: &CardFilter) -> ApiResult<Vec<Card>> {
        self.query_cards(None, f)
    }

    fn query_cards(&self, viewer: Option<UserId>, f: &CardFilter) -> ApiResult<Vec<Card>> {
        let mut st = self.conn.prepare(&format!(
            "{CARD_SELECT} WHERE (:viewer IS NULL OR {CARD_VISIBLE}) \
             AND (:assignee IS NULL OR c.assignee_id = :assignee) \
             AND (:status IS NULL OR c.status = :status) \
             AND (:parent IS NULL OR c.parent_id = :parent) \
             AND (:conv IS NULL OR c.conversation_id = :conv) \
             AND (:id IS NULL OR c.id = :id) ORDER BY c.id DESC"
        ))?;
        let v = st
            .query_map(
                rusqlite::named_params! {
                    ":viewer": viewer,
                    ":assignee": f.assignee_id,
                    ":status": f.status.map(status_str),
                    ":parent": f.parent_id,
                    ":conv": f.conversation_id,
                    ":id": f.id,
                },
                |r| card_row(r).map(|c| c.card),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    /// One card, if `viewer` may see it (else 404).
    pub fn card(&self, viewer: UserId, id: CardId) -> ApiResult<Card> {
        Ok(load_visible_card(&self.conn, id, viewer)?.card)
    }

    /// One card of room `cid`, if `viewer` may see it (else 404).
    pub fn card_in(&self, viewer: UserId, cid: ConversationId, id: CardId) -> ApiResult<Card> {
        let card = load_visible_card(&self.conn, id, viewer)?.card;
        if card.conversation_id != cid {
            return Err(ApiError::not_found(format!("no card {id} in room {cid}")));
        }
        Ok(card)
    }

    /// queued → working. Never opens a lease. One top-level working card
    /// per agent; an unassigned card is assigned to the claimer.
    pub fn claim(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
    ) -> ApiResult<Card> {
        let tx = self.conn.transaction()?;
        let row = load_card_in(&tx, cid, id)?;
        require_agent(&tx, caller, "work cards")?;
        if row.card.assignee_id.is_some() {
            require_actor(&row, caller, "change it")?;
        } else {
            // The card becomes the claimer's: one who may see it and may be
            // its assignee.
            load_visible_card(&tx, id, caller)?;
            require_assignable(&tx, caller, row.card.conversation_id)?;
        }
        let to = rules::claim(row.card.status).map_err(|r| refusal(r, "claim"))?;
        let assignee = row.card.assignee_id.unwrap_or(caller);
        if row.card.parent_id.is_none() {
            let working: Option<CardId> = tx
                .query_row(
                    "SELECT id FROM cards WHERE assignee_id = ?1 AND parent_id IS NULL \
                     AND status = 'working' LIMIT 1",
                    [assignee],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(other) = working {
                return Err(ApiError::conflict(
                    codes::AGENT_BUSY,
                    format!("card {other} is already working; finish it first"),
                ));
            }
        }
        tx.execute(
            &format!(
                "UPDATE cards SET status = ?1, assignee_id = ?2, updated_at = ?3, \
                 {START_SNAPSHOT} WHERE id = ?4"
            ),
            params![status_str(to), assignee, now, id],
        )?;
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(card)
    }

    /// `…/progress`: `{"claim":true}` claims; otherwise a progress line,
    /// which extends an existing lease (never opens one) and, from an
    /// agent, counts as a heartbeat.
    pub fn progress(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
        req: &TaskProgress,
    ) -> ApiResult<Card> {
        if req.claim {
            return self.claim(now, caller, cid, id);
        }
        let Some(line) = req.line.as_deref().filter(|l| !l.trim().is_empty()) else {
            return Err(ApiError::bad_request(
                "progress takes {\"claim\":true} or a non-empty line",
            ));
        };
        let tx = self.conn.transaction()?;
        let row = load_card_in(&tx, cid, id)?;
        require_actor(&row, caller, "change it")?;
        if row.card.status != CardStatus::Working {
            return Err(ApiError::conflict(
                codes::NOT_WORKING,
                "progress is reported on working cards only",
            ));
        }
        let lease = rules::progress_lease(
            row.card.lease_expires_at,
            now,
            limits::LEASE_DURATION.as_secs() as i64,
        );
        tx.execute(
            "INSERT INTO card_notes (card_id, author_id, note, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, caller, line, now],
        )?;
        tx.execute(
            "UPDATE cards SET lease_expires_at = ?1, updated_at = ?2 WHERE id = ?3",
            params![lease, now, id],
        )?;
        tx.execute(
            "UPDATE users SET last_beat_at = ?1 WHERE id = ?2 AND is_agent = 1",
            [now, caller],
        )?;
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(card)
    }

    /// Renew: the only opener of a lease. A card that is not working → 404.
    pub fn renew(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
    ) -> ApiResult<LeaseResponse> {
        let tx = self.conn.transaction()?;
        let row = load_card_in(&tx, cid, id)?;
        require_actor(&row, caller, "change it")?;
        let until = rules::renew(
            row.card.status,
            now,
            limits::LEASE_DURATION.as_secs() as i64,
        )
        .map_err(|r| refusal(r, "renew"))?;
        tx.execute(
            "UPDATE cards SET lease_expires_at = ?1, updated_at = ?2 WHERE id = ?3",
            params![until, now, id],
        )?;
        tx.commit()?;
        Ok(LeaseResponse {
            lease_expires_at: until,
            renew_after_sec: limits::RENEW_AFTER_SECS,
        })
    }

    /// Finish a card and, in the same transaction, cancel every live
    /// descendant. A card already finished answers `updated: false` and
    /// changes nothing.
    pub fn finish(
        &mut self,
        now: i64,
        caller: UserId,
        cid: ConversationId,
        id: CardId,
        req: &FinishTask,
    ) -> ApiResult<FinishAnswer> {
        let tx = self.conn.transaction()?;
        let row = load_card_in(&tx, cid, id)?;
        require_actor(&row, caller, "change it")?;
        let to = match rules::finish(row.card.status, req.status, req.error.as_deref())
            .map_err(|r| refusal(r, "this finish"))?
        {
            rules::Finish::Move(to) => to,
            rules::Finish::Unchanged => {
                return Ok(FinishAnswer {
                    updated: false,
                    task: None,
                });
            }
        };
        require_room_message(&tx, cid, req.result_message_id, "result_message_id")?;
        let error = if to == CardStatus::Failed {
            req.error.clone()
        } else {
            None
        };
        tx.execute(
            &format!(
                "UPDATE cards SET {END_SNAPSHOT}, status = ?1, error = ?2, result = ?3, \
                 result_message_id = ?4, lease_expires_at = NULL, updated_at = ?5 WHERE id = ?6"
            ),
            params![
                status_str(to),
                error,
                req.result,
                req.result_message_id,
                now,
                id
            ],
        )?;
        tx.execute(
            &format!(
                "WITH RECURSIVE d(id) AS ( \
                   SELECT id FROM cards WHERE parent_id = ?1 \
                   UNION SELECT c.id FROM cards c JOIN d ON c.parent_id = d.id) \
                 UPDATE cards SET {END_SNAPSHOT}, status = 'cancelled', \
                 lease_expires_at = NULL, updated_at = ?2 \
                 WHERE id IN (SELECT id FROM d) AND status IN ('queued', 'working')"
            ),
            params![id, now],
        )?;
        let card = load_card(&tx, id)?.card;
        tx.commit()?;
        Ok(FinishAnswer {
            updated: true,
            task: Some(card),
        })
    }

    // ------------------------------------------------------------ windows

    /// An upsert keyed by (account, installation, native session): a window
    /// registered again keeps its `window_id` and its revocation, gets the
    /// new `runtime_id`, and gains only hinted rooms it never had.
    pub fn register_window(
        &mut self,
        now: i64,
        user: UserId,
        req: &RegisterWindow,
    ) -> ApiResult<RegisteredWindow> {
        let tx = self.conn.transaction()?;
        let existing: Option<(String, String)> = tx
            .query_row(
                "SELECT id, rooms_hint FROM windows \
                 WHERE user_id = ?1 AND installation_id = ?2 AND native_session_id = ?3",
                params![user, req.installation_id, req.native_session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let id = match existing {
            Some((id, hint)) => {
                let old: Vec<ConversationId> = serde_json::from_str(&hint).unwrap_or_default();
                let rooms = rules::merge_rooms_hint(&old, &req.rooms_hint);
                tx.execute(
                    "UPDATE windows SET runtime_id = ?1, rooms_hint = ?2 WHERE id = ?3",
                    params![
                        req.runtime_id,
                        serde_json::to_string(&rooms).unwrap_or_else(|_| "[]".into()),
                        id
                    ],
                )?;
                id
            }
            None => {
                let id = uuid::Uuid::new_v4().simple().to_string();
                tx.execute(
                    "INSERT INTO windows (id, user_id, installation_id, machine, client, \
                     native_session_id, runtime_id, rooms_hint, fallback_hint, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![
                        id,
                        user,
                        req.installation_id,
                        req.machine,
                        req.client,
                        req.native_session_id,
                        req.runtime_id,
                        serde_json::to_string(&req.rooms_hint).unwrap_or_else(|_| "[]".into()),
                        req.fallback_hint,
                        now
                    ],
                )?;
                id
            }
        };
        tx.commit()?;
        Ok(RegisteredWindow { window_id: id })
    }

    /// Record the sync time and answer what the window handles now.
    pub fn sync_window(&mut self, now: i64, user: UserId, id: &str) -> ApiResult<WindowSync> {
        let tx = self.conn.transaction()?;
        let n = tx.execute(
            "UPDATE windows SET last_sync_at = ?1 WHERE id = ?2 AND user_id = ?3",
            params![now, id, user],
        )?;
        if n == 0 {
            return Err(window_not_found(id));
        }
        let views = window_views(&tx, user)?;
        let me = views
            .iter()
            .find(|w| w.window_id == id)
            .cloned()
            .ok_or_else(|| window_not_found(id))?;
        let mut st = tx.prepare("SELECT conversation_id FROM members WHERE user_id = ?1")?;
        let rooms = st
            .query_map([user], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<ConversationId>>>()?;
        drop(st);
        let sync = rules::window_assignment(&me, &views, &rooms, now, presence_timeout());
        tx.commit()?;
        Ok(sync)
    }

    pub fn revoke_window(&mut self, now: i64, user: UserId, id: &str) -> ApiResult<WindowInfo> {
        let n = self.conn.execute(
            "UPDATE windows SET revoked = 1 WHERE id = ?1 AND user_id = ?2",
            params![id, user],
        )?;
        if n == 0 {
            return Err(window_not_found(id));
        }
        self.windows(now, user)?
            .into_iter()
            .find(|w| w.window_id == id)
            .ok_or_else(|| window_not_found(id))
    }

    /// The account's windows; `present` is computed now, never stored.
    pub fn windows(&self, now: i64, user: UserId) -> ApiResult<Vec<WindowInfo>> {
        let mut st = self.conn.prepare(
            "SELECT id, user_id, machine, client, revoked, last_sync_at FROM windows \
             WHERE user_id = ?1 ORDER BY created_at, id",
        )?;
        let v = st
            .query_map([user], |r| {
                let last: Option<i64> = r.get(5)?;
                Ok(WindowInfo {
                    window_id: r.get(0)?,
                    user_id: r.get(1)?,
                    machine: r.get(2)?,
                    client: r.get(3)?,
                    revoked: r.get(4)?,
                    last_sync_at: last,
                    present: rules::is_present(last, now, presence_timeout()),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(v)
    }

    /// Decode an image payload (base64) for [`Store::send`].
    pub fn decode_image(data_base64: &str, mime: &str) -> ApiResult<Vec<u8>> {
        if !mime.starts_with("image/") {
            return Err(ApiError::bad_request("mime must be an image/… type"));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data_base64.trim())
            .map_err(|_| ApiError::bad_request("data_base64 is not valid base64"))?;
        if bytes.is_empty() {
            return Err(ApiError::bad_request("the image is empty"));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database written before cards kept usage snapshots (and while
    /// usage was a table of reports) opens, gains the columns, and reads.
    #[test]
    fn a_database_from_before_the_usage_snapshots_opens_and_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, \
                 email TEXT NOT NULL UNIQUE, username TEXT NOT NULL UNIQUE, nickname TEXT, \
                 is_agent INTEGER NOT NULL, created_at INTEGER NOT NULL, last_beat_at INTEGER);
                 CREATE TABLE cards (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, \
                 status TEXT NOT NULL, assignee_id INTEGER REFERENCES users(id), \
                 creator_id INTEGER REFERENCES users(id), parent_id INTEGER REFERENCES cards(id), \
                 conversation_id INTEGER, error TEXT, lease_expires_at INTEGER, \
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
                 CREATE TABLE usage_reports (id INTEGER PRIMARY KEY AUTOINCREMENT, \
                 user_id INTEGER NOT NULL, card_id INTEGER, tokens_in INTEGER, \
                 tokens_cached_in INTEGER, tokens_out INTEGER, created_at INTEGER NOT NULL);
                 INSERT INTO users (email, username, is_agent, created_at) \
                   VALUES ('bolt@example.test', 'bolt', 1, 1);
                 INSERT INTO cards (title, status, assignee_id, created_at, updated_at) \
                   VALUES ('old', 'working', 1, 1, 1);
                 INSERT INTO usage_reports (user_id, card_id, tokens_in, created_at) \
                   VALUES (1, 1, 9223372036854775807, 1), (1, 1, 9223372036854775807, 1);",
            )
            .unwrap();
        }
        let mut store = Store::open(Some(&path)).unwrap();
        let card = store.card(1, 1).unwrap();
        assert_eq!(card.title, "old");
        assert_eq!(card.tokens_in, None, "the old reports are not summed");
        assert_eq!(
            store.list_cards(1, &CardFilter::default()).unwrap().len(),
            1
        );
        let totals = store
            .usage(
                2,
                1,
                &UsageReport {
                    card_id: None,
                    tokens_in: Some(5),
                    tokens_cached_in: None,
                    tokens_out: None,
                },
            )
            .unwrap();
        assert_eq!(totals.tokens_in, Some(5));
        drop(store);
        // Opening again changes nothing.
        let store = Store::open(Some(&path)).unwrap();
        assert_eq!(store.card(1, 1).unwrap().title, "old");
    }

    /// A key stored before keys had an expiry still works, and expires the
    /// default span after it was created (30 s of skew).
    #[test]
    fn an_mcp_key_from_before_expiry_opens_and_expires_from_its_creation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        let key = "hoopmcp_old";
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, \
                 email TEXT NOT NULL UNIQUE, username TEXT NOT NULL UNIQUE, nickname TEXT, \
                 is_agent INTEGER NOT NULL, created_at INTEGER NOT NULL, last_beat_at INTEGER);
                 CREATE TABLE mcp_keys (key_sha256 TEXT PRIMARY KEY, \
                 user_id INTEGER NOT NULL REFERENCES users(id), created_at INTEGER NOT NULL);
                 INSERT INTO users (email, username, is_agent, created_at) \
                   VALUES ('bolt@example.test', 'bolt', 1, 1);",
            )
            .unwrap();
            old.execute(
                "INSERT INTO mcp_keys (key_sha256, user_id, created_at) VALUES (?1, 1, 100)",
                [key_hash(key)],
            )
            .unwrap();
        }
        let store = Store::open(Some(&path)).unwrap();
        let last = 100 + constants::MCP_KEY_DEFAULT_TTL_SECS + constants::MCP_BEARER_SKEW_SECS;
        let user = store.mcp_user(last, &key_hash(key)).unwrap();
        assert_eq!(user.map(|u| u.id), Some(1));
        assert!(store.mcp_user(last + 1, &key_hash(key)).unwrap().is_none());
    }

    #[test]
    fn accounts_from_before_account_states_open_log_in_and_redeem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, \
                 email TEXT NOT NULL UNIQUE, username TEXT NOT NULL UNIQUE, nickname TEXT, \
                 is_agent INTEGER NOT NULL, created_at INTEGER NOT NULL, last_beat_at INTEGER);
                 CREATE TABLE provision_keys (key_sha256 TEXT PRIMARY KEY, \
                 user_id INTEGER NOT NULL REFERENCES users(id), kind TEXT NOT NULL, \
                 conversation_id INTEGER, created_at INTEGER NOT NULL, redeemed_at INTEGER);
                 INSERT INTO users (email, username, is_agent, created_at) \
                   VALUES ('bolt@example.test', 'bolt', 1, 1), ('ann@example.test', 'ann', 0, 1);",
            )
            .unwrap();
        }
        let mut store = Store::open(Some(&path)).unwrap();
        // Every old account is active; its agents keep the fixed code.
        for email in ["bolt@example.test", "ann@example.test"] {
            assert!(store.fixed_code_user(email).unwrap().is_some(), "{email}");
        }
        assert!(store.active_user(1).unwrap().is_some());
        let (key, _) = store
            .create_provision_key(10, &CreateProvisionKey::default())
            .unwrap();
        let req = RedeemRequest {
            key,
            name: "nova".into(),
            machine: None,
            conversation_id: None,
        };
        let r = store.redeem(11, &req, None).unwrap();
        assert_eq!((r.user.username.as_str(), r.user.is_agent), ("nova", true));
        assert!(store.fixed_code_user(&r.user.email).unwrap().is_some());
    }
}
