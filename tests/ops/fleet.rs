//! Two homes on one machine: both sentinels up, `hoop status --json` shows
//! both connected, and `hoop restart --canary` rolls both, one at a time,
//! while people keep writing — every message answered exactly once.

use std::time::Duration;

use hoop_api::admin::{CreateConversation, CreateUser, PostAs};
use hoop_api::types::{Conversation, Message, SendMessage, User};
use hoop_core::home::{Home, HomeConfig};
use hoop_provision::restart::{self, Options, Outcome};
use hoop_provision::service::Manager;
use hoop_standin::Reply;
use serde_json::Value;

use crate::harness::*;
use crate::restart::StandinManager;
use crate::status::{row, status_json};

/// A second agent with its own 1:1 room with the human and its own home
/// (the first home's settings, its own CLI config dir).
async fn second_home(w: &World, name: &str) -> (Home, User, Conversation) {
    let agent = w
        .admin
        .create_user(&CreateUser {
            email: format!("{name}@example.com"),
            username: name.into(),
            nickname: None,
            is_agent: true,
        })
        .await
        .unwrap();
    let room = w
        .admin
        .create_conversation(&CreateConversation {
            title: format!("{name}'s room"),
            is_workroom: false,
            member_ids: vec![w.human.id, agent.id],
        })
        .await
        .unwrap();
    let home = Home::new(w.root.path(), name).unwrap();
    std::fs::create_dir_all(home.dir()).unwrap();
    hoop_core::fsutil::write_json_atomic(
        &home.config_path(),
        &HomeConfig {
            base_url: w.backend.as_ref().unwrap().base_url(),
            email: agent.email.clone(),
            login_code: None,
        },
        Default::default(),
    )
    .unwrap();
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(w.home.dir().join("sentinel.json")).unwrap())
            .unwrap();
    let claude_home = w.root.path().join(format!("claude-home-{name}"));
    std::fs::create_dir_all(&claude_home).unwrap();
    cfg["env"]["HOME"] = claude_home.display().to_string().into();
    hoop_core::fsutil::write_json_atomic(
        &home.dir().join("sentinel.json"),
        &cfg,
        Default::default(),
    )
    .unwrap();
    (home, agent, room)
}

async fn post(w: &World, room: &Conversation, body: &str) -> Message {
    w.admin
        .post_as(
            room.id,
            &PostAs {
                sender_id: w.human.id,
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

async fn room_messages(w: &World, room: &Conversation) -> Vec<Message> {
    let mut v = w
        .admin
        .read_messages(room.id, 50, None)
        .await
        .unwrap()
        .messages;
    v.reverse();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_homes_connected_then_rolled_with_a_canary_losing_nothing() {
    let w = World::new(Opts::default()).await;
    // The scripted agent answers whatever it is given, naming the ids; a
    // slow model keeps turns running while the restarts come.
    w.standin
        .set_default(Reply::Work.delayed(Duration::from_millis(1500)));
    let (tora, tora_agent, tora_room) = second_home(&w, "tora").await;
    let bolt_mgr = StandinManager::start(w.root.path(), &w.home);
    let tora_mgr = StandinManager::start(w.root.path(), &tora);
    let mut report = Value::Null;
    until("both homes alive and connected", || {
        report = status_json(w.root.path());
        let ok = [HOME_NAME, "tora"]
            .iter()
            .all(|h| row(&report, h)["alive"] == true && row(&report, h)["ws_connected"] == true);
        async move { ok }
    })
    .await;
    assert_eq!(row(&report, HOME_NAME)["pid"], bolt_mgr.pid());
    assert_eq!(row(&report, "tora")["pid"], tora_mgr.pid());

    let rooms = [(&w.room, w.agent.id), (&tora_room, tora_agent.id)];
    // People write; a turn is running when the roll begins.
    for (room, _) in rooms {
        post(&w, room, "before the restart").await;
    }
    bolt_mgr.wait_log_count("🧠 turn started", 1).await;

    let root = w.root.path().to_path_buf();
    let managers = (bolt_mgr.clone(), tora_mgr.clone());
    let roll = tokio::task::spawn_blocking(move || {
        let opts = Options {
            canary: true,
            come_up: WAIT,
            poll: Duration::from_millis(100),
            ..Options::new(Manager::Launchd, restart::uid())
        };
        // One manager per home: each call goes to the home it names.
        let runner = PerHome(managers.0, managers.1);
        restart::run(
            &root,
            &[HOME_NAME.to_string(), "tora".to_string()],
            &opts,
            &runner,
            &mut |l| eprintln!("{l}"),
        )
    });
    // More messages while the roll runs.
    for i in 0..3 {
        for (room, _) in rooms {
            post(&w, room, &format!("during the restart {i}")).await;
        }
    }
    let results = roll.await.unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    for (home, outcome) in &results {
        assert!(
            matches!(
                outcome,
                Outcome::Restarted {
                    old_pid: Some(_),
                    ..
                }
            ),
            "{home}: {outcome:?}"
        );
    }
    assert_eq!(results[0].0, HOME_NAME, "the canary first");
    // One at a time: the second home's call came after the first's came up.
    let bolt_calls = bolt_mgr.calls.lock().unwrap().clone();
    let tora_calls = tora_mgr.calls.lock().unwrap().clone();
    assert_eq!(bolt_calls.len(), 1, "{bolt_calls:?}");
    assert_eq!(tora_calls.len(), 1, "{tora_calls:?}");
    for (home, calls) in [(HOME_NAME, &bolt_calls), ("tora", &tora_calls)] {
        assert!(!calls[0].1, "{home} restarted during a turn");
    }

    for (room, agent) in rooms {
        until("every message answered", || async {
            every_message_answered_by(agent, &room_messages(&w, room).await)
        })
        .await;
        assert_answered_once_by(agent, &room_messages(&w, room).await);
    }
    let report = status_json(w.root.path());
    for (home, mgr) in [(HOME_NAME, &bolt_mgr), ("tora", &tora_mgr)] {
        let r = row(&report, home);
        assert_eq!(r["pid"], mgr.pid(), "{r:#}");
        assert_eq!(r["ws_connected"], true, "{r:#}");
    }
}

/// Sends each service-manager call to the manager of the home it names.
struct PerHome(
    std::sync::Arc<StandinManager>,
    std::sync::Arc<StandinManager>,
);

impl hoop_provision::service::Runner for PerHome {
    fn run(
        &self,
        call: &hoop_provision::service::Call,
    ) -> Result<hoop_provision::service::CallOutput, hoop_provision::service::RunError> {
        let names_tora = call.args.iter().any(|a| a.ends_with(".tora"));
        if names_tora { &self.1 } else { &self.0 }.run(call)
    }
}
