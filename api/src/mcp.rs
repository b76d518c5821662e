//! The MCP client of a reinforcement account: JSON-RPC 2.0 over one HTTP
//! POST per call to [`routes::MCP`] (Streamable HTTP, stateless), with
//! `Authorization: Bearer hoopmcp_…`. A 429 is honoured: wait `Retry-After`
//! and try again while the total wait stays within
//! [`McpConfig::max_retry_wait`]; beyond it the caller gets
//! [`Error::RateLimited`].
//!
//! Hand-rolled on reqwest rather than on an MCP SDK: the endpoint is
//! stateless and answers every POST with one JSON body, so a call is one
//! request and one response. A session-oriented SDK client would add a
//! handshake and a long-lived service per key, and would hide the HTTP
//! status and the `Retry-After` header that the 429 rule and the
//! "JWT on /mcp → 401" rule are about. An `text/event-stream` answer is still
//! read (the first JSON-RPC response among its `data:` lines).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use hoop_core::limits::{MCP_RETRY_AFTER_SECS, MCP_RETRY_MAX_ATTEMPTS, MCP_RETRY_MIN_WAIT};

use crate::error::Error;
use crate::rest::{decode, http_client, normalise_base, retry_after_of};
use crate::routes;

/// The MCP protocol revision this client speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Header naming the protocol revision on every request after initialize.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";
/// Default total time a call may spend waiting out 429s: one production
/// `Retry-After` (60 s), so a burst over the limit costs one wait, not a loop.
pub const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_secs(MCP_RETRY_AFTER_SECS);

/// The name the MCP server is registered under in Claude Code.
pub const CLAUDE_SERVER_NAME: &str = "hoop";
/// Stands for the backend's public base when none is configured (seed 002
/// L29: production gives a placeholder rather than invent a domain). The
/// angle brackets make a pasted line fail in a shell instead of reaching
/// some host.
pub const BASE_PLACEHOLDER: &str = "<BACKEND_URL>";

/// Whether `key` looks like an MCP key (`hoopmcp_` then letters, digits or
/// `_`), so that nothing else (a provisioning key, a JWT, a line with
/// quotes or spaces) is ever written into a `claude mcp add …` line.
pub fn is_mcp_key(key: &str) -> bool {
    key.strip_prefix(crate::headers::MCP_KEY_PREFIX)
        .is_some_and(|rest| {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// THE `claude mcp add …` line for a reinforcement key (seed 002 L29): the
/// backend's answers and `hoop mcp add-line` both print this, so the line
/// has one spelling. `base` `None` or blank → [`BASE_PLACEHOLDER`].
pub fn claude_add_line(base: Option<&str>, key: &str) -> String {
    let base = base
        .map(|b| b.trim().trim_end_matches('/'))
        .filter(|b| !b.is_empty())
        .unwrap_or(BASE_PLACEHOLDER);
    format!(
        "claude mcp add -s user --transport http {CLAUDE_SERVER_NAME} {base}{} --header \"Authorization: Bearer {key}\"",
        routes::MCP
    )
}

/// How to reach `/mcp` with one key. `Debug` redacts the key.
#[derive(Clone)]
pub struct McpConfig {
    pub base_url: String,
    /// `hoopmcp_…`.
    pub key: String,
    /// Total wait on 429s per call before giving up with `RateLimited`.
    pub max_retry_wait: Duration,
}

impl McpConfig {
    pub fn new(base_url: impl Into<String>, key: impl Into<String>) -> McpConfig {
        McpConfig {
            base_url: base_url.into(),
            key: key.into(),
            max_retry_wait: DEFAULT_MAX_RETRY_WAIT,
        }
    }
}

impl std::fmt::Debug for McpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConfig")
            .field("base_url", &self.base_url)
            .field("key", &"<redacted>")
            .field("max_retry_wait", &self.max_retry_wait)
            .finish()
    }
}

/// One tool as `tools/list` describes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default, rename = "inputSchema")]
    pub input_schema: Value,
}

/// One content block of a tool result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Content {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// The result of `tools/call`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolResult {
    #[serde(default)]
    pub content: Vec<Content>,
    #[serde(default, rename = "isError")]
    pub is_error: bool,
    #[serde(default, rename = "structuredContent")]
    pub structured: Option<Value>,
}

