//! A redeem on an operator's first day (issue 20 items 7, 8 and the redeem's
//! names of item 10), and the README's "Put an account on a machine" walked
//! from an empty HOME to a second redeem after a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use hoop_api::admin::ProvisionKind;

use super::{World, files, me, text};

/// How long one `hoop` command may take before the test fails (a hang
/// fails instead of stalling the suite).
const COMMAND_BOUND: Duration = Duration::from_secs(60);

/// Run `bin ARGS` with exactly `env` (nothing inherited but what is given),
/// bounded by [`COMMAND_BOUND`].
async fn run(bin: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(bin);
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOP_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let child = c.spawn().expect("hoop runs");
    let pid = child.id();
    match tokio::time::timeout(
        COMMAND_BOUND,
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    {
        Ok(out) => out.unwrap().unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{args:?} did not exit within {COMMAND_BOUND:?}");
        }
    }
}

fn hoop_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hoop"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item7_an_unwritable_root_is_refused_before_the_backend_and_the_key_still_redeems() {
    let w = World::start().await;
    let key = w.key(ProvisionKind::Sentinel, None).await;
    // The root cannot be made: a regular file stands where a directory must.
    let blocker = w.root.path().join("blocker");
    std::fs::write(&blocker, "").unwrap();
    let bad_root = blocker.join("root");
    let args = [
        "provision",
        "redeem",
        "--key",
        &key,
        "--home",
        "kai",
        "--url",
        &w.base(),
    ];
    let out = run(
        &hoop_bin(),
        &args,
        &[("HOOP_ROOT", bad_root.display().to_string())],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot write a home under {} (Not a directory (os error 20)); nothing was redeemed \
             and the key was not spent: make {} writable by this user (or point HOOP_ROOT \
             elsewhere), then redeem again",
            bad_root.display(),
            bad_root.display()
        )),
        "{stderr}"
    );
    assert!(!w.usernames().await.contains(&"kai".into()), "no account");
    // The same key redeems once the root is writable.
    let good = w.root.path().join("root");
    let out = run(
        &hoop_bin(),
        &args,
        &[("HOOP_ROOT", good.display().to_string())],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(files(good.join("kai")), vec![".token.json", "config.json"]);
    assert_eq!(files(good.clone()), vec!["kai"], "no staging left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item7_item8_a_home_that_cannot_be_placed_prints_the_recovery_and_force_adopts_it() {
    let w = World::start().await;
    let key = w.key(ProvisionKind::Sentinel, None).await;
    // kai's home holds a directory where config.json must go: the backend
    // says yes, then the home cannot be put in place.
    let home = w.home("kai");
    std::fs::create_dir_all(home.config_path()).unwrap();
    let root = ("HOOP_ROOT", w.root.path().display().to_string());
    let out = run(
        &hoop_bin(),
        &[
            "provision",
            "redeem",
            "--key",
            &key,
            "--home",
            "kai",
            "--url",
            &w.base(),
            "--force",
        ],
        std::slice::from_ref(&root),
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let users = w.admin.list_users().await.unwrap();
    let kai = users.iter().find(|u| u.username == "kai").expect("created");
    let recovery = format!(
        "hoop provision redeem --force --home kai --email {} --url {}",
        kai.email,
        w.base()
    );
    assert!(
        stderr.contains(&format!(
            "the account kai (id {}, email {}) was created but its home {} could not be put in \
             place (removing {}: Is a directory (os error 21)); the key is spent. Once that is \
             fixed, adopt the account (no key needed): `{recovery}`",
            kai.id,
            kai.email,
            home.dir().display(),
            home.config_path().display()
        )),
        "{stderr}"
    );
    // Fixed by hand; the printed line adopts the account, no key spent.
    std::fs::remove_dir(home.config_path()).unwrap();
    let words: Vec<&str> = recovery.split(' ').skip(1).collect();
    let out = run(&hoop_bin(), &words, std::slice::from_ref(&root)).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!(
            "adopted: the existing agent account kai (id {}), home {}\n",
            kai.id,
            home.dir().display()
        )),
        "{}",
        text(&out.stdout)
    );
    let me = hoop_api::Client::for_home(&home)
        .unwrap()
        .me()
        .await
        .unwrap();
    assert_eq!((me.id, me.username.as_str()), (kai.id, "kai"));
    // Only one kai on the backend.
    let n = w
        .usernames()
        .await
        .iter()
        .filter(|u| u.as_str() == "kai")
        .count();
    assert_eq!(n, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item8_a_taken_name_says_which_to_do_and_spends_nothing() {
    let w = World::start().await;
    let root = ("HOOP_ROOT", w.root.path().display().to_string());
    let first = w.key(ProvisionKind::Sentinel, None).await;
    let redeem = |key: String, home: &'static str| {
        let base = w.base();
        let root = root.clone();
        async move {
            run(
                &hoop_bin(),
                &[
                    "provision",
                    "redeem",
                    "--key",
                    &key,
                    "--home",
                    home,
                    "--backend",
                    &base,
                ],
                &[root],
            )
            .await
        }
    };
    assert!(redeem(first, "tora").await.status.success());
    // The home is lost on this machine; a second key for the same name.
    std::fs::remove_dir_all(w.home("tora").dir()).unwrap();
    let second = w.key(ProvisionKind::Sentinel, None).await;
    let out = redeem(second.clone(), "tora").await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "the backend has an account named \"tora\" already (refused (409 conflict): "
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "a provisioning key always creates a NEW account, so nothing was redeemed and the \
             key is still usable. Either redeem under a new name (--home tora-2), or keep that \
             account on this machine by adopting it without a key: `hoop provision redeem \
             --force --home tora --email <its email> --url {}`",
            w.base()
        )),
        "{stderr}"
    );
    assert!(!w.home("tora").dir().exists());
    // The key was not spent: it redeems under the new name.
    let out = redeem(second, "tora-2").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    // And the old account is adopted by its email — once it is active:
    // a disabled account is refused with the cause and nothing is written.
    let tora = w.admin.resolve_user("tora").await.unwrap();
    let adopt = || {
        let (base, root, email) = (w.base(), root.clone(), tora.email.clone());
        async move {
            run(
                &hoop_bin(),
                &[
                    "provision",
                    "redeem",
                    "--force",
                    "--home",
                    "tora",
                    "--email",
                    &email,
                    "--url",
                    &base,
                ],
                &[root],
            )
            .await
        }
    };
    w.admin.set_user_active(tora.id, false).await.unwrap();
    let out = adopt().await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(&format!("hoop: adopting the account {:?}: ", tora.email)),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "; nothing was written. The account must be an active agent account that logs in \
             with the fixed code (a sentinel account)"
        ),
        "{stderr}"
    );
    assert!(!w.home("tora").dir().exists(), "nothing written");
    w.admin.set_user_active(tora.id, true).await.unwrap();
    let out = adopt().await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        files(w.home("tora").dir()),
        vec![".token.json", "config.json"]
    );
}

