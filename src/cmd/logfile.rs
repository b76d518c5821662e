//! A size bound on the daemon's own log file.
//!
//! launchd writes a home's stderr to `<home>/logs/sentinel.err.log` and
//! nothing on macOS rotates it; a daemon that runs for months would fill the
//! disk. When (and only when) the process's stderr IS that file, the log
//! writer moves it to `sentinel.err.log.1` once it reaches
//! [`SENTINEL_LOG_MAX_BYTES`] and goes on in a fresh file, so a home keeps at
//! most two files' worth. A stderr the operator chose (a terminal, a pipe,
//! journald, another file) is never touched: the decision compares device
//! and inode, not names.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

pub use hoop_core::limits::SENTINEL_LOG_MAX_BYTES;

/// Which file a descriptor or a path is: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// What to do with stderr after a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Stderr is the home's log and it is full: move it to `.1`.
    Rotate,
    /// Stderr is the home's log, still below the bound.
    Keep,
    /// Stderr is something else (a terminal, a pipe, a file the operator
    /// chose, or the log was moved away by someone else): leave it alone.
    NotOurs,
}

/// The decision, over data: rotate only the home's own log file, and only
/// once it reached the bound.
pub fn decide(stderr: FileId, log: Option<FileId>, stderr_len: u64, max: u64) -> Action {
    match log {
        Some(log) if log == stderr => {
            if stderr_len >= max {
                Action::Rotate
            } else {
                Action::Keep
            }
        }
        _ => Action::NotOurs,
    }
}

/// The file a bounded stderr belongs to, set once by the daemon.
struct Bound {
    path: PathBuf,
    max: u64,
    /// Held while rotating, so two threads logging at once rotate once.
    rotating: Mutex<()>,
}

static BOUND: OnceLock<Bound> = OnceLock::new();

/// Bound stderr's size when it is `path` (the home's log file). Returns
/// whether it is; the first check runs at once, so a log that is already
/// full is moved before the daemon's first line.
pub fn bound(path: &Path, max: u64) -> bool {
    let Some(ours) = stderr_id().zip(file_id(path)).map(|(s, l)| s == l) else {
        return false;
    };
    if !ours {
        return false;
    }
    let _ = BOUND.set(Bound {
        path: path.to_path_buf(),
        max,
        rotating: Mutex::new(()),
    });
    after_write();
    true
}

fn stderr_id() -> Option<FileId> {
    let meta = nix::sys::stat::fstat(io::stderr()).ok()?;
    Some(FileId {
        dev: meta.st_dev as u64,
        ino: meta.st_ino as u64,
    })
}

fn stderr_len() -> u64 {
    nix::sys::stat::fstat(io::stderr()).map_or(0, |m| m.st_size as u64)
}

fn file_id(path: &Path) -> Option<FileId> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Checked after each log write: one `fstat` and one `stat`, far below the
/// cost of the line itself, and the daemon logs a few lines a round.
fn after_write() {
    let Some(b) = BOUND.get() else { return };
    let Ok(_guard) = b.rotating.try_lock() else {
        return;
    };
    let Some(stderr) = stderr_id() else { return };
    if decide(stderr, file_id(&b.path), stderr_len(), b.max) == Action::Rotate
        && let Err(e) = rotate(&b.path)
    {
        // Said once per failed attempt into the log that is still open:
        // the operator sees why the file keeps growing.
        let _ = writeln!(
            io::stderr(),
            "hoop: could not move the full log {} to .1 ({e}); it keeps growing: check the directory's permissions",
            b.path.display()
        );
    }
}

/// Move the full log to `.1` (replacing an older `.1`) and point stderr at a
/// fresh file, readable by its owner only, as the first one was.
fn rotate(path: &Path) -> io::Result<()> {
    let mut old = path.as_os_str().to_owned();
    old.push(".1");
    std::fs::rename(path, PathBuf::from(old))?;
    let fresh = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    nix::unistd::dup2_stderr(fresh).map_err(io::Error::from)?;
    Ok(())
}

/// The log writer the binary's subscriber uses: stderr, then the size check.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = io::stderr().write(buf)?;
        after_write();
        Ok(n)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        io::stderr().write_all(buf)?;
        after_write();
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: FileId = FileId { dev: 1, ino: 10 };
    const OTHER: FileId = FileId { dev: 1, ino: 11 };
    const OTHER_DEV: FileId = FileId { dev: 2, ino: 10 };

    #[test]
    fn only_the_homes_own_full_log_is_rotated() {
        let max = 100;
        let cases = [
            // (stderr, the log path's file, stderr's length, want)
            (LOG, Some(LOG), 99, Action::Keep),
            (LOG, Some(LOG), 100, Action::Rotate),
            (LOG, Some(LOG), 5_000, Action::Rotate),
            (LOG, Some(LOG), 0, Action::Keep),
            // Stderr is another file, however full.
            (OTHER, Some(LOG), 5_000, Action::NotOurs),
            // Same inode number on another device is another file.
            (OTHER_DEV, Some(LOG), 5_000, Action::NotOurs),
            // The log path is gone (moved by someone else): not ours now.
            (LOG, None, 5_000, Action::NotOurs),
        ];
        for (stderr, log, len, want) in cases {
            assert_eq!(
                decide(stderr, log, len, max),
                want,
                "{stderr:?} {log:?} {len}"
            );
        }
    }
}
