//! The price table shipped in the binary (no fetch at run time), in USD per
//! million tokens, from Anthropic's published pricing page. A model that is
//! not here has NO price: its cost is unknown and reported as such, never $0.
//!
//! Long-context premium: Sonnet 4 and Sonnet 4.5 (1M-context beta) bill a
//! request whose prompt (input + cache writes + cache reads) exceeds 200,000
//! tokens at 2× the input-side rates and 1.5× the output rate, on EVERY token
//! of that request. Later models (Opus 4.6+, Sonnet 4.6+) have no premium.

use hoop_core::transcript::Usage;

/// Rates of one model family, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
    /// `Some(threshold)`: a prompt above this many tokens pays the premium.
    pub long_context_above: Option<u64>,
}

/// Prompt size above which Sonnet 4 / 4.5 requests pay the premium.
pub const LONG_CONTEXT_THRESHOLD: u64 = 200_000;
/// Input-side multiplier of the long-context premium.
pub const LONG_CONTEXT_INPUT_FACTOR: f64 = 2.0;
/// Output multiplier of the long-context premium.
pub const LONG_CONTEXT_OUTPUT_FACTOR: f64 = 1.5;

const fn p(input: f64, w5: f64, w1: f64, read: f64, output: f64) -> Price {
    Price {
        input,
        cache_write_5m: w5,
        cache_write_1h: w1,
        cache_read: read,
        output,
        long_context_above: None,
    }
}

const OPUS_4_5_PLUS: Price = p(5.0, 6.25, 10.0, 0.50, 25.0);
const OPUS_LEGACY: Price = p(15.0, 18.75, 30.0, 1.50, 75.0);
const SONNET_3_4: Price = p(3.0, 3.75, 6.0, 0.30, 15.0);
const SONNET_4_BETA_1M: Price = Price {
    long_context_above: Some(LONG_CONTEXT_THRESHOLD),
    ..SONNET_3_4
};
const SONNET_5: Price = p(2.0, 2.50, 4.0, 0.20, 10.0);
const HAIKU_4_5: Price = p(1.0, 1.25, 2.0, 0.10, 5.0);
const HAIKU_3_5: Price = p(0.80, 1.0, 1.6, 0.08, 4.0);
const HAIKU_3: Price = p(0.25, 0.30, 0.50, 0.03, 1.25);
const FABLE_5: Price = p(10.0, 12.50, 20.0, 1.0, 50.0);

/// Model families. A model id matches an entry when, after normalisation
/// (see [`normalise`]), it is the entry's id or the id plus a `-YYYYMMDD`
/// snapshot date: `claude-sonnet-5-5` is NOT `claude-sonnet-5`.
/// Models whose published prices change by date or are not confirmed here
/// (e.g. Sonnet 5.5, Opus 5.5, Haiku 5.5, Fable 5.1) are deliberately absent:
/// they are reported as unpriced rather than priced wrongly.
pub const TABLE: &[(&str, Price)] = &[
    ("claude-fable-5", FABLE_5),
    ("claude-mythos-5", FABLE_5),
    ("claude-opus-5", OPUS_4_5_PLUS),
    ("claude-opus-4-8", OPUS_4_5_PLUS),
    ("claude-opus-4-7", OPUS_4_5_PLUS),
    ("claude-opus-4-6", OPUS_4_5_PLUS),
    ("claude-opus-4-5", OPUS_4_5_PLUS),
    ("claude-opus-4-1", OPUS_LEGACY),
    ("claude-opus-4", OPUS_LEGACY),
    ("claude-3-opus", OPUS_LEGACY),
    ("claude-sonnet-5", SONNET_5),
    ("claude-sonnet-4-6", SONNET_3_4),
    ("claude-sonnet-4-5", SONNET_4_BETA_1M),
    ("claude-sonnet-4", SONNET_4_BETA_1M),
    ("claude-3-7-sonnet", SONNET_3_4),
    ("claude-3-5-sonnet", SONNET_3_4),
    ("claude-haiku-4-5", HAIKU_4_5),
    ("claude-3-5-haiku", HAIKU_3_5),
    ("claude-3-haiku", HAIKU_3),
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

/// The price of `model`, or `None` when the table does not know it.
pub fn lookup(model: &str) -> Option<Price> {
    let m = normalise(model);
    TABLE
        .iter()
        .find(|(id, _)| {
            m.strip_prefix(id).is_some_and(|rest| {
                rest.is_empty()
                    || rest.strip_prefix('-').is_some_and(|d| {
                        d.len() >= 8 && d.as_bytes()[..8].iter().all(u8::is_ascii_digit)
                    })
            })
        })
        .map(|(_, p)| *p)
}

/// Costs are summed as exact integers of this many units per USD (rates
/// have at most 4 decimals per MTok even with the premium factors), so a sum
/// never depends on the order its terms were added in.
pub const COST_UNITS_PER_USD: f64 = 1e10;

fn units(rate: f64, factor: f64) -> u128 {
    (rate * factor * 10_000.0).round() as u128
}

/// A price turned into integer units per token, once per model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    /// input, 5m write (and unsplit), 1h write, read, output.
    base: [u128; 5],
    premium: [u128; 5],
    long_context_above: Option<u64>,
}

