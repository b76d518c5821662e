//! Reports over collected entries: rows per day, session, project, hoop
//! home or 5-hour block, with totals and prices; rendered as a readable
//! table or as JSON. Pure functions over [`Collected`].
//!
//! Home mapping: the one attribution rule, [`crate::attribution::home_of`]
//! (a home's working directory and its workers' scratch directories).
//! Other entries are in the row `-`.
//!
//! Prices: an entry is priced by its model's price in force at its time
//! ([`crate::prices::PriceBook`]: the shipped table and the user's
//! `prices.json`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use hoop_core::transcript::Usage;
use serde_json::{Value, json};

pub use crate::attribution::{home_of, hoop_roots};
use crate::prices::{self, PriceBook, Rates};
use crate::timefmt::{day_of, fmt_day, fmt_ts};
use crate::{Collected, Entry};

/// Length of a billing block (Claude's usage windows are 5 hours).
pub const BLOCK_MS: i64 = 5 * 3600 * 1000;
const HOUR_MS: i64 = 3600 * 1000;

/// Which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Daily,
    Session,
    Project,
    Home,
    Blocks,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Daily => "daily",
            Kind::Session => "session",
            Kind::Project => "project",
            Kind::Home => "home",
            Kind::Blocks => "blocks",
        }
    }
}

/// Report options.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Inclusive UTC day numbers.
    pub since_day: Option<i64>,
    pub until_day: Option<i64>,
    /// Hoop roots whose `<root>/<home>/work` dirs name homes.
    pub hoop_roots: Vec<PathBuf>,
    /// "Now" for marking the active block (Unix ms).
    pub now_ms: i64,
    /// The prices (shipped table plus overrides).
    pub prices: PriceBook,
    /// Per row, one sub-row per model (`--breakdown`).
    pub breakdown: bool,
    /// Where the user adds prices (named by the unpriced warning).
    pub price_file: Option<PathBuf>,
}

/// Sums of one row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sum {
    pub usage: Usage,
    /// Cost of the priced entries, exact (see `prices::COST_UNITS_PER_USD`).
    pub priced_cost_units: u128,
    /// Tokens of entries whose model has no price.
    pub unpriced_tokens: u64,
    pub models: BTreeSet<String>,
    pub entries: u64,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

impl Sum {
    fn add(&mut self, e: &Entry, model: &str, price: Option<&Rates>) {
        self.usage.add(&e.usage);
        match price {
            Some(p) => self.priced_cost_units += p.cost_units(&e.usage),
            None => self.unpriced_tokens += e.usage.total(),
        }
        if !e.usage.is_zero() && !self.models.contains(model) {
            self.models.insert(model.to_string());
        }
        self.entries += 1;
        self.first_ms = Some(self.first_ms.map_or(e.ts_ms, |f| f.min(e.ts_ms)));
        self.last_ms = Some(self.last_ms.map_or(e.ts_ms, |l| l.max(e.ts_ms)));
    }
    /// The cost, or `None` when part of it is unknown (never a silent $0).
    pub fn cost(&self) -> Option<f64> {
        (self.unpriced_tokens == 0).then_some(self.priced_cost())
    }
    /// The cost of the priced part.
    pub fn priced_cost(&self) -> f64 {
        self.priced_cost_units as f64 / prices::COST_UNITS_PER_USD
    }
}

/// One row: its key (date, session id, project, home, block start), any
/// extra columns, and its sums.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub extra: Vec<(&'static str, Value)>,
    pub sum: Sum,
    /// Per model, by name (only with [`ReportOptions::breakdown`]).
    pub models: Vec<(String, Sum)>,
}

/// A built report.
#[derive(Debug, Clone)]
pub struct Report {
    pub kind: Kind,
    pub rows: Vec<Row>,
    pub totals: Sum,
    /// Models without a price, with their token sums.
    pub unpriced: BTreeMap<String, Usage>,
    /// The one warning line naming them ([`unpriced_warning`]).
    pub warning: Option<String>,
}

