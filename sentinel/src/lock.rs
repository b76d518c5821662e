//! The two flocks of a home, taken with the standard library's
//! `File::try_lock` (an advisory `flock` on Unix):
//! - the account lock, held for the daemon's whole life: one daemon per home;
//! - the turn lock, held while a turn runs (others, e.g. `hoop restart`, TRY it
//!   to learn whether a turn is running).
//!
//! The kernel frees a lock when its holder dies. No code path ever deletes a
//! lock file: deleting one lets a second process lock a new inode while the
//! first still holds the old one, and two instances run at once. After taking
//! the account lock the holder writes its pid INTO the file (truncate, write)
//! so that a second instance can name it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum LockError {
    #[error("{what} {path} is held by {holder}")]
    Busy {
        what: &'static str,
        path: PathBuf,
        holder: String,
    },
    #[error("opening lock file {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl LockError {
    pub fn is_busy(&self) -> bool {
        matches!(self, LockError::Busy { .. })
    }
}

/// A held lock; dropping it releases it (the file stays).
#[derive(Debug)]
pub struct Held {
    _file: File,
    pub path: PathBuf,
}

fn open(path: &Path) -> Result<File, LockError> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|source| LockError::Io {
            path: path.to_path_buf(),
            error: source,
        })
}

/// The pid the holder wrote into the file, if it reads as one.
fn pid_in(file: &mut File) -> Option<u32> {
    let mut s = String::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.take(64).read_to_string(&mut s);
    s.trim().parse::<u32>().ok()
}

fn holder_of(file: &mut File) -> String {
    match pid_in(file) {
        Some(pid) => format!("pid {pid}"),
        None => "another process (pid unknown)".to_string(),
    }
}

fn try_take(path: &Path, what: &'static str) -> Result<File, LockError> {
    let mut file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(LockError::Busy {
            what,
            path: path.to_path_buf(),
            holder: holder_of(&mut file),
        }),
        Err(TryLockError::Error(source)) => Err(LockError::Io {
            path: path.to_path_buf(),
            error: source,
        }),
    }
}

/// Take the account lock without waiting and record our pid in it.
pub fn account(path: &Path) -> Result<Held, LockError> {
    let mut file = try_take(path, "the account lock")?;
    let pid = std::process::id();
    let io = |source| LockError::Io {
        path: path.to_path_buf(),
        error: source,
    };
    file.set_len(0).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(format!("{pid}\n").as_bytes()).map_err(io)?;
    let _ = file.sync_data();
    Ok(Held {
        _file: file,
        path: path.to_path_buf(),
    })
}

/// Take the turn lock without waiting.
pub fn turn(path: &Path) -> Result<Held, LockError> {
    try_take(path, "the turn lock").map(|file| Held {
        _file: file,
        path: path.to_path_buf(),
    })
}

/// Is the lock free right now? Decided by TRYING it (and releasing at once),
/// never by whether the file exists.
pub fn is_free(path: &Path) -> Result<bool, LockError> {
    Ok(probe(path)? == Probe::Free)
}

/// What trying a lock found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nobody holds it (it was taken and released at once).
    Free,
    /// Someone holds it; `pid` is what the holder wrote into the file (the
    /// account lock's holder writes its pid; the turn lock's does not).
    Held { pid: Option<u32> },
}

/// Try the lock (releasing it at once) and say who holds it. Never decided
/// by whether the file exists.
pub fn probe(path: &Path) -> Result<Probe, LockError> {
    let mut file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Probe::Free),
        Err(TryLockError::WouldBlock) => Ok(Probe::Held {
            pid: pid_in(&mut file),
        }),
        Err(TryLockError::Error(source)) => Err(LockError::Io {
            path: path.to_path_buf(),
            error: source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_taker_is_refused_and_told_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("account.lock");
        let held = account(&p).unwrap();
        // A second open file description conflicts even in one process.
        let e = account(&p).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(!is_free(&p).unwrap());
        assert_eq!(
            probe(&p).unwrap(),
            Probe::Held {
                pid: Some(std::process::id())
            }
        );
        drop(held);
        assert_eq!(probe(&p).unwrap(), Probe::Free);
        assert!(p.exists(), "the lock file is never deleted");
        assert!(is_free(&p).unwrap());
        let _again = account(&p).unwrap();
    }

    #[test]
    fn turn_lock_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("turn.lock");
        let t = turn(&p).unwrap();
        assert!(turn(&p).unwrap_err().is_busy());
        drop(t);
        assert!(turn(&p).is_ok());
    }

    #[test]
    fn unknown_holder_content_is_said_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("account.lock");
        std::fs::write(&p, "garbage").unwrap();
        let f = open(&p).unwrap();
        f.try_lock().unwrap();
        let e = account(&p).unwrap_err();
        assert!(e.to_string().contains("pid unknown"), "{e}");
    }
}
