//! `hoop doctor`: everything `hoop install --check` checks
//! ([`crate::install::check`]) plus the machine's health — disarmed guards,
//! missing or world-readable secrets and token files, clock skew against
//! each backend, a unit `PATH` that does not reach `claude` and `node`,
//! systemd linger, macOS protected folders (through the manifest). Each
//! finding says how to fix it; any [`Level::Error`] makes the command fail.
//!
//! The decisions are plain functions over data (`skew_finding`,
//! `secret_mode_finding`, `linger_finding`, `parse_http_date`); [`doctor`]
//! gathers the data, asking the backend's clock through a closure and the
//! service manager through the one [`crate::service::Runner`].

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hoop_core::home::{AGENT_ENV_FILE, Home};
use hoop_core::limits::{CLOCK_SKEW_ERROR, CLOCK_SKEW_WARN};

use crate::install::{self, Ctx, Finding, Level, TOOLS};
use crate::manifest::{self, Os};
use crate::service::{Call, Manager};
use crate::units;

fn f(level: Level, home: Option<&str>, item: String, problem: String, fix: String) -> Finding {
    Finding {
        level,
        home: home.map(str::to_string),
        item,
        problem,
        fix,
    }
}

/// The finding for a clock `skew` (local minus backend) against `base`.
pub fn skew_finding(base: &str, skew: i64) -> Option<Finding> {
    let abs = Duration::from_secs(skew.unsigned_abs());
    let level = if abs > CLOCK_SKEW_ERROR {
        Level::Error
    } else if abs > CLOCK_SKEW_WARN {
        Level::Warning
    } else {
        return None;
    };
    let dir = if skew > 0 { "ahead of" } else { "behind" };
    Some(f(
        level,
        None,
        format!("clock {base}"),
        format!(
            "this machine's clock is {}s {dir} the backend's (logins expire early past {}s)",
            skew.unsigned_abs(),
            CLOCK_SKEW_ERROR.as_secs()
        ),
        "turn on time sync (`timedatectl set-ntp true`; on macOS System Settings → Date & Time)"
            .into(),
    ))
}

/// The finding for a secret file's permission bits (`None` when only the
/// owner can read it).
pub fn secret_mode_finding(home: Option<&str>, path: &Path, mode: u32) -> Option<Finding> {
    (mode & 0o077 != 0).then(|| {
        f(
            Level::Error,
            home,
            format!("secret {}", path.display()),
            format!("readable by others (mode {:o})", mode & 0o777),
            format!("chmod 600 {}", path.display()),
        )
    })
}

/// The finding for `loginctl show-user --property=Linger --value`'s answer.
pub fn linger_finding(user: &str, answer: Option<&str>) -> Option<Finding> {
    match answer.map(str::trim) {
        Some("yes") => None,
        other => Some(f(
            Level::Warning,
            None,
            format!("linger {user}"),
            match other {
                Some(a) if !a.is_empty() => format!(
                    "linger is {a}: the user manager (and every sentinel) stops when {user}'s \
                     last session ends and does not start at boot"
                ),
                _ => "could not ask loginctl whether linger is on; without it the sentinels \
                      stop with the last session"
                    .into(),
            },
            format!("loginctl enable-linger {user}"),
        )),
    }
}

/// The finding for a stable link whose binary lives in a cargo build
/// directory (`…/target/{debug,release}/…`): the next build replaces it
/// under the running daemons.
pub fn build_dir_finding(binary: &Path) -> Option<Finding> {
    let parts: Vec<_> = binary.components().map(|c| c.as_os_str()).collect();
    let in_build = parts
        .windows(2)
        .any(|w| w[0] == "target" && (w[1] == "debug" || w[1] == "release"));
    in_build.then(|| {
        f(
            Level::Warning,
            None,
            format!("link -> {}", binary.display()),
            "the hoop binary lives in a build directory: the next build replaces it under \
             the running sentinels and hooks"
                .into(),
            "copy it somewhere stable (e.g. `install -D -m 755 target/release/hoop \
             ~/.local/lib/hoop/hoop`) and run `hoop install --apply --binary <that path>`"
                .into(),
        )
    })
}

