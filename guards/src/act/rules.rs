//! The rules, applied to one simple command at a time: first the wrappers are
//! peeled off (`sudo`, `env`, `xargs`, …), shell text inside the command is
//! sent back to the parser, and then each named rule looks at the argv.

use super::config::{FASTLANE_SAFE_LANES, RELEASE_HARMLESS_WORDS};
use super::copies;
use super::decode;
use super::disks;
use super::history;
use super::longopt;
use super::mass_delete;
use super::overwrite;
use super::shell::{Analyser, Cmd, Flow, Word};
use super::sql;
use super::wrappers::{self, Peeled};
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
}

const INSTEAD_RM: &str = "delete the specific files by name without -r, or move the directory under /tmp and remove it there; if a whole tree really must go, ask a human";
const INSTEAD_RM_ROOT: &str = "never remove the root, a home directory or a system directory; name the exact files you created";
const INSTEAD_PUSH: &str = "push to your own branch (or use --force-with-lease on a branch only you use); protected branches move only through review";
const INSTEAD_DISCARD: &str = "the work tree is shared: keep uncommitted work (commit it, or `git stash push -m <note>`), and revert only files you changed yourself with `git diff` + a targeted edit";
const INSTEAD_SQL: &str =
    "write a reviewed migration; never drop or truncate data from an agent shell";
const INSTEAD_STEAL: &str = "secrets never leave this machine; if a service needs a credential, ask a human to configure it";
const INSTEAD_RSYNC: &str = "run rsync without --delete (add --dry-run to see what it would remove) and ask a human before deleting on the target";
const INSTEAD_ADD: &str = "stage the files you changed by name (`git add path/to/file …`); others' changes are in the same work tree";
const INSTEAD_POP: &str =
    "check `git stash list`, then `git stash apply stash@{N}` for the stash you made yourself";
const INSTEAD_FLUTTER: &str =
    "run on an emulator, a simulator or `-d chrome`; physical devices belong to whoever holds them";

/// Shells whose `-c` payload, heredoc or piped input is shell code.
const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash",
];

/// Entry point from the walker.
pub(crate) fn run(a: &mut Analyser<'_>, cmd: &Cmd, input: Flow) -> Flow {
    let first = cmd.words.iter().find(|w| !is_assignment(w));
    if let Some(h) = disks::redirect(&cmd.out_files, first).and_then(|h| pick(a, vec![h])) {
        a.block(Block {
            rule: h.rule,
            command: cmd.span.clone(),
            why: h.why,
            instead: h.instead,
        });
        return Flow::default();
    }
    let stdin = cmd.stdin_text.clone().or_else(|| input.text.clone());
    exec(a, cmd, &cmd.words, &input, stdin.as_deref())
}

pub(super) fn base(w: &Word) -> &str {
    let t = w.text.as_str();
    let t = t.trim_start_matches('\\');
    t.rsplit('/').next().unwrap_or(t)
}

