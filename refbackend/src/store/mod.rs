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
    AgentState, Card, CardId, CardStatus, Conversation, ConversationId, FinishAnswer, FinishTask,
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

mod accounts;
mod cards;
mod rooms;
mod usage;
mod windows;

pub use accounts::key_hash;
pub use cards::CardFilter;

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
    owner_id INTEGER REFERENCES users(id),
    beat_state TEXT
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
CREATE TABLE IF NOT EXISTS login_codes (
    user_id INTEGER PRIMARY KEY REFERENCES users(id),
    code_sha256 TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    tries INTEGER NOT NULL DEFAULT 0
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
const USER_COLUMNS: [(&str, &str, &str); 4] = [
    (
        "fixed_otp",
        "INTEGER NOT NULL DEFAULT 0",
        "UPDATE users SET fixed_otp = is_agent",
    ),
    ("active", "INTEGER NOT NULL DEFAULT 1", ""),
    ("owner_id", "INTEGER REFERENCES users(id)", ""),
    // What the last heartbeat that said so reported (`idle`, `working`).
    ("beat_state", "TEXT", ""),
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

fn is_active(c: &Connection, user: UserId) -> ApiResult<bool> {
    Ok(
        c.query_row("SELECT active FROM users WHERE id = ?1", [user], |r| {
            r.get::<_, bool>(0)
        })
        .optional()?
        .unwrap_or(false),
    )
}

fn new_key(prefix: &str) -> String {
    let bytes: [u8; KEY_BYTES] = rand::random();
    format!("{prefix}{}", hex::encode(bytes))
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

/// Only agent accounts beat, report usage, work cards, hold MCP keys and are
/// provisioned (production checks `is_agent` on each of these).
fn require_agent(c: &Connection, user: UserId, what: &str) -> ApiResult<()> {
    if load_user(c, user)?.is_some_and(|u| u.is_agent) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("only agent accounts {what}")))
    }
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

    /// Arm `point` to fail the next `times` requests reaching it.
    pub fn arm_fault(&mut self, point: FaultPoint, times: u32) {
        self.faults.insert(point, times);
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
        // Every old account is active; its agents keep the fixed code, its
        // people log in with a one-time code.
        let fixed = limits::FIXED_LOGIN_CODE;
        assert!(
            store
                .login_user(5, "bolt@example.test", fixed)
                .unwrap()
                .is_some()
        );
        let (code, _) = store.issue_login_code(5, 2).unwrap();
        assert!(
            store
                .login_user(5, "ann@example.test", &code)
                .unwrap()
                .is_some()
        );
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
        assert!(
            store
                .login_user(12, &r.user.email, fixed)
                .unwrap()
                .is_some()
        );
    }
}