/// The finding for one file in a home's `prompts/` directory: only
/// `<part>.md` for a known part is ever read, and an empty one is ignored.
pub fn prompt_file_finding(home: &str, path: &Path, len: u64) -> Option<Finding> {
    use hoop_sentinel::prompts::Part;
    let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
    let file = path.file_name()?.to_string_lossy();
    let known = file
        .strip_suffix(".md")
        .is_some_and(|stem| names.contains(&stem));
    let problem = if !known {
        format!(
            "not a prompt part ({}): the sentinel never reads it",
            names.join(", ")
        )
    } else if len == 0 {
        "empty: the sentinel ignores it and uses the shipped text".into()
    } else {
        return None;
    };
    Some(f(
        Level::Warning,
        Some(home),
        format!("prompt {}", path.display()),
        problem,
        format!(
            "name it <part>.md with a part of {} and some text, or remove it",
            names.join(", ")
        ),
    ))
}

/// Why a backend's clock could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockError {
    /// No answer at all (connect, timeout): the backend is unreachable.
    Unreachable(String),
    /// It answered, without a readable `Date` header.
    Unreadable(String),
}

/// The finding for a home whose backend did not answer: its sentinel
/// cannot log in, so it is an error, never a warning.
pub fn unreachable_finding(home: &str, base: &str, error: &str, root: &Path) -> Finding {
    f(
        Level::Error,
        Some(home),
        format!("backend {base}"),
        format!("unreachable ({error}): this sentinel cannot log in or receive anything"),
        format!(
            "start the backend or fix base_url in {}, then `hoop doctor` again",
            root.join(home).join("config.json").display()
        ),
    )
}

/// The last exit code in `launchctl print <service>`'s answer. launchd
/// writes a code it has a name for with the name after it (`last exit code
/// = 78: EX_CONFIG`), others bare (`= 3`, `= 0`), and `(never exited)`
/// before the first exit. launchctl(1) calls `print`'s output "NOT API":
/// the forms are taken from the output people publish when they debug a
/// job, and only the leading number is read.
pub fn launchd_last_exit(print: &str) -> Option<i64> {
    print.lines().find_map(|l| {
        let v = l.trim().strip_prefix("last exit code = ")?;
        let end = v
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
            .map_or(v.len(), |(i, _)| i);
        v[..end].parse().ok()
    })
}

/// The finding for a Mac whose user has no GUI login (`launchctl print
/// gui/<uid>` fails): launchd runs a user's LaunchAgents in `gui/<uid>`,
/// which exists only while the user is logged in at the screen
/// (launchctl(1): the `gui/<uid>` form is the login domain); after a reboot
/// without automatic login no sentinel runs.
pub fn gui_domain_finding(user: &str, uid: u32, answered: bool) -> Option<Finding> {
    (!answered).then(|| {
        f(
            Level::Error,
            None,
            format!("launchd gui/{uid}"),
            format!(
                "{user} is not logged in at the screen, so launchd has no gui/{uid} domain \
                 and runs none of its agents: no sentinel runs until someone logs in (and \
                 none after a reboot without automatic login)"
            ),
            format!(
                "turn on automatic login for {user} (System Settings → Users & Groups), or \
                 keep a GUI session of {user} logged in; `launchctl print gui/{uid}` answers \
                 once there is one"
            ),
        )
    })
}

/// What the sentinel's last exit code means, for a finding.
fn exit_meaning(code: i64) -> Option<&'static str> {
    match u8::try_from(code).ok()? {
        hoop_core::limits::SENTINEL_EXIT_LOCK_HELD => {
            Some("another sentinel holds the home's account lock (a second copy started by hand?)")
        }
        hoop_core::limits::SENTINEL_EXIT_CONFIG => {
            Some("a fatal configuration error (config.json, sentinel.json or a state file)")
        }
        _ => None,
    }
}

