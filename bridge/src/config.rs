//! Where the bridge's key and endpoint come from, and its two local files
//! (the allowlist and the claims file). Pure parsers over text; the shell
//! reads the files. The key is held in [`Endpoint`], whose `Debug` redacts
//! it, and is never printed.

use std::collections::{BTreeMap, HashSet};

use hoop_api::types::{ConversationId, UserId};
use serde_json::Value;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{what} is not valid JSON: {message}")]
    Json { what: &'static str, message: String },
    #[error(
        "no hoop MCP server in ~/.claude.json (mcpServers.hoop with url and \
         headers.Authorization); give --key-file and --url instead"
    )]
    NoHoopServer,
    #[error("the hoop MCP server's Authorization is not `Bearer hoopmcp_…`")]
    NotAnMcpKey,
    #[error("the key file holds no `hoopmcp_…` key")]
    EmptyKeyFile,
    #[error("the MCP url {0:?} is not http(s)://…")]
    BadUrl(String),
    #[error("allowlist: {0}")]
    Allowlist(String),
}

/// The backend base URL and the key (`hoopmcp_…`).
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL without the `/mcp` path.
    pub base_url: String,
    pub key: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// The base URL of an MCP url (`…/mcp` → `…`).
pub fn base_of(url: &str) -> Result<String, ConfigError> {
    let u = url.trim().trim_end_matches('/');
    if !(u.starts_with("http://") || u.starts_with("https://")) {
        return Err(ConfigError::BadUrl(url.to_string()));
    }
    Ok(u.strip_suffix(hoop_api::routes::MCP)
        .unwrap_or(u)
        .to_string())
}

fn key_of(text: &str) -> Option<String> {
    let t = text.trim();
    let t = t.strip_prefix("Bearer ").unwrap_or(t).trim();
    t.starts_with(hoop_api::headers::MCP_KEY_PREFIX)
        .then(|| t.to_string())
}

/// `mcpServers.hoop.{url, headers.Authorization}` of `~/.claude.json`.
pub fn from_claude_json(text: &str) -> Result<Endpoint, ConfigError> {
    let v: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json {
        what: "~/.claude.json",
        message: e.to_string(),
    })?;
    let server = v
        .pointer("/mcpServers/hoop")
        .ok_or(ConfigError::NoHoopServer)?;
    let url = server
        .get("url")
        .and_then(Value::as_str)
        .ok_or(ConfigError::NoHoopServer)?;
    let auth = server
        .pointer("/headers/Authorization")
        .and_then(Value::as_str)
        .ok_or(ConfigError::NoHoopServer)?;
    Ok(Endpoint {
        base_url: base_of(url)?,
        key: key_of(auth).ok_or(ConfigError::NotAnMcpKey)?,
    })
}

/// A key file: the key alone (optionally `Bearer …`), surrounding
/// whitespace ignored.
pub fn key_from_file(text: &str) -> Result<String, ConfigError> {
    key_of(text).ok_or(ConfigError::EmptyKeyFile)
}

/// The per-account allowlist (`allow.json`): `{"<user id or username>":
/// "only:mention"}`. An account listed as `only:mention` rings only when
/// mentioned, in every room; an account not listed is not narrowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist(BTreeMap<String, String>);

/// The one rule the allowlist knows.
pub const ONLY_MENTION: &str = "only:mention";

impl Allowlist {
    pub fn parse(text: &str) -> Result<Allowlist, ConfigError> {
        let map: BTreeMap<String, String> =
            serde_json::from_str(text).map_err(|e| ConfigError::Json {
                what: "the allowlist",
                message: e.to_string(),
            })?;
        if let Some((k, v)) = map.iter().find(|(_, v)| v.as_str() != ONLY_MENTION) {
            return Err(ConfigError::Allowlist(format!(
                "{k:?}: unknown rule {v:?} (the only rule is {ONLY_MENTION:?})"
            )));
        }
        Ok(Allowlist(map))
    }

    /// Whether this account rings only on a mention.
    pub fn only_mention(&self, id: UserId, username: Option<&str>) -> bool {
        self.0.contains_key(&id.to_string()) || username.is_some_and(|u| self.0.contains_key(u))
    }
}

