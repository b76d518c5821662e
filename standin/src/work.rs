//! [`crate::Reply::Work`]: a scripted agent that answers the messages it was
//! given as work and names their ids, so a test can check per message id that
//! every message was answered exactly once.
//!
//! It reads only what a real agent reads: the round's instructions (the
//! `- [message N]` lines under a room's "To answer" header, and the room's
//! `hoop say --home H --room R` line) and the output of the commands it ran.
//! It keeps no state between requests: what it still has to answer travels in
//! the command it ran (`answer to N M` in a `hoop say`, or a `# pending: N M`
//! comment after a `hoop read`), so a new CLI process after a kill behaves
//! the same.
//!
//! Not every message gets an answer: one whose text closes the thread
//! ([`PASS_CLOSING`], "that's all") or is an @everyone ([`PASS_EVERYONE`])
//! is passed on with `hoop pass --ids …` instead (recorded in the home,
//! never posted), as the prompt parts tell a real agent to.
//!
//! After a command's output it decides per room:
//! - `sent #…` → that room is done;
//! - the output says more unread messages exist ("more unread after
//!   these") → run `hoop read` for the room, carrying what is pending;
//! - the output printed messages (`#N @user: …`) → answer them too, with
//!   what was pending, in one `hoop say`;
//! - a `hoop read` ran → send the answer;
//! - anything else (a transport failure, a rate limit) → give up for the
//!   turn and end it in plain text, as an agent would.

use serde_json::Value;

/// The `description` of every Bash call a work reply makes: how a follow-up
/// request is recognised as belonging to a work reply.
pub const WORK_MARK: &str = "Answer the messages given as work";
/// The body of an answer starts with this, followed by the ids.
pub const ANSWER_PREFIX: &str = "answer to";
/// At most this many command round trips in one turn.
pub const WORK_MAX_STEPS: usize = 8;
/// The text that ends a turn.
pub const WORK_DONE: &str = "Done.";

/// A message whose text contains this (any case) closes the thread: it is
/// passed on, not answered.
pub const PASS_CLOSING: &str = "that's all";
/// A message whose text contains this is an @everyone: passed on, not
/// answered (another member covers it).
pub const PASS_EVERYONE: &str = "@everyone";
/// The reason a pass gives for each kind.
pub const PASS_WHY_CLOSING: &str = "the person closed the thread; nothing to answer";
pub const PASS_WHY_EVERYONE: &str = "an @everyone another member covers; not mine to answer";

/// Whether a message with this text is passed on rather than answered, and why.
pub fn pass_reason(text: &str) -> Option<&'static str> {
    let t = text.to_lowercase();
    if t.contains(PASS_CLOSING) {
        Some(PASS_WHY_CLOSING)
    } else if t.contains(PASS_EVERYONE) {
        Some(PASS_WHY_EVERYONE)
    } else {
        None
    }
}

/// The room a command is about and what is still to be answered there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomWork {
    pub home: String,
    pub room: i64,
    pub ids: Vec<i64>,
    /// Messages to pass on, with the reason.
    pub passes: Vec<(i64, &'static str)>,
}

/// The ids named in a `hoop pass` command (`--ids 3,5`); empty otherwise.
pub fn passed_ids(cmd: &str) -> Vec<i64> {
    cmd.split(" ; ")
        .filter(|seg| seg.starts_with("hoop pass"))
        .filter_map(|seg| seg.split("--ids ").nth(1))
        .flat_map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|t| t.parse().ok())
                .collect::<Vec<i64>>()
        })
        .collect()
}

/// The ids named in an answer body (`answer to 3 5 8`); empty when the body
/// is not an answer.
pub fn answered_ids(body: &str) -> Vec<i64> {
    body.strip_prefix(ANSWER_PREFIX)
        .map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .filter_map(|t| t.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The work in a round's instructions: per room, the ids listed under "To
/// answer", in the order listed.
pub fn work_in_instructions(text: &str) -> Vec<RoomWork> {
    let mut out: Vec<RoomWork> = vec![];
    let mut answering = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Conversation ") {
            let room = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|t| t.parse().ok());
            if let Some(room) = room {
                out.push(RoomWork {
                    home: String::new(),
                    room,
                    ids: vec![],
                    passes: vec![],
                });
            }
            answering = false;
        } else if line.starts_with("To answer") {
            answering = true;
        } else if let Some(rest) = line.strip_prefix("- [message ") {
            if answering
                && let Some(w) = out.last_mut()
                && let Some(id) = rest.split(']').next().and_then(|t| t.parse().ok())
            {
                match pass_reason(rest) {
                    Some(why) => w.passes.push((id, why)),
                    None => w.ids.push(id),
                }
            }
        } else if !line.starts_with("  ") {
            answering = false;
            if let Some((home, room)) = home_and_room(line)
                && let Some(w) = out.iter_mut().find(|w| w.room == room)
            {
                w.home = home;
            }
        }
    }
    out.retain(|w| (!w.ids.is_empty() || !w.passes.is_empty()) && !w.home.is_empty());
    out
}

