//! An operator's first day with `hoop install`, `hoop doctor` and `hoop
//! status` (issue 20 items 1–6): every command says which service manager
//! it uses and why, the hooks a home should have are one definition, a
//! broken home is named and the others go on, an unreachable backend is an
//! error naming its home, `--plan` lists the calls `--apply` makes, and the
//! unit's PATH never depends on the caller's shell.

use std::path::Path;

use super::{Machine, Out, chmod, run};

/// A stand-in `systemctl` in `dir`: prints `stderr` and exits `code` for
/// every call, recording its arguments in `dir/systemctl.calls`.
fn standin_systemctl(dir: &Path, code: i32, stderr: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("systemctl");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nprintf '%s\\n' '{stderr}' >&2\nexit {code}\n",
            dir.join("systemctl.calls").display()
        ),
    )
    .unwrap();
    chmod(&p, 0o755);
}

/// The detection line this machine gives when `systemctl` is on PATH and
/// no user bus is reachable (XDG_RUNTIME_DIR unset): its two forms, chosen
/// by whether systemd is this machine's init.
fn no_bus_line(user: &str) -> String {
    if Path::new("/run/systemd/system").is_dir() {
        format!(
            "service manager: none (detected): systemd runs this machine but {user}'s user bus \
             is not reachable (XDG_RUNTIME_DIR is not set), so nothing will keep the sentinels \
             running\n  fix: `loginctl enable-linger {user}` (the user manager then runs without \
             a login), run this from a login session of {user}, or set \
             XDG_RUNTIME_DIR=/run/user/$(id -u) where that directory holds the bus; or pass \
             `--manager none` to run the sentinels some other way on purpose"
        )
    } else {
        "service manager: none (detected): systemctl is installed but systemd is not this \
         machine's init (/run/systemd/system is missing), so nothing will keep the sentinels \
         running\n  fix: run the sentinels under this machine's own supervisor and pass \
         `--manager none` to say so on purpose"
            .to_string()
    }
}

