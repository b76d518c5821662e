//! The real `claude` CLI, pointed at the model stand-in, with hooks installed
//! by `hoop hooks install --claude`: a blocked command never runs and the
//! model is told why; an ordinary command still runs.

use std::path::Path;
use std::process::Command;

use hoop_standin::{Reply, Standin};

use super::HOOP;

#[path = "../support/claude.rs"]
mod claude;

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

async fn run_claude(standin: &Standin, home: &Path, root: &Path, work: &Path) -> String {
    claude::run_claude(standin, home, work, &[("HOOP_ROOT", root)])
        .await
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_cli_is_stopped_by_act_guard() {
    let standin = Standin::spawn().await.expect("stand-in starts");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("root");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("mine.txt"), "v1\n").unwrap();
    git(&work, &["add", "mine.txt"]);
    git(&work, &["commit", "-q", "-m", "init"]);
    std::fs::write(work.join("mine.txt"), "v2 (someone else's edit)\n").unwrap();
    std::fs::write(work.join("theirs.txt"), "another person's new file\n").unwrap();

    let o = Command::new(HOOP)
        .args(["hooks", "install", "--claude", "--program", HOOP])
        .env("HOME", &home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Blocked: nothing gets staged, and the model hears the rule.
    standin.push(Reply::bash("git add -A", "understood"));
    let stream = run_claude(&standin, &home, &root, &work).await;
    assert_eq!(
        git(&work, &["diff", "--cached", "--name-only"]),
        "",
        "nothing staged"
    );
    assert!(
        standin
            .requests()
            .iter()
            .any(|r| r.messages_contain("rule `git-add-all`")),
        "the model was told which rule blocked it; stream: {stream}"
    );
    assert!(stream.contains("\"permission_denials\":[{"), "{stream}");

    // Allowed: an ordinary command runs through the same hook.
    standin.push(Reply::bash("echo hi > allowed.txt", "done"));
    run_claude(&standin, &home, &root, &work).await;
    assert_eq!(
        std::fs::read_to_string(work.join("allowed.txt")).unwrap_or_default(),
        "hi\n",
        "the allowed command ran"
    );
    standin.shutdown().await;
}
