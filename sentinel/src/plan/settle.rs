//! Settle (SPEC §2 step 6 and "What counts as handled"): after a turn,
//! per woken room, from the room re-read and what the agent recorded,
//! where the cursor may go and what becomes of the room. Pure.
//!
//! Decisions written down here:
//! - The cursor moves past a message only when it is handled: answered
//!   after it was shown, passed on, or not the account's. It moves only
//!   after a turn that exited 0.
//! - A message the turn offered that is still open is one of two things.
//!   Its reply FAILED (the turn failed, or a `hoop say` of this room failed
//!   during it): [`Verdict::Failed`], offered again after THIS room's
//!   backoff, and the room's failure count grows (the failure note is per
//!   room). Or the agent left it with neither a reply nor a pass:
//!   [`Verdict::Silent`], offered again — at most
//!   [`MAX_OFFERS`] times in all; after the last one the cursor moves past
//!   it with a warning ([`Event::GaveUp`]). Silence is never a failure.
//! - A message that arrived during the turn (never offered) only stops the
//!   cursor; the next round offers it.

use std::collections::{BTreeMap, BTreeSet};

use hoop_api::types::MessageId;

use super::classify::{Knowledge, Role, classify};
use super::decide::{Wake, in_range};
use super::events::{CursorWhy, Event};
use super::pull::Pulled;
use crate::constants::MAX_OFFERS;

/// How the turn ended, as settle needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnEnd {
    /// The turn exited 0: cursors may move.
    pub exit_ok: bool,
    /// A `hoop say` into this room failed during the turn.
    pub send_failed: bool,
}

/// What becomes of a woken room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Everything the turn offered is handled (or given up on).
    Done,
    /// Offered messages left with neither a reply nor a pass: offered again.
    Silent { again: Vec<MessageId> },
    /// The reply failed: offered again after the room's backoff.
    Failed { open: Vec<MessageId> },
}

/// Settle's answer for one room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Where the cursor may go (`None`: it stays).
    pub to: Option<MessageId>,
    pub verdict: Verdict,
    /// The room's offer counts after this turn (open offered messages only).
    pub offers: BTreeMap<MessageId, u32>,
    /// Messages given up on in this settle.
    pub gave_up: Vec<MessageId>,
    pub events: Vec<Event>,
}