/// The finding for a home's service that stopped for good: systemd's
/// `is-active` answer `failed`, or launchd's `last exit code = N` (from
/// `launchctl print`) being one of the codes the units do not restart after.
pub fn stopped_finding(
    home: &str,
    unit: &str,
    systemd_state: Option<&str>,
    launchd_print: Option<&str>,
) -> Option<Finding> {
    let logs = if unit.ends_with(".service") {
        format!("journalctl --user -u {unit} -n 50")
    } else {
        "the home's logs/sentinel.err.log".to_string()
    };
    if let Some(state) = systemd_state
        && state.trim() == "failed"
    {
        return Some(f(
            Level::Error,
            Some(home),
            format!("service {unit}"),
            "failed: it exited and systemd does not restart it (exit 3: the account lock \
             is held; 78: a configuration error)"
                .into(),
            format!("read `{logs}`, fix the cause, then `systemctl --user restart {unit}`"),
        ));
    }
    let code = launchd_last_exit(launchd_print?)?;
    let meaning = exit_meaning(code)?;
    Some(f(
        Level::Error,
        Some(home),
        format!("service {unit}"),
        format!("last exit code {code}: {meaning}; launchd retries it once a minute"),
        format!("read {logs} and fix the cause"),
    ))
}

/// An HTTP `Date` header (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn parse_http_date(s: &str) -> Option<SystemTime> {
    let fmt = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let t = time::PrimitiveDateTime::parse(s.trim(), fmt).ok()?;
    Some(t.assume_utc().into())
}

/// Is `program` reachable: an absolute path that is an executable file, or
/// a name found on `path`?
fn reachable(program: &Path, path: &str) -> bool {
    if program.is_absolute() {
        return install::is_executable(program);
    }
    install::which(Some(std::ffi::OsStr::new(path)), &program.to_string_lossy()).is_some()
}

