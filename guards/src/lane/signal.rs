//! A lifecycle-hook payload → one signal from a closed set, plus a scrubbed,
//! bounded detail. Pure: bytes in, `Option<(Signal, detail)>` out.
//!
//! The vocabulary is an enum, not a string, so no payload can spell a card
//! transition. The detail is only ever a tool name or a word from a closed
//! set — never a tool's arguments, an error message, a path or a token.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::LANE_DETAIL_MAX_CHARS;

/// One coarse lifecycle signal: the whole vocabulary of the lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// A session started (or resumed): the agent is working.
    Running,
    /// The agent waits for a person (a permission prompt, an idle prompt).
    NeedsInput,
    /// A turn or session was aborted or closed before it completed.
    Interrupted,
    /// A turn finished normally.
    TurnFinished,
    /// A turn ended on an error (the API refused, the loop failed).
    TurnFailed,
    /// A tool call failed.
    ToolFailed,
    /// The session ended normally.
    Ended,
    /// The session ended on an error.
    EndedError,
}

impl Signal {
    /// The wire word (`running`, `needs-input`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Running => "running",
            Signal::NeedsInput => "needs-input",
            Signal::Interrupted => "interrupted",
            Signal::TurnFinished => "turn-finished",
            Signal::TurnFailed => "turn-failed",
            Signal::ToolFailed => "tool-failed",
            Signal::Ended => "ended",
            Signal::EndedError => "ended-error",
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The lifecycle events the lane installs, per agent. Exactly the events
/// [`map_payload`] consumes: installing more would only spawn hooks for
/// payloads the relay ignores.
///
/// Claude Code 2.1.197 (the pinned CLI) fires `SessionStart`, `Stop`,
/// `StopFailure` (a turn ended on an API error), `SessionEnd`,
/// `PostToolUseFailure` and `Notification` (its event table; the end-to-end
/// suite watches the first four reach the endpoint from a real run). Cursor's
/// documented lifecycle events are `sessionStart`, `stop`, `sessionEnd` and
/// `postToolUseFailure` (seed 001).
pub const CLAUDE_EVENTS: &[&str] = &[
    "SessionStart",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "PostToolUseFailure",
    "Notification",
];
/// See [`CLAUDE_EVENTS`].
pub const CURSOR_EVENTS: &[&str] = &["sessionStart", "stop", "sessionEnd", "postToolUseFailure"];

/// Map one hook payload to a signal and an optional scrubbed detail. `None`
/// means the payload says nothing this lane reports (unknown event,
/// malformed or truncated JSON): the relay then sends nothing.
pub fn map_payload(bytes: &[u8]) -> Option<(Signal, Option<String>)> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let event = v.get("hook_event_name")?.as_str()?;
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let word = |k: &str, allowed: &[&str]| s(k).filter(|w| allowed.contains(w)).map(String::from);
    let mapped = match event {
        // Claude Code.
        "SessionStart" => (
            Signal::Running,
            word("source", &["startup", "resume", "clear", "compact"]),
        ),
        "Stop" => (Signal::TurnFinished, None),
        "StopFailure" => (Signal::TurnFailed, identifier(s("error"))),
        "SessionEnd" => (
            Signal::Ended,
            word(
                "reason",
                &[
                    "clear",
                    "logout",
                    "prompt_input_exit",
                    "other",
                    "bypass_permissions_disabled",
                    "resume",
                ],
            ),
        ),
        "PostToolUseFailure" => {
            let interrupted = v.get("is_interrupt").and_then(Value::as_bool) == Some(true);
            let signal = if interrupted {
                Signal::Interrupted
            } else {
                Signal::ToolFailed
            };
            (signal, tool_name(s("tool_name")))
        }
        "Notification" => match s("notification_type") {
            Some("permission_prompt") | Some("idle_prompt") | Some("elicitation_dialog") => {
                (Signal::NeedsInput, identifier(s("notification_type")))
            }
            _ => return None,
        },
        // Cursor.
        "sessionStart" => (Signal::Running, None),
        "stop" => match s("status") {
            Some("completed") => (Signal::TurnFinished, None),
            Some("aborted") => (Signal::Interrupted, Some("aborted".into())),
            Some("error") => (Signal::TurnFailed, None),
            _ => (Signal::TurnFinished, None),
        },
        "sessionEnd" => match s("reason") {
            Some("completed") => (Signal::Ended, Some("completed".into())),
            Some(r @ ("aborted" | "window_close" | "user_close")) => {
                (Signal::Interrupted, Some(r.to_string()))
            }
            Some("error") => (Signal::EndedError, None),
            _ => (Signal::Ended, None),
        },
        "postToolUseFailure" => {
            let tool = tool_name(s("tool_name"));
            let kind = word("failure_type", &["timeout", "error", "permission_denied"]);
            let detail = match (tool, kind) {
                (Some(t), Some(k)) => Some(format!("{t}: {k}")),
                (t, k) => t.or(k),
            };
            (Signal::ToolFailed, detail)
        }
        _ => return None,
    };
    Some((mapped.0, mapped.1.map(|d| bound(&d))))
}

