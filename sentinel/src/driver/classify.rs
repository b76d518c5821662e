//! A turn's outcome as a pure function of what the CLI left behind: its exit
//! status (if it ended), its `result` line (if any), the turn's stream
//! observations and its stderr. Judged by `is_error`, never by `subtype`: an
//! API error ends a turn with `"subtype":"success","is_error":true`.
//!
//! Order of the rules, and why:
//! 1. our own deadline → `Timeout`;
//! 2. a result with `is_error:false` → `Ok` (the model's own words are never
//!    searched for marks: an agent that quotes "please run /login" is not
//!    dead) — unless the process then exited non-zero;
//! 3. an error: usage-limit texts first (the CLI's limit message for the
//!    largest plan says "run /login to switch to an API usage-billed
//!    account", which is not a dead login), then auth marks, then
//!    prompt-too-long / unknown session, else `Failed`;
//! 4. no result: the same marks on stderr, then exit 124/137/143 (or death by
//!    SIGTERM/SIGKILL) → `Timeout`, else `Failed` with the exit status.

use hoop_core::limits::TIMEOUT_EXIT_CODES;
use serde_json::Value;

/// How the process ended, when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitInfo {
    Code(i32),
    Signal(i32),
}

impl ExitInfo {
    /// The shell-style code: a signal `n` is `128 + n`.
    pub fn code(self) -> i32 {
        match self {
            ExitInfo::Code(c) => c,
            ExitInfo::Signal(s) => 128 + s,
        }
    }
}

/// A turn's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The turn finished without error: commit.
    Ok,
    /// The turn failed (API error, crash, garbage, no result).
    Failed { reason: String },
    /// The turn ran out of time: a failure, not death.
    Timeout,
    /// The login is dead until a person logs in again.
    AuthDead { cause: String },
    /// A usage / session limit: neither death nor failure.
    UsageLimit { text: String },
    /// The session no longer fits the model (the driver mints a fresh one).
    PromptTooLong { text: String },
    /// `--resume` found no such session (the driver mints a fresh one).
    NoConversation { text: String },
}

impl Outcome {
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }
    /// The session must be replaced by a fresh one and the turn retried.
    pub fn needs_fresh_session(&self) -> bool {
        matches!(
            self,
            Outcome::PromptTooLong { .. } | Outcome::NoConversation { .. }
        )
    }
}

/// Texts (lowercase) that mean a usage or session limit. From the CLI's own
/// limit messages ("You've hit your session limit · resets …", "You're out of
/// usage credits", …) and older ones ("Claude AI usage limit reached|…").
pub const USAGE_LIMIT_MARKS: &[&str] = &[
    "you've hit your",
    "you've reached your",
    "you're out of usage credits",
    "you're out of extra usage",
    "your org is out of usage",
    "usage limit reached",
    "usage limit",
    "session limit",
    "weekly limit",
    "5-hour limit",
];

/// Texts (lowercase) that mean the login is dead. From the CLI's own auth
/// failures ("Invalid API key · Fix external API key", "Not logged in ·
/// Please run /login", "OAuth token revoked · Please run /login", "Your
/// session has expired. Please run /login…", "OAuth refresh token is no
/// longer valid; run /login…") and the `authentication_failed` error kind.
pub const AUTH_MARKS: &[&str] = &[
    "oauth session expired",
    "please run /login",
    "run /login",
    "invalid api key",
    "not logged in",
    "oauth token revoked",
    "oauth token has expired",
    "oauth token expired",
    "refresh token is no longer valid",
    "session has expired",
    "session expired",
    "login expired",
    "authentication_failed",
    "authentication_error",
];

/// The 400 the API sends when a session outgrew the model, and the CLI's
/// own wording of it.
pub const PROMPT_TOO_LONG_MARKS: &[&str] = &["prompt is too long"];
/// `--resume` of a session the CLI cannot find (unknown id, or another cwd).
pub const NO_CONVERSATION_MARKS: &[&str] = &["no conversation found"];

/// Everything [`classify`] looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// `None` while the process lives on (persistent mode after a result).
    pub exit: Option<ExitInfo>,
    pub result: Option<&'a Value>,
    /// The CLI's error kind from a synthetic assistant line.
    pub assistant_error: Option<&'a str>,
    /// A subscription rate-limit event said `rejected`.
    pub rate_limit_rejected: bool,
    pub stderr: &'a str,
    /// The driver's own turn deadline passed.
    pub timed_out: bool,
}

