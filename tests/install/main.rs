//! `hoop install` and `hoop doctor` end to end through the real binary, in a
//! temporary HOME and hoop root, with `--manager none` (every file written,
//! the service-manager calls printed, none run): plan → apply → check clean;
//! a hand-edited unit and hook → check names both → apply repairs them. The
//! rendered systemd unit passes `systemd-analyze --user verify` with nothing
//! on stderr, and the daemon really exits with the codes the units do not
//! restart after.

use std::path::{Path, PathBuf};
use std::process::Command;

mod first_day;
mod machines;
#[path = "../support/unit_exec.rs"]
mod unit_exec;
use unit_exec::exec_words;

const HOOP: &str = env!("CARGO_BIN_EXE_hoop");

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A sandbox: its own HOME, hoop root and PATH (with stand-in `claude` and
/// `node` so the units' PATH has somewhere to reach).
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new(homes: &[&str]) -> Machine {
        let m = Machine {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(m.home()).unwrap();
        std::fs::create_dir_all(m.tools()).unwrap();
        for t in ["claude", "node"] {
            let p = m.tools().join(t);
            std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
            chmod(&p, 0o755);
        }
        for h in homes {
            m.add_home(h);
        }
        m
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn root(&self) -> PathBuf {
        self.home().join(".hoop")
    }
    fn tools(&self) -> PathBuf {
        self.dir.path().join("tools")
    }
    fn unit(&self) -> PathBuf {
        self.home()
            .join(".config/systemd/user/hoop-sentinel@.service")
    }
    fn settings(&self) -> PathBuf {
        self.home().join(".claude/settings.json")
    }
    fn add_home(&self, name: &str) {
        let d = self.root().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("config.json"),
            r#"{"base_url":"http://127.0.0.1:9","email":"a@example.com"}"#,
        )
        .unwrap();
    }
    /// `hoop ARGS` in this machine's environment (nothing inherited).
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(HOOP);
        c.args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("HOOP_ROOT", self.root())
            .env("PATH", format!("{}:/usr/bin:/bin", self.tools().display()));
        c
    }
    fn hoop(&self, args: &[&str]) -> Out {
        run(self.cmd(args))
    }
}