/// Build a report.
pub fn build(c: &Collected, kind: Kind, o: &ReportOptions) -> Report {
    // Each model's prices over time, turned into integer rates once.
    let mut price_cache: HashMap<u32, Vec<(i64, Rates)>> = HashMap::new();
    let mut by_model: HashMap<(i64, u32), Sum> = HashMap::new();
    // Rows are grouped by a cheap integer key (day number, string index,
    // home index) and named once at the end.
    let mut groups: HashMap<i64, Sum> = HashMap::new();
    let mut home_names: Vec<String> = Vec::new();
    let mut home_ids: HashMap<String, i64> = HashMap::new();
    let mut home_cache: HashMap<u32, i64> = HashMap::new();
    let mut totals = Sum::default();
    let mut unpriced: BTreeMap<String, Usage> = BTreeMap::new();
    let mut blocks: Vec<Row> = Vec::new();
    let mut block_end = i64::MIN;
    let mut session_places: HashMap<i64, (BTreeSet<u32>, BTreeSet<i64>)> = HashMap::new();
    for e in &c.entries {
        let day = day_of(e.ts_ms);
        if o.since_day.is_some_and(|s| day < s) || o.until_day.is_some_and(|u| day > u) {
            continue;
        }
        let model = c.strings[e.model as usize].as_str();
        let price = price_cache
            .entry(e.model)
            .or_insert_with(|| {
                o.prices
                    .schedule(model)
                    .iter()
                    .map(|(from, p)| (*from, Rates::of(p)))
                    .collect()
            })
            .iter()
            .find(|(from, _)| *from <= e.ts_ms)
            .map(|(_, r)| *r);
        if price.is_none() && !e.usage.is_zero() {
            unpriced.entry(model.to_string()).or_default().add(&e.usage);
        }
        totals.add(e, model, price.as_ref());
        let mut home = || {
            *home_cache.entry(e.cwd).or_insert_with(|| {
                let name = home_of(&c.strings[e.cwd as usize], &o.hoop_roots)
                    .unwrap_or_else(|| "-".into());
                *home_ids.entry(name.clone()).or_insert_with(|| {
                    home_names.push(name);
                    home_names.len() as i64 - 1
                })
            })
        };
        let key: i64 = match kind {
            Kind::Daily => day,
            Kind::Project => e.project as i64,
            Kind::Home => home(),
            Kind::Session => {
                // A session id can appear under several projects (a resumed
                // or forked session): list them all.
                let h = home();
                let (p, hs) = session_places.entry(e.session as i64).or_default();
                p.insert(e.project);
                hs.insert(h);
                e.session as i64
            }
            Kind::Blocks => {
                // Entries are sorted by time: a block starts at the hour of
                // its first entry and lasts 5 h; a later entry opens a new one.
                let last = blocks.last().and_then(|b| b.sum.last_ms);
                if e.ts_ms >= block_end || last.is_some_and(|l| e.ts_ms - l >= BLOCK_MS) {
                    let start = e.ts_ms.div_euclid(HOUR_MS) * HOUR_MS;
                    block_end = start + BLOCK_MS;
                    blocks.push(Row {
                        key: fmt_ts(start),
                        extra: vec![
                            ("end", json!(fmt_ts(block_end))),
                            ("active", json!(o.now_ms < block_end && o.now_ms >= start)),
                        ],
                        sum: Sum::default(),
                        models: Vec::new(),
                    });
                }
                let b = blocks.last_mut().expect("just pushed");
                b.sum.add(e, model, price.as_ref());
                continue;
            }
        };
        groups.entry(key).or_default().add(e, model, price.as_ref());
        if o.breakdown {
            by_model
                .entry((key, e.model))
                .or_default()
                .add(e, model, price.as_ref());
        }
    }
    let mut breakdowns: HashMap<i64, Vec<(String, Sum)>> = HashMap::new();
    for ((key, m), sum) in by_model {
        breakdowns
            .entry(key)
            .or_default()
            .push((c.strings[m as usize].clone(), sum));
    }
    let rows = if kind == Kind::Blocks {
        blocks
    } else {
        let mut rows: Vec<Row> = groups
            .into_iter()
            .map(|(k, sum)| {
                let key = match kind {
                    Kind::Daily => fmt_day(k),
                    Kind::Home => home_names[k as usize].clone(),
                    Kind::Session => {
                        let s = &c.strings[k as usize];
                        if s.is_empty() {
                            "(none)".to_string()
                        } else {
                            s.clone()
                        }
                    }
                    _ => c.strings[k as usize].clone(),
                };
                let extra = match session_places.get(&k) {
                    Some((p, h)) if kind == Kind::Session => {
                        let p: BTreeSet<&str> =
                            p.iter().map(|&i| c.strings[i as usize].as_str()).collect();
                        let h: BTreeSet<&str> =
                            h.iter().map(|&i| home_names[i as usize].as_str()).collect();
                        vec![("projects", json!(p)), ("homes", json!(h))]
                    }
                    _ => vec![],
                };
                let mut models = breakdowns.remove(&k).unwrap_or_default();
                models.sort_by(|a, b| a.0.cmp(&b.0));
                Row {
                    key,
                    extra,
                    sum,
                    models,
                }
            })
            .collect();
        rows.sort_by(|a, b| a.key.cmp(&b.key));
        rows
    };
    let mut r = Report {
        kind,
        rows,
        totals,
        unpriced,
        warning: None,
    };
    r.warning = unpriced_warning(&r, o.price_file.as_deref());
    r
}

