//! Per-home switch files: small files in the home whose presence and content
//! change how the agent CLI is driven, read afresh before every turn so an
//! operator (or the sentinel itself) can flip one without a restart.
//!
//! | file | content | effect |
//! |---|---|---|
//! | `persist` | on / off (absent = on) | one persistent process per home, or one process per turn |
//! | `cold_compact` | on / off / a token count ≥ 50,000 (absent or on = 400,000) | `/compact` at startup when the session's context is at least this big |
//! | `autocompact` | on / off / a token count 100,000–1,000,000 (absent or on = 1,000,000) | `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, or `DISABLE_AUTO_COMPACT=1` |
//! | `autocompact_auto_off` | anything (written by the sentinel, with the reason) | autocompact off for this home, whatever `autocompact` says |
//! | `cache_ttl` | `1h` / `5m` (absent = 1h persistent, 5m per turn) | `ENABLE_PROMPT_CACHING_1H=1` for 1h |
//!
//! **One grammar** ([`word`]) reads every on/off/number file, trimmed and
//! case-blind: empty, `on` `1` `true` `yes` `enable` `enabled` mean on
//! (the default); `off` `0` `false` `no` `disable` `disabled` mean off; a
//! token count is digits with optional `_`/`,` separators and a `k`/`m`
//! suffix. The on/off words are read before numbers, so `1` is on, never a
//! one-token threshold. A count below its switch's floor (or above the CLI's
//! cap) is refused with a log line and the default is used.
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
/// (its documented range is 100,000–1,000,000); a smaller value is refused.
pub const AUTOCOMPACT_FLOOR: u64 = 100_000;
/// The smallest cold-compaction threshold taken: below it every restart
/// would pay a summary call to shrink a session that is already small (a
/// fresh session's system prompt and tools alone are ~20,000 tokens), so a
/// smaller value is taken for a typo and refused.
pub const COLD_COMPACT_FLOOR: u64 = 50_000;

/// Environment variables the switches set on the agent process.
pub const ENV_AUTO_COMPACT_WINDOW: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
pub const ENV_DISABLE_AUTO_COMPACT: &str = "DISABLE_AUTO_COMPACT";
pub const ENV_PROMPT_CACHING_1H: &str = "ENABLE_PROMPT_CACHING_1H";
/// The CLI's switch that pins the 5-minute cache; the `cache_ttl` switch
/// decides the lifetime, so it is always removed.
pub const ENV_FORCE_PROMPT_CACHING_5M: &str = "FORCE_PROMPT_CACHING_5M";
/// Every environment variable the switches decide (see
/// [`Switches::child_env`]): whatever else sets them is overridden.
pub const OWNED_ENV: [&str; 4] = [
    ENV_AUTO_COMPACT_WINDOW,
    ENV_DISABLE_AUTO_COMPACT,
    ENV_PROMPT_CACHING_1H,
    ENV_FORCE_PROMPT_CACHING_5M,
];

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

/// What an on/off/number switch file says, in the one grammar they share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Empty or an on word: the switch's default.
    On,
    Off,
    /// A token count.
    Tokens(u64),
    /// Anything else (kept for the log line).
    Unreadable(String),
}

