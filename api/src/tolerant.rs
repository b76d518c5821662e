//! Tolerant decoding of what the backend sends, for the fields production's
//! record does not pin down (the contract's [A] fields): an id may come as a
//! number or as a string holding one, a time as Unix seconds or as RFC 3339
//! text, and ONE undecodable item of a list (a message, a conversation, a
//! card) is skipped with a log line naming its id — never the whole page,
//! room or list.
//!
//! Used through `#[serde(deserialize_with = "…")]` in [`crate::types`];
//! everything is still written as numbers (the reference backend's form).

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::UnixSecs;

/// An id: a JSON integer, or a string holding one (seed 002 L29 locks an
/// account with `hashtext(uid)`, so production may carry ids as text).
pub fn id<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(IdVisitor)
}

/// An optional id: absent or null → `None`.
pub fn opt_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<IdOrNull>::deserialize(d)?.and_then(|x| x.0))
}

/// A list of ids, each a number or a string holding one; null → empty.
pub fn ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    Ok(Option::<Vec<IdOrNull>>::deserialize(d)?
        .unwrap_or_default()
        .into_iter()
        .filter_map(|x| x.0)
        .collect())
}

/// A time: Unix seconds (integer, a float's whole seconds, or a string
/// holding an integer) or RFC 3339 text.
pub fn time<'de, D: Deserializer<'de>>(d: D) -> Result<UnixSecs, D::Error> {
    d.deserialize_any(TimeVisitor)
}

/// An optional time: absent or null → `None`.
pub fn opt_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<UnixSecs>, D::Error> {
    Ok(Option::<TimeOrNull>::deserialize(d)?.and_then(|x| x.0))
}

/// A text that may be null: null → empty.
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

struct IdOrNull(Option<i64>);

impl<'de> Deserialize<'de> for IdOrNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(IdOrNull(None)),
            v => id(v).map(|i| IdOrNull(Some(i))).map_err(de::Error::custom),
        }
    }
}

struct TimeOrNull(Option<UnixSecs>);

impl<'de> Deserialize<'de> for TimeOrNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(TimeOrNull(None)),
            v => time(v)
                .map(|t| TimeOrNull(Some(t)))
                .map_err(de::Error::custom),
        }
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = i64;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an id: an integer or a string holding one")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("id {v} is beyond 64-bit signed")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        v.trim()
            .parse()
            .map_err(|_| E::custom(format!("id {v:?} is not an integer")))
    }
}

struct TimeVisitor;

impl Visitor<'_> for TimeVisitor {
    type Value = UnixSecs;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a time: Unix seconds or RFC 3339 text")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<UnixSecs, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<UnixSecs, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("time {v} is out of range")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<UnixSecs, E> {
        if v.is_finite() && v.abs() < i64::MAX as f64 {
            Ok(v.floor() as i64)
        } else {
            Err(E::custom(format!("time {v} is out of range")))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<UnixSecs, E> {
        let v = v.trim();
        if let Ok(secs) = v.parse::<i64>() {
            return Ok(secs);
        }
        ::time::OffsetDateTime::parse(v, &::time::format_description::well_known::Rfc3339)
            .map(|t| t.unix_timestamp())
            .map_err(|e| {
                E::custom(format!(
                    "time {v:?} is neither Unix seconds nor RFC 3339: {e}"
                ))
            })
    }
}

/// One list item that did not decode: its id as sent (`?` when it has
/// none) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub id: String,
    pub error: String,
}

/// Decode each item on its own: the ones that decode, in order, and the
/// ones that did not. Pure; [`Skipping`] logs the skipped ones.
pub fn decode_each<T: DeserializeOwned>(items: Vec<Value>) -> (Vec<T>, Vec<Skipped>) {
    let mut ok = Vec::with_capacity(items.len());
    let mut skipped = Vec::new();
    for v in items {
        let id = match v.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => "?".to_string(),
            Some(other) => other.to_string(),
        };
        match serde_json::from_value::<T>(v) {
            Ok(t) => ok.push(t),
            Err(e) => skipped.push(Skipped {
                id,
                error: e.to_string(),
            }),
        }
    }
    (ok, skipped)
}

