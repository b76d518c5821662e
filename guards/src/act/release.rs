//! Release and upload commands (rule `release`, the list in
//! `~/.hoop/act_guard_release`): publishing is done by the release owner
//! only (`HOOP_AGENT`), because a release cannot be taken back. Rehearsals,
//! drafts and questions, and fastlane's safe lanes, publish nothing.

use super::Rule;
use super::config::{FASTLANE_SAFE_LANES, RELEASE_HARMLESS_WORDS};
use super::rules::{Hit, base};
use super::shell::{Analyser, Word};

pub(super) fn verdict(a: &Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>) {
    let rel = &a.cfg.release;
    let Some(first) = argv.first() else { return };
    let name = base(first);
    let matched = rel.commands.iter().find(|c| {
        c.first().is_some_and(|n| n == name) && {
            let mut it = argv[1..].iter();
            c[1..].iter().all(|want| it.any(|w| &w.text == want))
        }
    });
    let Some(m) = matched else { return };
    // A rehearsal, a draft or a question publishes nothing.
    if argv[1..]
        .iter()
        .any(|w| RELEASE_HARMLESS_WORDS.contains(&w.text.as_str()))
    {
        return;
    }
    if name == "fastlane" {
        let lane = argv[1..]
            .iter()
            .map(|w| w.text.as_str())
            .find(|t| !t.starts_with('-') && !matches!(*t, "ios" | "android" | "mac"));
        if lane.is_some_and(|l| FASTLANE_SAFE_LANES.contains(&l)) {
            return;
        }
    }
    if let Some(agent) = &a.cfg.agent
        && rel.owners.iter().any(|o| o == agent)
    {
        return;
    }
    let owners = if rel.owners.is_empty() {
        "none is configured in ~/.hoop/act_guard_release".to_string()
    } else {
        rel.owners.join(", ")
    };
    hits.push(Hit::new(
        Rule::Release,
        format!("`{}` is a release/upload command", m.join(" ")),
        format!("only the release owner (HOOP_AGENT = {owners}) releases; hand the build to them"),
    ));
}
