//! Every seed citation in `docs/backend-contract.md` (`L7`, `l.75`, `seed
//! 002 L19 …`) points at a non-blank line of seed 002 (issue 19 item 6).
//!
//! The seed lives outside the repository, so the check runs against the
//! excerpt table below: for each line the contract cites, one short term
//! that line contains (taken from the seed). A citation of a line not in the
//! table fails, so a new citation is added with its term, checked against
//! the seed. With `HOOP_SEED_002` naming the seed file, the table itself is
//! checked against it too (each row's line non-blank and holding its term),
//! and every seed quote in a paragraph of the contract must appear in one of
//! the lines that paragraph cites. (Checked so against the seed when this
//! test was written.)

/// (seed 002 line, a term that line contains).
const SEED_002: &[(u32, &str)] = &[
    (5, "fixed_otp"),
    (7, "hoopmcp_"),
    (9, "SSE"),
    (19, "window_register"),
    (21, "window_not_found"),
    (29, "/v1/reinforce/applications"),
    (31, "provision-keys"),
    (33, "409"),
    (51, "NewStreamableHTTPHandler"),
    (57, "suspectWith"),
    (69, "prompts/core.md"),
    (75, "is_agent"),
    (83, "window_sync"),
    (85, "spec{Name"),
    (94, "000185"),
    (95, "Redis"),
    (98, "AGENT_LOGIN_SECRET"),
];

const CONTRACT: &str = include_str!("../../../docs/backend-contract.md");

/// The seed line numbers `text` cites: `L<n>` or `l.<n>` / `l. <n>`, not
/// inside a word.
fn cited_lines(text: &str) -> Vec<u32> {
    let mut out = vec![];
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        let inside_word = prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_');
        prev = Some(c);
        if inside_word {
            continue;
        }
        let rest = &text[i..];
        let digits = if let Some(r) = rest.strip_prefix('L') {
            r
        } else if let Some(r) = rest.strip_prefix("l.") {
            r.trim_start_matches(' ')
        } else {
            continue;
        };
        let n: String = digits.chars().take_while(char::is_ascii_digit).collect();
        let after = digits[n.len()..].chars().next();
        if !n.is_empty() && !after.is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
            out.push(n.parse().unwrap());
        }
    }
    out
}

/// Paragraphs (bullets and blank-line blocks) of the contract.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for line in text.lines() {
        let starts = line.trim().is_empty() || line.starts_with("- ") || line.starts_with('#');
        if starts && !out.last().unwrap().is_empty() {
            out.push(String::new());
        }
        let last = out.last_mut().unwrap();
        last.push_str(line.trim());
        last.push(' ');
    }
    out
}

/// The quoted seed text of a paragraph: `"…"` spans holding non-ASCII text,
/// split at `…` (an elision), each piece of at least two characters.
fn seed_quotes(paragraph: &str) -> Vec<String> {
    let parts: Vec<&str> = paragraph.split('"').collect();
    parts
        .iter()
        .skip(1)
        .step_by(2)
        .filter(|q| !q.is_ascii())
        .flat_map(|q| q.split('…'))
        .map(|q| q.trim().to_string())
        .filter(|q| q.chars().count() >= 2)
        .collect()
}

#[test]
fn the_parser_finds_every_form_and_nothing_else() {
    assert_eq!(
        cited_lines("seed 002 L19 step 5; l.75: x, l. 94 and L7 §0.1 (L5, L31)"),
        vec![19, 75, 94, 7, 5, 31]
    );
    assert_eq!(cited_lines("HTTP/1.1 URL2 SQL3 L2x l.x"), Vec::<u32>::new());
}

#[test]
fn every_seed_citation_points_at_a_line_of_the_excerpt_table() {
    let known: Vec<u32> = SEED_002.iter().map(|(n, _)| *n).collect();
    let mut missing = vec![];
    for (i, line) in CONTRACT.lines().enumerate() {
        for n in cited_lines(line) {
            if !known.contains(&n) {
                missing.push(format!("contract line {}: L{n}", i + 1));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cited seed lines with no excerpt (blank, or not yet checked against the seed): {}",
        missing.join("; ")
    );
}

#[test]
fn the_excerpt_table_and_the_quotes_match_the_seed_when_it_is_at_hand() {
    let Ok(path) = std::env::var("HOOP_SEED_002") else {
        // A clean clone has no seed: the table stands for it.
        return;
    };
    let seed = std::fs::read_to_string(&path).expect("HOOP_SEED_002 names a readable file");
    let lines: Vec<&str> = seed.lines().collect();
    let line = |n: u32| lines.get(n as usize - 1).copied().unwrap_or("");
    let mut wrong = vec![];
    for (n, term) in SEED_002 {
        if line(*n).trim().is_empty() || !line(*n).contains(term) {
            wrong.push(format!("table L{n} {term:?}"));
        }
    }
    for p in paragraphs(CONTRACT) {
        let cited = cited_lines(&p);
        if cited.is_empty() {
            continue;
        }
        // Compared without whitespace (the contract wraps quotes across
        // lines); a quote joining two lines' words with " / " is found when
        // each side is.
        let bare = |s: &str| s.split_whitespace().collect::<String>();
        let found = |q: &str| cited.iter().any(|n| bare(line(*n)).contains(&bare(q)));
        for q in seed_quotes(&p) {
            if !found(&q) && !q.split(" / ").all(found) {
                wrong.push(format!("{q:?} is in none of L{cited:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
