//! Model prices in USD per million tokens: the table shipped in the binary
//! (no fetch at run time), and the user's own additions and corrections in
//! `<hoop root>/prices.json` ([`PriceBook::load`]), which win over it. A
//! model that neither knows has NO price: its cost is unknown and reported
//! as such, never $0.
//!
//! Sources, checked on [`PRICES_CHECKED`]: Anthropic's pricing page
//! (<https://platform.claude.com/docs/en/about-claude/pricing>, "Model
//! pricing" and "Long context pricing") and the model pages
//! (`https://platform.claude.com/docs/en/models/<model>/overview`, section
//! "Pricing"). Each row of [`TABLE`] names its page.
//!
//! Prompt-size tiers: some models bill a request whose prompt (input + cache
//! writes + cache reads) is above a threshold at other rates, on EVERY token
//! of that request, output included ([`Tier`]):
//! - Sonnet 4 and Sonnet 4.5 with the 1M-token context window (the beta
//!   `context-1m-2025-08-07`, which Claude Code sends on every request):
//!   above 200,000 input tokens, input $6 and output $22.50 instead of $3 and
//!   $15 — the pricing page's "Long context pricing" table — with the
//!   prompt-caching multipliers (5-minute write 1.25×, 1-hour write 2×, read
//!   0.1× the input rate) applied on top, as that section says. ccusage
//!   20.0.24 charges the premium only on each token kind's part past 200K,
//!   which is the whole difference between the two meters' costs (see
//!   `meter/README.md`).
//! - Haiku 5.5: above 100,000 prompt tokens, 5× every rate (its model page
//!   lists both bands).
//!
//! Later models (Opus 4.6+, Sonnet 4.6+, the 5 generation but Haiku 5.5)
//! bill their whole 1M context at one rate.
//!
//! Dated prices: a row may apply from a date on ([`Row::from_ms`]); an API
//! response is priced by the row in force at its timestamp.

use std::path::Path;

use hoop_core::transcript::Usage;
use serde::Deserialize;
use thiserror::Error;

/// The day the table was last checked against the pages above.
pub const PRICES_CHECKED: &str = "2026-12-04";

/// The override file's name under the hoop root.
pub const PRICES_FILE: &str = "prices.json";

/// Largest override file read (a price list is a few kB; anything bigger is
/// not one).
pub const PRICES_FILE_MAX_BYTES: u64 = 1 << 20;

/// The five rates of one band, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerMTok {
    pub input: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
}

/// A prompt-size band: a request whose prompt (input + cache writes +
/// cache reads) is above `above` tokens pays `rates` on all its tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tier {
    pub above: u64,
    pub rates: PerMTok,
}

/// The price of one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub base: PerMTok,
    pub tier: Option<Tier>,
}

/// Sonnet 4 / 4.5's long-context threshold (pricing page, "Long context
/// pricing": "> 200K input tokens").
pub const SONNET_4_LONG_CONTEXT_ABOVE: u64 = 200_000;
/// Haiku 5.5's upper band starts above this prompt size (model page:
/// "for prompts over 100,000 tokens").
pub const HAIKU_5_5_TIER_ABOVE: u64 = 100_000;

const fn r(input: f64, w5: f64, w1: f64, read: f64, output: f64) -> PerMTok {
    PerMTok {
        input,
        cache_write_5m: w5,
        cache_write_1h: w1,
        cache_read: read,
        output,
    }
}

const fn flat(rates: PerMTok) -> Price {
    Price {
        base: rates,
        tier: None,
    }
}

