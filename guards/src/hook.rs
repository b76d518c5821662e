//! The two hook contracts, as data: a payload in (bytes from stdin), a
//! [`Response`] out (stdout, stderr, exit code). The binary only moves bytes.
//!
//! Flavour is detected from the payload: Cursor's `hooks.json` version 1
//! events are camelCase (`beforeShellExecution`, `beforeMCPExecution`,
//! `preToolUse`, …) and carry `conversation_id`; Claude Code's are PascalCase
//! (`PreToolUse`, `PostToolUse`). `--cursor` forces Cursor.
//!
//! Answers:
//! - Claude Code, default: allow = exit 0 and nothing on stdout; deny = exit
//!   2 with the reason on stderr (the CLI hands stderr to the model).
//! - Claude Code, `--format json`: exit 0 and
//!   `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":…}}`.
//! - Cursor: exit 0 and `{"permission":"allow"|"deny", "user_message",
//!   "userMessage", "agent_message", "agentMessage"}` (both spellings, since
//!   Cursor versions differ).

use serde::{Deserialize, Serialize};

/// Which agent CLI sent the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Claude,
    Cursor,
}

/// How a Claude Code hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClaudeFormat {
    /// Exit 2 with the reason on stderr.
    #[default]
    ExitCode,
    /// Exit 0 with the JSON `permissionDecision` form.
    Json,
}

/// Options every hook command takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct HookOptions {
    pub format: ClaudeFormat,
    /// Treat the payload as Cursor's whatever it looks like.
    pub force_cursor: bool,
}

/// The fields of either contract's payload that the guards read. Unknown
/// fields are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Payload {
    #[serde(default)]
    pub hook_event_name: Option<String>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<serde_json::Value>,
    /// Cursor `beforeShellExecution`.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Cursor's session id.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// Cursor file hooks.
    #[serde(default)]
    pub file_path: Option<String>,
}

impl Payload {
    pub fn flavor(&self, opts: &HookOptions) -> Flavor {
        if opts.force_cursor || self.conversation_id.is_some() {
            return Flavor::Cursor;
        }
        match self.hook_event_name.as_deref() {
            Some(e) if e.starts_with(|c: char| c.is_ascii_lowercase()) => Flavor::Cursor,
            _ => Flavor::Claude,
        }
    }

    pub fn session(&self) -> Option<&str> {
        self.session_id
            .as_deref()
            .or(self.conversation_id.as_deref())
    }

    /// A string field of `tool_input` (Cursor MCP payloads carry
    /// `tool_input` as a JSON string; that is parsed too).
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input.as_ref()?.get(key)?.as_str()
    }

    /// The shell command of a shell tool call, if this is one.
    pub fn shell_command(&self) -> Option<&str> {
        if self.hook_event_name.as_deref() == Some("beforeShellExecution") {
            return self.command.as_deref();
        }
        match self.tool_name.as_deref() {
            Some("Bash" | "Shell" | "run_terminal_cmd") => self.input_str("command"),
            _ => None,
        }
    }
}

/// Why a payload could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("the hook payload is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the hook payload is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
}

/// Parse a payload read with a cap; `truncated` says the cap was hit.
pub fn parse_payload(bytes: &[u8], truncated: bool) -> Result<Payload, PayloadError> {
    if truncated {
        return Err(PayloadError::TooLarge(
            hoop_core::limits::HOOK_STDIN_CAP_BYTES,
        ));
    }
    Ok(serde_json::from_slice(bytes)?)
}

/// A guard's decision, before it is rendered for one contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Allow, with a note for the log (stderr; not shown to the model).
    AllowNoted(String),
    Deny(String),
}

/// What the hook process prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Response {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeSpecific<'a> {
    hook_event_name: &'a str,
    permission_decision: &'a str,
    permission_decision_reason: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeJson<'a> {
    hook_specific_output: ClaudeSpecific<'a>,
}

#[derive(Serialize)]
struct CursorAnswer<'a> {
    permission: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_message: Option<&'a str>,
    #[serde(rename = "userMessage", skip_serializing_if = "Option::is_none")]
    user_message_camel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_message: Option<&'a str>,
    #[serde(rename = "agentMessage", skip_serializing_if = "Option::is_none")]
    agent_message_camel: Option<&'a str>,
}

