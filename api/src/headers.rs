//! HTTP header names of the backend contract, shared by the clients and the
//! reference backend so both sides spell them the same way.

/// Sent on every login when `~/.hoop/agent.env` defines `HOOP_AGENT_SECRET`.
pub const AGENT_SECRET: &str = "X-Hoop-Agent-Secret";
/// Seconds to wait after a 429 (REST and MCP).
pub const RETRY_AFTER: &str = "Retry-After";
/// Prefix of MCP keys sent as `Authorization: Bearer hoopmcp_…`.
pub const MCP_KEY_PREFIX: &str = "hoopmcp_";
