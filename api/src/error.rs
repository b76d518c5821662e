//! The typed errors of the clients: what a caller can act on (log in again,
//! wait, show the unread messages, re-register a window) is a variant of its
//! own; everything else keeps the status and the backend's text.

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use crate::types::{CardId, ErrorBody, Message, MessageId, codes};

/// How much of an unparseable error body is kept in [`Error::Unparseable`]:
/// the first 300 characters, as production's own MCP layer keeps of a
/// backend answer it cannot decode (seed 002 §3.2 "解不开截 300 rune").
pub const ERROR_BODY_KEEP_CHARS: usize = 300;

/// An error of the REST, WebSocket or MCP client.
#[derive(Debug, Error)]
pub enum Error {
    /// The credentials were refused (login 401, or still 401 after one
    /// fresh login).
    #[error("unauthorized: {message}")]
    Unauthorized { message: String },
    /// The login itself was refused (401 at `POST /v1/auth/login`). In words
    /// an operator can act on: production has no distinct answer for the
    /// agent login gate, the fixed code simply stops working.
    #[error(
        "login refused ({message}): the backend did not take this email with the fixed code. \
         Either the account is not an agent account with a fixed code (a reinforcement account \
         has only its MCP key), or it is disabled, or the backend's agent \
         login gate is on (AGENT_LOGIN_SECRET or AGENT_LOGIN_CIDRS) and this machine meets \
         neither, and then the fixed code simply stops working: put the agent secret in the \
         root's agent.env (HOOP_AGENT_SECRET) or run from an allowed network"
    )]
    LoginRefused { message: String },
    /// 404: the thing does not exist (or a card is not working; a window is
    /// unknown → `window_not_found`, re-register).
    #[error("not found ({code}): {message}")]
    NotFound { code: String, message: String },
    /// 429: wait `retry_after` (when the backend said) and try again.
    /// `message` is the backend's words (its error body's message, or the
    /// first [`ERROR_BODY_KEEP_CHARS`] runes of a body it could not parse;
    /// empty when there was none).
    #[error(
        "rate limited{}{}",
        retry_after.map(|d| format!("; retry after {} s", d.as_secs())).unwrap_or_default(),
        if message.is_empty() { String::new() } else { format!(": {message}") }
    )]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// 409 `gap`: newer messages exist than the sender has seen.
    #[error("{}", gap_text(*latest_id, *unread_count))]
    Gap {
        latest_id: MessageId,
        /// How many are unread (a key without read scope gets only this).
        unread_count: u32,
        /// Newest first.
        unread: Vec<Message>,
    },
    /// A card was created but could not be claimed (production's
    /// `work_task_start` is two transactions): the queued orphan `task_id`
    /// is left on the board and must be finished by its owner.
    #[error("card {task_id} was created but not claimed ({code}): {message}")]
    Orphaned {
        task_id: CardId,
        code: String,
        message: String,
    },
    /// Any other refusal with a stable code (`markdown_refused`,
    /// `body_too_long`, `agent_busy`, `not_claimable`, `key_invalid`, …).
    /// A refused key says what to do: ask the admin for a new one.
    #[error("refused ({status} {code}): {message}{}", refusal_fix(code))]
    Refused {
        status: u16,
        code: String,
        message: String,
    },
    /// A non-success status whose body is not a contract error body
    /// (`{"error":{"code","message"}}`): `head` is its first
    /// [`ERROR_BODY_KEEP_CHARS`] characters. Never retried silently.
    #[error("HTTP {status} with an unreadable error body: {head}")]
    Unparseable { status: u16, head: String },
    /// The request never got an answer (connect, TLS, timeout, reset): the
    /// URL and every cause once, innermost last (see [`transport_text`]).
    #[error("{0}")]
    Transport(String),
    /// The answer did not have the expected shape.
    #[error("decoding {what}: {message}")]
    Decode { what: &'static str, message: String },
    /// The token cache could not be written.
    #[error("token cache {path}: {source}")]
    TokenCache {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The home's configuration could not be read.
    #[error(transparent)]
    Config(#[from] hoop_core::home::HomeError),
    /// The base URL is not usable.
    #[error("bad base URL {url:?}: {message}")]
    BadUrl { url: String, message: String },
    /// The MCP endpoint answered a JSON-RPC error.
    #[error("MCP error {code}: {message}")]
    Rpc { code: i64, message: String },
}

impl Error {
    /// The contract error code, when the backend sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::NotFound { code, .. }
            | Error::Refused { code, .. }
            | Error::Orphaned { code, .. } => Some(code),
            Error::Gap { .. } => Some(codes::GAP),
            Error::RateLimited { .. } => Some(codes::RATE_LIMITED),
            Error::Unauthorized { .. } | Error::LoginRefused { .. } => Some(codes::UNAUTHORIZED),
            _ => None,
        }
    }

    /// Map a non-success answer to its variant. `retry_after_header` is the
    /// parsed `Retry-After` header, which wins over the body's
    /// `retry_after_sec`.
    pub fn from_status(status: u16, body: &[u8], retry_after_header: Option<Duration>) -> Error {
        let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
        let Some(eb) = parsed else {
            // Whatever the status, the first runes of what could not be
            // parsed are kept (seed 002 L51 "解不开截 300 rune").
            let head = keep(body);
            if status == 429 {
                return Error::RateLimited {
                    retry_after: retry_after_header,
                    message: head,
                };
            }
            if status == 401 {
                return Error::Unauthorized {
                    message: format!("401 with an unreadable body: {head}"),
                };
            }
            return Error::Unparseable { status, head };
        };
        Error::from_body(status, eb, retry_after_header)
    }

    /// Map a contract error body to its variant. `status` is the HTTP
    /// status it came with (200 for a refused MCP tool call, whose body is
    /// the same `ErrorBody`): then the codes that mean "no such thing"
    /// (`not_found`, `window_not_found`, `not_working`) decide.
    pub fn from_body(status: u16, eb: ErrorBody, retry_after: Option<Duration>) -> Error {
        let d = eb.error;
        let missing = matches!(
            d.code.as_str(),
            codes::NOT_FOUND | codes::WINDOW_NOT_FOUND | codes::NOT_WORKING
        );
        if let Some(task_id) = d.task_id {
            return Error::Orphaned {
                task_id,
                code: d.code,
                message: d.message,
            };
        }
        match (status, d.code.as_str()) {
            (401, _) | (_, codes::UNAUTHORIZED) => Error::Unauthorized { message: d.message },
            // A 429 is a rate limit unless its code says otherwise (the
            // backend also answers `too_many_subcards` with 429).
            (_, codes::RATE_LIMITED) => Error::RateLimited {
                retry_after: retry_after.or(d.retry_after_sec.map(Duration::from_secs)),
                message: d.message,
            },
            (_, codes::GAP) => Error::Gap {
                latest_id: d.latest_id.unwrap_or_default(),
                unread_count: d.unread_count.unwrap_or(d.unread.len() as u32),
                unread: d.unread,
            },
            (404, _) => Error::NotFound {
                code: d.code,
                message: d.message,
            },
            (200, _) if missing => Error::NotFound {
                code: d.code,
                message: d.message,
            },
            _ => Error::Refused {
                status,
                code: d.code,
                message: d.message,
            },
        }
    }
}

