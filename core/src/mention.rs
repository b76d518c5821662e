//! The ONE mention rule, shared by the sentinel and the bridge (SPEC §5).
//!
//! - a non-empty structured `mentions` array decides alone: my id, or the
//!   platform's structured everyone;
//! - with no array, a whole-word `@username` or `@nickname` in the body counts;
//! - literal "@everyone" text never counts; a bare name never counts.

use serde::{Deserialize, Serialize};

/// A structured mention: a user id, or the platform's structured "everyone".
/// On the wire a user is a number and everyone is the string `"everyone"`;
/// any other element decodes as [`Mention::Unknown`] (it never fails the
/// message that carries it, and it mentions nobody) and is written as null.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Hash)]
#[serde(untagged)]
pub enum Mention {
    User(i64),
    Everyone(EveryoneTag),
    /// An element of a shape this toolkit does not know.
    Unknown,
}

impl<'de> Deserialize<'de> for Mention {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => n.as_i64().map_or(Mention::Unknown, Mention::User),
            serde_json::Value::String(s) if s == "everyone" => Mention::EVERYONE,
            _ => Mention::Unknown,
        })
    }
}

impl Mention {
    pub const EVERYONE: Mention = Mention::Everyone(EveryoneTag::Everyone);
}

/// The literal string `"everyone"` in a `mentions` array.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub enum EveryoneTag {
    #[serde(rename = "everyone")]
    Everyone,
}

/// Who "me" is for the rule.
#[derive(Debug, Clone, Copy)]
pub struct Me<'a> {
    pub id: i64,
    pub username: &'a str,
    pub nickname: Option<&'a str>,
}

/// Does this message mention me?
pub fn mentions_me(me: &Me<'_>, body: &str, mentions: &[Mention]) -> bool {
    if !mentions.is_empty() {
        return mentions
            .iter()
            .any(|m| matches!(m, Mention::Everyone(_)) || *m == Mention::User(me.id));
    }
    [Some(me.username), me.nickname]
        .into_iter()
        .flatten()
        .filter(|name| !name.is_empty() && !name.eq_ignore_ascii_case("everyone"))
        .any(|name| has_whole_word_at(body, name))
}

/// `@name` where the `@` does not follow a word character (so an email
/// address does not count) and the name is not followed by one.
fn has_whole_word_at(body: &str, name: &str) -> bool {
    let needle_len = name.len();
    body.match_indices('@').any(|(at, _)| {
        let before_ok = body[..at].chars().next_back().is_none_or(|c| !is_word(c));
        let rest = &body[at + 1..];
        before_ok
            && rest.len() >= needle_len
            && rest.is_char_boundary(needle_len)
            && rest[..needle_len].eq_ignore_ascii_case(name)
            && rest[needle_len..]
                .chars()
                .next()
                .is_none_or(|c| !is_word(c))
    })
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_mention_elements_decode_and_mention_nobody() {
        let v: Vec<Mention> =
            serde_json::from_str(r#"[7, "everyone", {"user_id": 7}, "here", 1.5, null]"#).unwrap();
        assert_eq!(
            v,
            vec![
                Mention::User(7),
                Mention::EVERYONE,
                Mention::Unknown,
                Mention::Unknown,
                Mention::Unknown,
                Mention::Unknown
            ]
        );
        assert!(!mentions_me(&ME, "hi @bolt", &[Mention::Unknown]));
    }

    const ME: Me<'static> = Me {
        id: 7,
        username: "bolt",
        nickname: Some("小闪"),
    };

    #[test]
    fn table() {
        let cases: &[(&str, &[Mention], bool, &str)] = &[
            ("hi", &[Mention::User(7)], true, "structured me"),
            ("hi", &[Mention::EVERYONE], true, "structured everyone"),
            (
                "@bolt hi",
                &[Mention::User(8)],
                false,
                "array decides alone",
            ),
            ("@bolt hi", &[], true, "username in body"),
            (
                "hey @Bolt, look",
                &[],
                true,
                "case-insensitive, punctuation ends the word",
            ),
            ("@小闪 看一下", &[], true, "nickname"),
            ("@boltx hi", &[], false, "not a whole word"),
            (
                "mail bolt@example.com",
                &[],
                false,
                "email is not a mention",
            ),
            ("bolt please", &[], false, "bare name never counts"),
            (
                "@everyone look",
                &[],
                false,
                "literal everyone text never counts",
            ),
            ("@Everyone look", &[], false, "any spelling of it"),
            ("", &[], false, "empty"),
            ("@", &[], false, "lone at"),
            ("@bolt", &[], true, "end of body"),
            ("(@bolt)", &[], true, "inside parentheses"),
        ];
        for (body, mentions, want, why) in cases {
            assert_eq!(mentions_me(&ME, body, mentions), *want, "{why}: {body:?}");
        }
    }

    #[test]
    fn a_nickname_of_everyone_does_not_turn_text_into_a_mention() {
        let me = Me {
            id: 1,
            username: "a",
            nickname: Some("everyone"),
        };
        assert!(!mentions_me(&me, "@everyone", &[]));
    }

    #[test]
    fn wire_form() {
        let m: Vec<Mention> = serde_json::from_str(r#"[12, "everyone"]"#).unwrap();
        assert_eq!(m, vec![Mention::User(12), Mention::EVERYONE]);
        // Only the exact word is the structured everyone; another spelling
        // is an unknown element, kept and mentioning nobody.
        assert_eq!(
            serde_json::from_str::<Vec<Mention>>(r#"["Everyone"]"#).unwrap(),
            [Mention::Unknown]
        );
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"[12,"everyone"]"#);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(body in ".{0,64}", name in ".{0,8}") {
            let me = Me { id: 1, username: &name, nickname: None };
            let _ = mentions_me(&me, &body, &[]);
        }
    }
}