/// The local claims file (`claims.json`, `{"<room>": <pid>}`): rooms another
/// window on this machine took with `--rooms`. Returns the rooms claimed by
/// a process other than `me` that `alive` says is running. An unreadable
/// file claims nothing (a fallback window then rings for everything, which
/// is the old tools' behaviour, never a silent miss).
pub fn claimed_by_others(
    text: &str,
    me: u32,
    alive: impl Fn(u32) -> bool,
) -> HashSet<ConversationId> {
    let map: BTreeMap<String, u32> = serde_json::from_str(text).unwrap_or_default();
    map.into_iter()
        .filter(|(_, pid)| *pid != me && alive(*pid))
        .filter_map(|(room, _)| room.parse().ok())
        .collect()
}

/// The claims file after this process (`me`) claims `rooms`: dead owners'
/// entries dropped, the rest kept.
pub fn with_claims(
    text: &str,
    me: u32,
    rooms: &[ConversationId],
    alive: impl Fn(u32) -> bool,
) -> BTreeMap<String, u32> {
    let mut map: BTreeMap<String, u32> = serde_json::from_str(text).unwrap_or_default();
    map.retain(|_, pid| *pid != me && alive(*pid));
    for r in rooms {
        map.entry(r.to_string()).or_insert(me);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_from_claude_json_table() {
        let ok = r#"{"mcpServers":{"hoop":{"type":"http","url":"http://127.0.0.1:9/mcp",
            "headers":{"Authorization":"Bearer hoopmcp_abc"}}}}"#;
        let e = from_claude_json(ok).unwrap();
        assert_eq!(e.base_url, "http://127.0.0.1:9");
        assert_eq!(e.key, "hoopmcp_abc");
        assert!(!format!("{e:?}").contains("hoopmcp_abc"), "Debug redacts");
        let cases: &[(&str, ConfigError)] = &[
            (r#"{"mcpServers":{}}"#, ConfigError::NoHoopServer),
            (
                r#"{"mcpServers":{"hoop":{"url":"http://h/mcp"}}}"#,
                ConfigError::NoHoopServer,
            ),
            (
                r#"{"mcpServers":{"hoop":{"url":"http://h/mcp","headers":{"Authorization":"Bearer eyJ.a.b"}}}}"#,
                ConfigError::NotAnMcpKey,
            ),
            (
                r#"{"mcpServers":{"hoop":{"url":"ftp://h","headers":{"Authorization":"Bearer hoopmcp_x"}}}}"#,
                ConfigError::BadUrl("ftp://h".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(from_claude_json(text).unwrap_err(), *want, "{text}");
        }
        assert!(matches!(
            from_claude_json("{"),
            Err(ConfigError::Json { .. })
        ));
    }

    #[test]
    fn key_file_and_base_url() {
        assert_eq!(key_from_file(" hoopmcp_k\n").unwrap(), "hoopmcp_k");
        assert_eq!(key_from_file("Bearer hoopmcp_k").unwrap(), "hoopmcp_k");
        assert_eq!(key_from_file("\n"), Err(ConfigError::EmptyKeyFile));
        assert_eq!(base_of("https://x.test/mcp/").unwrap(), "https://x.test");
        assert_eq!(base_of("http://x.test").unwrap(), "http://x.test");
    }

    #[test]
    fn allowlist_table() {
        let a = Allowlist::parse(r#"{"7":"only:mention","nova_aid":"only:mention"}"#).unwrap();
        // (id, username, want)
        let cases = [
            (7, None, true),
            (8, Some("nova_aid"), true),
            (8, Some("bolt"), false),
            (8, None, false),
        ];
        for (id, name, want) in cases {
            assert_eq!(a.only_mention(id, name), want, "{id} {name:?}");
        }
        assert!(matches!(
            Allowlist::parse(r#"{"7":"everything"}"#),
            Err(ConfigError::Allowlist(_))
        ));
    }

    #[test]
    fn claims_table() {
        let text = r#"{"1": 100, "2": 200, "3": 300, "x": 100}"#;
        let alive = |p: u32| p != 300;
        let got = claimed_by_others(text, 200, alive);
        assert_eq!(
            got,
            HashSet::from([1]),
            "mine and dead owners' are not claims"
        );
        assert!(claimed_by_others("garbage", 1, alive).is_empty());
        let merged = with_claims(text, 200, &[2, 4, 1], alive);
        assert_eq!(merged.get("1"), Some(&100), "a live owner keeps its room");
        assert_eq!(merged.get("2"), Some(&200));
        assert_eq!(merged.get("4"), Some(&200));
        assert_eq!(merged.get("3"), None, "a dead owner's claim is dropped");
    }
}
