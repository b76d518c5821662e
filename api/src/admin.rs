//! The operator client of the reference backend's admin surface
//! ([`crate::routes::admin`]): create users and rooms, post as anyone, mint
//! keys, create cards, push events, move the server clock. `hoop backend …`
//! and the tests drive a running reference backend through it. Production has
//! no such surface; nothing else in the toolkit calls it.
//!
//! Every request carries `Authorization: Bearer <admin token>`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::routes::{self, admin as r};
use crate::types::{
    AssignTask, Card, Conversation, ConversationId, ErrorBody, Member, Message, MessageId,
    MessageKind, MessagePage, ReinforceApplication, RevokedKeys, SendMessage, User, UserId,
};

// ---------------------------------------------------------------- wire types

/// `POST admin::USERS`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct CreateUser {
    pub email: String,
    pub username: String,
    #[serde(default)]
    pub nickname: Option<String>,
    #[serde(default)]
    pub is_agent: bool,
}

/// `POST admin::CONVERSATIONS`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct CreateConversation {
    pub title: String,
    #[serde(default)]
    pub is_workroom: bool,
    #[serde(default)]
    pub member_ids: Vec<UserId>,
}

/// `POST admin::CONVERSATION_MEMBERS` → the members after the add.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AddMember {
    pub user_id: UserId,
}

/// `POST admin::POST_AS`: a message sent as `sender_id`, through the same
/// checks as the user's own REST sends. `kind` lets an operator seed a room
/// with kinds the toolkit does not send itself (`voice`, or any word);
/// `image` is refused (images go through the images route).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct PostAs {
    pub sender_id: UserId,
    #[serde(flatten)]
    pub message: SendMessage,
    #[serde(default)]
    pub kind: MessageKind,
}

/// `POST admin::MCP_KEYS`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MintMcpKey {
    pub user_id: UserId,
    /// The key's life in seconds; absent → 90 days, longer than a year →
    /// clamped to a year (seed 002 L7 §0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<i64>,
}

/// The freshly minted key: shown once, stored by the server as SHA-256 only.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MintedMcpKey {
    pub user_id: UserId,
    pub key: String,
    /// `claude mcp add -s user --transport http hoop <base>/mcp --header …`.
    pub ready_line: String,
}

impl std::fmt::Debug for MintedMcpKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MintedMcpKey")
            .field("user_id", &self.user_id)
            .field("key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// `POST admin::MCP_KEYS_REVOKE`: end every live key of a user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RevokeMcpKeys {
    pub user_id: UserId,
}

/// What redeeming a provisioning key creates.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProvisionKind {
    /// A daemon account (`is_agent`, `fixed_otp`): logs in with email + the
    /// fixed code (production's only kind, seed 002 L31).
    #[default]
    Sentinel,
    /// An MCP-key-only account (`is_agent`, no fixed code): redeeming mints
    /// a `hoopmcp_…` key. The reference backend's shortcut; production
    /// makes these through application and approval.
    Reinforcement,
}

/// `POST admin::PROVISION_KEYS`. The key creates a NEW account when
/// redeemed; it names no existing user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct CreateProvisionKey {
    #[serde(default)]
    pub kind: ProvisionKind,
    /// A room the account joins on redeem.
    #[serde(default)]
    pub conversation_id: Option<ConversationId>,
    /// The key's life in seconds; absent → 7 days, longer than 90 days →
    /// clamped to 90 days (seed 002 L31).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<i64>,
}

#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CreatedProvisionKey {
    /// `hoopprov_…`, shown once; stored as SHA-256 only.
    pub key: String,
    pub kind: ProvisionKind,
    #[serde(default)]
    pub conversation_id: Option<ConversationId>,
    /// Unusable from this time on (Unix seconds).
    pub expires_at: i64,
}

impl std::fmt::Debug for CreatedProvisionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedProvisionKey")
            .field("key", &"<redacted>")
            .field("kind", &self.kind)
            .field("conversation_id", &self.conversation_id)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// `POST admin::REINFORCE_APPROVE` → the application, now approved, and
/// the account it created.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ApprovedApplication {
    pub application: ReinforceApplication,
    pub agent: User,
}

/// `POST admin::USER_STATE`: an inactive (disabled) account's MCP keys,
/// JWTs and logins are refused; no key can be minted for it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SetUserState {
    pub active: bool,
}