fn tokens_json(s: &Sum) -> serde_json::Map<String, Value> {
    let u = &s.usage;
    let mut m = serde_json::Map::new();
    m.insert("input_tokens".into(), json!(u.input));
    m.insert("output_tokens".into(), json!(u.output));
    m.insert("cache_creation_input_tokens".into(), json!(u.cache_write()));
    m.insert(
        "cache_creation_5m_input_tokens".into(),
        json!(u.cache_write_5m),
    );
    m.insert(
        "cache_creation_1h_input_tokens".into(),
        json!(u.cache_write_1h),
    );
    m.insert(
        "cache_creation_unsplit_input_tokens".into(),
        json!(u.cache_write_unsplit),
    );
    m.insert("cache_read_input_tokens".into(), json!(u.cache_read));
    m.insert("total_tokens".into(), json!(u.total()));
    m.insert("cost_usd".into(), json!(s.cost()));
    if s.unpriced_tokens > 0 {
        m.insert("priced_cost_usd".into(), json!(s.priced_cost()));
        m.insert("unpriced_tokens".into(), json!(s.unpriced_tokens));
    }
    m
}

/// The one warning line for unpriced models (shown on stderr with the
/// table and in the JSON's `warnings`), naming each model with its tokens;
/// `None` when every token is priced. `override_file` is where a price can
/// be added.
pub fn unpriced_warning(r: &Report, override_file: Option<&std::path::Path>) -> Option<String> {
    if r.unpriced.is_empty() {
        return None;
    }
    let names: Vec<String> = r
        .unpriced
        .iter()
        .map(|(m, u)| format!("{m} ({} tokens)", thousands(u.total())))
        .collect();
    let fix = match override_file {
        Some(p) => format!("add their prices to {}", p.display()),
        None => "add their prices to prices.json in the hoop root".to_string(),
    };
    Some(format!(
        "no price for {}: that cost is UNKNOWN (shown as $…+?), not $0; {fix}",
        names.join(", ")
    ))
}

