//! The send gates, written once and used by `hoop say`, the sentinel and the
//! reference backend alike: the markdown gate, the body cap, and the gap
//! check. A failure report passes every gate (a gate must never silence bad
//! news); it is marked by [`SendKind::Failure`] on the sending side and, on
//! the wire, by a failure mark at the start of its body ([`FAILURE_MARKS`]):
//! no message kind is relied on.

use thiserror::Error;

use crate::limits::MAX_BODY_CHARS;

/// What is being sent, as far as the gates care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendKind {
    /// Ordinary chat text: every gate applies.
    Normal,
    /// A failure report: no gate applies except the hard body cap, which the
    /// sender satisfies by construction (failure texts are short).
    Failure,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GateError {
    #[error("markdown is not rendered in chat: {0}; write plain text")]
    Markdown(MarkdownHit),
    #[error("the body is {len} characters; the cap is {cap} (send it in parts or as a file)")]
    TooLong { len: usize, cap: usize },
    #[error("the body is empty")]
    Empty,
}

/// Which markdown construct the gate found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkdownHit {
    Bold,
    CodeFence,
    Heading,
}

impl std::fmt::Display for MarkdownHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MarkdownHit::Bold => "`**` bold",
            MarkdownHit::CodeFence => "a ``` code fence",
            MarkdownHit::Heading => "a line-start `#` heading",
        })
    }
}

/// The markdown gate: `**`, code fences, and line-start `#` headings (one to
/// six `#` followed by a space, or alone on the line) are refused. `#123` or
/// `#channel` at a line start is not a heading.
pub fn markdown_hit(body: &str) -> Option<MarkdownHit> {
    if body.contains("**") {
        return Some(MarkdownHit::Bold);
    }
    for line in body.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            return Some(MarkdownHit::CodeFence);
        }
        let hashes = t.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&hashes) {
            let rest = &t[hashes..];
            if rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t') {
                return Some(MarkdownHit::Heading);
            }
        }
    }
    None
}

/// Length as the cap counts it: Unicode scalar values.
pub fn body_len(body: &str) -> usize {
    body.chars().count()
}

/// The checks every send route makes whatever the sender: not empty, not
/// over the cap (refused, never truncated). Production's REST text route
/// applies only these; the markdown gate is [`check_body`]'s.
pub fn check_length(body: &str) -> Result<(), GateError> {
    if body.trim().is_empty() {
        return Err(GateError::Empty);
    }
    let len = body_len(body);
    if len > MAX_BODY_CHARS {
        return Err(GateError::TooLong {
            len,
            cap: MAX_BODY_CHARS,
        });
    }
    Ok(())
}

/// Every content gate for one outgoing text. The gap check is separate
/// ([`unread_since`]) because it needs the conversation's newest messages.
pub fn check_body(body: &str, kind: SendKind) -> Result<(), GateError> {
    check_length(body)?;
    if kind == SendKind::Failure {
        return Ok(());
    }
    match markdown_hit(body) {
        Some(hit) => Err(GateError::Markdown(hit)),
        None => Ok(()),
    }
}

/// The gap check: given the newest message ids of a conversation (newest
/// first) and the sender's watermark (the newest id they have read), the ids
/// the sender has not read, skipping the sender's own messages. `None` as the
/// watermark means the sender has read nothing yet: everything is unread.
pub fn unread_since<T>(
    newest_first: &[T],
    watermark: Option<i64>,
    id_of: impl Fn(&T) -> i64,
    is_own: impl Fn(&T) -> bool,
) -> Vec<&T> {
    newest_first
        .iter()
        .take_while(|m| watermark.is_none_or(|w| id_of(m) > w))
        .filter(|m| !is_own(m))
        .collect()
}

/// Production's gap check (the MCP tool `chat_send_text`, seed 002 §0.3)
/// over the newest [`crate::limits::GAP_CHECK_READ`] messages, newest
/// first, for a send that expected `expect_latest_id` to be the newest:
/// when that id is among them, the unread are the newer ones not the
/// sender's own; when it is NOT among them, everything read counts as new
/// (better to refuse too much). An empty result lets the send through.
pub fn gap_unread<T>(
    newest_first: &[T],
    expect_latest_id: i64,
    id_of: impl Fn(&T) -> i64,
    is_own: impl Fn(&T) -> bool,
) -> Vec<&T> {
    if newest_first.iter().any(|m| id_of(m) == expect_latest_id) {
        unread_since(newest_first, Some(expect_latest_id), id_of, is_own)
    } else {
        newest_first.iter().collect()
    }
}

