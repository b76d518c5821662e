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
    #[error("reading {path}: {cause}")]
    Read {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("{path} is not valid JSON ({cause}); fix it by hand first")]
    Json {
        path: std::path::PathBuf,
        cause: serde_json::Error,
    },
    #[error("merging into {path}: {cause}")]
    Merge {
        path: std::path::PathBuf,
        cause: InstallError,
    },
    #[error("writing {path}: {cause}")]
    Write {
        path: std::path::PathBuf,
        cause: std::io::Error,
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
    let mut settings = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| FileError::Json {
            path: path.to_path_buf(),
            cause: source,
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(source) => {
            return Err(FileError::Read {
                path: path.to_path_buf(),
                cause: source,
            });
        }
    };
    let changes =
        merge(target, &mut settings, program, specs).map_err(|source| FileError::Merge {
            path: path.to_path_buf(),
            cause: source,
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
        let opts = hoop_core::fsutil::WriteOptions {
            mode: file_mode(path).unwrap_or(hoop_core::fsutil::WriteOptions::default().mode),
        };
        hoop_core::fsutil::write_atomic(path, &data, opts).map_err(|source| FileError::Write {
            path: path.to_path_buf(),
            cause: source,
        })?;
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
}
