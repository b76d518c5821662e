//! Interpreters given code inline (`python -c`, `node -e`, `perl -e`,
//! `ruby -e`, `php -r`, code on stdin or in a script this text wrote): the
//! same harm without a shell. Statically and conservatively, the code's
//! string literals are read as the shell commands they would run (when the
//! code runs commands at all), argv lists (`["rm", "-rf", "/"]`, Perl `qw`)
//! as command lines, and library calls that remove a tree (`shutil.rmtree`,
//! `fs.rmSync(…, {recursive})`) as `rm -r` of their literal path; all of it
//! goes back through the analyser, so every rule applies.

use super::Rule;
use super::code::{Code, Lang, Tok};
use super::rm::{INSTEAD_RM, rm_targets};
use super::rules::{Hit, pick};
use super::shell::{Analyser, Word};
use super::sql::{self, INSTEAD_SQL};
use super::steal::{INSTEAD_STEAL, is_loopback, is_secret_here};
use super::words::{FRESH_TEMP, shell_quote};

pub(super) fn is_interpreter(n: &str) -> bool {
    n.starts_with("python")
        || matches!(
            n,
            "node" | "nodejs" | "deno" | "bun" | "perl" | "ruby" | "php"
        )
}

pub(super) fn interpreter(
    a: &mut Analyser<'_>,
    name: &str,
    argv: &[Word],
    stdin: Option<&str>,
    span: &str,
) {
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
    script(a, name, &code, span);
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

/// Library calls that remove a whole tree, whatever their options.
const TREE_REMOVERS: &[&str] = &[
    "rmtree",              // Python shutil.rmtree, Perl File::Path
    "remove_tree",         // Perl File::Path
    "rm_rf",               // Ruby FileUtils
    "rm_r",                // Ruby FileUtils
    "remove_dir",          // Ruby FileUtils
    "remove_entry",        // Ruby FileUtils
    "remove_entry_secure", // Ruby FileUtils
    "remove_dir_all",      // Rust std::fs
];

/// Node's removers, which remove a tree only with `{recursive: true}`.
const JS_REMOVERS: &[&str] = &["rmSync", "rm", "rmdirSync", "rmdir"];

/// Driver calls whose first argument is SQL (DB-API `execute`, node `pg`
/// / `mysql2` `query`, `better-sqlite3` `exec` / `prepare`, ruby `pg`
/// `exec`, perl DBI `do`).
const SQL_CALLS: &[&str] = &[
    "execute",
    "executescript",
    "executemany",
    "execute_batch",
    "query",
    "exec",
    "do",
    "prepare",
    "raw",
];

/// Calls that open a database, for the in-memory scratch case.
const DB_OPENERS: &[&str] = &[
    "connect",
    "Database",
    "DatabaseSync",
    "new",
    "create_engine",
    "createConnection",
    "createPool",
];

/// Calls that run a program from an argv (`spawn('rm', ['-rf', x])`,
/// `system("rm", "-rf", x)`).
const ARGV_CALLS: &[&str] = &[
    "system",
    "exec",
    "spawn",
    "spawnSync",
    "execFile",
    "execFileSync",
    "execvp",
    "execv",
    "execlp",
    "execl",
    "Popen",
    "run",
    "call",
    "check_call",
    "check_output",
    "capture2",
    "capture3",
    "capture2e",
    "popen3",
];

/// Calls that send data to another machine (HTTP clients, sockets).
const SEND_CALLS: &[&str] = &[
    "post",
    "put",
    "patch",
    "request",
    "urlopen",
    "Request",
    "fetch",
    "sendall",
    "send",
    "sendto",
    "end",
    "write",
    "upload",
    "post_form",
];

/// Names in the code that mean it talks to the network.
const NET_MARKERS: &[&str] = &[
    "requests", "httpx", "urllib", "http", "HTTP", "socket", "Socket", "fetch", "axios", "aiohttp",
    "LWP", "ftplib", "smtplib",
];

/// Interpreter code read as code: SQL through a driver, tree removal by a
/// library call, a program run from an argv or a command string, a secret
/// file sent by the interpreter's own client.
fn script(a: &mut Analyser<'_>, interpreter: &str, code: &str, span: &str) {
    let lang = Lang::of(interpreter);
    let c = Code::read(lang, code);
    let mut hits = Vec::new();
    let in_memory = {
        let mut openers = c
            .calls()
            .iter()
            .filter(|k| DB_OPENERS.contains(&k.name.as_str()));
        let memory = |s: &str| s.starts_with(":memory:") || s.starts_with("file::memory:");
        c.strings().any(memory)
            && openers.all(|k| {
                k.args
                    .first()
                    .and_then(|r| c.value(r.clone(), FRESH_TEMP))
                    .is_none_or(|v| memory(&v))
            })
    };
    for call in c.calls() {
        let name = call.name.as_str();
        // Tree removal: each path the call names.
        let remover = TREE_REMOVERS.contains(&name)
            || (lang == Lang::Js
                && JS_REMOVERS.contains(&name)
                && c.flag_set(call.all.clone(), "recursive"));
        if remover {
            let args: &[std::ops::Range<usize>] = if lang == Lang::Js {
                &call.args[..call.args.len().min(1)]
            } else {
                &call.args
            };
            for arg in args {
                for r in list_items(&c, arg.clone()) {
                    match c.value(r.clone(), FRESH_TEMP) {
                        Some(p) => rm_targets(a, &[Word::lit(&p)], &call.qual, &mut hits),
                        None => hits.push(Hit::new(
                            Rule::Rm,
                            format!(
                                "{} of a path computed when it runs (`{}`), which may lie outside the temp dirs",
                                call.qual,
                                c.show(r)
                            ),
                            INSTEAD_RM,
                        )),
                    }
                }
            }
        }
        // SQL through a driver, judged by the one SQL reader.
        if SQL_CALLS.contains(&name)
            && !in_memory
            && let Some(sql) = call
                .args
                .first()
                .and_then(|r| c.value(r.clone(), FRESH_TEMP))
            && let Some(what) = sql::destructive_sql(&sql)
        {
            hits.push(Hit::new(
                Rule::Destroy,
                format!(
                    "{what} through the database driver's `{}` deletes data",
                    call.qual
                ),
                INSTEAD_SQL,
            ));
        }
        // A program run from an argv: the same command line.
        if ARGV_CALLS.contains(&name) {
            let mut argv = Vec::new();
            for (k, arg) in call.args.iter().enumerate() {
                let items = list_items(&c, arg.clone());
                let is_list =
                    items.len() != 1 || matches!(c.toks.get(arg.start), Some(Tok::P("[")));
                if k > 0 && !is_list && c.value(arg.clone(), FRESH_TEMP).is_none() {
                    break; // options (`{stdio: 'inherit'}`, `shell=True`)
                }
                for r in items {
                    match c.value(r, FRESH_TEMP) {
                        Some(v) => argv.push(shell_quote(&v)),
                        None => argv.push("\"$UNKNOWN\"".into()),
                    }
                }
            }
            if argv.len() > 1 {
                a.shell(&argv.join(" "));
            }
        }
    }
    for cmd in c.commands() {
        a.shell(cmd);
    }
    // A secret file sent by the interpreter's own HTTP client or socket.
    if NET_MARKERS.iter().any(|m| code.contains(m)) {
        let dests: Vec<&str> = c
            .strings()
            .filter(|s| s.contains("://") || *s == "localhost" || s.starts_with("127."))
            .collect();
        let local = !dests.is_empty() && dests.iter().all(|d| is_loopback(d));
        for call in c
            .calls()
            .iter()
            .filter(|k| SEND_CALLS.contains(&k.name.as_str()))
        {
            if local {
                break;
            }
            if let Some(s) = c
                .strings_reaching(call.all.clone())
                .into_iter()
                .find(|s| is_secret_here(a, s))
            {
                hits.push(Hit::new(
                    Rule::Steal,
                    format!("`{s}` would leave the machine through `{}`", call.qual),
                    INSTEAD_STEAL,
                ));
            }
        }
    }
    if a.hit.is_none()
        && let Some(h) = pick(a, hits)
    {
        let why = format!("in {interpreter} code: {}", h.why);
        a.block(Hit { why, ..h }.into_block(span));
    }
}

/// The items of a list argument (`["src", "docs"]`), or the argument itself.
fn list_items(c: &Code, r: std::ops::Range<usize>) -> Vec<std::ops::Range<usize>> {
    let t = &c.toks;
    if matches!(t.get(r.start), Some(Tok::P("["))) && matches!(t.get(r.end - 1), Some(Tok::P("]")))
    {
        let mut out = Vec::new();
        let mut depth = 0usize;
        let mut start = r.start + 1;
        for (k, tok) in t.iter().enumerate().take(r.end - 1).skip(r.start + 1) {
            match tok {
                Tok::P("(" | "[" | "{") => depth += 1,
                Tok::P(")" | "]" | "}") => depth = depth.saturating_sub(1),
                Tok::P(",") if depth == 0 => {
                    if k > start {
                        out.push(start..k);
                    }
                    start = k + 1;
                }
                _ => {}
            }
        }
        if r.end - 1 > start {
            out.push(start..r.end - 1);
        }
        return out;
    }
    vec![r]
}

fn inline_code(a: &mut Analyser<'_>, code: &str) {
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