impl ToolResult {
    /// The text blocks joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| c.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The structured content, or else the text parsed as JSON.
    pub fn json(&self) -> Result<Value, Error> {
        if let Some(v) = &self.structured {
            return Ok(v.clone());
        }
        decode("tool result text", self.text().as_bytes())
    }
}

#[derive(Deserialize)]
struct RpcResponse {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    #[serde(default)]
    message: String,
}

/// A stateless MCP client for one key.
pub struct McpClient {
    cfg: McpConfig,
    url: String,
    http: reqwest::Client,
    next_id: AtomicU64,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient").field("cfg", &self.cfg).finish()
    }
}

impl McpClient {
    pub fn new(cfg: McpConfig) -> Result<McpClient, Error> {
        let url = format!("{}{}", normalise_base(&cfg.base_url)?, routes::MCP);
        Ok(McpClient {
            cfg,
            url,
            http: http_client()?,
            next_id: AtomicU64::new(1),
        })
    }

    /// `initialize` → the server's result (protocol version, capabilities,
    /// server info). Optional on a stateless endpoint.
    pub async fn initialize(&self) -> Result<Value, Error> {
        self.rpc(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "hoop", "version": env!("CARGO_PKG_VERSION")},
            }),
        )
        .await
    }

    /// `tools/list`.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        #[derive(Deserialize)]
        struct Tools {
            tools: Vec<Tool>,
        }
        let v = self.rpc("tools/list", json!({})).await?;
        let t: Tools = serde_json::from_value(v).map_err(|e| Error::Decode {
            what: "tools/list result",
            message: e.to_string(),
        })?;
        Ok(t.tools)
    }

    /// `tools/call`. A tool-level failure is a result with `is_error`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolResult, Error> {
        let v = self
            .rpc("tools/call", json!({"name": name, "arguments": arguments}))
            .await?;
        serde_json::from_value(v).map_err(|e| Error::Decode {
            what: "tools/call result",
            message: e.to_string(),
        })
    }

    /// `tools/call` with typed arguments and answer. A refused call
    /// (`isError` with an `ErrorBody`) becomes the same typed [`Error`] a
    /// REST call would give (`Gap`, `RateLimited`, `NotFound`, `Refused`…).
    pub async fn call<A: Serialize, R: DeserializeOwned>(
        &self,
        name: &str,
        args: &A,
    ) -> Result<R, Error> {
        let args = serde_json::to_value(args).map_err(|e| Error::Decode {
            what: "tool arguments",
            message: e.to_string(),
        })?;
        let r = self.call_tool(name, args).await?;
        if r.is_error {
            return Err(tool_refusal(&r));
        }
        serde_json::from_value(r.json()?).map_err(|e| Error::Decode {
            what: "tool result",
            message: e.to_string(),
        })
    }

    /// One JSON-RPC request → its `result`.
    pub async fn rpc(&self, method: &str, params: Value) -> Result<Value, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        }))
        .map_err(|e| Error::Decode {
            what: "request",
            message: e.to_string(),
        })?;
        let mut waited = Duration::ZERO;
        let mut retries = 0u32;
        loop {
            let resp = self
                .http
                .post(&self.url)
                .bearer_auth(&self.cfg.key)
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .header(PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION)
                .body(body.clone())
                .send()
                .await?;
            let status = resp.status().as_u16();
            let retry = retry_after_of(&resp);
            let is_sse = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            let bytes = resp.bytes().await?.to_vec();
            if status == 429 {
                match retry_wait(retry, retries, waited, self.cfg.max_retry_wait) {
                    Some(d) => {
                        tracing::info!(
                            method,
                            wait_s = d.as_secs(),
                            "MCP 429: waiting Retry-After"
                        );
                        tokio::time::sleep(d).await;
                        waited += d;
                        retries += 1;
                        continue;
                    }
                    None => {
                        return Err(Error::RateLimited {
                            retry_after: retry,
                            message: rpc_message(&bytes).unwrap_or_else(|| keep_text(&bytes)),
                        });
                    }
                }
            }
            if status == 401 {
                // Seed 002 L21: a refused key is said as such (expired,
                // revoked, account disabled?), with the fix.
                let said = rpc_message(&bytes).unwrap_or_else(|| "no reason given".into());
                return Err(Error::Unauthorized {
                    message: format!(
                        "{said}; the MCP key was refused (expired, revoked or its account \
                         disabled){}",
                        crate::error::KEY_REFUSED_FIX
                    ),
                });
            }
            let parsed = if is_sse {
                sse_response(&bytes, id)
            } else {
                serde_json::from_slice::<RpcResponse>(&bytes).ok()
            };
            let Some(r) = parsed else {
                if !(200..300).contains(&status) {
                    return Err(Error::from_status(status, &bytes, retry));
                }
                return Err(Error::Decode {
                    what: "JSON-RPC response",
                    message: String::from_utf8_lossy(&bytes).chars().take(200).collect(),
                });
            };
            if let Some(e) = r.error {
                return Err(Error::Rpc {
                    code: e.code,
                    message: e.message,
                });
            }
            if !(200..300).contains(&status) {
                return Err(Error::Unparseable {
                    status,
                    head: crate::error::keep(&bytes),
                });
            }
            if r.id != json!(id) {
                return Err(Error::Decode {
                    what: "JSON-RPC response",
                    message: format!("id {} does not match request id {id}", r.id),
                });
            }
            return Ok(r.result.unwrap_or(Value::Null));
        }
    }
}

