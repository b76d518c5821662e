//! `hoop provision redeem`: put a NEW account on this machine from a
//! provisioning key. Production's redeem creates the account in one
//! transaction and leaves the key usable on any failure (seed 002 L31), so
//! everything that can be refused locally is refused BEFORE the key is
//! spent: the wrong machine user (`--target-host`, as production's
//! `provision_sentinel.py`), a home that exists already (unless forced).
//! Then the home is written atomically (`core::fsutil`): `config.json`, and
//! for a sentinel account the token cache of a first login (0600), for a
//! reinforcement account its MCP key (0600).
//!
//! Pure decisions ([`check_target_host`], [`existing_home`],
//! [`sentinel_next_steps`]) are separate from the one I/O shell,
//! [`redeem`].

use std::path::{Path, PathBuf};

use hoop_api::types::{RedeemRequest, RedeemResponse, User};
use hoop_core::fsutil::{WriteOptions, write_atomic, write_json_atomic};
use hoop_core::home::{Home, HomeConfig, HomeError};
use hoop_core::limits::FIXED_LOGIN_CODE;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum RedeemError {
    #[error(
        "this must run as the target-host user {target:?}, but you are {current:?}: the home, \
         its token and its service belong to {target:?}; run it as that user (e.g. \
         `sudo -iu {target} hoop provision redeem …`), or name the right user with --target-host"
    )]
    WrongUser { current: String, target: String },
    #[error("cannot tell which user runs this (uid {uid}), so --target-host cannot be checked")]
    NoCurrentUser { uid: u32 },
    #[error(
        "the home {dir} exists already ({found}); nothing was redeemed and the key is still \
         usable: choose another --name, or pass --force to replace that home's account"
    )]
    HomeExists { dir: PathBuf, found: String },
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error(
        "the redeem did not happen (nothing was created; a key that was valid is still usable): {0}"
    )]
    Api(#[from] hoop_api::Error),
    #[error("the backend answered a redeem of an unknown kind {0:?}")]
    UnknownKind(String),
    #[error("the backend answered a reinforcement redeem without a valid MCP key")]
    NoMcpKey,
    #[error(
        "the account {username:?} was created and {path} could not be written: {source}; the \
         key is spent, so ask for the account's key or fixed code again"
    )]
    Write {
        username: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the account {username:?} was created and its home written, but the first login \
         failed: {source}"
    )]
    FirstLogin {
        username: String,
        source: hoop_api::Error,
    },
}

/// What `hoop provision redeem` was asked to do.
#[derive(Clone)]
pub struct Options {
    pub key: String,
    pub name: String,
    pub room: Option<i64>,
    /// The machine user the home must belong to; `None` = no check.
    pub target_host: Option<String>,
    pub backend: String,
    pub machine: String,
    /// Replace an existing home's account.
    pub force: bool,
    /// The hoop root the home goes under.
    pub root: PathBuf,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("key", &"<redacted>")
            .field("name", &self.name)
            .field("room", &self.room)
            .field("target_host", &self.target_host)
            .field("backend", &self.backend)
            .field("machine", &self.machine)
            .field("force", &self.force)
            .field("root", &self.root)
            .finish()
    }
}

/// What a redeem put on the machine.
pub enum Outcome {
    /// Logs in with email + fixed code; the first login's token is cached.
    Sentinel { home: Home, user: User },
    /// MCP key only: `add_line` installs it in Claude Code.
    Reinforcement {
        home: Home,
        user: User,
        add_line: String,
    },
}

/// The `--target-host` rule (production's `provision_sentinel.py`: `id -un`
/// ≠ target-host → refuse).
pub fn check_target_host(current: &str, target: Option<&str>) -> Result<(), RedeemError> {
    match target {
        Some(t) if t != current => Err(RedeemError::WrongUser {
            current: current.to_string(),
            target: t.to_string(),
        }),
        _ => Ok(()),
    }
}

/// The login name of the user running this process (`id -un`).
pub fn current_user() -> Result<String, RedeemError> {
    let uid = nix::unistd::getuid();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(u)) => Ok(u.name),
        _ => Err(RedeemError::NoCurrentUser { uid: uid.as_raw() }),
    }
}

