//! `hoop provision redeem`: put a NEW account on this machine from a
//! provisioning key. Production's redeem creates the account in one
//! transaction and leaves the key usable on any failure (seed 002 L31), so
//! everything that can be refused locally is refused BEFORE the key is
//! spent: the wrong machine user (`--target-host`, as production's
//! `provision_sentinel.py`), a home that exists already (unless forced).
//! Then the home is written atomically (`core::fsutil`, 0600): for a
//! sentinel account `config.json` and the token cache of a first login; for
//! a reinforcement account its MCP key and [`REINFORCEMENT_FILE`] — and no
//! `config.json`, so that the install manifest, status and doctor (which
//! take a home with `config.json` for a sentinel's) never set up a daemon
//! that cannot log in.
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
        "the home {dir} exists already ({found}); nothing was redeemed and the key was not \
         spent: choose another --home, or pass --force to replace that home's account"
    )]
    HomeExists { dir: PathBuf, found: String },
    #[error(
        "cannot write a home under {root} ({cause}); nothing was redeemed and the key was not \
         spent: make {root} writable by this user (or point HOOP_ROOT elsewhere), then redeem \
         again"
    )]
    NotWritable {
        root: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "{dir} is in the way of the home ({what}); nothing was redeemed and the key was not \
         spent: move it aside, then redeem again"
    )]
    InTheWay { dir: PathBuf, what: String },
    #[error(
        "the backend has an account named {name:?} already ({cause}); a provisioning key \
         always creates a NEW account, so nothing was redeemed and the key is still usable. \
         Either redeem under a new name (--home {name}-2), or keep that account on this \
         machine by adopting it without a key: `hoop provision redeem --force --home {name} \
         --email <its email> --url {url}`"
    )]
    NameTaken {
        name: String,
        url: String,
        cause: hoop_api::Error,
    },
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("{}", api_failure(.0))]
    Api(#[from] hoop_api::Error),
    #[error("the backend answered a redeem of an unknown kind {0:?}")]
    UnknownKind(String),
    #[error("the backend answered a reinforcement redeem without a valid MCP key")]
    NoMcpKey,
    #[error(
        "the account {} (id {}, email {}) was created but its home {} could not be put in \
         place ({cause}); the key is spent. Once that is fixed, adopt the account (no key \
         needed): `hoop provision redeem --force --home {} --email {} --url {url}`",
        user.username, user.id, user.email, dir.display(), user.username, user.email
    )]
    NotPlaced {
        user: Box<User>,
        dir: PathBuf,
        url: String,
        cause: std::io::Error,
    },
    #[error(
        "adopting the account {email:?}: {cause}; nothing was written. The account must be an \
         active agent account that logs in with the fixed code (a sentinel account)"
    )]
    Adopt {
        email: String,
        cause: hoop_api::Error,
    },
    #[error(
        "the account {username:?} was created and its home written, but the first login \
         failed: {cause}"
    )]
    FirstLogin {
        username: String,
        cause: hoop_api::Error,
    },
}

/// A redeem the backend did not do, in words true of the key: a refused
/// key (unknown, expired or used) is never called usable; any other failure
/// spent nothing.
fn api_failure(e: &hoop_api::Error) -> String {
    if e.code() == Some(hoop_api::types::codes::KEY_INVALID) {
        format!("the backend refused the provisioning key, so nothing was created: {e}")
    } else {
        format!("the redeem did not happen (nothing was created and the key was not spent): {e}")
    }
}

/// The record of a reinforcement home, next to its `.mcp_key`: where the
/// key is used and whose it is (nothing secret).
pub const REINFORCEMENT_FILE: &str = "reinforcement.json";

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReinforcementRecord {
    pub base_url: String,
    pub user_id: i64,
    pub username: String,
}

impl ReinforcementRecord {
    pub fn path(home: &Home) -> PathBuf {
        home.dir().join(REINFORCEMENT_FILE)
    }

