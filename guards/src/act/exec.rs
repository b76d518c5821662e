//! How a command runs other commands, and the way back into the analyser:
//! assignments and wrappers are peeled off (`env`, `xargs`, `python -m`, the
//! [`super::wrappers`] table), shell text inside a command (`bash -c`,
//! `eval`, `source`, a script this text wrote, `env -S`) is parsed again,
//! `cd` moves the known working directory, and what a command prints is
//! passed on down the pipeline. No rule lives here; every argv reached is
//! handed to [`super::rules::dispatch`].

use super::copies;
use super::decode;
use super::git_alias;
use super::interp;
use super::mass_delete;
use super::rules::{base, dispatch};
use super::shell::{Analyser, Cmd, Flow, Word};
use super::words::{FRESH_TEMP, is_mktemp};
use super::wrappers::{self, Peeled};

/// Shells whose `-c` payload, heredoc or piped input is shell code.
const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash",
];

pub(super) fn is_assignment(w: &Word) -> bool {
    match w.text.split_once('=') {
        Some((k, _)) => {
            !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

pub(super) fn join(words: &[Word]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

pub(super) fn exec(
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
        // A program copied under another name runs as itself.
        if let Some((_, program)) = a.copies.iter().rev().find(|(k, _)| *k == w.text) {
            let mut argv = vec![Word::lit(program)];
            argv.extend_from_slice(&words[i + 1..]);
            return exec(a, cmd, &argv, input, stdin);
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
        a.block(h.into_block(&cmd.span));
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

/// Commands that run other code (nested shells, `eval`, `cd`, `alias`,
/// `source`, a script this text wrote, `find`, interpreters): their code is
/// analysed, and the flow out carries `find`'s roots. `None` when the
/// command was wholly analysed here (a git alias, run as its expansion).
pub(super) fn nested(
    a: &mut Analyser<'_>,
    cmd: &Cmd,
    name: &str,
    argv: &[Word],
    input: &Flow,
    stdin: Option<&str>,
) -> Option<Flow> {
    let Some(first) = argv.first() else {
        return Some(Flow::default());
    };
    let mut out = Flow::default();
    match name {
        n if SHELLS.contains(&n) => shell_command(a, argv, stdin, input.decoded),
        "eval" if decode::runs_decoded(&join(&argv[1..])) => a.refuse(decode::UNKNOWN_INTO_SHELL),
        "eval" => a.shell(&join(&argv[1..])),
        "git" if git_alias::nested(a, cmd, argv, input, stdin) => return None,
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
        "find" => out.items = Some(mass_delete::find(a, cmd, argv)),
        n if interp::is_interpreter(n) => interp::interpreter(a, n, argv, stdin, &cmd.span),
        _ => {}
    }
    Some(out)
}

/// What this command passes on to the next one in a pipeline (`echo`,
/// `printf`, `cat`, `tee`), and the files it writes with known content.
pub(super) fn passes_on(
    a: &mut Analyser<'_>,
    cmd: &Cmd,
    name: &str,
    argv: &[Word],
    stdin: Option<&str>,
    out: &mut Flow,
) {
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
}

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
        // `cd ~` / `cd ~/x`: the home (a place `place` knows); `~user` not.
        Some(w) if w.text == "~" || w.text.starts_with("~/") => Some(w.text.clone()),
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
