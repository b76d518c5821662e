//! The reference backend's own constants, each with its reason. The
//! production numbers (JWT lifetime, caps, rate limits, lease, presence…)
//! live in `hoop_core::limits` and are used from there.

use std::time::Duration;

/// Every rate window counts over one minute: production states its limits
/// "per minute" (60 messages per user, 300 MCP calls per key).
pub const RATE_WINDOW_SECS: i64 = 60;

/// REST `GET …/messages` page size when `limit` is absent: the same default
/// as `chat_read`.
pub const PAGE_DEFAULT: u32 = 20;
/// Largest REST page: bounds one answer's size; the sentinel pulls 15.
pub const PAGE_MAX: u32 = 100;

/// Prefix of provisioning keys, so one is never mistaken for an MCP key.
pub const PROVISION_KEY_PREFIX: &str = "hoopprov_";
/// Random bytes in a minted key (hex after the prefix): 256 bits cannot be
/// guessed, and only their SHA-256 is stored.
pub const KEY_BYTES: usize = 32;

/// How long shutdown waits for open connections before it stops waiting;
/// WebSocket tasks close at once, so this only bounds a stuck request.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// MCP protocol revision answered when the client names none (the current
/// one at the time of writing; a client's own revision is echoed).
pub const MCP_PROTOCOL_VERSION: &str = "2025-06-18";