/// The JSON document: `report`, `rows`, `totals` (with `input_tokens`,
/// `output_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`,
/// `cost_usd`), `skipped_lines`, `files`, `warnings`.
pub fn to_json(r: &Report, c: &Collected) -> Value {
    let key_name = match r.kind {
        Kind::Daily => "date",
        Kind::Session => "session_id",
        Kind::Project => "project",
        Kind::Home => "home",
        Kind::Blocks => "start",
    };
    let rows: Vec<Value> = r
        .rows
        .iter()
        .map(|row| {
            let mut m = serde_json::Map::new();
            m.insert(key_name.into(), json!(row.key));
            for (k, v) in &row.extra {
                m.insert((*k).into(), v.clone());
            }
            if matches!(r.kind, Kind::Session | Kind::Blocks) {
                m.insert(
                    "first_timestamp".into(),
                    json!(row.sum.first_ms.map(fmt_ts)),
                );
                m.insert("last_timestamp".into(), json!(row.sum.last_ms.map(fmt_ts)));
            }
            m.extend(tokens_json(&row.sum));
            m.insert("models".into(), json!(row.sum.models));
            m.insert("responses".into(), json!(row.sum.entries));
            if !row.models.is_empty() {
                let b: Vec<Value> = row
                    .models
                    .iter()
                    .map(|(model, sum)| {
                        let mut b = serde_json::Map::new();
                        b.insert("model".into(), json!(model));
                        b.extend(tokens_json(sum));
                        b.insert("responses".into(), json!(sum.entries));
                        Value::Object(b)
                    })
                    .collect();
                m.insert("breakdown".into(), Value::Array(b));
            }
            Value::Object(m)
        })
        .collect();
    let mut totals = tokens_json(&r.totals);
    totals.insert("responses".into(), json!(r.totals.entries));
    totals.insert(
        "unpriced_models".into(),
        json!(r.unpriced.keys().collect::<Vec<_>>()),
    );
    let mut warnings: Vec<String> = r.warning.iter().cloned().collect();
    warnings.extend(c.warnings.iter().cloned());
    json!({
        "report": r.kind.name(),
        "rows": rows,
        "totals": totals,
        "skipped_lines": {
            "malformed": c.skipped.malformed,
            "oversized": c.skipped.oversized,
            "no_timestamp": c.skipped.no_timestamp,
            "incomplete_last_line": c.skipped.incomplete_tail,
        },
        "files": { "seen": c.files, "read": c.files_read, "bytes_read": c.bytes_read },
        "warnings": warnings,
    })
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn money(s: &Sum) -> String {
    match s.cost() {
        Some(c) => format!("${c:.2}"),
        None => format!("${:.2}+?", s.priced_cost()),
    }
}

/// A readable table, with totals and a line on skipped lines.
pub fn to_table(r: &Report, c: &Collected) -> String {
    let head = match r.kind {
        Kind::Daily => "Date",
        Kind::Session => "Session",
        Kind::Project => "Project",
        Kind::Home => "Home",
        Kind::Blocks => "Block start (UTC)",
    };
    let mut lines: Vec<[String; 8]> = vec![[
        head.to_string(),
        "Input".into(),
        "Write 5m".into(),
        "Write 1h".into(),
        "Cache read".into(),
        "Output".into(),
        "Total".into(),
        "Cost".into(),
    ]];
    let cells = |key: String, s: &Sum| -> [String; 8] {
        let u = &s.usage;
        [
            key,
            thousands(u.input),
            thousands(u.cache_write_5m + u.cache_write_unsplit),
            thousands(u.cache_write_1h),
            thousands(u.cache_read),
            thousands(u.output),
            thousands(u.total()),
            money(s),
        ]
    };
    for row in &r.rows {
        let mut key = row.key.clone();
        if r.kind == Kind::Blocks
            && row
                .extra
                .iter()
                .any(|(k, v)| *k == "active" && v == &json!(true))
        {
            key.push_str(" (active)");
        }
        lines.push(cells(key, &row.sum));
        for (model, sum) in &row.models {
            lines.push(cells(format!("  └ {model}"), sum));
        }
    }
    lines.push(cells("Total".into(), &r.totals));
    let mut w = [0usize; 8];
    for l in &lines {
        for (i, cell) in l.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let n = lines.len();
    for (li, l) in lines.iter().enumerate() {
        if li == n - 1 || li == 1 {
            let rule: Vec<String> = w.iter().map(|&k| "-".repeat(k)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
        for (i, cell) in l.iter().enumerate() {
            let pad = w[i] - cell.chars().count();
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    let s = &c.skipped;
    out.push_str(&format!(
        "{} responses from {} files ({} read this run); skipped lines: {} malformed, {} oversized, {} without timestamp, {} incomplete last line\n",
        r.totals.entries, c.files, c.files_read, s.malformed, s.oversized, s.no_timestamp, s.incomplete_tail
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
