//! `hoop provision redeem` and `hoop mcp add-line` as real processes
//! against the real reference backend over loopback: a NEW account per
//! redeem, the home written (config.json, token cache 0600, MCP key 0600),
//! nothing spent when the machine user is wrong or the home exists, a
//! failure injected inside the backend's transaction leaving the key
//! usable, and a reinforcement redeem whose stdout is the one line.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hoop_api::admin::{AdminClient, CreateProvisionKey, FaultPoint, ProvisionKind};
use hoop_core::home::{Home, HomeConfig};
use hoop_refbackend::{Config, Running};

mod errors;
mod first_day;

struct World {
    backend: Running,
    admin: AdminClient,
    root: tempfile::TempDir,
}

impl World {
    async fn start() -> World {
        World::start_with(Config::default()).await
    }

    async fn start_with(cfg: Config) -> World {
        let backend = hoop_refbackend::spawn("127.0.0.1:0".parse().unwrap(), cfg)
            .await
            .expect("the reference backend starts");
        let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
        World {
            backend,
            admin,
            root: tempfile::tempdir().unwrap(),
        }
    }

    fn base(&self) -> String {
        self.backend.base_url()
    }

    fn home(&self, name: &str) -> Home {
        Home::new(self.root.path(), name).unwrap()
    }

    async fn key(&self, kind: ProvisionKind, room: Option<i64>) -> String {
        self.admin
            .create_provision_key(&CreateProvisionKey {
                kind,
                conversation_id: room,
                ttl_secs: None,
            })
            .await
            .unwrap()
            .key
    }

