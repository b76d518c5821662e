//! Merging hoop's hook entries into Claude Code's `settings.json` and
//! Cursor's `hooks.json`, as a pure function over the parsed file.
//!
//! The merge is idempotent and touches only our own entries: an entry is
//! "ours" when its command runs a program named `hoop` with the same guard
//! arguments. A missing entry is appended (a new group at the end of the
//! event's list); one of ours with a different program path is updated in
//! place; nothing else is removed, reordered or duplicated. Object key order
//! is kept (serde_json `preserve_order`).

use serde_json::{Map, Value, json};

/// Which settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `~/.claude/settings.json`.
    Claude,
    /// `~/.cursor/hooks.json` (version 1).
    Cursor,
}

/// One hook entry we want present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub event: &'static str,
    /// Claude Code's tool matcher (Cursor has none here).
    pub matcher: Option<&'static str>,
    /// Arguments after the program: `guard act`, …
    pub args: Vec<String>,
    /// The hook's `timeout` in seconds, written only when set (the
    /// hook-status lane's lifecycle hooks carry one).
    pub timeout: Option<u64>,
}

fn spec(event: &'static str, matcher: Option<&'static str>, args: &[&str]) -> Spec {
    Spec {
        event,
        matcher,
        args: args.iter().map(|s| s.to_string()).collect(),
        timeout: None,
    }
}

/// The card tools whose call ends or starts a card (any MCP server name):
/// the `hoop card-snapshot` hook decides again from the payload, so this
/// matcher may match more, never less.
pub const CARD_TOOLS_MATCHER: &str = "mcp__.+__work_task_(finish|start|take|progress)";
/// Claude Code's ceiling on the card snapshot hook, in seconds: above the
/// hook's own bound on its one request (`hoop_sentinel::constants::
/// CARD_SNAPSHOT_TIMEOUT`), so the hook always ends by itself first.
pub const CARD_SNAPSHOT_HOOK_TIMEOUT_SECS: u64 = 10;

/// The card tools' usage snapshot hook (`hoop card-snapshot`), Claude Code
/// only. Not a guard (it never refuses a call), so not among [`specs`];
/// `hoop hooks install --claude` and `hoop install` add it. Not bound to a
/// home: it finds the home from the session's working directory.
pub fn card_snapshot_spec() -> Spec {
    Spec {
        timeout: Some(CARD_SNAPSHOT_HOOK_TIMEOUT_SECS),
        ..spec("PreToolUse", Some(CARD_TOOLS_MATCHER), &["card-snapshot"])
    }
}

/// The entries for one target. The home-bound guards (mcp_gate, tool_phase)
/// are installed only with a home.
pub fn specs(target: Target, home: Option<&str>) -> Vec<Spec> {
    let mut v = Vec::new();
    match target {
        Target::Claude => {
            v.push(spec("PreToolUse", Some("Bash"), &["guard", "act"]));
            v.push(spec(
                "PreToolUse",
                Some("Write|Edit|MultiEdit"),
                &["guard", "memory"],
            ));
            if let Some(h) = home {
                v.push(spec(
                    "PreToolUse",
                    Some("mcp__.*"),
                    &["guard", "mcp", "--home", h],
                ));
                v.push(spec(
                    "PostToolUse",
                    Some("*"),
                    &["guard", "phase", "--home", h],
                ));
            }
        }
        Target::Cursor => {
            v.push(spec(
                "beforeShellExecution",
                None,
                &["guard", "act", "--cursor"],
            ));
            if let Some(h) = home {
                v.push(spec(
                    "beforeMCPExecution",
                    None,
                    &["guard", "mcp", "--cursor", "--home", h],
                ));
                for ev in ["afterShellExecution", "afterMCPExecution", "afterFileEdit"] {
                    v.push(spec(ev, None, &["guard", "phase", "--cursor", "--home", h]));
                }
            }
        }
    }
    v
}

/// The command line for a spec, with `program` the hoop binary's path.
pub fn command_line(program: &str, spec: &Spec) -> String {
    let mut s = quote(program);
    for a in &spec.args {
        s.push(' ');
        s.push_str(&quote(a));
    }
    s
}

fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,~".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Is `command` one of ours for `spec` (any path to a `hoop` program)?
fn is_ours(command: &str, spec: &Spec) -> bool {
    let words = split_words(command);
    let Some((prog, args)) = words.split_first() else {
        return false;
    };
    prog.rsplit('/').next() == Some("hoop") && args == spec.args.as_slice()
}

/// Split a command line on blanks, honouring single and double quotes.
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut any = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What the merge did (or would do) for one spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Present(String),
    Added(String),
    Updated { from: String, to: String },
}