fn find<'m>(text: &str, marks: &'m [&'m str]) -> Option<&'m str> {
    let t = text.to_lowercase();
    marks.iter().copied().find(|m| t.contains(m))
}

/// The error text a result line carries: `result`, `errors[]`, and the
/// `terminal_reason`.
fn result_error_text(r: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(t) = r["result"].as_str() {
        parts.push(t.to_string());
    }
    if let Some(errs) = r["errors"].as_array() {
        parts.extend(errs.iter().filter_map(|e| e.as_str().map(str::to_string)));
    }
    parts.join("\n")
}

fn short(s: &str) -> String {
    let s = s.trim();
    let mut out: String = s.chars().take(300).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn by_marks(text: &str, limit_event: bool) -> Option<Outcome> {
    if limit_event || find(text, USAGE_LIMIT_MARKS).is_some() {
        return Some(Outcome::UsageLimit { text: short(text) });
    }
    if let Some(m) = find(text, AUTH_MARKS) {
        return Some(Outcome::AuthDead {
            cause: m.to_string(),
        });
    }
    if find(text, PROMPT_TOO_LONG_MARKS).is_some() {
        return Some(Outcome::PromptTooLong { text: short(text) });
    }
    if find(text, NO_CONVERSATION_MARKS).is_some() {
        return Some(Outcome::NoConversation { text: short(text) });
    }
    None
}

/// Classify one turn.
pub fn classify(ev: &Evidence<'_>) -> Outcome {
    if ev.timed_out {
        return Outcome::Timeout;
    }
    if let Some(r) = ev.result {
        return match r["is_error"].as_bool() {
            Some(false) => match ev.exit {
                Some(e) if e.code() != 0 => Outcome::Failed {
                    reason: format!("exited {} after a successful result", e.code()),
                },
                _ => Outcome::Ok,
            },
            Some(true) => {
                let mut text = result_error_text(r);
                if let Some(k) = ev.assistant_error {
                    text.push('\n');
                    text.push_str(k);
                }
                if r["terminal_reason"] == "prompt_too_long" {
                    return Outcome::PromptTooLong { text: short(&text) };
                }
                by_marks(&text, ev.rate_limit_rejected).unwrap_or_else(|| Outcome::Failed {
                    reason: match r["api_error_status"].as_u64() {
                        Some(s) => format!("API error {s}: {}", short(&text)),
                        None => short(&text),
                    },
                })
            }
            None => Outcome::Failed {
                reason: "result line without is_error".into(),
            },
        };
    }
    if let Some(o) = by_marks(ev.stderr, ev.rate_limit_rejected) {
        return o;
    }
    match ev.exit {
        Some(e) if TIMEOUT_EXIT_CODES.contains(&e.code()) => Outcome::Timeout,
        Some(e) => Outcome::Failed {
            reason: format!(
                "exited {} without a result{}",
                e.code(),
                if ev.stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", short(ev.stderr))
                }
            ),
        },
        None => Outcome::Failed {
            reason: "output ended without a result".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(is_error: bool, text: &str) -> Value {
        json!({"type":"result","subtype":"success","is_error":is_error,"result":text})
    }

    #[test]
    fn classification_table() {
        let ok = res(false, "reply #1");
        let quoting = res(
            false,
            "the docs say: please run /login when your oauth session expired",
        );
        let e401 = json!({"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Fix external API key","terminal_reason":"completed"});
        let e401_oauth = res(true, "Not logged in · Please run /login");
        let revoked = res(true, "OAuth token revoked · Please run /login");
        let expired = res(
            true,
            "Your session has expired. Please run /login to sign in again.",
        );
        let e429 = json!({"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"});
        let e529 = json!({"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment."});
        let e500 = res(true, "API Error: 500 Internal server error.");
        let limit = json!({"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets Jan 1, 2100, 12am (UTC)"});
        let max_limit = res(
            true,
            "You've hit your limit · resets 5pm. You are on the highest Max subscription plan. For additional usage, run /login to switch to an API usage-billed account.",
        );
        let credits = res(true, "You're out of usage credits · resets 3pm");
        let old_limit = res(true, "Claude AI usage limit reached|1767225600");
        let too_long = json!({"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"Prompt is too long · the request is ~250000 tokens (limit 200000)","terminal_reason":"prompt_too_long"});
        let too_long_plain = res(
            true,
            "API Error: 400 prompt is too long: 250000 tokens > 200000 maximum",
        );
        let unknown = json!({"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"errors":["No conversation found with session ID: 3333"]});
        let no_flag = json!({"type":"result","subtype":"success"});
        // A subtype that is not "success" does not make an OK turn fail.
        let odd_subtype =
            json!({"type":"result","subtype":"error_max_turns","is_error":false,"result":"x"});

        fn e<'a>(
            result: Option<&'a Value>,
            exit: Option<ExitInfo>,
            stderr: &'a str,
        ) -> Evidence<'a> {
            Evidence {
                exit,
                result,
                stderr,
                ..Evidence::default()
            }
        }
        let cases: Vec<(&str, Evidence<'_>, Outcome)> = vec![
            ("ok, process lives on", e(Some(&ok), None, ""), Outcome::Ok),
            ("ok, exit 0", e(Some(&ok), Some(ExitInfo::Code(0)), ""), Outcome::Ok),
            ("ok text quoting auth marks", e(Some(&quoting), None, ""), Outcome::Ok),
            ("odd subtype, is_error false", e(Some(&odd_subtype), None, ""), Outcome::Ok),
            ("ok then non-zero exit", e(Some(&ok), Some(ExitInfo::Code(1)), ""), Outcome::Failed { reason: "exited 1 after a successful result".into() }),
            ("401 api key", e(Some(&e401), Some(ExitInfo::Code(1)), ""), Outcome::AuthDead { cause: "invalid api key".into() }),
            ("401 oauth", e(Some(&e401_oauth), None, ""), Outcome::AuthDead { cause: "please run /login".into() }),
            ("token revoked", e(Some(&revoked), None, ""), Outcome::AuthDead { cause: "please run /login".into() }),
            ("session expired", e(Some(&expired), None, ""), Outcome::AuthDead { cause: "please run /login".into() }),
            ("stderr oauth session expired", e(None, Some(ExitInfo::Code(1)), "Error: OAuth session expired"), Outcome::AuthDead { cause: "oauth session expired".into() }),
            ("429 is a failure", e(Some(&e429), None, ""), Outcome::Failed { reason: "API error 429: API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit".into() }),
            ("garbage then exit 0", e(None, Some(ExitInfo::Code(0)), ""), Outcome::Failed { reason: "exited 0 without a result".into() }),
            ("eof, no exit yet", e(None, None, ""), Outcome::Failed { reason: "output ended without a result".into() }),
            ("exit 124", e(None, Some(ExitInfo::Code(124)), ""), Outcome::Timeout),
            ("exit 137", e(None, Some(ExitInfo::Code(137)), ""), Outcome::Timeout),
            ("exit 143", e(None, Some(ExitInfo::Code(143)), ""), Outcome::Timeout),
            ("SIGTERM", e(None, Some(ExitInfo::Signal(15)), ""), Outcome::Timeout),
            ("SIGKILL", e(None, Some(ExitInfo::Signal(9)), ""), Outcome::Timeout),
            ("crash exit 2", e(None, Some(ExitInfo::Code(2)), "boom"), Outcome::Failed { reason: "exited 2 without a result: boom".into() }),
            ("session limit", e(Some(&limit), Some(ExitInfo::Code(1)), ""), Outcome::UsageLimit { text: "You've hit your session limit · resets Jan 1, 2100, 12am (UTC)".into() }),
            ("max plan limit mentions /login", e(Some(&max_limit), None, ""), Outcome::UsageLimit { text: "You've hit your limit · resets 5pm. You are on the highest Max subscription plan. For additional usage, run /login to switch to an API usage-billed account.".into() }),
            ("out of credits", e(Some(&credits), None, ""), Outcome::UsageLimit { text: "You're out of usage credits · resets 3pm".into() }),
            ("old limit text", e(Some(&old_limit), None, ""), Outcome::UsageLimit { text: "Claude AI usage limit reached|1767225600".into() }),
            ("prompt too long by terminal_reason", e(Some(&too_long), None, ""), Outcome::PromptTooLong { text: "Prompt is too long · the request is ~250000 tokens (limit 200000)".into() }),
            ("prompt too long by text", e(Some(&too_long_plain), None, ""), Outcome::PromptTooLong { text: "API Error: 400 prompt is too long: 250000 tokens > 200000 maximum".into() }),
            ("unknown session result", e(Some(&unknown), Some(ExitInfo::Code(1)), ""), Outcome::NoConversation { text: "No conversation found with session ID: 3333".into() }),
            ("unknown session stderr", e(None, Some(ExitInfo::Code(1)), "No conversation found with session ID: 3333\n"), Outcome::NoConversation { text: "No conversation found with session ID: 3333".into() }),
            ("result without is_error", e(Some(&no_flag), None, ""), Outcome::Failed { reason: "result line without is_error".into() }),
        ];
        for (name, ev, want) in cases {
            assert_eq!(classify(&ev), want, "{name}");
        }
        // 529 / 500: failures, never death.
        for r in [&e529, &e500] {
            assert!(matches!(
                classify(&e(Some(r), None, "")),
                Outcome::Failed { .. }
            ));
        }
        // The synthetic line's error kind alone marks a dead login.
        let bare = res(true, "Request failed");
        assert_eq!(
            classify(&Evidence {
                result: Some(&bare),
                assistant_error: Some("authentication_failed"),
                ..Evidence::default()
            }),
            Outcome::AuthDead {
                cause: "authentication_failed".into()
            }
        );
        // A rejected subscription rate-limit event is a limit.
        assert!(matches!(
            classify(&Evidence {
                result: Some(&bare),
                rate_limit_rejected: true,
                ..Evidence::default()
            }),
            Outcome::UsageLimit { .. }
        ));
        // Our own deadline wins over everything.
        assert_eq!(
            classify(&Evidence {
                result: Some(&ok),
                timed_out: true,
                ..Evidence::default()
            }),
            Outcome::Timeout
        );
    }
}