// Bands, as their pages list them.
const FABLE_5_2: PerMTok = r(8.0, 10.0, 16.0, 0.20, 40.0);
const FABLE_5_1: PerMTok = r(10.0, 12.50, 20.0, 0.25, 50.0);
const FABLE_5: PerMTok = r(10.0, 12.50, 20.0, 1.0, 50.0);
const OPUS_5_5: PerMTok = r(4.0, 5.0, 8.0, 0.20, 20.0);
const OPUS_4_5_TO_5: PerMTok = r(5.0, 6.25, 10.0, 0.50, 25.0);
const OPUS_LEGACY: PerMTok = r(15.0, 18.75, 30.0, 1.50, 75.0);
const SONNET_5_5_LAUNCH: PerMTok = r(2.0, 2.50, 4.0, 0.20, 10.0);
const SONNET_5_5: PerMTok = r(2.0, 2.50, 4.0, 0.10, 10.0);
const SONNET_5: PerMTok = r(2.0, 2.50, 4.0, 0.20, 10.0);
const SONNET_3_TO_4_6: PerMTok = r(3.0, 3.75, 6.0, 0.30, 15.0);
const SONNET_4_LONG: PerMTok = r(6.0, 7.50, 12.0, 0.60, 22.50);
const HAIKU_5_5: PerMTok = r(0.10, 0.125, 0.20, 0.01, 0.50);
const HAIKU_5_5_LONG: PerMTok = r(0.50, 0.625, 1.0, 0.05, 2.50);
const HAIKU_4_5: PerMTok = r(1.0, 1.25, 2.0, 0.10, 5.0);
const HAIKU_3_5: PerMTok = r(0.80, 1.0, 1.6, 0.08, 4.0);
const HAIKU_3: PerMTok = r(0.25, 0.30, 0.50, 0.03, 1.25);

const SONNET_4_1M: Price = Price {
    base: SONNET_3_TO_4_6,
    tier: Some(Tier {
        above: SONNET_4_LONG_CONTEXT_ABOVE,
        rates: SONNET_4_LONG,
    }),
};
const HAIKU_5_5_TIERED: Price = Price {
    base: HAIKU_5_5,
    tier: Some(Tier {
        above: HAIKU_5_5_TIER_ABOVE,
        rates: HAIKU_5_5_LONG,
    }),
};

/// 2026-10-07T00:00:00Z: Sonnet 5.5's cache reads went from $0.20 to $0.10.
pub const SONNET_5_5_READ_CUT_MS: i64 = 1_791_331_200_000;

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The model id (see [`lookup`] for how ids match).
    pub id: &'static str,
    /// Applies to responses at or after this Unix millisecond
    /// (`i64::MIN`: always). Rows of one id are listed newest first.
    pub from_ms: i64,
    pub price: Price,
    /// Where the price is published.
    pub source: &'static str,
}

const fn row(id: &'static str, price: Price, source: &'static str) -> Row {
    Row {
        id,
        from_ms: i64::MIN,
        price,
        source,
    }
}

const PRICING_PAGE: &str = "platform.claude.com/docs/en/about-claude/pricing";