/// The marks that begin a failure report or an obituary. The backend may
/// know no message kind for them (production has text, image and voice), so
/// the sender recognises its own bad news by these marks in the body.
pub const FAILURE_MARKS: [&str; 2] = ["⚠️", "⚰️"];

/// Does this body read as a failure report (begins with a failure mark)?
pub fn is_failure_report(body: &str) -> bool {
    FAILURE_MARKS.iter().any(|m| body.starts_with(m))
}

/// The body of a failure report: `body` as is when it already begins with a
/// failure mark, else prefixed with the first one.
pub fn as_failure_report(body: &str) -> String {
    if is_failure_report(body) {
        body.to_string()
    } else {
        format!("{} {body}", FAILURE_MARKS[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_unread_table() {
        // (id, own) newest first.
        let page = [(9, false), (8, true), (7, false), (6, false)];
        let ids = |expect| -> Vec<i64> {
            gap_unread(&page, expect, |m| m.0, |m| m.1)
                .into_iter()
                .map(|m| m.0)
                .collect()
        };
        let cases: &[(i64, &[i64])] = &[
            (9, &[]),
            (8, &[9]),
            (7, &[9]),
            (6, &[9, 7]),
            // Not among the newest read: everything read counts as new.
            (5, &[9, 8, 7, 6]),
            (42, &[9, 8, 7, 6]),
        ];
        for (expect, want) in cases {
            assert_eq!(ids(*expect), *want, "expect {expect}");
        }
        let empty: [(i64, bool); 0] = [];
        assert!(gap_unread(&empty, 0, |m| m.0, |m| m.1).is_empty());
    }

    #[test]
    fn failure_reports_are_recognised_by_their_mark() {
        let cases: &[(&str, bool)] = &[
            ("⚠️ this round failed; I am still online", true),
            ("⚰️ login expired", true),
            ("the build ⚠️ failed", false),
            ("plain", false),
        ];
        for (body, want) in cases {
            assert_eq!(is_failure_report(body), *want, "{body}");
            assert!(is_failure_report(&as_failure_report(body)));
        }
        assert_eq!(as_failure_report("⚰️ x"), "⚰️ x");
        assert_eq!(as_failure_report("disk full"), "⚠️ disk full");
    }

    #[test]
    fn markdown_table() {
        let cases: &[(&str, Option<MarkdownHit>)] = &[
            ("plain text", None),
            ("this is **bold**", Some(MarkdownHit::Bold)),
            ("a\n```\ncode\n```", Some(MarkdownHit::CodeFence)),
            ("  ```rust", Some(MarkdownHit::CodeFence)),
            ("# Title", Some(MarkdownHit::Heading)),
            ("ok\n### sub", Some(MarkdownHit::Heading)),
            ("#", Some(MarkdownHit::Heading)),
            ("#123 is the issue", None),
            ("see #channel", None),
            ("a # in the middle", None),
            ("####### seven is not a heading", None),
            ("2 * 3 * 4", None),
            ("inline `code` is fine", None),
        ];
        for (body, want) in cases {
            assert_eq!(markdown_hit(body), *want, "{body:?}");
        }
    }

    #[test]
    fn cap_is_an_error_never_a_truncation() {
        let ok = "a".repeat(MAX_BODY_CHARS);
        assert_eq!(check_body(&ok, SendKind::Normal), Ok(()));
        let long = "é".repeat(MAX_BODY_CHARS + 1);
        assert_eq!(
            check_body(&long, SendKind::Normal),
            Err(GateError::TooLong {
                len: MAX_BODY_CHARS + 1,
                cap: MAX_BODY_CHARS
            })
        );
    }

    #[test]
    fn failure_reports_pass_the_markdown_gate() {
        let body = "⚠️ this round failed; I am still online\n# stack\n**boom**";
        assert!(check_body(body, SendKind::Normal).is_err());
        assert_eq!(check_body(body, SendKind::Failure), Ok(()));
    }

    #[test]
    fn empty_is_refused() {
        assert_eq!(check_body("  \n", SendKind::Normal), Err(GateError::Empty));
    }

    #[test]
    fn unread_stops_at_the_watermark_and_skips_own() {
        // (id, own)
        let msgs = [(9, false), (8, true), (7, false), (6, false), (5, false)];
        let unread = unread_since(&msgs, Some(6), |m| m.0, |m| m.1);
        assert_eq!(unread.iter().map(|m| m.0).collect::<Vec<_>>(), vec![9, 7]);
        assert!(unread_since(&msgs, Some(9), |m| m.0, |m| m.1).is_empty());
        assert_eq!(unread_since(&msgs, None, |m| m.0, |m| m.1).len(), 4);
    }
}
