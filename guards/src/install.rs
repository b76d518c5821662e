//! Merging hoop's hook entries into Claude Code's `settings.json` and
//! Cursor's `hooks.json`, as a pure function over the parsed file.
//!
//! The merge is idempotent and touches only our own entries: an entry is
//! "ours" when its command runs a program named `hoop` with the same guard
//! arguments. A missing entry is appended (a new group at the end of the
//! event's list); one of ours that differs in any part — the program path,
//! the `timeout`, or Claude Code's group `matcher` — is repaired (in place,
//! or, when a foreign hook shares its group under another matcher, moved to
//! a group of its own); nothing else is removed, reordered or duplicated.
//! Object key order is kept (serde_json `preserve_order`). Which hooks
//! exist is one table, [`HOOKS`]: a new hook is a row.

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

/// How long Claude Code and Cursor let a guard hook run before they give up
/// on it (their `timeout`, seconds). The guards decide in microseconds and
/// a `hoop` process starts in milliseconds; the bound is for a machine
/// under load or a cold disk, and keeps a stuck hook from holding the
/// session for the agents' default minute.
pub const GUARD_HOOK_TIMEOUT_SECS: u64 = 10;
/// tool_phase after every tool: observability only, so a shorter bound.
pub const PHASE_HOOK_TIMEOUT_SECS: u64 = 5;

/// One hook a home may carry: the ONE table [`specs`] reads. A new hook is
/// a row (`home`: it takes `--home <home>` and is installed only with a
/// home).
pub struct HookRow {
    pub target: Target,
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    /// Arguments after the program; `--home <home>` is appended when `home`.
    pub args: &'static [&'static str],
    pub home: bool,
    pub timeout: u64,
}

/// Every guard hook, per target, in the order they are written.
pub const HOOKS: &[HookRow] = &[
    HookRow {
        target: Target::Claude,
        event: "PreToolUse",
        matcher: Some("Bash"),
        args: &["guard", "act"],
        home: false,
        timeout: GUARD_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Claude,
        event: "PreToolUse",
        matcher: Some("Write|Edit|MultiEdit"),
        args: &["guard", "memory"],
        home: false,
        timeout: GUARD_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Claude,
        event: "PreToolUse",
        matcher: Some("mcp__.*"),
        args: &["guard", "mcp"],
        home: true,
        timeout: GUARD_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Claude,
        event: "PostToolUse",
        matcher: Some("*"),
        args: &["guard", "phase"],
        home: true,
        timeout: PHASE_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Cursor,
        event: "beforeShellExecution",
        matcher: None,
        args: &["guard", "act", "--cursor"],
        home: false,
        timeout: GUARD_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Cursor,
        event: "beforeMCPExecution",
        matcher: None,
        args: &["guard", "mcp", "--cursor"],
        home: true,
        timeout: GUARD_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Cursor,
        event: "afterShellExecution",
        matcher: None,
        args: &["guard", "phase", "--cursor"],
        home: true,
        timeout: PHASE_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Cursor,
        event: "afterMCPExecution",
        matcher: None,
        args: &["guard", "phase", "--cursor"],
        home: true,
        timeout: PHASE_HOOK_TIMEOUT_SECS,
    },
    HookRow {
        target: Target::Cursor,
        event: "afterFileEdit",
        matcher: None,
        args: &["guard", "phase", "--cursor"],
        home: true,
        timeout: PHASE_HOOK_TIMEOUT_SECS,
    },
];