impl Change {
    pub fn is_drift(&self) -> bool {
        !matches!(self, Change::Present(_))
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Present(c) => write!(f, "ok       {c}"),
            Change::Added(c) => write!(f, "add      {c}"),
            Change::Updated { from, to } => write!(f, "update   {from} -> {to}"),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InstallError {
    #[error("the settings file is not a JSON object")]
    NotAnObject,
    #[error("`hooks` in the settings file is not an object")]
    HooksNotAnObject,
    #[error("`hooks.{0}` in the settings file is not a list")]
    EventNotAList(String),
}

/// Merge `specs` into `settings` (the parsed file, or `Value::Null` when it
/// does not exist). Returns one [`Change`] per spec.
pub fn merge(
    target: Target,
    settings: &mut Value,
    program: &str,
    specs: &[Spec],
) -> Result<Vec<Change>, InstallError> {
    if settings.is_null() {
        *settings = Value::Object(Map::new());
    }
    let root = settings.as_object_mut().ok_or(InstallError::NotAnObject)?;
    if target == Target::Cursor && !root.contains_key("version") {
        root.insert("version".into(), json!(1));
    }
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(InstallError::HooksNotAnObject)?;
    let mut changes = Vec::new();
    for s in specs {
        let want = command_line(program, s);
        let list = hooks
            .entry(s.event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| InstallError::EventNotAList(s.event.to_string()))?;
        let change = match find_ours(target, list, s) {
            Some(cmd) if *cmd == want => Change::Present(want),
            Some(cmd) => {
                let from = std::mem::replace(cmd, want.clone());
                Change::Updated { from, to: want }
            }
            None => {
                let mut hook = match target {
                    Target::Claude => json!({"type": "command", "command": want}),
                    Target::Cursor => json!({"command": want}),
                };
                if let Some(t) = s.timeout {
                    hook["timeout"] = json!(t);
                }
                list.push(match target {
                    Target::Claude => json!({
                        "matcher": s.matcher.unwrap_or(""),
                        "hooks": [hook],
                    }),
                    Target::Cursor => hook,
                });
                Change::Added(want)
            }
        };
        changes.push(change);
    }
    Ok(changes)
}

/// Why a settings file could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("reading {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON ({source}); fix it by hand first")]
    Json {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
    #[error("merging into {path}: {source}")]
    Merge {
        path: std::path::PathBuf,
        source: InstallError,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// The settings file at `path` merged with `specs`: the changes, and the
/// new bytes when anything drifted (`None` when the file is up to date).
/// Reads only; [`merge_file`] writes.
pub fn merge_plan(
    target: Target,
    path: &std::path::Path,
    program: &str,
    specs: &[Spec],
) -> Result<(Vec<Change>, Option<Vec<u8>>), FileError> {
    let mut settings = read_settings(path)?;
    let changes =
        merge(target, &mut settings, program, specs).map_err(|source| FileError::Merge {
            path: path.to_path_buf(),
            source,
        })?;
    if !changes.iter().any(Change::is_drift) {
        return Ok((changes, None));
    }
    let mut data = serde_json::to_vec_pretty(&settings).expect("a JSON value serializes");
    data.push(b'\n');
    Ok((changes, Some(data)))
}

/// Merge `specs` into the settings file at `path` and write it atomically
/// when anything drifted, keeping the file's permissions (it may hold API
/// keys in `env`). Returns the changes (all `Present` when nothing was
/// written).
pub fn merge_file(
    target: Target,
    path: &std::path::Path,
    program: &str,
    specs: &[Spec],
) -> Result<Vec<Change>, FileError> {
    let (changes, data) = merge_plan(target, path, program, specs)?;
    if let Some(data) = data {
        write_settings(path, &data)?;
    }
    Ok(changes)
}

fn file_mode(path: &std::path::Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The arguments of the status line command (`hoop statusline`).
pub const STATUSLINE_ARGS: [&str; 1] = ["statusline"];

/// Set Claude Code's `statusLine` to run `hoop statusline` (asked for
/// explicitly: there is one status line, so another command there is
/// replaced, and the change says which).
pub fn merge_statusline(settings: &mut Value, program: &str) -> Result<Change, InstallError> {
    if settings.is_null() {
        *settings = Value::Object(Map::new());
    }
    let root = settings.as_object_mut().ok_or(InstallError::NotAnObject)?;
    let ours = Spec {
        event: "statusLine",
        matcher: None,
        args: STATUSLINE_ARGS.iter().map(|s| s.to_string()).collect(),
        timeout: None,
    };
    let want = command_line(program, &ours);
    let current = root
        .get("statusLine")
        .and_then(|v| v.get("command"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let change = match current {
        Some(c) if c == want && root["statusLine"]["type"] == "command" => {
            return Ok(Change::Present(want));
        }
        Some(from) => Change::Updated {
            from,
            to: want.clone(),
        },
        None => Change::Added(want.clone()),
    };
    root.insert(
        "statusLine".into(),
        json!({"type": "command", "command": want, "padding": 0}),
    );
    Ok(change)
}

/// [`merge_statusline`] on the settings file at `path`: the change, and the
/// new bytes when it drifted. Reads only.
pub fn statusline_plan(
    path: &std::path::Path,
    program: &str,
) -> Result<(Change, Option<Vec<u8>>), FileError> {
    let mut settings = read_settings(path)?;
    let change = merge_statusline(&mut settings, program).map_err(|source| FileError::Merge {
        path: path.to_path_buf(),
        source,
    })?;
    if !change.is_drift() {
        return Ok((change, None));
    }
    let mut data = serde_json::to_vec_pretty(&settings).expect("a JSON value serializes");
    data.push(b'\n');
    Ok((change, Some(data)))
}

/// Write `data` over the settings file at `path` atomically, keeping its
/// permissions (it may hold API keys in `env`).
pub fn write_settings(path: &std::path::Path, data: &[u8]) -> Result<(), FileError> {
    let opts = hoop_core::fsutil::WriteOptions {
        mode: file_mode(path).unwrap_or(hoop_core::fsutil::WriteOptions::default().mode),
    };
    hoop_core::fsutil::write_atomic(path, data, opts).map_err(|source| FileError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn read_settings(path: &std::path::Path) -> Result<Value, FileError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| FileError::Json {
            path: path.to_path_buf(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Null),
        Err(source) => Err(FileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Our existing command string for `spec` in an event's list, if any.
fn find_ours<'v>(target: Target, list: &'v mut [Value], s: &Spec) -> Option<&'v mut String> {
    for entry in list.iter_mut() {
        let commands: Vec<&mut Value> = match target {
            Target::Claude => match entry.get_mut("hooks").and_then(|h| h.as_array_mut()) {
                Some(hs) => hs.iter_mut().filter_map(|h| h.get_mut("command")).collect(),
                None => Vec::new(),
            },
            Target::Cursor => entry.get_mut("command").into_iter().collect(),
        };
        for c in commands {
            if let Value::String(cmd) = c
                && is_ours(cmd, s)
            {
                return Some(cmd);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_ownership() {
        assert_eq!(
            split_words("'/a b/hoop' guard act"),
            vec!["/a b/hoop", "guard", "act"]
        );
        let s = spec("PreToolUse", Some("Bash"), &["guard", "act"]);
        assert!(is_ours("/usr/local/bin/hoop guard act", &s));
        assert!(is_ours("hoop guard act", &s));
        assert!(!is_ours("hoop guard act --format json", &s));
        assert!(!is_ours("/x/not-hoop guard act", &s));
        assert_eq!(command_line("/a b/hoop", &s), "'/a b/hoop' guard act");
    }

    #[test]
    fn the_status_line_is_set_kept_and_taken_over_only_when_asked() {
        // Absent: added, other settings untouched.
        let mut v = json!({"model": "opus", "hooks": {}});
        let c = merge_statusline(&mut v, "/b/hoop").unwrap();
        assert_eq!(c, Change::Added("/b/hoop statusline".into()));
        assert_eq!(
            v,
            json!({"model": "opus", "hooks": {},
                   "statusLine": {"type": "command", "command": "/b/hoop statusline", "padding": 0}})
        );
        // Present: nothing changes.
        let before = v.clone();
        assert!(!merge_statusline(&mut v, "/b/hoop").unwrap().is_drift());
        assert_eq!(v, before);
        // Another program's status line is replaced, and the change names it.
        let mut v = json!({"statusLine": {"type": "command", "command": "ccusage statusline"}});
        assert_eq!(
            merge_statusline(&mut v, "/b/hoop").unwrap(),
            Change::Updated {
                from: "ccusage statusline".into(),
                to: "/b/hoop statusline".into()
            }
        );
        assert_eq!(v["statusLine"]["command"], "/b/hoop statusline");
        // Not an object: refused, nothing written.
        assert_eq!(
            merge_statusline(&mut json!([1]), "/b/hoop"),
            Err(InstallError::NotAnObject)
        );
    }

    #[test]
    fn the_card_snapshot_hook_is_a_claude_pre_tool_use_with_its_timeout() {
        let card = card_snapshot_spec();
        assert_eq!(card.event, "PreToolUse");
        assert_eq!(
            card.matcher,
            Some("mcp__.+__work_task_(finish|start|take|progress)")
        );
        assert_eq!(card.timeout, Some(10));
        // Not a guard: the guards' lists stay theirs.
        for (t, h) in [(Target::Claude, None), (Target::Cursor, Some("bolt"))] {
            assert!(specs(t, h).iter().all(|s| s.args != ["card-snapshot"]));
        }
        let mut v = Value::Null;
        merge(Target::Claude, &mut v, "/b/hoop", &[card_snapshot_spec()]).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"][0],
            json!({"matcher": "mcp__.+__work_task_(finish|start|take|progress)",
                   "hooks": [{"type": "command", "command": "/b/hoop card-snapshot", "timeout": 10}]})
        );
    }
}
