//! Shared set-up: a stand-in, a temporary hoop root with one home, a
//! temporary HOME for the CLI, and a driver config pointing at all three.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hoop_core::home::Home;
use hoop_sentinel::driver::{Driver, DriverConfig};
use hoop_standin::Standin;

/// Generous for a real CLI start on a busy machine; a hang still fails.
pub const TEST_TURN_TIMEOUT: Duration = Duration::from_secs(90);

pub fn claude_bin() -> PathBuf {
    match std::env::var_os("HOOP_CLAUDE_BIN") {
        Some(p) if !p.is_empty() && Path::new(&p).exists() => PathBuf::from(p),
        other => panic!(
            "HOOP_CLAUDE_BIN must name the real claude CLI (tests/run sets it; locally \
             tests/node_modules/.bin/claude after `npm ci --prefix tests`); got {other:?}"
        ),
    }
}

pub struct Rig {
    pub standin: Standin,
    pub dir: tempfile::TempDir,
    pub home: Home,
    /// The CLI's HOME (its `~/.claude` holds the transcripts).
    pub child_home: PathBuf,
}

impl Rig {
    pub async fn new() -> Rig {
        let standin = Standin::spawn().await.expect("stand-in starts");
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("root"), "bolt").unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        let child_home = dir.path().join("child-home");
        std::fs::create_dir_all(&child_home).unwrap();
        Rig {
            standin,
            dir,
            home,
            child_home,
        }
    }

    pub fn config(&self) -> DriverConfig {
        self.config_with(claude_bin())
    }

    pub fn config_with(&self, bin: PathBuf) -> DriverConfig {
        let mut cfg = DriverConfig::new(bin, self.home.clone());
        cfg.env = self.standin.claude_env();
        cfg.env.push((
            "HOME".into(),
            self.child_home.to_string_lossy().into_owned(),
        ));
        cfg.turn_timeout = TEST_TURN_TIMEOUT;
        cfg.kill_grace = Duration::from_secs(2);
        cfg
    }

    pub fn driver(&self) -> Driver {
        Driver::new(self.config())
    }

    pub fn switch(&self, name: &str, content: &str) {
        std::fs::write(self.home.switch_path(name), content).unwrap();
    }

    pub async fn done(self) {
        self.standin.shutdown().await;
    }
}

/// Whether process `pid` still exists (and is not a zombie), read from
/// `/proc`. Without `/proc` it fails loudly: "gone" must never be the
/// answer because the check could not look.
pub fn alive(pid: u32) -> bool {
    assert!(
        std::path::Path::new("/proc/self/stat").exists(),
        "/proc is missing: this check needs /proc (Linux)"
    );
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => panic!("reading /proc/{pid}/stat: {e}"),
    }
}

/// Poll `cond` until it holds or `within` passes.
pub async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}