impl HookRow {
    /// The spec of this row for `home`.
    pub fn spec(&self, home: Option<&str>) -> Spec {
        let mut args: Vec<String> = self.args.iter().map(|s| s.to_string()).collect();
        if self.home
            && let Some(h) = home
        {
            args.push("--home".into());
            args.push(h.to_string());
        }
        Spec {
            event: self.event,
            matcher: self.matcher,
            args,
            timeout: Some(self.timeout),
        }
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
/// only. Not a guard (it never refuses a call), so not in [`HOOKS`] and not
/// among [`specs`]; `hoop hooks install --claude` and `hoop install` add it.
/// Not bound to a home: it finds the home from the session's working
/// directory.
pub fn card_snapshot_spec() -> Spec {
    Spec {
        event: "PreToolUse",
        matcher: Some(CARD_TOOLS_MATCHER),
        args: vec!["card-snapshot".to_string()],
        timeout: Some(CARD_SNAPSHOT_HOOK_TIMEOUT_SECS),
    }
}

/// The entries for one target, from [`HOOKS`]. The home-bound guards
/// (mcp_gate, tool_phase) are installed only with a home.
pub fn specs(target: Target, home: Option<&str>) -> Vec<Spec> {
    HOOKS
        .iter()
        .filter(|r| r.target == target && (!r.home || home.is_some()))
        .map(|r| r.spec(home))
        .collect()
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
        let want_matcher = match target {
            Target::Claude => Some(s.matcher.unwrap_or("")),
            Target::Cursor => None,
        };
        let list = hooks
            .entry(s.event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| InstallError::EventNotAList(s.event.to_string()))?;
        let change = match find_ours(target, list, s) {
            Some(at) => {
                let have = entry_at(target, list, at);
                let wanted = Entry {
                    matcher: want_matcher.map(str::to_string),
                    command: want.clone(),
                    timeout: s.timeout,
                };
                if have == wanted {
                    Change::Present(want)
                } else {
                    repair(target, list, at, &wanted);
                    Change::Updated {
                        from: have.to_string(),
                        to: wanted.to_string(),
                    }
                }
            }
            None => {
                list.push(new_entry(target, &want, want_matcher, s.timeout));
                Change::Added(want)
            }
        };
        changes.push(change);
    }
    Ok(changes)
}

/// One of our entries as it is in the file (or as we want it): the whole
/// entry is compared, so a stale matcher or timeout is drift, not only a
/// moved program.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Claude Code's group matcher (`None` for Cursor, which has none).
    matcher: Option<String>,
    command: String,
    timeout: Option<u64>,
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(m) = &self.matcher {
            write!(f, "[{m}] ")?;
        }
        f.write_str(&self.command)?;
        match self.timeout {
            Some(t) => write!(f, " (timeout {t} s)"),
            None => f.write_str(" (no timeout)"),
        }
    }
}

/// Where one of our hooks is: the entry of the event's list, and for
/// Claude Code the hook inside that entry's `hooks`.
#[derive(Debug, Clone, Copy)]
struct At {
    entry: usize,
    hook: usize,
}

fn new_entry(target: Target, command: &str, matcher: Option<&str>, timeout: Option<u64>) -> Value {
    let mut hook = match target {
        Target::Claude => json!({"type": "command", "command": command}),
        Target::Cursor => json!({"command": command}),
    };
    if let Some(t) = timeout {
        hook["timeout"] = json!(t);
    }
    match target {
        Target::Claude => json!({"matcher": matcher.unwrap_or(""), "hooks": [hook]}),
        Target::Cursor => hook,
    }
}

fn hook_at(target: Target, list: &[Value], at: At) -> &Value {
    match target {
        Target::Claude => &list[at.entry]["hooks"][at.hook],
        Target::Cursor => &list[at.entry],
    }
}

