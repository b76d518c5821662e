//! Timestamps and dates without a time-zone database: transcripts write UTC
//! ISO 8601 (`2026-12-02T11:57:57.327Z`), parsed here on the hot path by hand
//! (with `time`'s RFC 3339 parser as the fallback for offsets). Reports group
//! by UTC day.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day number since the epoch.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn digits(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as u32;
    }
    Some(v)
}

/// Unix milliseconds of an ISO 8601 / RFC 3339 timestamp.
pub fn parse_ts_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    // Fast path: YYYY-MM-DDTHH:MM:SS[.fff…]Z
    if b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[b.len() - 1] == b'Z'
    {
        let y = digits(&b[0..4])? as i64;
        let mo = digits(&b[5..7])?;
        let d = digits(&b[8..10])?;
        let h = digits(&b[11..13])? as i64;
        let mi = digits(&b[14..16])? as i64;
        let se = digits(&b[17..19])? as i64;
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
            return None;
        }
        let frac = &b[19..b.len() - 1];
        let ms = match frac {
            [] => 0,
            [b'.', rest @ ..] if !rest.is_empty() => {
                let mut ms = 0i64;
                for (i, &c) in rest.iter().enumerate() {
                    if !c.is_ascii_digit() {
                        return None;
                    }
                    if i < 3 {
                        ms = ms * 10 + (c - b'0') as i64;
                    }
                }
                for _ in rest.len()..3 {
                    ms *= 10;
                }
                ms
            }
            _ => return None,
        };
        let days = days_from_civil(y, mo, d);
        return Some(((days * 24 + h) * 60 + mi) * 60_000 + se * 1000 + ms);
    }
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// UTC day number of a millisecond timestamp.
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(86_400_000)
}

/// `YYYY-MM-DD` of a UTC day number.
pub fn fmt_day(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a millisecond timestamp.
pub fn fmt_ts(ms: i64) -> String {
    let day = day_of(ms);
    let s = ms.div_euclid(1000) - day * 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        fmt_day(day),
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Day number of `YYYY-MM-DD` (or `YYYYMMDD`, ccusage's form).
pub fn parse_day(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let (y, m, d) = match b.len() {
        10 if b[4] == b'-' && b[7] == b'-' => (&b[0..4], &b[5..7], &b[8..10]),
        8 => (&b[0..4], &b[4..6], &b[6..8]),
        _ => return None,
    };
    let (y, m, d) = (digits(y)? as i64, digits(m)?, digits(d)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let day = days_from_civil(y, m, d);
    (civil_from_days(day) == (y, m, d)).then_some(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_transcript_timestamps() {
        let cases: &[(&str, Option<i64>)] = &[
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1970-01-01T00:00:01.5Z", Some(1500)),
            ("2026-12-02T11:57:57.327Z", Some(1_796_212_677_327)),
            ("2026-12-02T11:57:57.327123Z", Some(1_796_212_677_327)),
            ("2026-12-02T12:57:57.327+01:00", Some(1_796_212_677_327)),
            ("2026-13-02T11:57:57Z", None),
            ("yesterday", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_ts_ms(s), *want, "{s}");
        }
    }

    #[test]
    fn days_round_trip() {
        for day in [-800_000, -1, 0, 1, 19_000, 20_789, 2_000_000] {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
        }
        assert_eq!(
            parse_day("2026-12-02").map(fmt_day).as_deref(),
            Some("2026-12-02")
        );
        assert_eq!(parse_day("20261202"), parse_day("2026-12-02"));
        assert_eq!(parse_day("2026-02-30"), None);
        assert_eq!(fmt_ts(1_796_212_677_327), "2026-12-02T11:57:57Z");
    }
}