/// Parse a `Retry-After` header value given in seconds (the only form the
/// backend sends; an HTTP date is not honoured and reads as absent).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The first [`ERROR_BODY_KEEP_CHARS`] characters of a body, for an error.
pub(crate) fn keep(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .chars()
        .take(ERROR_BODY_KEEP_CHARS)
        .collect()
}

/// A gap in words; a gap known only by its code (production's MCP text
/// names neither number) says so rather than "0 unread".
fn gap_text(latest_id: MessageId, unread_count: u32) -> String {
    if latest_id == 0 && unread_count == 0 {
        "newer messages arrived since the last one seen (gap)".to_string()
    } else {
        format!("{unread_count} unread message(s) since the last one seen; newest is {latest_id}")
    }
}

/// What a refusal with `code` adds to say how to fix it.
fn refusal_fix(code: &str) -> &'static str {
    match code {
        codes::KEY_INVALID => KEY_REFUSED_FIX,
        _ => "",
    }
}

/// The fix for a key the backend refuses (unknown, expired, used or
/// revoked): it will not work again, only a new one will.
pub const KEY_REFUSED_FIX: &str = "; this key will not work again: ask the admin for a new one";

/// A request that got no answer, in one line: `cannot reach <url>: <cause>:
/// … : <OS cause>`. The URL's path is kept (it names the call) and its query
/// dropped; URLs here never hold secrets (tokens travel in headers only).
pub fn transport_text(e: &reqwest::Error) -> String {
    let mut msgs = Vec::new();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msgs.push(s.to_string());
        src = s.source();
    }
    let head = match e.url() {
        Some(u) => {
            let mut u = u.clone();
            u.set_query(None);
            let _ = u.set_password(None);
            let _ = u.set_username("");
            format!("cannot reach {u}")
        }
        None => "cannot reach the backend".to_string(),
    };
    let what = e.without_url_ref();
    msgs.insert(0, what);
    format!("{head}: {}", render_messages(&msgs))
}

