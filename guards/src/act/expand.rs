//! Expansions bash makes before a command runs whose result the text alone
//! decides, applied to shell text before it is parsed:
//!
//! - brace expansion: `{rm,-rf,src}` is the three words `rm -rf src`,
//!   `r{m,}` is `rm r`, `file{1..3}` is `file1 file2 file3`;
//! - `$IFS` (`${IFS}`, `${IFS:0:1}`, …) outside quotes: whatever IFS holds,
//!   an unquoted expansion of it is split away, so it separates words like a
//!   blank (`rm${IFS}-rf${IFS}src`).
//!
//! Quoted text, `${…}`, `$(…)`, backquotes, comments, here-document bodies,
//! redirection targets, assignments (bash expands neither braces nor IFS
//! there) and the word list of `for NAME in …` (data, and often a long
//! `{1..100000}`) are copied unchanged. A brace expansion that would make
//! more than [`MAX_BRACE_WORDS`] words is refused as too large to check,
//! like the other bounds.

use super::shell::heredoc_word;

/// Most words the brace expansions of one shell text may make. Real
/// commands expand a handful (`mkdir -p src/{a,b}`, `file{1..20}.txt`);
/// every word is then checked like a typed one, so a `{0..999}{0..999}`
/// (a million) is refused unchecked instead.
pub(super) const MAX_BRACE_WORDS: usize = 10_000;

/// Brace groups one word may nest or chain (`{a,b}{c,d}…`): the expansion
/// recurses once per group.
const MAX_BRACE_GROUPS: usize = 64;

/// Why an expansion was refused (for the unchecked verdict).
pub(super) fn too_large() -> String {
    format!(
        "its brace expansion makes more than {MAX_BRACE_WORDS} words (or nests more than {MAX_BRACE_GROUPS} groups)"
    )
}

/// The text with braces and unquoted `$IFS` expanded; `Ok(None)` when it
/// has neither, `Err(())` when the expansion is too large.
pub(super) fn prepass(text: &str) -> Result<Option<String>, ()> {
    if !text.contains('{') && !text.contains("IFS") {
        return Ok(None);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut changed = false;
    let mut budget = MAX_BRACE_WORDS;
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut for_list = ForList::No;
    let mut verbatim_next = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                out.push('\n');
                i += 1;
                for_list = ForList::No;
                verbatim_next = false;
                for (delim, strip_tabs) in heredocs.drain(..) {
                    while i < b.len() {
                        let end = b[i..]
                            .iter()
                            .position(|&x| x == b'\n')
                            .map_or(b.len(), |p| i + p);
                        let line = &text[i..end];
                        out.push_str(line);
                        if end < b.len() {
                            out.push('\n');
                        }
                        i = (end + 1).min(b.len());
                        let cmp = if strip_tabs {
                            line.trim_start_matches('\t')
                        } else {
                            line
                        };
                        if cmp == delim {
                            break;
                        }
                    }
                }
            }
            b' ' | b'\t' | b'\r' => {
                out.push(c as char);
                i += 1;
            }
            b'<' | b'>' => {
                if b[i..].starts_with(b"<<<") {
                    out.push_str("<<<");
                    i += 3;
                    verbatim_next = true;
                    continue;
                }
                if b[i..].starts_with(b"<<") {
                    let (j, strip_tabs) = heredoc_word(b, i);
                    let end = word_end(b, j);
                    heredocs.push((unquote(&text[j..end]), strip_tabs));
                    out.push_str(&text[i..end]);
                    i = end;
                    continue;
                }
                out.push(c as char);
                i += 1;
                verbatim_next = true;
            }
            b';' | b'&' | b'|' | b'(' | b')' => {
                out.push(c as char);
                i += 1;
                if c != b'(' && c != b')' {
                    for_list = ForList::No;
                }
                verbatim_next = false;
            }
            b'#' => {
                let end = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
                out.push_str(&text[i..end]);
                i = end;
            }
            _ => {
                let end = word_end(b, i).max(i + 1);
                let w = &text[i..end];
                i = end;
                for_list = match (for_list, w) {
                    (ForList::In, _) => ForList::In,
                    (_, "for" | "select") => ForList::For,
                    (ForList::For, _) => ForList::Name,
                    (ForList::Name, "in") => ForList::In,
                    _ => ForList::No,
                };
                if for_list == ForList::In || verbatim_next || is_assignment(w) {
                    verbatim_next = false;
                    out.push_str(w);
                    continue;
                }
                let mut words = Vec::new();
                expand_braces(w, &mut words, &mut budget, 0)?;
                let start = out.len();
                for (k, word) in words.iter().enumerate() {
                    if k > 0 {
                        out.push(' ');
                    }
                    match split_ifs(word) {
                        Some(s) => out.push_str(&s),
                        None => out.push_str(word),
                    }
                }
                changed |= out[start..] != *w;
            }
        }
    }
    Ok(changed.then_some(out))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ForList {
    No,
    For,
    Name,
    In,
}

