//! The home's agent session id: `session.id`, written atomically; a session
//! that no longer works is kept as `session.id.blown-<unix time>`.

use std::path::PathBuf;

use hoop_core::fsutil::{WriteOptions, write_atomic};
use hoop_core::home::Home;

/// The suffix of a retired session id file.
pub const BLOWN_SUFFIX: &str = ".blown-";

/// A fresh session id (the CLI requires a UUID).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Whether `s` is a UUID in the CLI's hyphenated form.
pub fn is_valid(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok() && s.len() == 36
}

/// How a process is pointed at its session: `--resume` (true) or
/// `--session-id` (false, which only creates; reusing an id fails, and
/// resuming an id the CLI never saw fails with "No conversation found").
/// - a session a process of this driver already ran exists: resume;
/// - a session this driver minted and no process ran yet does not: create,
///   always — even when where its transcript would live cannot be known;
/// - a session recorded before this driver started (a predecessor's):
///   resume when its transcript is there or its place cannot be known
///   (the CLI's config dir is not in sight), create when it is known to be
///   absent.
pub fn resume_it(ran_here: bool, minted_here: bool, transcript_exists: Option<bool>) -> bool {
    if ran_here {
        return true;
    }
    if minted_here {
        return false;
    }
    transcript_exists.unwrap_or(true)
}

/// The recorded session id; `None` when absent or not a UUID (logged).
pub fn read(home: &Home) -> Option<String> {
    let path = home.session_id_path();
    let text = std::fs::read_to_string(&path).ok()?;
    let id = text.trim();
    if is_valid(id) {
        Some(id.to_string())
    } else {
        tracing::warn!(path = %path.display(), "session.id does not hold a UUID; a new session will be started");
        None
    }
}

pub fn write(home: &Home, id: &str) -> std::io::Result<()> {
    write_atomic(
        &home.session_id_path(),
        format!("{id}\n").as_bytes(),
        WriteOptions::default(),
    )
}

/// Retire the current id: `session.id` → `session.id.blown-<unix_now>`
/// (a `-<n>` suffix keeps two retirements in one second apart). Returns the
/// retired file, or `None` when there was no id.
pub fn blow(home: &Home, unix_now: i64) -> std::io::Result<Option<PathBuf>> {
    let cur = home.session_id_path();
    if !cur.exists() {
        return Ok(None);
    }
    let base = format!("{}{BLOWN_SUFFIX}{unix_now}", cur.display());
    let mut target = PathBuf::from(&base);
    let mut n = 1;
    while target.exists() {
        target = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    std::fs::rename(&cur, &target)?;
    Ok(Some(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_or_create_table() {
        // (ran here, minted here, transcript exists, resume)
        for (ran, minted, exists, want) in [
            (true, false, Some(true), true),
            (true, false, Some(false), true), // started, transcript not written yet
            (true, false, None, true),
            (true, true, Some(false), true),
            (false, true, Some(false), false),
            (false, true, None, false), // the config dir is unknown: still create
            (false, true, Some(true), false),
            (false, false, Some(true), true),
            (false, false, Some(false), false),
            (false, false, None, true),
        ] {
            assert_eq!(
                resume_it(ran, minted, exists),
                want,
                "{ran} {minted} {exists:?}"
            );
        }
    }

    #[test]
    fn write_read_blow() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path(), "h").unwrap();
        assert_eq!(read(&home), None);
        assert_eq!(blow(&home, 1).unwrap(), None);
        let id = new_id();
        assert!(is_valid(&id));
        write(&home, &id).unwrap();
        assert_eq!(read(&home), Some(id.clone()));
        let b1 = blow(&home, 100).unwrap().unwrap();
        assert!(b1.to_string_lossy().ends_with("session.id.blown-100"));
        assert_eq!(std::fs::read_to_string(&b1).unwrap().trim(), id);
        assert_eq!(read(&home), None);
        write(&home, &new_id()).unwrap();
        let b2 = blow(&home, 100).unwrap().unwrap();
        assert!(b2.to_string_lossy().ends_with("session.id.blown-100-1"));
        std::fs::write(home.session_id_path(), "not-a-uuid").unwrap();
        assert_eq!(read(&home), None);
    }
}
