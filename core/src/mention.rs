//! The ONE mention rule, shared by the sentinel and the bridge (SPEC §5).
//!
//! - my id, or the platform's structured everyone, in the `mentions` array
//!   counts;
//! - OR a whole-word `@username` or `@nickname` in the body counts, whatever
//!   the array holds ("@nova" in "@novak" is not a mention; nor is an email
//!   address);
//! - literal "@everyone" text never counts; a bare name never counts.
//!
//! Why "array OR body" and not "a non-empty array decides alone": seed 002
//! records two copies of the rule. The sentinel's (L7 item 8, repeated in
//! L83 item 1 with "和小桥不同", different from the bridge) looks only at
//! the array when there is one and falls back to `@everyone`-like marks in
//! the body without one. The bridge's (L19 item 2, L83 item 1) rings on
//! "mentions array has me, OR body @nickname / @username", and refuses the
//! literal `@Everyone` text since the 09-08 incident in which five agents
//! rang at once. The two copies meant the same thing, "was this account
//! named", and differed only in what each trusted. The array is not
//! complete: the message domain keeps only real members and drops the rest
//! silently (seed L7 item 3, `filterMentions`; L19 item 4), and a client
//! fills it from its own picker, so "@nova …" typed by hand next to a picked
//! "@bolt" leaves nova out of the array while the body still names nova.
//! Trusting the array alone misses that account (issue 21 item 5); trusting
//! the body's `@everyone` text rang five agents at once (L19). So the one
//! rule takes the union of the two positive signals and keeps the bridge's
//! refusal of the literal text. SPEC §5 still words the sentinel's copy
//! ("a non-empty array decides alone"); this module is the rule both use,
//! and its table below has both cases.

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
    let in_array = mentions
        .iter()
        .any(|m| matches!(m, Mention::Everyone(_)) || *m == Mention::User(me.id));
    in_array || named_in_body(me, body)
}

/// A whole-word `@username` or `@nickname` in the body (never `@everyone`).
fn named_in_body(me: &Me<'_>, body: &str) -> bool {
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
        assert!(!mentions_me(&ME, "hi bolt", &[Mention::Unknown]));
        assert!(
            mentions_me(&ME, "hi @bolt", &[Mention::Unknown]),
            "an unknown element does not hide the body's mention"
        );
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
                true,
                "array names another AI, body names me (seed L19: OR)",
            ),
            (
                "@nova hi",
                &[Mention::User(7)],
                true,
                "array names me, body names another",
            ),
            (
                "@boltx hi",
                &[Mention::User(8)],
                false,
                "array names another, body names me only as part of a word",
            ),
            (
                "@everyone hi",
                &[Mention::User(8)],
                false,
                "array names another, body's literal everyone never counts",
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
        /// A mention found in a body is found again once the body is wrapped
        /// in punctuation (quotes, brackets, a trailing comma or question
        /// mark), and a name is never found inside a longer word.
        #[test]
        fn a_found_mention_survives_punctuation(
            body in ".{0,64}",
            name in "[a-z][a-z0-9_]{0,7}",
            open in "[\"'(\\[{<«“ ]{0,2}",
            close in "[\"')\\]}>»”.,;:!? ]{0,2}",
            tail in "[a-z0-9_]{1,3}",
        ) {
            proptest::prop_assume!(name != "everyone");
            let me = Me { id: 1, username: &name, nickname: None };
            let with_name = format!("{body} @{name}");
            proptest::prop_assert!(mentions_me(&me, &with_name, &[]));
            let wrapped = format!("{open}{with_name}{close}");
            proptest::prop_assert!(mentions_me(&me, &wrapped, &[]), "{wrapped:?}");
            if mentions_me(&me, &body, &[]) {
                let b = format!("{open}{body}{close}");
                proptest::prop_assert!(mentions_me(&me, &b, &[]), "{b:?}");
            }
            // "@nova" in "@novak": a longer word is not the name.
            let longer = format!("{open}@{name}{tail}{close}");
            proptest::prop_assert!(!mentions_me(&me, &longer, &[]), "{longer:?}");
        }
    }
}
