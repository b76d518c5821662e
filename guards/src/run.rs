//! The hook drivers: payload bytes in, [`Response`] out. Each guard's policy
//! for bad input is here, in one place:
//!
//! | guard  | unreadable payload | internal error | not its tool |
//! |--------|--------------------|----------------|--------------|
//! | act    | block (fail closed)| block          | allow        |
//! | memory | allow (noted)      | allow (noted)  | allow        |
//! | phase  | exit 0, no output  | exit 0         | —            |
//! | mcp    | block (fail closed)| block          | allow        |
//!
//! "Internal error" (a panic) is caught by the caller, which answers with
//! [`crate::hook::fail_closed`] for act and mcp.

use std::path::{Path, PathBuf};

use hoop_core::home::Home;

use crate::act::{self, ActConfig, Verdict};
use crate::hook::{Decision, Flavor, HookOptions, Payload, Response, parse_payload, render};
use crate::limits::{AGENT_ENV, HOME_ENV, MEMORY_MAX_BYTES, MEMORY_MAX_ENV, MEMORY_MAX_FILE};
use crate::{mcp, memory, phase};

/// Everything from the environment the drivers use, gathered once.
#[derive(Debug, Clone, Default)]
pub struct HookEnv {
    /// The hoop root (`$HOOP_ROOT` or `~/.hoop`), if there is one.
    pub root: Option<PathBuf>,
    /// The home (from `--home` or `$HOOP_HOME`), for phase and mcp.
    pub home: Option<Home>,
    /// `$HOOP_AGENT`.
    pub agent: Option<String>,
    /// `$TMPDIR`.
    pub tmpdir: Option<String>,
    /// `$HOOP_MEMORY_MAX_BYTES`.
    pub memory_max: Option<u64>,
    /// Unix seconds.
    pub now: i64,
}

impl HookEnv {
    /// From the process environment; `home_arg` is `--home` (a name under
    /// the root, or a path to the home directory).
    pub fn from_process(home_arg: Option<&str>) -> HookEnv {
        let root = hoop_core::home::root().ok();
        let home_name = home_arg
            .map(str::to_string)
            .or_else(|| std::env::var(HOME_ENV).ok())
            .filter(|s| !s.is_empty());
        let home = home_name.and_then(|h| resolve_home(root.as_deref(), &h));
        HookEnv {
            root,
            home,
            agent: std::env::var(AGENT_ENV).ok().filter(|s| !s.is_empty()),
            tmpdir: std::env::var("TMPDIR").ok().filter(|s| s.starts_with('/')),
            memory_max: std::env::var(MEMORY_MAX_ENV)
                .ok()
                .and_then(|v| v.trim().parse().ok()),
            now: hoop_core::clock::now_unix(),
        }
    }
}

/// `--home NAME` (under the root) or `--home /path/to/root/NAME`.
pub fn resolve_home(root: Option<&Path>, h: &str) -> Option<Home> {
    if h.contains('/') {
        let p = Path::new(h.trim_end_matches('/'));
        let name = p.file_name()?.to_str()?;
        let parent = p.parent()?;
        Home::new(parent, name).ok()
    } else {
        Home::new(root?, h).ok()
    }
}

fn unreadable(guard: &str, e: impl std::fmt::Display, opts: &HookOptions) -> Response {
    let flavor = if opts.force_cursor {
        Flavor::Cursor
    } else {
        Flavor::Claude
    };
    render(
        &Decision::Deny(format!(
            "hoop {guard} could not read the hook payload ({e}), so the call was blocked (fail closed)."
        )),
        flavor,
        opts,
    )
}

/// `hoop guard act`.
pub fn act_hook(input: &[u8], truncated: bool, opts: &HookOptions, env: &HookEnv) -> Response {
    let payload = match parse_payload(input, truncated) {
        Ok(p) => p,
        Err(e) => return unreadable("act_guard", e, opts),
    };
    let flavor = payload.flavor(opts);
    let Some(command) = payload.shell_command() else {
        return render(&Decision::Allow, flavor, opts);
    };
    let cfg = ActConfig {
        agent: env.agent.clone(),
        tmpdir: env.tmpdir.clone(),
        cwd: payload.cwd.clone(),
        ..ActConfig::from_files(env.root.as_deref())
    };
    let decision = match verdict_with_caches(command, &cfg) {
        Verdict::Allow => Decision::Allow,
        Verdict::Unparsed(why) => Decision::AllowNoted(format!(
            "hoop act_guard: {why}; the command was allowed without a full check"
        )),
        Verdict::Block(b) => Decision::Deny(b.to_string()),
        Verdict::Unchecked(why) => Decision::Deny(format!(
            "hoop act_guard could not check this command ({why}), so it was blocked \
             (fail closed). Instead: split it into simpler commands."
        )),
    };
    render(&decision, flavor, opts)
}

