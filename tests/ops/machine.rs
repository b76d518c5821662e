//! A clean machine, end to end: the reference backend, two provisioning
//! keys, two homes redeemed; `hoop install --apply` into a temporary HOME
//! and root (units, link, hooks; `--manager none` records the calls);
//! `--check` clean; a unit and a hook edited by hand → `--check` names both
//! → `--apply` repairs them; two sentinels started from the rendered
//! units' `ExecStart` and `ProgramArguments` as real processes; `hoop
//! status --json` shows both connected; `hoop restart --canary` rolls both,
//! one at a time, while people write — nothing lost, nothing answered twice.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use hoop_api::admin::{
    AdminClient, CreateConversation, CreateProvisionKey, CreateUser, PostAs, ProvisionKind,
};
use hoop_api::types::{Conversation, Message, SendMessage};
use hoop_core::home::Home;
use hoop_provision::restart::{self, Options, Outcome};
use hoop_provision::service::{Call, CallOutput, Manager, RunError, Runner};
use hoop_standin::{Reply, Standin};
use serde_json::{Value, json};

use crate::harness::*;
use crate::restart::{Launch, StandinManager};
use crate::status::row;
use crate::unit_exec::exec_words;

const HOMES: [&str; 2] = ["bolt", "nova"];

/// The machine: its own HOME and hoop root under a temporary directory.
struct Machine {
    dir: tempfile::TempDir,
    backend: hoop_refbackend::Running,
    standin: Standin,
    admin: AdminClient,
}