/// Settle one woken room. `k` is what is known AFTER the turn (the say
/// watermark and the passes re-read); `pulled` is the room re-read from
/// the wake's cursor; `offers` the room's offer counts before the turn;
/// `offered` the work the prompt listed and delivered to a running agent
/// (only those count as an offer: a message the cap left out, or a prompt
/// that never reached the agent, uses none up).
pub fn settle(
    k: &Knowledge<'_>,
    wake: &Wake,
    pulled: &Pulled,
    offers: &BTreeMap<MessageId, u32>,
    offered: &BTreeSet<MessageId>,
    end: TurnEnd,
) -> Settled {
    let room = wake.conversation_id;
    let fresh = in_range(wake.floor, &pulled.fresh);
    let roles = classify(k, &fresh);
    let work = |id: MessageId| wake.to_answer.iter().any(|m| m.id == id);
    let mut events = vec![];
    for (m, r) in fresh.iter().zip(&roles) {
        if !work(m.id) {
            continue;
        }
        match r {
            Role::Answered { by } => events.push(Event::Answered {
                room,
                id: m.id,
                by: *by,
            }),
            Role::Passed => events.push(Event::Passed { room, id: m.id }),
            _ => {}
        }
    }
    let open: Vec<MessageId> = fresh
        .iter()
        .zip(&roles)
        .filter(|(_, r)| r.is_open())
        .map(|(m, _)| m.id)
        .collect();
    let open_work: Vec<MessageId> = open.iter().copied().filter(|id| work(*id)).collect();
    let failed = !end.exit_ok || end.send_failed;
    let mut new_offers = BTreeMap::new();
    let mut gave_up = vec![];
    let mut again = vec![];
    for id in &open_work {
        if failed || !offered.contains(id) {
            if let Some(n) = offers.get(id) {
                new_offers.insert(*id, *n);
            }
            if !failed {
                again.push(*id);
            }
        } else {
            let n = offers.get(id).copied().unwrap_or(0) + 1;
            if n >= MAX_OFFERS {
                gave_up.push(*id);
                events.push(Event::GaveUp {
                    room,
                    id: *id,
                    offers: n,
                });
            } else {
                new_offers.insert(*id, n);
                again.push(*id);
                events.push(Event::OfferedAgain {
                    room,
                    id: *id,
                    offer: n,
                });
            }
        }
    }
    let verdict = if failed && !open_work.is_empty() {
        events.push(Event::ReplyFailed {
            room,
            ids: open_work.clone(),
        });
        Verdict::Failed { open: open_work }
    } else if !again.is_empty() {
        Verdict::Silent { again }
    } else {
        Verdict::Done
    };
    let to = if !end.exit_ok {
        None
    } else {
        let first_open = open.iter().copied().find(|id| !gave_up.contains(id));
        match first_open {
            None => pulled.newest,
            Some(first) => pulled
                .fresh
                .iter()
                .map(|m| m.id)
                .filter(|id| *id < first)
                .max(),
        }
    };
    if let Some(to) = to {
        events.push(Event::CursorMoved {
            room,
            to,
            why: CursorWhy::Settled,
        });
    }
    Settled {
        to,
        verdict,
        offers: new_offers,
        gave_up,
        events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::classify::RoomPasses;
    use crate::plan::decide::Again;
    use crate::plan::testing::{ME, conv, msg};
    use hoop_api::types::Message;
    use std::collections::BTreeSet;

    fn wake(ai: u32, work: &[i64], floor: Option<i64>) -> Wake {
        let c = conv(ai);
        Wake {
            conversation_id: c.id,
            title: c.title,
            to: *work.iter().max().unwrap(),
            cursor: Some(5),
            context: vec![],
            to_answer: work.iter().map(|i| msg(*i, 1, "@bolt q")).collect(),
            missed: false,
            new_room: floor.is_some(),
            floor,
            is_workroom: false,
            multi_ai: ai >= 2,
            again: Again::default(),
        }
    }

    const OK: TurnEnd = TurnEnd {
        exit_ok: true,
        send_failed: false,
    };

    #[allow(clippy::too_many_arguments)]
    fn run(
        ai: u32,
        work: &[i64],
        floor: Option<i64>,
        after: Vec<Message>,
        shown: Option<i64>,
        passes: &RoomPasses,
        offers: &BTreeMap<i64, u32>,
        end: TurnEnd,
    ) -> Settled {
        let w = wake(ai, work, floor);
        let agents = BTreeSet::new();
        let k = Knowledge {
            me: ME,
            multi_ai: ai >= 2,
            shown,
            agents: &agents,
            passes,
        };
        let newest = after.iter().map(|m| m.id).max();
        let pulled = Pulled {
            fresh: after,
            newest,
            missed: false,
        };
        let offered: BTreeSet<i64> = work.iter().copied().collect();
        settle(&k, &w, &pulled, offers, &offered, end)
    }

    #[test]
    fn settle_table() {
        let me = ME.id;
        let reply = |i| msg(i, me, "a");
        let note = |i| msg(i, me, crate::constants::FAILURE_NOTICE);
        let q = |i| msg(i, 1, "@bolt q");
        let chat = |i| msg(i, 1, "for someone else");
        let none = RoomPasses::default();
        let no_offers = BTreeMap::new();
        let failed_send = TurnEnd {
            exit_ok: true,
            send_failed: true,
        };
        let failed_turn = TurnEnd {
            exit_ok: false,
            send_failed: false,
        };
        use Verdict::*;
        // (ai, work, floor, after the turn, shown, end, want cursor, want verdict, why)
        type Case = (
            u32,
            &'static [i64],
            Option<i64>,
            Vec<Message>,
            Option<i64>,
            TurnEnd,
            Option<i64>,
            Verdict,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                1,
                &[10],
                None,
                vec![q(10), reply(11)],
                Some(11),
                OK,
                Some(11),
                Done,
                "answered",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10)],
                Some(10),
                OK,
                None,
                Silent { again: vec![10] },
                "no answer, no pass: silent, offered again, cursor stays",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10), note(11)],
                Some(10),
                OK,
                None,
                Silent { again: vec![10] },
                "the fixed note is not an answer",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10)],
                Some(10),
                failed_send,
                None,
                Failed { open: vec![10] },
                "a hoop say failed: the reply failed, not silence",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10), reply(11)],
                Some(11),
                failed_send,
                Some(11),
                Done,
                "a failed send then a good one: answered",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10), reply(11)],
                Some(11),
                failed_turn,
                None,
                Done,
                "a failed turn that answered the room: no failure for it, no commit",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10)],
                Some(10),
                failed_turn,
                None,
                Failed { open: vec![10] },
                "a failed turn: its open rooms failed",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10), reply(11), q(12)],
                Some(11),
                OK,
                Some(11),
                Done,
                "a message after the answer waits for the next round",
            ),
            (
                1,
                &[10],
                None,
                vec![q(10), q(11), reply(12)],
                Some(10),
                OK,
                Some(10),
                Done,
                "a message the agent never saw stops the cursor",
            ),
            (
                1,
                &[10, 12],
                None,
                vec![q(10), reply(11), q(12)],
                Some(12),
                OK,
                Some(11),
                Silent { again: vec![12] },
                "part of the work answered",
            ),
            (
                2,
                &[10],
                None,
                vec![q(10), chat(11)],
                Some(11),
                OK,
                None,
                Silent { again: vec![10] },
                "several AIs: the mention is unanswered",
            ),
            (
                2,
                &[10],
                None,
                vec![q(10), reply(11), chat(12)],
                Some(11),
                OK,
                Some(12),
                Done,
                "several AIs: what is not mine does not stop the cursor",
            ),
            (
                1,
                &[10],
                Some(1_008),
                vec![q(3), q(10), reply(11)],
                Some(11),
                OK,
                Some(11),
                Done,
                "first-seen room: old history is not work",
            ),
        ];
        for (ai, work, floor, after, shown, end, want_to, want, why) in cases {
            let got = run(ai, work, floor, after, shown, &none, &no_offers, end);
            assert_eq!(got.to, want_to, "{why}");
            assert_eq!(got.verdict, want, "{why}");
        }
    }

    #[test]
    fn a_pass_is_handled_and_moves_the_cursor() {
        let passes = RoomPasses {
            ids: [10].into(),
            up_to: None,
        };
        let got = run(
            1,
            &[10],
            None,
            vec![msg(10, 1, "thanks, that's all")],
            Some(10),
            &passes,
            &BTreeMap::new(),
            OK,
        );
        assert_eq!((got.to, got.verdict.clone()), (Some(10), Verdict::Done));
        assert!(
            got.events.contains(&Event::Passed { room: 1, id: 10 }),
            "{:?}",
            got.events
        );
    }

    /// Silence is offered again at most twice more; the third silent offer
    /// gives up: the cursor moves past it with a GaveUp event.
    #[test]
    fn silence_is_offered_three_times_in_all_then_given_up() {
        let none = RoomPasses::default();
        let mut offers = BTreeMap::new();
        let mut seen = vec![];
        for _ in 0..MAX_OFFERS {
            let got = run(
                1,
                &[10],
                None,
                vec![msg(10, 1, "q")],
                Some(10),
                &none,
                &offers,
                OK,
            );
            seen.push((got.to, got.verdict.clone(), got.gave_up.clone()));
            offers = got.offers;
        }
        assert_eq!(
            seen,
            vec![
                (None, Verdict::Silent { again: vec![10] }, vec![]),
                (None, Verdict::Silent { again: vec![10] }, vec![]),
                (Some(10), Verdict::Done, vec![10]),
            ]
        );
        assert!(offers.is_empty());
        // A failed reply never uses up an offer.
        let before = BTreeMap::from([(10, 2)]);
        let failed = TurnEnd {
            exit_ok: true,
            send_failed: true,
        };
        let got = run(
            1,
            &[10],
            None,
            vec![msg(10, 1, "q")],
            Some(10),
            &none,
            &before,
            failed,
        );
        assert_eq!(got.verdict, Verdict::Failed { open: vec![10] });
        assert_eq!(got.offers, before);
        assert!(got.gave_up.is_empty());
    }

    /// Work the prompt did not list (the cap left it out) or a prompt that
    /// never reached the agent uses up no offer: it is offered again, and
    /// never given up unseen.
    #[test]
    fn only_delivered_work_counts_as_an_offer() {
        let w = wake(1, &[10, 11], None);
        let agents = BTreeSet::new();
        let none = RoomPasses::default();
        let k = Knowledge {
            me: ME,
            multi_ai: false,
            shown: Some(11),
            agents: &agents,
            passes: &none,
        };
        let pulled = Pulled {
            fresh: vec![msg(10, 1, "q"), msg(11, 1, "q")],
            newest: Some(11),
            missed: false,
        };
        let offers = BTreeMap::from([(10, 2), (11, 2)]);
        let got = settle(&k, &w, &pulled, &offers, &BTreeSet::from([11]), OK);
        assert_eq!(got.gave_up, vec![11], "11 was listed: its third offer");
        assert_eq!(
            got.offers,
            BTreeMap::from([(10, 2)]),
            "10 was not: no offer used"
        );
        assert_eq!(got.verdict, Verdict::Silent { again: vec![10] });
        assert_eq!(got.to, None, "the cursor stops before 10");
        let got = settle(&k, &w, &pulled, &BTreeMap::new(), &BTreeSet::new(), OK);
        assert!(got.offers.is_empty() && got.gave_up.is_empty());
        assert_eq!(
            got.verdict,
            Verdict::Silent {
                again: vec![10, 11]
            }
        );
    }
}
