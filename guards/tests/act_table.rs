//! The act_guard verdict table (`data/act/*.tsv`, format in
//! `hoop_guards::act::table`) through the pure verdict function, plus the
//! property that any input yields a decision.

#![allow(clippy::field_reassign_with_default)] // tests tweak one field at a time

use hoop_guards::act::table::{self, Row};
use hoop_guards::act::{self, ActConfig, Verdict};

pub fn rows() -> Vec<Row> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/act");
    table::read_dir(&dir).unwrap_or_else(|e| panic!("the act_guard table: {e}"))
}

/// The expected rule (None = allow) and the command of every row.
pub fn cases() -> Vec<(Option<String>, String)> {
    rows().into_iter().map(|r| (r.want, r.cmd)).collect()
}

#[test]
fn verdict_table() {
    let cfg = ActConfig::default();
    let cases = cases();
    assert!(cases.len() >= 300, "the table has {} rows", cases.len());
    let mut failures = Vec::new();
    for (want, cmd) in &cases {
        let got = act::check(cmd, &cfg);
        // `unchecked`: refused because it cannot be analysed (fail closed).
        let got_rule = verdict_name(&got);
        if &got_rule != want {
            failures.push(format!("{cmd:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let blocks = cases.iter().filter(|c| c.0.is_some()).count();
    assert!(
        blocks > 100 && cases.len() - blocks > 100,
        "both directions are covered"
    );
}

/// Each rule's own family of rows (the table's class column): the allow
/// rows of these classes are the near misses of that rule — the dry run, the
/// scratch path, the safe sibling command.
const FAMILIES: [(&str, &[&str]); 8] = [
    (
        "destroy",
        &[
            "database",
            "device",
            "discard",
            "force-push",
            "vital-path",
            "overwrite",
            "history",
        ],
    ),
    ("steal", &["secrets"]),
    ("rm", &["rm", "mass-delete"]),
    ("rsync-delete", &["rsync"]),
    ("git-add-all", &["git-add"]),
    ("stash-pop", &["stash"]),
    ("flutter-run-device", &["flutter"]),
    ("release", &["release"]),
];

/// Fewest rows a rule has in each direction.
const MIN_ROWS_EACH_WAY: usize = 5;

#[test]
fn every_rule_has_rows_in_both_directions() {
    let rows = rows();
    for rule in act::Rule::ALL {
        let blocking = rows
            .iter()
            .filter(|r| r.want.as_deref() == Some(rule.name()))
            .count();
        assert!(
            blocking >= MIN_ROWS_EACH_WAY,
            "rule {rule} has only {blocking} blocking rows"
        );
        let (_, classes) = FAMILIES
            .iter()
            .find(|(name, _)| *name == rule.name())
            .unwrap_or_else(|| panic!("rule {rule} has no family of classes in FAMILIES"));
        let allowed = rows
            .iter()
            .filter(|r| r.want.is_none() && classes.contains(&r.class.as_str()))
            .count();
        assert!(
            allowed >= MIN_ROWS_EACH_WAY,
            "rule {rule} has only {allowed} allow rows in its classes {classes:?}"
        );
    }
}

#[test]
fn disarming_one_rule_lets_only_its_rows_through() {
    // Each rule is load-bearing: with it disarmed, its blocking rows pass
    // (or fall to a lesser rule), so removing a rule fails this table; and
    // it is only that rule: every other row keeps its exact verdict.
    for rule in act::Rule::ALL {
        let mut cfg = ActConfig::default();
        cfg.rules = act::parse_rules(
            &act::Rule::ALL
                .iter()
                .filter(|r| **r != rule)
                .map(|r| r.name())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .rules;
        for (want, cmd) in cases() {
            let got = act::check(&cmd, &cfg);
            if want.as_deref() == Some(rule.name()) {
                assert_ne!(
                    got.block().map(|b| b.rule),
                    Some(rule),
                    "{cmd:?} still blocked by the disarmed {rule}"
                );
            } else {
                assert_eq!(
                    verdict_name(&got),
                    want,
                    "{cmd:?} with {rule} disarmed: {got:?}"
                );
            }
        }
    }
}

/// The table's name for a verdict: the blocking rule, `unchecked`, or None
/// for allowed.
fn verdict_name(v: &Verdict) -> Option<String> {
    match v {
        Verdict::Unchecked(_) => Some("unchecked".to_string()),
        v => v.block().map(|b| b.rule.name().to_string()),
    }
}

#[test]
fn none_disarms_and_blocks_name_the_sub_command() {
    let mut cfg = ActConfig::default();
    let v = act::check("ls && bash -c 'echo hi; rm -rf build'", &cfg);
    let b = v.block().expect("blocked");
    assert_eq!(b.command, "rm -rf build", "the exact sub-command");
    let msg = b.to_string();
    assert!(msg.contains("`rm`") && msg.contains("Instead:"), "{msg}");
    cfg.rules = act::parse_rules("none").rules;
    assert_eq!(act::check("rm -rf /", &cfg), Verdict::Allow);
}

#[test]
fn release_owner_may_release() {
    let mut cfg = ActConfig::default();
    cfg.release.owners = vec!["nova".into()];
    assert!(act::check("npm publish", &cfg).is_block());
    cfg.agent = Some("bolt".into());
    assert!(act::check("npm publish", &cfg).is_block());
    cfg.agent = Some("nova".into());
    assert_eq!(act::check("npm publish", &cfg), Verdict::Allow);
}

#[test]
fn cwd_and_tmpdir_resolve_relative_targets() {
    let mut cfg = ActConfig::default();
    cfg.cwd = Some("/tmp/work".into());
    assert_eq!(act::check("rm -rf build", &cfg), Verdict::Allow);
    cfg.cwd = Some("/home/me/repo".into());
    assert!(act::check("rm -rf build", &cfg).is_block());
    cfg.tmpdir = Some("/var/folders/xy/T".into());
    assert_eq!(
        act::check("rm -rf /var/folders/xy/T/job", &cfg),
        Verdict::Allow
    );
}

#[test]
fn protected_branches_are_configurable() {
    let mut cfg = ActConfig::default();
    assert_eq!(act::check("git push -f origin trunk", &cfg), Verdict::Allow);
    cfg.protected = vec!["trunk".into()];
    assert!(act::check("git push -f origin trunk", &cfg).is_block());
    assert_eq!(act::check("git push -f origin main", &cfg), Verdict::Allow);
}

#[test]
fn absurd_nesting_is_refused_unchecked_never_crashes() {
    let cfg = ActConfig::default();
    for n in [300usize, 100_000] {
        let parens = format!("{}rm -rf ~{}", "( ".repeat(n), " )".repeat(n));
        assert!(
            matches!(act::check(&parens, &cfg), Verdict::Unchecked(_)),
            "{n}"
        );
        let subst = format!("echo {}ls{}", "$(".repeat(n), ")".repeat(n));
        assert!(
            matches!(act::check(&subst, &cfg), Verdict::Unchecked(_)),
            "{n}"
        );
    }
    assert!(act::check("bash -c \"bash -c 'rm -rf build'\"", &cfg).is_block());
    // `a && b && …` nests one tree level per operator.
    let chain = format!("{}rm -rf build", "true && ".repeat(20_000));
    assert!(matches!(act::check(&chain, &cfg), Verdict::Unchecked(_)));
    let short = format!("{}rm -rf build", "true && ".repeat(50));
    assert!(act::check(&short, &cfg).block().is_some());
    let huge = "ls; ".repeat(200_000);
    assert!(matches!(act::check(&huge, &cfg), Verdict::Unchecked(_)));
    // Pipelines long enough to make the parser's cost blow up are refused
    // before parsing; shorter ones are still checked.
    let slow = "a | ".repeat(20_000);
    match act::check(&slow, &cfg) {
        Verdict::Unchecked(why) => assert!(why.contains('|'), "{why}"),
        v => panic!("{v:?}"),
    }
    let long_ok = format!("{}rm -rf build", "cat x | ".repeat(100));
    assert!(act::check(&long_ok, &cfg).is_block());
    // `eval eval … ls`: each eval parses its arguments again.
    let deep = format!("{}ls", "eval ".repeat(20));
    assert!(matches!(act::check(&deep, &cfg), Verdict::Unchecked(_)));
    let ok = format!("{}ls", "eval ".repeat(3));
    assert_eq!(act::check(&ok, &cfg), Verdict::Allow);
    // Every misread line is repaired and parsed again, up to a bound: 32
    // joined lines are followed (the last line's `rm` is judged), 33 are
    // refused.
    let joined = |n: usize| {
        let pair = "ls | grep x | head\necho ok && ls\n";
        format!("{}rm -rf build && ls", pair.repeat(n))
    };
    for n in [1, 32] {
        let v = act::check(&joined(n), &cfg);
        assert_eq!(verdict_name(&v).as_deref(), Some("rm"), "{n}");
    }
    // A misreading with no repair says what reads right instead.
    match act::check("x=`date`\nrm -rf ` echo build`", &cfg) {
        Verdict::Unchecked(why) => assert!(why.contains("`$(…)` in place of backticks"), "{why}"),
        v => panic!("{v:?}"),
    }
    match act::check(&joined(33), &cfg) {
        Verdict::Unchecked(why) => assert!(why.contains("misread it more than"), "{why}"),
        v => panic!("{v:?}"),
    }
}

#[test]
fn blanks_before_broken_input_keep_the_verdict() {
    // tree-sitter's error recovery once read `  \ && -exec find -delete`
    // (blanks first) as `find -delete` and the unpadded text as `-exec …`.
    let cfg = ActConfig::default();
    let bare = "\\ && -exec find -delete rm rm";
    for pad in ["", " ", "  ", "\t", " \t "] {
        assert_eq!(
            verdict_name(&act::check(&format!("{pad}{bare}"), &cfg)),
            verdict_name(&act::check(bare, &cfg)),
            "{pad:?}"
        );
    }
}

#[test]
fn unparsable_is_allowed_but_reported() {
    let cfg = ActConfig::default();
    assert!(matches!(act::check("ls (", &cfg), Verdict::Unparsed(_)));
}

/// Characters a plain word of the table is made of: no quotes, expansions,
/// globs, operators or `~`, so quoting it changes nothing the shell runs.
fn is_plain_word(w: &str) -> bool {
    !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:@%+,=-".contains(&b))
}

/// Words whose meaning depends on being unquoted (`VAR=x cmd` is an
/// assignment, `'VAR=x'` a command; `'if'` is no keyword).
fn must_stay_unquoted(w: &str) -> bool {
    w.contains('=')
        || matches!(
            w,
            "if" | "then"
                | "else"
                | "elif"
                | "fi"
                | "for"
                | "while"
                | "until"
                | "do"
                | "done"
                | "case"
                | "esac"
                | "in"
                | "select"
                | "function"
                | "time"
        )
}

/// The rows spelled with plain words only, split at their single blanks,
/// with the verdict they want.
fn plain_rows() -> Vec<(Option<String>, Vec<String>)> {
    let rows: Vec<_> = cases()
        .into_iter()
        .filter(|(_, cmd)| cmd.split(' ').all(is_plain_word))
        .map(|(want, cmd)| (want, cmd.split(' ').map(str::to_string).collect()))
        .collect();
    assert!(rows.len() >= 300, "{} plain rows", rows.len());
    rows
}

/// `word` spelled in one of six ways the shell reads as the same word.
fn requote(word: &str, style: u8, at: usize) -> String {
    if must_stay_unquoted(word) {
        return word.to_string();
    }
    // A split point inside the word, for the styles that quote part of it.
    let k = 1 + at % word.len();
    let (head, tail) = word.split_at(k.min(word.len()));
    match style {
        0 => word.to_string(),
        1 => format!("'{word}'"),
        2 => format!("\"{word}\""),
        3 => format!("{head}''{tail}"),
        4 => format!("{head}'{tail}'"),
        _ => format!("\\{word}"),
    }
}

/// Blanks between words (and around the command): more of them, or tabs,
/// mean the same.
const BLANKS: [&str; 4] = [" ", "  ", "\t", " \t "];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    /// Any input gets a decision (never a panic), and blanks before it never
    /// change that decision.
    #[test]
    fn any_input_yields_a_decision_blanks_before_it_keep(s in "(\\PC|\\pC){0,200}") {
        let cfg = ActConfig::default();
        let v = act::check(&s, &cfg);
        let padded = act::check(&format!(" \t {s}"), &cfg);
        proptest::prop_assert_eq!(verdict_name(&v), verdict_name(&padded), "{:?}", s);
    }

    /// Shell-shaped soup gets a decision, and blanks before it keep it.
    #[test]
    fn shell_shaped_input_yields_a_decision_blanks_before_it_keep(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "rm", "-rf", "/", "~", "$HOME", "git", "push", "-f", "main", "bash", "-c", "'",
                "\"", "$(", ")", "`", "|", "&&", ";", "<<EOF\n", "\nEOF\n", "<<<", "xargs",
                "sudo", "env", "-S", "find", "-delete", "-exec", "{}", "\\;", "eval", "\\",
                "python3", "-c", "os.system(", "curl", "@.env", "(", "{", "}", "\n", "#",
            ]),
            0..40,
        )
    ) {
        let s = parts.join(" ");
        let cfg = ActConfig::default();
        let v = act::check(&s, &cfg);
        let padded = act::check(&format!("  {s}"), &cfg);
        proptest::prop_assert_eq!(verdict_name(&v), verdict_name(&padded), "{:?}", s);
    }

    /// A plain row of the table keeps its verdict when any of its words is
    /// quoted (whole, in part, or by a backslash) and the blanks between
    /// and around them change: the rules judge the words the shell runs,
    /// not their spelling.
    #[test]
    fn quoting_a_plain_word_or_changing_blanks_keeps_the_verdict(
        (want, words) in proptest::sample::select(plain_rows()),
        spell in proptest::collection::vec(
            (0u8..6, proptest::prelude::any::<usize>(), 0..BLANKS.len()),
            32,
        ),
        (lead, trail) in (0..BLANKS.len(), 0..BLANKS.len()),
    ) {
        let mut cmd = String::from(&BLANKS[lead][1..]);
        for (i, w) in words.iter().enumerate() {
            let (style, at, blank) = spell[i % spell.len()];
            if i > 0 {
                cmd.push_str(BLANKS[blank]);
            }
            cmd.push_str(&requote(w, style, at));
        }
        cmd.push_str(&BLANKS[trail][1..]);
        let got = act::check(&cmd, &ActConfig::default());
        proptest::prop_assert_eq!(
            verdict_name(&got),
            want,
            "{:?} (the row: {:?}) gave {:?}",
            cmd,
            words.join(" "),
            got
        );
    }
}
