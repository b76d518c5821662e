//! The backend's decisions as plain functions over data: rate windows, card
//! transitions and leases, the usage upsert and card costs, presence, window assignment,
//! mention filtering. The store calls these inside its transactions; the
//! tables below pin each rule.

use std::collections::BTreeSet;

use hoop_api::types::{CardStatus, ConversationId, Mention, UserId, WindowMode, WindowSync};

use crate::constants::RATE_WINDOW_SECS;

/// A fixed window: the calls counted in the calendar minute `minute`
/// (`now / 60`). Production counts messages in buckets keyed by the minute
/// and MCP calls in an in-process fixed window (seed 002 §0.4, §3.2), never
/// a sliding one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FixedWindow {
    pub minute: i64,
    pub count: u32,
}

impl FixedWindow {
    /// `Err(secs)` = the limit is reached in this minute; the next minute
    /// starts in `secs`. Counts nothing: call [`FixedWindow::record`] once
    /// the call went through.
    pub fn check(&mut self, now: i64, limit: u32) -> Result<(), u64> {
        let minute = now.div_euclid(RATE_WINDOW_SECS);
        if minute != self.minute {
            *self = FixedWindow { minute, count: 0 };
        }
        if self.count >= limit {
            let next = (minute + 1).saturating_mul(RATE_WINDOW_SECS);
            return Err(next.saturating_sub(now).max(1) as u64);
        }
        Ok(())
    }

    /// Count one call at `now`.
    pub fn record(&mut self, now: i64) {
        let minute = now.div_euclid(RATE_WINDOW_SECS);
        if minute != self.minute {
            *self = FixedWindow { minute, count: 0 };
        }
        self.count = self.count.saturating_add(1);
    }
}

/// A reported token count: negative means "not reported" (production).
pub fn normalize_usage(v: Option<i64>) -> Option<i64> {
    v.filter(|n| *n >= 0)
}

/// The per-agent usage upsert of one number (production's
/// `COALESCE(new, old)` with negatives as "not reported"): a reported value
/// replaces the stored one; a null or negative one keeps it.
pub fn upsert_usage(stored: Option<i64>, reported: Option<i64>) -> Option<i64> {
    normalize_usage(reported).or(stored)
}

/// What a card cost in one of the three numbers: its end snapshot minus its
/// start snapshot (production keeps both snapshots, never a sum of reports).
/// Unknown when either snapshot is unknown, and when the end is below the
/// start (the account's totals went back: nothing honest can be said).
pub fn card_cost(start: Option<i64>, end: Option<i64>) -> Option<i64> {
    let (start, end) = (start?, end?);
    end.checked_sub(start).filter(|d| *d >= 0)
}

/// Why a card transition is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The card is not in a state that allows it (409 `invalid_transition`).
    InvalidTransition,
    /// `failed` without an error text (400 `error_required`).
    ErrorRequired,
    /// Lease on a card that is not working (404 `not_working`).
    NotWorking,
    /// Claim of a card that is not queued (409 `not_claimable`, production:
    /// the claim's `WHERE status = 'queued'`, seed 002 L19 step 5, L83).
    NotClaimable,
}

/// `queued → working`.
pub fn claim(from: CardStatus) -> Result<CardStatus, Refusal> {
    match from {
        CardStatus::Queued => Ok(CardStatus::Working),
        _ => Err(Refusal::NotClaimable),
    }
}

/// What a finish does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The card moves to this status (and its live descendants are
    /// cancelled).
    Move(CardStatus),
    /// The card was already finished: nothing changes, the answer is 200
    /// `{"updated":false}` (production, seed 002 L19 step 7).
    Unchanged,
}

/// `working → done | failed`, `queued | working → cancelled`; `failed`
/// needs a non-blank error; a finished card stays as it is.
pub fn finish(from: CardStatus, to: CardStatus, error: Option<&str>) -> Result<Finish, Refusal> {
    if !from.is_live() && !to.is_live() {
        return Ok(Finish::Unchanged);
    }
    let allowed = match to {
        CardStatus::Done | CardStatus::Failed => from == CardStatus::Working,
        CardStatus::Cancelled => from.is_live(),
        CardStatus::Queued | CardStatus::Working => false,
    };
    if !allowed {
        return Err(Refusal::InvalidTransition);
    }
    if to == CardStatus::Failed && error.is_none_or(|e| e.trim().is_empty()) {
        return Err(Refusal::ErrorRequired);
    }
    Ok(Finish::Move(to))
}