/// The shipped table. A model id matches a row when, after normalisation
/// (see [`normalise`]), it is the row's id or the id plus a `-YYYYMMDD`
/// snapshot date: `claude-sonnet-5-5` is NOT `claude-sonnet-5`.
pub const TABLE: &[Row] = &[
    row(
        "claude-fable-5-2",
        flat(FABLE_5_2),
        "models/fable-5-2/overview (released 2026-11-09)",
    ),
    row(
        "claude-mythos-5-2",
        flat(FABLE_5_2),
        "models/fable-5-2/overview (Mythos shares Fable's prices)",
    ),
    row("claude-fable-5-1", flat(FABLE_5_1), PRICING_PAGE),
    row("claude-mythos-5-1", flat(FABLE_5_1), PRICING_PAGE),
    row("claude-fable-5", flat(FABLE_5), PRICING_PAGE),
    row("claude-mythos-5", flat(FABLE_5), PRICING_PAGE),
    row(
        "claude-opus-5-5",
        flat(OPUS_5_5),
        "models/opus-5-5/overview",
    ),
    row(
        "claude-opus-5",
        flat(OPUS_4_5_TO_5),
        "models/opus-5/overview",
    ),
    row("claude-opus-4-8", flat(OPUS_4_5_TO_5), PRICING_PAGE),
    row("claude-opus-4-7", flat(OPUS_4_5_TO_5), PRICING_PAGE),
    row("claude-opus-4-6", flat(OPUS_4_5_TO_5), PRICING_PAGE),
    row("claude-opus-4-5", flat(OPUS_4_5_TO_5), PRICING_PAGE),
    row("claude-opus-4-1", flat(OPUS_LEGACY), PRICING_PAGE),
    row("claude-opus-4", flat(OPUS_LEGACY), PRICING_PAGE),
    row("claude-3-opus", flat(OPUS_LEGACY), PRICING_PAGE),
    Row {
        id: "claude-sonnet-5-5",
        from_ms: SONNET_5_5_READ_CUT_MS,
        price: flat(SONNET_5_5),
        source: "pricing page from 2026-10-07 (cache reads $0.20 → $0.10)",
    },
    row(
        "claude-sonnet-5-5",
        flat(SONNET_5_5_LAUNCH),
        "models/sonnet-5-5/overview (launch)",
    ),
    row(
        "claude-sonnet-5",
        flat(SONNET_5),
        "models/sonnet-5/overview",
    ),
    row("claude-sonnet-4-6", flat(SONNET_3_TO_4_6), PRICING_PAGE),
    row("claude-sonnet-4-5", SONNET_4_1M, PRICING_PAGE),
    row("claude-sonnet-4", SONNET_4_1M, PRICING_PAGE),
    row("claude-3-7-sonnet", flat(SONNET_3_TO_4_6), PRICING_PAGE),
    row("claude-3-5-sonnet", flat(SONNET_3_TO_4_6), PRICING_PAGE),
    row(
        "claude-haiku-5-5",
        HAIKU_5_5_TIERED,
        "models/haiku-5-5/overview (released 2026-10-07)",
    ),
    row("claude-haiku-4-5", flat(HAIKU_4_5), PRICING_PAGE),
    row("claude-3-5-haiku", flat(HAIKU_3_5), PRICING_PAGE),
    row("claude-3-haiku", flat(HAIKU_3), PRICING_PAGE),
];

/// Model id as the table keys it: lower case, without a provider prefix
/// (`anthropic/`, `us.anthropic.`), a context tag (`[1m]`) or a Bedrock
/// version suffix (`-v1:0`).
pub fn normalise(model: &str) -> String {
    let mut m = model.trim().to_ascii_lowercase();
    if let Some(i) = m.find('[') {
        m.truncate(i);
    }
    for pre in ["anthropic/", "anthropic."] {
        if let Some(i) = m.find(pre) {
            m = m[i + pre.len()..].to_string();
        }
    }
    if let Some(i) = m.find("-v1") {
        m.truncate(i);
    }
    if let Some(i) = m.find('@') {
        m.truncate(i);
    }
    m
}

/// Whether the normalised id `m` names model `id`: equal, or `id` followed
/// by a `-YYYYMMDD` snapshot date.
fn names(m: &str, id: &str) -> bool {
    m.strip_prefix(id).is_some_and(|rest| {
        rest.is_empty()
            || rest
                .strip_prefix('-')
                .is_some_and(|d| d.len() >= 8 && d.as_bytes()[..8].iter().all(u8::is_ascii_digit))
    })
}

/// The shipped price of `model` for a response at `ts_ms`, or `None` when
/// the table does not know the model.
pub fn lookup(model: &str, ts_ms: i64) -> Option<Price> {
    PriceBook::builtin().lookup(model, ts_ms)
}

/// A price in force from a time on: `(from_ms, price)`.
pub type Period = (i64, Price);

/// The shipped table plus the user's overrides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceBook {
    /// Normalised model id → price, from the override file (all dates).
    overrides: Vec<(String, Price)>,
}

/// Why the override file cannot be used.
#[derive(Debug, Error)]
pub enum PriceFileError {
    #[error("{path}: {source}")]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is larger than {PRICES_FILE_MAX_BYTES} bytes; it is not a price list")]
    TooLarge { path: std::path::PathBuf },
    #[error(
        "{path}: {source} — expected {{\"<model id>\": {{\"input\": 3, \"output\": 15, \
         \"cache_write_5m\": 3.75, \"cache_write_1h\": 6, \"cache_read\": 0.3}}}} in USD per \
         million tokens (optionally \"above\": {{\"prompt_tokens\": N, <the five rates>}}); fix \
         or remove the file"
    )]
    Json {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: model {model:?}: {why}; fix or remove the file")]
    Invalid {
        path: std::path::PathBuf,
        model: String,
        why: String,
    },
}

