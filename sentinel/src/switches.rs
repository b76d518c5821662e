//! Per-home switch files: small files in the home whose presence and content
//! change how the agent CLI is driven, read afresh before every turn so an
//! operator (or the sentinel itself) can flip one without a restart.
//!
//! | file | content | effect |
//! |---|---|---|
//! | `persist` | `off` / `on` (absent = on) | one persistent process per home, or one process per turn |
//! | `cold_compact` | a token count, or `off` (absent = 400,000) | `/compact` before the first turn of a cold process when the context is at least this big |
//! | `autocompact` | a token count (100,000–1,000,000), or `off` (absent = 1,000,000) | `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, or `DISABLE_AUTO_COMPACT=1` |
//! | `autocompact_auto_off` | anything (written by the sentinel, with the reason) | autocompact off for this home, whatever `autocompact` says |
//! | `cache_ttl` | `1h` / `5m` (absent = 1h persistent, 5m per turn) | `ENABLE_PROMPT_CACHING_1H=1` for 1h |
//!
//! A value that cannot be read is reported and the default is used: a typo in
//! a switch must never stop the agent.

use hoop_core::home::Home;
use hoop_core::limits::{AUTOCOMPACT_CEILING, COLD_COMPACT_TOKENS};

/// Switch file names.
pub const PERSIST: &str = "persist";
pub const COLD_COMPACT: &str = "cold_compact";
pub const AUTOCOMPACT: &str = "autocompact";
pub const AUTOCOMPACT_AUTO_OFF: &str = "autocompact_auto_off";
pub const CACHE_TTL: &str = "cache_ttl";
/// Every switch file, in the order the table above lists them.
pub const ALL: [&str; 5] = [
    PERSIST,
    COLD_COMPACT,
    AUTOCOMPACT,
    AUTOCOMPACT_AUTO_OFF,
    CACHE_TTL,
];

/// The smallest window the CLI accepts in `CLAUDE_CODE_AUTO_COMPACT_WINDOW`
/// (its documented range is 100,000–1,000,000); smaller values are raised.
pub const AUTOCOMPACT_FLOOR: u64 = 100_000;

/// Environment variables the switches set on the agent process.
pub const ENV_AUTO_COMPACT_WINDOW: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
pub const ENV_DISABLE_AUTO_COMPACT: &str = "DISABLE_AUTO_COMPACT";
pub const ENV_PROMPT_CACHING_1H: &str = "ENABLE_PROMPT_CACHING_1H";

/// The CLI's autocompact setting for a home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autocompact {
    /// Compact automatically near this many tokens.
    Ceiling(u64),
    Off,
}

/// Prompt-cache lifetime the agent asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheTtl {
    OneHour,
    FiveMinutes,
}

/// All switches of a home, as read before one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switches {
    pub persist: bool,
    /// `None` = cold compaction disabled.
    pub cold_compact: Option<u64>,
    /// What the `autocompact` file says (before `autocompact_auto_off`).
    pub autocompact: Autocompact,
    /// The sentinel found the ceiling below the real context.
    pub autocompact_auto_off: bool,
    pub cache_ttl: CacheTtl,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            persist: true,
            cold_compact: Some(COLD_COMPACT_TOKENS),
            autocompact: Autocompact::Ceiling(AUTOCOMPACT_CEILING),
            autocompact_auto_off: false,
            cache_ttl: CacheTtl::OneHour,
        }
    }
}

fn is_off(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "off" | "0" | "false" | "no" | "disable" | "disabled"
    )
}

fn is_on(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "" | "on" | "1" | "true" | "yes" | "enable" | "enabled"
    )
}

/// A token count: digits with optional `_`/`,` separators and an optional
/// `k`/`m` suffix (`400000`, `400_000`, `400k`, `1m`).
pub fn parse_tokens(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let (digits, mult) = match v.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match v.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (v.as_str(), 1),
        },
    };
    let digits: String = digits.chars().filter(|c| !matches!(c, '_' | ',')).collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

