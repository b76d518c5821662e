//! A program copied or linked under another name is the same program:
//! `cp /bin/rm ./x && ./x -rf src` runs `rm -rf src`. A copy, link or
//! install of an executable (a path, or `$(which rm)` / `$(command -v rm)`)
//! is remembered by its new path, so that running the new path is checked
//! as the original command, wherever it is the command (first, or behind
//! `sudo`, `env`, `xargs`, `find -exec`).

use super::shell::{Analyser, Word};

/// Options of `cp`, `ln` and `install` that take the next word as value.
const VALUE_OPTIONS: &[&str] = &[
    "-m", "-o", "-g", "-S", "--suffix", "--mode", "--owner", "--group",
];

/// Note the copy `argv` (of `cp`, `ln` or `install`) makes, if it copies a
/// program.
pub(super) fn note(a: &mut Analyser<'_>, name: &str, argv: &[Word]) {
    if !matches!(name, "cp" | "ln" | "install") {
        return;
    }
    let mut operands = Vec::new();
    let mut k = 1;
    while k < argv.len() {
        let t = argv[k].text.as_str();
        if t == "--" {
            operands.extend(argv[k + 1..].iter());
            break;
        }
        if t == "-t" || t.starts_with("--target-directory") {
            return; // copies keep their names in a directory
        }
        if VALUE_OPTIONS.contains(&t) {
            k += 2;
            continue;
        }
        if !(t.starts_with('-') && t.len() > 1) {
            operands.push(&argv[k]);
        }
        k += 1;
    }
    let [src, dest] = operands.as_slice() else {
        return;
    };
    let Some(program) = program(src) else { return };
    let d = dest.text.as_str();
    if dest.dynamic || d.ends_with('/') || d.is_empty() {
        return;
    }
    let key = if d.contains('/') {
        d.to_string()
    } else {
        format!("./{d}")
    };
    a.copies.push((key, program));
}

/// The program a copy source names: the last component of a path, or the
/// name `$(which NAME)`, `$(command -v NAME)`, `$(type -P NAME)` looks up.
fn program(src: &Word) -> Option<String> {
    let t = src.text.as_str();
    let inner = t
        .strip_prefix("$(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| t.strip_prefix('`').and_then(|r| r.strip_suffix('`')));
    let name = match inner {
        Some(code) => {
            let words: Vec<&str> = code.split_whitespace().collect();
            match words.as_slice() {
                ["which", n] | ["command", "-v", n] | ["type", "-P", n] | ["type", "-p", n] => *n,
                _ => return None,
            }
        }
        None if !src.dynamic && t.contains('/') => t.rsplit('/').next()?,
        None => return None,
    };
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    ok.then(|| name.to_string())
}