trait WithoutUrlRef {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrlRef for reqwest::Error {
    /// reqwest's own words without the ` for url (…)` it appends.
    fn without_url_ref(&self) -> String {
        let full = self.to_string();
        match self.url() {
            Some(u) => full.replace(&format!(" for url ({u})"), ""),
            None => full,
        }
    }
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        Error::Transport(transport_text(&e))
    }
}

/// THE rendering of an error chain, for every command's last line and the
/// daemons' logs: each cause once, innermost last, joined by `: `. A cause
/// whose text its outer error already repeats (a `{0}` in a message over a
/// `#[from]` source) is said once, at its own place.
pub fn render_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msgs = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        msgs.push(c.to_string());
        cur = c.source();
    }
    render_messages(&msgs)
}

/// [`render_chain`] over the messages of a chain, outermost first: each
/// message loses the text of the causes inside it, then empty or repeated
/// parts are dropped.
pub fn render_messages(msgs: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let mut own = m.clone();
        for inner in &msgs[i + 1..] {
            let inner = inner.trim();
            if !inner.is_empty() && own.trim() != inner {
                own = own.replace(inner, "");
            }
        }
        let own = tidy(&own);
        if own.is_empty() || parts.iter().any(|p| p == &own) {
            continue;
        }
        parts.push(own);
    }
    parts.join(": ")
}