/// Renew: the only opener of a lease; only a working card has one.
pub fn renew(status: CardStatus, now: i64, lease_secs: i64) -> Result<i64, Refusal> {
    if status == CardStatus::Working {
        Ok(now + lease_secs)
    } else {
        Err(Refusal::NotWorking)
    }
}

/// Progress extends an existing lease and never opens one.
pub fn progress_lease(current: Option<i64>, now: i64, lease_secs: i64) -> Option<i64> {
    current.map(|c| c.max(now + lease_secs))
}

/// Present = seen within the timeout. Computed on every read, never stored.
pub fn is_present(last_seen: Option<i64>, now: i64, timeout_secs: i64) -> bool {
    last_seen.is_some_and(|t| now - t < timeout_secs)
}

/// Drop structured mentions of users who are not members (silently, as
/// production does); the structured everyone stays; duplicates go.
pub fn filter_mentions(mentions: &[Mention], members: &[UserId]) -> Vec<Mention> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for m in mentions {
        let keep = match m {
            Mention::User(id) => members.contains(id),
            Mention::Everyone(_) => true,
            Mention::Unknown => false,
        };
        let key = match m {
            Mention::User(id) => Some(*id),
            Mention::Everyone(_) | Mention::Unknown => None,
        };
        if keep && seen.insert(key) {
            out.push(*m);
        }
    }
    out
}

/// One window as the assignment rule sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowView {
    pub window_id: String,
    pub revoked: bool,
    pub rooms_hint: Vec<ConversationId>,
    pub fallback_hint: bool,
    pub last_sync_at: Option<i64>,
}

/// The room a redeem joins: only the one its provisioning key names. A
/// request may repeat that room; naming any other (or one when the key
/// names none) is refused with the room asked for, so a key minted for one
/// team never opens another's history and cards.
pub fn redeem_room(key_room: Option<i64>, asked: Option<i64>) -> Result<Option<i64>, i64> {
    match asked {
        Some(a) if Some(a) != key_room => Err(a),
        _ => Ok(key_room),
    }
}

/// When a key minted at `now` expires: `ttl` seconds (default when absent
/// or not positive), clamped to `max`; saturating, never wrapping.
pub fn key_expiry(now: i64, ttl: Option<i64>, default: i64, max: i64) -> i64 {
    let ttl = match ttl {
        Some(t) if t > 0 => t.min(max),
        _ => default,
    };
    now.saturating_add(ttl)
}

/// A bearer expiring at `expires_at` is still good at `now` within `skew`.
pub fn key_live(expires_at: i64, now: i64, skew: i64) -> bool {
    now <= expires_at.saturating_add(skew)
}

/// The Origin check of every route (seed 002 L7 §0.1 for `/mcp`): no
/// `Origin` → allowed; an `Origin` is allowed only when it is
/// `http(s)://HOST[:port]` (nothing more) with HOST on `allowed`.
pub fn origin_allowed(origin: Option<&str>, allowed: &[&str]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && bare_authority(&url)
        // The URL parser forgives a trailing `/` or an empty port; an
        // Origin has neither.
        && !origin.ends_with(['/', ':'])
        && url
            .host_str()
            .is_some_and(|h| allowed.iter().any(|a| a.eq_ignore_ascii_case(h)))
}

/// A URL that is only scheme, host and port: no user, path, query or
/// fragment.
fn bare_authority(url: &url::Url) -> bool {
    url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
}

/// The host part of a `Host` header (`name`, `name:port`, `[v6]:port`),
/// lower-cased; `None` when it is not one.
pub fn host_name(host: &str) -> Option<String> {
    let host = host.trim();
    if host.is_empty() || host.ends_with(':') || host.contains(['/', '?', '#', '@']) {
        return None;
    }
    let url = url::Url::parse(&format!("http://{host}")).ok()?;
    bare_authority(&url)
        .then(|| url.host_str().map(str::to_ascii_lowercase))
        .flatten()
}

/// Whether a request's `Host` names this server: absent (not a browser:
/// every browser sends one) or one of `allowed` on any port. A page served
/// from a name that resolves to loopback (DNS rebinding) carries its own
/// name here, and is refused.
pub fn host_allowed(host: Option<&str>, allowed: &[String]) -> bool {
    let Some(host) = host else { return true };
    host_name(host).is_some_and(|h| allowed.iter().any(|a| a.eq_ignore_ascii_case(&h)))
}