impl Switches {
    /// Decide the switches from the files' contents (`None` = file absent).
    /// Returns the switches and one warning per unreadable value.
    pub fn parse(file: impl Fn(&str) -> Option<String>) -> (Switches, Vec<String>) {
        let mut s = Switches::default();
        let mut warnings = Vec::new();
        let mut bad = |name: &str, v: &str| {
            warnings.push(format!(
                "switch file {name}: cannot read {v:?}; using the default"
            ))
        };
        if let Some(v) = file(PERSIST) {
            let v = v.trim();
            if is_off(v) {
                s.persist = false;
            } else if !is_on(v) {
                bad(PERSIST, v);
            }
        }
        if let Some(v) = file(COLD_COMPACT) {
            let v = v.trim();
            if is_off(v) {
                s.cold_compact = None;
            } else if let Some(n) = parse_tokens(v) {
                s.cold_compact = Some(n);
            } else if !is_on(v) {
                bad(COLD_COMPACT, v);
            }
        }
        if let Some(v) = file(AUTOCOMPACT) {
            let v = v.trim();
            if is_off(v) {
                s.autocompact = Autocompact::Off;
            } else if let Some(n) = parse_tokens(v) {
                s.autocompact =
                    Autocompact::Ceiling(n.clamp(AUTOCOMPACT_FLOOR, AUTOCOMPACT_CEILING));
            } else if !is_on(v) {
                bad(AUTOCOMPACT, v);
            }
        }
        s.autocompact_auto_off = file(AUTOCOMPACT_AUTO_OFF).is_some();
        s.cache_ttl = if s.persist {
            CacheTtl::OneHour
        } else {
            CacheTtl::FiveMinutes
        };
        if let Some(v) = file(CACHE_TTL) {
            match v.trim().to_ascii_lowercase().as_str() {
                "1h" | "60m" | "3600" | "3600s" | "1hour" => s.cache_ttl = CacheTtl::OneHour,
                "5m" | "300" | "300s" | "5min" => s.cache_ttl = CacheTtl::FiveMinutes,
                "" => {}
                other => bad(CACHE_TTL, other),
            }
        }
        (s, warnings)
    }