impl Rates {
    pub fn of(p: &Price) -> Rates {
        let r = |fi: f64, fo: f64| {
            [
                units(p.input, fi),
                units(p.cache_write_5m, fi),
                units(p.cache_write_1h, fi),
                units(p.cache_read, fi),
                units(p.output, fo),
            ]
        };
        Rates {
            base: r(1.0, 1.0),
            premium: r(LONG_CONTEXT_INPUT_FACTOR, LONG_CONTEXT_OUTPUT_FACTOR),
            long_context_above: p.long_context_above,
        }
    }

    /// Exact cost of one response, in 1/[`COST_UNITS_PER_USD`] USD.
    pub fn cost_units(&self, u: &Usage) -> u128 {
        let prompt = u
            .input
            .saturating_add(u.cache_write())
            .saturating_add(u.cache_read);
        let r = match self.long_context_above {
            Some(t) if prompt > t => &self.premium,
            _ => &self.base,
        };
        u.input as u128 * r[0]
            + (u.cache_write_5m + u.cache_write_unsplit) as u128 * r[1]
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

    #[test]
    fn lookup_table() {
        let cases: &[(&str, Option<f64>)] = &[
            ("claude-opus-4-8", Some(5.0)),
            ("claude-opus-4-8[1m]", Some(5.0)),
            ("claude-opus-4-6", Some(5.0)),
            ("claude-opus-4-1-20250805", Some(15.0)),
            ("claude-opus-4-20250514", Some(15.0)),
            ("claude-sonnet-4-5-20250929", Some(3.0)),
            ("claude-sonnet-4-6", Some(3.0)),
            ("claude-sonnet-5", Some(2.0)),
            ("claude-sonnet-5-5", None),
            ("claude-opus-5-5", None),
            ("claude-fable-5-1", None),
            ("claude-haiku-4-5-20251001", Some(1.0)),
            ("claude-3-5-haiku-20241022", Some(0.8)),
            ("claude-3-haiku-20240307", Some(0.25)),
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Some(3.0)),
            ("anthropic/claude-haiku-4-5", Some(1.0)),
            ("<synthetic>", None),
            ("gpt-5", None),
            ("claude-opus-48", None),
        ];
        for (m, want) in cases {
            assert_eq!(lookup(m).map(|p| p.input), *want, "{m}");
        }
    }

    #[test]
    fn each_kind_has_its_own_rate() {
        let p = lookup("claude-opus-4-6").unwrap();
        let m = 1_000_000;
        assert_eq!(cost(&p, &u(m, 0, 0, 0, 0, 0)), 5.0);
        assert_eq!(cost(&p, &u(0, m, 0, 0, 0, 0)), 6.25);
        assert_eq!(cost(&p, &u(0, 0, m, 0, 0, 0)), 10.0);
        assert_eq!(cost(&p, &u(0, 0, 0, m, 0, 0)), 6.25, "unsplit = 5m rate");
        assert_eq!(cost(&p, &u(0, 0, 0, 0, m, 0)), 0.5);
        assert_eq!(cost(&p, &u(0, 0, 0, 0, 0, m)), 25.0);
    }

    #[test]
    fn long_context_premium_applies_to_the_whole_request() {
        let p = lookup("claude-sonnet-4-5").unwrap();
        // 150k input + 60k cache read = 210k prompt: every token at premium.
        let c = cost(&p, &u(150_000, 0, 0, 0, 60_000, 1_000));
        let want = (150_000.0 * 6.0 + 60_000.0 * 0.6 + 1_000.0 * 22.5) / 1e6;
        assert!((c - want).abs() < 1e-12, "{c} vs {want}");
        // Exactly at the threshold: no premium.
        let c = cost(&p, &u(200_000, 0, 0, 0, 0, 0));
        assert!((c - 0.6).abs() < 1e-12);
        // Sonnet 4.6 has no premium.
        let p = lookup("claude-sonnet-4-6").unwrap();
        let c = cost(&p, &u(300_000, 0, 0, 0, 0, 0));
        assert!((c - 0.9).abs() < 1e-12);
    }
}