fn entry_at(target: Target, list: &[Value], at: At) -> Entry {
    let hook = hook_at(target, list, at);
    Entry {
        matcher: match target {
            Target::Claude => Some(
                list[at.entry]
                    .get("matcher")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            Target::Cursor => None,
        },
        command: hook["command"].as_str().unwrap_or("").to_string(),
        timeout: hook.get("timeout").and_then(Value::as_u64),
    }
}

/// Make our hook at `at` what is wanted, touching nothing else: command and
/// timeout in place; a wrong matcher fixed in place when the entry holds
/// only our hook, else our hook moves to an entry of its own (the others
/// keep theirs).
fn repair(target: Target, list: &mut Vec<Value>, at: At, want: &Entry) {
    let matcher_ok = target == Target::Cursor
        || list[at.entry]
            .get("matcher")
            .and_then(Value::as_str)
            .unwrap_or("")
            == want.matcher.as_deref().unwrap_or("");
    let alone = target == Target::Cursor
        || list[at.entry]["hooks"]
            .as_array()
            .is_some_and(|h| h.len() == 1);
    if !matcher_ok && !alone {
        if let Some(hs) = list[at.entry]["hooks"].as_array_mut() {
            hs.remove(at.hook);
        }
        list.push(new_entry(
            target,
            &want.command,
            want.matcher.as_deref(),
            want.timeout,
        ));
        return;
    }
    if !matcher_ok {
        list[at.entry]["matcher"] = json!(want.matcher.as_deref().unwrap_or(""));
    }
    let hook = match target {
        Target::Claude => &mut list[at.entry]["hooks"][at.hook],
        Target::Cursor => &mut list[at.entry],
    };
    hook["command"] = json!(want.command);
    match (want.timeout, hook.as_object_mut()) {
        (Some(t), _) => hook["timeout"] = json!(t),
        (None, Some(o)) => {
            o.remove("timeout");
        }
        (None, None) => {}
    }
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
    let mut settings = read_settings(path)?;
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
    let change = merge_statusline(&mut settings, program).map_err(|cause| FileError::Merge {
        path: path.to_path_buf(),
        cause,
    })?;
    if !change.is_drift() {
        return Ok((change, None));
    }
    let mut data = serde_json::to_vec_pretty(&settings).expect("a JSON value serializes");
    data.push(b'\n');
    Ok((change, Some(data)))
}

/// Write `data` over the settings file at `path` atomically, keeping its
/// permissions (it may hold API keys in `env`). A settings file kept in a
/// dotfiles tree (stow, home-manager) is a link: its target is written and
/// the link kept.
pub fn write_settings(path: &std::path::Path, data: &[u8]) -> Result<(), FileError> {
    let opts = hoop_core::fsutil::WriteOptions {
        mode: file_mode(path).unwrap_or(hoop_core::fsutil::WriteOptions::default().mode),
        links: hoop_core::fsutil::Links::WriteThrough,
    };
    hoop_core::fsutil::write_atomic(path, data, opts).map_err(|cause| FileError::Write {
        path: path.to_path_buf(),
        cause,
    })
}

fn read_settings(path: &std::path::Path) -> Result<Value, FileError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|cause| FileError::Json {
            path: path.to_path_buf(),
            cause,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Null),
        Err(cause) => Err(FileError::Read {
            path: path.to_path_buf(),
            cause,
        }),
    }
}

