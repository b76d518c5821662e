//! Interpreters given code inline (`python -c`, `node -e`, `perl -e`,
//! `ruby -e`, `php -r`, code on stdin or in a script this text wrote): the
//! same harm without a shell. Statically and conservatively, the code's
//! string literals are read as the shell commands they would run (when the
//! code runs commands at all), argv lists (`["rm", "-rf", "/"]`, Perl `qw`)
//! as command lines, and library calls that remove a tree (`shutil.rmtree`,
//! `fs.rmSync(…, {recursive})`) as `rm -r` of their literal path; all of it
//! goes back through the analyser, so every rule applies.

use super::shell::{Analyser, Word};
use super::words::shell_quote;

pub(super) fn is_interpreter(n: &str) -> bool {
    n.starts_with("python")
        || matches!(
            n,
            "node" | "nodejs" | "deno" | "bun" | "perl" | "ruby" | "php"
        )
}

pub(super) fn interpreter(a: &mut Analyser<'_>, name: &str, argv: &[Word], stdin: Option<&str>) {
    let mut code: Option<String> = None;
    let mut j = 1;
    let mut positional = false;
    while j < argv.len() {
        let t = argv[j].text.as_str();
        let is_code_flag = if name.starts_with("python") {
            t == "-c"
        } else if matches!(name, "node" | "nodejs" | "deno" | "bun") {
            matches!(t, "-e" | "--eval" | "-p" | "--print" | "eval")
        } else if name == "php" {
            t == "-r"
        } else {
            // perl / ruby: -e, -E, or a cluster ending in e (`-ne`, `-pe`).
            // `-MModule=…` / `-Idir` are not clusters of flags.
            t.starts_with('-')
                && !t.starts_with("--")
                && !t.starts_with("-M")
                && !t.starts_with("-I")
                && !t.starts_with("-r")
                && (t.ends_with('e') || t.ends_with('E'))
        };
        if is_code_flag {
            code = argv.get(j + 1).map(|w| w.text.clone());
            break;
        }
        if !t.starts_with('-') {
            positional = true;
            break;
        }
        j += 1;
    }
    let code = match code {
        Some(c) => c,
        None if !positional => match stdin {
            Some(s) => s.to_string(),
            None => return,
        },
        None => match argv.get(j).and_then(|w| a.written(&w.text)) {
            Some(c) => c,
            None => return,
        },
    };
    inline_code(a, &code);
}

/// Markers of code that runs a shell command string.
const EXEC_MARKERS: &[&str] = &[
    "system",
    "popen",
    "subprocess",
    "exec",
    "spawn",
    "`",
    "qx",
    "shell_exec",
    "passthru",
    "check_output",
    "check_call",
    "%x",
];

/// Library calls that remove a tree, and the shell command each equals:
/// the first string literal after the call is the path.
const TREE_REMOVERS: &[(&str, &str)] = &[
    ("rmtree(", "rm -r"),         // Python shutil.rmtree, Perl File::Path
    ("remove_tree(", "rm -r"),    // Perl File::Path
    ("rmSync(", "rm -r"),         // Node fs.rmSync(path, {recursive})
    ("rm_rf(", "rm -r"),          // Ruby FileUtils.rm_rf
    ("rm_r(", "rm -r"),           // Ruby FileUtils.rm_r
    ("remove_dir_all(", "rm -r"), // Rust std::fs
];

fn inline_code(a: &mut Analyser<'_>, code: &str) {
    for (call, cmd) in TREE_REMOVERS {
        if let Some(p) = code.find(call) {
            let recursive = *call != "rmSync(" || code[p..].contains("recursive");
            if let Some((_, path)) = string_literals(&code[p..]).first()
                && recursive
            {
                a.shell(&format!("{cmd} -- {}", shell_quote(path)));
            }
        }
    }
    if !EXEC_MARKERS.iter().any(|m| code.contains(m)) {
        return;
    }
    let lits = string_literals(code);
    for (pos, lit) in &lits {
        if !only_printed(code, *pos) {
            a.shell(lit);
        }
    }
    // Perl's `qw(rm -rf /)` (any delimiter): an argv list of bare words.
    for (pos, words) in perl_word_lists(code) {
        if words.len() > 1 && !only_printed(code, pos) {
            let line: Vec<String> = words.iter().map(|s| shell_quote(s)).collect();
            a.shell(&line.join(" "));
        }
    }
    // `["rm", "-rf", "/"]`: an argv list.
    let bytes = code.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k] == b'[' {
            let in_list: Vec<&String> = lits
                .iter()
                .filter(|(pos, _)| *pos > k)
                .take_while(|(pos, _)| !code[k..*pos].contains(']'))
                .map(|(_, s)| s)
                .collect();
            if in_list.len() > 1 {
                let line: Vec<String> = in_list.iter().map(|s| shell_quote(s)).collect();
                a.shell(&line.join(" "));
            }
        }
        k += 1;
    }
}

/// Calls that only write text out.
const PRINT_CALLS: &[&str] = &[
    "print(",
    "print ",
    "console.log(",
    "console.error(",
    "puts ",
    "puts(",
    "say ",
    "echo ",
    ".write(",
    "printf(",
    "logging.",
    "log(",
];

/// Is the literal at `pos` an argument of a print call in a statement
/// that runs nothing (`import subprocess; print("git add -A")`)?
fn only_printed(code: &str, pos: usize) -> bool {
    let before = &code[..pos];
    let start = before.rfind([';', '\n']).map_or(0, |p| p + 1);
    let stmt = &before[start..];
    !EXEC_MARKERS.iter().any(|m| stmt.contains(m)) && PRINT_CALLS.iter().any(|p| stmt.contains(p))
}

/// Perl `qw` word lists (`qw(a b)`, `qw[a b]`, `qw{a b}`, `qw<a b>`,
/// `qw/a b/`), with their byte offsets.
fn perl_word_lists(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("qw") {
        let pos = from + found;
        from = pos + 2;
        let word_start =
            pos == 0 || !code[..pos].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let rest = code[pos + 2..].trim_start();
        let Some(open) = rest.chars().next() else {
            break;
        };
        let close = match open {
            '(' => ')',
            '[' => ']',
            '{' => '}',
            '<' => '>',
            c if c.is_ascii_punctuation() => c,
            _ => continue,
        };
        if !word_start {
            continue;
        }
        let body = &rest[open.len_utf8()..];
        let Some(end) = body.find(close) else {
            continue;
        };
        out.push((
            pos,
            body[..end].split_whitespace().map(str::to_string).collect(),
        ));
    }
    out
}

/// String literals in script code (`'…'`, `"…"`, `` `…` ``), with their byte
/// offsets.
fn string_literals(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut it = code.char_indices().peekable();
    while let Some((pos, c)) = it.next() {
        if c != '\'' && c != '"' && c != '`' {
            continue;
        }
        let mut s = String::new();
        let mut closed = false;
        while let Some((_, d)) = it.next() {
            if d == '\\' {
                if let Some((_, e)) = it.next() {
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        o => o,
                    });
                }
            } else if d == c {
                closed = true;
                break;
            } else {
                s.push(d);
            }
        }
        if closed && !s.is_empty() {
            out.push((pos, s));
        }
    }
    out
}