/// `--home H --room R` anywhere in a line.
fn home_and_room(line: &str) -> Option<(String, i64)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
    };
    let home = after("--home")?.to_string();
    let room = after("--room")?.parse().ok()?;
    Some((home, room))
}

/// The command that answers `w`.
pub fn say_command(w: &RoomWork) -> String {
    let ids: Vec<String> = w.ids.iter().map(i64::to_string).collect();
    format!(
        "hoop say --home {} --room {} \"{ANSWER_PREFIX} {}\"",
        w.home,
        w.room,
        ids.join(" ")
    )
}

/// The command that passes on `w`'s passes (one per reason).
pub fn pass_command(w: &RoomWork) -> String {
    let mut whys: Vec<&str> = w.passes.iter().map(|(_, why)| *why).collect();
    whys.dedup();
    whys.iter()
        .map(|why| {
            let ids: Vec<String> = w
                .passes
                .iter()
                .filter(|(_, y)| y == why)
                .map(|(i, _)| i.to_string())
                .collect();
            format!(
                "hoop pass --home {} --room {} --ids {} \"{why}\"",
                w.home,
                w.room,
                ids.join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(" ; ")
}

/// The commands for a room: an answer for its ids, a pass for its passes.
fn room_commands(w: &RoomWork) -> Vec<String> {
    let mut v = vec![];
    if !w.ids.is_empty() {
        v.push(say_command(w));
    }
    if !w.passes.is_empty() {
        v.push(pass_command(w));
    }
    v
}

/// The command that reads the rest of a room, carrying what is pending.
pub fn read_command(w: &RoomWork) -> String {
    let ids: Vec<String> = w.ids.iter().map(i64::to_string).collect();
    format!(
        "hoop read --home {} --room {} # pending: {}",
        w.home,
        w.room,
        ids.join(" ")
    )
}

/// One command of a work reply, parsed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Say(RoomWork),
    Read(RoomWork),
}

/// Parse a command a work reply ran (segments joined with ` ; `); passes
/// are done once run and are not steps.
pub fn parse_command(cmd: &str) -> Vec<Step> {
    cmd.split(" ; ")
        .filter(|seg| !seg.starts_with("hoop pass"))
        .filter_map(|seg| {
            let (home, room) = home_and_room(seg)?;
            let ids_text = if seg.starts_with("hoop read") {
                seg.split("# pending:").nth(1).unwrap_or("")
            } else {
                seg.split(ANSWER_PREFIX).nth(1).unwrap_or("")
            };
            let ids = ids_text
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|t| t.parse().ok())
                .collect();
            let w = RoomWork {
                home,
                room,
                ids,
                passes: vec![],
            };
            Some(if seg.starts_with("hoop read") {
                Step::Read(w)
            } else {
                Step::Say(w)
            })
        })
        .collect()
}

/// What a command's output says about one room.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    sent: bool,
    read_hint: bool,
    shown: Vec<i64>,
    /// Shown messages to pass on rather than answer.
    pass: Vec<(i64, &'static str)>,
}

/// Split a command's output by room: a line that is not a message line and
/// names `room R` starts that room's section.
fn seen_by_room(output: &str, rooms: &[i64]) -> Vec<(i64, Seen)> {
    let mut out: Vec<(i64, Seen)> = rooms.iter().map(|r| (*r, Seen::default())).collect();
    let mut cur = 0usize;
    for line in output.lines() {
        let is_msg = line.starts_with('#');
        if !is_msg {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(r) = words
                .windows(2)
                .filter(|w| w[0] == "room")
                .find_map(|w| w[1].trim_end_matches([':', ',', '.']).parse::<i64>().ok())
                && let Some(i) = out.iter().position(|(room, _)| *room == r)
            {
                cur = i;
            }
        }
        let Some((_, s)) = out.get_mut(cur) else {
            continue;
        };
        if line.starts_with("sent #") {
            s.sent = true;
        }
        if line.contains("more unread after these") {
            s.read_hint = true;
        }
        if is_msg && !line.contains("(you)") {
            let id = line[1..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|t| t.parse::<i64>().ok());
            if let Some(id) = id
                && line[1..].contains(" @")
            {
                let text = line.split_once(": ").map_or("", |(_, t)| t);
                match pass_reason(text) {
                    Some(why) => s.pass.push((id, why)),
                    None => s.shown.push(id),
                }
            }
        }
    }
    out
}

/// The next command after `cmd` printed `output`; `None` ends the turn.
pub fn next_command(cmd: &str, output: &str) -> Option<String> {
    let steps = parse_command(cmd);
    let rooms: Vec<i64> = steps
        .iter()
        .map(|s| match s {
            Step::Say(w) | Step::Read(w) => w.room,
        })
        .collect();
    let seen = seen_by_room(output, &rooms);
    let mut next = vec![];
    for (step, (_, s)) in steps.iter().zip(seen) {
        let (w, was_read) = match step {
            Step::Say(w) => (w, false),
            Step::Read(w) => (w, true),
        };
        if s.sent {
            continue;
        }
        let mut w = w.clone();
        for id in s.shown {
            if !w.ids.contains(&id) {
                w.ids.push(id);
            }
        }
        if !s.pass.is_empty() {
            next.push(pass_command(&RoomWork {
                passes: s.pass,
                ..w.clone()
            }));
        }
        if s.read_hint && !was_read {
            next.push(read_command(&w));
        } else if (was_read && !w.ids.is_empty()) || w.ids.len() > ids_of(step).len() {
            next.push(say_command(&w));
        }
    }
    (!next.is_empty()).then(|| next.join(" ; "))
}

fn ids_of(s: &Step) -> &[i64] {
    match s {
        Step::Say(w) | Step::Read(w) => &w.ids,
    }
}

/// The first command of a work reply to a round's instructions.
pub fn first_command(instructions: &str) -> Option<String> {
    let work = work_in_instructions(instructions);
    let cmds: Vec<String> = work.iter().flat_map(room_commands).collect();
    (!cmds.is_empty()).then(|| cmds.join(" ; "))
}

/// For a follow-up request (its last message carries a tool_result): the
/// command of the last work Bash call and its output, when the call was a
/// work call, and how many work round trips this turn has made.
pub fn follow_up(body: &Value) -> Option<(String, String, usize)> {
    let messages = body["messages"].as_array()?;
    let last = messages.last()?;
    let result_text = last["content"]
        .as_array()?
        .iter()
        .find(|b| b["type"] == "tool_result")
        .map(|b| crate::message_text(&serde_json::json!({"content": b["content"]})))?;
    let assistant = messages.iter().rev().find(|m| m["role"] == "assistant")?;
    let tool = assistant["content"]
        .as_array()?
        .iter()
        .find(|b| b["type"] == "tool_use" && b["input"]["description"] == WORK_MARK)?;
    let cmd = tool["input"]["command"].as_str()?.to_string();
    let steps = messages
        .iter()
        .rev()
        .take_while(|m| {
            m["role"] == "assistant"
                || m["content"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
        })
        .filter(|m| m["role"] == "assistant")
        .count();
    Some((cmd, result_text, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSTR: &str = "📬 本轮指令\nYou are @bolt (user id 2).\n\n\
Conversation 1 (room \"ops\"):\nTo answer, newest first:\n- [message 12] @ada: q2\n  more\n- [message 10] @ada: q1\n\
Context only (already handled, or not addressed to you), newest first:\n- [message 11] you: a\n\
Reply in this conversation with exactly this command (plain text, no markdown):\n\
hoop say --home bolt --room 1 \"<your reply>\"\n\n\
Conversation 4 (room \"b\"):\nTo answer, newest first:\n- [message 30] @x: hi\n\
Reply in this conversation with exactly this command (plain text, no markdown):\n\
hoop say --home bolt --room 4 \"<your reply>\"\n";

    #[test]
    fn instructions_give_the_work_per_room() {
        assert_eq!(
            work_in_instructions(INSTR),
            vec![
                RoomWork {
                    home: "bolt".into(),
                    room: 1,
                    ids: vec![12, 10],
                    passes: vec![],
                },
                RoomWork {
                    home: "bolt".into(),
                    room: 4,
                    ids: vec![30],
                    passes: vec![],
                },
            ]
        );
        assert_eq!(
            first_command(INSTR).unwrap(),
            "hoop say --home bolt --room 1 \"answer to 12 10\" ; hoop say --home bolt --room 4 \"answer to 30\""
        );
    }

    /// "That's all" and an @everyone are passed on, the rest answered;
    /// the same in a refusal's printout.
    #[test]
    fn closing_words_and_everyone_are_passed_on() {
        let instr = "📬 本轮指令\n\nConversation 3 (room \"x\"):\nTo answer, newest first:\n\
- [message 22] @ada: @everyone standup in 5\n- [message 21] @ada: thanks, That's all for today\n\
- [message 20] @ada: ⚠️ prod is down\n\
hoop say --home bolt --room 3 \"<your reply>\"\n";
        let cmd = first_command(instr).unwrap();
        assert_eq!(
            cmd,
            "hoop say --home bolt --room 3 \"answer to 20\" ; \
hoop pass --home bolt --room 3 --ids 22 \"an @everyone another member covers; not mine to answer\" ; \
hoop pass --home bolt --room 3 --ids 21 \"the person closed the thread; nothing to answer\""
        );
        assert_eq!(passed_ids(&cmd), vec![22, 21]);
        // A pass alone needs no say.
        let only = "Conversation 3 (room \"x\"):\nTo answer, newest first:\n- [message 21] @ada: that's all\n\
hoop say --home bolt --room 3 \"<your reply>\"\n";
        assert_eq!(
            first_command(only).unwrap(),
            "hoop pass --home bolt --room 3 --ids 21 \"the person closed the thread; nothing to answer\""
        );
        // A refusal printed a closing message: passed, not answered.
        let say = "hoop say --home bolt --room 3 \"answer to 20\"";
        let out = "2 unread message(s) in room 3 — read them, then send again:\n#23 @ada: that's all, bye\n#24 @ada: one more q\n";
        assert_eq!(
            next_command(say, out).as_deref(),
            Some(
                "hoop pass --home bolt --room 3 --ids 23 \"the person closed the thread; nothing to answer\" ; hoop say --home bolt --room 3 \"answer to 20 24\""
            )
        );
        // The pass's own output ends it.
        let pass = "hoop pass --home bolt --room 3 --ids 23 \"x\"";
        assert_eq!(
            next_command(
                pass,
                "passed on #23 in room 3: recorded in this home, nothing posted\n"
            ),
            None
        );
    }

    #[test]
    fn answers_name_their_ids() {
        assert_eq!(answered_ids("answer to 12 10"), vec![12, 10]);
        assert_eq!(answered_ids("⚠️ this round failed"), Vec::<i64>::new());
    }

    #[test]
    fn follow_ups_table() {
        let say = "hoop say --home bolt --room 1 \"answer to 5\"";
        let read = "hoop read --home bolt --room 1 # pending: 5 6";
        let cases: &[(&str, &str, Option<&str>, &str)] = &[
            (say, "sent #9 to room 1\n", None, "sent: done"),
            (
                say,
                "2 unread message(s) in room 1 — read them\n#6 @ada: x\n#7 @ada: y\nhoop: not sent",
                Some("hoop say --home bolt --room 1 \"answer to 5 6 7\""),
                "refused with messages: answer them too",
            ),
            (
                say,
                "1 unread message(s) in room 1\n#6 @ada: x\n(12 more unread after these: run hoop read --home bolt --room 1)\n",
                Some("hoop read --home bolt --room 1 # pending: 5 6"),
                "more unread: read them",
            ),
            (
                read,
                "room 1: 2 unread message(s), oldest first\n#8 @ada: a\n#9 @ada: b\n",
                Some("hoop say --home bolt --room 1 \"answer to 5 6 8 9\""),
                "after a read: answer",
            ),
            (
                say,
                "hoop: could not reach the backend; nothing was sent",
                None,
                "transport failure: give up",
            ),
            (
                read,
                "room 1: history\n#4 @bolt (you): a\n",
                Some("hoop say --home bolt --room 1 \"answer to 5 6\""),
                "own messages are not work",
            ),
        ];
        for (cmd, out, want, why) in cases {
            assert_eq!(next_command(cmd, out).as_deref(), *want, "{why}");
        }
    }
}