/// Production's MCP layer renders a refused call's `{"error":{"code",
/// "message"}}` as this text, then the status, `):` and the backend's words
/// (seed 002 L51 "HOOP 后端拒绝(状态码):原话").
pub const REFUSAL_PREFIX: &str = "HOOP 后端拒绝(";

/// A refused tool call → the typed error a REST call would give. Production's
/// text form first ([`parse_refusal_text`]); the structured `ErrorBody` as
/// an accepted alternative; anything else keeps its text.
pub fn tool_refusal(r: &ToolResult) -> Error {
    let text = r.text();
    if let Some((status, eb)) = parse_refusal_text(&text) {
        return Error::from_body(status, eb, None);
    }
    let structured = r
        .json()
        .ok()
        .and_then(|v| serde_json::from_value::<crate::types::ErrorBody>(v).ok());
    match structured {
        Some(eb) => Error::from_body(200, eb, None),
        None => Error::Rpc {
            code: 0,
            message: crate::error::keep(text.as_bytes()),
        },
    }
}

/// The numbers a refusal carries beyond its code and words, in the order
/// they are written: `(task_id 41, latest_id 9, …)`.
const REFUSAL_FACTS: &[&str] = &["task_id", "latest_id", "unread_count", "retry_after_sec"];

/// A refusal in production's MCP text form, as the reference backend
/// writes it: `HOOP 后端拒绝(<status>):<code> (<fact> <n>, …): <message>`,
/// the whole cut at [`crate::error::ERROR_BODY_KEEP_CHARS`] runes (seed 002
/// L51 "截 300 rune"). The code and the facts in front of the words are
/// this toolkit's ([A]): production's words may carry them anywhere, and
/// [`parse_refusal_text`] reads both.
pub fn refusal_text(status: u16, eb: &crate::types::ErrorBody) -> String {
    let d = &eb.error;
    let facts: Vec<String> = [
        d.task_id,
        d.latest_id,
        d.unread_count.map(i64::from),
        d.retry_after_sec.and_then(|s| i64::try_from(s).ok()),
    ]
    .iter()
    .zip(REFUSAL_FACTS)
    .filter_map(|(v, k)| v.map(|v| format!("{k} {v}")))
    .collect();
    let facts = if facts.is_empty() {
        String::new()
    } else {
        format!(" ({})", facts.join(", "))
    };
    let full = format!("{REFUSAL_PREFIX}{status}):{}{facts}: {}", d.code, d.message);
    crate::error::keep(full.as_bytes())
}

