//! A scripted stand-in of the model API on loopback (`POST /v1/messages`, SSE
//! streaming, real-looking usage, tool_use blocks and the API's real error
//! bodies), so the real `claude` CLI can be driven without a network or an
//! account — by the tests and by `hoop demo`.
//!
//! Each request consumes one scripted [`Reply`] from a queue (or the default
//! reply when the queue is empty). Two kinds of request are answered without
//! consuming the queue, because the CLI sends them on its own:
//! - a request whose last message carries a `tool_result` (the second leg of a
//!   [`Reply::Bash`]) is answered with that reply's `then` text;
//! - a compaction request (its last message asks to "create a detailed summary
//!   of the conversation") is answered with `<analysis>…</analysis><summary>…`
//!   unless the queue's head is itself a [`Reply::Summary`] or an error.
//!
//! Usage numbers are computed honestly from a prompt-cache model (see
//! [`cache`]): what a request's byte prefix shares with prefixes earlier
//! requests marked with `cache_control` is reported as `cache_read`, the rest
//! up to the last breakpoint as `cache_creation`, the remainder as `input`.
//! A reply may override the numbers ([`Reply::with_usage`]), e.g. to simulate a
//! 450k-token context.

pub mod cache;
mod sse;
pub mod work;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub use cache::CacheModel;

/// The model name the stand-in reports when a request names none.
pub const DEFAULT_MODEL: &str = "claude-opus-4-8";
/// The text the CLI puts in the last message when it asks for a compaction
/// summary (observed in its `/compact` and autocompact requests).
pub const SUMMARY_REQUEST_MARK: &str = "create a detailed summary of the conversation";
/// The API key the child is given: the stand-in accepts any key, and a fixed
/// fake one keeps real keys out of test environments.
pub const TEST_API_KEY: &str = "sk-test";

/// Token numbers one reply reports (the API's `usage` object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// Context size as the CLI computes it: everything the prompt held.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

