//! The ONE route table. Every path the toolkit uses against the backend lives
//! here and nowhere else: the clients fill these templates, the reference
//! backend mounts them (axum uses the same `{param}` syntax). Adapting to the
//! production backend's paths is a change to this file alone.
//!
//! Which of these are production facts and which are this project's
//! assumptions is recorded in `docs/backend-contract.md`.

/// Log in with email + fixed one-time code → JWT (production fact: path assumed).
pub const LOGIN: &str = "/v1/auth/login";
/// The logged-in user.
pub const ME: &str = "/v1/me";
/// Conversations the caller is a member of.
pub const CONVERSATIONS: &str = "/v1/conversations";
/// Members of one conversation.
pub const CONVERSATION_MEMBERS: &str = "/v1/conversations/{id}/members";
/// Messages of one conversation: GET newest first (`?limit=&before=`).
pub const CONVERSATION_MESSAGES: &str = "/v1/conversations/{id}/messages";
/// Send a text message (production fact, seed 002 §1.1 step 4): rate
/// limit and mention filter only; no markdown gate, no gap check.
pub const CONVERSATION_TEXT: &str = "/v1/conversations/{id}/text";
/// An image message (base64 body) in one conversation.
pub const CONVERSATION_IMAGES: &str = "/v1/conversations/{id}/images";
/// The WebSocket endpoint (auth by `Authorization: Bearer <jwt>` on upgrade).
pub const WS: &str = "/v1/ws";
/// Heartbeat (production fact) → `next_beat_sec`.
pub const HEARTBEAT: &str = "/v1/workrooms/heartbeat";
/// Who is present (computed on read from heartbeats).
pub const PRESENCE: &str = "/v1/workrooms/presence";
/// Token usage report (production fact).
pub const USAGE: &str = "/v1/workrooms/usage";
/// The caller's visible work cards across rooms: GET
/// (`?assignee=me|any|<id>&status=&parent_id=&conversation_id=&id=`).
/// Path assumed: production's `work_tasks` lists them; its route is not
/// recorded.
pub const TASKS: &str = "/v1/workrooms/tasks";
/// Assign a card in one workroom (production fact, seed 002 L19 step 5):
/// POST, one transaction; the assignee must be an agent member of that room
/// and `message_id` a message of that room.
pub const WORKROOM_TASKS: &str = "/v1/workrooms/{cid}/tasks";
/// One work card of a workroom (GET; path assumed).
pub const WORKROOM_TASK: &str = "/v1/workrooms/{cid}/tasks/{id}";
/// Progress (production fact, seed 002 L19 steps 5-6): `{"claim":true}`
/// claims a queued card (never opens a lease); `{"line":"…"}` reports a
/// line, extends an existing lease only and counts as a heartbeat.
pub const WORKROOM_TASK_PROGRESS: &str = "/v1/workrooms/{cid}/tasks/{id}/progress";
/// Renew the lease: the only opener of a lease (path assumed).
pub const WORKROOM_TASK_LEASE: &str = "/v1/workrooms/{cid}/tasks/{id}/lease";
/// working → done | failed | cancelled, cancelling live descendants; a
/// finished card answers `{"updated":false}` (path assumed).
pub const WORKROOM_TASK_FINISH: &str = "/v1/workrooms/{cid}/tasks/{id}/finish";
/// Register an interactive window (POST) or list windows with presence (GET).
pub const WINDOWS: &str = "/v1/windows";
/// Sync one window → `mode`, `rooms`, `exclude`, `reason`.
pub const WINDOW_SYNC: &str = "/v1/windows/{id}/sync";
/// Revoke one window.
pub const WINDOW_REVOKE: &str = "/v1/windows/{id}/revoke";
/// Redeem a provisioning key (production fact, seed 002 L31): creates a
/// NEW agent account in one transaction.
pub const PROVISION_REDEEM: &str = "/v1/provision-keys/redeem";
/// Apply for a reinforcement account (production fact, seed 002 L29).
pub const REINFORCE_APPLICATIONS: &str = "/v1/reinforce/applications";
/// A reinforcement account's MCP key, by its approved owner: POST rotates
/// (revoke the old keys + mint a new one, one transaction; production fact,
/// seed 002 L29), DELETE revokes (this project's assumption).
pub const REINFORCE_AGENT_KEY: &str = "/v1/reinforce/agents/{id}/key";
/// The push stream for MCP-key holders: `GET`, Server-Sent Events, one
/// `data:` line per event of the key's account (the WebSocket's event JSON).
/// Production has it as a written spec only (seed 002 L9): optional.
pub const EVENTS: &str = "/v1/events";
/// The MCP endpoint (production fact): Streamable HTTP, stateless, POST only.
pub const MCP: &str = "/mcp";