/// Production's refusal text → its status and an [`ErrorBody`]: the code is
/// the one the text leads with or else the first code word it carries (else
/// the status's, [`crate::types::codes::for_status`]); `task_id`,
/// `latest_id`, `unread_count` and `retry_after_sec` are read where the
/// text names them. `None` when the text is not in that form.
pub fn parse_refusal_text(text: &str) -> Option<(u16, crate::types::ErrorBody)> {
    use crate::types::codes;
    let rest = text
        .trim_start()
        .strip_prefix(REFUSAL_PREFIX)
        .or_else(|| text.trim_start().strip_prefix("HOOP 后端拒绝（"))?;
    let close = rest.find([')', '）'])?;
    let status: u16 = rest[..close].trim().parse().ok()?;
    let rest = &rest[close..];
    let rest = rest.strip_prefix(')').or_else(|| rest.strip_prefix('）'))?;
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix('：'))
        .unwrap_or(rest);
    // The toolkit's own form: a leading code, optional facts, ": ".
    let lead: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
        .collect();
    let after = &rest[lead.len()..];
    let (code, message) = if codes::ALL.contains(&lead.as_str())
        && (after.starts_with(": ") || after.starts_with(" ("))
    {
        let msg = match after
            .strip_prefix(" (")
            .and_then(|a| a.find("): ").map(|i| &a[i + 3..]))
        {
            Some(m) => m,
            None => after.strip_prefix(": ").unwrap_or(after),
        };
        (lead.clone(), msg.to_string())
    } else {
        let code = first_code_word(rest).unwrap_or_else(|| codes::for_status(status));
        (code.to_string(), rest.to_string())
    };
    let mut eb = crate::types::ErrorBody::new(&code, message);
    eb.error.task_id = number_after(rest, "task_id");
    eb.error.latest_id = number_after(rest, "latest_id");
    eb.error.unread_count = number_after(rest, "unread_count").and_then(|n| u32::try_from(n).ok());
    eb.error.retry_after_sec =
        number_after(rest, "retry_after_sec").and_then(|n| u64::try_from(n).ok());
    Some((status, eb))
}

/// Whether `s[at..at+len]` stands as a whole word (no letter, digit or `_`
/// touching it).
fn whole_word(s: &str, at: usize, len: usize) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !s[..at].chars().next_back().is_some_and(word)
        && !s[at + len..].chars().next().is_some_and(word)
}

/// The first contract code in `s` standing as a whole word.
fn first_code_word(s: &str) -> Option<&'static str> {
    crate::types::codes::ALL
        .iter()
        .filter_map(|c| {
            s.match_indices(c)
                .find(|(at, _)| whole_word(s, *at, c.len()))
                .map(|(at, _)| (at, *c))
        })
        .min()
        .map(|(_, c)| c)
}

/// The integer right after the whole word `key` (`task_id 41`,
/// `task_id=41`, `"task_id": 41`).
fn number_after(s: &str, key: &str) -> Option<i64> {
    s.match_indices(key)
        .filter(|(at, _)| whole_word(s, *at, key.len()))
        .find_map(|(at, _)| {
            let tail = s[at + key.len()..].trim_start_matches([' ', ':', '=', '"', '\'', '：']);
            let digits: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        })
}

/// The first runes of a body, for an error.
fn keep_text(bytes: &[u8]) -> String {
    crate::error::keep(bytes)
}

fn rpc_message(bytes: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    v.pointer("/error/message")
        .or_else(|| v.get("message"))
        .and_then(|m| m.as_str())
        .map(str::to_string)
}

/// The JSON-RPC response with `id` among an SSE body's events.
fn sse_response(bytes: &[u8], id: u64) -> Option<RpcResponse> {
    let mut p = crate::events::SseParser::default();
    let mut events: Vec<String> = p.feed(bytes).into_iter().flatten().collect();
    events.extend(p.finish());
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<RpcResponse>(e).ok())
        .find(|r| r.id == json!(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_bodies_yield_the_matching_response() {
        let body = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}\n\n";
        let r = sse_response(body, 3).unwrap();
        assert_eq!(r.result, Some(json!({"ok": true})));
        assert!(sse_response(body, 4).is_none());
    }

    proptest::proptest! {
        /// A garbled event stream is "no response", never a panic; a
        /// response with the id, wherever it sits among garbage, is found.
        #[test]
        fn any_sse_body_parses_without_panicking(body in "[^\r\n]{0,300}", id in 1u64..1000) {
            let garbled = format!("data: {body}\n\n");
            proptest::prop_assert!(sse_response(garbled.as_bytes(), 0).is_none());
            let good = format!(
                "data: {body}\n\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":7}}\n\n"
            );
            let r = sse_response(good.as_bytes(), id).expect("found among garbage");
            proptest::prop_assert_eq!(r.result, Some(json!(7)));
        }
    }

    #[test]
    fn tool_result_text_and_json() {
        let r: ToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "{\"count\": 2}"}]
        }))
        .unwrap();
        assert_eq!(r.json().unwrap(), json!({"count": 2}));
        assert!(!r.is_error);
    }

    #[test]
    fn debug_redacts_the_key() {
        let c = McpConfig::new("http://127.0.0.1:1", "hoopmcp_secret");
        assert!(!format!("{c:?}").contains("hoopmcp_secret"));
    }
}

