//! Regenerable cache folders through the hook shell, in real git
//! repositories: removing one is allowed only when git tracks nothing under
//! it and no link is on its path (`src/act/caches.rs`, `src/cache_facts.rs`).
//! The repositories live under the target dir, and the payload names them
//! through [`payload_cwd`]: a path in a temp dir is scratch whatever its
//! name, which would hide the rule when the target dir is under /tmp. The
//! target dir may also sit in a git work tree (a fresh clone builds into its
//! own `target/`), so the case "outside any work tree" is tested through the
//! binary in `tests/guards`, where git's search can be bounded.

use std::path::{Path, PathBuf};
use std::process::Command;

use hoop_guards::act::{self, ActConfig};
use hoop_guards::cache_facts;
use hoop_guards::hook::HookOptions;
use hoop_guards::run::{HookEnv, act_hook};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with `src/main.rs` tracked.
fn repo() -> tempfile::TempDir {
    let d = scratch();
    git(d.path(), &["init", "-q"]);
    write(d.path(), "src/main.rs");
    git(d.path(), &["add", "src"]);
    git(d.path(), &["commit", "-qm", "init"]);
    d
}

fn write(dir: &Path, rel: &str) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "x").unwrap();
    p
}

/// The directory as the payload names it. On Linux `/proc/self/root` names
/// the same directory without a temp-dir prefix, so the cache rule, not the
/// scratch judgment, decides wherever the target dir is.
fn payload_cwd(dir: &Path) -> String {
    if cfg!(target_os = "linux") {
        format!("/proc/self/root{}", dir.display())
    } else {
        dir.display().to_string()
    }
}

/// The hook's answer: None = allowed, Some(reason) = blocked.
fn hook(cwd: &Path, cmd: &str) -> Option<String> {
    let payload = serde_json::json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": cmd},
        "cwd": payload_cwd(cwd),
    });
    let r = act_hook(
        &serde_json::to_vec(&payload).unwrap(),
        false,
        &HookOptions::default(),
        &HookEnv::default(),
    );
    match r.code {
        0 => None,
        2 => Some(r.stderr),
        c => panic!("{cmd}: exit {c}"),
    }
}

#[test]
fn untracked_cache_folders_may_be_removed() {
    let r = repo();
    let d = r.path();
    write(d, "node_modules/left-pad/index.js");
    write(d, "web/node_modules/react/index.js");
    write(d, "hoop.egg-info/PKG-INFO");
    write(d, "build/out.o");
    write(d, "target/debug/hoop");
    for cmd in [
        "rm -rf node_modules",
        "rm -rf node_modules/",
        "rm -rf ./node_modules && npm ci",
        "rm -rf __pycache__ .pytest_cache .mypy_cache",
        "rm -rf dist build",
        "rm -rf *.egg-info",
        "rm -rf target/debug",
        "cd web && rm -rf node_modules",
        "rm -rf web/node_modules",
        "rm -f build/*",
        "find node_modules -delete",
    ] {
        assert_eq!(hook(d, cmd), None, "{cmd}");
    }
}

#[test]
fn a_cache_name_over_tracked_files_stays_protected() {
    let r = repo();
    let d = r.path();
    write(d, "build/gen.c");
    write(d, "dist/app.js");
    write(d, "py/hoop.egg-info/PKG-INFO");
    git(d, &["add", "build", "py"]);
    git(d, &["commit", "-qm", "tracked build sources"]);
    for cmd in [
        "rm -rf build",
        "rm -rf dist build",
        "rm -rf build/",
        "rm -f build/*",
        "cd py && rm -rf *.egg-info",
    ] {
        let why = hook(d, cmd).unwrap_or_else(|| panic!("{cmd} was allowed"));
        assert!(why.contains("rule `rm`"), "{cmd}: {why}");
        assert!(why.contains("git tracks 1 file(s)"), "{cmd}: {why}");
    }
    // Staged but not committed is tracked too.
    write(d, "node_modules/patched.js");
    git(d, &["add", "-f", "node_modules/patched.js"]);
    assert!(hook(d, "rm -rf node_modules").is_some());
}

#[test]
fn paths_out_of_the_work_tree_links_and_earlier_commands_stay_blocked() {
    let r = repo();
    let d = r.path();
    write(d, "precious/notes.md");
    std::os::unix::fs::symlink(d.join("precious"), d.join("node_modules")).unwrap();
    let why = hook(d, "rm -rf node_modules/").expect("a link is followed by rm");
    assert!(why.contains("symbolic link"), "{why}");
    for cmd in [
        "rm -rf node_modules/*",
        "rm -rf node_modules/../src",
        "rm -rf ../node_modules",
        "cd .. && rm -rf node_modules",
        "rm -rf \"$PWD/target\"",
        "ln -s / target && rm -rf target/",
        "mv src build && rm -rf build",
        "git checkout other && rm -rf build",
    ] {
        assert!(hook(d, cmd).is_some(), "{cmd} was allowed");
    }
    let why = hook(d, "rm -rf ~/node_modules/..").unwrap();
    assert!(why.contains("rule `destroy`"), "{why}");
}

#[test]
fn a_missing_or_failing_git_blocks() {
    let r = repo();
    let paths = vec!["node_modules".to_string()];
    assert_eq!(
        cache_facts::untracked_with(Path::new("git"), r.path(), &paths),
        Ok(())
    );
    let missing = cache_facts::untracked_with(Path::new("/nonexistent/git"), r.path(), &paths);
    assert!(missing.unwrap_err().contains("could not be run"));
    let failing = cache_facts::untracked_with(Path::new("false"), r.path(), &paths);
    assert!(failing.unwrap_err().contains("failed"));
}

#[test]
fn git_is_asked_only_when_a_cache_folder_is_all_that_blocks() {
    let cfg = ActConfig {
        cwd: Some("/srv/app".into()),
        ..ActConfig::default()
    };
    for none in [
        "ls",
        "rm -rf src",
        "rm -rf src node_modules",
        "git reset --hard && rm -rf node_modules",
        "rm -rf /tmp/node_modules",
        "npm ci",
    ] {
        assert!(act::cache_candidates(none, &cfg).is_empty(), "{none}");
    }
    assert_eq!(
        act::cache_candidates("cd web && rm -rf node_modules dist/", &cfg),
        vec!["web/node_modules".to_string(), "web/dist".to_string()]
    );
    // With the facts the verdict is allow; without them, `rm`.
    let cmd = "rm -rf target";
    assert!(act::check(cmd, &cfg).is_block());
    let vouched = ActConfig {
        untracked_caches: vec!["target".into()],
        ..cfg
    };
    assert!(!act::check(cmd, &vouched).is_block());
}