/// One model in the override file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    input: f64,
    cache_write_5m: f64,
    cache_write_1h: f64,
    cache_read: f64,
    output: f64,
    #[serde(default)]
    above: Option<FileTier>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTier {
    prompt_tokens: u64,
    input: f64,
    cache_write_5m: f64,
    cache_write_1h: f64,
    cache_read: f64,
    output: f64,
}

fn valid(rates: &PerMTok) -> Result<(), String> {
    for (name, v) in [
        ("input", rates.input),
        ("cache_write_5m", rates.cache_write_5m),
        ("cache_write_1h", rates.cache_write_1h),
        ("cache_read", rates.cache_read),
        ("output", rates.output),
    ] {
        if !v.is_finite() || !(0.0..=MAX_RATE_PER_MTOK).contains(&v) {
            return Err(format!(
                "{name} is {v}, not a price between 0 and {MAX_RATE_PER_MTOK} USD per million tokens"
            ));
        }
    }
    Ok(())
}

/// The largest rate accepted from the override file: far above any
/// published price, low enough that no sum of costs can overflow.
pub const MAX_RATE_PER_MTOK: f64 = 10_000.0;

impl PriceBook {
    /// The shipped table alone.
    pub fn builtin() -> PriceBook {
        PriceBook::default()
    }