fn me() -> String {
    let o = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `hoop ARGS` with only the machine's tools on PATH (a stand-in
/// `systemctl` among them) and no user bus.
fn hoop_no_bus(m: &Machine, args: &[&str]) -> Out {
    let mut c = m.cmd(args);
    c.env("PATH", format!("{}:/bin", m.tools().display()));
    run(c)
}

#[test]
fn item1_no_usable_manager_is_said_apply_refuses_and_doctor_errors_until_none_is_chosen() {
    let m = Machine::new(&["bolt"]);
    standin_systemctl(&m.tools(), 0, "");
    let line = no_bus_line(&me());

    let apply = hoop_no_bus(&m, &["install", "--apply"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    assert!(apply.stderr.starts_with(&line), "{}", apply.stderr);
    assert!(
        apply
            .stderr
            .contains("hoop install --apply: refused, nothing written: "),
        "{}",
        apply.stderr
    );
    assert!(
        !m.unit().exists() && !m.settings().exists(),
        "nothing written"
    );
    assert!(!m.tools().join("systemctl.calls").exists(), "nothing run");

    // doctor: an error naming the home, not "0 errors".
    let doctor = hoop_no_bus(&m, &["doctor"]);
    assert_eq!(doctor.code, 1, "{}{}", doctor.stdout, doctor.stderr);
    assert!(doctor.stderr.starts_with(&line), "{}", doctor.stderr);
    let cause = line
        .split_once("(detected): ")
        .unwrap()
        .1
        .split_once("\n  fix: ")
        .unwrap();
    assert!(
        doctor.stdout.contains(&format!(
            "error   [bolt] service bolt: nothing will restart this sentinel: {}\n        fix: {}",
            cause.0, cause.1
        )),
        "{}",
        doctor.stdout
    );

    // `--manager none` on purpose: recorded, and from then on not an error.
    let apply = hoop_no_bus(&m, &["install", "--apply", "--manager", "none"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply
            .stderr
            .starts_with("service manager: none (--manager none)\n"),
        "{}",
        apply.stderr
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.root().join("install-record.json")).unwrap())
            .unwrap();
    assert_eq!(record["manager"], "none");
    assert_eq!(record["manager_on_purpose"], true);
    let doctor = hoop_no_bus(&m, &["doctor"]);
    assert!(
        doctor.stderr.starts_with(&format!(
            "service manager: none (chosen with --manager at install: {})\n",
            m.root().join("install-record.json").display()
        )),
        "{}",
        doctor.stderr
    );
    assert!(
        !doctor.stdout.contains("nothing will restart"),
        "{}",
        doctor.stdout
    );
}

#[test]
fn item1_systemd_without_a_bus_names_the_fixes_instead_of_a_raw_error() {
    let m = Machine::new(&["bolt"]);
    standin_systemctl(&m.tools(), 1, "Failed to connect to bus: No medium found");
    let user = me();
    let apply = hoop_no_bus(&m, &["install", "--apply", "--manager", "systemd"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply.stderr.contains(&format!(
            "`systemctl --user daemon-reload` exited 1: Failed to connect to bus: No medium \
             found\n  systemd's user manager cannot be reached from here; fix: `loginctl \
             enable-linger {user}` (the user manager then runs without a login), run this from \
             a login session of {user}, or set XDG_RUNTIME_DIR=/run/user/$(id -u) where that \
             directory holds the bus; or pass `--manager none` to run the sentinels some other \
             way on purpose"
        )),
        "{}",
        apply.stderr
    );
}

#[test]
fn item2_a_default_install_has_every_hook_status_and_check_ask_for() {
    let m = Machine::new(&["bolt"]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let status = m.hoop(&["status", "--json", "--manager", "none"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["homes"][0]["guards"]["hooks_installed"], true, "{v:#}");
    assert_eq!(v["homes"][0]["guards"]["armed"], true, "{v:#}");
    let table = m.hoop(&["status", "--manager", "none"]);
    assert!(!table.stdout.contains("NO HOOKS"), "{}", table.stdout);
    assert!(table.stdout.contains(" armed "), "{}", table.stdout);

    // The home asks for phase and mcp too: status, --check and doctor all
    // say the hooks are missing, until --apply adds them.
    std::fs::write(
        m.root().join("bolt/install.json"),
        r#"{"guards":["act","memory","phase","mcp"]}"#,
    )
    .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&m.hoop(&["status", "--json", "--manager", "none"]).stdout).unwrap();
    assert_eq!(v["homes"][0]["guards"]["hooks_installed"], false, "{v:#}");
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 1);
    assert!(
        check.stdout.contains(&format!(
            "error   [bolt] hooks {}: change (add {link} guard mcp --home bolt; add {link} \
             guard phase --home bolt)\n        fix: `hoop install --apply`",
            m.settings().display(),
            link = m.root().join("bin/hoop").display()
        )),
        "{}",
        check.stdout
    );
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let v: serde_json::Value =
        serde_json::from_str(&m.hoop(&["status", "--json", "--manager", "none"]).stdout).unwrap();
    assert_eq!(v["homes"][0]["guards"]["hooks_installed"], true, "{v:#}");
}

#[test]
fn item3_a_broken_home_is_named_by_every_command_and_the_others_go_on() {
    let m = Machine::new(&["bolt", "nova", "tora"]);
    let config = m.root().join("bolt/config.json");
    std::fs::write(&config, "{\"base_url\": ").unwrap();
    let sentinel = m.root().join("nova/sentinel.json");
    std::fs::write(&sentinel, "[1,").unwrap();
    let config_err = "EOF while parsing a value at line 1 column 13";

    let plan = m.hoop(&["install", "--plan", "--manager", "none"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(
        plan.stdout.contains(&format!(
            "broken  home     bolt  ({}: {config_err})",
            config.display()
        )),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout
            .contains(&format!("broken  home     nova  ({}", sentinel.display())),
        "{}",
        plan.stdout
    );
    // The good home goes on; the broken ones get no service.
    assert!(
        plan.stdout
            .contains("skip    service  hoop-sentinel@tora.service")
    );
    assert!(
        !plan.stdout.contains("hoop-sentinel@bolt.service"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout
            .contains("2 broken home(s) left out (fix by hand)")
    );

    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 1);
    assert!(
        check.stdout.contains(&format!(
            "error   [bolt] home bolt: broken: {}: {config_err}\n        fix: fix {} by hand \
             (or redeem the home again with `hoop provision redeem --force`); until then its \
             sentinel is not installed, started or retired",
            config.display(),
            config.display()
        )),
        "{}",
        check.stdout
    );

    let doctor = m.hoop(&["doctor", "--manager", "none"]);
    assert_eq!(doctor.code, 1, "{}{}", doctor.stdout, doctor.stderr);
    assert!(
        doctor.stdout.contains(&format!(
            "error   [nova] home nova: broken: {}",
            sentinel.display()
        )),
        "{}",
        doctor.stdout
    );

    let status = m.hoop(&["status", "--json", "--manager", "none"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let problems = |home: &str| -> Vec<String> {
        v["homes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["home"] == home)
            .unwrap()["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        problems("bolt"),
        [format!(
            "home: {}: {config_err}; fix {} by hand (or redeem the home again with `hoop \
             provision redeem --force`); until then its sentinel is not installed, started or \
             retired",
            config.display(),
            config.display()
        )]
    );
    assert_eq!(problems("tora"), Vec::<String>::new());

    // --apply installs the good home and names what it left out.
    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply
            .stdout
            .contains("would run: systemctl --user enable --now hoop-sentinel@tora.service")
    );
    assert!(
        !apply.stdout.contains("hoop-sentinel@bolt.service"),
        "{}",
        apply.stdout
    );
    assert!(
        apply.stdout.contains(&format!(
            "left out: home bolt is broken ({}: {config_err});",
            config.display()
        )),
        "{}",
        apply.stdout
    );
}

#[test]
fn item4_an_unreachable_backend_is_an_error_naming_each_home() {
    let m = Machine::new(&["bolt", "nova"]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let doctor = m.hoop(&["doctor", "--manager", "none"]);
    assert_eq!(doctor.code, 1, "{}{}", doctor.stdout, doctor.stderr);
    for home in ["bolt", "nova"] {
        let line = format!("error   [{home}] backend http://127.0.0.1:9: unreachable (");
        let at = doctor
            .stdout
            .find(&line)
            .unwrap_or_else(|| panic!("{line}\n{}", doctor.stdout));
        let rest = &doctor.stdout[at..];
        assert!(
            rest.lines()
                .next()
                .unwrap()
                .ends_with("): this sentinel cannot log in or receive anything"),
            "{rest}"
        );
        assert_eq!(
            rest.lines().nth(1).unwrap(),
            format!(
                "        fix: start the backend or fix base_url in {}, then `hoop doctor` again",
                m.root().join(home).join("config.json").display()
            )
        );
    }
    // No finding is printed twice.
    let lines: Vec<&str> = doctor
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .collect();
    let mut unique = lines.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(lines.len(), unique.len(), "{}", doctor.stdout);
}

#[test]
fn item4_every_unit_path_finding_names_its_home_once() {
    let m = Machine::new(&["bolt", "nova"]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    for h in ["bolt", "nova"] {
        std::fs::write(
            m.root().join(h).join("sentinel.json"),
            r#"{"claude_bin":"/nonexistent/claude"}"#,
        )
        .unwrap();
    }
    let doctor = m.hoop(&["doctor", "--manager", "none"]);
    for h in ["bolt", "nova"] {
        let line = format!(
            "error   [{h}] unit {}: its PATH does not reach `/nonexistent/claude`: the agent \
             cannot start\n        fix: install it, then run `hoop install --apply \
             --path-from-shell` from a shell where `command -v claude node` finds both (the \
             unit's PATH is built from that shell and recorded)",
            m.unit().display()
        );
        assert_eq!(
            doctor.stdout.matches(&line).count(),
            1,
            "{line}\n{}",
            doctor.stdout
        );
    }
}

#[test]
fn item5_plan_lists_exactly_the_calls_apply_makes() {
    let m = Machine::new(&["bolt", "nova"]);
    let plan = m.hoop(&["install", "--plan", "--manager", "none"]);
    let would = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("would run: "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        would(&plan.stdout),
        [
            "would run: systemctl --user daemon-reload",
            "would run: systemctl --user enable --now hoop-sentinel@bolt.service",
            "would run: systemctl --user enable --now hoop-sentinel@nova.service",
        ]
    );
    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert_eq!(would(&plan.stdout), would(&apply.stdout));
}

#[test]
fn item6_the_unit_path_is_recorded_at_install_and_drop_ins_are_kept() {
    let m = Machine::new(&["bolt"]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    // Another shell, whose claude is elsewhere: no drift nobody made.
    let other = m.dir.path().join("other-shell");
    std::fs::create_dir_all(&other).unwrap();
    for t in ["claude", "node"] {
        std::fs::write(other.join(t), "#!/bin/sh\n").unwrap();
        chmod(&other.join(t), 0o755);
    }
    let from_other = |args: &[&str]| {
        let mut c = m.cmd(args);
        c.env("PATH", format!("{}:/usr/bin:/bin", other.display()));
        run(c)
    };
    let check = from_other(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("no drift"));
    // --path-from-shell takes the new shell's on purpose.
    let apply = from_other(&[
        "install",
        "--apply",
        "--manager",
        "none",
        "--path-from-shell",
    ]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let moved = std::fs::read_to_string(m.unit()).unwrap();
    assert!(moved.contains(&other.display().to_string()), "{moved}");
    assert!(!moved.contains(&m.tools().display().to_string()), "{moved}");
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "recorded again: {}", check.stdout);

    // A hand edit says where local changes belong; a drop-in is kept.
    std::fs::write(m.unit(), moved.replace("RestartSec=10", "RestartSec=1")).unwrap();
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    let dropin_dir = m.unit().with_extension("service.d");
    assert!(
        check.stdout.contains(&format!(
            "        fix: `hoop install --apply` rewrites it; keep local changes in a drop-in, \
             which install keeps: {}/local.conf (`systemctl --user edit hoop-sentinel@.service`)",
            dropin_dir.display()
        )),
        "{}",
        check.stdout
    );
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    std::fs::create_dir_all(&dropin_dir).unwrap();
    std::fs::write(dropin_dir.join("local.conf"), "[Service]\nRestartSec=1\n").unwrap();
    let plan = m.hoop(&["install", "--plan", "--manager", "none"]);
    assert!(
        plan.stdout.contains(&format!(
            "ok      dropin   {}  (a local change, kept (`systemctl --user edit` writes these))",
            dropin_dir.join("local.conf").display()
        )),
        "{}",
        plan.stdout
    );
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert_eq!(
        std::fs::read_to_string(dropin_dir.join("local.conf")).unwrap(),
        "[Service]\nRestartSec=1\n"
    );
}

/// Under `sudo -u` the user's bus is missing: the refusal says so and how
/// to get a session that has one (issue 22 item 10).
#[test]
fn under_sudo_the_missing_bus_is_explained() {
    let m = Machine::new(&["bolt"]);
    standin_systemctl(&m.tools(), 1, "Failed to connect to bus: No medium found");
    let user = me();
    let mut c = m.cmd(&["install", "--apply", "--manager", "systemd"]);
    c.env("PATH", format!("{}:/bin", m.tools().display()))
        .env("SUDO_USER", "admin");
    let out = run(c);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "run this from a login session of {user} (this runs under sudo from admin: `sudo \
             -u` gives no user bus; use `machinectl shell {user}@` or `sudo -iu {user}` after \
             enabling linger), or set XDG_RUNTIME_DIR=/run/user/$(id -u)"
        )),
        "{}",
        out.stderr
    );
}
