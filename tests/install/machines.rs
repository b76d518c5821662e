//! Units, reloads and hooks on real machines (issue 22): what `hoop
//! install` writes and runs, through the real binary in a scratch HOME.

use super::Machine;

/// A stale matcher on one of our hooks is drift, named with what it was
/// and what it will be, and --apply repairs it (item 5).
#[test]
fn a_stale_hook_matcher_is_drift_and_is_repaired() {
    let m = Machine::new(&["bolt"]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let text = std::fs::read_to_string(m.settings()).unwrap();
    let stale = text.replace("\"Write|Edit|MultiEdit\"", "\"Edit\"");
    assert_ne!(stale, text);
    std::fs::write(m.settings(), &stale).unwrap();
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 1, "{}", check.stdout);
    let link = m.root().join("bin/hoop");
    assert!(
        check.stdout.contains(&format!(
            "error   [bolt] hooks {}: change (update [Edit] {link} guard memory (timeout 10 s) \
             -> [Write|Edit|MultiEdit] {link} guard memory (timeout 10 s))",
            m.settings().display(),
            link = link.display()
        )),
        "{}",
        check.stdout
    );
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    assert_eq!(std::fs::read_to_string(m.settings()).unwrap(), text);
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
}

/// Each hook the install writes carries its bound (item 10).
#[test]
fn every_installed_hook_has_a_timeout() {
    let m = Machine::new(&["bolt"]);
    std::fs::write(
        m.root().join("bolt/install.json"),
        r#"{"guards":["act","memory","phase","mcp"]}"#,
    )
    .unwrap();
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.settings()).unwrap()).unwrap();
    let mut got = vec![];
    for (event, list) in v["hooks"].as_object().unwrap() {
        for group in list.as_array().unwrap() {
            for h in group["hooks"].as_array().unwrap() {
                let cmd = h["command"].as_str().unwrap();
                let guard = cmd.split_whitespace().nth(2).unwrap().to_string();
                got.push((event.clone(), guard, h["timeout"].as_u64()));
            }
        }
    }
    got.sort();
    let want = |e: &str, g: &str, t| (e.to_string(), g.to_string(), Some(t));
    assert_eq!(
        got,
        [
            want("PostToolUse", "phase", 5),
            want("PreToolUse", "act", 10),
            want("PreToolUse", "mcp", 10),
            want("PreToolUse", "memory", 10),
        ]
    );
}

/// A settings.json kept in a dotfiles tree stays a link: the install
/// writes its target (item 7).
#[test]
fn a_symlinked_settings_file_stays_a_link() {
    let m = Machine::new(&["bolt"]);
    let dotfiles = m.dir.path().join("dotfiles/claude");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::write(dotfiles.join("settings.json"), r#"{"theme":"dark"}"#).unwrap();
    std::fs::create_dir_all(m.settings().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(dotfiles.join("settings.json"), m.settings()).unwrap();
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let meta = std::fs::symlink_metadata(m.settings()).unwrap();
    assert!(meta.file_type().is_symlink(), "still a link");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dotfiles.join("settings.json")).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert!(v["hooks"]["PreToolUse"].is_array(), "{v:#}");
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
}

/// A root whose path holds spaces, `%` and `$` renders a unit systemd
/// reads back as that path: `systemd-analyze --user verify` is silent,
/// ExecStart names the link, HOOP_ROOT the root; and the unit is
/// `Type=exec`, `NoNewPrivileges=yes`, `UMask=0077` (item 10).
#[test]
fn a_root_with_spaces_percent_and_dollar_renders_a_unit_systemd_reads_back() {
    let m = Machine::new(&[]);
    let root = m.dir.path().join("odd $HOME 100% root");
    let d = root.join("bolt");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("config.json"),
        r#"{"base_url":"http://127.0.0.1:9","email":"a@example.com"}"#,
    )
    .unwrap();
    let mut c = m.cmd(&["install", "--apply", "--manager", "none"]);
    c.env("HOOP_ROOT", &root);
    let apply = super::run(c);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let unit = std::fs::read_to_string(m.unit()).unwrap();
    for line in ["Type=exec", "NoNewPrivileges=yes", "UMask=0077"] {
        assert!(unit.lines().any(|l| l == line), "{line}\n{unit}");
    }
    assert!(!unit.lines().any(|l| l == "Type=simple"), "{unit}");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let argv = super::exec_words(exec, "bolt");
    assert_eq!(argv[0], root.join("bin/hoop").display().to_string());
    assert_eq!(argv[1..], ["sentinel", "run", "--home", "bolt"]);
    let env: Vec<String> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .map(|v| super::exec_words(v, "bolt").remove(0))
        .collect();
    assert!(
        env.contains(&format!("HOOP_ROOT={}", root.display())),
        "{env:?}"
    );
    let runtime = m.dir.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    super::chmod(&runtime, 0o700);
    let out = std::process::Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .arg(m.unit())
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .expect("systemd-analyze is needed (Debian package `systemd`; .ci/run installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "", "{unit}");
}

/// A second hoop root under the same user is refused with the line that
/// says which root the units serve and what to do; the first root keeps
/// its units, hooks and a clean --check (item 4).
#[test]
fn a_second_root_under_one_user_is_refused_and_the_first_keeps_everything() {
    let m = Machine::new(&["bolt"]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let unit = std::fs::read(m.unit()).unwrap();
    let settings = std::fs::read(m.settings()).unwrap();
    let other = m.dir.path().join("other-root");
    let d = other.join("nova");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("config.json"),
        r#"{"base_url":"http://127.0.0.1:9","email":"n@example.com"}"#,
    )
    .unwrap();
    let refusal = format!(
        "{} serves the hoop root {}, and one user runs one root: installing {} would take \
         that root's units and hooks over. Install from that root (HOOP_ROOT={} hoop install \
         --plan) and move this root's homes into it; or, if {} is retired, stop its sentinels \
         and remove {} first",
        m.unit().display(),
        m.root().display(),
        other.display(),
        m.root().display(),
        m.root().display(),
        m.unit().display()
    );
    for mode in ["--plan", "--apply"] {
        let mut c = m.cmd(&["install", mode, "--manager", "none"]);
        c.env("HOOP_ROOT", &other);
        let out = super::run(c);
        assert_eq!(out.code, 1, "{mode}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains(&format!("hoop: {refusal}")),
            "{mode}: {}",
            out.stderr
        );
    }
    let mut c = m.cmd(&["install", "--check", "--manager", "none"]);
    c.env("HOOP_ROOT", &other);
    let out = super::run(c);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains(&format!("error   manifest: {refusal}")),
        "{}",
        out.stdout
    );
    assert_eq!(std::fs::read(m.unit()).unwrap(), unit, "A's unit untouched");
    assert_eq!(std::fs::read(m.settings()).unwrap(), settings);
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    // A root that is gone for good does not hold the next one back.
    std::fs::remove_dir_all(m.root()).unwrap();
    let mut c = m.cmd(&["install", "--plan", "--manager", "none"]);
    c.env("HOOP_ROOT", &other);
    assert_eq!(super::run(c).code, 0);
}