/// Whether to retry a 429, and after how long: only when the server said
/// `Retry-After`, never sooner than [`MCP_RETRY_MIN_WAIT`], at most
/// [`MCP_RETRY_MAX_ATTEMPTS`] times, and only while the total wait stays
/// within `max_wait`.
pub fn retry_wait(
    retry_after: Option<Duration>,
    retries_so_far: u32,
    waited: Duration,
    max_wait: Duration,
) -> Option<Duration> {
    let wait = retry_after?.max(MCP_RETRY_MIN_WAIT);
    (retries_so_far < MCP_RETRY_MAX_ATTEMPTS && waited + wait <= max_wait).then_some(wait)
}

#[cfg(test)]
mod retry_tests {
    use super::*;

    #[test]
    fn retry_wait_table() {
        let s = Duration::from_secs;
        // (Retry-After, retries so far, waited, max wait, want)
        type Case = (Option<u64>, u32, u64, u64, Option<u64>);
        let cases: &[Case] = &[
            (Some(60), 0, 0, 60, Some(60)),
            (Some(60), 0, 1, 60, None),
            (None, 0, 0, 60, None),
            // A zero is raised to the minimum wait: no hot loop.
            (Some(0), 0, 0, 60, Some(1)),
            (Some(0), 2, 2, 60, Some(1)),
            // Bounded by count whatever the time left.
            (Some(0), 3, 3, 60, None),
            (Some(1), 0, 0, 0, None),
        ];
        for (ra, n, waited, max, want) in cases {
            assert_eq!(
                retry_wait(ra.map(s), *n, s(*waited), s(*max)),
                want.map(s),
                "{ra:?} {n} {waited} {max}"
            );
        }
    }
}

#[cfg(test)]
mod http_tests {
    use super::*;
    use axum::Router;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::post;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU32;

    /// `/mcp` that answers 429 `Retry-After: 1` to the first `limited` calls.
    async fn server(limited: u32) -> (String, Arc<AtomicU32>) {
        server_with(limited, "1").await
    }