/// The names this server answers to: the loopback names, the address it
/// listens on (unless it is the wildcard), and the host of its public base.
pub fn allowed_hosts(listen: std::net::SocketAddr, public_base: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = crate::constants::MCP_ALLOWED_ORIGIN_HOSTS
        .iter()
        .map(|h| h.to_string())
        .collect();
    if !listen.ip().is_unspecified() {
        v.push(match listen {
            std::net::SocketAddr::V4(a) => a.ip().to_string(),
            std::net::SocketAddr::V6(a) => format!("[{}]", a.ip()),
        });
    }
    let base_host = public_base.and_then(|b| {
        let rest = b.split_once("://").map_or(b, |(_, r)| r);
        host_name(rest.split('/').next().unwrap_or(""))
    });
    v.extend(base_host);
    v.sort();
    v.dedup();
    v
}

/// A window registered again keeps its hinted rooms and gains only the
/// rooms it never hinted before (production adds rows `ON CONFLICT DO
/// NOTHING`, seed 002 L7 §0.7): `old` first, then each new room of `new`.
pub fn merge_rooms_hint(old: &[ConversationId], new: &[ConversationId]) -> Vec<ConversationId> {
    let mut out = old.to_vec();
    for r in new {
        if !out.contains(r) {
            out.push(*r);
        }
    }
    out
}

/// What a window handles:
/// - revoked → `none`, reason `revoked`;
/// - a rooms hint → `rooms`: the hinted rooms the account is a member of;
/// - a fallback hint → `fallback`, excluding every room that another present
///   window of the same account handles in `rooms` mode;
/// - neither → `none`, reason `no_assignment`.
pub fn window_assignment(
    me: &WindowView,
    others: &[WindowView],
    member_rooms: &[ConversationId],
    now: i64,
    presence_timeout_secs: i64,
) -> WindowSync {
    if me.revoked {
        return WindowSync {
            mode: WindowMode::None,
            rooms: vec![],
            exclude: vec![],
            reason: Some("revoked".into()),
        };
    }
    if !me.rooms_hint.is_empty() {
        let rooms: BTreeSet<_> = me
            .rooms_hint
            .iter()
            .filter(|r| member_rooms.contains(r))
            .copied()
            .collect();
        return WindowSync {
            mode: WindowMode::Rooms,
            rooms: rooms.into_iter().collect(),
            exclude: vec![],
            reason: None,
        };
    }
    if me.fallback_hint {
        let exclude: BTreeSet<_> = others
            .iter()
            .filter(|w| {
                w.window_id != me.window_id
                    && !w.revoked
                    && is_present(w.last_sync_at, now, presence_timeout_secs)
            })
            .flat_map(|w| w.rooms_hint.iter().copied())
            .collect();
        return WindowSync {
            mode: WindowMode::Fallback,
            rooms: vec![],
            exclude: exclude.into_iter().collect(),
            reason: None,
        };
    }
    WindowSync {
        mode: WindowMode::None,
        rooms: vec![],
        exclude: vec![],
        reason: Some("no_assignment".into()),
    }
}

/// Whether an account may log in with the fixed code. Production (seed 002
/// L5, L31): agent accounts only when `fixed_otp` (a reinforcement account
/// has none). A person logs in with a one-time code the operator issues
/// (`hoop backend user code`), as production's mailed OTP: the fixed code is
/// public, and would let anyone log in as them. An inactive account logs in
/// no way.
pub fn fixed_code_login(is_agent: bool, fixed_otp: bool, active: bool) -> bool {
    active && is_agent && fixed_otp
}