/// The README's "Put an account on a machine", step by step, from an empty
/// HOME: the binary put somewhere stable, a redeem that fails (a file
/// where the root must go) and spends nothing, the second redeem, then
/// plan, apply, status, check and doctor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_walk_from_an_empty_home_to_a_second_redeem_after_a_failure() {
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
    let home = tempfile::tempdir().unwrap();
    // "You need the claude CLI (and node) on your PATH": the pinned one.
    let claude = std::env::var("HOOP_CLAUDE_BIN")
        .expect("HOOP_CLAUDE_BIN is not set: run ./tests/run (the walk needs the claude CLI)");
    let claude_dir = Path::new(&claude).parent().unwrap().display().to_string();
    let env = [
        ("HOME", home.path().display().to_string()),
        (
            "PATH",
            format!("{claude_dir}:{}", std::env::var("PATH").unwrap_or_default()),
        ),
    ];
    // 1. The binary somewhere it can stay.
    let bin = home.path().join(".local/lib/hoop/hoop");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(hoop_bin(), &bin).unwrap();
    // 2. Redeem — first into a machine where ~/.hoop is a file: refused,
    // nothing spent.
    std::fs::write(home.path().join(".hoop"), "").unwrap();
    let room_arg = room.id.to_string();
    let user = me();
    let redeem = [
        "provision",
        "redeem",
        "--key",
        &key,
        "--home",
        "bolt",
        "--room",
        &room_arg,
        "--target-host",
        &user,
        "--url",
        &w.base(),
    ];
    let out = run(&bin, &redeem, &env).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("nothing was redeemed and the key was not spent"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_file(home.path().join(".hoop")).unwrap();
    let out = run(&bin, &redeem, &env).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hoop_root = home.path().join(".hoop");
    assert_eq!(
        text(&out.stdout),
        format!(
            "redeemed: a new agent account bolt (id {}), home {}\n\
             next: hoop install --plan     # what running its sentinel under the service manager changes\n\
             \x20     hoop install --apply\n\
             \x20 or, in the foreground: hoop sentinel run --home bolt\n",
            w.admin.resolve_user("bolt").await.unwrap().id,
            hoop_root.join("bolt").display()
        )
    );
    // 4. See what will change (the calls too), 5. make it so, 6. check.
    let plan = run(&bin, &["install", "--plan", "--manager", "none"], &env).await;
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    let plan = text(&plan.stdout);
    for line in [
        format!(
            "add     link     {} -> {}",
            hoop_root.join("bin/hoop").display(),
            bin.display()
        ),
        format!(
            "add     hooks    {}",
            home.path().join(".claude/settings.json").display()
        ),
        "skip    service  hoop-sentinel@bolt.service  (--manager none)".to_string(),
        "would run: systemctl --user enable --now hoop-sentinel@bolt.service".to_string(),
    ] {
        assert!(plan.contains(&line), "{line}\n{plan}");
    }
    let apply = run(&bin, &["install", "--apply", "--manager", "none"], &env).await;
    assert!(apply.status.success(), "{}", text(&apply.stderr));
    let again = run(&bin, &["install", "--apply"], &env).await;
    assert!(
        text(&again.stdout).contains("applied: 0 item(s) changed"),
        "running it again changes nothing (and keeps the manager chosen): {}{}",
        text(&again.stdout),
        text(&again.stderr)
    );
    let status = run(&bin, &["status", "--json", "bolt"], &env).await;
    assert!(status.status.success(), "{}", text(&status.stderr));
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["homes"][0]["home"], "bolt");
    assert_eq!(v["homes"][0]["guards"]["armed"], true, "{v:#}");
    assert_eq!(v["homes"][0]["problems"], serde_json::json!([]));
    let check = run(&bin, &["install", "--check"], &env).await;
    assert!(check.status.success(), "{}", text(&check.stdout));
    let doctor = run(&bin, &["doctor"], &env).await;
    assert!(
        doctor.status.success(),
        "{}{}",
        text(&doctor.stdout),
        text(&doctor.stderr)
    );
    assert!(text(&doctor.stdout).contains("0 error(s)"));
}