impl Machine {
    fn home_dir(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn root(&self) -> PathBuf {
        self.home_dir().join(".hoop")
    }
    fn home(&self, name: &str) -> Home {
        Home::new(self.root(), name).unwrap()
    }
    fn unit(&self) -> PathBuf {
        self.home_dir()
            .join(".config/systemd/user/hoop-sentinel@.service")
    }
    fn claude_home(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("claude-{name}"))
    }
    fn settings(&self, name: &str) -> PathBuf {
        self.claude_home(name).join(".claude/settings.json")
    }
    /// The machine's environment: its HOME and root, this PATH (it reaches
    /// `node`, which the pinned CLI runs on).
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.home_dir().display().to_string()),
            ("HOOP_ROOT".into(), self.root().display().to_string()),
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOOP_LOG".into(), "info".into()),
        ]
    }
    fn hoop(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_hoop"))
            .args(args)
            .env_clear()
            .envs(self.env())
            .env("HOOP_BACKEND_URL", self.backend.base_url())
            .output()
            .unwrap()
    }
    fn status(&self) -> Value {
        let out = self.hoop(&["status", "--json"]);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn me() -> String {
    let o = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Sends each service-manager call to the manager of the home it names.
struct Managers(Vec<(String, Arc<StandinManager>)>);

impl Runner for Managers {
    fn run(&self, call: &Call) -> Result<CallOutput, RunError> {
        let (_, m) = self
            .0
            .iter()
            .find(|(h, _)| call.args.iter().any(|a| a.ends_with(&format!(".{h}"))))
            .unwrap_or_else(|| panic!("a call for no home: {call}"));
        m.run(call)
    }
}

async fn post(admin: &AdminClient, room: &Conversation, human: i64, body: &str) -> Message {
    admin
        .post_as(
            room.id,
            &PostAs {
                sender_id: human,
                message: SendMessage {
                    body: body.into(),
                    mentions: vec![],
                },
                ..Default::default()
            },
        )
        .await
        .unwrap()
}

async fn room_messages(admin: &AdminClient, room: &Conversation) -> Vec<Message> {
    let mut v = admin
        .read_messages(room.id, 50, None)
        .await
        .unwrap()
        .messages;
    v.reverse();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_machine_from_keys_to_a_safe_roll() {
    let claude = claude_bin();
    let backend = hoop_refbackend::spawn(
        "127.0.0.1:0".parse().unwrap(),
        hoop_refbackend::Config::default(),
    )
    .await
    .unwrap();
    let standin = Standin::spawn().await.unwrap();
    standin.set_default(Reply::Work.delayed(Duration::from_millis(1500)));
    let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
    let m = Machine {
        dir: tempfile::tempdir().unwrap(),
        backend,
        standin,
        admin,
    };
    std::fs::create_dir_all(m.home_dir()).unwrap();
    let human = m
        .admin
        .create_user(&CreateUser {
            email: "ada@example.com".into(),
            username: "ada".into(),
            nickname: None,
            is_agent: false,
        })
        .await
        .unwrap();

    // Two keys, two homes redeemed, each into its own room with the human.
    let mut rooms = vec![];
    for name in HOMES {
        let room = m
            .admin
            .create_conversation(&CreateConversation {
                title: format!("{name}'s room"),
                is_workroom: false,
                member_ids: vec![human.id],
            })
            .await
            .unwrap();
        let key = m
            .admin
            .create_provision_key(&CreateProvisionKey {
                kind: ProvisionKind::Sentinel,
                conversation_id: Some(room.id),
                ttl_secs: None,
            })
            .await
            .unwrap()
            .key;
        let room_arg = room.id.to_string();
        let out = m.hoop(&[
            "provision",
            "redeem",
            "--key",
            &key,
            "--name",
            name,
            "--room",
            &room_arg,
            "--target-host",
            &me(),
        ]);
        assert!(out.status.success(), "redeem {name}: {}", text(&out));
        // The daemon's settings: the pinned CLI against the stand-in, each
        // agent its own Claude config dir; every guard installed.
        let mut env: serde_json::Map<String, Value> = m
            .standin
            .claude_env()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        env.insert(
            "HOME".into(),
            m.claude_home(name).display().to_string().into(),
        );
        std::fs::create_dir_all(m.claude_home(name)).unwrap();
        let home = m.home(name);
        std::fs::write(
            home.dir().join("sentinel.json"),
            json!({
                "claude_bin": claude,
                "env": env,
                "timings": Opts::default().timings,
            })
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            home.dir().join("install.json"),
            r#"{"guards":["act","memory","phase","mcp"]}"#,
        )
        .unwrap();
        rooms.push(room);
    }
    let agents: Vec<i64> = {
        let users = m.admin.list_users().await.unwrap();
        HOMES
            .iter()
            .map(|h| users.iter().find(|u| u.username == *h).unwrap().id)
            .collect()
    };

    // Install, check clean, break two items by hand, check names both,
    // apply repairs them.
    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert!(check.status.success(), "{}", text(&check));
    let unit = std::fs::read_to_string(m.unit()).unwrap();
    std::fs::write(m.unit(), unit.replace("Restart=always", "Restart=no")).unwrap();
    let settings = std::fs::read_to_string(m.settings("bolt")).unwrap();
    std::fs::write(
        m.settings("bolt"),
        settings.replace("guard memory", "guard memoryx"),
    )
    .unwrap();
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert!(!check.status.success(), "{}", text(&check));
    let said = text(&check);
    assert!(said.contains(&m.unit().display().to_string()), "{said}");
    assert!(
        said.contains(&m.settings("bolt").display().to_string()),
        "{said}"
    );
    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert!(check.status.success(), "{}", text(&check));
    assert_eq!(std::fs::read_to_string(m.unit()).unwrap(), unit);

    // bolt as systemd runs the rendered template, nova as launchd runs its
    // rendered agent; each log where restart reads it.
    let unit = std::fs::read_to_string(m.unit()).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let mut bolt_env: Vec<(String, String)> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .map(|v| {
            let w = exec_words(v, "bolt").remove(0);
            let (k, v) = w.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    bolt_env.push(("HOME".into(), m.home_dir().display().to_string()));
    let bolt_launch = Launch {
        argv: exec_words(exec, "bolt"),
        env: bolt_env,
    };
    assert_eq!(
        bolt_launch.argv[0],
        m.root().join("bin/hoop").display().to_string()
    );
    let plist = hoop_provision::units::launchd_plist(
        &hoop_provision::units::UnitFacts {
            hoop_bin: m.root().join("bin/hoop"),
            path: hoop_provision::units::unit_path(unit.as_bytes()).unwrap(),
            root: m.root(),
        },
        "nova",
        &m.home("nova").dir().join("logs"),
    )
    .unwrap();
    let p = plist::Value::from_reader_xml(plist.as_slice()).unwrap();
    let d = p.as_dictionary().unwrap();
    let mut nova_env: Vec<(String, String)> = d["EnvironmentVariables"]
        .as_dictionary()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_string().unwrap().to_string()))
        .collect();
    nova_env.push(("HOME".into(), m.home_dir().display().to_string()));
    assert_eq!(
        PathBuf::from(d["StandardErrorPath"].as_string().unwrap()),
        restart::log_file(&m.home("nova"))
    );
    let nova_launch = Launch {
        argv: d["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_string().unwrap().to_string())
            .collect(),
        env: nova_env,
    };
    let managers = Managers(vec![
        (
            "bolt".into(),
            StandinManager::start_with(&m.home("bolt"), bolt_launch),
        ),
        (
            "nova".into(),
            StandinManager::start_with(&m.home("nova"), nova_launch),
        ),
    ]);

    // Both connected, as status says.
    let mut report = Value::Null;
    until("both homes alive and connected in status", || {
        report = m.status();
        let ok = HOMES
            .iter()
            .all(|h| row(&report, h)["alive"] == true && row(&report, h)["ws_connected"] == true);
        async move { ok }
    })
    .await;
    for (h, mgr) in &managers.0 {
        assert_eq!(row(&report, h)["pid"], mgr.pid(), "{report:#}");
        assert_eq!(row(&report, h)["guards"]["armed"], true, "{report:#}");
    }

    // People write; the roll begins while bolt answers.
    for room in &rooms {
        post(&m.admin, room, human.id, "before the restart").await;
    }
    managers.0[0].1.wait_log_count("🧠 turn started", 1).await;
    let root = m.root();
    let roll = {
        let managers = Managers(managers.0.clone());
        tokio::task::spawn_blocking(move || {
            let opts = Options {
                canary: true,
                come_up: WAIT,
                poll: Duration::from_millis(100),
                ..Options::new(Manager::Launchd, restart::uid())
            };
            restart::run(
                &root,
                &HOMES.map(String::from),
                &opts,
                &managers,
                &mut |l| eprintln!("{l}"),
            )
        })
    };
    for i in 0..3 {
        for room in &rooms {
            post(&m.admin, room, human.id, &format!("during the restart {i}")).await;
        }
    }
    let results = roll.await.unwrap();
    assert_eq!(
        results.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>(),
        HOMES,
        "the canary first"
    );
    for (h, o) in &results {
        assert!(
            matches!(
                o,
                Outcome::Restarted {
                    old_pid: Some(_),
                    ..
                }
            ),
            "{h}: {o:?}"
        );
    }
    for (h, mgr) in &managers.0 {
        let calls = mgr.calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 1, "{h}: {calls:?}");
        assert!(!calls[0].1, "{h} restarted during a turn");
    }

    // Nothing lost, nothing answered twice, per message id, in each room.
    for (room, agent) in rooms.iter().zip(&agents) {
        until("every message answered", || async {
            every_message_answered_by(*agent, &room_messages(&m.admin, room).await)
        })
        .await;
        assert_answered_once_by(*agent, &room_messages(&m.admin, room).await);
    }
    let report = m.status();
    for (h, mgr) in &managers.0 {
        assert_eq!(row(&report, h)["pid"], mgr.pid(), "{report:#}");
        assert_eq!(row(&report, h)["ws_connected"], true, "{report:#}");
    }
    drop(managers);
}