/// Read one switch file's content (see the module header): on/off words
/// first, then a token count.
pub fn word(v: &str) -> Word {
    let t = v.trim();
    match t.to_ascii_lowercase().as_str() {
        "" | "on" | "1" | "true" | "yes" | "enable" | "enabled" => Word::On,
        "off" | "0" | "false" | "no" | "disable" | "disabled" => Word::Off,
        _ => match parse_tokens(t) {
            Some(n) => Word::Tokens(n),
            None => Word::Unreadable(t.to_string()),
        },
    }
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
        let bad = |name: &str, v: &str| {
            format!("switch file {name}: cannot read {v:?}; using the default")
        };
        if let Some(v) = file(PERSIST) {
            match word(&v) {
                Word::On => {}
                Word::Off => s.persist = false,
                Word::Tokens(_) | Word::Unreadable(_) => warnings.push(bad(PERSIST, v.trim())),
            }
        }
        if let Some(v) = file(COLD_COMPACT) {
            match word(&v) {
                Word::On => {}
                Word::Off => s.cold_compact = None,
                Word::Tokens(n) if n >= COLD_COMPACT_FLOOR => s.cold_compact = Some(n),
                Word::Tokens(n) => warnings.push(format!(
                    "switch file {COLD_COMPACT}: {n} tokens is below the floor {COLD_COMPACT_FLOOR}; refused, using the default {COLD_COMPACT_TOKENS}"
                )),
                Word::Unreadable(t) => warnings.push(bad(COLD_COMPACT, &t)),
            }
        }
        if let Some(v) = file(AUTOCOMPACT) {
            match word(&v) {
                Word::On => {}
                Word::Off => s.autocompact = Autocompact::Off,
                Word::Tokens(n) if (AUTOCOMPACT_FLOOR..=AUTOCOMPACT_CEILING).contains(&n) => {
                    s.autocompact = Autocompact::Ceiling(n)
                }
                Word::Tokens(n) => warnings.push(format!(
                    "switch file {AUTOCOMPACT}: {n} tokens is outside {AUTOCOMPACT_FLOOR}–{AUTOCOMPACT_CEILING}; refused, using the default {AUTOCOMPACT_CEILING}"
                )),
                Word::Unreadable(t) => warnings.push(bad(AUTOCOMPACT, &t)),
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
                other => warnings.push(bad(CACHE_TTL, other)),
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

    /// The compaction switches for the `🚀` line (the runbook reads them
    /// there): `cold_compact=<tokens|off> autocompact=<tokens|off>
    /// autocompact_auto_off=<yes|no>`, where `autocompact` is what the file
    /// says and `autocompact_auto_off` whether the sentinel turned it off.
    pub fn describe(&self) -> String {
        let tokens = |n: Option<u64>| n.map_or_else(|| "off".to_string(), |n| n.to_string());
        let ceiling = match self.autocompact {
            Autocompact::Ceiling(c) => Some(c),
            Autocompact::Off => None,
        };
        format!(
            "cold_compact={} autocompact={} autocompact_auto_off={}",
            tokens(self.cold_compact),
            tokens(ceiling),
            if self.autocompact_auto_off {
                "yes"
            } else {
                "no"
            }
        )
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

    /// The agent's environment for every knob the switches own, one entry
    /// per [`OWNED_ENV`] name: `Some(value)` to set, `None` to remove. Set
    /// explicitly every turn, so neither the daemon's inherited environment
    /// nor the home's configured `env` can override a switch.
    pub fn child_env(&self) -> Vec<(&'static str, Option<String>)> {
        let (window, disable) = match self.effective_autocompact() {
            Autocompact::Ceiling(c) => (Some(c.to_string()), None),
            Autocompact::Off => (None, Some("1".to_string())),
        };
        let one_hour = (self.cache_ttl == CacheTtl::OneHour).then(|| "1".to_string());
        vec![
            (ENV_AUTO_COMPACT_WINDOW, window),
            (ENV_DISABLE_AUTO_COMPACT, disable),
            (ENV_PROMPT_CACHING_1H, one_hour),
            (ENV_FORCE_PROMPT_CACHING_5M, None),
        ]
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

    const ON: &[&str] = &[
        "", "\n", "on", "On", "ON\n", " 1 ", "true", "TRUE", "yes", "enable", "enabled",
    ];
    const OFF: &[&str] = &[
        "off", "OFF\n", "0", " 0\n", "false", "False", "no", "disable", "disabled",
    ];
    const UNREADABLE: &[&str] = &["banana", "onn", "1.5k", "-5", "k", "1h", "maybe"];

    #[test]
    fn the_one_grammar_reads_on_words_before_numbers() {
        for v in ON {
            assert_eq!(word(v), Word::On, "{v:?}");
        }
        for v in OFF {
            assert_eq!(word(v), Word::Off, "{v:?}");
        }
        for (v, n) in [
            ("2", 2),
            ("400000", 400_000),
            ("400_000", 400_000),
            ("400,000\n", 400_000),
            ("250k", 250_000),
            ("250K", 250_000),
            ("1m", 1_000_000),
        ] {
            assert_eq!(word(v), Word::Tokens(n), "{v:?}");
        }
        for v in UNREADABLE {
            assert!(matches!(word(v), Word::Unreadable(_)), "{v:?}");
        }
    }

    /// Every spelling of every on/off/number switch file: the switch it
    /// gives and whether it is refused with a log line.
    #[test]
    fn every_spelling_of_every_switch() {
        let d = Switches::default();
        // (file, content, switches, warned)
        let mut cases: Vec<(&str, &str, Switches, bool)> = vec![];
        let per_turn = Switches {
            persist: false,
            cache_ttl: CacheTtl::FiveMinutes,
            ..d.clone()
        };
        for v in ON {
            cases.push((PERSIST, v, d.clone(), false));
            cases.push((COLD_COMPACT, v, d.clone(), false));
            cases.push((AUTOCOMPACT, v, d.clone(), false));
        }
        for v in OFF {
            cases.push((PERSIST, v, per_turn.clone(), false));
            let cold_off = Switches {
                cold_compact: None,
                ..d.clone()
            };
            cases.push((COLD_COMPACT, v, cold_off, false));
            let auto_off = Switches {
                autocompact: Autocompact::Off,
                ..d.clone()
            };
            cases.push((AUTOCOMPACT, v, auto_off, false));
        }
        for v in UNREADABLE {
            for f in [PERSIST, COLD_COMPACT, AUTOCOMPACT] {
                cases.push((f, v, d.clone(), true));
            }
        }
        // A number is no word for persist.
        cases.push((PERSIST, "400000", d.clone(), true));
        let cold = |n| Switches {
            cold_compact: Some(n),
            ..d.clone()
        };
        for (v, c) in [
            ("2", None),
            ("49999", None),
            ("50000", Some(50_000)),
            ("50k", Some(50_000)),
            ("300_000", Some(300_000)),
            ("250k", Some(250_000)),
            ("2m", Some(2_000_000)),
        ] {
            match c {
                Some(n) => cases.push((COLD_COMPACT, v, cold(n), false)),
                None => cases.push((COLD_COMPACT, v, d.clone(), true)),
            }
        }
        let ceiling = |n| Switches {
            autocompact: Autocompact::Ceiling(n),
            ..d.clone()
        };
        for (v, c) in [
            ("2", None),
            ("5", None),
            ("99999", None),
            ("100000", Some(100_000)),
            ("100k", Some(100_000)),
            ("200000", Some(200_000)),
            ("1m", Some(1_000_000)),
            ("1000001", None),
            ("9m", None),
        ] {
            match c {
                Some(n) => cases.push((AUTOCOMPACT, v, ceiling(n), false)),
                None => cases.push((AUTOCOMPACT, v, d.clone(), true)),
            }
        }
        for (file, v, want, warned) in cases {
            let (got, warnings) = parse(&[(file, v)]);
            assert_eq!(got, want, "{file} = {v:?}");
            assert_eq!(
                warnings.len(),
                usize::from(warned),
                "{file} = {v:?}: {warnings:?}"
            );
        }
    }

    #[test]
    fn env_sets_every_owned_knob_and_auto_off_wins() {
        let env = |s: &Switches| {
            s.child_env()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Vec<_>>()
        };
        let knob = |k: &str, v: Option<&str>| (k.to_string(), v.map(str::to_string));
        let d = Switches::default();
        assert_eq!(
            env(&d),
            vec![
                knob(ENV_AUTO_COMPACT_WINDOW, Some("1000000")),
                knob(ENV_DISABLE_AUTO_COMPACT, None),
                knob(ENV_PROMPT_CACHING_1H, Some("1")),
                knob(ENV_FORCE_PROMPT_CACHING_5M, None),
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
            vec![
                knob(ENV_AUTO_COMPACT_WINDOW, None),
                knob(ENV_DISABLE_AUTO_COMPACT, Some("1")),
                knob(ENV_PROMPT_CACHING_1H, None),
                knob(ENV_FORCE_PROMPT_CACHING_5M, None),
            ]
        );
        assert_eq!(off.ceiling(), None);
        // Every owned name, and only those, in every case.
        for s in [&d, &off] {
            let names: Vec<&str> = s.child_env().into_iter().map(|(k, _)| k).collect();
            assert_eq!(names, OWNED_ENV);
        }
    }

    #[test]
    fn the_rocket_line_names_the_compaction_switches() {
        let cases = [
            (
                vec![],
                "cold_compact=400000 autocompact=1000000 autocompact_auto_off=no",
            ),
            (
                vec![("cold_compact", "250k"), ("autocompact", "300000")],
                "cold_compact=250000 autocompact=300000 autocompact_auto_off=no",
            ),
            (
                vec![("cold_compact", "off"), ("autocompact", "off")],
                "cold_compact=off autocompact=off autocompact_auto_off=no",
            ),
            (
                vec![("autocompact", "200000"), ("autocompact_auto_off", "why")],
                "cold_compact=400000 autocompact=200000 autocompact_auto_off=yes",
            ),
        ];
        for (files, want) in cases {
            assert_eq!(parse(&files).0.describe(), want, "{files:?}");
        }
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
