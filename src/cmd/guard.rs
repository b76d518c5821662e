//! `hoop guard …`: hook commands. They never return an error to `main`: each
//! maps its own failures to the documented fail-open / fail-closed answer
//! (see `hoop_guards::run`). A panic inside a guard is caught here and
//! answered fail-closed for act and mcp, fail-open for memory and phase.

use std::io::{Read, Write};

use hoop_guards::hook::{self, ClaudeFormat, Decision, Flavor, HookOptions, Response};
use hoop_guards::run::{self, HookEnv};

#[derive(clap::Subcommand, Debug, PartialEq)]
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

#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum Format {
    /// Block with exit 2 and the reason on stderr.
    ExitCode,
    /// Exit 0 with the JSON `hookSpecificOutput.permissionDecision` answer.
    Json,
}

#[derive(clap::Args, Debug, PartialEq)]
pub struct HookArgs {
    /// How to answer Claude Code (Cursor is always answered in JSON).
    #[arg(long, value_enum, default_value = "exit-code")]
    format: Format,
    /// Treat the payload as Cursor's (otherwise detected from the payload).
    #[arg(long)]
    cursor: bool,
}

#[derive(clap::Args, Debug, PartialEq)]
pub struct HomeHookArgs {
    #[command(flatten)]
    hook: HookArgs,
    /// The home: a name under the hoop root, or its path (default: $HOOP_HOME).
    #[arg(long)]
    home: Option<String>,
}

/// The guard command lines hooks are installed with, read without building
/// clap's parser: `act`, `memory`, `phase` or `mcp`, then `--cursor`,
/// `--format json|exit-code` and (phase, mcp) `--home <home>`, each at most
/// once, in any order. Building the parser and parsing with it was a tenth
/// of a guard call's instructions (66,000 of 589,000) and 0.08 ms of its
/// CPU, and a guard runs before every tool call.
/// `None` for anything else (`--help`, `--format=json`, an unknown word, a
/// value clap would refuse): clap reads it and says what is wrong. A test
/// holds the two readers to the same answer on every line they share.
pub fn read_plain_line(args: &[std::ffi::OsString]) -> Option<Command> {
    let mut words = args.iter().map(|a| a.to_str());
    let sub = words.next()??;
    let takes_home = matches!(sub, "phase" | "mcp");
    if !takes_home && !matches!(sub, "act" | "memory") {
        return None;
    }
    let (mut format, mut cursor, mut home) = (None, None, None);
    while let Some(word) = words.next() {
        match word? {
            "--cursor" if cursor.is_none() => cursor = Some(true),
            "--format" if format.is_none() => {
                format = Some(match words.next()?? {
                    "json" => Format::Json,
                    "exit-code" => Format::ExitCode,
                    _ => return None,
                })
            }
            "--home" if takes_home && home.is_none() => match words.next()?? {
                h if h.is_empty() || h.starts_with('-') => return None,
                h => home = Some(h.to_string()),
            },
            _ => return None,
        }
    }
    let hook = HookArgs {
        format: format.unwrap_or(Format::ExitCode),
        cursor: cursor.unwrap_or(false),
    };
    Some(match sub {
        "act" => Command::Act(hook),
        "memory" => Command::Memory(hook),
        "phase" => Command::Phase(HomeHookArgs { hook, home }),
        _ => Command::Mcp(HomeHookArgs { hook, home }),
    })
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

/// Answers the hook; the exit code is the guard's answer (2 blocks).
pub fn run(c: Command) -> u8 {
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

fn emit(r: &Response) -> u8 {
    if !r.stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(r.stdout.as_bytes());
        let _ = out.flush();
    }
    if !r.stderr.is_empty() {
        let _ = std::io::stderr().lock().write_all(r.stderr.as_bytes());
    }
    r.code
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

    /// clap's reading of `guard <words>`, or its error kind.
    fn by_clap(words: &[&str]) -> Result<Command, clap::error::ErrorKind> {
        use clap::Parser;
        let args = std::iter::once("hoop guard").chain(words.iter().copied());
        crate::GuardCli::try_parse_from(args)
            .map(|c| c.command)
            .map_err(|e| e.kind())
    }

    fn plain(words: &[&str]) -> Option<Command> {
        let args: Vec<std::ffi::OsString> = words.iter().map(Into::into).collect();
        read_plain_line(&args)
    }

    #[test]
    fn every_installed_hook_line_is_read_without_clap_and_as_clap_reads_it() {
        for row in hoop_guards::install::HOOKS {
            let mut words: Vec<&str> = row.args[1..].to_vec();
            if row.home {
                words.extend(["--home", "alice"]);
            }
            let fast = plain(&words);
            assert!(fast.is_some(), "installed line {words:?} takes clap's path");
            assert_eq!(fast, by_clap(&words).ok(), "{words:?}");
        }
    }

    #[test]
    fn the_plain_reader_agrees_with_clap_or_leaves_the_line_to_it() {
        // (words, read without clap?)
        let table: &[(&[&str], bool)] = &[
            (&["act"], true),
            (&["act", "--format", "json"], true),
            (&["act", "--format", "exit-code", "--cursor"], true),
            (&["act", "--cursor", "--format", "json"], true),
            (&["memory", "--format", "json"], true),
            (&["phase"], true),
            (&["phase", "--home", "/srv/homes/a b"], true),
            (
                &["mcp", "--cursor", "--home", "bob", "--format", "json"],
                true,
            ),
            // Everything below is clap's to read, accept or refuse.
            (&[], false),
            (&["--help"], false),
            (&["act", "--help"], false),
            (&["act", "--format=json"], false),
            (&["act", "--format", "yaml"], false),
            (&["act", "--format"], false),
            (&["act", "--cursor", "--cursor"], false),
            (&["act", "--home", "alice"], false),
            (&["act", "extra"], false),
            (&["act", "--curs"], false),
            (&["phase", "--home"], false),
            (&["phase", "--home", "--cursor"], false),
            (&["phase", "--home", ""], false),
            (&["phase", "--home", "a", "--home", "b"], false),
            (&["shell", "--cursor"], false),
            (&["Act"], false),
        ];
        for (words, fast) in table {
            let got = plain(words);
            assert_eq!(got.is_some(), *fast, "{words:?}: {got:?}");
            if let Some(got) = got {
                assert_eq!(Ok(got), by_clap(words), "{words:?}");
            }
        }
    }
}
