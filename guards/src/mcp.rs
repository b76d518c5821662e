//! mcp_gate: a per-home allowlist of MCP tools. The allowlist
//! (`<home>/mcp_allow`) holds one entry per line: a full tool name
//! `mcp__<server>__<tool>`, or a prefix ending in `*` (`mcp__hoop__*`,
//! `mcp__hoop__chat_*`, `*`). `#` starts a comment. A missing or empty file
//! allows nothing. Refusals are appended to `<home>/mcp_refusals.jsonl` —
//! tool name, time, session; never the call's arguments.
//!
//! Cursor's `beforeMCPExecution` names the tool without its server; an entry
//! then matches on its tool part alone (`mcp__hoop__chat_read` allows
//! Cursor's `chat_read`), and a bare `chat_read` entry matches it too.

use serde::Serialize;

/// The parsed allowlist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<String>,
}

impl Allowlist {
    pub fn parse(text: &str) -> Allowlist {
        Allowlist {
            entries: text
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
                .filter(|l| !l.is_empty())
                .collect(),
        }
    }

    /// Is `tool` allowed? `server_known` is false for Cursor's bare names.
    pub fn allows(&self, tool: &str, server_known: bool) -> bool {
        self.entries.iter().any(|e| {
            if matches_entry(e, tool) {
                return true;
            }
            if server_known {
                return false;
            }
            // Cursor: compare with the entry's tool part.
            match e.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
                Some((_, tool_part)) => matches_entry(tool_part, tool),
                None => false,
            }
        })
    }
}

fn matches_entry(entry: &str, tool: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => entry == tool,
    }
}

/// One line of the refusal ledger.
#[derive(Debug, Serialize)]
pub struct Refusal<'a> {
    pub at: i64,
    pub tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<&'a str>,
    pub client: &'a str,
}

/// The refusal text shown to the agent.
pub fn refusal_message(tool: &str) -> String {
    format!(
        "hoop mcp_gate blocked the MCP tool `{tool}`: it is not on this home's allowlist. \
         Instead: use an allowed tool, or ask a human to add `{tool}` to the home's mcp_allow file."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_matching() {
        let a = Allowlist::parse("# tools\nmcp__hoop__chat_read\nmcp__hoop__work_*\n");
        assert!(a.allows("mcp__hoop__chat_read", true));
        assert!(a.allows("mcp__hoop__work_task_start", true));
        assert!(!a.allows("mcp__hoop__chat_send_text", true));
        assert!(!a.allows("mcp__other__chat_read", true));
        assert!(a.allows("chat_read", false), "Cursor: tool part");
        assert!(a.allows("work_beat", false));
        assert!(!a.allows("chat_send_text", false));
        assert!(!Allowlist::parse("").allows("mcp__x__y", true));
        assert!(Allowlist::parse("*").allows("mcp__x__y", true));
    }
}
