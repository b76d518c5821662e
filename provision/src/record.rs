//! The install record: what `hoop install --apply` decided on this root and
//! must not be decided again from whoever runs the next command —
//! `<root>/install-record.json`, written atomically by `--apply`.
//!
//! - `manager` and `manager_on_purpose`: the service manager used, and
//!   whether the operator chose it (`--manager`) rather than detection; a
//!   root installed with `--manager none` on purpose is not "nothing will
//!   restart this sentinel" to `hoop doctor`.
//! - `tool_dirs`: the directories of `claude` and `node` found when the
//!   unit's `PATH` was built. Later plans and checks render the unit from
//!   these, never from the caller's shell, so running `--check` from
//!   another shell reports no drift nobody made
//!   (`hoop install --apply --path-from-shell` records them again).
//! - `units`: the homes whose services this root installed; only those are
//!   retired when their home is gone, never another root's.

use std::path::{Path, PathBuf};

use hoop_core::fsutil::{WriteOptions, write_json_atomic};
use serde::{Deserialize, Serialize};

use crate::service::Manager;

/// The record's file name under the hoop root.
pub const RECORD_FILE: &str = "install-record.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub manager: Manager,
    /// `--manager` was given (not detected).
    #[serde(default)]
    pub manager_on_purpose: bool,
    #[serde(default)]
    pub tool_dirs: Vec<PathBuf>,
    /// Homes whose service this root installed.
    #[serde(default)]
    pub units: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(
        "{path} is not a readable install record ({message}); fix: remove it and run `hoop install --apply` again"
    )]
    Bad { path: PathBuf, message: String },
}

pub fn path(root: &Path) -> PathBuf {
    root.join(RECORD_FILE)
}

/// The root's record; `Ok(None)` when no install was applied yet.
pub fn load(root: &Path) -> Result<Option<Record>, RecordError> {
    let p = path(root);
    let bad = |message: String| RecordError::Bad {
        path: p.clone(),
        message,
    };
    match std::fs::read(&p) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| bad(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad(e.to_string())),
    }
}

pub fn save(root: &Path, r: &Record) -> std::io::Result<()> {
    write_json_atomic(&path(root), r, WriteOptions::default())
}
