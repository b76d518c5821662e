//! The CLI's stream-json output, one line at a time, as plain data. Anything
//! that is not a JSON object is [`Line::Garbage`]: logged and skipped by the
//! driver, never a panic.

use hoop_core::transcript::Usage;
use serde_json::Value;

/// What one stdout line is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `system/init` (every turn starts with one).
    Init { session_id: Option<String> },
    /// The turn's `result` line, kept whole for classification.
    Result(Value),
    /// `system/compact_boundary`; `auto` is true for the CLI's own
    /// (automatic or reactive) compaction.
    CompactBoundary {
        auto: bool,
        post_tokens: Option<u64>,
    },
    /// `system/status` with a `compact_result` (`success` / `failed`).
    CompactResult { ok: bool },
    /// An `assistant` line: its text (if any), whether it calls a tool, and
    /// the CLI's error kind on synthetic error lines.
    Assistant {
        text: String,
        tool_use: bool,
        error: Option<String>,
        /// The context size the call reported (`None` on synthetic lines).
        context: Option<u64>,
    },
    /// A subscription rate-limit event; `rejected` when the limit is hit.
    RateLimit { rejected: bool },
    /// Any other JSON object line.
    Other,
    /// Not a JSON object.
    Garbage,
}

pub fn parse_line(line: &str) -> Line {
    let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
        return Line::Garbage;
    };
    if !v.is_object() {
        return Line::Garbage;
    }
    let sid = || v["session_id"].as_str().map(str::to_string);
    match (v["type"].as_str(), v["subtype"].as_str()) {
        (Some("system"), Some("init")) => Line::Init { session_id: sid() },
        (Some("result"), _) => Line::Result(v),
        (Some("system"), Some("compact_boundary")) => {
            let meta = &v["compact_metadata"];
            Line::CompactBoundary {
                auto: meta["trigger"].as_str() != Some("manual"),
                post_tokens: meta["post_tokens"].as_u64(),
            }
        }
        (Some("system"), Some("status")) => match v["compact_result"].as_str() {
            Some(r) => Line::CompactResult { ok: r == "success" },
            None => Line::Other,
        },
        (Some("assistant"), _) => {
            let blocks = v["message"]["content"].as_array();
            let text = blocks
                .map(|b| {
                    b.iter()
                        .filter(|x| x["type"] == "text")
                        .filter_map(|x| x["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("")
                })
                .unwrap_or_default();
            let tool_use = blocks.is_some_and(|b| b.iter().any(|x| x["type"] == "tool_use"));
            let error = v["error"].as_str().map(str::to_string);
            let context = if error.is_some() {
                None
            } else {
                Usage::from_json(&v["message"]["usage"])
                    .filter(|u| !u.is_zero())
                    .map(|u| u.context_tokens())
            };
            Line::Assistant {
                text,
                tool_use,
                error,
                context,
            }
        }
        (Some("rate_limit_event"), _) => Line::RateLimit {
            rejected: v["rate_limit_info"]["status"] == "rejected",
        },
        _ => Line::Other,
    }
}

/// What the lines of one turn added up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnLog {
    pub session_id: Option<String>,
    pub result: Option<Value>,
    /// Text the assistant said during the turn (all its lines joined).
    pub assistant_text: String,
    pub tool_calls: u32,
    /// The CLI's error kind from a synthetic assistant line.
    pub assistant_error: Option<String>,
    pub auto_compacts: u32,
    pub manual_compacts: u32,
    pub compact_failures: u32,
    pub rate_limit_rejected: bool,
    pub garbage_lines: u32,
    pub lines: u32,
    /// The session's context after the turn as its lines told it: the
    /// latest call's usage, or a compaction's post-size (`None` = unknown).
    /// The transcript says the same but may be written a moment later.
    pub context_after: Option<u64>,
}