/// The verdict, with git's word on regenerable cache folders when one of
/// them is all that blocks the command (`cache_facts`; no git process
/// otherwise). Without that word the block stands and says why.
fn verdict_with_caches(command: &str, cfg: &ActConfig) -> Verdict {
    let v = act::check(command, cfg);
    let (Verdict::Block(b), Some(cwd)) = (&v, cfg.cwd.as_deref()) else {
        return v;
    };
    if b.rule != act::Rule::Rm {
        return v;
    }
    let paths = act::cache_candidates(command, cfg);
    if paths.is_empty() {
        return v;
    }
    match crate::cache_facts::untracked(Path::new(cwd), &paths) {
        Ok(()) => act::check(
            command,
            &ActConfig {
                untracked_caches: paths,
                ..cfg.clone()
            },
        ),
        Err(cause) => {
            let mut b = b.clone();
            b.why = format!("{}; here {cause}", b.why);
            Verdict::Block(b)
        }
    }
}

/// The memory limit: env, then `<root>/memory_guard_max_bytes`, then the
/// default.
fn memory_limit(env: &HookEnv) -> u64 {
    if let Some(m) = env.memory_max {
        return m;
    }
    env.root
        .as_ref()
        .and_then(|r| std::fs::read_to_string(r.join(MEMORY_MAX_FILE)).ok())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(MEMORY_MAX_BYTES)
}

/// `hoop guard memory`.
pub fn memory_hook(input: &[u8], truncated: bool, opts: &HookOptions, env: &HookEnv) -> Response {
    let payload: Payload = match parse_payload(input, truncated) {
        Ok(p) => p,
        Err(e) => {
            let d = Decision::AllowNoted(format!("hoop memory_guard: {e}; allowed"));
            return render(&d, Flavor::Claude, opts);
        }
    };
    let flavor = payload.flavor(opts);
    let decision = memory_decision(&payload, env);
    render(&decision, flavor, opts)
}

fn memory_decision(p: &Payload, env: &HookEnv) -> Decision {
    let (Some(tool), Some(input)) = (p.tool_name.as_deref(), p.tool_input.as_ref()) else {
        return Decision::Allow;
    };
    let Some(path) = p.input_str("file_path").or(p.input_str("path")) else {
        return Decision::Allow;
    };
    if !memory::is_memory_file(path) {
        return Decision::Allow;
    }
    let Some(change) = memory::change_of(tool, input) else {
        return Decision::Allow;
    };
    let full = match (&p.cwd, Path::new(path).is_absolute()) {
        (Some(cwd), false) => Path::new(cwd).join(path),
        _ => PathBuf::from(path),
    };
    let current = std::fs::read_to_string(&full).ok();
    let size = memory::size_after(current.as_deref(), &change);
    match memory::verdict(size, memory_limit(env)) {
        Some(reason) => Decision::Deny(reason),
        None => Decision::Allow,
    }
}

/// `hoop guard phase`: always exit 0, never any output on stdout.
pub fn phase_hook(input: &[u8], truncated: bool, env: &HookEnv) -> Response {
    let Some(home) = &env.home else {
        return Response::default();
    };
    let Ok(p) = parse_payload(input, truncated) else {
        return Response::default();
    };
    let word = phase::word_for(p.tool_name.as_deref(), p.hook_event_name.as_deref());
    let ph = phase::Phase {
        phase: word,
        at: env.now,
    };
    let result = hoop_core::fsutil::write_json_atomic(
        &home.phase_path(),
        &ph,
        hoop_core::fsutil::WriteOptions::default(),
    );
    Response {
        stderr: match result {
            Ok(()) => String::new(),
            Err(e) => format!("hoop tool_phase: could not write the phase: {e}\n"),
        },
        ..Response::default()
    }
}

/// `hoop guard mcp`.
pub fn mcp_hook(input: &[u8], truncated: bool, opts: &HookOptions, env: &HookEnv) -> Response {
    let payload = match parse_payload(input, truncated) {
        Ok(p) => p,
        Err(e) => return unreadable("mcp_gate", e, opts),
    };
    let flavor = payload.flavor(opts);
    let Some(tool) = payload.tool_name.as_deref() else {
        return render(&Decision::Allow, flavor, opts);
    };
    let cursor_mcp = payload.hook_event_name.as_deref() == Some("beforeMCPExecution");
    if !cursor_mcp && !tool.starts_with("mcp__") {
        return render(&Decision::Allow, flavor, opts);
    }
    let Some(home) = &env.home else {
        // Not a hoop-managed session: nothing to enforce.
        return render(&Decision::Allow, flavor, opts);
    };
    let allow = std::fs::read_to_string(home.mcp_allow_path())
        .map(|t| mcp::Allowlist::parse(&t))
        .unwrap_or_default();
    if allow.allows(tool, !cursor_mcp) {
        return render(&Decision::Allow, flavor, opts);
    }
    let line = mcp::Refusal {
        at: env.now,
        tool,
        session: payload.session(),
        client: match flavor {
            Flavor::Claude => "claude",
            Flavor::Cursor => "cursor",
        },
    };
    let mut resp = render(&Decision::Deny(mcp::refusal_message(tool)), flavor, opts);
    if let Err(e) = append_line(&home.mcp_refusals_path(), &line) {
        resp.stderr.push_str(&format!(
            "hoop mcp_gate: could not append to the ledger: {e}\n"
        ));
    }
    resp
}

/// Append one JSON line (a single `write` on an `O_APPEND` file, so
/// concurrent hooks never interleave within a line).
fn append_line<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    use std::io::Write;
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(&line)
}
