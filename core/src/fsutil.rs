//! The ONE atomic-write helper: temp file in the same directory, fsync, rename,
//! fsync the directory. Every state file of every crate is written through it,
//! so a crash leaves either the old content or the new, never half of either.
//!
//! A state file that more than one process rewrites (read, change, write
//! back) is changed only under [`with_lock_beside`]: an exclusive `flock` on
//! `<file>.lock` beside it, so two writers never lose each other's change.
//! Readers need no lock (a rename is atomic); the lock file is never deleted.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Options for [`write_atomic`].
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Unix permission bits for the new file (e.g. 0o600 for token caches).
    pub mode: u32,
    /// What a symlink at the path gets.
    pub links: Links,
}

/// What [`write_atomic`] does when the path is a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// The rename replaces the link with a regular file: the default, for
    /// every state file hoop owns (a link planted in a home never sends a
    /// token elsewhere).
    Replace,
    /// The link stays and its final target is written (atomically, beside
    /// the target): for files a person owns and may keep in a dotfiles
    /// tree (stow, home-manager) — Claude Code's `settings.json`, Cursor's
    /// `hooks.json`.
    WriteThrough,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            mode: 0o644,
            links: Links::Replace,
        }
    }
}

impl WriteOptions {
    /// Owner read/write only: token caches, keys, anything secret.
    pub const SECRET: WriteOptions = WriteOptions {
        mode: 0o600,
        links: Links::Replace,
    };
}

/// How many symlinks [`write_atomic`] follows under [`Links::WriteThrough`]
/// before it gives up (the kernel's own limit for a path lookup).
pub const MAX_LINK_HOPS: usize = 40;

/// The final target of `path` when it is a symlink (following chains and
/// relative targets; the last target need not exist), else `path`.
pub fn link_target(path: &Path) -> io::Result<std::path::PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(format!(
        "{}: more than {MAX_LINK_HOPS} symlinks",
        path.display()
    )))
}

/// Write `data` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, data: &[u8], opts: WriteOptions) -> io::Result<()> {
    let target;
    let path = match opts.links {
        Links::Replace => path,
        Links::WriteThrough => {
            target = link_target(path)?;
            target.as_path()
        }
    };
    let (dir, tmp) = temp_beside(path)?;
    let dir = dir.as_path();
    let result = (|| {
        let mut f = open_new(&tmp, opts.mode)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Serialize `value` as pretty JSON and write it atomically.
pub fn write_json_atomic<T: serde::Serialize>(
    path: &Path,
    value: &T,
    opts: WriteOptions,
) -> io::Result<()> {
    let mut data = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    data.push(b'\n');
    write_atomic(path, &data, opts)
}

/// Point the symlink `link` at `target` atomically: a new link under a
/// temporary name, renamed over the old one (a reader sees the old target or
/// the new, never no link). Creates the parent directory.
#[cfg(unix)]
pub fn symlink_atomic(target: &Path, link: &Path) -> io::Result<()> {
    let (dir, tmp) = temp_beside(link)?;
    std::os::unix::fs::symlink(target, &tmp)?;
    if let Err(e) = fs::rename(&tmp, link) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The lock file beside a state file: `<name>.lock` in the same directory.
pub fn lock_path_beside(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

/// Run `change` (which reads `path` and rewrites it atomically) while this
/// process holds the exclusive `flock` on [`lock_path_beside`] `path`. Blocks
/// while another process holds it: a change is a read and one atomic write,
/// so the wait is short. The lock file is created if missing, never deleted.
pub fn with_lock_beside<R>(path: &Path, change: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
    let lock = lock_path_beside(path);
    if let Some(dir) = lock.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)?;
    file.lock()?;
    let out = change();
    drop(file);
    out
}

/// The directory of `path` (created) and a fresh temporary name in it, so
/// the final rename stays on one file system.
fn temp_beside(path: &Path) -> io::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        unique_suffix()
    ));
    Ok((dir.to_path_buf(), tmp))
}

fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(unix)]
fn open_new(path: &Path, mode: u32) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
}

#[cfg(not(unix))]
fn open_new(path: &Path, _mode: u32) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn symlink_is_replaced_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("bin/hoop");
        symlink_atomic(Path::new("/a"), &link).unwrap();
        symlink_atomic(Path::new("/b"), &link).unwrap();
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("/b"));
        assert_eq!(fs::read_dir(dir.path().join("bin")).unwrap().count(), 1);
    }

    /// Write-through keeps the link (and a chain of them, relative or not)
    /// and writes the final target; the default replaces the link.
    #[cfg(unix)]
    #[test]
    fn a_symlink_is_written_through_only_when_asked() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let dotfiles = dir.path().join("dotfiles/claude");
        fs::create_dir_all(&dotfiles).unwrap();
        let real = dotfiles.join("settings.json");
        fs::write(&real, "old").unwrap();
        let home = dir.path().join("home/.claude");
        fs::create_dir_all(&home).unwrap();
        // settings.json -> middle.json -> ../../dotfiles/claude/settings.json
        symlink(
            "../../dotfiles/claude/settings.json",
            home.join("middle.json"),
        )
        .unwrap();
        symlink("middle.json", home.join("settings.json")).unwrap();
        let through = WriteOptions {
            links: Links::WriteThrough,
            ..WriteOptions::default()
        };
        write_atomic(&home.join("settings.json"), b"new", through).unwrap();
        assert!(
            fs::symlink_metadata(home.join("settings.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert_eq!(fs::read_dir(&dotfiles).unwrap().count(), 1, "no temp left");
        // A dangling link: its target is created.
        fs::remove_file(&real).unwrap();
        write_atomic(&home.join("settings.json"), b"again", through).unwrap();
        assert_eq!(fs::read(&real).unwrap(), b"again");
        // A loop is an error, not a hang.
        symlink("b", home.join("a")).unwrap();
        symlink("a", home.join("b")).unwrap();
        assert!(write_atomic(&home.join("a"), b"x", through).is_err());
        // The default replaces the link with a regular file.
        write_atomic(
            &home.join("settings.json"),
            b"mine",
            WriteOptions::default(),
        )
        .unwrap();
        let m = fs::symlink_metadata(home.join("settings.json")).unwrap();
        assert!(m.file_type().is_file());
        assert_eq!(fs::read(&real).unwrap(), b"again", "the target untouched");
    }

    /// Four writers (separate opens, as separate processes would have) each
    /// add 1 to a counter 50 times: without the lock, read-change-write
    /// races lose increments.
    #[test]
    fn locked_changes_never_lose_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("count.json");
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        with_lock_beside(&p, || {
                            let n: u64 = fs::read_to_string(&p)
                                .ok()
                                .and_then(|t| t.trim().parse().ok())
                                .unwrap_or(0);
                            std::thread::yield_now();
                            write_atomic(
                                &p,
                                format!("{}", n + 1).as_bytes(),
                                WriteOptions::default(),
                            )
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(fs::read_to_string(&p).unwrap(), "200");
        assert!(lock_path_beside(&p).exists(), "the lock file stays");
        assert_eq!(lock_path_beside(&p), dir.path().join("count.json.lock"));
    }

    #[test]
    fn writes_replaces_and_sets_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/state.json");
        write_atomic(&p, b"one", WriteOptions::SECRET).unwrap();
        write_atomic(&p, b"two", WriteOptions::SECRET).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let leftovers: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file is left behind");
    }
}
