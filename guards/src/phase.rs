//! tool_phase: after each tool call, one whitelisted word for what the agent
//! is doing goes into the home's `phase.json`. Only the word and the time
//! are written — never a tool argument (commands and paths carry tokens and
//! production addresses, and the phase is shown in chat).

use serde::Serialize;

/// Every word tool_phase may write.
pub const WORDS: &[&str] = &[
    "reading",
    "searching",
    "editing",
    "running",
    "browsing",
    "chatting",
    "planning",
    "delegating",
    "working",
];

/// The phase word for a tool (Claude Code tool names, MCP tools, and
/// Cursor's hook events).
pub fn word_for(tool: Option<&str>, event: Option<&str>) -> &'static str {
    if let Some(t) = tool {
        if let Some(rest) = t.strip_prefix("mcp__") {
            let name = rest
                .rsplit("__")
                .next()
                .unwrap_or(rest)
                .to_ascii_lowercase();
            return if ["chat", "message", "say", "send", "reply"]
                .iter()
                .any(|k| name.contains(k))
            {
                "chatting"
            } else {
                "working"
            };
        }
        let w = match t {
            "Read" | "NotebookRead" | "LS" | "read_file" => "reading",
            "Glob" | "Grep" | "ToolSearch" | "codebase_search" | "grep_search" | "file_search" => {
                "searching"
            }
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "StrReplace" | "edit_file" => {
                "editing"
            }
            "Bash" | "Shell" | "BashOutput" | "KillShell" | "KillBash" | "run_terminal_cmd" => {
                "running"
            }
            "WebFetch" | "WebSearch" | "web_search" => "browsing",
            "Task" | "Agent" | "SendMessage" => "delegating",
            "TodoWrite" | "TaskCreate" | "TaskUpdate" | "ExitPlanMode" | "EnterPlanMode" => {
                "planning"
            }
            _ => "",
        };
        if !w.is_empty() {
            return w;
        }
    }
    match event {
        Some("afterShellExecution" | "beforeShellExecution") => "running",
        Some("afterFileEdit") => "editing",
        Some("beforeReadFile") => "reading",
        Some("afterMCPExecution" | "beforeMCPExecution") => "working",
        _ => "working",
    }
}

/// What `phase.json` holds.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Phase {
    pub phase: &'static str,
    /// Unix seconds when it was written.
    pub at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_whitelisted() {
        let cases = [
            (Some("Bash"), None, "running"),
            (Some("Read"), None, "reading"),
            (Some("Grep"), None, "searching"),
            (Some("MultiEdit"), None, "editing"),
            (Some("WebFetch"), None, "browsing"),
            (Some("mcp__hoop__chat_send_text"), None, "chatting"),
            (Some("mcp__hoop__work_task_start"), None, "working"),
            (Some("Task"), None, "delegating"),
            (Some("TodoWrite"), None, "planning"),
            (Some("SomethingNew"), None, "working"),
            (None, Some("afterShellExecution"), "running"),
            (None, Some("afterFileEdit"), "editing"),
            (None, None, "working"),
        ];
        for (tool, ev, want) in cases {
            let w = word_for(tool, ev);
            assert_eq!(w, want, "{tool:?} {ev:?}");
            assert!(WORDS.contains(&w));
        }
    }
}