/// A message with a removed cause's leftovers cleaned: empty brackets,
/// dangling separators, doubled spaces.
fn tidy(s: &str) -> String {
    let mut s = s.to_string();
    for (from, to) in [("()", ""), ("( )", ""), (": ;", ";"), (": ,", ",")] {
        s = s.replace(from, to);
    }
    // Doubled spaces inside a line go; a line's own indent (a fix line
    // under its cause) stays.
    s = s
        .split('\n')
        .map(|line| {
            let body = line.trim_start_matches(' ');
            let mut body = body.to_string();
            while body.contains("  ") {
                body = body.replace("  ", " ");
            }
            format!(
                "{}{body}",
                &line[..line.len() - line.trim_start_matches(' ').len()]
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    for (from, to) in [(" ;", ";"), (" ,", ",")] {
        s = s.replace(from, to);
    }
    s.trim()
        .trim_end_matches([':', ';', ',', '-', '—'])
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"error": {"code": code, "message": "m"}})).unwrap()
    }

    #[test]
    fn status_and_code_map_to_variants() {
        assert!(matches!(
            Error::from_status(401, &body("unauthorized"), None),
            Error::Unauthorized { .. }
        ));
        assert!(matches!(
            Error::from_status(404, &body("window_not_found"), None),
            Error::NotFound { code, .. } if code == "window_not_found"
        ));
        assert!(matches!(
            Error::from_status(422, &body("markdown_refused"), None),
            Error::Refused { status: 422, code, .. } if code == "markdown_refused"
        ));
        assert!(matches!(
            Error::from_status(429, &body("too_many_subcards"), None),
            Error::Refused { status: 429, code, .. } if code == "too_many_subcards"
        ));
        assert!(matches!(
            Error::from_status(502, b"<html>bad gateway</html>", None),
            Error::Unparseable { status: 502, .. }
        ));
    }

    /// Production's codes, from the nested body, each to its variant.
    #[test]
    fn production_codes_map_from_the_nested_body() {
        let cases: &[(u16, &str, &str)] = &[
            (409, "gap", "Gap"),
            (404, "window_not_found", "NotFound"),
            (409, "agent_busy", "Refused"),
            (409, "not_claimable", "Refused"),
            (429, "rate_limited", "RateLimited"),
            (409, "need_task_card", "Refused"),
            (401, "unauthorized", "Unauthorized"),
        ];
        for (status, code, want) in cases {
            let e = Error::from_status(*status, &body(code), None);
            let got = format!("{e:?}");
            assert!(got.starts_with(want), "{code}: {got}");
            assert_eq!(e.code(), Some(*code), "{code}");
        }
        // The old flat shape is not a contract body any more.
        let flat =
            serde_json::to_vec(&serde_json::json!({"error": "gap", "message": "m"})).unwrap();
        assert!(matches!(
            Error::from_status(409, &flat, None),
            Error::Unparseable { status: 409, .. }
        ));
    }

    #[test]
    fn an_unparseable_body_keeps_its_first_300_characters() {
        let long = format!("<html>{}</html>", "é".repeat(1000));
        match Error::from_status(500, long.as_bytes(), None) {
            Error::Unparseable { status, head } => {
                assert_eq!(status, 500);
                assert_eq!(head.chars().count(), ERROR_BODY_KEEP_CHARS);
                assert!(long.starts_with(&head));
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_task_id_in_the_error_surfaces_the_orphan() {
        let b = serde_json::to_vec(&serde_json::json!({"error": {
            "code": "agent_busy", "message": "you already work on a card", "task_id": 41
        }}))
        .unwrap();
        match Error::from_status(409, &b, None) {
            Error::Orphaned { task_id, code, .. } => {
                assert_eq!((task_id, code.as_str()), (41, "agent_busy"))
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn retry_after_header_wins_over_the_body() {
        let b = serde_json::to_vec(&serde_json::json!({"error": {
            "code": "rate_limited", "message": "slow down", "retry_after_sec": 7
        }}))
        .unwrap();
        match Error::from_status(429, &b, Some(Duration::from_secs(60))) {
            Error::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(60)))
            }
            e => panic!("{e:?}"),
        }
        match Error::from_status(429, &b, None) {
            Error::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(7)))
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            Error::from_status(429, b"", None),
            Error::RateLimited {
                retry_after: None,
                ..
            }
        ));
    }

    #[test]
    fn gap_carries_the_unread() {
        let b = serde_json::to_vec(&serde_json::json!({"error": {
            "code": "gap", "message": "m", "latest_id": 9, "unread": [{
                "id": 9, "conversation_id": 1, "sender_id": 2, "sender_username": "ann",
                "body": "hi", "created_at": 0
            }]
        }}))
        .unwrap();
        match Error::from_status(409, &b, None) {
            Error::Gap {
                latest_id, unread, ..
            } => {
                assert_eq!(latest_id, 9);
                assert_eq!(unread[0].body, "hi");
            }
            e => panic!("{e:?}"),
        }
    }

    /// The status an error of [`Error::from_status`] says it came with.
    fn said_status(e: &Error) -> Option<u16> {
        match e {
            Error::Refused { status, .. } | Error::Unparseable { status, .. } => Some(*status),
            Error::NotFound { .. } => Some(404),
            Error::Unauthorized { .. } => Some(401),
            Error::RateLimited { .. } => Some(429),
            _ => None,
        }
    }

    /// The words an error keeps of its body.
    fn kept(e: &Error) -> String {
        match e {
            Error::Unparseable { head, .. } => head.clone(),
            Error::Unauthorized { message } => message.clone(),
            Error::RateLimited { message, .. } => message.clone(),
            other => format!("{other:?}"),
        }
    }

    /// An unreadable body keeps its first 300 runes whatever the status
    /// (seed 002 L51): per status, the head is in the error.
    #[test]
    fn an_unreadable_body_keeps_its_head_for_every_status() {
        let body = format!("<html>{}</html>", "é".repeat(400));
        let head: String = body.chars().take(ERROR_BODY_KEEP_CHARS).collect();
        for status in [400u16, 401, 403, 404, 409, 413, 422, 429, 500, 502, 503] {
            let e = Error::from_status(status, body.as_bytes(), None);
            assert_eq!(said_status(&e), Some(status), "{status}: {e:?}");
            assert!(kept(&e).ends_with(&head), "{status}: {e:?}");
            assert!(e.to_string().contains(&head), "{status}: shown");
        }
    }

    proptest::proptest! {
        /// A decoded error keeps its status: an unreadable body under any
        /// status, and a contract body whose code names no variant of its
        /// own, come back with the status they came with, never a panic.
        #[test]
        fn a_decoded_error_keeps_its_status(
            status in 400u16..600,
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            code in proptest::sample::select(vec![
                "forbidden", "not_member", "markdown_refused", "body_too_long",
                "agent_busy", "not_claimable", "need_task_card", "too_many_subcards",
                "invalid_transition", "error_required", "key_invalid", "conflict", "internal",
            ]),
        ) {
            let unreadable = [b"\xff".as_slice(), &bytes].concat();
            let e = Error::from_status(status, &unreadable, None);
            proptest::prop_assert_eq!(said_status(&e), Some(status));
            let head = keep(&unreadable);
            proptest::prop_assert!(kept(&e).ends_with(&head));
            let e = Error::from_status(status, &body(code), None);
            proptest::prop_assert_eq!(said_status(&e), Some(status));
            if status != 401 {
                proptest::prop_assert_eq!(e.code(), Some(code));
            }
        }
    }

    /// Each cause once, innermost last, whatever the outer messages repeat.
    #[test]
    fn render_messages_table() {
        let cases: &[(&[&str], &str)] = &[
            (&["a", "b", "c"], "a: b: c"),
            // An outer message that ends with its source's text.
            (
                &[
                    "the redeem did not happen: refused (403 key_invalid): gone",
                    "refused (403 key_invalid): gone",
                ],
                "the redeem did not happen: refused (403 key_invalid): gone",
            ),
            // A transparent wrapper and a repeated cause.
            (
                &[
                    "error sending request",
                    "error sending request",
                    "connection refused",
                ],
                "error sending request: connection refused",
            ),
            // The cause in the middle of the outer text.
            (
                &["adopting x (boom); nothing written", "boom"],
                "adopting x; nothing written: boom",
            ),
            (&["outer: inner", "inner"], "outer: inner"),
            // A fix on its own indented line keeps its indent.
            (
                &["`x` exited 1: no bus\n  fix: do  this"],
                "`x` exited 1: no bus\n  fix: do this",
            ),
            (&["", "only"], "only"),
            (&["solo"], "solo"),
        ];
        for (msgs, want) in cases {
            let msgs: Vec<String> = msgs.iter().map(|m| m.to_string()).collect();
            assert_eq!(render_messages(&msgs), *want, "{msgs:?}");
        }
    }

    #[derive(Debug, Error)]
    enum Outer {
        #[error("the redeem did not happen: {0}")]
        Api(#[from] Error),
    }

    /// The chain a command prints for an unreachable backend: the URL and
    /// the OS cause, each part once (never "transport: error sending
    /// request: transport: error sending request").
    #[tokio::test]
    async fn an_unreachable_url_renders_the_url_and_the_os_cause_once() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let url = format!("http://127.0.0.1:{port}/v1/me?limit=3");
        let e: Error = reqwest::Client::new()
            .get(&url)
            .send()
            .await
            .unwrap_err()
            .into();
        let wrapped = anyhow_like(Outer::from(e));
        assert_eq!(
            wrapped,
            format!(
                "the redeem did not happen: cannot reach http://127.0.0.1:{port}/v1/me: \
                 error sending request: client error (Connect): tcp connect error: \
                 Connection refused (os error 111)"
            )
        );
    }

    fn anyhow_like(e: Outer) -> String {
        render_chain(&e)
    }

    /// A refused key says it will not work again and who gives a new one;
    /// another refusal does not.
    #[test]
    fn a_refused_key_says_to_ask_the_admin() {
        let e = Error::from_status(403, &body("key_invalid"), None);
        assert_eq!(
            e.to_string(),
            "refused (403 key_invalid): m; this key will not work again: ask the admin for a new one"
        );
        let e = Error::from_status(403, &body("forbidden"), None);
        assert_eq!(e.to_string(), "refused (403 forbidden): m");
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after(" 60 "), Some(Duration::from_secs(60)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