/// How the stand-in decides the usage a reply reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UsageScript {
    /// Computed from the prompt-cache model over the request bytes (default).
    #[default]
    Honest,
    /// These numbers for every reply (output tokens included).
    Fixed(Usage),
}

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `reply #<n> (request carried <m> messages)`: the default answer, which
    /// tells a test which request produced it and how much history it had.
    Echo,
    /// One text block, `end_turn`.
    Text(String),
    /// A text block and a `Bash` tool_use running `command`
    /// (`stop_reason: tool_use`); the follow-up request that carries the
    /// tool_result is answered with `then` (without consuming the queue).
    Bash { command: String, then: String },
    /// A text block and a tool_use of any tool (`name`, e.g. an MCP tool
    /// `mcp__hoop__work_task_finish`) with `input`; the follow-up request
    /// that carries its tool_result takes the NEXT queued reply, so a turn
    /// can chain several tool calls.
    Tool { name: String, input: Value },
    /// An HTTP error with the API's JSON error body and extra headers.
    Error {
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    },
    /// A compaction answer: `<analysis>…</analysis><summary>{0}</summary>`.
    Summary(String),
    /// Wait, then answer with the inner reply (a slow or hung model).
    Delayed { after: Duration, reply: Box<Reply> },
    /// The inner reply, reporting these usage numbers instead of computed ones.
    WithUsage { usage: Usage, reply: Box<Reply> },
    /// Answer the messages the instructions give as work with `hoop say`,
    /// naming their ids, read more when told to, and answer what the
    /// commands showed (see [`work`]).
    Work,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply::Text(t.into())
    }
    pub fn bash(command: impl Into<String>, then: impl Into<String>) -> Reply {
        Reply::Bash {
            command: command.into(),
            then: then.into(),
        }
    }
    pub fn tool(name: impl Into<String>, input: Value) -> Reply {
        Reply::Tool {
            name: name.into(),
            input,
        }
    }
    /// Wait `after` before answering with `self`.
    pub fn delayed(self, after: Duration) -> Reply {
        Reply::Delayed {
            after,
            reply: Box::new(self),
        }
    }
    /// Report `usage` for `self` instead of the computed numbers.
    pub fn with_usage(self, usage: Usage) -> Reply {
        Reply::WithUsage {
            usage,
            reply: Box::new(self),
        }
    }
    /// An error reply with the API's error shape
    /// `{"type":"error","error":{"type":…,"message":…},"request_id":…}`.
    pub fn api_error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::Error {
            status,
            body: error_body(kind, message),
            headers: Vec::new(),
        }
    }
    /// 400 `prompt is too long: 250000 tokens > 200000 maximum`.
    pub fn prompt_too_long() -> Reply {
        Reply::prompt_too_long_n(250_000, 200_000)
    }
    pub fn prompt_too_long_n(tokens: u64, maximum: u64) -> Reply {
        Reply::api_error(
            400,
            "invalid_request_error",
            &format!("prompt is too long: {tokens} tokens > {maximum} maximum"),
        )
    }
    /// 401 `authentication_error` / `invalid x-api-key`.
    pub fn auth_error() -> Reply {
        Reply::api_error(401, "authentication_error", "invalid x-api-key")
    }
    /// 529 `overloaded_error`.
    pub fn overloaded() -> Reply {
        Reply::api_error(529, "overloaded_error", "Overloaded")
    }
    /// 500 `api_error`.
    pub fn server_error() -> Reply {
        Reply::api_error(500, "api_error", "Internal server error")
    }
    /// 429 `rate_limit_error`, with a `retry-after` header when given.
    pub fn rate_limited(retry_after: Option<u64>) -> Reply {
        let mut headers = Vec::new();
        if let Some(s) = retry_after {
            headers.push(("retry-after".to_string(), s.to_string()));
        }
        Reply::Error {
            status: 429,
            body: error_body(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit \
                 (https://docs.claude.com/en/api/rate-limits); see the response headers for \
                 current usage. Please reduce the prompt length or the maximum tokens \
                 requested, or try again later.",
            ),
            headers,
        }
    }
    /// 429 carrying the subscription ("unified") rate-limit headers with status
    /// `rejected`: what a plan's usage limit looks like on the wire. The CLI
    /// turns it into its usage-limit text with the reset time.
    pub fn usage_limit(resets_at_unix: u64) -> Reply {
        Reply::Error {
            status: 429,
            body: error_body(
                "rate_limit_error",
                "This request would exceed your account's rate limit. Please try again later.",
            ),
            headers: vec![
                (
                    "anthropic-ratelimit-unified-status".into(),
                    "rejected".into(),
                ),
                (
                    "anthropic-ratelimit-unified-reset".into(),
                    resets_at_unix.to_string(),
                ),
                (
                    "anthropic-ratelimit-unified-representative-claim".into(),
                    "five_hour".into(),
                ),
                (
                    "anthropic-ratelimit-unified-5h-status".into(),
                    "rejected".into(),
                ),
                (
                    "anthropic-ratelimit-unified-5h-reset".into(),
                    resets_at_unix.to_string(),
                ),
                (
                    "anthropic-ratelimit-unified-5h-utilization".into(),
                    "1.0".into(),
                ),
            ],
        }
    }
}

/// The API's error body.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": format!("req_011CStandin{:016x}", next_id()),
    })
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

/// One request as the stand-in received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Headers, without any that carry a key (`x-api-key`, `authorization`).
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The usage the stand-in answered with (`None` for an error reply).
    pub usage: Option<Usage>,
    /// 1-based request number.
    pub n: usize,
    /// What answered it, in a few words, e.g. `queued: bash "sleep 9"` or
    /// `tool-result follow-up: text "Done."` (see [`RecordedRequest::summary`]).
    pub answer: String,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The `system` text blocks, in order.
    pub fn system_blocks(&self) -> Vec<String> {
        match &self.body["system"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    }
    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
    /// All text of the last `user` message (string content or text blocks).
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(message_text)
            .unwrap_or_default()
    }
    /// Whether any text anywhere in the messages contains `needle`.
    pub fn messages_contain(&self, needle: &str) -> bool {
        self.messages()
            .iter()
            .any(|m| message_text(m).contains(needle))
    }
    /// Every `cache_control` object in the body (system, tools, messages).
    pub fn cache_controls(&self) -> Vec<Value> {
        let mut out = Vec::new();
        collect_cache_controls(&self.body, &mut out);
        out
    }
    /// Whether the last message carries a `tool_result` block.
    pub fn carries_tool_result(&self) -> bool {
        last_carries_tool_result(&self.body)
    }
    /// Whether this is a compaction-summary request.
    pub fn is_summary_request(&self) -> bool {
        is_summary_request(&self.body)
    }
    /// One line: the request's number, model, message count, what its last
    /// message carried, and what answered it. Which process sent a request
    /// shows in its last user text (a worker's prompt, a round's
    /// instructions, a tool result).
    pub fn summary(&self) -> String {
        let last = if self.carries_tool_result() {
            "tool_result".to_string()
        } else {
            format!(
                "{:?}",
                clip(without_reminders(&self.last_user_text()).trim(), 100)
            )
        };
        format!(
            "#{} {} msgs={} last={last} -> {}",
            self.n,
            self.body["model"].as_str().unwrap_or("?"),
            self.messages().len(),
            self.answer
        )
    }
}

