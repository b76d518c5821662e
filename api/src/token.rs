//! The JWT cache: `~/.hoop/<home>/.token.json`, `{"token": "…",
//! "expires_at": <unix secs>}`, mode 0600, written atomically. Several
//! processes of one home (the sentinel, `hoop say`, the bridge) share it; a
//! missing, unreadable or malformed file only means "log in again".

use std::path::Path;

use serde::{Deserialize, Serialize};

use hoop_core::fsutil::{WriteOptions, write_json_atomic};
use hoop_core::limits::JWT_REFRESH_MARGIN;

use crate::types::UnixSecs;

/// One cached login. `Debug` never prints the token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedToken {
    pub token: String,
    pub expires_at: UnixSecs,
}

impl std::fmt::Debug for CachedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedToken")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl CachedToken {
    /// Usable at `now`: more than [`JWT_REFRESH_MARGIN`] before its expiry,
    /// so a request never races the expiry.
    pub fn is_fresh(&self, now: UnixSecs) -> bool {
        now < self.expires_at - JWT_REFRESH_MARGIN.as_secs() as i64
    }
}

/// Read the cache. Absent or malformed → `None` (the caller logs in).
pub fn load(path: &Path) -> Option<CachedToken> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice::<CachedToken>(&bytes) {
        Ok(t) if !t.token.is_empty() => Some(t),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "token cache unreadable; logging in again");
            None
        }
    }
}

/// Write the cache atomically with mode 0600.
pub fn store(path: &Path, token: &CachedToken) -> std::io::Result<()> {
    write_json_atomic(path, token, WriteOptions::SECRET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_respects_the_margin() {
        let margin = JWT_REFRESH_MARGIN.as_secs() as i64;
        let t = CachedToken {
            token: "t".into(),
            expires_at: 1_000,
        };
        assert!(t.is_fresh(1_000 - margin - 1));
        assert!(!t.is_fresh(1_000 - margin));
        assert!(!t.is_fresh(2_000));
    }

    #[test]
    fn store_load_round_trip_mode_0600_and_garbage_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h/.token.json");
        assert_eq!(load(&p), None);
        let t = CachedToken {
            token: "abc".into(),
            expires_at: 42,
        };
        store(&p, &t).unwrap();
        assert_eq!(load(&p), Some(t));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        std::fs::write(&p, b"{not json").unwrap();
        assert_eq!(load(&p), None);
        std::fs::write(&p, br#"{"token":"","expires_at":99}"#).unwrap();
        assert_eq!(load(&p), None);
    }

    #[test]
    fn debug_redacts_the_token() {
        let t = CachedToken {
            token: "eyJsecret".into(),
            expires_at: 1,
        };
        assert!(!format!("{t:?}").contains("eyJsecret"));
    }
}