/// A list decoded item by item: an item that does not decode is left out
/// with a warning naming its id, and the others are kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Skipping<T>(pub Vec<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Skipping<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default();
        let (ok, skipped) = decode_each::<T>(items);
        let what = std::any::type_name::<T>()
            .rsplit("::")
            .next()
            .unwrap_or("item");
        for s in skipped {
            tracing::warn!(
                what,
                id = %s.id,
                error = %s.error,
                "skipped one {what} that does not decode (id {}); the others are kept",
                s.id
            );
        }
        Ok(Skipping(ok))
    }
}

/// [`Skipping`] for a field: `#[serde(deserialize_with = "tolerant::each")]`.
pub fn each<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Skipping::<T>::deserialize(d).map(|s| s.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Ids {
        #[serde(deserialize_with = "id")]
        a: i64,
        #[serde(default, deserialize_with = "opt_id")]
        b: Option<i64>,
        #[serde(default, deserialize_with = "ids")]
        c: Vec<i64>,
    }

    #[test]
    fn ids_decode_as_number_or_string() {
        // (input, want)
        let cases: &[(Value, Option<Ids>)] = &[
            (
                json!({"a": 7, "b": 8, "c": [1, "2"]}),
                Some(Ids {
                    a: 7,
                    b: Some(8),
                    c: vec![1, 2],
                }),
            ),
            (
                json!({"a": "7", "b": "8", "c": ["3"]}),
                Some(Ids {
                    a: 7,
                    b: Some(8),
                    c: vec![3],
                }),
            ),
            (
                json!({"a": " 7 "}),
                Some(Ids {
                    a: 7,
                    b: None,
                    c: vec![],
                }),
            ),
            (
                json!({"a": 1, "b": null, "c": null}),
                Some(Ids {
                    a: 1,
                    b: None,
                    c: vec![],
                }),
            ),
            (json!({"a": "u-7"}), None),
            (json!({"a": 1.5}), None),
            (json!({"a": null}), None),
            (json!({"a": 9223372036854775808u64}), None),
            (json!({"a": 1, "b": "x"}), None),
        ];
        for (input, want) in cases {
            let got = serde_json::from_value::<Ids>(input.clone()).ok();
            assert_eq!(&got, want, "{input}");
        }
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Times {
        #[serde(deserialize_with = "time")]
        t: i64,
        #[serde(default, deserialize_with = "opt_time")]
        u: Option<i64>,
    }

    #[test]
    fn times_decode_as_seconds_or_rfc3339() {
        type Want = Option<(i64, Option<i64>)>;
        let cases: &[(Value, Want)] = &[
            (json!({"t": 1700000000}), Some((1_700_000_000, None))),
            (json!({"t": "1700000000"}), Some((1_700_000_000, None))),
            (json!({"t": 1700000000.9}), Some((1_700_000_000, None))),
            (
                json!({"t": "2023-11-14T22:13:20Z", "u": "2023-11-14T22:13:20Z"}),
                Some((1_700_000_000, Some(1_700_000_000))),
            ),
            (
                json!({"t": "2023-11-15T06:13:20+08:00"}),
                Some((1_700_000_000, None)),
            ),
            (
                json!({"t": "2023-11-14T22:13:20.250Z", "u": null}),
                Some((1_700_000_000, None)),
            ),
            (json!({"t": "yesterday"}), None),
            (json!({"t": null}), None),
            (json!({"t": 0, "u": "soon"}), None),
        ];
        for (input, want) in cases {
            let got = serde_json::from_value::<Times>(input.clone())
                .ok()
                .map(|t| (t.t, t.u));
            assert_eq!(&got, want, "{input}");
        }
    }

    #[test]
    fn one_bad_item_is_skipped_by_its_id() {
        let (ok, skipped) = decode_each::<Ids>(vec![
            json!({"a": 3}),
            json!({"id": 2, "a": "not an id"}),
            json!({"id": "x1", "a": null}),
            json!({"a": 1}),
            json!("not an object"),
        ]);
        let got: Vec<i64> = ok.iter().map(|i| i.a).collect();
        assert_eq!(got, [3, 1]);
        let ids: Vec<&str> = skipped.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["2", "x1", "?"]);
    }
}