    /// Read the switch files of `home` now. Never fails: an unreadable file
    /// counts as absent (and is logged), a bad value as its default.
    pub fn read(home: &Home) -> Switches {
        let (s, warnings) = Switches::parse(|name| {
            match std::fs::read_to_string(home.switch_path(name)) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    tracing::warn!(switch = name, error = %e, "switch file unreadable; treated as absent");
                    None
                }
            }
        });
        for w in warnings {
            tracing::warn!("{w}");
        }
        s
    }

    /// The autocompact setting in force: `autocompact_auto_off` wins.
    pub fn effective_autocompact(&self) -> Autocompact {
        if self.autocompact_auto_off {
            Autocompact::Off
        } else {
            self.autocompact
        }
    }

    /// The ceiling in force, if autocompact is on.
    pub fn ceiling(&self) -> Option<u64> {
        match self.effective_autocompact() {
            Autocompact::Ceiling(c) => Some(c),
            Autocompact::Off => None,
        }
    }

    /// Environment the switches put on the agent process.
    pub fn child_env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        match self.effective_autocompact() {
            Autocompact::Ceiling(c) => env.push((ENV_AUTO_COMPACT_WINDOW.into(), c.to_string())),
            Autocompact::Off => env.push((ENV_DISABLE_AUTO_COMPACT.into(), "1".into())),
        }
        if self.cache_ttl == CacheTtl::OneHour {
            env.push((ENV_PROMPT_CACHING_1H.into(), "1".into()));
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(files: &[(&str, &str)]) -> (Switches, Vec<String>) {
        let m: HashMap<String, String> = files
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Switches::parse(|n| m.get(n).cloned())
    }

    #[test]
    fn switch_table() {
        let d = Switches::default();
        let cases: Vec<(Vec<(&str, &str)>, Switches)> = vec![
            (vec![], d.clone()),
            (
                vec![("persist", "off\n")],
                Switches {
                    persist: false,
                    cache_ttl: CacheTtl::FiveMinutes,
                    ..d.clone()
                },
            ),
            (vec![("persist", "")], d.clone()),
            (
                vec![("persist", "off"), ("cache_ttl", "1h")],
                Switches {
                    persist: false,
                    ..d.clone()
                },
            ),
            (
                vec![("cache_ttl", "5m")],
                Switches {
                    cache_ttl: CacheTtl::FiveMinutes,
                    ..d.clone()
                },
            ),
            (
                vec![("cold_compact", "off")],
                Switches {
                    cold_compact: None,
                    ..d.clone()
                },
            ),
            (
                vec![("cold_compact", "250k")],
                Switches {
                    cold_compact: Some(250_000),
                    ..d.clone()
                },
            ),
            (
                vec![("cold_compact", "300_000")],
                Switches {
                    cold_compact: Some(300_000),
                    ..d.clone()
                },
            ),
            (
                vec![("autocompact", "off")],
                Switches {
                    autocompact: Autocompact::Off,
                    ..d.clone()
                },
            ),
            (
                vec![("autocompact", "200000")],
                Switches {
                    autocompact: Autocompact::Ceiling(200_000),
                    ..d.clone()
                },
            ),
            (
                vec![("autocompact", "5")],
                Switches {
                    autocompact: Autocompact::Ceiling(AUTOCOMPACT_FLOOR),
                    ..d.clone()
                },
            ),
            (
                vec![("autocompact", "9m")],
                Switches {
                    autocompact: Autocompact::Ceiling(AUTOCOMPACT_CEILING),
                    ..d.clone()
                },
            ),
            (
                vec![("autocompact_auto_off", "")],
                Switches {
                    autocompact_auto_off: true,
                    ..d.clone()
                },
            ),
        ];
        for (files, want) in cases {
            let (got, warnings) = parse(&files);
            assert_eq!(got, want, "{files:?}");
            assert!(warnings.is_empty(), "{files:?}: {warnings:?}");
        }
    }

    #[test]
    fn bad_values_warn_and_keep_the_default() {
        for f in ["persist", "cold_compact", "autocompact", "cache_ttl"] {
            let (got, warnings) = parse(&[(f, "banana")]);
            assert_eq!(got, Switches::default(), "{f}");
            assert_eq!(warnings.len(), 1, "{f}");
        }
    }

    #[test]
    fn env_follows_the_switches_and_auto_off_wins() {
        let env = |s: &Switches| s.child_env();
        let d = Switches::default();
        assert_eq!(
            env(&d),
            vec![
                (ENV_AUTO_COMPACT_WINDOW.to_string(), "1000000".to_string()),
                (ENV_PROMPT_CACHING_1H.to_string(), "1".to_string())
            ]
        );
        let off = Switches {
            autocompact_auto_off: true,
            autocompact: Autocompact::Ceiling(200_000),
            cache_ttl: CacheTtl::FiveMinutes,
            ..d
        };
        assert_eq!(
            env(&off),
            vec![(ENV_DISABLE_AUTO_COMPACT.to_string(), "1".to_string())]
        );
        assert_eq!(off.ceiling(), None);
    }

    #[test]
    fn token_counts() {
        for (s, want) in [
            ("400000", Some(400_000)),
            ("400k", Some(400_000)),
            ("1m", Some(1_000_000)),
            ("1,000", Some(1000)),
            ("", None),
            ("k", None),
            ("-5", None),
            ("1.5k", None),
        ] {
            assert_eq!(parse_tokens(s), want, "{s}");
        }
    }
}