    /// Parse the override file's bytes.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<PriceBook, PriceFileError> {
        let raw: std::collections::BTreeMap<String, FileEntry> = serde_json::from_slice(bytes)
            .map_err(|source| PriceFileError::Json {
                path: path.to_path_buf(),
                source,
            })?;
        let mut overrides = Vec::with_capacity(raw.len());
        for (model, e) in raw {
            let invalid = |why: String| PriceFileError::Invalid {
                path: path.to_path_buf(),
                model: model.clone(),
                why,
            };
            let id = normalise(&model);
            if id.is_empty() {
                return Err(invalid("an empty model id".into()));
            }
            let base = r(
                e.input,
                e.cache_write_5m,
                e.cache_write_1h,
                e.cache_read,
                e.output,
            );
            valid(&base).map_err(invalid)?;
            let tier = match e.above {
                None => None,
                Some(t) => {
                    let rates = r(
                        t.input,
                        t.cache_write_5m,
                        t.cache_write_1h,
                        t.cache_read,
                        t.output,
                    );
                    valid(&rates).map_err(|w| invalid(format!("above: {w}")))?;
                    Some(Tier {
                        above: t.prompt_tokens,
                        rates,
                    })
                }
            };
            overrides.push((id, Price { base, tier }));
        }
        // Longest id first, so `claude-x-5-5` is tried before `claude-x-5`.
        overrides.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Ok(PriceBook { overrides })
    }

    /// Load `<path>`; an absent file is the shipped table alone.
    pub fn load(path: &Path) -> Result<PriceBook, PriceFileError> {
        use std::io::Read;
        let f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PriceBook::builtin());
            }
            Err(source) => {
                return Err(PriceFileError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let mut bytes = Vec::new();
        f.take(PRICES_FILE_MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| PriceFileError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        if bytes.len() as u64 > PRICES_FILE_MAX_BYTES {
            return Err(PriceFileError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        PriceBook::parse(path, &bytes)
    }

    /// Every price `model` has had, newest first (empty: unknown). An
    /// override applies at every date.
    pub fn schedule(&self, model: &str) -> Vec<Period> {
        let m = normalise(model);
        if let Some((_, p)) = self.overrides.iter().find(|(id, _)| names(&m, id)) {
            return vec![(i64::MIN, *p)];
        }
        // The longest matching id wins (a date suffix never lands on a
        // neighbour: see `names`), then its rows newest first.
        let Some(best) = TABLE
            .iter()
            .filter(|row| names(&m, row.id))
            .map(|row| row.id)
            .max_by_key(|id| id.len())
        else {
            return Vec::new();
        };
        TABLE
            .iter()
            .filter(|row| row.id == best)
            .map(|row| (row.from_ms, row.price))
            .collect()
    }

    /// The price of `model` for a response at `ts_ms`.
    pub fn lookup(&self, model: &str, ts_ms: i64) -> Option<Price> {
        price_at(&self.schedule(model), ts_ms)
    }
}

/// The price in force at `ts_ms` in a newest-first schedule.
pub fn price_at(schedule: &[Period], ts_ms: i64) -> Option<Price> {
    schedule
        .iter()
        .find(|(from, _)| *from <= ts_ms)
        .map(|(_, p)| *p)
}

/// Costs are summed as exact integers of this many units per USD (rates
/// have at most 4 decimals per MTok), so a sum never depends on the order
/// its terms were added in.
pub const COST_UNITS_PER_USD: f64 = 1e10;

/// Integer units per token for a rate per MTok (rounded to 1/10,000 USD
/// per MTok, finer than any published price).
fn units(rate: f64) -> u128 {
    (rate * 10_000.0).round() as u128
}

fn band_units(p: &PerMTok) -> [u128; 5] {
    [
        units(p.input),
        units(p.cache_write_5m),
        units(p.cache_write_1h),
        units(p.cache_read),
        units(p.output),
    ]
}

/// A price turned into integer units per token, once per model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    /// input, 5m write (and unsplit), 1h write, read, output.
    base: [u128; 5],
    tier: Option<(u64, [u128; 5])>,
}

impl Rates {
    pub fn of(p: &Price) -> Rates {
        Rates {
            base: band_units(&p.base),
            tier: p.tier.map(|t| (t.above, band_units(&t.rates))),
        }
    }

    /// Exact cost of one response, in 1/[`COST_UNITS_PER_USD`] USD.
    pub fn cost_units(&self, u: &Usage) -> u128 {
        let prompt = u
            .input
            .saturating_add(u.cache_write())
            .saturating_add(u.cache_read);
        let r = match &self.tier {
            Some((above, rates)) if prompt > *above => rates,
            _ => &self.base,
        };
        u.input as u128 * r[0]
            + (u.cache_write_5m as u128 + u.cache_write_unsplit as u128) * r[1]
            + u.cache_write_1h as u128 * r[2]
            + u.cache_read as u128 * r[3]
            + u.output as u128 * r[4]
    }
}

/// Exact cost of one response at `price`, in 1/[`COST_UNITS_PER_USD`] USD.
pub fn cost_units(price: &Price, u: &Usage) -> u128 {
    Rates::of(price).cost_units(u)
}

/// USD cost of one response at `price`.
pub fn cost(price: &Price, u: &Usage) -> f64 {
    cost_units(price, u) as f64 / COST_UNITS_PER_USD
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(input: u64, w5: u64, w1: u64, unsplit: u64, read: u64, output: u64) -> Usage {
        Usage {
            input,
            cache_write_5m: w5,
            cache_write_1h: w1,
            cache_write_unsplit: unsplit,
            cache_read: read,
            output,
        }
    }

    /// 2026-12-04, a day every current row applies to.
    const NOW: i64 = 1_796_342_400_000;

    /// Every row of the table, every rate, written out as the pages list
    /// them: (model, input, 5m write, 1h write, cache read, output). Two
    /// models with the same input rate differ in another column here, so
    /// a row pointing at the wrong band fails.
    const PUBLISHED: &[(&str, [f64; 5])] = &[
        ("claude-fable-5-2", [8.0, 10.0, 16.0, 0.20, 40.0]),
        ("claude-mythos-5-2", [8.0, 10.0, 16.0, 0.20, 40.0]),
        ("claude-fable-5-1", [10.0, 12.50, 20.0, 0.25, 50.0]),
        ("claude-mythos-5-1", [10.0, 12.50, 20.0, 0.25, 50.0]),
        ("claude-fable-5", [10.0, 12.50, 20.0, 1.0, 50.0]),
        ("claude-mythos-5", [10.0, 12.50, 20.0, 1.0, 50.0]),
        ("claude-opus-5-5", [4.0, 5.0, 8.0, 0.20, 20.0]),
        ("claude-opus-5", [5.0, 6.25, 10.0, 0.50, 25.0]),
        ("claude-opus-4-8", [5.0, 6.25, 10.0, 0.50, 25.0]),
        ("claude-opus-4-7", [5.0, 6.25, 10.0, 0.50, 25.0]),
        ("claude-opus-4-6", [5.0, 6.25, 10.0, 0.50, 25.0]),
        ("claude-opus-4-5", [5.0, 6.25, 10.0, 0.50, 25.0]),
        ("claude-opus-4-1", [15.0, 18.75, 30.0, 1.50, 75.0]),
        ("claude-opus-4", [15.0, 18.75, 30.0, 1.50, 75.0]),
        ("claude-3-opus", [15.0, 18.75, 30.0, 1.50, 75.0]),
        ("claude-sonnet-5-5", [2.0, 2.50, 4.0, 0.10, 10.0]),
        ("claude-sonnet-5", [2.0, 2.50, 4.0, 0.20, 10.0]),
        ("claude-sonnet-4-6", [3.0, 3.75, 6.0, 0.30, 15.0]),
        ("claude-sonnet-4-5", [3.0, 3.75, 6.0, 0.30, 15.0]),
        ("claude-sonnet-4", [3.0, 3.75, 6.0, 0.30, 15.0]),
        ("claude-3-7-sonnet", [3.0, 3.75, 6.0, 0.30, 15.0]),
        ("claude-3-5-sonnet", [3.0, 3.75, 6.0, 0.30, 15.0]),
        ("claude-haiku-5-5", [0.10, 0.125, 0.20, 0.01, 0.50]),
        ("claude-haiku-4-5", [1.0, 1.25, 2.0, 0.10, 5.0]),
        ("claude-3-5-haiku", [0.80, 1.0, 1.6, 0.08, 4.0]),
        ("claude-3-haiku", [0.25, 0.30, 0.50, 0.03, 1.25]),
    ];

    /// The cost of one million tokens of each kind, one kind at a time,
    /// through the cost path (not the table's fields): every rate of every
    /// row is checked where it is used.
    fn per_kind(p: &Price) -> [f64; 5] {
        let m = 1_000_000;
        // One kind at a time, each below every tier threshold.
        let k = 50_000;
        let f = m as f64 / k as f64;
        [
            cost(p, &u(k, 0, 0, 0, 0, 0)) * f,
            cost(p, &u(0, k, 0, 0, 0, 0)) * f,
            cost(p, &u(0, 0, k, 0, 0, 0)) * f,
            cost(p, &u(0, 0, 0, 0, k, 0)) * f,
            cost(p, &u(0, 0, 0, 0, 0, k)) * f,
        ]
    }

    #[test]
    fn every_rate_of_every_row_is_the_published_one() {
        let now_ids: Vec<&str> = {
            let mut v: Vec<&str> = TABLE.iter().map(|r| r.id).collect();
            v.dedup();
            v
        };
        let listed: Vec<&str> = PUBLISHED.iter().map(|(m, _)| *m).collect();
        assert_eq!(now_ids, listed, "every row is checked, in table order");
        for (model, want) in PUBLISHED {
            let p = lookup(model, NOW).unwrap_or_else(|| panic!("{model} has no price"));
            let got = per_kind(&p);
            for (i, kind) in ["input", "5m write", "1h write", "cache read", "output"]
                .iter()
                .enumerate()
            {
                assert!(
                    (got[i] - want[i]).abs() < 1e-9,
                    "{model} {kind}: {} != {}",
                    got[i],
                    want[i]
                );
            }
        }
    }

    #[test]
    fn unsplit_cache_writes_cost_the_5_minute_rate() {
        let p = lookup("claude-opus-4-6", NOW).unwrap();
        assert_eq!(cost(&p, &u(0, 0, 0, 1_000_000, 0, 0)), 6.25);
    }

    #[test]
    fn lookup_table() {
        // (model as written, the row it must land on; None = unpriced)
        let cases: &[(&str, Option<&str>)] = &[
            ("claude-opus-4-8", Some("claude-opus-4-8")),
            ("claude-opus-4-8[1m]", Some("claude-opus-4-8")),
            ("claude-opus-4-1-20250805", Some("claude-opus-4-1")),
            ("claude-opus-4-20250514", Some("claude-opus-4")),
            ("claude-sonnet-4-5-20250929", Some("claude-sonnet-4-5")),
            ("claude-sonnet-5-5", Some("claude-sonnet-5-5")),
            ("claude-sonnet-5-5-20261001", Some("claude-sonnet-5-5")),
            ("claude-sonnet-5-5[1m]", Some("claude-sonnet-5-5")),
            ("claude-opus-5-5", Some("claude-opus-5-5")),
            ("claude-fable-5-1", Some("claude-fable-5-1")),
            ("claude-fable-5-2", Some("claude-fable-5-2")),
            ("claude-haiku-5-5", Some("claude-haiku-5-5")),
            ("claude-sonnet-5", Some("claude-sonnet-5")),
            ("claude-haiku-4-5-20251001", Some("claude-haiku-4-5")),
            ("claude-3-5-haiku-20241022", Some("claude-3-5-haiku")),
            ("claude-3-haiku-20240307", Some("claude-3-haiku")),
            (
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                Some("claude-sonnet-4-5"),
            ),
            ("anthropic/claude-haiku-4-5", Some("claude-haiku-4-5")),
            ("<synthetic>", None),
            ("gpt-5", None),
            ("claude-opus-48", None),
            ("claude-sonnet-5-6", None),
            ("claude-fable-5-3", None),
        ];
        for (m, want) in cases {
            let got = lookup(m, NOW);
            let want = want.map(|id| lookup(id, NOW).expect("a row"));
            assert_eq!(got, want, "{m}");
        }
        // Same input rate, different rows: Sonnet 5.5 is not Sonnet 5.
        assert_ne!(
            lookup("claude-sonnet-5-5", NOW),
            lookup("claude-sonnet-5", NOW)
        );
    }

    #[test]
    fn dated_rows_price_a_response_by_its_time() {
        let before = SONNET_5_5_READ_CUT_MS - 1;
        let read = |ts| {
            let p = lookup("claude-sonnet-5-5", ts).unwrap();
            cost(&p, &u(0, 0, 0, 0, 1_000_000, 0))
        };
        assert_eq!(read(before), 0.20);
        // The launch row, every rate.
        let launch = per_kind(&lookup("claude-sonnet-5-5", before).unwrap());
        for (got, want) in launch.iter().zip([2.0, 2.50, 4.0, 0.20, 10.0]) {
            assert!((got - want).abs() < 1e-9, "{launch:?}");
        }
        assert_eq!(read(SONNET_5_5_READ_CUT_MS), 0.10);
        assert_eq!(read(NOW), 0.10);
        // 2026-10-07T00:00:00Z.
        assert_eq!(
            crate::timefmt::parse_ts_ms("2026-10-07T00:00:00Z"),
            Some(SONNET_5_5_READ_CUT_MS)
        );
    }

    #[test]
    fn sonnet_4_5_long_context_premium_applies_to_the_whole_request() {
        let p = lookup("claude-sonnet-4-5", NOW).unwrap();
        // 150k input + 60k cache read = 210k prompt: every token at premium.
        let c = cost(&p, &u(150_000, 0, 0, 0, 60_000, 1_000));
        let want = (150_000.0 * 6.0 + 60_000.0 * 0.6 + 1_000.0 * 22.5) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        // Cache writes count toward the prompt and pay the premium too.
        let c = cost(&p, &u(1_000, 199_000, 1_000, 0, 0, 0));
        let want = (1_000.0 * 6.0 + 199_000.0 * 7.5 + 1_000.0 * 12.0) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        // Exactly at the threshold: no premium.
        let c = cost(&p, &u(200_000, 0, 0, 0, 0, 0));
        assert!((c - 0.6).abs() < 1e-12);
        // Sonnet 4.6 and Sonnet 5.5 have none.
        for m in ["claude-sonnet-4-6", "claude-sonnet-5-5"] {
            let p = lookup(m, NOW).unwrap();
            let c = cost(&p, &u(300_000, 0, 0, 0, 0, 0));
            let base = p.base.input * 0.3;
            assert!((c - base).abs() < 1e-12, "{m}: {c}");
        }
    }

    #[test]
    fn haiku_5_5_bills_a_long_prompt_at_its_upper_band() {
        let p = lookup("claude-haiku-5-5", NOW).unwrap();
        // 100,000 prompt tokens: the lower band.
        let c = cost(&p, &u(10_000, 0, 0, 0, 90_000, 1_000));
        let want = (10_000.0 * 0.10 + 90_000.0 * 0.01 + 1_000.0 * 0.50) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        // 100,001: every token, output included, at the upper band.
        let c = cost(&p, &u(10_001, 0, 0, 0, 90_000, 1_000));
        let want = (10_001.0 * 0.50 + 90_000.0 * 0.05 + 1_000.0 * 2.50) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        let c = cost(&p, &u(0, 60_000, 50_000, 0, 0, 0));
        let want = (60_000.0 * 0.625 + 50_000.0 * 1.0) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
    }

    #[test]
    fn the_override_file_adds_and_corrects_prices() {
        let path = Path::new("/r/prices.json");
        let book = PriceBook::parse(
            path,
            br#"{
              "claude-next-1": {"input": 1, "cache_write_5m": 1.25, "cache_write_1h": 2, "cache_read": 0.1, "output": 5},
              "Claude-Sonnet-5-5": {"input": 2, "cache_write_5m": 2.5, "cache_write_1h": 4, "cache_read": 0.15, "output": 10,
                 "above": {"prompt_tokens": 1000, "input": 4, "cache_write_5m": 5, "cache_write_1h": 8, "cache_read": 0.3, "output": 20}}
            }"#,
        )
        .unwrap();
        // Added: priced, at every date.
        let next = book.lookup("claude-next-1-20270101", 0).unwrap();
        assert_eq!(next.base.output, 5.0);
        // Corrected: the override wins over the table and its dated rows.
        for ts in [0, NOW] {
            let p = book.lookup("claude-sonnet-5-5", ts).unwrap();
            assert_eq!(p.base.cache_read, 0.15);
            assert_eq!(cost(&p, &u(2_000, 0, 0, 0, 0, 0)), 0.008);
        }
        // Untouched models keep the table's price.
        assert_eq!(
            book.lookup("claude-opus-5-5", NOW),
            lookup("claude-opus-5-5", NOW)
        );
        // And the table alone still knows nothing of the new model.
        assert_eq!(lookup("claude-next-1", NOW), None);
    }

    #[test]
    fn a_bad_override_file_is_refused_with_its_cause() {
        let path = Path::new("/r/prices.json");
        let rates = r#""cache_write_5m": 1, "cache_write_1h": 2, "cache_read": 0.1, "output": 5"#;
        let table: &[(String, &str)] = &[
            ("not json".into(), "expected"),
            ("[]".into(), "expected"),
            // A missing rate is never guessed.
            (
                r#"{"m": {"input": 1, "output": 5}}"#.into(),
                "missing field",
            ),
            (
                format!(r#"{{"m": {{"input": 1, {rates}, "typo": 1}}}}"#),
                "unknown field",
            ),
            (
                format!(r#"{{"m": {{"input": -1, {rates}}}}}"#),
                "input is -1",
            ),
            (format!(r#"{{"m": {{"input": 1e9, {rates}}}}}"#), "input is"),
            (
                format!(r#"{{"": {{"input": 1, {rates}}}}}"#),
                "empty model id",
            ),
        ];
        for (body, want) in table {
            let e = PriceBook::parse(path, body.as_bytes()).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(want), "{body}: {msg}");
            assert!(msg.contains("/r/prices.json"), "{msg}");
            assert!(msg.contains("fix or remove the file"), "{msg}");
        }
        // Absent: the table alone; present and empty object: the same.
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            PriceBook::load(&d.path().join("nope.json")).unwrap(),
            PriceBook::builtin()
        );
        let p = d.path().join(PRICES_FILE);
        std::fs::write(&p, "{}").unwrap();
        assert_eq!(PriceBook::load(&p).unwrap(), PriceBook::builtin());
    }
}