/// Operator surface of the reference backend (not a production route).
pub mod admin {
    /// Create a user (human or agent).
    pub const USERS: &str = "/v1/admin/users";
    /// Create a conversation (room) with members.
    pub const CONVERSATIONS: &str = "/v1/admin/conversations";
    /// Add a member to a conversation.
    pub const CONVERSATION_MEMBERS: &str = "/v1/admin/conversations/{id}/members";
    /// Post a message as any user (bypasses nothing: the same gates apply).
    pub const POST_AS: &str = "/v1/admin/conversations/{id}/messages";
    /// Read any conversation (GET, newest first, `?limit=&before=`): the same
    /// path as [`POST_AS`], the operator's view needs no membership.
    pub const CONVERSATION_MESSAGES: &str = POST_AS;
    /// Mint an MCP key for a user; only its SHA-256 is stored.
    pub const MCP_KEYS: &str = "/v1/admin/mcp-keys";
    /// Create a provisioning key (production's path, seed 002 L31).
    pub const PROVISION_KEYS: &str = "/v1/admin/provision-keys";
    /// Revoke every live MCP key of a user (soft: `revoked_at`).
    pub const MCP_KEYS_REVOKE: &str = "/v1/admin/mcp-keys/revoke";
    /// Approve a reinforcement application (production's path, seed 002 L29;
    /// production authorises an admin user, this surface the admin token).
    pub const REINFORCE_APPROVE: &str = "/v1/admin/reinforce/applications/{id}/approve";
    /// Make an account active or inactive (disabled): an inactive account's
    /// keys and tokens are refused.
    pub const USER_STATE: &str = "/v1/admin/users/{id}/state";
    /// Issue a person's one-time login code (the reference backend mails
    /// nothing; the operator hands the code over).
    pub const USER_LOGIN_CODE: &str = "/v1/admin/users/{id}/login-code";
    /// Arm a one-shot failure inside a transaction (tests and operators
    /// checking that a failed write leaves nothing behind).
    pub const FAULTS: &str = "/v1/admin/faults";
    /// Create a work card for any assignee.
    pub const CARDS: &str = "/v1/admin/cards";
    /// Push a `workroom.task.recheck` or `provision.pending` event to a user.
    pub const PUSH: &str = "/v1/admin/push";
    /// Move the server's clock forward (tests: JWT expiry, presence, leases,
    /// rate windows) without waiting.
    pub const CLOCK_ADVANCE: &str = "/v1/admin/clock/advance";
    /// How many requests the server has answered (benchmarks count the
    /// calls a client makes).
    pub const STATS: &str = "/v1/admin/stats";
}

/// Fill a template's single `{id}` parameter.
pub fn fill(template: &str, id: impl std::fmt::Display) -> String {
    template.replacen("{id}", &id.to_string(), 1)
}

/// Fill a workroom template's `{cid}` (the room) and, when present, `{id}`
/// (the card).
pub fn fill_task(
    template: &str,
    cid: impl std::fmt::Display,
    id: impl std::fmt::Display,
) -> String {
    fill(&template.replacen("{cid}", &cid.to_string(), 1), id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_the_parameter() {
        assert_eq!(
            fill_task(WORKROOM_TASK_LEASE, 7, 42),
            "/v1/workrooms/7/tasks/42/lease"
        );
        assert_eq!(fill_task(WORKROOM_TASKS, 7, 42), "/v1/workrooms/7/tasks");
        assert_eq!(
            fill(CONVERSATION_MESSAGES, 7),
            "/v1/conversations/7/messages"
        );
    }
}