    /// `/mcp` that answers 429 `Retry-After: <retry_after>` to the first
    /// `limited` calls.
    async fn server_with(limited: u32, retry_after: &'static str) -> (String, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        let c = calls.clone();
        let app = Router::new().route(
            routes::MCP,
            post(move |h: HeaderMap, body: axum::body::Bytes| {
                let c = c.clone();
                async move {
                    assert_eq!(
                        h.get("authorization").unwrap(),
                        "Bearer hoopmcp_k",
                        "the key is the bearer"
                    );
                    let n = c.fetch_add(1, Ordering::SeqCst);
                    let req: Value = serde_json::from_slice(&body).unwrap();
                    if n < limited {
                        let err = json!({"jsonrpc": "2.0", "id": req["id"],
                            "error": {"code": -32000, "message": "rate limited"}});
                        return (
                            StatusCode::TOO_MANY_REQUESTS,
                            [("retry-after", retry_after)],
                            axum::Json(err),
                        )
                            .into_response();
                    }
                    axum::Json(json!({"jsonrpc": "2.0", "id": req["id"],
                        "result": {"tools": [{"name": "chat_read", "inputSchema": {}}]}}))
                    .into_response()
                }
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        (base, calls)
    }

    #[tokio::test]
    async fn a_429_waits_retry_after_then_succeeds() {
        let (base, calls) = server(1).await;
        let mut cfg = McpConfig::new(base, "hoopmcp_k");
        cfg.max_retry_wait = Duration::from_secs(2);
        let c = McpClient::new(cfg).unwrap();
        let started = std::time::Instant::now();
        let tools = c.list_tools().await.unwrap();
        assert_eq!(tools[0].name, "chat_read");
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "waited Retry-After"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_429_beyond_the_max_wait_is_rate_limited() {
        let (base, calls) = server(u32::MAX).await;
        let mut cfg = McpConfig::new(base, "hoopmcp_k");
        cfg.max_retry_wait = Duration::ZERO;
        let c = McpClient::new(cfg).unwrap();
        match c.list_tools().await {
            Err(Error::RateLimited { retry_after, .. }) => {
                assert_eq!(retry_after, Some(Duration::from_secs(1)))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "no retry past the max wait"
        );
    }

    /// A server answering `Retry-After: 0` for ever: the client retries a
    /// bounded number of times, each after the minimum wait, then gives up.
    #[tokio::test]
    async fn retry_after_zero_is_bounded() {
        let (base, calls) = server_with(u32::MAX, "0").await;
        let c = McpClient::new(McpConfig::new(base, "hoopmcp_k")).unwrap();
        let r = tokio::time::timeout(Duration::from_secs(20), c.list_tools())
            .await
            .expect("bounded");
        assert!(matches!(r, Err(Error::RateLimited { .. })), "{r:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 1 + MCP_RETRY_MAX_ATTEMPTS);
    }
}

#[cfg(test)]
mod add_line_tests {
    use super::*;

    #[test]
    fn claude_add_line_table() {
        let line = |b: &str| {
            format!(
                "claude mcp add -s user --transport http hoop {b}/mcp --header \"Authorization: Bearer hoopmcp_x\""
            )
        };
        let cases: &[(Option<&str>, String)] = &[
            (Some("http://127.0.0.1:9"), line("http://127.0.0.1:9")),
            (Some("http://127.0.0.1:9/"), line("http://127.0.0.1:9")),
            (
                Some(" https://chat.example.org// "),
                line("https://chat.example.org"),
            ),
            (None, line("<BACKEND_URL>")),
            (Some(""), line("<BACKEND_URL>")),
            (Some("  "), line("<BACKEND_URL>")),
        ];
        for (base, want) in cases {
            assert_eq!(&claude_add_line(*base, "hoopmcp_x"), want, "{base:?}");
        }
    }

    #[test]
    fn is_mcp_key_table() {
        let cases = [
            ("hoopmcp_0123abcdef", true),
            ("hoopmcp_a_b", true),
            ("hoopmcp_", false),
            ("hoopprov_0123", false),
            ("eyJhbGciOi.x.y", false),
            ("hoopmcp_ab cd", false),
            ("hoopmcp_ab\"; rm -rf ~", false),
            ("hoopmcp_ab\n", false),
            ("", false),
        ];
        for (key, want) in cases {
            assert_eq!(is_mcp_key(key), want, "{key:?}");
        }
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use crate::types::ErrorBody;

    fn refused(text: &str) -> ToolResult {
        serde_json::from_value(json!({
            "content": [{"type": "text", "text": text}], "isError": true
        }))
        .unwrap()
    }

    /// Each form of a refused tool call → the typed error a REST call gives.
    #[test]
    fn refusal_forms_decode_to_typed_errors() {
        // (text, want: Debug prefix, code, task_id)
        let cases: &[(&str, &str, Option<&str>)] = &[
            // The toolkit's own text form (the reference backend's).
            (
                "HOOP 后端拒绝(404):window_not_found: no such window",
                "NotFound { code: \"window_not_found\", message: \"no such window\" }",
                Some("window_not_found"),
            ),
            (
                "HOOP 后端拒绝(409):gap (latest_id 9, unread_count 2): 2 message(s) you have not read",
                "Gap { latest_id: 9, unread_count: 2, unread: [] }",
                Some("gap"),
            ),
            (
                "HOOP 后端拒绝(409):agent_busy (task_id 41): you already work on a card",
                "Orphaned { task_id: 41, code: \"agent_busy\", message: \"you already work on a card\" }",
                Some("agent_busy"),
            ),
            (
                "HOOP 后端拒绝(409):agent_busy: you already work on a card",
                "Refused { status: 409, code: \"agent_busy\", message: \"you already work on a card\" }",
                Some("agent_busy"),
            ),
            (
                "HOOP 后端拒绝(429):rate_limited (retry_after_sec 60): slow down",
                "RateLimited { retry_after: Some(60s), message: \"slow down\" }",
                Some("rate_limited"),
            ),
            (
                "HOOP 后端拒绝(422):markdown_refused: no tables",
                "Refused { status: 422, code: \"markdown_refused\", message: \"no tables\" }",
                Some("markdown_refused"),
            ),
            // Production's words, with the code somewhere or nowhere.
            (
                "HOOP 后端拒绝(404):window_not_found",
                "NotFound { code: \"window_not_found\", message: \"window_not_found\" }",
                Some("window_not_found"),
            ),
            (
                "HOOP 后端拒绝(404):窗口不存在",
                "NotFound { code: \"not_found\", message: \"窗口不存在\" }",
                Some("not_found"),
            ),
            (
                "HOOP 后端拒绝(409):认领失败 agent_busy, task_id=77 留在板上",
                "Orphaned { task_id: 77, code: \"agent_busy\", message: \"认领失败 agent_busy, task_id=77 留在板上\" }",
                Some("agent_busy"),
            ),
            (
                "HOOP 后端拒绝(409):有新消息 gap",
                "Gap { latest_id: 0, unread_count: 0, unread: [] }",
                Some("gap"),
            ),
            (
                "HOOP 后端拒绝（403）：not_member",
                "Refused { status: 403, code: \"not_member\", message: \"not_member\" }",
                Some("not_member"),
            ),
            // Not the text form: kept as it came.
            (
                "something else broke",
                "Rpc { code: 0, message: \"something else broke\" }",
                None,
            ),
            (
                "HOOP 后端拒绝(abc):x",
                "Rpc { code: 0, message: \"HOOP 后端拒绝(abc):x\" }",
                None,
            ),
        ];
        for (text, want, code) in cases {
            let e = tool_refusal(&refused(text));
            assert_eq!(&format!("{e:?}"), want, "{text}");
            assert_eq!(e.code(), *code, "{text}");
        }
    }

    /// The structured body stays an accepted alternative.
    #[test]
    fn the_structured_body_is_still_accepted() {
        let eb = ErrorBody::new("window_not_found", "no such window");
        let r: ToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": serde_json::to_string(&eb).unwrap()}],
            "structuredContent": eb, "isError": true
        }))
        .unwrap();
        assert!(
            matches!(tool_refusal(&r), Error::NotFound { code, .. } if code == "window_not_found")
        );
    }

    /// The text is cut at 300 runes, the code and numbers first so that a
    /// long message cannot push them out.
    #[test]
    fn a_long_refusal_is_cut_at_300_runes_keeping_code_and_task() {
        let mut eb = ErrorBody::new("agent_busy", "忙".repeat(400));
        eb.error.task_id = Some(41);
        let text = refusal_text(409, &eb);
        assert_eq!(text.chars().count(), 300);
        assert!(matches!(
            tool_refusal(&refused(&text)),
            Error::Orphaned { task_id: 41, code, .. } if code == "agent_busy"
        ));
    }

    proptest::proptest! {
        /// The text form gives back the status and the message it was
        /// made of, whatever the message (when it fits in 300 runes).
        #[test]
        fn the_text_form_round_trips_status_and_message(
            status in 400u16..600,
            code in proptest::sample::select(crate::types::codes::ALL.to_vec()),
            message in "[^\r\n]{0,200}",
        ) {
            let eb = ErrorBody::new(code, message.clone());
            let text = refusal_text(status, &eb);
            let (s, back) = parse_refusal_text(&text).expect("parses");
            proptest::prop_assert_eq!(s, status);
            proptest::prop_assert_eq!(back.error.code, code);
            proptest::prop_assert_eq!(back.error.message, message);
        }

        /// The 300-rune cut never splits a character: the text is a prefix,
        /// in whole characters, of what it would be uncut.
        #[test]
        fn the_cut_never_splits_a_char(status in 400u16..600, message in "\\PC{0,600}") {
            let eb = ErrorBody::new("gap", message.clone());
            let text = refusal_text(status, &eb);
            let full = format!("{REFUSAL_PREFIX}{status}):gap: {message}");
            proptest::prop_assert!(text.chars().count() <= crate::error::ERROR_BODY_KEEP_CHARS);
            proptest::prop_assert!(full.starts_with(&text));
            proptest::prop_assert_eq!(
                text.chars().count(),
                full.chars().count().min(crate::error::ERROR_BODY_KEEP_CHARS)
            );
        }
    }
}
