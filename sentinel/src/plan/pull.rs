//! Pull (SPEC §2 step 2): how far to page back in one conversation. The
//! round fetches pages; [`pull_step`] says whether to fetch another and,
//! when done, which messages are fresh.

use hoop_api::types::{Message, MessageId, UnixSecs};
use hoop_core::limits::PULL_EXTRA_PAGES;

use crate::constants::NEW_ROOM_EXTRA_PAGES;

/// What to do after looking at the pages pulled so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullStep {
    /// Fetch one more page of messages older than `before`.
    Fetch { before: MessageId },
    /// Enough: the cursor was seen, history ended, or paging gave up.
    Done(Pulled),
}

/// The fresh messages of one conversation after pulling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// Messages newer than the cursor, oldest first (for a conversation with
    /// no cursor: everything pulled).
    pub fresh: Vec<Message>,
    /// The newest message id seen (where the cursor goes after the round).
    pub newest: Option<MessageId>,
    /// Paging stopped before the cursor was seen.
    pub missed: bool,
}

/// One page as the daemon received it (newest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub messages: Vec<Message>,
    pub has_more: bool,
}

/// Pull until the cursor is seen: one page, then up to
/// [`PULL_EXTRA_PAGES`] more with `?before=`. A conversation without a cursor
/// pages back until a message older than `floor` (the new-room backlog
/// limit, Unix seconds) or the start of history, at most
/// [`NEW_ROOM_EXTRA_PAGES`] more pages. `pages` are the pages fetched so far,
/// in fetch order; call again after each fetch.
pub fn pull_step(cursor: Option<MessageId>, floor: UnixSecs, pages: &[Page]) -> PullStep {
    let Some(last) = pages.last() else {
        // Nothing fetched yet: the caller fetches the newest page itself.
        return PullStep::Done(Pulled {
            fresh: vec![],
            newest: None,
            missed: false,
        });
    };
    let all = || pages.iter().flat_map(|p| p.messages.iter());
    let newest = all().map(|m| m.id).max();
    let done = |missed: bool| {
        let mut fresh: Vec<Message> = all()
            .filter(|m| cursor.is_none_or(|c| m.id > c))
            .cloned()
            .collect();
        fresh.sort_by_key(|m| m.id);
        fresh.dedup_by_key(|m| m.id);
        PullStep::Done(Pulled {
            fresh,
            newest,
            missed,
        })
    };
    if !last.has_more || last.messages.is_empty() {
        return done(false);
    }
    let (reached, extra_pages) = match cursor {
        Some(c) => (all().any(|m| m.id <= c), PULL_EXTRA_PAGES),
        None => (all().any(|m| m.created_at < floor), NEW_ROOM_EXTRA_PAGES),
    };
    if reached {
        return done(false);
    }
    if pages.len() as u32 > extra_pages {
        return done(true);
    }
    match all().map(|m| m.id).min() {
        Some(before) => PullStep::Fetch { before },
        None => done(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::{msg, page};

    #[test]
    fn pull_table() {
        // (cursor, pages, expected: Fetch(before) | Done(fresh ids, missed))
        enum Want {
            Fetch(i64),
            Done(Vec<i64>, bool),
        }
        let cases: Vec<(Option<i64>, Vec<Page>, Want, &str)> = vec![
            (
                Some(95),
                vec![page(86..=100, true)],
                Want::Done((96..=100).collect(), false),
                "cursor on the first page",
            ),
            (
                Some(80),
                vec![page(86..=100, true)],
                Want::Fetch(86),
                "cursor older: fetch before the oldest",
            ),
            (
                Some(80),
                vec![page(86..=100, true), page(71..=85, true)],
                Want::Done((81..=100).collect(), false),
                "seen on the second page",
            ),
            (
                Some(1),
                vec![
                    page(86..=100, true),
                    page(71..=85, true),
                    page(56..=70, true),
                    page(41..=55, true),
                ],
                Want::Done((41..=100).collect(), true),
                "four pages and still not seen: missed",
            ),
            (
                Some(1),
                vec![
                    page(86..=100, true),
                    page(71..=85, true),
                    page(56..=70, true),
                ],
                Want::Fetch(56),
                "three pages: one more is allowed",
            ),
            (
                Some(1),
                vec![page(90..=100, false)],
                Want::Done((90..=100).collect(), false),
                "history ended: nothing missed",
            ),
            (
                Some(100),
                vec![page(86..=100, true)],
                Want::Done(vec![], false),
                "nothing fresh",
            ),
            (
                None,
                vec![page(86..=100, true)],
                Want::Done((86..=100).collect(), false),
                "no cursor: the first page reaches the backlog limit",
            ),
            (
                Some(5),
                vec![Page {
                    messages: vec![],
                    has_more: false,
                }],
                Want::Done(vec![], false),
                "empty room",
            ),
        ];
        for (cursor, pages, want, why) in cases {
            // Floor 1090: for no cursor, the first page reaches the backlog limit.
            match (pull_step(cursor, 1_090, &pages), want) {
                (PullStep::Fetch { before }, Want::Fetch(b)) => assert_eq!(before, b, "{why}"),
                (PullStep::Done(p), Want::Done(ids, missed)) => {
                    assert_eq!(
                        p.fresh.iter().map(|m| m.id).collect::<Vec<_>>(),
                        ids,
                        "{why}"
                    );
                    assert_eq!(p.missed, missed, "{why}");
                }
                (got, _) => panic!("{why}: got {got:?}"),
            }
        }
    }

    #[test]
    fn pull_gives_up_after_the_extra_pages() {
        // Removing the page bound makes this fetch a fifth page.
        let pages: Vec<Page> = (0..1 + PULL_EXTRA_PAGES as i64)
            .map(|k| page(1000 - 15 * (k + 1) + 1..=1000 - 15 * k, true))
            .collect();
        assert!(matches!(pull_step(Some(1), 0, &pages), PullStep::Done(p) if p.missed));
    }

    #[test]
    fn a_first_seen_room_pages_back_to_the_backlog_limit() {
        // created_at = 1000 + id; floor 1010: messages 10.. are recent.
        let floor = 1_010;
        let first = vec![page(86..=100, true)];
        assert_eq!(
            pull_step(None, floor, &first),
            PullStep::Fetch { before: 86 },
            "all recent and more exist: page back"
        );
        let reached = vec![
            page(86..=100, true),
            page(71..=85, true),
            page(1..=70, true),
        ];
        assert!(matches!(
            pull_step(None, floor, &reached),
            PullStep::Done(p) if !p.missed && p.fresh.len() == 100
        ));
        let ended = vec![page(86..=100, true), page(80..=85, false)];
        assert!(matches!(pull_step(None, floor, &ended), PullStep::Done(p) if !p.missed));
        let many: Vec<Page> = (0..=NEW_ROOM_EXTRA_PAGES as i64)
            .map(|k| page(5000 - 15 * (k + 1) + 1..=5000 - 15 * k, true))
            .collect();
        assert!(matches!(pull_step(None, floor, &many), PullStep::Done(p) if p.missed));
    }

    proptest::proptest! {
        #[test]
        fn pull_never_panics_and_fresh_is_above_cursor(
            cursor in proptest::option::of(0i64..200),
            ids in proptest::collection::vec(0i64..200, 0..40),
            has_more in proptest::bool::ANY,
        ) {
            let mut ids = ids;
            ids.sort_unstable_by(|a, b| b.cmp(a));
            ids.dedup();
            let pages = vec![Page { messages: ids.iter().map(|i| msg(*i, 1, "x")).collect(), has_more }];
            if let PullStep::Done(p) = pull_step(cursor, 0, &pages) {
                proptest::prop_assert!(p.fresh.iter().all(|m| cursor.is_none_or(|c| m.id > c)));
                proptest::prop_assert!(p.fresh.windows(2).all(|w| w[0].id < w[1].id));
            }
        }
    }
}
