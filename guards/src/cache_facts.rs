//! The one piece of I/O act_guard does: asking git whether the regenerable
//! cache folders a command removes (`rm -rf node_modules`, see
//! `act/caches.rs`) hold anything git tracks. The verdict itself stays pure
//! ([`crate::act::check`] with [`crate::act::ActConfig::untracked_caches`]);
//! the hook shell ([`crate::run`]) calls [`untracked`] only when such a
//! folder is the one thing that blocks a command, so a command that names no
//! cache folder never starts a process.
//!
//! One `git ls-files` for all the paths. Anything short of a clean "nothing
//! tracked" keeps the block (fail closed): no git, a directory outside any
//! git work tree (nothing then says the folder is regenerable), git failing,
//! a tracked file under a path, or a symbolic link on a path (a folder that
//! is a link to `/` or `~` would be emptied through it).

use std::path::Path;
use std::process::{Command, Stdio};

/// Why git does not vouch for the paths, in words for the block reason.
pub type Cause = String;

/// Ok when every path (relative to `cwd`, as `act::cache_candidates`
/// gives them) is free of symbolic links and holds no file git tracks.
pub fn untracked(cwd: &Path, paths: &[String]) -> Result<(), Cause> {
    untracked_with(Path::new("git"), cwd, paths)
}

/// [`untracked`] with the git program to run (a test runs a missing one).
pub fn untracked_with(git: &Path, cwd: &Path, paths: &[String]) -> Result<(), Cause> {
    for p in paths {
        no_symlink_on(cwd, p)?;
    }
    let mut git = Command::new(git);
    git.arg("-C")
        .arg(cwd)
        .args(["ls-files", "-z", "--"])
        .stdin(Stdio::null());
    for p in paths {
        if p.contains('*') {
            git.arg(format!(":(glob){p}")).arg(format!(":(glob){p}/**"));
        } else {
            git.arg(format!(":(literal){p}"));
        }
    }
    let out = git
        .output()
        .map_err(|e| format!("git could not be run to check it ({e})"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().next().unwrap_or("").trim();
        return Err(if first.contains("not a git repository") {
            "the directory is not in a git work tree, so nothing shows the folder is regenerable"
                .to_string()
        } else {
            format!("git ls-files failed ({first})")
        });
    }
    let tracked: Vec<&[u8]> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .collect();
    match tracked.first() {
        None => Ok(()),
        Some(f) => Err(format!(
            "git tracks {} file(s) under it (`{}`…): it holds sources, not only build output",
            tracked.len(),
            String::from_utf8_lossy(f)
        )),
    }
}

/// Err when a component of `rel` under `cwd` (or, for a `*.ext` last
/// component, any entry it matches) is a symbolic link.
fn no_symlink_on(cwd: &Path, rel: &str) -> Result<(), Cause> {
    let link = |p: &Path| {
        format!(
            "`{}` is a symbolic link, and removing through it reaches whatever it points to",
            p.strip_prefix(cwd).unwrap_or(p).display()
        )
    };
    let comps: Vec<&str> = rel.split('/').collect();
    let mut cur = cwd.to_path_buf();
    for (i, c) in comps.iter().enumerate() {
        if i + 1 == comps.len()
            && let Some(suffix) = c.strip_prefix('*')
        {
            let Ok(entries) = std::fs::read_dir(&cur) else {
                return Ok(()); // nothing there to remove
            };
            for e in entries.flatten() {
                let name = e.file_name();
                let matches = name.to_string_lossy().ends_with(suffix);
                if matches && e.file_type().map_err(|e| e.to_string())?.is_symlink() {
                    return Err(link(&e.path()));
                }
            }
            return Ok(());
        }
        cur.push(c);
        match std::fs::symlink_metadata(&cur) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("`{}` could not be read ({e})", cur.display())),
            Ok(m) if m.file_type().is_symlink() => return Err(link(&cur)),
            Ok(m) if !m.is_dir() => return Ok(()),
            Ok(_) => {}
        }
    }
    Ok(())
}