/// Render a decision for one contract.
pub fn render(decision: &Decision, flavor: Flavor, opts: &HookOptions) -> Response {
    let (deny, note) = match decision {
        Decision::Allow => (None, None),
        Decision::AllowNoted(n) => (None, Some(n.as_str())),
        Decision::Deny(r) => (Some(r.as_str()), None),
    };
    let mut stderr = note.map(|n| format!("{n}\n")).unwrap_or_default();
    match flavor {
        Flavor::Cursor => {
            let a = CursorAnswer {
                permission: if deny.is_some() { "deny" } else { "allow" },
                user_message: deny,
                user_message_camel: deny,
                agent_message: deny,
                agent_message_camel: deny,
            };
            let mut stdout = serde_json::to_string(&a).unwrap_or_else(|_| {
                // Serialising plain strings cannot fail; stay closed anyway.
                r#"{"permission":"deny"}"#.to_string()
            });
            stdout.push('\n');
            Response {
                stdout,
                stderr,
                code: 0,
            }
        }
        Flavor::Claude => match (deny, opts.format) {
            (None, _) => Response {
                stdout: String::new(),
                stderr,
                code: 0,
            },
            (Some(reason), ClaudeFormat::ExitCode) => {
                stderr.push_str(reason);
                stderr.push('\n');
                Response {
                    stdout: String::new(),
                    stderr,
                    code: 2,
                }
            }
            (Some(reason), ClaudeFormat::Json) => {
                let j = ClaudeJson {
                    hook_specific_output: ClaudeSpecific {
                        hook_event_name: "PreToolUse",
                        permission_decision: "deny",
                        permission_decision_reason: reason,
                    },
                };
                let mut stdout = serde_json::to_string(&j).unwrap_or_default();
                stdout.push('\n');
                Response {
                    stdout,
                    stderr,
                    code: 0,
                }
            }
        },
    }
}

/// The answer when a guard fails internally and must fail closed.
pub fn fail_closed(guard: &str, flavor: Flavor, opts: &HookOptions) -> Response {
    render(
        &Decision::Deny(format!(
            "hoop {guard} failed internally, so this call was blocked (fail closed). \
             If it is safe, ask a human to run it."
        )),
        flavor,
        opts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavour_detection() {
        let o = HookOptions::default();
        let p: Payload = serde_json::from_str(
            r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#,
        )
        .unwrap();
        assert_eq!(p.flavor(&o), Flavor::Claude);
        assert_eq!(p.shell_command(), Some("ls"));
        let c: Payload = serde_json::from_str(
            r#"{"hook_event_name":"beforeShellExecution","command":"ls","conversation_id":"c"}"#,
        )
        .unwrap();
        assert_eq!(c.flavor(&o), Flavor::Cursor);
        assert_eq!(c.shell_command(), Some("ls"));
        let forced = HookOptions {
            force_cursor: true,
            ..o
        };
        assert_eq!(p.flavor(&forced), Flavor::Cursor);
    }

    #[test]
    fn answers() {
        let o = HookOptions::default();
        let deny = Decision::Deny("no".into());
        let r = render(&deny, Flavor::Claude, &o);
        assert_eq!(
            (r.code, r.stderr.as_str(), r.stdout.as_str()),
            (2, "no\n", "")
        );
        let j = HookOptions {
            format: ClaudeFormat::Json,
            ..o
        };
        let r = render(&deny, Flavor::Claude, &j);
        assert_eq!(r.code, 0);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(v["hookSpecificOutput"]["permissionDecisionReason"], "no");
        let r = render(&deny, Flavor::Cursor, &o);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["permission"], "deny");
        for k in [
            "user_message",
            "userMessage",
            "agent_message",
            "agentMessage",
        ] {
            assert_eq!(v[k], "no", "{k}");
        }
        let r = render(&Decision::Allow, Flavor::Cursor, &o);
        assert_eq!(r.stdout, "{\"permission\":\"allow\"}\n");
        let r = render(&Decision::Allow, Flavor::Claude, &o);
        assert_eq!(r, Response::default());
    }
}