fn is_assignment(w: &Word) -> bool {
    match w.text.split_once('=') {
        Some((k, _)) => {
            !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn join(words: &[Word]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

fn exec(
    a: &mut Analyser<'_>,
    cmd: &Cmd,
    words: &[Word],
    input: &Flow,
    stdin: Option<&str>,
) -> Flow {
    // Peel wrappers.
    let mut i = 0;
    loop {
        while i < words.len() && is_assignment(&words[i]) {
            i += 1;
        }
        let Some(w) = words.get(i) else {
            return Flow::default();
        };
        // An alias defined earlier in the text: its value runs.
        if i == 0
            && let Some((_, v)) = a.aliases.iter().rev().find(|(k, _)| *k == w.text)
        {
            let text = format!("{v} {}", join(&words[1..]));
            a.shell(&text);
            return Flow::default();
        }
        match base(w) {
            "env" => {
                let mut j = i + 1;
                while j < words.len() {
                    let t = words[j].text.as_str();
                    if t == "--" {
                        j += 1;
                        break;
                    }
                    if let Some(s) = t
                        .strip_prefix("--split-string=")
                        .or_else(|| t.strip_prefix("-S").filter(|s| !s.is_empty()))
                    {
                        let text = format!("{s} {}", join(&words[j + 1..]));
                        a.shell(&text);
                        return Flow::default();
                    }
                    if t == "-S" || t == "--split-string" {
                        let s = words.get(j + 1).map(|w| w.text.clone()).unwrap_or_default();
                        let text = format!("{s} {}", join(words.get(j + 2..).unwrap_or(&[])));
                        a.shell(&text);
                        return Flow::default();
                    }
                    if matches!(t, "-u" | "--unset" | "-C" | "--chdir") {
                        j += 2;
                    } else if t.starts_with('-') || is_assignment(&words[j]) {
                        j += 1;
                    } else {
                        break;
                    }
                }
                i = j;
            }
            "xargs" => return xargs(a, cmd, &words[i..], input),
            // `python3 -m twine upload`: the module runs as a command.
            n if n.starts_with("python") && python_module(&words[i..]).is_some() => {
                let (k, attached) = python_module(&words[i..]).unwrap_or_default();
                match attached {
                    Some(m) => {
                        let mut argv = vec![Word::lit(&m)];
                        argv.extend_from_slice(&words[i + k..]);
                        return exec(a, cmd, &argv, input, stdin);
                    }
                    None => i += k,
                }
            }
            name => match wrappers::peel(&words[i..], name) {
                Peeled::No => break,
                Peeled::Nothing => return Flow::default(),
                Peeled::At(k) => i += k,
                Peeled::Argv(argv) => return exec(a, cmd, &argv, input, stdin),
                Peeled::Shell(texts) => {
                    for t in texts {
                        a.shell(&t);
                    }
                    return Flow::default();
                }
            },
        }
    }
    let argv = &words[i..];
    dispatch(a, cmd, argv, input, stdin)
}

/// `python -m MODULE …`: where the module's argv starts (and the module
/// name when attached, `-mtwine`), or None when no module runs.
fn python_module(words: &[Word]) -> Option<(usize, Option<String>)> {
    for (k, w) in words.iter().enumerate().skip(1) {
        let t = w.text.as_str();
        if t == "-m" {
            return Some((k + 1, None));
        }
        if let Some(m) = t.strip_prefix("-m") {
            return Some((k + 1, Some(m.to_string())));
        }
        if !t.starts_with('-') || t == "-c" || t == "-" {
            return None;
        }
    }
    None
}

/// What an unknown `xargs -I` item reads as in the command it fills.
const XARGS_ITEM: &str = "${XARGS_ITEM}";

fn xargs(a: &mut Analyser<'_>, cmd: &Cmd, words: &[Word], input: &Flow) -> Flow {
    let mut replace: Option<String> = None;
    let mut j = 1;
    while j < words.len() {
        let t = words[j].text.as_str();
        if t == "--" {
            j += 1;
            break;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if t == "-I" {
            replace = words.get(j + 1).map(|w| w.text.clone());
            j += 2;
            continue;
        }
        if let Some(r) = t.strip_prefix("-I") {
            replace = Some(r.to_string());
        } else if t == "-i" || t == "--replace" {
            replace = Some("{}".into());
        } else if let Some(r) = t.strip_prefix("--replace=") {
            replace = Some(r.to_string());
        }
        let takes = matches!(
            t,
            "-L" | "-n"
                | "-P"
                | "-s"
                | "-d"
                | "-E"
                | "-a"
                | "--arg-file"
                | "--max-args"
                | "--max-procs"
                | "--max-lines"
                | "--delimiter"
                | "--eof"
                | "--max-chars"
                | "--process-slot-var"
        );
        j += if takes { 2 } else { 1 };
    }
    let sub = words.get(j..).unwrap_or(&[]);
    if sub.is_empty() {
        return Flow::default();
    }
    let items: Vec<Word> = if let Some(items) = &input.items {
        items.clone()
    } else if let Some(t) = input.text.as_ref().or(cmd.stdin_text.as_ref()) {
        t.split_whitespace().map(Word::lit).collect()
    } else {
        vec![Word::unknown()]
    };
    let items = if items.is_empty() {
        vec![Word::unknown()]
    } else {
        items
    };
    // A list that comes from `find` or from nobody knows where: every item
    // is removed, like `find -delete`. Literal text (`echo a.o | xargs rm`)
    // names its files like `rm a.o` does.
    if (input.items.is_some() || input.text.is_none())
        && let Some(h) = mass_delete::verdict(a, sub, &items, "xargs")
    {
        a.block(Block {
            rule: h.rule,
            command: cmd.span.clone(),
            why: h.why,
            instead: h.instead,
        });
        return Flow::default();
    }
    let inner = Flow {
        secret: input.secret,
        ..Flow::default()
    };
    match replace {
        Some(r) if !r.is_empty() => {
            for item in &items {
                let argv: Vec<Word> = sub
                    .iter()
                    .map(|w| {
                        if w.text.contains(r.as_str()) {
                            // An item nobody knows stands in as a variable,
                            // so that code around it (`sh -c 'rm -rf {}'`)
                            // is judged on an unknown path, not on none.
                            let item_text = if item.dynamic && item.text.is_empty() {
                                XARGS_ITEM
                            } else {
                                item.text.as_str()
                            };
                            Word {
                                text: w.text.replace(r.as_str(), item_text),
                                dynamic: w.dynamic || item.dynamic,
                            }
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                exec(a, cmd, &argv, &inner, None);
            }
        }
        _ => {
            let mut argv = sub.to_vec();
            argv.extend(items);
            exec(a, cmd, &argv, &inner, None);
        }
    }
    Flow::default()
}

fn dispatch(
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
    let mut out = Flow::default();
    match name {
        n if SHELLS.contains(&n) => shell_command(a, argv, stdin, input.decoded),
        "eval" if decode::runs_decoded(&join(&argv[1..])) => a.refuse(decode::UNKNOWN_INTO_SHELL),
        "eval" => a.shell(&join(&argv[1..])),
        "cd" | "pushd" => change_dir(a, argv),
        "alias" => {
            for w in &argv[1..] {
                if let Some((k, v)) = w.text.split_once('=') {
                    a.aliases.push((k.to_string(), v.to_string()));
                }
            }
        }
        "source" | "." => {
            if let Some(code) = argv.get(1).and_then(|w| a.written(&w.text)) {
                a.shell(&code);
            }
        }
        _ if first.text.contains('/') && a.written(&first.text).is_some() => {
            if let Some(code) = a.written(&first.text) {
                a.shell(&code);
            }
        }
        "cp" | "ln" | "install" => copies::note(a, name, argv),
        "find" => out.items = Some(find(a, cmd, argv)),
        n if is_interpreter(n) => interpreter(a, n, argv, stdin),
        _ => {}
    }
    if a.hit.is_some() {
        return Flow::default();
    }
    // Every family's verdict on this argv, in one place (`pick` orders
    // them by rule); find -exec / xargs deletion and the block-device
    // redirections are judged where the list and the redirection are known.
    let mut hits = Vec::new();
    hits.extend(disks::verdict(name, argv));
    match name {
        "rm" => rm(a, argv, &mut hits, None),
        n if overwrite::handles(n) => hits.extend(overwrite::verdict(a, n, argv)),
        "git" => git(a, argv, &mut hits),
        "rsync" => rsync(argv, &mut hits),
        "flutter" => flutter(argv, &mut hits),
        _ => sql_client(name, argv, stdin, &mut hits),
    }
    // Decoded data nobody can read here, fed to a database client.
    if input.decoded && stdin.is_none() && sql::client(name, argv).is_some() {
        a.refuse(decode::UNKNOWN_INTO_CLIENT);
        return Flow::default();
    }
    steal(name, argv, cmd, input, &mut hits);
    release(a, argv, &mut hits);
    if let Some(h) = pick(a, hits) {
        a.block(Block {
            rule: h.rule,
            command: cmd.span.clone(),
            why: h.why,
            instead: h.instead,
        });
        return Flow::default();
    }
    out.secret = flows_secret(name, argv, cmd, input);
    out.decoded = is_decoder(name, argv);
    // A literal payload (`echo cm0g… | base64 -d`) decodes here: what
    // reads it reads known text.
    if decode::is_stdin_base64(name, argv)
        && let Some(t) = stdin.and_then(decode::base64_text)
    {
        out.text = Some(t);
        out.decoded = false;
    }
    match name {
        "echo" | "printf" => {
            let args: Vec<Word> = argv[1..]
                .iter()
                .filter(|w| !(name == "echo" && matches!(w.text.as_str(), "-n" | "-e" | "-E")))
                .cloned()
                .collect();
            out.text = Some(join(&args));
        }
        "cat" if argv.len() == 1 || argv[1].text == "-" => out.text = stdin.map(str::to_string),
        "tee" => {
            if let Some(t) = stdin {
                for f in argv[1..].iter().filter(|w| !w.text.starts_with('-')) {
                    a.remember_file(&f.text, t);
                }
            }
            out.text = stdin.map(str::to_string);
        }
        _ => {}
    }
    if let Some(t) = &out.text {
        for f in &cmd.out_files {
            a.remember_file(&f.text, t);
        }
    }
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

// ------------------------------------------------------------ nested code

fn shell_command(a: &mut Analyser<'_>, argv: &[Word], stdin: Option<&str>, decoded: bool) {
    let mut cflag = false;
    let mut j = 1;
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if t == "--" {
            j += 1;
            break;
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            j += 2;
            continue;
        }
        if t.starts_with("--") {
            j += 1;
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            if t.contains('c') {
                cflag = true;
            }
            j += 1;
            continue;
        }
        break;
    }
    match argv.get(j) {
        Some(script) if cflag && decode::runs_decoded(&script.text) => {
            a.refuse(decode::UNKNOWN_INTO_SHELL)
        }
        Some(script) if cflag => {
            let s = script.text.clone();
            a.shell(&s);
        }
        // A script file: checked when this text wrote it (`cat <<'EOF' >
        // s.sh && bash s.sh`), otherwise its content is not known here.
        Some(script) => {
            if let Some(code) = a.written(&script.text) {
                a.shell(&code);
            }
        }
        None => match stdin {
            Some(s) => a.shell(s),
            // Decoded bytes piped into a shell (`base64 -d | sh`): the code
            // cannot be read here, so the command is refused unchecked.
            None if decoded => a.refuse(decode::UNKNOWN_INTO_SHELL),
            None => {}
        },
    }
}

fn change_dir(a: &mut Analyser<'_>, argv: &[Word]) {
    let target = argv[1..]
        .iter()
        .find(|w| !w.text.starts_with('-') || w.text == "-");
    a.cwd = match target {
        None => None,
        Some(w) if w.text == "-" || w.text.starts_with('~') => None,
        Some(w)
            if w.text.starts_with('/')
                || w.text.starts_with("$TMPDIR")
                || w.text.starts_with("${TMPDIR}") =>
        {
            Some(w.text.clone())
        }
        Some(w) if is_mktemp(&w.text) => Some(FRESH_TEMP.to_string()),
        Some(w) if w.dynamic => None,
        Some(w) => a.cwd.as_ref().map(|c| format!("{c}/{}", w.text)),
    };
}

/// What a fresh `$(mktemp -d)` stands for: some new directory under the
/// temp dir (the `rm` rule allows what lies there).
pub(crate) const FRESH_TEMP: &str = "$TMPDIR/mktemp.XXXXXXXXXX";

/// Is `t` exactly the output of `mktemp` in the default temp dir
/// (`$(mktemp -d)`, `` `mktemp -d -t x.XXXX` ``)? GNU mktemp makes a
/// TEMPLATE relative to the working directory unless `-t`/`--tmpdir` is
/// given, and `-p DIR` / `--tmpdir=DIR` put it elsewhere: those do not count.
pub(crate) fn is_mktemp(t: &str) -> bool {
    let inner = t
        .strip_prefix("$(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| t.strip_prefix('`').and_then(|r| r.strip_suffix('`')));
    let Some(inner) = inner else { return false };
    let mut words = inner.split_whitespace();
    if words.next() != Some("mktemp") {
        return false;
    }
    let (mut in_tmp, mut template) = (false, false);
    for x in words {
        if x == "-p" || x.starts_with("--tmpdir=") || (x.starts_with("-p") && !x.starts_with("--"))
        {
            return false;
        }
        if x == "-t"
            || x == "--tmpdir"
            || (x.starts_with('-') && !x.starts_with("--") && x.contains('t'))
        {
            in_tmp = true;
        } else if !x.starts_with('-') {
            if x.contains('/') || x.contains('$') {
                return false;
            }
            template = true;
        }
    }
    in_tmp || !template
}

fn is_interpreter(n: &str) -> bool {
    n.starts_with("python")
        || matches!(
            n,
            "node" | "nodejs" | "deno" | "bun" | "perl" | "ruby" | "php"
        )
}

fn interpreter(a: &mut Analyser<'_>, name: &str, argv: &[Word], stdin: Option<&str>) {
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

pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,~".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

// ------------------------------------------------------------ find

/// `find ROOTS … -delete | -exec CMD {} ;`: returns the roots (what a
/// following `xargs` receives, approximately).
fn find(a: &mut Analyser<'_>, cmd: &Cmd, argv: &[Word]) -> Vec<Word> {
    let mut j = 1;
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if matches!(t, "-H" | "-L" | "-P") || t.starts_with("-O") {
            j += 1;
        } else if t == "-D" {
            j += 2;
        } else {
            break;
        }
    }
    let mut roots = Vec::new();
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if t.starts_with('-') || matches!(t, "(" | "!" | ")" | "\\(") {
            break;
        }
        roots.push(argv[j].clone());
        j += 1;
    }
    if roots.is_empty() {
        roots.push(Word::lit("."));
    }
    let roots: Vec<Word> = roots
        .iter()
        .map(|r| mass_delete::scratch_root(a, r))
        .collect();
    while j < argv.len() {
        let t = argv[j].text.as_str();
        if t == "-delete" {
            let mut hits = Vec::new();
            rm_targets(a, &roots, "find … -delete", &mut hits);
            if let Some(h) = pick(a, hits) {
                a.block(Block {
                    rule: h.rule,
                    command: cmd.span.clone(),
                    why: h.why,
                    instead: h.instead,
                });
                return roots;
            }
        } else if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = j + 1;
            let mut end = start;
            while end < argv.len() && !matches!(argv[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            let sub = &argv[start..end.min(argv.len())];
            if let Some(h) = mass_delete::verdict(a, sub, &roots, "find … -exec") {
                a.block(Block {
                    rule: h.rule,
                    command: cmd.span.clone(),
                    why: h.why,
                    instead: h.instead,
                });
                return roots;
            }
            for root in &roots {
                let replaced: Vec<Word> = sub
                    .iter()
                    .map(|w| {
                        if w.text.contains("{}") {
                            Word {
                                text: w.text.replace("{}", &root.text),
                                dynamic: w.dynamic || root.dynamic,
                            }
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                exec(a, cmd, &replaced, &Flow::default(), None);
                if a.hit.is_some() {
                    return roots;
                }
            }
            j = end;
        }
        j += 1;
    }
    roots
}

// ------------------------------------------------------------ rm / destroy

/// Where a removal target lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// `/`, a home directory, or a system directory.
    Vital,
    /// Strictly inside a system temp dir.
    Temp,
    Other,
}

fn rm(a: &mut Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>, _via: Option<&str>) {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut after = false;
    for w in &argv[1..] {
        let t = w.text.as_str();
        if after || w.dynamic && !t.starts_with('-') {
            targets.push(w.clone());
        } else if t == "--" {
            after = true;
        } else if t.starts_with("--") {
            if longopt::meaning(t, RM_LONG) == Some("recursive") {
                recursive = true;
            }
        } else if t.starts_with('-') && t.len() > 1 {
            if t.contains('r') || t.contains('R') {
                recursive = true;
            }
        } else {
            targets.push(w.clone());
        }
    }
    if recursive {
        rm_targets(a, &targets, "rm -r", hits);
    }
}

/// GNU rm's long options (what a prefix may be read as).
const RM_LONG: &[(&str, &str)] = &[
    ("force", "force"),
    ("interactive", "interactive"),
    ("one-file-system", "one-file-system"),
    ("no-preserve-root", "no-preserve-root"),
    ("preserve-root", "preserve-root"),
    ("recursive", "recursive"),
    ("dir", "dir"),
    ("verbose", "verbose"),
    ("help", "help"),
    ("version", "version"),
];

pub(super) fn rm_targets(a: &Analyser<'_>, targets: &[Word], how: &str, hits: &mut Vec<Hit>) {
    for t in targets {
        let shown = if t.text.is_empty() {
            "(unknown paths)"
        } else {
            t.text.as_str()
        };
        match place(a, t) {
            Place::Vital => {
                hits.push(Hit::new(
                    Rule::Destroy,
                    format!("{how} of `{shown}`, which is the root, a home directory or a system directory"),
                    INSTEAD_RM_ROOT,
                ));
                hits.push(Hit::new(
                    Rule::Rm,
                    format!("{how} of `{shown}`, outside the temp dirs"),
                    INSTEAD_RM,
                ));
                return;
            }
            Place::Other => hits.push(Hit::new(
                Rule::Rm,
                format!("{how} of `{shown}`, outside the temp dirs (/tmp, /var/tmp, $TMPDIR)"),
                INSTEAD_RM,
            )),
            Place::Temp => {}
        }
    }
}

/// Second-level directories that are still system directories.
const SYSTEM_PARENTS: &[&str] = &[
    "usr",
    "var",
    "etc",
    "System",
    "Library",
    "private",
    "lib",
    "lib64",
    "bin",
    "sbin",
    "boot",
    "dev",
    "proc",
    "sys",
    "home",
    "Users",
    "root",
    "opt",
    "snap",
    "run",
    "srv",
    "Applications",
];

const TEMP_DIRS: &[&[&str]] = &[
    &["tmp"],
    &["var", "tmp"],
    &["private", "tmp"],
    &["private", "var", "tmp"],
];

pub(super) fn place(a: &Analyser<'_>, w: &Word) -> Place {
    place_text(a, &w.text, 0)
}

fn place_text(a: &Analyser<'_>, t: &str, depth: u8) -> Place {
    if t.is_empty() {
        return Place::Other;
    }
    for home in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = t.strip_prefix(home)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let comps = normalise(rest);
            return if effective(&comps).is_empty() {
                Place::Vital
            } else {
                Place::Other
            };
        }
    }
    if t.starts_with("~") {
        // `~user`: another user's home.
        let rest = t.split_once('/').map(|(_, r)| r).unwrap_or("");
        return if effective(&normalise(rest)).is_empty() {
            Place::Vital
        } else {
            Place::Other
        };
    }
    for tmp in [
        "$TMPDIR",
        "${TMPDIR}",
        "${TMPDIR:-/tmp}",
        "${TMPDIR:-/tmp/}",
        "${TMPDIR-/tmp}",
    ] {
        if let Some(rest) = t.strip_prefix(tmp)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            let comps = normalise(rest);
            // `..` may climb out of the temp dir: not known to stay inside.
            return if comps.is_empty() || rest.split('/').any(|c| c == "..") {
                Place::Other
            } else {
                Place::Temp
            };
        }
    }
    if let Some(abs) = t.strip_prefix('/') {
        let comps = normalise(abs);
        let mut temps: Vec<Vec<String>> = TEMP_DIRS
            .iter()
            .map(|d| d.iter().map(|s| s.to_string()).collect())
            .collect();
        if let Some(td) = &a.cfg.tmpdir {
            let c = normalise(td.trim_start_matches('/'));
            if !c.is_empty() {
                temps.push(c);
            }
        }
        if temps
            .iter()
            .any(|d| comps.len() > d.len() && comps[..d.len()] == d[..])
        {
            return Place::Temp;
        }
        let eff = effective(&comps);
        let vital = eff.len() <= 1 || (eff.len() == 2 && SYSTEM_PARENTS.contains(&eff[0].as_str()));
        return if vital { Place::Vital } else { Place::Other };
    }
    if t.contains('$') || t.contains('`') {
        return Place::Other;
    }
    match &a.cwd {
        Some(cwd) if depth == 0 => place_text(a, &format!("{cwd}/{t}"), 1),
        _ => Place::Other,
    }
}

/// Lexically normalised path components (`.`, `..`, empty removed).
fn normalise(p: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if out.pop().is_none() {
                    // above the root stays at the root
                }
            }
            c => out.push(c.to_string()),
        }
    }
    out
}

/// Components without trailing globs or expansions, which may match or
/// expand to everything (or nothing) at that level.
fn effective(comps: &[String]) -> &[String] {
    let mut n = comps.len();
    while n > 0 {
        let c = &comps[n - 1];
        if c.contains('*') || c.contains('?') || c.contains('[') || c.contains('$') {
            n -= 1;
        } else {
            break;
        }
    }
    &comps[..n]
}

// ------------------------------------------------------------ git

fn git(a: &Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>) {
    let mut i = 1;
    while i < argv.len() {
        let t = argv[i].text.as_str();
        if matches!(
            t,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--config-env"
                | "--super-prefix"
                | "--exec-path"
        ) && !t.contains('=')
        {
            i += 2;
        } else if t.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let Some(sub) = argv.get(i) else { return };
    let rest = &argv[i + 1..];
    // A long option is read as git reads it: any unique prefix (`--forc`)
    // of the subcommand's options where their list is held.
    let table = git_long_options(&sub.text);
    let flags = |long: &[&str], short: char| -> bool {
        rest.iter().take_while(|w| w.text != "--").any(|w| {
            let t = w.text.as_str();
            long.contains(&t)
                || longopt::meaning(t, table)
                    .is_some_and(|m| long.iter().any(|l| l.strip_prefix("--") == Some(m)))
                || (t.starts_with('-') && !t.starts_with("--") && t[1..].contains(short))
        })
    };
    if !in_temp_repo(a, argv) {
        hits.extend(history::verdict(&sub.text, rest));
    }
    match sub.text.as_str() {
        // `git stage` is `git add`.
        "add" | "stage" if add_takes_all(rest) => hits.push(Hit::new(
            Rule::GitAddAll,
            "it stages every change in the shared work tree, including other people's",
            INSTEAD_ADD,
        )),
        "commit" => {
            let mut all = false;
            let mut k = 0;
            while k < rest.len() {
                let t = rest[k].text.as_str();
                if t == "--" {
                    break;
                }
                if matches!(
                    t,
                    "-m" | "-F"
                        | "-C"
                        | "-c"
                        | "-t"
                        | "--message"
                        | "--file"
                        | "--author"
                        | "--date"
                        | "--template"
                        | "--fixup"
                        | "--squash"
                        | "--reuse-message"
                        | "--reedit-message"
                        | "--trailer"
                        | "--cleanup"
                ) {
                    k += 2;
                    continue;
                }
                if t == "--all" {
                    all = true;
                } else if t.starts_with('-') && !t.starts_with("--") {
                    for c in t[1..].chars() {
                        if c == 'a' {
                            all = true;
                            break;
                        }
                        // -m/-F/-C/-c/-t take a value; -S<keyid> and
                        // -u<mode> an attached optional one: the rest of
                        // the cluster is that value, not flags.
                        if "mFCctSu".contains(c) {
                            break;
                        }
                    }
                }
                k += 1;
            }
            if all {
                hits.push(Hit::new(
                    Rule::GitAddAll,
                    "`commit -a` stages every modified file in the shared work tree, including other people's",
                    INSTEAD_ADD,
                ));
            }
        }
        "stash" => match rest.first().map(|w| w.text.as_str()) {
            Some("pop") if !rest[1..].iter().any(|w| !w.text.starts_with('-')) => {
                hits.push(Hit::new(
                    Rule::StashPop,
                    "a bare `git stash pop` applies and drops whatever stash is on top, often someone else's",
                    INSTEAD_POP,
                ))
            }
            Some(op @ ("drop" | "clear")) => hits.push(Hit::new(
                Rule::Destroy,
                format!("`git stash {op}` throws stashed work away for good"),
                INSTEAD_DISCARD,
            )),
            _ => {}
        },
        // A clone under a temp dir is nobody's work tree.
        "reset" if in_temp_repo(a, argv) => {}
        "reset" => {
            if let Some(m) = rest.iter().find(|w| {
                matches!(
                    longopt::meaning(&w.text, GIT_RESET_LONG),
                    Some("hard" | "merge")
                )
            }) {
                hits.push(Hit::new(
                    Rule::Destroy,
                    format!(
                        "`git reset {}` discards uncommitted work in the shared work tree",
                        m.text
                    ),
                    INSTEAD_DISCARD,
                ));
            }
        }
        "checkout" => {
            let dd = rest.iter().position(|w| w.text == "--");
            let paths_after_dd = dd.is_some_and(|p| p + 1 < rest.len());
            let dot = rest.iter().any(|w| w.text == "." || w.text == "./");
            let force = flags(&["--force"], 'f');
            if paths_after_dd || dot || force {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "this checkout overwrites uncommitted changes in the shared work tree",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "switch" if flags(&["--discard-changes", "--force"], 'f') => hits.push(Hit::new(
            Rule::Destroy,
            "`git switch --discard-changes` overwrites uncommitted changes in the shared work tree",
            INSTEAD_DISCARD,
        )),
        "restore" => {
            let staged = flags(&["--staged"], 'S');
            let worktree = flags(&["--worktree"], 'W');
            if !staged || worktree {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "`git restore` without --staged overwrites uncommitted changes in the shared work tree",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "clean" => {
            let force = flags(&["--force"], 'f');
            let dry = flags(&["--dry-run"], 'n');
            if force && !dry {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "`git clean -f` deletes untracked files, which may be someone else's new work",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "branch" => {
            let big_d = rest.iter().any(|w| {
                let t = w.text.as_str();
                t.starts_with('-') && !t.starts_with("--") && t.contains('D')
            });
            let del = flags(&["--delete"], 'd');
            let force = flags(&["--force"], 'f');
            if big_d || (del && force) {
                hits.push(Hit::new(
                    Rule::Destroy,
                    "`git branch -D` deletes a branch even when its commits are merged nowhere",
                    INSTEAD_DISCARD,
                ));
            }
        }
        "push" => push(a, rest, hits),
        _ => {}
    }
}

/// Does `git add ARGS` stage the whole work tree? `.`, `:/`, `*` do; `-A`,
/// `-u`, `--all` do unless pathspecs narrow them (`git add -u src/a.rs`);
/// a dry run (`-n`) stages nothing.
fn add_takes_all(rest: &[Word]) -> bool {
    let mut all_flag = false;
    let mut paths = Vec::new();
    let mut after = false;
    for w in rest {
        let t = w.text.as_str();
        if after || !t.starts_with('-') || t == "-" {
            paths.push(t);
        } else if t == "--" {
            after = true;
        } else if longopt::meaning(t, GIT_ADD_LONG) == Some("dry-run") {
            return false;
        } else if matches!(t, "-A" | "-u")
            || matches!(
                longopt::meaning(t, GIT_ADD_LONG),
                Some("all" | "update" | "no-ignore-removal")
            )
        {
            all_flag = true;
        } else if !t.starts_with("--") {
            if t.contains('n') {
                return false;
            }
            if t.contains('A') || t.contains('u') {
                all_flag = true;
            }
        }
    }
    let whole = |p: &str| matches!(p, "." | "./" | ":/" | ":/*" | "*" | ":(top)" | "-A");
    paths.iter().any(|p| whole(p)) || (all_flag && paths.is_empty())
}

/// Is this git command run in a repository under a temp dir (`git -C
/// /tmp/x …`, or a working directory known to be one)?
fn in_temp_repo(a: &Analyser<'_>, argv: &[Word]) -> bool {
    if let Some(k) = argv.iter().position(|w| w.text == "-C") {
        return argv.get(k + 1).is_some_and(|d| {
            !d.text.starts_with('/') && a.cwd.as_deref().is_some_and(|c| is_temp_dir(a, c))
                || is_temp_dir(a, &d.text)
        });
    }
    a.cwd.as_deref().is_some_and(|c| is_temp_dir(a, c))
}

fn is_temp_dir(a: &Analyser<'_>, path: &str) -> bool {
    place_text(a, path, 0) == Place::Temp
}

fn push(a: &Analyser<'_>, rest: &[Word], hits: &mut Vec<Hit>) {
    let mut force = false;
    let mut delete = false;
    let mut all = false;
    let mut positional: Vec<&Word> = Vec::new();
    let mut k = 0;
    while k < rest.len() {
        let t = rest[k].text.as_str();
        if t == "--" {
            positional.extend(rest[k + 1..].iter());
            break;
        }
        if matches!(
            t,
            "-o" | "--push-option" | "--repo" | "--receive-pack" | "--exec"
        ) {
            k += 2;
            continue;
        }
        let long = longopt::meaning(t, GIT_PUSH_LONG);
        if long == Some("dry-run") {
            // A rehearsal: nothing is sent.
            return;
        }
        if matches!(long, Some("force" | "mirror")) {
            force = true;
            if long == Some("mirror") {
                all = true;
            }
        } else if long == Some("delete") {
            delete = true;
        } else if matches!(long, Some("all" | "branches")) {
            all = true;
        } else if t.starts_with("--") {
        } else if t.starts_with('-') && t.len() > 1 {
            if t.contains('f') {
                force = true;
            }
            if t.contains('d') {
                delete = true;
            }
            if t.contains('n') {
                return; // -n is --dry-run
            }
        } else {
            positional.push(&rest[k]);
        }
        k += 1;
    }
    let refspecs: Vec<&Word> = positional.iter().skip(1).copied().collect();
    // Destination branch of each refspec; None = not known statically.
    let dst = |w: &Word| -> Option<String> {
        if w.dynamic {
            return None;
        }
        let t = w.text.trim_start_matches('+');
        let d = t.rsplit_once(':').map(|(_, d)| d).unwrap_or(t);
        let d = d.strip_prefix("refs/heads/").unwrap_or(d);
        // `refs/heads/*` names every branch, the protected ones included.
        if d.is_empty() || d == "HEAD" || d == "@" || d.contains('*') {
            None
        } else {
            Some(d.to_string())
        }
    };
    let protected = |b: &Option<String>| match b {
        Some(b) => a.cfg.protected.iter().any(|p| glob(p, b)),
        None => true,
    };
    let deny = |what: String, hits: &mut Vec<Hit>| {
        hits.push(Hit::new(Rule::Destroy, what, INSTEAD_PUSH));
    };
    if force && (all || refspecs.is_empty()) {
        deny(
            "a force-push whose target branch is not named (it may rewrite a protected branch)"
                .into(),
            hits,
        );
        return;
    }
    for r in &refspecs {
        let b = dst(r);
        let forced = force || r.text.starts_with('+');
        let deleting = delete || (r.text.starts_with(':') && r.text.len() > 1);
        if (forced || deleting) && protected(&b) {
            let name = b.unwrap_or_else(|| r.text.clone());
            let verb = if deleting { "deletes" } else { "force-pushes" };
            deny(
                format!("this {verb} the protected or unknown branch `{name}`"),
                hits,
            );
            return;
        }
    }
}

/// `*` glob over a branch name (`*` matches any run, `/` included).
fn glob(pat: &str, s: &str) -> bool {
    fn m(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| m(rest, &s[i..])),
            Some((c, rest)) => s.first() == Some(c) && m(rest, &s[1..]),
        }
    }
    m(pat.as_bytes(), s.as_bytes())
}

// ------------------------------------------------------------ others

/// rsync's long options, the deleting ones read as `delete`. rsync's own
/// parser (popt) takes only whole names, but macOS's openrsync parses with
/// getopt_long, which takes any unique prefix (`--delet`); whole names
/// still never match a longer one (`--delay-updates` is not `--del`).
const RSYNC_LONG: &[(&str, &str)] = &[
    ("del", "delete"),
    ("delete", "delete"),
    ("delete-before", "delete"),
    ("delete-during", "delete"),
    ("delete-delay", "delete"),
    ("delete-after", "delete"),
    ("delete-excluded", "delete"),
    ("delete-missing-args", "delete"),
    ("remove-source-files", "delete"),
    ("remove-sent-files", "delete"),
    ("dry-run", "dry-run"),
    ("delay-updates", "-"),
    ("devices", "-"),
    ("debug", "-"),
    ("dirs", "-"),
    ("dparam", "-"),
    ("daemon", "-"),
    ("remote-option", "-"),
    ("recursive", "-"),
    ("relative", "-"),
    ("read-batch", "-"),
    ("rsh", "-"),
    ("rsync-path", "-"),
    ("verbose", "-"),
    ("version", "-"),
    ("archive", "-"),
    ("exclude", "-"),
    ("include", "-"),
    ("filter", "-"),
    ("checksum", "-"),
    ("compress", "-"),
    ("progress", "-"),
    ("partial", "-"),
    ("human-readable", "-"),
    ("itemize-changes", "-"),
    ("stats", "-"),
    ("links", "-"),
    ("perms", "-"),
    ("times", "-"),
    ("group", "-"),
    ("owner", "-"),
    ("update", "-"),
    ("inplace", "-"),
    ("append", "-"),
    ("backup", "-"),
    ("backup-dir", "-"),
];

/// Long options of the git subcommands whose options are read here (git
/// 2.47's lists; a prefix shared with any of them is ambiguous, and git
/// refuses it).
const GIT_RESET_LONG: &[(&str, &str)] = &[
    ("hard", "hard"),
    ("soft", "-"),
    ("mixed", "-"),
    ("merge", "merge"),
    ("keep", "-"),
    ("quiet", "-"),
    ("no-quiet", "-"),
    ("patch", "-"),
    ("intent-to-add", "-"),
    ("pathspec-from-file", "-"),
    ("pathspec-file-nul", "-"),
    ("recurse-submodules", "-"),
    ("no-recurse-submodules", "-"),
    ("refresh", "-"),
    ("no-refresh", "-"),
];
const GIT_CLEAN_LONG: &[(&str, &str)] = &[
    ("force", "force"),
    ("dry-run", "dry-run"),
    ("quiet", "-"),
    ("interactive", "-"),
    ("exclude", "-"),
];
const GIT_ADD_LONG: &[(&str, &str)] = &[
    ("all", "all"),
    ("update", "update"),
    ("no-ignore-removal", "no-ignore-removal"),
    ("ignore-removal", "-"),
    ("no-all", "-"),
    ("dry-run", "dry-run"),
    ("verbose", "-"),
    ("force", "-"),
    ("interactive", "-"),
    ("patch", "-"),
    ("edit", "-"),
    ("intent-to-add", "-"),
    ("refresh", "-"),
    ("ignore-errors", "-"),
    ("ignore-missing", "-"),
    ("sparse", "-"),
    ("chmod", "-"),
    ("renormalize", "-"),
    ("pathspec-from-file", "-"),
    ("pathspec-file-nul", "-"),
];
/// `--force-with-lease` and `--force-if-includes` replace the remote
/// branch like `--force` (the lease only checks that nobody pushed since
/// the last fetch): all three mean `force`, so `--forc` is one too.
const GIT_PUSH_LONG: &[(&str, &str)] = &[
    ("force", "force"),
    ("force-with-lease", "force"),
    ("force-if-includes", "force"),
    ("mirror", "mirror"),
    ("delete", "delete"),
    ("all", "all"),
    ("branches", "branches"),
    ("dry-run", "dry-run"),
    ("repo", "-"),
    ("tags", "-"),
    ("porcelain", "-"),
    ("recurse-submodules", "-"),
    ("thin", "-"),
    ("no-thin", "-"),
    ("receive-pack", "-"),
    ("exec", "-"),
    ("set-upstream", "-"),
    ("progress", "-"),
    ("prune", "-"),
    ("no-verify", "-"),
    ("verify", "-"),
    ("follow-tags", "-"),
    ("signed", "-"),
    ("atomic", "-"),
    ("push-option", "-"),
    ("ipv4", "-"),
    ("ipv6", "-"),
    ("quiet", "-"),
    ("verbose", "-"),
];

/// The long options held for a git subcommand (empty: exact names only).
fn git_long_options(sub: &str) -> &'static [(&'static str, &'static str)] {
    match sub {
        "reset" => GIT_RESET_LONG,
        "clean" => GIT_CLEAN_LONG,
        "add" | "stage" => GIT_ADD_LONG,
        "push" => GIT_PUSH_LONG,
        _ => &[],
    }
}

fn rsync(argv: &[Word], hits: &mut Vec<Hit>) {
    let mut del = None;
    let mut dry = false;
    for w in &argv[1..] {
        let t = w.text.as_str();
        // Whole option names, as rsync matches them (`--delay-updates` is
        // not `--del`).
        let long = longopt::meaning(t, RSYNC_LONG);
        if long == Some("delete") {
            del = Some(t.to_string());
        } else if long == Some("dry-run")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('n'))
        {
            dry = true;
        }
    }
    if let Some(opt) = del
        && !dry
    {
        hits.push(Hit::new(
            Rule::RsyncDelete,
            format!("`rsync {opt}` deletes files on the target that are missing from the source"),
            INSTEAD_RSYNC,
        ));
    }
}

fn flutter(argv: &[Word], hits: &mut Vec<Hit>) {
    let Some(run) = argv.iter().position(|w| w.text == "run") else {
        return;
    };
    if argv[1..run].iter().any(|w| !w.text.starts_with('-')) {
        return; // `run` is an argument of another subcommand
    }
    let rest = &argv[run + 1..];
    let mut device: Option<&str> = None;
    for (k, w) in rest.iter().enumerate() {
        let t = w.text.as_str();
        if t == "-d" || t == "--device-id" {
            device = rest.get(k + 1).map(|w| w.text.as_str());
        } else if let Some(d) = t.strip_prefix("--device-id=") {
            device = Some(d);
        } else if let Some(d) = t
            .strip_prefix("-d")
            .filter(|d| !d.is_empty() && !t.starts_with("--"))
        {
            device = Some(d);
        }
    }
    if let Some(d) = device
        && is_physical_device(d)
    {
        hits.push(Hit::new(
            Rule::FlutterRunDevice,
            format!("`flutter run` on the physical device `{d}`"),
            INSTEAD_FLUTTER,
        ));
    }
}

/// Device ids that name no physical device: desktop and web targets,
/// Android emulators, iOS simulators (UUID 8-4-4-4-12).
fn is_physical_device(d: &str) -> bool {
    let virtual_target = matches!(
        d.to_ascii_lowercase().as_str(),
        "chrome" | "web-server" | "edge" | "macos" | "linux" | "windows" | "flutter-tester"
    ) || d.starts_with("emulator-")
        || is_uuid(d);
    !virtual_target && !d.is_empty() && !d.starts_with('$')
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn sql_client(name: &str, argv: &[Word], stdin: Option<&str>, hits: &mut Vec<Hit>) {
    if let Some((c, start)) = sql::client(name, argv) {
        let mut texts = sql::sql_args(c, argv, start);
        texts.extend(stdin.map(str::to_string));
        if let Some(what) = texts.iter().find_map(|s| sql::destructive_sql(s)) {
            hits.push(Hit::new(
                Rule::Destroy,
                format!("{what} through {name} deletes data"),
                INSTEAD_SQL,
            ));
        }
    }
    if let Some(why) = sql::drop_tool(name, argv, stdin) {
        hits.push(Hit::new(Rule::Destroy, why, INSTEAD_SQL));
    }
}

fn release(a: &Analyser<'_>, argv: &[Word], hits: &mut Vec<Hit>) {
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

// ------------------------------------------------------------ steal

/// Commands that send data off the machine: the command, the words that
/// must follow it (in order) and how it sends.
const SENDERS: &[(&str, &[&str], Sender)] = &[
    // HTTP clients: `-d @file`, `-F f=@file`, `-T file`, `--post-file`.
    ("curl", &[], Sender::Url),
    ("wget", &[], Sender::Url),
    ("http", &[], Sender::Url),  // HTTPie
    ("https", &[], Sender::Url), // HTTPie
    ("xh", &[], Sender::Url),
    // Raw sockets: whatever is on stdin goes to the peer.
    ("nc", &[], Sender::Socket),
    ("ncat", &[], Sender::Socket),
    ("netcat", &[], Sender::Socket),
    ("socat", &[], Sender::Socket),
    ("telnet", &[], Sender::Socket),
    // Copies whose last argument is `host:path` / `remote:path`.
    ("scp", &[], Sender::Copy),
    ("rsync", &[], Sender::Copy),
    ("sftp", &[], Sender::Copy),
    ("rclone", &[], Sender::Copy), // rclone copy|sync|move SRC remote:path
    ("kubectl", &["cp"], Sender::Copy), // kubectl cp FILE pod:/path
    // Remote shells: stdin goes to the remote side. The remote command's
    // words name the remote machine's files, not ours.
    ("ssh", &[], Sender::Remote),
    // Cloud storage copies: an upload when the destination is a bucket; a
    // download (`aws s3 cp s3://b/.env ./.env`) is not a leak.
    ("aws", &["s3"], Sender::Bucket),
    ("gsutil", &[], Sender::Bucket),
    ("gcloud", &["storage"], Sender::Bucket),
    ("azcopy", &[], Sender::Bucket),
    ("s3cmd", &["put"], Sender::Always),
    ("b2", &["upload-file"], Sender::Always),
    ("az", &["storage", "upload"], Sender::Always),
    // Mail and file drops: everything named goes out.
    ("mail", &[], Sender::Always),
    ("mailx", &[], Sender::Always),
    ("mutt", &[], Sender::Always),
    ("sendmail", &[], Sender::Always),
    ("ftp", &[], Sender::Always),
    ("lftp", &[], Sender::Always),
    ("croc", &["send"], Sender::Always),
    ("wormhole", &["send"], Sender::Always),
    ("gh", &["gist"], Sender::Always),
    ("gh", &["release", "upload"], Sender::Always),
];

/// How `name ARGV` sends data off the machine, if it does.
fn sender_kind(name: &str, argv: &[Word]) -> Option<Sender> {
    SENDERS
        .iter()
        .find(|(n, sub, _)| {
            *n == name && {
                let mut it = argv[1..].iter();
                sub.iter().all(|want| it.any(|w| w.text == *want))
            }
        })
        .map(|(_, _, kind)| *kind)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender {
    Url,
    Socket,
    Copy,
    Always,
    Remote,
    Bucket,
}

/// Option values that are not data being sent: client certificates,
/// output files, identity and config files.
fn exempt_opts(kind: Sender) -> &'static [&'static str] {
    match kind {
        Sender::Url => &[
            "-o",
            "--output",
            "-O",
            "--output-document",
            "-E",
            "--cert",
            "--key",
            "--cacert",
            "--capath",
            "-K",
            "--config",
            "--netrc-file",
            "-c",
            "--cookie-jar",
            "-D",
            "--dump-header",
            "--certificate",
            "--private-key",
            "--ca-certificate",
            "--append-output",
            "--output-file",
        ],
        Sender::Copy | Sender::Always | Sender::Remote => {
            &["-i", "-F", "-o", "-e", "--rsh", "-J", "-S"]
        }
        Sender::Socket | Sender::Bucket => &[],
    }
}

fn is_loopback(host: &str) -> bool {
    let h = host
        .split("://")
        .nth(1)
        .unwrap_or(host)
        .split(['/', '?'])
        .next()
        .unwrap_or("");
    let h = h.rsplit('@').next().unwrap_or(h);
    let h = if h.starts_with('[') {
        h.split(']').next().unwrap_or(h).trim_start_matches('[')
    } else {
        h.split(':').next().unwrap_or(h)
    };
    h == "localhost" || h.starts_with("127.") || h == "::1" || h == "0.0.0.0"
}

fn is_remote_copy_dest(t: &str) -> bool {
    if t.starts_with("rsync://") {
        return true;
    }
    match t.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

/// The arguments without the sender's exempt options and the value each one
/// takes (`-o out.txt`: where the answer goes, not what is sent).
fn without_exempt_options<'a>(args: &'a [Word], exempt: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if exempt.contains(&w.text.as_str()) {
            words.next();
        } else {
            out.push(w);
        }
    }
    out
}

fn steal(name: &str, argv: &[Word], cmd: &Cmd, input: &Flow, hits: &mut Vec<Hit>) {
    let Some(kind) = sender_kind(name, argv) else {
        return;
    };
    let exempt = exempt_opts(kind);
    // Is the destination off the machine?
    let args = without_exempt_options(&argv[1..], exempt);
    let positional: Vec<&Word> = args
        .iter()
        .copied()
        .filter(|w| !w.text.starts_with('-'))
        .collect();
    let remote = match kind {
        Sender::Always => true,
        Sender::Url => {
            let mut urls: Vec<&&Word> = positional
                .iter()
                .filter(|w| w.text.contains("://"))
                .collect();
            if urls.is_empty() {
                // Bare hosts (`curl example.com`): not data, not secrets.
                urls = positional
                    .iter()
                    .filter(|w| {
                        !w.text.starts_with('@')
                            && !w.text.contains('=')
                            && !mentions_secret(&w.text)
                    })
                    .collect();
            }
            urls.is_empty() || urls.iter().any(|w| !is_loopback(&w.text))
        }
        Sender::Socket => positional.first().is_none_or(|w| !is_loopback(&w.text)),
        Sender::Remote => positional.first().is_none_or(|w| !is_loopback(&w.text)),
        Sender::Bucket => positional.last().is_some_and(|w| {
            ["s3://", "gs://", "az://", "https://"]
                .iter()
                .any(|p| w.text.starts_with(p))
        }),
        Sender::Copy => {
            name == "sftp"
                || positional
                    .last()
                    .is_some_and(|w| is_remote_copy_dest(&w.text))
        }
    };
    if !remote {
        return;
    }
    // Does a secret go with it?
    let mut leaked: Option<String> = None;
    if input.secret {
        leaked = Some("a secret file's content piped into it".into());
    }
    if leaked.is_none()
        && let Some(f) = cmd.in_files.iter().find(|w| mentions_secret(&w.text))
    {
        leaked = Some(format!("`{}` fed to its stdin", f.text));
    }
    if leaked.is_none() {
        let candidates: Vec<&Word> = match kind {
            // Only the sources, not the destination.
            Sender::Copy | Sender::Bucket => {
                positional[..positional.len().saturating_sub(1)].to_vec()
            }
            // Only what the local shell expands into the remote command.
            Sender::Remote => args
                .iter()
                .copied()
                .filter(|w| w.dynamic && (w.text.contains("$(") || w.text.contains('`')))
                .collect(),
            // Everything but a literal destination URL.
            _ => args
                .iter()
                .copied()
                .filter(|w| {
                    !(w.text.contains("://") && !w.text.contains("$(") && !w.text.contains('`'))
                })
                .collect(),
        };
        if let Some(w) = candidates.iter().find(|w| mentions_secret(&w.text)) {
            leaked = Some(format!("`{}`", w.text));
        }
    }
    if let Some(what) = leaked {
        hits.push(Hit::new(
            Rule::Steal,
            format!("{what} would leave the machine through {name}"),
            INSTEAD_STEAL,
        ));
    }
}

/// Does this command turn encoded text back into bytes (`base64 -d`,
/// `xxd -r`, `openssl enc -d`, `gunzip`)?
fn is_decoder(name: &str, argv: &[Word]) -> bool {
    let has = |f: &[&str]| argv[1..].iter().any(|w| f.contains(&w.text.as_str()));
    match name {
        "base64" | "base32" | "basenc" => has(&["-d", "--decode", "-D"]),
        "xxd" => has(&["-r", "-revert"]),
        "openssl" => has(&["-d"]) || has(&["base64"]),
        "gunzip" | "zcat" | "uudecode" | "rev" => true,
        "gzip" | "xz" | "bzip2" | "zstd" => has(&["-d", "--decompress"]),
        _ => false,
    }
}

/// Does the stream out of this stage carry a secret?
fn flows_secret(name: &str, argv: &[Word], cmd: &Cmd, input: &Flow) -> bool {
    if matches!(
        name,
        "echo" | "printf" | "true" | ":" | "ls" | "stat" | "test" | "["
    ) {
        return false;
    }
    input.secret
        || cmd.in_files.iter().any(|w| mentions_secret(&w.text))
        || argv[1..].iter().any(|w| mentions_secret(&w.text))
}

/// Does this text name a secret file anywhere?
pub(crate) fn mentions_secret(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "@=,;|<>\"'()`{}[]:".contains(c))
        .any(is_secret_path)
}

/// How a secret file is recognised.
#[derive(Clone, Copy)]
enum Secret {
    /// The file or directory name, anywhere.
    Name(&'static str),
    /// A name inside a directory of this name (`.aws/credentials`).
    In(&'static str, &'static str),
    /// Anything under a directory path ending so (`.config/gcloud`).
    Under(&'static str),
    /// A file name ending so (`.p12`).
    Ext(&'static str),
}

/// Token and key files every developer machine has, one entry each: what
/// it holds. A file named here never leaves the machine.
const SECRET_FILES: &[(Secret, &str)] = &[
    (Secret::Name("id_rsa"), "SSH private key"),
    (Secret::Name("id_dsa"), "SSH private key"),
    (Secret::Name("id_ecdsa"), "SSH private key"),
    (Secret::Name("id_ed25519"), "SSH private key"),
    (
        Secret::Name("id_ecdsa_sk"),
        "SSH private key (security key)",
    ),
    (
        Secret::Name("id_ed25519_sk"),
        "SSH private key (security key)",
    ),
    (Secret::Name(".ssh"), "the SSH directory: keys"),
    (Secret::Name(".gnupg"), "GnuPG private keys"),
    (Secret::Under(".gnupg"), "GnuPG private keys"),
    (Secret::Name(".aws"), "AWS credentials directory"),
    (Secret::In(".aws", "credentials"), "AWS access keys"),
    (Secret::Under(".aws/sso/cache"), "AWS SSO tokens"),
    (Secret::Under(".config/gcloud"), "Google Cloud credentials"),
    (
        Secret::Name("application_default_credentials.json"),
        "Google Cloud ADC",
    ),
    (Secret::Under(".azure"), "Azure CLI tokens"),
    (
        Secret::In(".kube", "config"),
        "Kubernetes cluster credentials",
    ),
    (
        Secret::In(".docker", "config.json"),
        "container registry logins",
    ),
    (Secret::Name(".netrc"), "logins for curl, git, ftp"),
    (Secret::Name(".git-credentials"), "git credential store"),
    (
        Secret::In("git", "credentials"),
        "git credential store (XDG)",
    ),
    (Secret::Name(".pypirc"), "PyPI upload token"),
    (Secret::Name(".npmrc"), "npm registry token"),
    (Secret::Name(".yarnrc.yml"), "Yarn registry token"),
    (Secret::In(".cargo", "credentials.toml"), "crates.io token"),
    (
        Secret::In(".cargo", "credentials"),
        "crates.io token (old name)",
    ),
    (Secret::In(".gem", "credentials"), "RubyGems API key"),
    (Secret::In(".m2", "settings.xml"), "Maven server passwords"),
    (
        Secret::In(".gradle", "gradle.properties"),
        "Gradle signing and publishing keys",
    ),
    (
        Secret::In(".claude", ".credentials.json"),
        "Claude Code OAuth tokens",
    ),
    (Secret::In(".codex", "auth.json"), "Codex CLI tokens"),
    (Secret::In("gh", "hosts.yml"), "GitHub CLI token"),
    (Secret::In("hub", "hub"), "hub GitHub token"),
    (
        Secret::Under(".config/github-copilot"),
        "GitHub Copilot tokens",
    ),
    (
        Secret::In(".terraform.d", "credentials.tfrc.json"),
        "Terraform Cloud token",
    ),
    (Secret::Name(".vault-token"), "HashiCorp Vault token"),
    (Secret::Name(".pgpass"), "PostgreSQL passwords"),
    (Secret::Name(".my.cnf"), "MySQL password"),
    (Secret::Name(".s3cfg"), "s3cmd keys"),
    (Secret::Name(".boto"), "gsutil / boto keys"),
    (
        Secret::In("rclone", "rclone.conf"),
        "rclone remotes' credentials",
    ),
    (Secret::Under(".config/doctl"), "DigitalOcean token"),
    (Secret::Under(".config/stripe"), "Stripe keys"),
    (Secret::In(".fly", "config.yml"), "Fly.io token"),
    (Secret::Under(".password-store"), "pass password store"),
    (Secret::Name(".token.json"), "hoop's cached backend JWT"),
    (Secret::Name(".hoop"), "hoop's root: tokens and keys"),
    (Secret::Name("agent.env"), "hoop agent credentials"),
    (Secret::Name(".env"), "a project's secrets"),
    (Secret::Name(".envrc"), "direnv environment, often secrets"),
    (
        Secret::Name("credentials.json"),
        "OAuth client or service credentials",
    ),
    (
        Secret::Name("serviceAccountKey.json"),
        "Firebase service account key",
    ),
    (Secret::Ext(".p12"), "certificate with its private key"),
    (Secret::Ext(".pfx"), "certificate with its private key"),
    (Secret::Ext(".jks"), "Java / Android signing keystore"),
    (Secret::Ext(".keystore"), "Android signing keystore"),
    (Secret::Ext(".p8"), "App Store Connect API key"),
];

fn is_secret_path(p: &str) -> bool {
    let p = p.trim_end_matches('/');
    if p.is_empty() {
        return false;
    }
    let mut comps = p.rsplit('/');
    let base = comps.next().unwrap_or("");
    let parent = comps.next().unwrap_or("");
    if base.ends_with(".pub") {
        return false;
    }
    // Inside ~/.ssh everything but public keys, known_hosts and config.
    if parent == ".ssh" {
        return !(base.starts_with("known_hosts")
            || base == "config"
            || base.starts_with("authorized_keys"));
    }
    if let Some(suffix) = base.strip_prefix(".env.") {
        return !matches!(suffix, "example" | "sample" | "template" | "dist");
    }
    SECRET_FILES.iter().any(|(m, _)| match *m {
        Secret::Name(n) => base == n,
        Secret::In(dir, n) => parent == dir && base == n,
        Secret::Under(dir) => p.contains(&format!("{dir}/")) || p.ends_with(dir),
        Secret::Ext(e) => base.len() > e.len() && base.ends_with(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_paths() {
        for yes in [
            "~/.ssh/id_rsa",
            "/home/u/.ssh/id_ed25519",
            "id_rsa",
            ".env",
            "./.env.local",
            "/r/h/.token.json",
            "agent.env",
            "~/.aws/credentials",
            "~/.ssh",
            "~/.kube/config",
            "~/.config/gcloud/application_default_credentials.json",
        ] {
            assert!(is_secret_path(yes), "{yes}");
        }
        for no in [
            "~/.ssh/id_rsa.pub",
            "~/.ssh/known_hosts",
            ".env.example",
            "README.md",
            "envy",
            "src/env.rs",
            "~/.ssh/config",
        ] {
            assert!(!is_secret_path(no), "{no}");
        }
        assert!(mentions_secret("file=@/home/u/.ssh/id_rsa"));
        assert!(mentions_secret("$(cat .env)"));
    }

    /// The protected-branch pattern: `*` matches any run of characters,
    /// `/` and the empty run included; everything else, `?` and `[` too,
    /// matches itself only, case and all, over the whole name.
    #[test]
    fn globs() {
        let cases: &[(&str, &str, bool)] = &[
            ("main", "main", true),
            ("main", "Main", false),
            ("main", "mainline", false),
            ("main", "old-main", false),
            ("main", "", false),
            ("", "", true),
            ("", "main", false),
            ("release/*", "release/1.2", true),
            ("release/*", "release/", true),
            ("release/*", "release/1.x/hotfix", true),
            ("release/*", "release", false),
            ("release/*", "feature/x", false),
            ("release/*", "xrelease/1.2", false),
            ("*", "", true),
            ("*", "any/branch", true),
            ("*-stable", "1.0-stable", true),
            ("*-stable", "-stable", true),
            ("*-stable", "1.0-stable-old", false),
            ("v*.*", "v1.2", true),
            ("v*.*", "v12", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "a-b-c", true),
            ("a*b*c", "acb", false),
            ("a*b*c", "abcx", false),
            ("**", "x", true),
            ("release-?", "release-?", true),
            ("release-?", "release-1", false),
            ("hotfix-[0-9]", "hotfix-[0-9]", true),
            ("hotfix-[0-9]", "hotfix-1", false),
        ];
        for &(pat, name, want) in cases {
            assert_eq!(glob(pat, name), want, "glob({pat:?}, {name:?})");
        }
    }

    #[test]
    fn devices() {
        assert!(is_physical_device("00008030-001A2C3E1234802E"));
        assert!(is_physical_device("R58M12ABCDE"));
        assert!(!is_physical_device("emulator-5554"));
        assert!(!is_physical_device("chrome"));
        assert!(!is_physical_device("6F1B2D3C-1111-2222-3333-444455556666"));
    }
}