    /// The home's record; `None` when absent or unreadable.
    pub fn load(home: &Home) -> Option<ReinforcementRecord> {
        let bytes = std::fs::read(Self::path(home)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// What `hoop provision redeem` was asked to do.
#[derive(Clone)]
pub struct Options {
    /// The provisioning key; `None` only when adopting (`email`).
    pub key: Option<String>,
    /// Adopt the existing sentinel account with this email instead of
    /// redeeming a key (`--force --email`): the home is written for it
    /// and a login with the fixed code proves it.
    pub email: Option<String>,
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
            .field("email", &self.email)
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
    /// An existing sentinel account written into the home (`--force
    /// --email`); no key was spent.
    Adopted { home: Home, user: User },
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

/// The files that make a directory a home with an account.
fn account_files(home: &Home) -> [PathBuf; 4] {
    [
        home.config_path(),
        home.token_path(),
        home.mcp_key_path(),
        ReinforcementRecord::path(home),
    ]
}

/// Which of a home's account files exist (`None`: the home is free). A
/// directory alone (logs, prompts) does not make a home taken.
pub fn existing_home(home: &Home) -> Option<String> {
    let found: Vec<String> = account_files(home)
        .iter()
        .filter(|p| p.exists())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

/// What to run after a sentinel redeem.
pub fn sentinel_next_steps(home: &Home, user: &User) -> String {
    next_steps("redeemed: a new agent account", home, user)
}

/// What to run after adopting an existing account (`--force --email`).
pub fn adopted_next_steps(home: &Home, user: &User) -> String {
    next_steps("adopted: the existing agent account", home, user)
}

fn next_steps(what: &str, home: &Home, user: &User) -> String {
    format!(
        "{what} {} (id {}), home {}\n\
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

/// Where a home is written before it is put in place: `<root>/.redeem/`
/// (a name no home can have, so no command takes it for one).
pub const STAGE_DIR: &str = ".redeem";

/// The staged home for `name`: created empty (mode 0700) and proven
/// writable (a file written and fsynced) BEFORE the backend is asked.
fn stage(root: &Path, name: &str) -> Result<Home, RedeemError> {
    let not_writable = |cause| RedeemError::NotWritable {
        root: root.to_path_buf(),
        cause,
    };
    let staged = Home::new(root.join(STAGE_DIR), name)?;
    match std::fs::remove_dir_all(staged.dir()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(not_writable(e)),
    }
    std::fs::create_dir_all(staged.dir()).map_err(not_writable)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(staged.dir(), std::fs::Permissions::from_mode(0o700))
            .map_err(not_writable)?;
    }
    let probe = staged.dir().join(".probe");
    write_atomic(&probe, b"", WriteOptions::SECRET).map_err(not_writable)?;
    std::fs::remove_file(&probe).map_err(not_writable)?;
    Ok(staged)
}

/// Remove a staged home and, when nothing else is staged, the stage.
fn unstage(staged: &Home) {
    let _ = std::fs::remove_dir_all(staged.dir());
    let _ = std::fs::remove_dir(&staged.root);
}

/// Put the staged home in place: a rename of the whole directory when the
/// home does not exist, else each file renamed into it (the previous
/// account's files removed first, so none of them outlives the new one).
fn place(staged: &Home, home: &Home) -> std::io::Result<()> {
    match std::fs::symlink_metadata(home.dir()) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::rename(staged.dir(), home.dir())?;
        }
        Err(e) => return Err(e),
        Ok(_) => {
            for stale in account_files(home) {
                match std::fs::remove_file(&stale) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(std::io::Error::new(
                            e.kind(),
                            format!("removing {}: {e}", stale.display()),
                        ));
                    }
                }
            }
            for e in std::fs::read_dir(staged.dir())? {
                let e = e?;
                let to = home.dir().join(e.file_name());
                std::fs::rename(e.path(), &to).map_err(|err| {
                    std::io::Error::new(err.kind(), format!("{}: {err}", to.display()))
                })?;
            }
            unstage(staged);
        }
    }
    let _ = std::fs::remove_dir(&staged.root);
    if let Ok(d) = std::fs::File::open(&home.root) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Redeem (or adopt) and write the home. Refusals that need no backend
/// come first — the machine user, an existing home, a root that cannot be
/// written — so none of them spends the key.
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
    if let Ok(m) = std::fs::symlink_metadata(home.dir())
        && !m.is_dir()
    {
        return Err(RedeemError::InTheWay {
            dir: home.dir(),
            what: "not a directory".into(),
        });
    }
    let staged = stage(&opts.root, &opts.name)?;
    let base_url = opts.backend.trim_end_matches('/').to_string();
    let resp: RedeemResponse = match (&opts.email, &opts.key) {
        (Some(email), _) => match adopt(opts, email).await {
            Ok(r) => r,
            Err(e) => {
                unstage(&staged);
                return Err(e);
            }
        },
        (None, Some(key)) => match hoop_api::rest::redeem(
            &opts.backend,
            &RedeemRequest {
                key: key.trim().to_string(),
                name: opts.name.clone(),
                machine: Some(opts.machine.clone()),
                conversation_id: opts.room,
            },
        )
        .await
        {
            Ok(r) => r,
            Err(e) => {
                unstage(&staged);
                return Err(match e {
                    e @ hoop_api::Error::Refused { status: 409, .. } => RedeemError::NameTaken {
                        name: opts.name.clone(),
                        url: base_url,
                        cause: e,
                    },
                    e => RedeemError::Api(e),
                });
            }
        },
        (None, None) => {
            unstage(&staged);
            return Err(RedeemError::UnknownKind("(no key and no email)".into()));
        }
    };
    let user = resp.user.clone();
    let username = user.username.clone();
    let not_placed = |cause: std::io::Error| RedeemError::NotPlaced {
        user: Box::new(user.clone()),
        dir: home.dir(),
        url: base_url.clone(),
        cause,
    };
    let cfg = HomeConfig {
        base_url: base_url.clone(),
        email: user.email.clone(),
        login_code: resp.fixed_code.clone().filter(|c| c != FIXED_LOGIN_CODE),
    };
    match resp.kind.as_str() {
        "sentinel" => {
            write_json_atomic(&staged.config_path(), &cfg, WriteOptions::SECRET)
                .map_err(not_placed)?;
            place(&staged, &home).map_err(not_placed)?;
            // The first login fills the token cache (0600, atomic) and proves
            // the fixed code works from this machine (with the root's agent
            // secret, so only once the home is in place).
            let first_login = async {
                hoop_api::Client::for_home(&home)?.login().await?;
                Ok::<(), hoop_api::Error>(())
            };
            first_login.await.map_err(|cause| RedeemError::FirstLogin {
                username: username.clone(),
                cause,
            })?;
            Ok(if opts.email.is_some() {
                Outcome::Adopted { home, user }
            } else {
                Outcome::Sentinel { home, user }
            })
        }
        "reinforcement" => {
            let key = resp
                .mcp_key
                .filter(|k| hoop_api::mcp::is_mcp_key(k))
                .ok_or(RedeemError::NoMcpKey)?;
            write_atomic(
                &staged.mcp_key_path(),
                format!("{key}\n").as_bytes(),
                WriteOptions::SECRET,
            )
            .map_err(not_placed)?;
            let record = ReinforcementRecord {
                base_url: cfg.base_url.clone(),
                user_id: user.id,
                username: username.clone(),
            };
            write_json_atomic(
                &ReinforcementRecord::path(&staged),
                &record,
                WriteOptions::SECRET,
            )
            .map_err(not_placed)?;
            place(&staged, &home).map_err(not_placed)?;
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

/// `--force --email`: the existing sentinel account, proven by a login
/// with the fixed code from the staged home; answered as a redeem would be.
async fn adopt(opts: &Options, email: &str) -> Result<RedeemResponse, RedeemError> {
    let err = |cause| RedeemError::Adopt {
        email: email.to_string(),
        cause,
    };
    let client = hoop_api::Client::new(hoop_api::rest::ClientConfig {
        base_url: opts.backend.trim_end_matches('/').to_string(),
        email: email.to_string(),
        login_code: FIXED_LOGIN_CODE.to_string(),
        agent_secret: hoop_core::home::agent_secret(&opts.root),
        token_cache: None,
    })
    .map_err(err)?;
    let user = client.me().await.map_err(err)?;
    Ok(RedeemResponse {
        user,
        kind: "sentinel".into(),
        fixed_code: None,
        mcp_key: None,
        ready_line: None,
        conversation_id: None,
    })
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
            (
                ReinforcementRecord::path(&home),
                "config.json, .token.json, .mcp_key, reinforcement.json",
            ),
        ];
        for (path, want) in files {
            std::fs::write(&path, b"x").unwrap();
            assert_eq!(existing_home(&home).as_deref(), Some(want));
        }
    }
}
