//! One word for each thing across commands (issue 20 item 10): `say
//! --mention` takes a username as `backend post` does, `backend card
//! list|show` shows what a card became, `status [HOME…]` takes homes as
//! `restart` does, `--backend` is an alias of `--url`, and `worker spawn`
//! says where its prompt goes. Real processes against the reference
//! backend.

use std::process::{Command, Output};

use hoop_api::types::Mention;
use hoop_core::home::ROOT_ENV;

use crate::harness::*;

fn hoop(w: &World, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(args)
        .env(ROOT_ENV, w.root.path())
        .env("HOME", w.root.path().join("machine-home"))
        .env("HOOP_ADMIN_TOKEN", "admin-test-token")
        .env_remove("HOOP_BACKEND_URL")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn say_mentions_a_member_by_username_and_names_the_members_when_unknown() {
    let w = World::new(Opts::default()).await;
    let room = w.room.id.to_string();
    let out = hoop(
        &w,
        &[
            "say",
            "--home",
            HOME_NAME,
            "--room",
            &room,
            "--mention",
            "ada",
            "ready",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = w.agent_messages().await;
    let last = sent.last().expect("the message is in the room");
    assert_eq!(last.body, "ready");
    assert_eq!(
        last.mentions,
        vec![Mention::User(w.human.id)],
        "ada's id, as if --mention {} were given",
        w.human.id
    );
    let out = hoop(
        &w,
        &[
            "say",
            "--home",
            HOME_NAME,
            "--room",
            &room,
            "--mention",
            "zed",
            "ready again",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!(
            "--mention \"zed\": no member of room {room} is named so (members: ada, bolt); give \
             a member's username or id, or `everyone`"
        )),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(w.agent_messages().await.len(), sent.len(), "nothing sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_card_list_and_show_print_the_cards_and_backend_is_an_alias_of_url() {
    let w = World::new(Opts::default()).await;
    let url = w.backend.as_ref().unwrap().base_url();
    let room = w.room.id.to_string();
    let out = hoop(
        &w,
        &[
            "backend",
            "card",
            "add",
            "--backend",
            &url,
            "--title",
            "Check the build",
            "--assignee",
            "bolt",
            "--room",
            &room,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let card: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = card["id"].as_i64().unwrap();
    let list = hoop(
        &w,
        &["backend", "card", "list", "--url", &url, "--room", &room],
    );
    assert!(list.status.success(), "{}", text(&list.stderr));
    assert_eq!(
        text(&list.stdout),
        format!(
            "#{id} queued room={room} assignee={} parent=- Check the build\n",
            w.agent.id
        )
    );
    let show = hoop(
        &w,
        &["backend", "card", "show", "--url", &url, &id.to_string()],
    );
    assert!(show.status.success(), "{}", text(&show.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(shown["title"], "Check the build");
    assert_eq!(shown["status"], "queued");
    let missing = hoop(&w, &["backend", "card", "show", "--url", &url, "999999"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains(&format!(
            "no card 999999 on {url} (`hoop backend card list` lists them)"
        )),
        "{}",
        text(&missing.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_takes_homes_like_restart_and_names_an_unknown_one() {
    let w = World::new(Opts::default()).await;
    let out = hoop(&w, &["status", "--json", "--manager", "none", HOME_NAME]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let homes: Vec<&str> = v["homes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["home"].as_str().unwrap())
        .collect();
    assert_eq!(homes, [HOME_NAME]);
    let out = hoop(&w, &["status", "--manager", "none", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!(
            "no home \"nope\" under {} (homes there: {HOME_NAME}); fix: name one of them, or \
             redeem it first (`hoop provision redeem --home nope …`)",
            w.root.path().display()
        )),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn worker_spawn_without_the_separator_says_to_add_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args([
            "worker", "spawn", "--home", "bolt", "--card", "7", "--title", "lint", "run", "the",
            "linter",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "hoop: the agent's prompt goes after `--`: hoop worker spawn --home bolt --card 7 \
         --title \"lint\" -- run the linter\n"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args([
            "worker", "spawn", "--home", "bolt", "--card", "7", "--title", "lint",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "hoop: no prompt: add `-- <the prompt, or a file holding it>`\n"
    );
}
