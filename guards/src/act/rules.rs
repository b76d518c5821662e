//! The rules, applied to one simple command at a time: [`run`] is what the
//! analyser calls for each command (handed to it by [`super::check`]);
//! [`super::exec`] peels wrappers and sends nested shell text back to the
//! parser; [`dispatch`] is the one place that lists the rule families, each
//! in its own file, and [`pick`] chooses the gravest armed finding.

use super::caches;
use super::decode;
use super::disks;
use super::exec::{self, is_assignment};
use super::flutter;
use super::git;
use super::overwrite;
use super::release;
use super::rm;
use super::rsync;
use super::shell::{Analyser, Cmd, Flow, Word};
use super::sql;
use super::steal;
use super::{Block, Rule};

/// A rule's finding on one command, before arming is considered.
pub(super) struct Hit {
    pub(super) rule: Rule,
    pub(super) why: String,
    pub(super) instead: String,
}

impl Hit {
    pub(super) fn new(rule: Rule, why: impl Into<String>, instead: impl Into<String>) -> Hit {
        Hit {
            rule,
            why: why.into(),
            instead: instead.into(),
        }
    }

    /// The block this finding makes of `command` (the span the operator
    /// reads).
    pub(super) fn into_block(self, command: &str) -> Block {
        Block {
            rule: self.rule,
            command: command.to_string(),
            why: self.why,
            instead: self.instead,
        }
    }
}

/// Entry point from the walker.
pub(crate) fn run(a: &mut Analyser<'_>, cmd: &Cmd, input: Flow) -> Flow {
    let first = cmd.words.iter().find(|w| !is_assignment(w));
    if let Some(h) = disks::redirect(&cmd.out_files, first).and_then(|h| pick(a, vec![h])) {
        a.block(h.into_block(&cmd.span));
        return Flow::default();
    }
    let stdin = cmd.stdin_text.clone().or_else(|| input.text.clone());
    let out = exec::exec(a, cmd, &cmd.words, &input, stdin.as_deref());
    if !first.is_some_and(|w| caches::creates_nothing(base(w))) {
        a.ran_before_rm = true;
    }
    out
}

pub(super) fn base(w: &Word) -> &str {
    let t = w.text.as_str();
    let t = t.trim_start_matches('\\');
    t.rsplit('/').next().unwrap_or(t)
}

pub(super) fn dispatch(
    a: &mut Analyser<'_>,
    cmd: &Cmd,
    argv: &[Word],
    input: &Flow,
    stdin: Option<&str>,
) -> Flow {
    let Some(first) = argv.first() else {
        return Flow::default();
    };
    let name = base(first).to_string();
    let name = name.as_str();
    // Commands that run other code: their code is analysed first.
    let Some(mut out) = exec::nested(a, cmd, name, argv, input, stdin) else {
        return Flow::default();
    };
    if a.hit.is_some() {
        return Flow::default();
    }
    // Every family's verdict on this argv, in one place (`pick` orders
    // them by rule); find -exec / xargs deletion and the block-device
    // redirections are judged where the list and the redirection are known.
    let mut hits = Vec::new();
    hits.extend(disks::verdict(name, argv));
    match name {
        "rm" => rm::verdict(a, argv, &mut hits),
        n if overwrite::handles(n) => hits.extend(overwrite::verdict(a, n, argv)),
        "git" => git::verdict(a, argv, &mut hits),
        "rsync" => rsync::verdict(a, argv, &mut hits),
        "flutter" => flutter::verdict(argv, &mut hits),
        _ => sql::verdict(name, argv, stdin, &mut hits),
    }
    // Decoded data nobody can read here, fed to a database client.
    if input.decoded && stdin.is_none() && sql::client(name, argv).is_some() {
        a.refuse(decode::UNKNOWN_INTO_CLIENT);
        return Flow::default();
    }
    steal::verdict(a, name, argv, cmd, input, &mut hits);
    release::verdict(a, argv, &mut hits);
    if let Some(h) = pick(a, hits) {
        a.block(h.into_block(&cmd.span));
        return Flow::default();
    }
    out.secret = steal::flows_secret(a, name, argv, cmd, input);
    steal::note_secret_copies(a, name, argv, cmd, input, out.secret);
    out.decoded = steal::is_decoder(name, argv);
    // A literal payload (`echo cm0g… | base64 -d`) decodes here: what
    // reads it reads known text.
    if decode::is_stdin_base64(name, argv)
        && let Some(t) = stdin.and_then(decode::base64_text)
    {
        out.text = Some(t);
        out.decoded = false;
    }
    exec::passes_on(a, cmd, name, argv, stdin, &mut out);
    out
}

/// The first finding of the highest-priority armed rule.
pub(super) fn pick(a: &Analyser<'_>, mut hits: Vec<Hit>) -> Option<Hit> {
    for rule in Rule::ALL {
        if !a.cfg.rules.contains(rule) {
            continue;
        }
        if let Some(pos) = hits.iter().position(|h| h.rule == rule) {
            return Some(hits.swap_remove(pos));
        }
    }
    None
}