/// Run every check. `backend_time(base_url)` asks a backend for its clock;
/// `now` is this machine's.
pub fn doctor(
    ctx: &Ctx,
    backend_time: &dyn Fn(&str) -> Result<SystemTime, ClockError>,
    now: SystemTime,
) -> Vec<Finding> {
    let m = &ctx.machine;
    let mut out = install::check(ctx);

    // No service manager, and nobody said so on purpose.
    if let Some(p) = &ctx.manager_problem {
        for h in &ctx.homes {
            out.push(f(
                Level::Error,
                Some(&h.name),
                format!("service {}", h.name),
                format!("nothing will restart this sentinel: {}", p.cause),
                p.fix.clone(),
            ));
        }
    }

    // The stable link's binary.
    let link = manifest::link_path(m);
    if let Ok(target) = std::fs::canonicalize(&link) {
        out.extend(build_dir_finding(&target));
    }

    // Guards.
    let rules = hoop_guards::act::load_rules(&m.root);
    let rules_path = m.root.join(hoop_guards::act::RULES_FILE);
    if rules.rules.is_disarmed() {
        out.push(f(
            Level::Warning,
            None,
            format!("guard {}", rules_path.display()),
            "act_guard is disarmed (the file says `none`): no shell command is checked".into(),
            format!(
                "remove `none` from {} (an absent file arms every rule)",
                rules_path.display()
            ),
        ));
    }
    for name in &rules.unknown {
        out.push(f(
            Level::Warning,
            None,
            format!("guard {}", rules_path.display()),
            format!("`{name}` names no rule (ignored)"),
            "fix the name (see `hoop guard act --help`) or remove the line".into(),
        ));
    }

    // A directory that looks like a home (it has a home's files) but has no
    // config.json is not a home to install: its sentinel cannot start.
    for e in std::fs::read_dir(&m.root).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(home) = Home::new(&m.root, &name) else {
            continue;
        };
        let looks_like_home = [
            home.token_path(),
            home.cursors_path(),
            home.dir().join(manifest::INSTALL_FILE),
            home.dir().join("sentinel.json"),
        ]
        .iter()
        .any(|p| p.exists());
        if looks_like_home && !home.config_path().exists() {
            out.push(f(
                Level::Error,
                Some(&name),
                format!("config {}", home.config_path().display()),
                "missing: this home cannot log in and `hoop install` skips it".into(),
                "redeem the home (`hoop provision redeem`) or write config.json by hand".into(),
            ));
        }
    }

    // Prompt part overrides.
    for h in &ctx.homes {
        let dir = h.dir.join("prompts");
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            out.extend(prompt_file_finding(&h.name, &e.path(), len));
        }
    }

    // Secrets.
    let mut secrets: Vec<(Option<&str>, PathBuf)> = vec![(None, m.root.join(AGENT_ENV_FILE))];
    // Each backend once, with the homes whose sentinels use it.
    let mut bases: Vec<(String, Vec<String>)> = Vec::new();
    for h in &ctx.homes {
        let Ok(home) = Home::new(&m.root, &h.name) else {
            continue;
        };
        secrets.push((Some(&h.name), home.token_path()));
        match home.load_config() {
            Ok(c) => match bases.iter_mut().find(|(b, _)| *b == c.base_url) {
                Some((_, hs)) => hs.push(h.name.clone()),
                None => bases.push((c.base_url, vec![h.name.clone()])),
            },
            Err(e) => out.push(f(
                Level::Error,
                Some(&h.name),
                format!("config {}", home.config_path().display()),
                e.to_string(),
                "fix the file by hand, or redeem the home again (`hoop provision redeem`)".into(),
            )),
        }
    }
    for (home, path) in &secrets {
        if let Some(mode) = file_mode(path) {
            out.extend(secret_mode_finding(*home, path, mode));
        }
    }

    // Clock skew, once per backend; an unreachable backend is an error for
    // every home whose sentinel should be running against it.
    for (base, homes) in &bases {
        match backend_time(base) {
            Ok(t) => {
                let skew = match now.duration_since(t) {
                    Ok(d) => d.as_secs() as i64,
                    Err(e) => -(e.duration().as_secs() as i64),
                };
                out.extend(skew_finding(base, skew));
            }
            Err(ClockError::Unreachable(e)) => {
                for h in homes {
                    out.push(unreachable_finding(h, base, &e, &m.root));
                }
            }
            Err(ClockError::Unreadable(e)) => out.push(f(
                Level::Warning,
                None,
                format!("clock {base}"),
                format!("could not read the backend's clock: {e}"),
                "compare the clocks by hand (`date -u` here and on the backend)".into(),
            )),
        }
    }

    // PATH in the units reaches claude and node.
    for h in &ctx.homes {
        let unit = match m.os {
            Os::Linux => manifest::systemd_unit_dir(m).join(units::SYSTEMD_UNIT_FILE),
            Os::Macos => manifest::plist_path(m, &h.name),
        };
        let Some(path) = std::fs::read(&unit).ok().and_then(|b| units::unit_path(&b)) else {
            continue; // a missing unit is already a drift finding
        };
        let claude = hoop_sentinel::config::SentinelConfig::load(&h.dir)
            .map(|c| c.claude_bin)
            .unwrap_or_else(|_| PathBuf::from(TOOLS[0]));
        for program in [claude, PathBuf::from(TOOLS[1])] {
            if !reachable(&program, &path) {
                out.push(f(
                    Level::Error,
                    Some(&h.name),
                    format!("unit {}", unit.display()),
                    format!(
                        "its PATH does not reach `{}`: the agent cannot start",
                        program.display()
                    ),
                    "install it, then run `hoop install --apply --path-from-shell` from a \
                     shell where `command -v claude node` finds both (the unit's PATH is \
                     built from that shell and recorded)"
                        .into(),
                ));
            }
        }
    }

    // Services that stopped for good.
    for h in &ctx.homes {
        let unit = manifest::service_name(m, ctx.manager, &h.name);
        let ask = |call: Call| ctx.runner.run(&call).ok().map(|o| o.stdout);
        let found = match ctx.manager {
            Manager::Systemd => {
                let state = ask(Call::new("systemctl", &["--user", "is-active", &unit]));
                stopped_finding(&h.name, &unit, state.as_deref(), None)
            }
            Manager::Launchd => {
                let print = ask(Call::new(
                    "launchctl",
                    &["print", &format!("gui/{}/{unit}", m.uid)],
                ));
                stopped_finding(&h.name, &unit, None, print.as_deref())
            }
            Manager::None => None,
        };
        out.extend(found);
    }

    // launchd runs agents only in a logged-in user's gui/<uid> domain.
    if ctx.manager == Manager::Launchd {
        let domain = format!("gui/{}", m.uid);
        let answered = ctx
            .runner
            .run(&Call::new("launchctl", &["print", &domain]))
            .is_ok_and(|o| o.success());
        out.extend(gui_domain_finding(&m.user, m.uid, answered));
    }

    // Linger (systemd only).
    if ctx.manager == Manager::Systemd {
        let call = Call::new(
            "loginctl",
            &["show-user", &m.user, "--property=Linger", "--value"],
        );
        let answer = ctx
            .runner
            .run(&call)
            .ok()
            .filter(|o| o.success())
            .map(|o| o.stdout);
        out.extend(linger_finding(&m.user, answer.as_deref()));
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.level));
    out
}

