//! The act_guard verdict table (`data/act_cases.tsv`) through the pure
//! verdict function, plus the property that any input yields a decision.

#![allow(clippy::field_reassign_with_default)] // tests tweak one field at a time

use hoop_guards::act::{self, ActConfig, Verdict};

/// One row of the table.
pub struct Row {
    /// The rule that must block; None = allow.
    pub want: Option<String>,
    pub class: String,
    /// `natural` or `adversarial`.
    pub origin: String,
    pub cmd: String,
}

pub fn rows() -> Vec<Row> {
    let text = include_str!("data/act_cases.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut cols = l.splitn(4, '\t');
            let mut col = || cols.next().expect("four TAB-separated columns");
            let (want, class, origin, cmd) = (col(), col(), col(), col());
            assert!(
                matches!(origin, "natural" | "adversarial"),
                "origin {origin:?} in {l:?}"
            );
            Row {
                want: (want != "allow").then(|| want.to_string()),
                class: class.to_string(),
                origin: origin.to_string(),
                cmd: cmd.replace('⏎', "\n"),
            }
        })
        .collect()
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
        let got_rule = match &got {
            Verdict::Unchecked(_) => Some("unchecked".to_string()),
            v => v.block().map(|b| b.rule.name().to_string()),
        };
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

#[test]
fn every_rule_has_rows_in_both_directions() {
    let cases = cases();
    for rule in act::Rule::ALL {
        let n = cases
            .iter()
            .filter(|c| c.0.as_deref() == Some(rule.name()))
            .count();
        assert!(n >= 5, "rule {rule} has only {n} blocking rows");
    }
}

#[test]
fn disarming_one_rule_lets_only_its_rows_through() {
    // Each rule is load-bearing: with it disarmed, its blocking rows pass
    // (or fall to a lesser rule), so removing a rule fails this table.
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
            if want.as_deref() == Some(rule.name()) {
                let got = act::check(&cmd, &cfg);
                assert_ne!(
                    got.block().map(|b| b.rule),
                    Some(rule),
                    "{cmd:?} still blocked by the disarmed {rule}"
                );
            }
        }
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
}

#[test]
fn unparsable_is_allowed_but_reported() {
    let cfg = ActConfig::default();
    assert!(matches!(act::check("ls (", &cfg), Verdict::Unparsed(_)));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    #[test]
    fn any_input_yields_a_decision(s in "(\\PC|\\pC){0,200}") {
        let _ = act::check(&s, &ActConfig::default());
    }

    #[test]
    fn shell_shaped_input_yields_a_decision(
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
        let _ = act::check(&s, &ActConfig::default());
    }
}