/// `NAME=…`, `NAME+=…`, `NAME[i]=…`: an assignment word.
fn is_assignment(w: &str) -> bool {
    let Some(eq) = w.find('=') else { return false };
    let mut k = &w[..eq];
    k = k.strip_suffix('+').unwrap_or(k);
    if let Some(open) = k.find('[') {
        if !k.ends_with(']') {
            return false;
        }
        k = &k[..open];
    }
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Quote removal for a here-document delimiter.
fn unquote(w: &str) -> String {
    let mut s = String::with_capacity(w.len());
    let mut it = w.chars();
    while let Some(c) = it.next() {
        match c {
            '\'' | '"' => {}
            '\\' => s.extend(it.next()),
            c => s.push(c),
        }
    }
    s
}

/// Where the word starting at `i` ends: at an unquoted blank or operator.
fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' => {
                return i;
            }
            _ => i = skip_unit(b, i),
        }
    }
    i
}

/// Past one unit of a word: an escaped character, a quoted string, `$'…'`,
/// `$(…)`, `${…}`, a backquoted command, or one plain byte.
fn skip_unit(b: &[u8], i: usize) -> usize {
    match b[i] {
        // The escaped character whole (it may be several bytes long).
        b'\\' => b
            .get(i + 1)
            .map_or(b.len(), |&c| (i + 1 + utf8_len(c)).min(b.len())),
        b'\'' => close(b, i + 1, b'\''),
        b'"' => skip_dquoted(b, i + 1),
        b'`' => skip_backquoted(b, i + 1),
        b'$' => match b.get(i + 1) {
            Some(b'\'') => skip_ansi(b, i + 2),
            Some(b'(') => skip_group(b, i + 2, b'(', b')'),
            Some(b'{') => skip_group(b, i + 2, b'{', b'}'),
            _ => i + 1,
        },
        _ => i + 1,
    }
}