/// A tool name as a detail: letters, digits and `_ - . :` only (MCP tools
/// are `mcp__server__tool`); anything else is not a tool name and is dropped.
fn tool_name(t: Option<&str>) -> Option<String> {
    identifier(t)
}

fn identifier(t: Option<&str>) -> Option<String> {
    let t = t?;
    let ok = !t.is_empty()
        && t.len() <= LANE_DETAIL_MAX_CHARS
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    ok.then(|| t.to_string())
}

/// The detail the endpoint stores: whatever the relay sent (a hostile
/// session can POST anything its token allows) keeps only its words made of
/// the tool-name character set; a word with anything else in it (a path, an
/// expansion, a quote) is dropped whole, and the rest is bounded.
pub fn scrub_detail(d: Option<&str>) -> Option<String> {
    let kept: Vec<&str> = d?
        .split_whitespace()
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        })
        .collect();
    let kept = bound(&kept.join(" "));
    (!kept.is_empty()).then_some(kept)
}

fn bound(d: &str) -> String {
    d.chars().take(LANE_DETAIL_MAX_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A row's expected signal and detail.
    type Want = (Signal, Option<&'static str>);

    fn map(v: Value) -> Option<(Signal, Option<String>)> {
        map_payload(v.to_string().as_bytes())
    }

    #[test]
    fn every_installed_event_maps_and_nothing_else_does() {
        let table: &[(Value, Option<Want>)] = &[
            (
                json!({"hook_event_name":"SessionStart","source":"startup"}),
                Some((Signal::Running, Some("startup"))),
            ),
            (
                json!({"hook_event_name":"SessionStart","source":"/etc/passwd"}),
                Some((Signal::Running, None)),
            ),
            (
                json!({"hook_event_name":"Stop","stop_hook_active":false}),
                Some((Signal::TurnFinished, None)),
            ),
            (
                json!({"hook_event_name":"StopFailure","error":"rate_limit"}),
                Some((Signal::TurnFailed, Some("rate_limit"))),
            ),
            (
                json!({"hook_event_name":"SessionEnd","reason":"other"}),
                Some((Signal::Ended, Some("other"))),
            ),
            (
                json!({"hook_event_name":"PostToolUseFailure","tool_name":"Bash",
                       "tool_input":{"command":"curl -H 'Authorization: sk-secret' x"},
                       "error":"exit 1 at /home/me/secret"}),
                Some((Signal::ToolFailed, Some("Bash"))),
            ),
            (
                json!({"hook_event_name":"PostToolUseFailure","tool_name":"Bash","is_interrupt":true}),
                Some((Signal::Interrupted, Some("Bash"))),
            ),
            (
                json!({"hook_event_name":"Notification","notification_type":"permission_prompt",
                       "message":"Claude needs permission to use /secret/path"}),
                Some((Signal::NeedsInput, Some("permission_prompt"))),
            ),
            (
                json!({"hook_event_name":"Notification","notification_type":"auth_success"}),
                None,
            ),
            (
                json!({"hook_event_name":"sessionStart"}),
                Some((Signal::Running, None)),
            ),
            (
                json!({"hook_event_name":"stop","status":"completed","loop_count":1}),
                Some((Signal::TurnFinished, None)),
            ),
            (
                json!({"hook_event_name":"stop","status":"aborted"}),
                Some((Signal::Interrupted, Some("aborted"))),
            ),
            (
                json!({"hook_event_name":"stop","status":"error"}),
                Some((Signal::TurnFailed, None)),
            ),
            (
                json!({"hook_event_name":"sessionEnd","reason":"error","error_message":"token sk-1 at /x"}),
                Some((Signal::EndedError, None)),
            ),
            (
                json!({"hook_event_name":"sessionEnd","reason":"user_close"}),
                Some((Signal::Interrupted, Some("user_close"))),
            ),
            (
                json!({"hook_event_name":"sessionEnd","reason":"completed"}),
                Some((Signal::Ended, Some("completed"))),
            ),
            (
                json!({"hook_event_name":"postToolUseFailure","tool_name":"Shell",
                       "failure_type":"timeout","error_message":"/home/me/.ssh/id_rsa"}),
                Some((Signal::ToolFailed, Some("Shell: timeout"))),
            ),
            (
                json!({"hook_event_name":"postToolUseFailure","tool_name":"rm -rf /x"}),
                Some((Signal::ToolFailed, None)),
            ),
            // Unknown events, and events the lane does not install.
            (
                json!({"hook_event_name":"PreToolUse","tool_name":"Bash"}),
                None,
            ),
            (
                json!({"hook_event_name":"UserPromptSubmit","prompt":"secret"}),
                None,
            ),
            (json!({"hook_event_name":"beforeShellExecution"}), None),
            (json!({"hook_event_name":"NoSuchEvent"}), None),
            (json!({"hook_event_name":7}), None),
            (json!({"source":"startup"}), None),
            (json!(["SessionStart"]), None),
        ];
        for (payload, want) in table {
            let got = map(payload.clone());
            let want = want.map(|(s, d)| (s, d.map(String::from)));
            assert_eq!(got, want, "{payload}");
        }
    }

    #[test]
    fn every_installed_event_name_is_mapped() {
        for ev in CLAUDE_EVENTS.iter().chain(CURSOR_EVENTS) {
            let payload = match *ev {
                "Notification" => {
                    json!({"hook_event_name": ev, "notification_type": "idle_prompt"})
                }
                _ => json!({"hook_event_name": ev}),
            };
            assert!(map(payload).is_some(), "{ev} is installed but not mapped");
        }
    }

    #[test]
    fn malformed_and_truncated_payloads_are_ignored() {
        for bad in [
            &b""[..],
            b"not json",
            b"{\"hook_event_name\":\"SessionSta",
            b"\xff\xfe",
            b"null",
        ] {
            assert_eq!(map_payload(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn details_are_scrubbed_and_bounded() {
        assert_eq!(scrub_detail(Some("Bash")), Some("Bash".into()));
        assert_eq!(
            scrub_detail(Some("Shell: timeout")),
            Some("Shell: timeout".into())
        );
        assert_eq!(
            scrub_detail(Some("Bash a/b/../c $(x) \"q\" timeout")),
            Some("Bash timeout".into())
        );
        assert_eq!(scrub_detail(Some("//// ")), None);
        assert_eq!(scrub_detail(None), None);
        let long = "x".repeat(10_000);
        assert_eq!(
            scrub_detail(Some(&long)).unwrap().chars().count(),
            LANE_DETAIL_MAX_CHARS
        );
        let long_tool = json!({"hook_event_name":"PostToolUseFailure","tool_name": long});
        assert_eq!(map(long_tool), Some((Signal::ToolFailed, None)));
    }

    #[test]
    fn signal_words_round_trip() {
        for s in [
            Signal::Running,
            Signal::NeedsInput,
            Signal::Interrupted,
            Signal::TurnFinished,
            Signal::TurnFailed,
            Signal::ToolFailed,
            Signal::Ended,
            Signal::EndedError,
        ] {
            let w = serde_json::to_value(s).unwrap();
            assert_eq!(w, json!(s.as_str()));
            assert_eq!(serde_json::from_value::<Signal>(w).unwrap(), s);
        }
        assert!(serde_json::from_value::<Signal>(json!("completed")).is_err());
    }
}