/// How long one `hoop` command of this suite may take: a regression that
/// hangs (a sentinel that never exits) fails the test instead of the suite.
const COMMAND_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// Run `c` to its end, bounded by [`COMMAND_BOUND`]: past it the process is
/// killed and the test fails with what it printed.
fn run(mut c: Command) -> Out {
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().expect("hoop starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(COMMAND_BOUND) {
        Ok(out) => {
            let out = out.unwrap();
            Out {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        }
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{c:?} did not exit within {COMMAND_BOUND:?}");
        }
    }
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The `RestartPreventExitStatus=` codes of a rendered unit.
fn no_restart_codes(unit: &str) -> Vec<i32> {
    unit.lines()
        .find_map(|l| l.strip_prefix("RestartPreventExitStatus="))
        .expect("the unit lists RestartPreventExitStatus=")
        .split_whitespace()
        .map(|c| c.parse().unwrap())
        .collect()
}

#[test]
fn plan_apply_check_then_a_hand_edit_is_named_and_repaired() {
    let m = Machine::new(&["bolt", "nova"]);
    let plan = m.hoop(&["install", "--plan", "--manager", "none"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    let link = m.root().join("bin/hoop");
    for want in [
        format!("add     link     {} -> ", link.display()),
        format!("add     dir      {}", m.root().join("bolt/logs").display()),
        format!(
            "add     dir      {}",
            m.root().join("nova/prompts").display()
        ),
        format!("add     hooks    {}", m.settings().display()),
        format!("add     unit     {}", m.unit().display()),
        "skip    service  hoop-sentinel@bolt.service".to_string(),
        "skip    service  hoop-sentinel@nova.service".to_string(),
    ] {
        assert!(plan.stdout.contains(&want), "{want}\n{}", plan.stdout);
    }
    // --plan changed nothing.
    assert!(!link.exists() && !m.unit().exists() && !m.settings().exists());

    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    for call in [
        "would run: systemctl --user daemon-reload",
        "would run: systemctl --user enable --now hoop-sentinel@bolt.service",
        "would run: systemctl --user enable --now hoop-sentinel@nova.service",
    ] {
        assert!(apply.stdout.contains(call), "{call}\n{}", apply.stdout);
    }
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::fs::canonicalize(HOOP).unwrap()
    );
    // Units and hooks run the stable link, never the build directory.
    let unit = std::fs::read_to_string(m.unit()).unwrap();
    assert!(unit.contains(&format!(
        "ExecStart=\"{}\" sentinel run --home %i",
        link.display()
    )));
    let settings = std::fs::read_to_string(m.settings()).unwrap();
    // The card tools' usage snapshot is a default hook too.
    for g in ["guard act", "guard memory", "card-snapshot"] {
        assert!(
            settings.contains(&format!("{} {g}", link.display())),
            "{settings}"
        );
    }
    assert!(!settings.contains("target/"), "{settings}");

    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("no drift"));

    // A second apply changes nothing.
    let again = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert!(
        again.stdout.contains("applied: 0 item(s) changed"),
        "{}",
        again.stdout
    );

    // Edit the unit and a hook by hand.
    std::fs::write(m.unit(), unit.replace("RestartSec=10", "RestartSec=1")).unwrap();
    std::fs::write(
        m.settings(),
        settings.replace(
            &format!("{} guard act", link.display()),
            "/tmp/old/hoop guard act",
        ),
    )
    .unwrap();
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 1, "{}{}", check.stdout, check.stderr);
    for item in [
        format!("error   unit {}: change", m.unit().display()),
        format!("error   hooks {}: change", m.settings().display()),
    ] {
        assert!(check.stdout.contains(&item), "{item}\n{}", check.stdout);
    }
    assert!(
        check.stdout.contains("/tmp/old/hoop guard act"),
        "{}",
        check.stdout
    );
    assert_eq!(
        check.stdout.matches("fix: `hoop install --apply`").count(),
        2
    );

    let repair = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert_eq!(repair.code, 0, "{}{}", repair.stdout, repair.stderr);
    assert!(
        repair.stdout.contains("applied: 2 item(s) changed"),
        "{}",
        repair.stdout
    );
    assert_eq!(std::fs::read_to_string(m.unit()).unwrap(), unit);
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

#[test]
fn the_rendered_unit_passes_systemd_analyze_verify_with_nothing_on_stderr() {
    let m = Machine::new(&["bolt"]);
    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let runtime = m.dir.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    chmod(&runtime, 0o700);
    // The template and an instance of it (named as systemd names one).
    let instance = m.dir.path().join("verify/hoop-sentinel@bolt.service");
    std::fs::create_dir_all(instance.parent().unwrap()).unwrap();
    std::fs::copy(m.unit(), &instance).unwrap();
    for unit in [m.unit(), instance] {
        let out = Command::new("systemd-analyze")
            .args(["--user", "verify"])
            .arg(&unit)
            .env("XDG_RUNTIME_DIR", &runtime)
            .output()
            .expect("systemd-analyze is needed (Debian package `systemd`; .ci/run installs it)");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", unit.display());
        assert_eq!(stderr, "", "{}", unit.display());
    }
}

#[test]
fn the_daemon_exits_with_the_codes_the_unit_does_not_restart_after() {
    let m = Machine::new(&[]);
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);
    let codes = no_restart_codes(&std::fs::read_to_string(m.unit()).unwrap());

    // A fatal configuration error: a home without config.json.
    std::fs::create_dir_all(m.root().join("ghost")).unwrap();
    let ghost = m.hoop(&["sentinel", "run", "--home", "ghost"]);
    assert_eq!(ghost.code, 78, "{}", ghost.stderr);
    assert!(ghost.stderr.contains("config.json"), "{}", ghost.stderr);
    // A bad home name is a configuration error too.
    assert_eq!(m.hoop(&["sentinel", "run", "--home", "../x"]).code, 78);

    // The account lock held by another process.
    m.add_home("bolt");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(m.root().join("bolt/account.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let held = m.hoop(&["sentinel", "run", "--home", "bolt"]);
    assert_eq!(held.code, 3, "{}", held.stderr);
    drop(lock);

    for code in [ghost.code, held.code] {
        assert!(codes.contains(&code), "{code} not in {codes:?}");
    }
}

/// A reference backend on loopback, on its own runtime.
fn backend() -> (tokio::runtime::Runtime, hoop_refbackend::Running) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let backend = rt
        .block_on(hoop_refbackend::spawn(
            "127.0.0.1:0".parse().unwrap(),
            hoop_refbackend::Config {
                admin_token: Some("admin-test-token".into()),
                ..Default::default()
            },
        ))
        .unwrap();
    (rt, backend)
}

#[test]
fn doctor_names_each_problem_with_its_fix_and_passes_once_they_are_fixed() {
    let (rt, backend) = backend();
    let m = Machine::new(&["bolt", "nova"]);
    // bolt talks to the live backend; nova to a port nothing listens on.
    std::fs::write(
        m.root().join("bolt/config.json"),
        format!(
            r#"{{"base_url":"{}","email":"a@example.com"}}"#,
            backend.base_url()
        ),
    )
    .unwrap();
    assert_eq!(m.hoop(&["install", "--apply", "--manager", "none"]).code, 0);

    let token = m.root().join("bolt/.token.json");
    std::fs::write(&token, "{}").unwrap();
    chmod(&token, 0o644);
    let rules = m.root().join("act_guard_rules");
    std::fs::write(&rules, "none\n").unwrap();
    let sentinel = m.root().join("nova/sentinel.json");
    std::fs::write(&sentinel, r#"{"claude_bin":"/nonexistent/claude"}"#).unwrap();
    // A home whose config.json went missing.
    let lost = m.root().join("lost");
    std::fs::create_dir_all(&lost).unwrap();
    std::fs::write(lost.join("cursors.json"), "{}").unwrap();

    let out = m.hoop(&["doctor", "--manager", "none"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let unit = m.unit();
    for (line, fix) in [
        (
            format!(
                "error   [bolt] secret {}: readable by others (mode 644)",
                token.display()
            ),
            format!("fix: chmod 600 {}", token.display()),
        ),
        (
            format!(
                "error   [nova] unit {}: its PATH does not reach `/nonexistent/claude`",
                unit.display()
            ),
            "fix: install it, then run `hoop install --apply --path-from-shell`".to_string(),
        ),
        (
            format!("warning guard {}: act_guard is disarmed", rules.display()),
            format!("fix: remove `none` from {}", rules.display()),
        ),
        (
            format!(
                "error   [lost] config {}: missing",
                lost.join("config.json").display()
            ),
            "fix: redeem the home".to_string(),
        ),
        (
            "error   [nova] backend http://127.0.0.1:9: unreachable (".to_string(),
            format!(
                "fix: start the backend or fix base_url in {}",
                m.root().join("nova/config.json").display()
            ),
        ),
    ] {
        let at = out
            .stdout
            .find(&line)
            .unwrap_or_else(|| panic!("{line}\n{}", out.stdout));
        let next = out.stdout[at..].lines().nth(1).unwrap_or("");
        assert!(
            next.trim().starts_with(&fix),
            "{line}: {next}\n{}",
            out.stdout
        );
    }
    // The live backend's clock is this machine's: no finding for it.
    assert!(
        !out.stdout
            .contains(&format!("clock {}", backend.base_url())),
        "{}",
        out.stdout
    );
    // node is reachable through the unit's PATH: no finding for it.
    assert!(!out.stdout.contains("reach `node`"), "{}", out.stdout);
    // Install drift is part of doctor: a hand-edited unit shows up.
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(&unit, text.replace("RestartSec=10", "RestartSec=1")).unwrap();
    let out = m.hoop(&["doctor", "--manager", "none"]);
    assert!(
        out.stdout
            .contains(&format!("error   unit {}: change", unit.display())),
        "{}",
        out.stdout
    );

    // Fix everything but the unreachable backend (an error: nova's
    // sentinel cannot log in) and the test binary's build directory (a
    // warning, when it is one: `…/target/debug/hoop`, not a
    // CARGO_TARGET_DIR of another name).
    let in_build_dir = {
        let p = std::fs::canonicalize(HOOP).unwrap();
        let parts: Vec<_> = p.components().map(|c| c.as_os_str().to_owned()).collect();
        parts
            .windows(2)
            .any(|w| w[0] == "target" && (w[1] == "debug" || w[1] == "release"))
    };
    let warnings = usize::from(in_build_dir);
    std::fs::write(&unit, text).unwrap();
    chmod(&token, 0o600);
    std::fs::write(&rules, "all\n").unwrap();
    std::fs::remove_file(&sentinel).unwrap();
    std::fs::remove_dir_all(&lost).unwrap();
    let out = m.hoop(&["doctor", "--manager", "none"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains(&format!("1 error(s), {warnings} warning(s)")),
        "{}",
        out.stdout
    );
    // Point nova at the live backend: no error left.
    std::fs::write(
        m.root().join("nova/config.json"),
        format!(
            r#"{{"base_url":"{}","email":"a@example.com"}}"#,
            backend.base_url()
        ),
    )
    .unwrap();
    let out = m.hoop(&["doctor", "--manager", "none"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains(&format!("0 error(s), {warnings} warning(s)")),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stdout
            .contains("the hoop binary lives in a build directory"),
        in_build_dir,
        "{}",
        out.stdout
    );
    rt.block_on(backend.shutdown());
}

/// How long a sentinel started from a rendered unit may take to connect.
const CONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Poll `log` until it contains `needle` (bounded; panics with the log).
fn wait_log(child: &mut std::process::Child, log: &Path, needle: &str) {
    let until = std::time::Instant::now() + CONNECT_WAIT;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("exited {st} before {needle:?}:\n{text}");
        }
        assert!(
            std::time::Instant::now() < until,
            "no {needle:?} in:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn two_sentinels_started_from_the_rendered_units_both_connect() {
    let (rt, backend) = backend();
    let admin = hoop_api::admin::AdminClient::new(&backend.base_url(), &backend.admin_token);
    let m = Machine::new(&[]);
    for name in ["bolt", "nova"] {
        rt.block_on(admin.create_user(&hoop_api::admin::CreateUser {
            email: format!("{name}@example.com"),
            username: name.into(),
            nickname: None,
            is_agent: true,
        }))
        .unwrap();
        let d = m.root().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("config.json"),
            format!(
                r#"{{"base_url":"{}","email":"{name}@example.com"}}"#,
                backend.base_url()
            ),
        )
        .unwrap();
        // Each agent its own Claude config dir, so both can take every guard.
        let claude_home = m.dir.path().join(format!("claude-{name}"));
        std::fs::write(
            d.join("sentinel.json"),
            serde_json::json!({"env": {"HOME": claude_home}}).to_string(),
        )
        .unwrap();
        std::fs::write(
            d.join("install.json"),
            r#"{"guards":["act","memory","phase","mcp"]}"#,
        )
        .unwrap();
    }
    let apply = m.hoop(&["install", "--apply", "--manager", "none"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    for name in ["bolt", "nova"] {
        let settings = m
            .dir
            .path()
            .join(format!("claude-{name}/.claude/settings.json"));
        let text = std::fs::read_to_string(&settings).unwrap();
        for g in [
            "guard act".to_string(),
            "guard memory".to_string(),
            format!("guard phase --home {name}"),
            format!("guard mcp --home {name}"),
        ] {
            assert_eq!(text.matches(&g).count(), 1, "{g} in {text}");
        }
    }

    // bolt runs as systemd would run the rendered template unit.
    let unit = std::fs::read_to_string(m.unit()).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let mut env: Vec<(String, String)> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .map(|v| {
            let w = exec_words(v, "bolt").remove(0);
            let (k, v) = w.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    env.push(("HOME".into(), m.home().display().to_string()));
    let argv = exec_words(exec, "bolt");
    assert_eq!(argv[0], m.root().join("bin/hoop").display().to_string());
    // nova runs as launchd would run its rendered agent.
    let unit_path = hoop_provision::units::unit_path(unit.as_bytes()).unwrap();
    let plist = hoop_provision::units::launchd_plist(
        &hoop_provision::units::UnitFacts {
            hoop_bin: m.root().join("bin/hoop"),
            path: unit_path,
            root: m.root(),
        },
        "nova",
        &m.root().join("nova/logs"),
    )
    .unwrap();
    let p = plist::Value::from_reader_xml(plist.as_slice()).unwrap();
    let d = p.as_dictionary().unwrap();
    let program: Vec<String> = d["ProgramArguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_string().unwrap().to_string())
        .collect();
    let mut penv: Vec<(String, String)> = d["EnvironmentVariables"]
        .as_dictionary()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_string().unwrap().to_string()))
        .collect();
    penv.push(("HOME".into(), m.home().display().to_string()));
    let stderr_path = PathBuf::from(d["StandardErrorPath"].as_string().unwrap());

    let start = |argv: &[String], env: &[(String, String)], log: &Path| {
        Command::new(&argv[0])
            .args(&argv[1..])
            .env_clear()
            .envs(env.iter().cloned())
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap()
    };
    let bolt_log = m.root().join("bolt/logs/journal.log");
    let mut bolt = start(&argv, &env, &bolt_log);
    let mut nova = start(&program, &penv, &stderr_path);
    for (child, log, name) in [
        (&mut bolt, &bolt_log, "bolt"),
        (&mut nova, &stderr_path, "nova"),
    ] {
        wait_log(child, log, &format!("🚀 {name} "));
        wait_log(child, log, "🔌 WS connected");
    }
    for mut child in [bolt, nova] {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert!(child.wait().unwrap().success());
    }
    let check = m.hoop(&["install", "--check", "--manager", "none"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    rt.block_on(backend.shutdown());
}
