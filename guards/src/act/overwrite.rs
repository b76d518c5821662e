//! Overwriting or shredding files in place: `shred`, `truncate` to zero or
//! smaller, `dd of=FILE` writing into an existing file (`conv=notrunc`,
//! `seek=`). The content is gone with no copy and no undo, so outside the
//! temp dirs they are `destroy`.
//!
//! Out of scope, on purpose: `: > file`, `> file` and a plain `dd of=new.img`
//! (which truncates and rewrites its output like `>` does). A redirection is
//! how every program writes its output, and whether the file held data
//! worth keeping cannot be told from the command text: blocking it would
//! block `make > build.log` and `dd if=/dev/zero of=disk.img` alike.

use super::disks::is_long;
use super::paths::{Place, place};
use super::rules::Hit;
use super::shell::{Analyser, Word};

const INSTEAD: &str = "leave files you did not create as they are; remove a file you created by name (`rm FILE`), work on a copy under /tmp, or ask a human";

/// Commands this family judges.
pub(super) fn handles(name: &str) -> bool {
    matches!(name, "shred" | "truncate" | "dd")
}

/// The verdict on one command whose name `handles` accepted.
pub(super) fn verdict(a: &Analyser<'_>, name: &str, argv: &[Word]) -> Option<Hit> {
    let (what, targets) = match name {
        "shred" => ("`shred` overwrites", shred_targets(argv)),
        "truncate" => ("`truncate` cuts", truncate_targets(argv)),
        _ => ("`dd` overwrites", dd_target(argv)),
    };
    let t = targets
        .into_iter()
        .find(|t| !is_stream_device(&t.text) && place(a, t) != Place::Temp)?;
    Some(Hit::new(
        super::Rule::Destroy,
        format!(
            "{what} `{}` in place: its content is gone for good, with no copy to restore",
            t.text
        ),
        INSTEAD,
    ))
}

/// `/dev/null`, `/dev/stdout`, … : nothing stored there.
pub(super) fn is_stream_device(p: &str) -> bool {
    matches!(
        p,
        "/dev/null" | "/dev/zero" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "-"
    ) || p.starts_with("/dev/fd/")
}

fn shred_targets(argv: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut k = 1;
    let mut after = false;
    while k < argv.len() {
        let t = argv[k].text.as_str();
        if after || !t.starts_with('-') || t == "-" {
            out.push(argv[k].clone());
        } else if t == "--" {
            after = true;
        } else if matches!(t, "--help" | "--version") {
            return Vec::new();
        } else if matches!(
            t,
            "-n" | "-s" | "--iterations" | "--size" | "--random-source"
        ) {
            k += 1;
        }
        k += 1;
    }
    out
}

/// The files `truncate` shrinks: to zero (`-s 0`) or by a relative size
/// that can only shrink (`-s -N`, `<N`, `/N`). Growing (`+N`, `%N`) and
/// setting a non-zero size (`-s 1G disk.img`, how images are made) pass.
fn truncate_targets(argv: &[Word]) -> Vec<Word> {
    let mut size: Option<String> = None;
    let mut files = Vec::new();
    let mut k = 1;
    let mut after = false;
    while k < argv.len() {
        let t = argv[k].text.as_str();
        if after || !t.starts_with('-') {
            files.push(argv[k].clone());
        } else if t == "--" {
            after = true;
        } else if t == "-s" || (is_long(t, "--size") && !t.contains('=')) {
            size = argv.get(k + 1).map(|w| w.text.clone());
            k += 1;
        } else if is_long(t, "--size") {
            size = t.split_once('=').map(|(_, v)| v.to_string());
        } else if t == "-r" || (is_long(t, "--reference") && !t.contains('=')) {
            k += 1;
        } else if !t.starts_with("--") {
            // A cluster such as `-cs0`: `s` takes the rest as its value.
            if let Some(p) = t.find('s') {
                let v = &t[p + 1..];
                size = if v.is_empty() {
                    k += 1;
                    argv.get(k).map(|w| w.text.clone())
                } else {
                    Some(v.to_string())
                };
            }
        }
        k += 1;
    }
    match size {
        Some(s) if shrinks(&s) => files,
        _ => Vec::new(),
    }
}

fn shrinks(size: &str) -> bool {
    if size.starts_with(['-', '<', '/']) {
        return true;
    }
    let digits: String = size.chars().take_while(|c| c.is_ascii_digit()).collect();
    !digits.is_empty() && digits.bytes().all(|b| b == b'0')
}

/// `dd of=FILE` that writes into the file as it stands: `conv=notrunc`
/// keeps the rest and overwrites the blocks, `seek=` cuts it after the
/// offset. Block devices are the disks family's.
fn dd_target(argv: &[Word]) -> Vec<Word> {
    let mut of = None;
    let mut in_place = false;
    for w in &argv[1..] {
        let t = w.text.as_str();
        if let Some(f) = t.strip_prefix("of=") {
            of = Some(Word {
                text: f.to_string(),
                dynamic: w.dynamic,
            });
        } else if let Some(c) = t.strip_prefix("conv=") {
            in_place |= c.split(',').any(|c| c == "notrunc");
        } else if t.starts_with("seek=") || t.starts_with("oseek=") {
            in_place = true;
        }
    }
    match of {
        Some(f) if in_place && !f.text.starts_with("/dev/") => vec![f],
        _ => Vec::new(),
    }
}