/// A person's one-time login code: single use, until `expires_at`.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoginCode {
    pub user_id: UserId,
    pub code: String,
    pub expires_at: i64,
}

impl std::fmt::Debug for LoginCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginCode")
            .field("user_id", &self.user_id)
            .field("code", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserState {
    pub user_id: UserId,
    pub active: bool,
}

/// A place inside a transaction where an armed fault fails the request
/// (500 `internal`) after its writes and before the commit.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum FaultPoint {
    /// Redeem: the key taken, the account created, the room joined.
    RedeemBeforeCommit,
    /// Reinforcement key rotation: the old keys revoked, the new one stored.
    RotateBeforeCommit,
}

/// `POST admin::FAULTS`: fail the next `times` requests reaching `point`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ArmFault {
    pub point: FaultPoint,
    #[serde(default = "one")]
    pub times: u32,
}

fn one() -> u32 {
    1
}

/// `GET /v1/admin/cards?conversation_id=&id=`: which cards to list.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AdminCardQuery {
    #[serde(default)]
    pub conversation_id: Option<ConversationId>,
    #[serde(default)]
    pub id: Option<crate::types::CardId>,
}

/// `POST admin::CARDS`: a card assigned by the operator in a room
/// (optionally on behalf of `creator_id`), under the same rules as
/// `POST /v1/workrooms/{cid}/tasks`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct AdminCreateCard {
    pub conversation_id: ConversationId,
    #[serde(flatten)]
    pub task: AssignTask,
    #[serde(default)]
    pub creator_id: Option<UserId>,
}

/// Which event `admin::PUSH` sends.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PushEvent {
    /// `workroom.task.recheck`.
    Recheck,
    /// `provision.pending`.
    ProvisionPending,
}

/// `POST admin::PUSH`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Push {
    pub user_id: UserId,
    pub event: PushEvent,
    #[serde(default)]
    pub conversation_id: Option<ConversationId>,
}

/// How many open WebSocket connections received the event.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Pushed {
    pub delivered: usize,
}

/// `POST admin::CLOCK_ADVANCE`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClockAdvance {
    pub secs: i64,
}

/// The server's time after the advance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClockNow {
    pub now: i64,
}

// ---------------------------------------------------------------- client

#[derive(Debug, Error)]
pub enum AdminError {
    #[error("cannot reach the backend: {0}")]
    Http(#[from] reqwest::Error),
    #[error("backend answered {status}: {} ({})", .body.error.message, .body.error.code)]
    Api { status: u16, body: ErrorBody },
    #[error("backend answered {status} with an unreadable body")]
    Undecodable { status: u16 },
    #[error("no user matches {0:?}")]
    NoSuchUser(String),
}

/// A client of the admin surface. The token is sent on every request and
/// never logged or printed.
#[derive(Clone)]
pub struct AdminClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for AdminClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl AdminClient {
    pub fn new(base_url: &str, admin_token: &str) -> AdminClient {
        AdminClient {
            base: base_url.trim_end_matches('/').to_string(),
            token: admin_token.to_string(),
            http: reqwest::Client::new(),
        }
    }

    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, AdminError> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await?;
        if (200..300).contains(&status) {
            serde_json::from_slice(&bytes).map_err(|_| AdminError::Undecodable { status })
        } else {
            match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(body) => Err(AdminError::Api { status, body }),
                Err(_) => Err(AdminError::Undecodable { status }),
            }
        }
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, AdminError> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn create_user(&self, req: &CreateUser) -> Result<User, AdminError> {
        self.post(r::USERS, req).await
    }

    pub async fn list_users(&self) -> Result<Vec<User>, AdminError> {
        self.call::<(), _>(reqwest::Method::GET, r::USERS, None)
            .await
    }

    /// Find a user by id, username or email.
    pub async fn resolve_user(&self, who: &str) -> Result<User, AdminError> {
        let users = self.list_users().await?;
        let id = who.parse::<UserId>().ok();
        users
            .into_iter()
            .find(|u| Some(u.id) == id || u.username == who || u.email == who)
            .ok_or_else(|| AdminError::NoSuchUser(who.to_string()))
    }

    pub async fn create_conversation(
        &self,
        req: &CreateConversation,
    ) -> Result<Conversation, AdminError> {
        self.post(r::CONVERSATIONS, req).await
    }