/// `s` without the `<system-reminder>` blocks the CLI adds to a user
/// message (they hide what the message says).
fn without_reminders(s: &str) -> String {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        match rest[i..].find(CLOSE) {
            Some(j) => rest = &rest[i + j + CLOSE.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// At most `n` characters of `s`, `…` marking a cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n).collect();
    out.push('…');
    out
}

/// A reply in a few words (for [`RecordedRequest::answer`]).
fn describe(r: &Reply) -> String {
    match r {
        Reply::Echo => "echo".into(),
        Reply::Text(t) => format!("text {:?}", clip(t, 60)),
        Reply::Bash { command, .. } => format!("bash {:?}", clip(command, 60)),
        Reply::Tool { name, .. } => format!("tool {name}"),
        Reply::Error { status, body, .. } => {
            format!(
                "error {status} {}",
                body["error"]["type"].as_str().unwrap_or("?")
            )
        }
        Reply::Summary(_) => "summary".into(),
        Reply::Delayed { after, reply } => format!("{} after {after:?}", describe(reply)),
        Reply::WithUsage { reply, .. } => describe(reply),
        Reply::Work => "work".into(),
    }
}

fn collect_cache_controls(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "cache_control" {
                    out.push(x.clone());
                } else {
                    collect_cache_controls(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_cache_controls(x, out)),
        _ => {}
    }
}

/// All text of one message: string content or the `text` of its blocks
/// (tool_result contents included).
pub fn message_text(m: &Value) -> String {
    fn walk(c: &Value, out: &mut String) {
        match c {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|b| walk(b, out)),
            Value::Object(o) => {
                if let Some(t) = o.get("text") {
                    walk(t, out);
                }
                if let Some(t) = o.get("content") {
                    walk(t, out);
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    walk(&m["content"], &mut out);
    out
}

fn last_message(body: &Value) -> Option<&Value> {
    body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] != "system")
}

fn last_carries_tool_result(body: &Value) -> bool {
    last_message(body)
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

fn is_summary_request(body: &Value) -> bool {
    last_message(body).is_some_and(|m| message_text(m).contains(SUMMARY_REQUEST_MARK))
}

struct Inner {
    queue: VecDeque<Reply>,
    default: Reply,
    usage: UsageScript,
    log: Vec<RecordedRequest>,
    /// What answers each tool-result follow-up, in order: a `Bash` reply's
    /// `then` text, or `None` for a `Tool` reply (the next queued reply).
    pending_then: VecDeque<Option<String>>,
    cache: CacheModel,
    /// Added to the real clock for the cache's TTLs ([`Standin::advance_clock`]).
    clock_offset: Duration,
}

/// A running stand-in on 127.0.0.1 (random port).
pub struct Standin {
    addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Standin {
    /// Bind 127.0.0.1:0 and serve until [`Standin::shutdown`] (or drop).
    pub async fn spawn() -> std::io::Result<Standin> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let inner = Arc::new(Mutex::new(Inner {
            queue: VecDeque::new(),
            default: Reply::Echo,
            usage: UsageScript::Honest,
            log: Vec::new(),
            pending_then: VecDeque::new(),
            cache: CacheModel::default(),
            clock_offset: Duration::ZERO,
        }));
        let app = Router::new()
            .route("/v1/messages", post(handle))
            .fallback(fallback)
            .with_state(inner.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Standin {
            addr,
            inner,
            stop: Some(tx),
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// `http://127.0.0.1:<port>` — the value for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// Queue a reply for the next request that consumes one.
    pub fn push(&self, reply: Reply) {
        self.lock().queue.push_back(reply);
    }
    /// The reply used when the queue is empty (initially [`Reply::Echo`]).
    pub fn set_default(&self, reply: Reply) {
        self.lock().default = reply;
    }
    /// How usage numbers are decided (initially [`UsageScript::Honest`]).
    pub fn set_usage(&self, usage: UsageScript) {
        self.lock().usage = usage;
    }
    /// Replies still queued.
    pub fn queued(&self) -> usize {
        self.lock().queue.len()
    }
    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().log.clone()
    }
    /// Every request so far as [`RecordedRequest::summary`] lines, then the
    /// replies still queued: what a test that timed out shows.
    pub fn summary(&self) -> String {
        let st = self.lock();
        let mut out: Vec<String> = st.log.iter().map(RecordedRequest::summary).collect();
        out.push(format!(
            "still queued: [{}]",
            st.queue.iter().map(describe).collect::<Vec<_>>().join(", ")
        ));
        out.join("\n")
    }
    pub fn request_count(&self) -> usize {
        self.lock().log.len()
    }
    /// Move the prompt cache's clock forward, as if `by` had passed between
    /// requests (entries past their TTL expire).
    pub fn advance_clock(&self, by: Duration) {
        self.lock().clock_offset += by;
    }
    /// Forget the prompt cache (as if its TTL had passed).
    pub fn clear_cache(&self) {
        self.lock().cache = CacheModel::default();
    }
    /// The environment for a real `claude` child pointed at this stand-in.
    /// The caller adds `HOME` (a temporary one in tests).
    pub fn claude_env(&self) -> Vec<(String, String)> {
        claude_env(&self.base_url())
    }

    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// The environment for a real `claude` child pointed at `base_url`: a fake
/// key, no telemetry, no updater, no side traffic, and no CLI-level retries
/// (the CLI otherwise retries an error for ~3 minutes).
pub fn claude_env(base_url: &str) -> Vec<(String, String)> {
    [
        ("ANTHROPIC_BASE_URL", base_url),
        ("ANTHROPIC_API_KEY", TEST_API_KEY),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("CLAUDE_CODE_MAX_RETRIES", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

async fn fallback(uri: Uri) -> Response {
    json_response(
        404,
        &error_body("not_found_error", &format!("Not found: {}", uri.path())),
        &[],
    )
}

fn json_response(status: u16, body: &Value, headers: &[(String, String)]) -> Response {
    let mut b = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json")
        .header("request-id", format!("req_011CStandin{:016x}", next_id()));
    for (k, v) in headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Body::from(body.to_string()))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// What one request is answered with, decided under the lock.
enum Plan {
    Stream {
        blocks: Vec<sse::Block>,
        usage: Usage,
        stop_reason: &'static str,
        model: String,
    },
    Error {
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    },
}

async fn handle(
    State(inner): State<Arc<Mutex<Inner>>>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (delay, plan) = {
        let mut st = inner.lock().unwrap_or_else(|e| e.into_inner());
        let n = st.log.len() + 1;
        let (reply, source) = choose(&mut st, &body);
        let answer = format!("{source}: {}", describe(&reply));
        let (delay, usage_override, reply) = unwrap_modifiers(reply);
        let plan = plan_for(&mut st, &body, n, reply, usage_override);
        let usage = match &plan {
            Plan::Stream { usage, .. } => Some(*usage),
            Plan::Error { .. } => None,
        };
        st.log.push(RecordedRequest {
            path: uri
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            headers: headers
                .iter()
                .filter(|(k, _)| {
                    let k = k.as_str();
                    !(k.eq_ignore_ascii_case("x-api-key")
                        || k.eq_ignore_ascii_case("authorization"))
                })
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body,
            usage,
            n,
            answer,
        });
        (delay, plan)
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match plan {
        Plan::Error {
            status,
            body,
            headers,
        } => json_response(status, &body, &headers),
        Plan::Stream {
            blocks,
            usage,
            stop_reason,
            model,
        } => Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .header("request-id", format!("req_011CStandin{:016x}", next_id()))
            .body(Body::from(sse::render(
                &format!("msg_standin_{:08}", next_id()),
                &model,
                &blocks,
                usage,
                stop_reason,
            )))
            .unwrap_or_else(|_| Response::new(Body::empty())),
    }
}

/// Which reply answers `body`, and where it came from: a tool-result
/// follow-up and a compaction request are answered without consuming the
/// queue (see the crate doc).
fn choose(st: &mut Inner, body: &Value) -> (Reply, &'static str) {
    // A compaction request first: the CLI puts its summary prompt into the
    // last user message, next to any tool result that message carries.
    if is_summary_request(body) {
        let head_fits = matches!(
            st.queue.front().map(|r| unwrap_modifiers(r.clone()).2),
            Some(Reply::Summary(_) | Reply::Error { .. })
        );
        if head_fits && let Some(r) = st.queue.pop_front() {
            return (r, "queued (compaction)");
        }
        return (
            Reply::Summary(
                "The user and the assistant exchanged messages; nothing is pending.".into(),
            ),
            "compaction",
        );
    }
    if last_carries_tool_result(body) && work::follow_up(body).is_some() {
        return (Reply::Work, "work follow-up");
    }
    if last_carries_tool_result(body) {
        match st.pending_then.pop_front() {
            Some(Some(then)) => return (Reply::Text(then), "tool-result follow-up"),
            // A `Tool` reply's follow-up takes the next queued reply.
            Some(None) => {}
            None => return (Reply::Text("Done.".to_string()), "unexpected tool result"),
        }
    }
    match st.queue.pop_front() {
        Some(r) => (r, "queued"),
        None => (st.default.clone(), "default"),
    }
}

/// The command a [`Reply::Work`] runs next: the first one for a round's
/// instructions, or the one after a work command's output.
fn work_command(body: &Value) -> Option<String> {
    match work::follow_up(body) {
        Some((_, _, steps)) if steps >= work::WORK_MAX_STEPS => None,
        Some((cmd, output, _)) => work::next_command(&cmd, &output),
        None => {
            let text = last_message(body).map(message_text).unwrap_or_default();
            work::first_command(&text)
        }
    }
}

fn unwrap_modifiers(mut r: Reply) -> (Duration, Option<Usage>, Reply) {
    let mut delay = Duration::ZERO;
    let mut usage = None;
    loop {
        match r {
            Reply::Delayed { after, reply } => {
                delay += after;
                r = *reply;
            }
            Reply::WithUsage { usage: u, reply } => {
                usage.get_or_insert(u);
                r = *reply;
            }
            other => return (delay, usage, other),
        }
    }
}

fn plan_for(st: &mut Inner, body: &Value, n: usize, reply: Reply, over: Option<Usage>) -> Plan {
    let model = body["model"].as_str().unwrap_or(DEFAULT_MODEL).to_string();
    let (blocks, stop_reason) = match reply {
        Reply::Error {
            status,
            body,
            headers,
        } => {
            return Plan::Error {
                status,
                body,
                headers,
            };
        }
        Reply::Echo => {
            let m = body["messages"].as_array().map_or(0, Vec::len);
            (
                vec![sse::Block::Text(format!(
                    "reply #{n} (request carried {m} messages)"
                ))],
                "end_turn",
            )
        }
        Reply::Text(t) => (vec![sse::Block::Text(t)], "end_turn"),
        Reply::Work => match work_command(body) {
            Some(command) => (
                vec![
                    sse::Block::Text("I will answer.".into()),
                    sse::Block::ToolUse {
                        id: format!("toolu_standin_{:08}", next_id()),
                        name: "Bash".into(),
                        input: json!({"command": command, "description": work::WORK_MARK}),
                    },
                ],
                "tool_use",
            ),
            None => (vec![sse::Block::Text(work::WORK_DONE.into())], "end_turn"),
        },
        Reply::Summary(s) => (
            vec![sse::Block::Text(format!(
                "<analysis>\nThe conversation so far, in order.\n</analysis>\n\n<summary>\n{s}\n</summary>"
            ))],
            "end_turn",
        ),
        Reply::Tool { name, input } => {
            st.pending_then.push_back(None);
            (
                vec![
                    sse::Block::Text("I will use a tool.".into()),
                    sse::Block::ToolUse {
                        id: format!("toolu_standin_{:08}", next_id()),
                        name,
                        input,
                    },
                ],
                "tool_use",
            )
        }
        Reply::Bash { command, then } => {
            st.pending_then.push_back(Some(then));
            (
                vec![
                    sse::Block::Text("I will run a command.".into()),
                    sse::Block::ToolUse {
                        id: format!("toolu_standin_{:08}", next_id()),
                        name: "Bash".into(),
                        input: json!({"command": command, "description": "Run the requested command"}),
                    },
                ],
                "tool_use",
            )
        }
        Reply::Delayed { reply, .. } | Reply::WithUsage { reply, .. } => {
            return plan_for(st, body, n, *reply, over);
        }
    };
    let output_tokens = blocks.iter().map(sse::Block::tokens).sum::<u64>().max(1);
    let now = std::time::Instant::now() + st.clock_offset;
    let computed = st.cache.account(body, now);
    let usage = over.unwrap_or(match &st.usage {
        UsageScript::Fixed(u) => *u,
        UsageScript::Honest => Usage {
            input_tokens: computed.input,
            cache_creation_input_tokens: computed.creation,
            cache_read_input_tokens: computed.read,
            output_tokens,
        },
    });
    Plan::Stream {
        blocks,
        usage,
        stop_reason,
        model,
    }
}

#[cfg(test)]
mod tests;