impl TurnLog {
    /// Fold one line in. Returns true when the line was the `result`.
    pub fn push(&mut self, line: Line) -> bool {
        self.lines += 1;
        match line {
            Line::Init { session_id } => {
                if session_id.is_some() {
                    self.session_id = session_id;
                }
            }
            Line::Result(v) => {
                if let Some(s) = v["session_id"].as_str() {
                    self.session_id = Some(s.to_string());
                }
                self.result = Some(v);
                return true;
            }
            Line::CompactBoundary { auto, post_tokens } => {
                self.context_after = post_tokens;
                if auto {
                    self.auto_compacts += 1;
                } else {
                    self.manual_compacts += 1;
                }
            }
            Line::CompactResult { ok } => {
                if !ok {
                    self.compact_failures += 1;
                }
            }
            Line::Assistant {
                text,
                tool_use,
                error,
                context,
            } => {
                if context.is_some() {
                    self.context_after = context;
                }
                if error.is_some() {
                    self.assistant_error = error;
                } else {
                    self.assistant_text.push_str(&text);
                    self.tool_calls += u32::from(tool_use);
                }
            }
            Line::RateLimit { rejected } => self.rate_limit_rejected |= rejected,
            Line::Other => {}
            Line::Garbage => self.garbage_lines += 1,
        }
        false
    }

    /// The turn said nothing: no assistant text, no tool call, empty result.
    pub fn is_empty_turn(&self) -> bool {
        self.assistant_text.trim().is_empty()
            && self.tool_calls == 0
            && self
                .result
                .as_ref()
                .and_then(|r| r["result"].as_str())
                .is_none_or(|t| t.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_table() {
        let cases: Vec<(&str, Line)> = vec![
            ("", Line::Garbage),
            ("not json at all", Line::Garbage),
            ("[1,2]", Line::Garbage),
            ("{\"type\":\"result\"", Line::Garbage),
            (
                r#"{"type":"system","subtype":"init","session_id":"s1"}"#,
                Line::Init {
                    session_id: Some("s1".into()),
                },
            ),
            (
                r#"{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","post_tokens":595}}"#,
                Line::CompactBoundary {
                    auto: true,
                    post_tokens: Some(595),
                },
            ),
            (
                r#"{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"manual"}}"#,
                Line::CompactBoundary {
                    auto: false,
                    post_tokens: None,
                },
            ),
            (
                r#"{"type":"system","subtype":"status","status":null,"compact_result":"failed","compact_error":"too_few_groups"}"#,
                Line::CompactResult { ok: false },
            ),
            (
                r#"{"type":"system","subtype":"status","status":"compacting"}"#,
                Line::Other,
            ),
            (
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"Bash"}]}}"#,
                Line::Assistant {
                    text: "hi".into(),
                    tool_use: true,
                    error: None,
                    context: None,
                },
            ),
            (
                r#"{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Invalid API key"}]},"error":"authentication_failed"}"#,
                Line::Assistant {
                    text: "Invalid API key".into(),
                    tool_use: false,
                    error: Some("authentication_failed".into()),
                    context: None,
                },
            ),
            (
                r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected"}}"#,
                Line::RateLimit { rejected: true },
            ),
            (r#"{"type":"user","message":{}}"#, Line::Other),
        ];
        for (s, want) in cases {
            assert_eq!(parse_line(s), want, "{s}");
        }
        assert!(matches!(
            parse_line(r#"{"type":"result","is_error":false}"#),
            Line::Result(_)
        ));
    }

    #[test]
    fn turn_log_folds_lines() {
        let mut log = TurnLog::default();
        for l in [
            "garbage",
            r#"{"type":"system","subtype":"init","session_id":"s"}"#,
            r#"{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"}],"usage":{"input_tokens":10,"cache_read_input_tokens":440000,"output_tokens":1}}}"#,
        ] {
            assert!(!log.push(parse_line(l)));
        }
        assert!(log.push(parse_line(
            r#"{"type":"result","is_error":false,"result":"a","session_id":"s"}"#
        )));
        assert_eq!(log.garbage_lines, 1);
        assert_eq!(log.auto_compacts, 1);
        assert_eq!(log.context_after, Some(440_011), "the latest call's usage");
        assert_eq!(log.session_id.as_deref(), Some("s"));
        assert!(!log.is_empty_turn());
        let mut empty = TurnLog::default();
        empty.push(parse_line(
            r#"{"type":"result","is_error":false,"result":""}"#,
        ));
        assert!(empty.is_empty_turn());
    }
}