/// This machine's name (`uname -n`), recorded with the installation.
pub fn machine_name() -> String {
    std::process::Command::new("uname")
        .arg("-n")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Which of a home's account files exist (`None`: the home is free). A
/// directory alone (logs, prompts) does not make a home taken.
pub fn existing_home(home: &Home) -> Option<String> {
    let found: Vec<String> = [home.config_path(), home.token_path(), home.mcp_key_path()]
        .iter()
        .filter(|p| p.exists())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

/// What to run after a sentinel redeem.
pub fn sentinel_next_steps(home: &Home, user: &User) -> String {
    format!(
        "redeemed: a new agent account {} (id {}), home {}\n\
         next: hoop install --plan     # what running its sentinel under the service manager changes\n\
         \x20     hoop install --apply\n\
         \x20 or, in the foreground: hoop sentinel run --home {}\n",
        user.username,
        user.id,
        home.dir().display(),
        home.name
    )
}

/// What to tell the operator (on stderr) after a reinforcement redeem; the
/// line itself goes alone to stdout.
pub fn reinforcement_notes(home: &Home, user: &User) -> String {
    format!(
        "redeemed: a new reinforcement account {} (id {}); its MCP key is in {} (0600)\n\
         next: run the line printed on stdout where Claude Code runs as this user; \
         `hoop mcp add-line --home {}` prints it again\n",
        user.username,
        user.id,
        home.mcp_key_path().display(),
        home.name
    )
}

fn write(username: &str, path: &Path, data: &[u8]) -> Result<(), RedeemError> {
    write_atomic(path, data, WriteOptions::SECRET).map_err(|source| RedeemError::Write {
        username: username.to_string(),
        path: path.to_path_buf(),
        source,
    })
}

/// Redeem and write the home. Refusals that need no backend come first,
/// so they never spend the key.
pub async fn redeem(opts: &Options) -> Result<Outcome, RedeemError> {
    check_target_host(&current_user()?, opts.target_host.as_deref())?;
    let home = Home::new(&opts.root, &opts.name)?;
    if let Some(found) = existing_home(&home)
        && !opts.force
    {
        return Err(RedeemError::HomeExists {
            dir: home.dir(),
            found,
        });
    }
    let resp: RedeemResponse = hoop_api::rest::redeem(
        &opts.backend,
        &RedeemRequest {
            key: opts.key.trim().to_string(),
            name: opts.name.clone(),
            machine: Some(opts.machine.clone()),
            conversation_id: opts.room,
        },
    )
    .await?;
    let user = resp.user.clone();
    let username = user.username.clone();
    // A replaced home must not keep the previous account's token or key.
    for stale in [home.token_path(), home.mcp_key_path()] {
        match std::fs::remove_file(&stale) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RedeemError::Write {
                    username,
                    path: stale,
                    source,
                });
            }
        }
    }
    let cfg = HomeConfig {
        base_url: opts.backend.trim_end_matches('/').to_string(),
        email: user.email.clone(),
        login_code: resp.fixed_code.clone().filter(|c| c != FIXED_LOGIN_CODE),
    };
    match resp.kind.as_str() {
        "sentinel" => {
            write_json_atomic(&home.config_path(), &cfg, WriteOptions::SECRET).map_err(
                |source| RedeemError::Write {
                    username: username.clone(),
                    path: home.config_path(),
                    source,
                },
            )?;
            // The first login fills the token cache (0600, atomic) and proves
            // the fixed code works from this machine.
            let first_login = async {
                hoop_api::Client::for_home(&home)?.login().await?;
                Ok::<(), hoop_api::Error>(())
            };
            first_login
                .await
                .map_err(|source| RedeemError::FirstLogin {
                    username: username.clone(),
                    source,
                })?;
            Ok(Outcome::Sentinel { home, user })
        }
        "reinforcement" => {
            let key = resp
                .mcp_key
                .filter(|k| hoop_api::mcp::is_mcp_key(k))
                .ok_or(RedeemError::NoMcpKey)?;
            write(
                &username,
                &home.mcp_key_path(),
                format!("{key}\n").as_bytes(),
            )?;
            write_json_atomic(&home.config_path(), &cfg, WriteOptions::SECRET).map_err(
                |source| RedeemError::Write {
                    username: username.clone(),
                    path: home.config_path(),
                    source,
                },
            )?;
            let add_line = hoop_api::mcp::claude_add_line(Some(&cfg.base_url), &key);
            Ok(Outcome::Reinforcement {
                home,
                user,
                add_line,
            })
        }
        other => Err(RedeemError::UnknownKind(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_host_table() {
        let cases: &[(&str, Option<&str>, bool)] = &[
            ("ann", None, true),
            ("ann", Some("ann"), true),
            ("ann", Some("bolt"), false),
            ("root", Some("ann"), false),
            ("ann", Some("Ann"), false),
            ("ann", Some(""), false),
        ];
        for (current, target, ok) in cases {
            let got = check_target_host(current, *target);
            assert_eq!(got.is_ok(), *ok, "{current} vs {target:?}");
            if let Err(e) = got {
                let text = e.to_string();
                assert!(
                    text.contains(&format!("{current:?}"))
                        && text.contains(&format!("{:?}", target.unwrap())),
                    "says who is who: {text}"
                );
            }
        }
    }

    #[test]
    fn an_existing_home_is_named_by_its_account_files() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path(), "nova").unwrap();
        assert_eq!(existing_home(&home), None, "no directory");
        std::fs::create_dir_all(home.logs_dir()).unwrap();
        assert_eq!(existing_home(&home), None, "a directory alone");
        let files = [
            (home.config_path(), "config.json"),
            (home.token_path(), "config.json, .token.json"),
            (home.mcp_key_path(), "config.json, .token.json, .mcp_key"),
        ];
        for (path, want) in files {
            std::fs::write(&path, b"x").unwrap();
            assert_eq!(existing_home(&home).as_deref(), Some(want));
        }
    }
}