    pub async fn add_member(
        &self,
        conversation: ConversationId,
        user_id: UserId,
    ) -> Result<Vec<Member>, AdminError> {
        self.post(
            &routes::fill(r::CONVERSATION_MEMBERS, conversation),
            &AddMember { user_id },
        )
        .await
    }

    pub async fn post_as(
        &self,
        conversation: ConversationId,
        req: &PostAs,
    ) -> Result<Message, AdminError> {
        self.post(&routes::fill(r::POST_AS, conversation), req)
            .await
    }

    /// A page of any conversation, newest first (`limit` is clamped by the
    /// server; `before` pages back).
    pub async fn read_messages(
        &self,
        conversation: ConversationId,
        limit: u32,
        before: Option<MessageId>,
    ) -> Result<MessagePage, AdminError> {
        let mut path = format!(
            "{}?limit={limit}",
            routes::fill(r::CONVERSATION_MESSAGES, conversation)
        );
        if let Some(b) = before {
            path.push_str(&format!("&before={b}"));
        }
        self.call::<(), _>(reqwest::Method::GET, &path, None).await
    }

    pub async fn mint_mcp_key(&self, user_id: UserId) -> Result<MintedMcpKey, AdminError> {
        self.mint_mcp_key_for(user_id, None).await
    }

    /// Mint a key living `ttl_secs` (the server clamps it to a year).
    pub async fn mint_mcp_key_for(
        &self,
        user_id: UserId,
        ttl_secs: Option<i64>,
    ) -> Result<MintedMcpKey, AdminError> {
        self.post(r::MCP_KEYS, &MintMcpKey { user_id, ttl_secs })
            .await
    }

    pub async fn create_provision_key(
        &self,
        req: &CreateProvisionKey,
    ) -> Result<CreatedProvisionKey, AdminError> {
        self.post(r::PROVISION_KEYS, req).await
    }

    /// Revoke every live MCP key of `user_id`.
    pub async fn revoke_mcp_keys(&self, user_id: UserId) -> Result<RevokedKeys, AdminError> {
        self.post(r::MCP_KEYS_REVOKE, &RevokeMcpKeys { user_id })
            .await
    }

    /// Approve a reinforcement application: creates the agent account.
    pub async fn approve_application(&self, id: i64) -> Result<ApprovedApplication, AdminError> {
        self.post(
            &routes::fill(r::REINFORCE_APPROVE, id),
            &serde_json::json!({}),
        )
        .await
    }

    /// Issue a person's one-time login code (replacing any earlier one).
    pub async fn issue_login_code(&self, user_id: UserId) -> Result<LoginCode, AdminError> {
        self.post(
            &routes::fill(r::USER_LOGIN_CODE, user_id),
            &serde_json::json!({}),
        )
        .await
    }

    /// Make an account active or inactive.
    pub async fn set_user_active(
        &self,
        user_id: UserId,
        active: bool,
    ) -> Result<UserState, AdminError> {
        self.post(
            &routes::fill(r::USER_STATE, user_id),
            &SetUserState { active },
        )
        .await
    }

    /// Fail the next `times` requests reaching `point` (answered 500, the
    /// transaction rolled back).
    pub async fn arm_fault(&self, point: FaultPoint, times: u32) -> Result<ArmFault, AdminError> {
        self.post(r::FAULTS, &ArmFault { point, times }).await
    }

    pub async fn create_card(&self, req: &AdminCreateCard) -> Result<Card, AdminError> {
        self.post(r::CARDS, req).await
    }

    /// Every card of a room, or one card, newest first.
    pub async fn cards(&self, q: &AdminCardQuery) -> Result<Vec<Card>, AdminError> {
        let mut path = r::CARDS.to_string();
        let mut sep = '?';
        for (k, v) in [("conversation_id", q.conversation_id), ("id", q.id)] {
            if let Some(v) = v {
                path.push_str(&format!("{sep}{k}={v}"));
                sep = '&';
            }
        }
        self.call::<(), _>(reqwest::Method::GET, &path, None).await
    }

    pub async fn push(&self, req: &Push) -> Result<Pushed, AdminError> {
        self.post(r::PUSH, req).await
    }

    pub async fn advance_clock(&self, secs: i64) -> Result<ClockNow, AdminError> {
        self.post(r::CLOCK_ADVANCE, &ClockAdvance { secs }).await
    }
}