/// The length of the UTF-8 character whose first byte is `c`.
fn utf8_len(c: u8) -> usize {
    match c {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

/// Past the next `end` byte at or after `i` (or the text's end).
fn close(b: &[u8], i: usize, end: u8) -> usize {
    b[i.min(b.len())..]
        .iter()
        .position(|&x| x == end)
        .map_or(b.len(), |p| i + p + 1)
}

fn skip_dquoted(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => i += 2,
            b'`' => i = skip_backquoted(b, i + 1),
            b'$' if b.get(i + 1) == Some(&b'(') => i = skip_group(b, i + 2, b'(', b')'),
            b'$' if b.get(i + 1) == Some(&b'{') => i = skip_group(b, i + 2, b'{', b'}'),
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_backquoted(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'`' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_ansi(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\'' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

/// Past the bracket closing the group opened just before `i`, quotes and
/// nested groups skipped.
fn skip_group(b: &[u8], mut i: usize, open: u8, end: u8) -> usize {
    let mut depth = 1usize;
    while i < b.len() {
        let c = b[i];
        if c == end {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
            i += 1;
        } else if c == open {
            depth += 1;
            i += 1;
        } else if matches!(c, b'\\' | b'\'' | b'"' | b'`' | b'$') {
            i = skip_unit(b, i);
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The brace expression bash expands first in `w`: its `{` and `}`
/// positions and its parts.
enum Parts {
    /// The byte ranges of the comma-separated alternatives.
    Alts(Vec<(usize, usize)>),
    /// A sequence `{a..b[..step]}`: its values.
    Seq(Vec<String>),
}

fn find_brace(w: &str, budget: usize) -> Result<Option<(usize, usize, Parts)>, ()> {
    let b = w.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'{' {
            i = skip_unit(b, i);
            continue;
        }
        // `{` at `i`: find its `}` with the top-level commas.
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut j = i + 1;
        let mut close_at = None;
        while j < b.len() {
            match b[j] {
                b'{' => {
                    depth += 1;
                    j += 1;
                }
                b'}' if depth == 0 => {
                    close_at = Some(j);
                    break;
                }
                b'}' => {
                    depth -= 1;
                    j += 1;
                }
                b',' if depth == 0 => {
                    commas.push(j);
                    j += 1;
                }
                _ => j = skip_unit(b, j),
            }
        }
        let Some(end) = close_at else {
            i += 1;
            continue;
        };
        if !commas.is_empty() {
            let mut alts = Vec::with_capacity(commas.len() + 1);
            let mut start = i + 1;
            for c in commas {
                alts.push((start, c));
                start = c + 1;
            }
            alts.push((start, end));
            return Ok(Some((i, end, Parts::Alts(alts))));
        }
        if let Some(seq) = sequence(&w[i + 1..end], budget)? {
            return Ok(Some((i, end, Parts::Seq(seq))));
        }
        i += 1;
    }
    Ok(None)
}

/// `a..b[..step]` over integers (zero-padded when either end is) or single
/// letters; `Err` when it has more than `budget` values.
fn sequence(inner: &str, budget: usize) -> Result<Option<Vec<String>>, ()> {
    let mut parts = inner.split("..");
    let (Some(from), Some(to)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let step = match parts.next() {
        Some(s) => match s.parse::<i64>() {
            Ok(v) => v.unsigned_abs().max(1),
            Err(_) => return Ok(None),
        },
        None => 1,
    };
    if parts.next().is_some() {
        return Ok(None);
    }
    let count = |a: i64, z: i64| (a.abs_diff(z) / step).saturating_add(1);
    if let (Ok(a), Ok(z)) = (from.parse::<i64>(), to.parse::<i64>()) {
        if count(a, z) > budget as u64 {
            return Err(());
        }
        let padded = |s: &str| {
            s.trim_start_matches('-').len() > 1 && s.trim_start_matches('-').starts_with('0')
        };
        let width = if padded(from) || padded(to) {
            from.len().max(to.len())
        } else {
            0
        };
        let mut v = Vec::new();
        let mut x = a;
        loop {
            v.push(if width > 0 {
                if x < 0 {
                    format!("-{:0w$}", x.unsigned_abs(), w = width - 1)
                } else {
                    format!("{x:0width$}")
                }
            } else {
                x.to_string()
            });
            if x == z {
                break;
            }
            let next = if a <= z {
                x.checked_add(step as i64)
            } else {
                x.checked_sub(step as i64)
            };
            match next {
                Some(n) if (a <= z && n <= z) || (a > z && n >= z) => x = n,
                _ => break,
            }
        }
        return Ok(Some(v));
    }
    let (mut fc, mut tc) = (from.chars(), to.chars());
    match (fc.next(), fc.next(), tc.next(), tc.next()) {
        (Some(f), None, Some(t), None) if f.is_ascii_alphabetic() && t.is_ascii_alphabetic() => {
            let (a, z) = (f as i64, t as i64);
            let mut v = Vec::new();
            let mut x = a;
            loop {
                v.extend(char::from_u32(x as u32).map(String::from));
                if x == z || v.len() as u64 >= count(a, z) {
                    break;
                }
                x = if a <= z {
                    x + step as i64
                } else {
                    x - step as i64
                };
                if (a <= z && x > z) || (a > z && x < z) {
                    break;
                }
            }
            Ok(Some(v))
        }
        _ => Ok(None),
    }
}

/// Every word `w` brace-expands to, in bash's order, into `out`.
fn expand_braces(
    w: &str,
    out: &mut Vec<String>,
    budget: &mut usize,
    depth: usize,
) -> Result<(), ()> {
    if depth > MAX_BRACE_GROUPS {
        return Err(());
    }
    let Some((open, close, parts)) = find_brace(w, *budget)? else {
        if *budget == 0 {
            return Err(());
        }
        *budget -= 1;
        out.push(w.to_string());
        return Ok(());
    };
    let (pre, post) = (&w[..open], &w[close + 1..]);
    match parts {
        Parts::Alts(alts) => {
            for (s, e) in alts {
                expand_braces(&format!("{pre}{}{post}", &w[s..e]), out, budget, depth + 1)?;
            }
        }
        Parts::Seq(values) => {
            for v in values {
                expand_braces(&format!("{pre}{v}{post}"), out, budget, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// `w` with every unquoted `$IFS` / `${IFS…}` made a blank; `None` when it
/// has none.
fn split_ifs(w: &str) -> Option<String> {
    if !w.contains("IFS") {
        return None;
    }
    let b = w.as_bytes();
    let mut out = String::with_capacity(w.len());
    let mut changed = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let rest = &w[i + 1..];
            if let Some(after) = rest.strip_prefix("IFS")
                && !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                out.push(' ');
                changed = true;
                i += 4;
                continue;
            }
            if let Some(after) = rest.strip_prefix("{IFS")
                && after.starts_with([
                    '}', ':', '%', '#', '/', '^', ',', '@', '[', '-', '+', '=', '?',
                ])
            {
                let end = skip_group(b, i + 2, b'{', b'}');
                out.push(' ');
                changed = true;
                i = end;
                continue;
            }
        }
        let next = skip_unit(b, i);
        out.push_str(&w[i..next]);
        i = next;
    }
    changed.then_some(out)
}

// ------------------------------------------------------------ variables

/// Shell values known from the text: scalar variables (as assigned, `$…`
/// kept when dynamic), arrays with literal elements (`x=(rm -rf src)`,
/// `set -- …` as `@`).
pub(super) struct Values<'v> {
    pub vars: &'v [(String, String)],
    pub arrays: &'v [(String, Vec<String>)],
}

impl Values<'_> {
    fn ifs(&self) -> &str {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == "IFS")
            .map_or(" \t\n", |(_, v)| v.as_str())
    }
    fn array(&self, name: &str) -> Option<&[String]> {
        self.arrays
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    }
    fn scalar(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.contains('$') && !v.contains('`'))
    }
}

/// What a parameter expansion (`$c`, `${x[@]}`, `"$@"`, …) stands for when
/// its value is known: the words, and whether they stay separate words
/// even when quoted (`"${x[@]}"`).
enum Param<'a> {
    /// All elements of an array: `[@]` keeps them apart when quoted.
    All(&'a [String], bool),
    One(&'a str),
}

fn param<'a>(expansion: &str, values: &'a Values<'_>) -> Option<Param<'a>> {
    let inner = match expansion.strip_prefix("${") {
        Some(r) => r.strip_suffix('}')?,
        None => expansion.strip_prefix('$')?,
    };
    match inner {
        "@" | "*" => return Some(Param::All(values.array("@")?, inner == "@")),
        _ => {}
    }
    if let Some((name, sub)) = inner.split_once('[') {
        let sub = sub.strip_suffix(']')?;
        let arr = values.array(name)?;
        return match sub {
            "@" | "*" => Some(Param::All(arr, sub == "@")),
            n => Some(Param::One(arr.get(n.parse::<usize>().ok()?)?)),
        };
    }
    if !inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    values.scalar(inner).map(Param::One)
}

/// `s` single-quoted for the shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Unquoted words split at IFS characters, each quoted, blank-separated.
fn split_quoted(values: &[&str], ifs: &str, out: &mut String) {
    let mut first = true;
    for v in values {
        for f in v.split(|c| ifs.contains(c)).filter(|f| !f.is_empty()) {
            if !first {
                out.push(' ');
            }
            first = false;
            out.push_str(&quote(f));
        }
    }
}

/// The text of the command `node` with every known expansion that makes
/// other words than bash's own reading of the text (an unquoted variable
/// holding blanks, `"${x[@]}"`, `${x[*]}`, `"$@"`, `${x[0]}`) replaced by
/// the words it makes, quoted; `None` when there is none.
pub(super) fn rewrite_command(
    node: tree_sitter::Node<'_>,
    src: &str,
    values: &Values<'_>,
) -> Option<String> {
    if values.arrays.is_empty()
        && !values
            .vars
            .iter()
            .any(|(k, v)| k == "IFS" || v.contains([' ', '\t', '\n']))
    {
        return None;
    }
    let mut reps: Vec<(usize, usize, String)> = Vec::new();
    visit(node, src, values, &mut reps);
    if reps.is_empty() {
        return None;
    }
    reps.sort_by_key(|r| r.0);
    let (start, end) = (node.start_byte(), node.end_byte());
    let mut out = String::new();
    let mut pos = start;
    for (s, e, t) in reps {
        if s < pos || e > end {
            continue;
        }
        out.push_str(src.get(pos..s)?);
        out.push_str(&t);
        pos = e;
    }
    out.push_str(src.get(pos..end)?);
    Some(out)
}

fn visit(
    node: tree_sitter::Node<'_>,
    src: &str,
    values: &Values<'_>,
    reps: &mut Vec<(usize, usize, String)>,
) {
    let text = src.get(node.start_byte()..node.end_byte()).unwrap_or("");
    match node.kind() {
        "command_substitution" | "process_substitution" | "variable_assignment" => {}
        "string" => {
            // Only a string that is exactly one expansion: `"${x[@]}"`.
            let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
                return;
            };
            if !inner.starts_with('$') || node.named_child_count() != 1 {
                return;
            }
            let t = match param(inner, values) {
                Some(Param::All(items, true)) => {
                    items.iter().map(|i| quote(i)).collect::<Vec<_>>().join(" ")
                }
                Some(Param::All(items, false)) => quote(&items.join(" ")),
                Some(Param::One(v)) if inner.contains('[') => quote(v),
                _ => return,
            };
            reps.push((node.start_byte(), node.end_byte(), t));
        }
        "simple_expansion" | "expansion" => {
            let ifs = values.ifs();
            let words: Vec<&str> = match param(text, values) {
                Some(Param::All(items, _)) => items.iter().map(String::as_str).collect(),
                Some(Param::One(v)) if v.contains(|c| ifs.contains(c)) || text.contains('[') => {
                    vec![v]
                }
                _ => return,
            };
            let mut t = String::new();
            split_quoted(&words, ifs, &mut t);
            reps.push((node.start_byte(), node.end_byte(), t));
        }
        _ => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                visit(child, src, values, reps);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(t: &str) -> String {
        prepass(t)
            .expect("within bounds")
            .unwrap_or_else(|| t.to_string())
    }

    #[test]
    fn braces_expand_like_bash() {
        assert_eq!(pre("{rm,-rf,src}"), "rm -rf src");
        assert_eq!(pre("r{m,} -rf src"), "rm r -rf src");
        assert_eq!(pre("{r,}m -rf src"), "rm m -rf src");
        assert_eq!(pre("rm -{r,f} src"), "rm -r -f src");
        assert_eq!(pre(r#"{"rm","-rf","src"}"#), r#""rm" "-rf" "src""#);
        assert_eq!(pre("cp a{,.bak}"), "cp a a.bak");
        assert_eq!(pre("echo x{1..3}"), "echo x1 x2 x3");
        assert_eq!(
            pre("echo {01..03} {c..a} {1..7..3}"),
            "echo 01 02 03 c b a 1 4 7"
        );
        assert_eq!(pre("echo {a,b}{1,2}"), "echo a1 a2 b1 b2");
        assert_eq!(pre("echo {a,{b,c}}"), "echo a b c");
    }

    #[test]
    fn what_bash_does_not_expand_stays() {
        for t in [
            "echo '{a,b}' \"{a,b}\" \\{a,b}",
            "find . -exec rm {} \\;",
            "{ ls; echo a,b; }",
            "echo ${x:-{a,b}} $(echo x) {a}",
            "x={a,b}; echo $x",
            "for i in {1..100000}; do echo $i; done",
            "cat <<EOF\n{a,b} $IFS\nEOF\necho",
            "git stash apply stash@{0}",
            "echo hi # {a,b}",
            "cat <<< {a,b}",
            "echo \"$IFS\" '$IFS' x=$IFS",
        ] {
            assert_eq!(prepass(t), Ok(None), "{t}");
        }
    }

    #[test]
    fn ifs_outside_quotes_separates() {
        assert_eq!(pre("rm${IFS}-rf${IFS}src"), "rm -rf src");
        assert_eq!(pre("rm$IFS-rf$IFS/x"), "rm -rf /x");
        assert_eq!(pre("rm${IFS:0:1}-rf src"), "rm -rf src");
        assert_eq!(pre("{rm,-rf}${IFS}src"), "rm src -rf src");
        assert_eq!(pre("echo $IFSX"), "echo $IFSX");
    }

    #[test]
    fn escaped_multibyte_characters_are_whole() {
        assert_eq!(pre("echo \\é{a,b} \\ü$IFS"), "echo \\éa \\éb \\ü ");
    }

    #[test]
    fn too_many_words_are_refused() {
        assert_eq!(prepass("echo {0..999}{0..999}"), Err(()));
        assert_eq!(prepass("echo {1..99999999999}"), Err(()));
        assert_eq!(prepass(&"{a,b}".repeat(200)), Err(()));
        assert!(prepass("echo {1..1000}").is_ok());
    }
}
