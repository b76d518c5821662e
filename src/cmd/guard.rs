//! `hoop guard …`: hook commands. They never return an error to `main`: each
//! maps its own failures to the documented fail-open / fail-closed answer
//! (see `hoop_guards::run`). A panic inside a guard is caught here and
//! answered fail-closed for act and mcp, fail-open for memory and phase.

use std::io::{Read, Write};
use std::process::ExitCode;

use hoop_guards::hook::{self, ClaudeFormat, Decision, Flavor, HookOptions, Response};
use hoop_guards::run::{self, HookEnv};

#[derive(clap::Subcommand)]
pub enum Command {
    /// act_guard (Claude PreToolUse on Bash; Cursor beforeShellExecution):
    /// block destructive shell commands.
    Act(HookArgs),
    /// memory_guard (PreToolUse on Write|Edit|MultiEdit): keep MEMORY.md
    /// under its size limit after the edit.
    Memory(HookArgs),
    /// tool_phase (PostToolUse): write one whitelisted word to the home's
    /// phase.json. Always exits 0.
    Phase(HomeHookArgs),
    /// mcp_gate (PreToolUse on mcp__* tools; Cursor beforeMCPExecution): the
    /// home's MCP tool allowlist; refusals go to a JSONL ledger.
    Mcp(HomeHookArgs),
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Block with exit 2 and the reason on stderr.
    ExitCode,
    /// Exit 0 with the JSON `hookSpecificOutput.permissionDecision` answer.
    Json,
}

#[derive(clap::Args)]
pub struct HookArgs {
    /// How to answer Claude Code (Cursor is always answered in JSON).
    #[arg(long, value_enum, default_value = "exit-code")]
    format: Format,
    /// Treat the payload as Cursor's (otherwise detected from the payload).
    #[arg(long)]
    cursor: bool,
}

#[derive(clap::Args)]
pub struct HomeHookArgs {
    #[command(flatten)]
    hook: HookArgs,
    /// The home: a name under the hoop root, or its path (default: $HOOP_HOME).
    #[arg(long)]
    home: Option<String>,
}

impl HookArgs {
    fn options(&self) -> HookOptions {
        HookOptions {
            format: match self.format {
                Format::ExitCode => ClaudeFormat::ExitCode,
                Format::Json => ClaudeFormat::Json,
            },
            force_cursor: self.cursor,
        }
    }
}

pub fn run(c: Command) -> ExitCode {
    // A panic's default report would land in the agent's context; the
    // answer below says what happened instead.
    std::panic::set_hook(Box::new(|_| {}));
    let (input, truncated) = read_stdin();
    let resp = match &c {
        Command::Act(a) => {
            let opts = a.options();
            answer(Policy::Closed("act_guard"), &opts, &input, || {
                run::act_hook(&input, truncated, &opts, &HookEnv::from_process(None))
            })
        }
        Command::Memory(a) => {
            let opts = a.options();
            answer(Policy::Open("memory_guard"), &opts, &input, || {
                run::memory_hook(&input, truncated, &opts, &HookEnv::from_process(None))
            })
        }
        Command::Phase(a) => {
            let home = a.home.clone();
            let r = std::panic::catch_unwind(|| {
                run::phase_hook(&input, truncated, &HookEnv::from_process(home.as_deref()))
            });
            // tool_phase always exits 0 and prints nothing on stdout.
            Response {
                stdout: String::new(),
                code: 0,
                ..r.unwrap_or_default()
            }
        }
        Command::Mcp(a) => {
            let opts = a.hook.options();
            let home = a.home.clone();
            answer(Policy::Closed("mcp_gate"), &opts, &input, || {
                run::mcp_hook(
                    &input,
                    truncated,
                    &opts,
                    &HookEnv::from_process(home.as_deref()),
                )
            })
        }
    };
    emit(&resp)
}

/// What a guard does when it fails internally.
#[derive(Clone, Copy)]
enum Policy {
    /// Block the call.
    Closed(&'static str),
    /// Allow it, with a note on stderr.
    Open(&'static str),
}

/// Run a guard; a panic becomes the policy's answer.
fn answer(
    policy: Policy,
    opts: &HookOptions,
    input: &[u8],
    f: impl FnOnce() -> Response,
) -> Response {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            let flavor = guess_flavor(opts, input);
            match policy {
                Policy::Closed(name) => hook::fail_closed(name, flavor, opts),
                Policy::Open(name) => hook::render(
                    &Decision::AllowNoted(format!("hoop {name} failed internally; allowed")),
                    flavor,
                    opts,
                ),
            }
        }
    }
}

/// The flavour when the payload could not be trusted to say.
fn guess_flavor(opts: &HookOptions, input: &[u8]) -> Flavor {
    let has = |needle: &[u8]| input.windows(needle.len()).any(|w| w == needle);
    if opts.force_cursor || has(b"\"conversation_id\"") {
        Flavor::Cursor
    } else {
        Flavor::Claude
    }
}

/// Read stdin up to the hook cap; the flag says the payload was longer.
pub(crate) fn read_stdin() -> (Vec<u8>, bool) {
    let cap = hoop_core::limits::HOOK_STDIN_CAP_BYTES;
    let mut buf = Vec::with_capacity(16 * 1024);
    let _ = std::io::stdin()
        .lock()
        .take(cap as u64 + 1)
        .read_to_end(&mut buf);
    let truncated = buf.len() > cap;
    if truncated {
        buf.truncate(cap);
    }
    (buf, truncated)
}

fn emit(r: &Response) -> ExitCode {
    if !r.stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(r.stdout.as_bytes());
        let _ = out.flush();
    }
    if !r.stderr.is_empty() {
        let _ = std::io::stderr().lock().write_all(r.stderr.as_bytes());
    }
    ExitCode::from(r.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_guard_fails_closed_or_open_by_policy() {
        let opts = HookOptions::default();
        let closed = answer(Policy::Closed("act_guard"), &opts, b"{}", || {
            panic!("internal error")
        });
        assert_eq!(closed.code, 2, "act blocks on an internal error");
        assert!(closed.stderr.contains("fail closed"));
        let open = answer(Policy::Open("memory_guard"), &opts, b"{}", || {
            panic!("internal error")
        });
        assert_eq!(open.code, 0);
        let cursor = answer(
            Policy::Closed("mcp_gate"),
            &opts,
            br#"{"conversation_id":"c"}"#,
            || panic!("internal error"),
        );
        assert!(cursor.stdout.contains("\"permission\":\"deny\""));
    }
}