    /// `hoop ARGS` with this world's root and backend; `stdin` fed in.
    async fn hoop(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
        c.args(args)
            .env("HOOP_ROOT", self.root.path())
            .env("HOOP_BACKEND_URL", self.base())
            .env_remove("HOOP_AGENT_SECRET")
            .env("HOOP_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let input = stdin.map(str::to_string);
        tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            let mut child = c.spawn().expect("hoop runs");
            let mut pipe = child.stdin.take().unwrap();
            if let Some(i) = input {
                pipe.write_all(i.as_bytes()).unwrap();
            }
            drop(pipe);
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }

    async fn usernames(&self) -> Vec<String> {
        let users = self.admin.list_users().await.unwrap();
        users.into_iter().map(|u| u.username).collect()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn me() -> String {
    let o = Command::new("id").arg("-un").output().unwrap();
    text(&o.stdout).trim().to_string()
}

fn files(dir: PathBuf) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_redeem_writes_the_home_and_says_what_to_run_next() {
    let w = World::start().await;
    let room = w
        .admin
        .create_conversation(&hoop_api::admin::CreateConversation {
            title: "ops".into(),
            is_workroom: true,
            member_ids: vec![],
        })
        .await
        .unwrap();
    let key = w.key(ProvisionKind::Sentinel, Some(room.id)).await;
    let room_arg = room.id.to_string();
    let out = w
        .hoop(
            &[
                "provision",
                "redeem",
                "--key",
                "-",
                "--name",
                "nova",
                "--room",
                &room_arg,
                "--target-host",
                &me(),
            ],
            Some(&format!("{key}\n")),
        )
        .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("redeemed: a new agent account nova"),
        "{stdout}"
    );
    assert!(stdout.contains("hoop install --plan"), "{stdout}");
    assert!(stdout.contains("hoop sentinel run --home nova"), "{stdout}");
    assert!(
        !stdout.contains(&key) && !stderr.contains(&key),
        "the provisioning key is never printed"
    );
    let home = w.home("nova");
    assert_eq!(files(home.dir()), vec![".token.json", "config.json"]);
    let cfg: HomeConfig =
        serde_json::from_slice(&std::fs::read(home.config_path()).unwrap()).unwrap();
    assert_eq!(cfg.base_url, w.base());
    assert_eq!(mode(&home.config_path()), 0o600);
    assert_eq!(mode(&home.token_path()), 0o600, "token cache 0600");
    let token = hoop_api::token::load(&home.token_path()).expect("a cached token");
    assert!(token.expires_at > w.backend.clock().now());
    // The cached token is the new agent's, in the room asked for.
    let client = hoop_api::Client::for_home(&home).unwrap();
    let user = client.me().await.unwrap();
    assert_eq!((user.username.as_str(), user.is_agent), ("nova", true));
    assert_eq!(client.conversations().await.unwrap()[0].id, room.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wrong_machine_user_or_an_existing_home_spends_nothing() {
    let w = World::start().await;
    let key = w.key(ProvisionKind::Sentinel, None).await;
    let out = w
        .hoop(
            &[
                "provision",
                "redeem",
                "--key",
                &key,
                "--name",
                "nova",
                "--target-host",
                "somebody-else",
            ],
            None,
        )
        .await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("\"somebody-else\"") && stderr.contains(&format!("{:?}", me())),
        "says who is who: {stderr}"
    );
    assert!(!w.home("nova").dir().exists(), "nothing written");
    assert!(!w.usernames().await.contains(&"nova".into()), "no account");

    // An existing home: refused before the backend is asked.
    let home = w.home("nova");
    std::fs::create_dir_all(home.dir()).unwrap();
    std::fs::write(home.config_path(), b"{\"keep\": true}").unwrap();
    let args = ["provision", "redeem", "--key", &key, "--name", "nova"];
    let out = w.hoop(&args, None).await;
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("exists already") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(home.config_path()).unwrap(),
        b"{\"keep\": true}"
    );
    assert!(
        !w.usernames().await.contains(&"nova".into()),
        "key not spent"
    );

    // --force: the same key (still usable) replaces the home's account.
    std::fs::write(
        home.token_path(),
        b"{\"token\":\"old\",\"expires_at\":99999999999}",
    )
    .unwrap();
    let mut forced = args.to_vec();
    forced.push("--force");
    let out = w.hoop(&forced, None).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = hoop_api::token::load(&home.token_path()).unwrap();
    assert_ne!(token.token, "old", "the old account's token is gone");
    let user = hoop_api::Client::for_home(&home)
        .unwrap()
        .me()
        .await
        .unwrap();
    assert_eq!(user.username, "nova");

    // A reinforcement account forced over it: the sentinel's token goes
    // (no client may log in as the previous account from this home).
    let rk = w.key(ProvisionKind::Reinforcement, None).await;
    let out = w
        .hoop(
            &[
                "provision",
                "redeem",
                "--key",
                &rk,
                "--name",
                "nova",
                "--force",
            ],
            None,
        )
        .await;
    // "nova" is taken as a username: the backend refuses, nothing changes.
    assert!(!out.status.success());
    assert_eq!(files(home.dir()), vec![".token.json", "config.json"]);
    std::fs::rename(home.dir(), w.home("nova2").dir()).unwrap();
    let out = w
        .hoop(
            &[
                "provision",
                "redeem",
                "--key",
                &rk,
                "--name",
                "nova2",
                "--force",
            ],
            None,
        )
        .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        files(w.home("nova2").dir()),
        vec![".mcp_key", "reinforcement.json"],
        "the old token and config are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_failure_leaves_no_home_and_the_key_usable() {
    let w = World::start().await;
    let key = w.key(ProvisionKind::Sentinel, None).await;
    w.admin
        .arm_fault(FaultPoint::RedeemBeforeCommit, 1)
        .await
        .unwrap();
    let args = ["provision", "redeem", "--key", &key, "--name", "nova"];
    let out = w.hoop(&args, None).await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("internal"), "{stderr}");
    assert!(!stderr.contains(&key), "the key is never printed");
    assert_eq!(files(w.home("nova").dir()), Vec::<String>::new(), "no home");
    assert!(!w.usernames().await.contains(&"nova".into()), "no account");
    let out = w.hoop(&args, None).await;
    assert!(
        out.status.success(),
        "the key is usable: {}",
        text(&out.stderr)
    );
    assert_eq!(
        files(w.home("nova").dir()),
        vec![".token.json", "config.json"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reinforcement_redeem_prints_only_the_add_line_and_add_line_prints_it_again() {
    let w = World::start().await;
    let key = w.key(ProvisionKind::Reinforcement, None).await;
    let out = w
        .hoop(
            &["provision", "redeem", "--key", &key, "--name", "helper"],
            None,
        )
        .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let home = w.home("helper");
    assert_eq!(
        files(home.dir()),
        vec![".mcp_key", "reinforcement.json"],
        "no config.json: no sentinel is installed for it"
    );
    assert_eq!(mode(&home.mcp_key_path()), 0o600);
    let mcp_key = std::fs::read_to_string(home.mcp_key_path())
        .unwrap()
        .trim()
        .to_string();
    let line = hoop_api::mcp::claude_add_line(Some(&w.base()), &mcp_key);
    assert_eq!(stdout, format!("{line}\n"), "stdout is the one line");
    assert!(
        !stderr.contains(&mcp_key) && !stderr.contains(&key),
        "{stderr}"
    );
    assert!(
        stderr.contains("hoop mcp add-line --home helper"),
        "{stderr}"
    );
    let mcp = hoop_api::McpClient::new(hoop_api::McpConfig::new(w.base(), &mcp_key)).unwrap();
    assert!(!mcp.list_tools().await.unwrap().is_empty(), "the key works");

    // No sentinel is planned for it: it has no login.
    let plan = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["install", "--plan", "--manager", "none"])
        .env("HOME", w.root.path())
        .env("HOOP_ROOT", w.root.path())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let planned = text(&plan.stdout);
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    assert!(
        planned.contains("to add") && !planned.contains("helper"),
        "{planned}"
    );

    // add-line from the home, from stdin with and without a backend.
    let again = w.hoop(&["mcp", "add-line", "--home", "helper"], None).await;
    assert_eq!(text(&again.stdout), format!("{line}\n"));
    let placeholder = {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
        c.args(["mcp", "add-line", "--key", "-"])
            .env_remove("HOOP_BACKEND_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{mcp_key}\n").as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(
        placeholder.status.success(),
        "{}",
        text(&placeholder.stderr)
    );
    assert_eq!(
        text(&placeholder.stdout),
        format!(
            "claude mcp add -s user --transport http hoop <BACKEND_URL>/mcp --header \"Authorization: Bearer {mcp_key}\"\n"
        ),
        "a placeholder, never an invented domain"
    );
    let bad = w.hoop(&["mcp", "add-line", "--key", &key], None).await;
    assert!(
        !bad.status.success(),
        "a provisioning key is not an MCP key"
    );
    assert!(bad.stdout.is_empty());
    assert!(!text(&bad.stderr).contains(&key), "never echoed");
    let not_reinforcement = w.hoop(&["mcp", "add-line", "--home", "nope"], None).await;
    assert!(!not_reinforcement.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_first_login_says_the_account_exists_and_what_to_fix() {
    let w = World::start_with(Config {
        agent_secret: Some("s3cr3t-gate".into()),
        ..Config::default()
    })
    .await;
    let key = w.key(ProvisionKind::Sentinel, None).await;
    let args = ["provision", "redeem", "--key", &key, "--name", "nova"];
    let out = w.hoop(&args, None).await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the account \"nova\" was created and its home written")
            && stderr.contains("HOOP_AGENT_SECRET"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cr3t-gate"));
    let home = w.home("nova");
    assert_eq!(
        files(home.dir()),
        vec!["config.json"],
        "no token without a login"
    );
    // With the machine's agent secret in place, the home logs in.
    std::fs::write(
        w.root.path().join("agent.env"),
        "HOOP_AGENT_SECRET=s3cr3t-gate\n",
    )
    .unwrap();
    let me = hoop_api::Client::for_home(&home)
        .unwrap()
        .me()
        .await
        .unwrap();
    assert_eq!(me.username, "nova");
}