/// A reinforcement application's name as production takes it (seed 002
/// L29: `^[a-z][a-z0-9_]{1,19}$`, then `_aid` appended); `Err` says why not.
pub fn reinforcement_name(name: &str) -> Result<String, String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let len = name.chars().count();
    if first_ok && rest_ok && (2..=20).contains(&len) {
        Ok(format!(
            "{name}{}",
            crate::constants::REINFORCEMENT_NAME_SUFFIX
        ))
    } else {
        Err(format!(
            "invalid name {name:?}: 2 to 20 characters, a lowercase letter first, then \
             lowercase letters, digits or '_'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CardStatus::*;

    #[test]
    fn hosts_this_server_answers_to() {
        let allowed = allowed_hosts(
            "127.0.0.1:8080".parse().unwrap(),
            Some("https://Hoop.Example.com:8443/base"),
        );
        let cases: &[(Option<&str>, bool)] = &[
            (None, true),
            (Some("127.0.0.1:8080"), true),
            (Some("localhost"), true),
            (Some("LOCALHOST:1"), true),
            (Some("[::1]:9"), true),
            (Some("hoop.example.com"), true),
            (Some("evil.example:8080"), false),
            (Some("127.0.0.1.evil.example"), false),
            (Some("localhost:x"), false),
            (Some("[::1"), false),
            (Some(""), false),
        ];
        for &(host, want) in cases {
            assert_eq!(host_allowed(host, &allowed), want, "{host:?}");
        }
        let wild = allowed_hosts("0.0.0.0:1".parse().unwrap(), None);
        assert!(!wild.contains(&"0.0.0.0".to_string()));
        let v6 = allowed_hosts("[::1]:1".parse().unwrap(), None);
        assert!(v6.contains(&"[::1]".to_string()));
    }

    #[test]
    fn a_redeem_joins_only_the_room_its_key_names() {
        type Row = (Option<i64>, Option<i64>, Result<Option<i64>, i64>);
        let cases: &[Row] = &[
            (Some(7), None, Ok(Some(7))),
            (Some(7), Some(7), Ok(Some(7))),
            (None, None, Ok(None)),
            (Some(7), Some(8), Err(8)),
            (None, Some(8), Err(8)),
        ];
        for &(key, asked, want) in cases {
            assert_eq!(redeem_room(key, asked), want, "key {key:?} asked {asked:?}");
        }
    }

    #[test]
    fn key_expiry_defaults_and_clamps() {
        let (d, m) = (90, 365);
        let cases: &[(i64, Option<i64>, i64)] = &[
            (1000, None, 1090),
            (1000, Some(0), 1090),
            (1000, Some(-5), 1090),
            (1000, Some(10), 1010),
            (1000, Some(365), 1365),
            (1000, Some(366), 1365),
            (1000, Some(i64::MAX), 1365),
            (i64::MAX - 1, None, i64::MAX),
        ];
        for (now, ttl, want) in cases {
            assert_eq!(key_expiry(*now, *ttl, d, m), *want, "{now} {ttl:?}");
        }
        let live: &[(i64, i64, bool)] = &[
            (100, 100, true),
            (100, 130, true),
            (100, 131, false),
            (i64::MAX, i64::MAX, true),
        ];
        for (exp, now, want) in live {
            assert_eq!(key_live(*exp, *now, 30), *want, "{exp} {now}");
        }
    }

    #[test]
    fn origin_absent_or_allow_listed_passes() {
        let allow = &["localhost", "127.0.0.1", "[::1]"];
        let cases: &[(Option<&str>, bool)] = &[
            (None, true),
            (Some("http://localhost"), true),
            (Some("http://localhost:5173"), true),
            (Some("https://127.0.0.1:8443"), true),
            (Some("http://[::1]:80"), true),
            (Some("http://evil.example"), false),
            (Some("http://localhost.evil.example"), false),
            (Some("http://localhost:80/path"), false),
            (Some("http://localhost:"), false),
            (Some("null"), false),
            (Some(""), false),
            (Some("file://localhost"), false),
        ];
        for (origin, want) in cases {
            assert_eq!(origin_allowed(*origin, allow), *want, "{origin:?}");
        }
    }

    #[test]
    fn re_registration_adds_only_rooms_without_a_record() {
        let cases: &[(&[i64], &[i64], &[i64])] = &[
            (&[], &[], &[]),
            (&[], &[1, 2], &[1, 2]),
            (&[1, 2], &[], &[1, 2]),
            (&[1, 2], &[2, 3], &[1, 2, 3]),
            (&[3], &[1, 3, 1], &[3, 1]),
        ];
        for (old, new, want) in cases {
            assert_eq!(&merge_rooms_hint(old, new), want, "{old:?} + {new:?}");
        }
    }

    #[test]
    fn rate_window_is_a_fixed_calendar_minute() {
        let mut w = FixedWindow::default();
        // Three calls late in minute 1 (60..120) fill it.
        for t in [100, 110, 119] {
            assert_eq!(w.check(t, 3), Ok(()));
            w.record(t);
        }
        // (now, want): refused until the minute ends, then a fresh bucket.
        let cases: &[(i64, Result<(), u64>)] = &[(119, Err(1)), (110, Err(10)), (120, Ok(()))];
        for (now, want) in cases {
            assert_eq!(w.check(*now, 3), *want, "{now}");
        }
        assert_eq!(
            w,
            FixedWindow {
                minute: 2,
                count: 0
            }
        );
        // A sliding window would still refuse at 121; a fixed one does not.
        w.record(120);
        assert_eq!(w.check(121, 3), Ok(()));
        // Negative and extreme clocks never overflow.
        assert!(FixedWindow::default().check(i64::MAX, 1).is_ok());
        assert!(FixedWindow::default().check(i64::MIN, 1).is_ok());
    }

    #[test]
    fn usage_negative_is_not_reported() {
        assert_eq!(normalize_usage(Some(-1)), None);
        assert_eq!(normalize_usage(None), None);
        assert_eq!(normalize_usage(Some(0)), Some(0));
        assert_eq!(normalize_usage(Some(12)), Some(12));
    }

    #[test]
    fn usage_upsert_never_overwrites_with_null_or_negative() {
        let cases: &[(Option<i64>, Option<i64>, Option<i64>)] = &[
            (None, None, None),
            (None, Some(5), Some(5)),
            (Some(5), None, Some(5)),
            (Some(5), Some(-1), Some(5)),
            (None, Some(-1), None),
            (Some(5), Some(0), Some(0)),
            (Some(5), Some(3), Some(3)),
            (Some(i64::MAX), Some(i64::MAX), Some(i64::MAX)),
            (Some(i64::MAX), Some(i64::MIN), Some(i64::MAX)),
        ];
        for (stored, reported, want) in cases {
            assert_eq!(
                upsert_usage(*stored, *reported),
                *want,
                "{stored:?} ← {reported:?}"
            );
        }
    }

    #[test]
    fn card_cost_is_end_minus_start() {
        let cases: &[(Option<i64>, Option<i64>, Option<i64>)] = &[
            (Some(100), Some(250), Some(150)),
            (Some(0), Some(0), Some(0)),
            (Some(7), Some(7), Some(0)),
            (None, Some(250), None),
            (Some(100), None, None),
            (None, None, None),
            (Some(300), Some(250), None),
            (Some(0), Some(i64::MAX), Some(i64::MAX)),
            (Some(i64::MAX), Some(i64::MAX), Some(0)),
            (Some(-1), Some(i64::MAX), None),
            (Some(i64::MIN), Some(i64::MAX), None),
        ];
        for (start, end, want) in cases {
            assert_eq!(card_cost(*start, *end), *want, "{start:?} → {end:?}");
        }
    }

    type Case = (
        CardStatus,
        CardStatus,
        Option<&'static str>,
        Result<Finish, Refusal>,
    );

    #[test]
    fn transitions() {
        assert_eq!(claim(Queued), Ok(Working));
        for s in [Working, Done, Failed, Cancelled] {
            assert_eq!(claim(s), Err(Refusal::NotClaimable), "{s:?}");
        }
        use Finish::{Move, Unchanged};
        let cases: &[Case] = &[
            (Working, Done, None, Ok(Move(Done))),
            (Working, Failed, Some("boom"), Ok(Move(Failed))),
            (Working, Failed, None, Err(Refusal::ErrorRequired)),
            (Working, Failed, Some("  "), Err(Refusal::ErrorRequired)),
            (Working, Cancelled, None, Ok(Move(Cancelled))),
            (Queued, Cancelled, None, Ok(Move(Cancelled))),
            (Queued, Done, None, Err(Refusal::InvalidTransition)),
            (Working, Working, None, Err(Refusal::InvalidTransition)),
            (Queued, Working, None, Err(Refusal::InvalidTransition)),
            // A finished card is never an error to finish again.
            (Done, Cancelled, None, Ok(Unchanged)),
            (Done, Done, None, Ok(Unchanged)),
            (Failed, Failed, Some("x"), Ok(Unchanged)),
            (Failed, Failed, None, Ok(Unchanged)),
            (Cancelled, Done, None, Ok(Unchanged)),
            // …but it cannot be brought back.
            (Done, Working, None, Err(Refusal::InvalidTransition)),
            (Cancelled, Queued, None, Err(Refusal::InvalidTransition)),
        ];
        for (from, to, err, want) in cases {
            assert_eq!(finish(*from, *to, *err), *want, "{from:?}->{to:?}");
        }
    }

    #[test]
    fn leases() {
        assert_eq!(renew(Working, 100, 300), Ok(400));
        for s in [Queued, Done, Failed, Cancelled] {
            assert_eq!(renew(s, 100, 300), Err(Refusal::NotWorking));
        }
        assert_eq!(progress_lease(None, 100, 300), None, "never opens");
        assert_eq!(progress_lease(Some(150), 100, 300), Some(400));
        assert_eq!(progress_lease(Some(900), 100, 300), Some(900));
    }

    #[test]
    fn presence() {
        assert!(!is_present(None, 1000, 180));
        assert!(is_present(Some(1000 - 179), 1000, 180));
        assert!(!is_present(Some(1000 - 180), 1000, 180));
    }

    #[test]
    fn mentions_of_non_members_are_dropped() {
        let m = [
            Mention::User(1),
            Mention::User(9),
            Mention::EVERYONE,
            Mention::User(1),
            Mention::EVERYONE,
        ];
        assert_eq!(
            filter_mentions(&m, &[1, 2]),
            vec![Mention::User(1), Mention::EVERYONE]
        );
    }

    fn w(id: &str, rooms: &[i64], fallback: bool, sync: Option<i64>) -> WindowView {
        WindowView {
            window_id: id.into(),
            revoked: false,
            rooms_hint: rooms.to_vec(),
            fallback_hint: fallback,
            last_sync_at: sync,
        }
    }

    #[test]
    fn window_assignment_table() {
        let now = 10_000;
        let a = w("a", &[1, 2, 99], false, Some(now));
        let s = window_assignment(&a, &[], &[1, 2, 3], now, 180);
        assert_eq!((s.mode, s.rooms.clone()), (WindowMode::Rooms, vec![1, 2]));

        let fb = w("f", &[], true, Some(now));
        let stale = w("s", &[3], false, Some(now - 500));
        let all = [a.clone(), fb.clone(), stale];
        let s = window_assignment(&fb, &all, &[1, 2, 3], now, 180);
        assert_eq!(s.mode, WindowMode::Fallback);
        assert_eq!(s.exclude, vec![1, 2, 99], "stale windows exclude nothing");

        let mut r = a.clone();
        r.revoked = true;
        let s = window_assignment(&r, &[], &[1], now, 180);
        assert_eq!(
            (s.mode, s.reason.as_deref()),
            (WindowMode::None, Some("revoked"))
        );

        let n = w("n", &[], false, None);
        assert_eq!(
            window_assignment(&n, &[], &[1], now, 180).mode,
            WindowMode::None
        );
    }

    #[test]
    fn fixed_code_login_table() {
        // (is_agent, fixed_otp, active) → may log in with the fixed code
        let cases = [
            ((true, true, true), true),     // a sentinel account
            ((true, false, true), false),   // a reinforcement account
            ((false, false, true), false),  // a person: one-time code only
            ((false, true, true), false),   // a person: one-time code only
            ((true, true, false), false),   // inactive
            ((true, false, false), false),  // inactive
            ((false, false, false), false), // inactive
            ((false, true, false), false),  // inactive
        ];
        for ((agent, otp, active), want) in cases {
            assert_eq!(
                fixed_code_login(agent, otp, active),
                want,
                "agent={agent} fixed_otp={otp} active={active}"
            );
        }
    }

    #[test]
    fn reinforcement_name_table() {
        let ok = [
            ("ab", "ab_aid"),
            ("nova", "nova_aid"),
            ("a1_b2", "a1_b2_aid"),
        ];
        for (name, want) in ok {
            assert_eq!(reinforcement_name(name).as_deref(), Ok(want), "{name:?}");
        }
        let twenty = "a".repeat(20);
        assert_eq!(reinforcement_name(&twenty), Ok(format!("{twenty}_aid")));
        for bad in [
            "",
            "a",
            "1ab",
            "_ab",
            "Ab",
            "aB",
            "a-b",
            "a b",
            "ab.",
            "中文",
            &"a".repeat(21),
        ] {
            assert!(reinforcement_name(bad).is_err(), "{bad:?}");
        }
    }
}