fn file_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_table() {
        for (skew, want) in [
            (0, None),
            (5, None),
            (-5, None),
            (6, Some(Level::Warning)),
            (-60, Some(Level::Warning)),
            (61, Some(Level::Error)),
            (-3600, Some(Level::Error)),
        ] {
            let got = skew_finding("http://b", skew);
            assert_eq!(got.as_ref().map(|f| f.level), want, "{skew}");
            if let Some(g) = got {
                assert!(
                    g.problem
                        .contains(if skew > 0 { "ahead" } else { "behind" })
                );
                assert!(g.fix.contains("time"));
            }
        }
    }

    #[test]
    fn secret_modes() {
        let p = Path::new("/r/bolt/.token.json");
        for (mode, bad) in [
            (0o600, false),
            (0o400, false),
            (0o700, false),
            (0o640, true),
            (0o644, true),
            (0o604, true),
        ] {
            let got = secret_mode_finding(Some("bolt"), p, mode);
            assert_eq!(got.is_some(), bad, "{mode:o}");
            if let Some(g) = got {
                assert_eq!(g.level, Level::Error);
                assert_eq!(g.fix, "chmod 600 /r/bolt/.token.json");
                assert_eq!(g.home.as_deref(), Some("bolt"));
            }
        }
    }

    #[test]
    fn linger_answers() {
        assert_eq!(linger_finding("ops", Some("yes\n")), None);
        for a in [Some("no\n"), Some(""), None] {
            let g = linger_finding("ops", a).unwrap();
            assert_eq!(g.level, Level::Warning);
            assert_eq!(g.fix, "loginctl enable-linger ops");
        }
    }

    #[test]
    fn systemd_linger_and_a_failed_unit_are_asked_through_the_runner() {
        use crate::service::{CallOutput, RecordingRunner};
        let dir = tempfile::tempdir().unwrap();
        let user_home = dir.path().join("u");
        let root = user_home.join(".hoop");
        let home = Home::new(&root, "bolt").unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        std::fs::write(
            home.config_path(),
            r#"{"base_url":"http://127.0.0.1:9","email":"a@b"}"#,
        )
        .unwrap();
        let r = RecordingRunner::new();
        let reply = |out: &str| CallOutput {
            code: Some(3),
            stdout: out.into(),
            stderr: String::new(),
        };
        r.answer(|c| c.program == "loginctl", reply("no\n"));
        r.answer(
            |c| c.args.get(1).map(String::as_str) == Some("is-active"),
            reply("failed\n"),
        );
        let ctx = Ctx {
            machine: crate::manifest::Machine {
                os: Os::Linux,
                user: "ops".into(),
                uid: 1000,
                user_home: user_home.clone(),
                xdg_config_home: None,
                root: root.clone(),
                hoop_binary: "/bin/sh".into(),
                tool_dirs: vec![],
                installed_units: vec![],
                broken: vec![],
                dropins: vec![],
                foreign_root: None,
                owned_units: None,
            },
            homes: vec![crate::install::home_entry(&home, &user_home).unwrap()],
            manager: Manager::Systemd,
            runner: &r,
            manager_problem: None,
            waits: Default::default(),
        };
        let found = doctor(&ctx, &|_| Ok(SystemTime::now()), SystemTime::now());
        let items: Vec<&str> = found.iter().map(|f| f.item.as_str()).collect();
        assert!(items.contains(&"linger ops"), "{items:?}");
        assert!(
            items.contains(&"service hoop-sentinel@bolt.service"),
            "{items:?}"
        );
        let calls: Vec<String> = r.calls().iter().map(ToString::to_string).collect();
        assert!(calls.contains(&"systemctl --user is-active hoop-sentinel@bolt.service".into()));
        assert!(calls.contains(&"loginctl show-user ops --property=Linger --value".into()));
        // Every call went to a service manager program, through the runner.
        for c in r.calls() {
            assert!(
                ["systemctl", "loginctl"].contains(&c.program.as_str()),
                "{c}"
            );
        }
    }

    #[test]
    fn prompt_files() {
        for (file, len, want) in [
            ("core.md", 10, None),
            ("workroom.md", 10, None),
            ("multi_ai.md", 10, None),
            ("core.md", 0, Some("empty")),
            ("multiai.md", 10, Some("not a prompt part")),
            ("core.txt", 10, Some("not a prompt part")),
            ("task.md", 10, Some("not a prompt part")),
        ] {
            let got = prompt_file_finding("bolt", &Path::new("/r/bolt/prompts").join(file), len);
            assert_eq!(
                got.as_ref().map(|g| g
                    .problem
                    .split(':')
                    .next()
                    .unwrap()
                    .split(" (")
                    .next()
                    .unwrap()),
                want,
                "{file} {len}"
            );
        }
    }

    /// `launchctl print gui/501/<label>` of an agent launchd gave up on
    /// with EX_CONFIG, in the form launchd prints it: a code it has a name
    /// for is followed by the name (`78: EX_CONFIG`). launchctl(1)'s
    /// `print` is documented as not an API; this form is the one published
    /// in public launchd debugging notes and test fixtures (found through
    /// the code index: "last exit code = 78: EX_CONFIG", "last exit code =
    /// (never exited)", "last exit code = 0").
    const LAUNCHD_PRINT_EX_CONFIG: &str = "gui/501/dev.hoop.sentinel.bolt = {\n\
        \tactive count = 0\n\
        \tpath = /Users/ops/Library/LaunchAgents/dev.hoop.sentinel.bolt.plist\n\
        \ttype = LaunchAgent\n\
        \tstate = not running\n\
        \n\
        \tprogram = /Users/ops/.hoop/bin/hoop\n\
        \truns = 3\n\
        \tlast exit code = 78: EX_CONFIG\n\
        }\n";

    #[test]
    fn launchd_exit_codes_are_read_in_every_form_launchd_prints() {
        for (print, want) in [
            (LAUNCHD_PRINT_EX_CONFIG, Some(78)),
            ("\tlast exit code = 78\n", Some(78)),
            ("\tlast exit code = 3\n", Some(3)),
            ("\tlast exit code = 0\n", Some(0)),
            ("\tlast exit code = -9\n", Some(-9)),
            ("\tlast exit code = (never exited)\n", None),
            ("\tstate = running\n", None),
        ] {
            assert_eq!(launchd_last_exit(print), want, "{print:?}");
        }
    }

    /// A Mac with no GUI login: doctor asks `launchctl print gui/<uid>`
    /// and says no sentinel runs until someone logs in.
    #[test]
    fn a_mac_without_a_gui_login_is_named() {
        use crate::service::{CallOutput, RecordingRunner};
        let dir = tempfile::tempdir().unwrap();
        let user_home = dir.path().join("u");
        let root = user_home.join(".hoop");
        std::fs::create_dir_all(&root).unwrap();
        let machine = crate::manifest::Machine {
            os: Os::Macos,
            user: "ops".into(),
            uid: 501,
            user_home,
            xdg_config_home: None,
            root,
            hoop_binary: "/bin/sh".into(),
            tool_dirs: vec![],
            installed_units: vec![],
            broken: vec![],
            dropins: vec![],
            foreign_root: None,
            owned_units: None,
        };
        for (answer, want) in [(0, false), (113, true)] {
            let r = RecordingRunner::new();
            r.answer(
                |c| c.args == ["print", "gui/501"],
                CallOutput {
                    code: Some(answer),
                    stdout: String::new(),
                    stderr: "Bad request.\nCould not find domain for port identifier: gui/501\n"
                        .into(),
                },
            );
            let ctx = Ctx {
                machine: machine.clone(),
                homes: vec![],
                manager: Manager::Launchd,
                runner: &r,
                manager_problem: None,
                waits: Default::default(),
            };
            let found = doctor(&ctx, &|_| Ok(SystemTime::now()), SystemTime::now());
            let gui: Vec<String> = found
                .iter()
                .filter(|f| f.item == "launchd gui/501")
                .map(ToString::to_string)
                .collect();
            assert_eq!(!gui.is_empty(), want, "{found:#?}");
            if want {
                assert_eq!(
                    gui,
                    [
                        "error   launchd gui/501: ops is not logged in at the screen, so launchd \
                      has no gui/501 domain and runs none of its agents: no sentinel runs until \
                      someone logs in (and none after a reboot without automatic login)\n        \
                      fix: turn on automatic login for ops (System Settings → Users & Groups), \
                      or keep a GUI session of ops logged in; `launchctl print gui/501` answers \
                      once there is one"
                    ]
                );
            }
            let calls: Vec<String> = r.calls().iter().map(ToString::to_string).collect();
            assert!(
                calls.contains(&"launchctl print gui/501".to_string()),
                "{calls:?}"
            );
        }
    }

    #[test]
    fn stopped_services() {
        let sd = "hoop-sentinel@bolt.service";
        let ld = "dev.hoop.sentinel.bolt";
        for (unit, state, print, want) in [
            (sd, Some("failed\n"), None, true),
            (sd, Some("active\n"), None, false),
            (sd, Some("inactive\n"), None, false),
            (sd, None, None, false),
            (ld, None, Some(LAUNCHD_PRINT_EX_CONFIG), true),
            (
                ld,
                None,
                Some("\tstate = not running\n\tlast exit code = 78\n"),
                true,
            ),
            (ld, None, Some("\tlast exit code = 0\n"), false),
            (ld, None, Some("\tlast exit code = 3\n"), true),
            (ld, None, Some("\tlast exit code = 1\n"), false),
            (ld, None, Some("\tlast exit code = (never exited)\n"), false),
        ] {
            let got = stopped_finding("bolt", unit, state, print);
            assert_eq!(got.is_some(), want, "{unit} {state:?} {print:?}");
            if let Some(g) = got {
                assert_eq!(g.level, Level::Error);
                assert_eq!(g.home.as_deref(), Some("bolt"));
                if unit == sd {
                    assert!(
                        g.fix
                            .contains("journalctl --user -u hoop-sentinel@bolt.service")
                    );
                } else {
                    assert!(g.problem.contains(if print.unwrap().contains("78") {
                        "configuration"
                    } else {
                        "account lock"
                    }));
                }
            }
        }
    }

    #[test]
    fn build_directories() {
        for (p, want) in [
            ("/home/u/src/hoop/target/release/hoop", true),
            ("/home/u/src/hoop/target/debug/hoop", true),
            ("/home/u/.local/lib/hoop/hoop", false),
            ("/srv/target/hoop", false),
            ("/opt/release/hoop", false),
        ] {
            assert_eq!(build_dir_finding(Path::new(p)).is_some(), want, "{p}");
        }
    }

    #[test]
    fn http_dates() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            784111777
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }
}
