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

/// How long a connection may take to send a request's headers (and how long
/// an idle keep-alive connection is kept): a client on loopback sends them in
/// microseconds, so 10 s tolerates a stalled machine while a connection that
/// sends nothing, or a byte at a time, is closed instead of piling up.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request body may take to arrive, all of it: the largest body
/// (160 MiB on `/mcp`) needs about 1.4 MB/s to make it, a body on loopback
/// takes milliseconds, and a client that trickles its body cannot hold a
/// connection for longer.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Most connections served at once: far above what the tests, the demo or a
/// team's sentinels open, and far below the usual 1024 descriptors a
/// process may hold, so a flood waits in the kernel's backlog instead of
/// ending in "Too many open files".
pub const MAX_CONNECTIONS: usize = 512;

/// Most long-lived streams (WebSockets and `/v1/events` together) one
/// account holds at once: a sentinel holds one WebSocket, a doorbell one
/// event stream per window, so 8 leaves room for a few windows and a
/// reconnect overlapping its predecessor, while one account (or one key at
/// the allowed connect rate) cannot take the server's slots.
pub const MAX_STREAMS_PER_ACCOUNT: usize = 8;
/// Most long-lived streams in total: half the connection slots, so the
/// short requests (logins, sends, card moves) always have slots left.
pub const MAX_STREAMS: usize = MAX_CONNECTIONS / 2;
/// An event stream that has delivered no event for this long is ended (the
/// client reconnects if it is still there): a stream cannot hold a slot
/// for ever. Ten minutes is forty keep-alives, far past any quiet spell a
/// working room has, and a reconnect costs one request.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// `Retry-After` of a refused stream: a slot frees when another stream
/// ends, which a client cannot see; a few seconds keeps retries cheap.
pub const STREAM_RETRY_AFTER_SECS: u64 = 5;

/// Pause after a failed accept (out of descriptors, …) before the next one,
/// so the loop does not spin while the fault lasts.
pub const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// How long shutdown waits for open connections before it stops waiting;
/// WebSocket tasks close at once, so this only bounds a stuck request.
/// The event stream sends a keep-alive comment this often: a client that
/// hears nothing for three of these knows the stream is dead, not quiet.
pub const EVENTS_KEEPALIVE: Duration = Duration::from_secs(15);
/// The whole server stops within this after a shutdown request.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// MCP protocol revision answered when the client names none (the current
/// one at the time of writing; a client's own revision is echoed).
pub const MCP_PROTOCOL_VERSION: &str = "2025-06-18";

/// The latest "now" the server's clock may show: 9999-12-31T23:59:59Z, the
/// last second a four-digit year can name. Every time derived from now (a
/// JWT's expiry, a lease's end, a rate window) is now plus minutes, so with
/// now bounded here none of those sums can come near `i64::MAX`, and every
/// time still formats as an ordinary date.
pub const CLOCK_MAX_UNIX: i64 = 253_402_300_799;

/// The most a request body may carry before its sender is known: login and
/// redeem (the only routes that read a body without a bearer) take an
/// email and a code, or a key and a few names, well under 1 KiB; 4 KiB
/// leaves room for long names while a stranger's body costs the server at
/// most this much memory, however many bytes it announces or sends.
pub const PRE_AUTH_BODY_CAP_BYTES: usize = 4 * 1024;

/// The error code of a JSON route's body sent as another media type (415):
/// a browser sends `text/plain` across sites without asking first, so only
/// `application/json` — which it must ask for — is read.
pub const UNSUPPORTED_MEDIA_TYPE_CODE: &str = "unsupported_media_type";

/// A person's one-time login code (issued by the operator, `hoop backend
/// user code`): 8 digits, like an OTP a person types; it lives 10 minutes,
/// works once, and is void after 5 wrong tries, so a guesser has at most 5
/// chances in 10^8 per code issued.
pub const LOGIN_CODE_DIGITS: u32 = 8;
/// See [`LOGIN_CODE_DIGITS`].
pub const LOGIN_CODE_TTL_SECS: i64 = 10 * 60;
/// See [`LOGIN_CODE_DIGITS`].
pub const LOGIN_CODE_MAX_TRIES: i64 = 5;

/// Hosts an `Origin` header may name on `/mcp` (seed 002 L7 §0.1: no Origin
/// is allowed, an Origin not on the WebSocket allow-list is 403). The
/// reference backend serves loopback, so its allow-list is the loopback
/// names, on any port.
pub const MCP_ALLOWED_ORIGIN_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The `WWW-Authenticate` challenge every 401 on `/mcp` carries (seed 002
/// L7 §0.1 says production adds one; its exact value is not recorded).
pub const MCP_WWW_AUTHENTICATE: &str = "Bearer realm=\"hoop-mcp\"";

/// An MCP key's life when none is asked for: 90 days (seed 002 L7 §0.2).
pub const MCP_KEY_DEFAULT_TTL_SECS: i64 = 90 * 24 * 3600;
/// The longest an MCP key may live: one year; longer asks are clamped
/// (seed 002 L7 §0.2).
pub const MCP_KEY_MAX_TTL_SECS: i64 = 365 * 24 * 3600;
/// Clock skew tolerated when checking a bearer's expiry (seed 002 L7 §0.1).
pub const MCP_BEARER_SKEW_SECS: i64 = 30;

/// A provisioning key's life when none is asked for: 7 days (seed 002 L31).
pub const PROVISION_KEY_DEFAULT_TTL_SECS: i64 = 7 * 24 * 3600;
/// The longest a provisioning key may live: 90 days; longer asks are
/// clamped (seed 002 L31).
pub const PROVISION_KEY_MAX_TTL_SECS: i64 = 90 * 24 * 3600;

/// Domain of the emails the reference backend gives the accounts it creates
/// (redeem, approval). `.invalid` is reserved (RFC 2606): the address can
/// never reach anyone, and it is only the login name.
pub const AGENT_EMAIL_DOMAIN: &str = "agents.invalid";

/// Appended to a reinforcement application's name (seed 002 L29).
pub const REINFORCEMENT_NAME_SUFFIX: &str = "_aid";