/// Where our hook for `spec` is in an event's list, if any (found by its
/// command: any path to a `hoop` program with the spec's arguments).
fn find_ours(target: Target, list: &[Value], s: &Spec) -> Option<At> {
    for (i, entry) in list.iter().enumerate() {
        match target {
            Target::Claude => {
                let hooks = entry.get("hooks").and_then(|h| h.as_array());
                for (j, h) in hooks.into_iter().flatten().enumerate() {
                    if h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| is_ours(c, s))
                    {
                        return Some(At { entry: i, hook: j });
                    }
                }
            }
            Target::Cursor => {
                if entry
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| is_ours(c, s))
                {
                    return Some(At { entry: i, hook: 0 });
                }
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
        let s = HOOKS[0].spec(None);
        assert!(is_ours("/usr/local/bin/hoop guard act", &s));
        assert!(is_ours("hoop guard act", &s));
        assert!(!is_ours("hoop guard act --format json", &s));
        assert!(!is_ours("/x/not-hoop guard act", &s));
        assert_eq!(command_line("/a b/hoop", &s), "'/a b/hoop' guard act");
    }

    /// The whole entry is ours to keep right: a stale matcher or timeout is
    /// repaired (in place when our hook is alone in its group, else moved
    /// to a group of its own), an entry already right is left as it is,
    /// and foreign hooks are never touched.
    #[test]
    fn whole_entry_repairs() {
        let memory = HOOKS[1].spec(None);
        let p = "/x/hoop";
        let ours = "/x/hoop guard memory";
        let cases: Vec<(&str, Value, Value, bool)> = vec![
            (
                "already right",
                json!([{"matcher": "Write|Edit|MultiEdit", "hooks": [
                    {"type": "command", "command": ours, "timeout": 10}]}]),
                json!([{"matcher": "Write|Edit|MultiEdit", "hooks": [
                    {"type": "command", "command": ours, "timeout": 10}]}]),
                false,
            ),
            (
                "a stale matcher, alone",
                json!([{"matcher": "Edit", "hooks": [
                    {"type": "command", "command": ours, "timeout": 10}]}]),
                json!([{"matcher": "Write|Edit|MultiEdit", "hooks": [
                    {"type": "command", "command": ours, "timeout": 10}]}]),
                true,
            ),
            (
                "a stale matcher shared with a foreign hook",
                json!([{"matcher": "Edit", "hooks": [
                    {"type": "command", "command": "./mine.sh"},
                    {"type": "command", "command": "/old/hoop guard memory"}]}]),
                json!([
                    {"matcher": "Edit", "hooks": [{"type": "command", "command": "./mine.sh"}]},
                    {"matcher": "Write|Edit|MultiEdit", "hooks": [
                        {"type": "command", "command": ours, "timeout": 10}]}]),
                true,
            ),
            (
                "no timeout, and another key kept",
                json!([{"matcher": "Write|Edit|MultiEdit", "hooks": [
                    {"type": "command", "command": ours, "x": 1}]}]),
                json!([{"matcher": "Write|Edit|MultiEdit", "hooks": [
                    {"type": "command", "command": ours, "x": 1, "timeout": 10}]}]),
                true,
            ),
        ];
        for (what, before, after, drift) in cases {
            let mut v = json!({"hooks": {"PreToolUse": before}});
            let changes = merge(Target::Claude, &mut v, p, std::slice::from_ref(&memory)).unwrap();
            assert_eq!(changes[0].is_drift(), drift, "{what}: {changes:?}");
            assert_eq!(v["hooks"]["PreToolUse"], after, "{what}");
        }
        // The change says what was and what will be.
        let mut v = json!({"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [
            {"type": "command", "command": ours, "timeout": 10}]}]}});
        let changes = merge(Target::Claude, &mut v, p, &[memory]).unwrap();
        assert_eq!(
            changes[0].to_string(),
            "update   [Edit] /x/hoop guard memory (timeout 10 s) -> [Write|Edit|MultiEdit] \
             /x/hoop guard memory (timeout 10 s)"
        );
    }

    /// Every guard hook has a bound, phase the shorter one.
    #[test]
    fn every_hook_has_its_timeout() {
        let claude = specs(Target::Claude, Some("bolt"));
        let got: Vec<(&str, Option<u64>)> = claude
            .iter()
            .map(|s| (s.args[1].as_str(), s.timeout))
            .collect();
        assert_eq!(
            got,
            [
                ("act", Some(10)),
                ("memory", Some(10)),
                ("mcp", Some(10)),
                ("phase", Some(5))
            ]
        );
        let cursor: Vec<(&str, Option<u64>)> = specs(Target::Cursor, Some("bolt"))
            .iter()
            .map(|s| (s.event, s.timeout))
            .collect();
        assert_eq!(
            cursor,
            [
                ("beforeShellExecution", Some(10)),
                ("beforeMCPExecution", Some(10)),
                ("afterShellExecution", Some(5)),
                ("afterMCPExecution", Some(5)),
                ("afterFileEdit", Some(5))
            ]
        );
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
