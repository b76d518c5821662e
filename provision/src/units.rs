//! Service units rendered from the templates in `launchd/` and `systemd/`:
//! pure functions from a home's facts to the bytes of its unit file.
//!
//! The restart policy is chosen together with the sentinel's exit codes
//! (`hoop_core::limits::SENTINEL_EXIT_*`): systemd lists them in
//! `RestartPreventExitStatus=`; launchd has no such key, so its
//! `ThrottleInterval` keeps a fatal exit to one retry a minute.

use std::path::{Path, PathBuf};

use hoop_core::limits;

/// The systemd user template, as shipped.
pub const SYSTEMD_TEMPLATE: &str = include_str!("../../systemd/hoop-sentinel@.service");
/// The launchd agent template, as shipped.
pub const LAUNCHD_TEMPLATE: &[u8] = include_bytes!("../../launchd/sentinel.plist");
/// The systemd template unit's file name.
pub const SYSTEMD_UNIT_FILE: &str = "hoop-sentinel@.service";
/// Prefix of every launchd label (one label per home).
pub const LAUNCHD_LABEL_PREFIX: &str = "dev.hoop.sentinel.";

/// The exit codes after which a unit must not restart the sentinel.
pub const NO_RESTART_EXIT_CODES: [u8; 2] = [
    limits::SENTINEL_EXIT_LOCK_HELD,
    limits::SENTINEL_EXIT_CONFIG,
];

/// What a unit needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitFacts {
    /// The stable `hoop` link (never a build directory).
    pub hoop_bin: PathBuf,
    /// `PATH` for the daemon and the agent it starts (reaches `claude`, `node`).
    pub path: String,
    /// The hoop root (`HOOP_ROOT`).
    pub root: PathBuf,
}

/// The systemd instance name of a home's unit.
pub fn systemd_instance(home: &str) -> String {
    format!("hoop-sentinel@{home}.service")
}

/// The launchd label of a home.
pub fn launchd_label(home: &str) -> String {
    format!("{LAUNCHD_LABEL_PREFIX}{home}")
}

/// Quote a value for a unit file: double quotes, `\` and `"` escaped, `%`
/// doubled (systemd expands `%` specifiers everywhere). A `$` stays as it
/// is: what is rendered from data is an `Environment=` value or the
/// executable path of `ExecStart=`, neither of which systemd expands
/// (`$VAR` expansion applies to a command's arguments, which here are fixed
/// words and `%i`); `systemd-analyze verify` of a root holding `$` checks
/// it.
fn systemd_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Render `hoop-sentinel@.service` (one template for every home of a root).
pub fn systemd_unit(f: &UnitFacts) -> String {
    let codes = NO_RESTART_EXIT_CODES
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    SYSTEMD_TEMPLATE
        .replace(
            "{{HOOP_BIN}}",
            &systemd_quote(&f.hoop_bin.to_string_lossy()),
        )
        .replace("{{ENV_PATH}}", &systemd_quote(&format!("PATH={}", f.path)))
        .replace(
            "{{ENV_HOOP_ROOT}}",
            &systemd_quote(&format!(
                "{}={}",
                hoop_core::home::ROOT_ENV,
                f.root.to_string_lossy()
            )),
        )
        .replace("{{RESTART_SEC}}", &limits::UNIT_RESTART_SEC.to_string())
        .replace("{{NO_RESTART_EXIT_CODES}}", &codes)
}

#[derive(Debug, thiserror::Error)]
pub enum UnitError {
    #[error("the launchd template is not a property list: {0}")]
    Template(plist::Error),
    #[error("writing the property list: {0}")]
    Write(plist::Error),
}

/// Render a home's launchd agent: the template with its placeholders filled
/// and `ThrottleInterval` set, written back as an XML property list.
pub fn launchd_plist(f: &UnitFacts, home: &str, log_dir: &Path) -> Result<Vec<u8>, UnitError> {
    let mut v = plist::Value::from_reader_xml(LAUNCHD_TEMPLATE).map_err(UnitError::Template)?;
    let subst = |s: &str| {
        s.replace("{{LABEL}}", &launchd_label(home))
            .replace("{{HOOP_BIN}}", &f.hoop_bin.to_string_lossy())
            .replace("{{HOME_NAME}}", home)
            .replace("{{PATH}}", &f.path)
            .replace("{{HOOP_ROOT}}", &f.root.to_string_lossy())
            .replace("{{LOG_DIR}}", &log_dir.to_string_lossy())
    };
    fill(&mut v, &subst);
    if let Some(d) = v.as_dictionary_mut() {
        d.insert(
            "ThrottleInterval".into(),
            plist::Value::Integer(limits::LAUNCHD_THROTTLE_SEC.into()),
        );
    }
    let mut out = Vec::new();
    plist::to_writer_xml(&mut out, &v).map_err(UnitError::Write)?;
    out.push(b'\n');
    Ok(out)
}

fn fill(v: &mut plist::Value, subst: &impl Fn(&str) -> String) {
    match v {
        plist::Value::String(s) => *s = subst(s),
        plist::Value::Array(a) => a.iter_mut().for_each(|x| fill(x, subst)),
        plist::Value::Dictionary(d) => {
            for (_, x) in d.iter_mut() {
                fill(x, subst)
            }
        }
        _ => {}
    }
}

/// The value of `PATH` a rendered unit gives the daemon, if it sets one.
pub fn unit_path(bytes: &[u8]) -> Option<String> {
    unit_env(bytes, "PATH")
}

/// The value of `key` in a rendered unit's environment (a plist's
/// `EnvironmentVariables`, a systemd unit's `Environment=` lines, as the
/// renderer quotes them).
pub fn unit_env(bytes: &[u8], key: &str) -> Option<String> {
    if let Ok(v) = plist::Value::from_reader_xml(bytes) {
        return v
            .as_dictionary()?
            .get("EnvironmentVariables")?
            .as_dictionary()?
            .get(key)?
            .as_string()
            .map(str::to_string);
    }
    let text = std::str::from_utf8(bytes).ok()?;
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix("Environment=")?;
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v);
        let v = v.strip_prefix(key)?.strip_prefix('=')?;
        Some(
            v.replace("%%", "%")
                .replace("\\\"", "\"")
                .replace("\\\\", "\\"),
        )
    })
}

/// The macOS folders launchd jobs cannot read (TCC): a job whose home,
/// working tree or binary lives there fails with EPERM, silently.
pub const PROTECTED_FOLDERS: [&str; 3] = ["Documents", "Desktop", "Downloads"];

/// `Some("~/Documents")` when `path` lies under one of the protected folders
/// of the user whose home directory is `user_home`.
pub fn protected_folder(user_home: &Path, path: &Path) -> Option<String> {
    PROTECTED_FOLDERS
        .iter()
        .find(|f| path.starts_with(user_home.join(f)))
        .map(|f| format!("~/{f}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> UnitFacts {
        UnitFacts {
            hoop_bin: "/home/u/.hoop/bin/hoop".into(),
            path: "/home/u/.hoop/bin:/opt/node/bin:/usr/bin:/bin".into(),
            root: "/home/u/.hoop".into(),
        }
    }

    #[test]
    fn the_systemd_unit_stops_restarting_on_the_sentinels_fatal_exit_codes() {
        let u = systemd_unit(&facts());
        assert!(!u.contains("{{"), "{u}");
        assert!(u.contains("\nRestart=always\n"), "{u}");
        assert!(u.contains("\nRestartSec=10\n"), "{u}");
        assert!(u.contains("\nRestartPreventExitStatus=3 78\n"), "{u}");
        assert!(
            u.contains("\nExecStart=\"/home/u/.hoop/bin/hoop\" sentinel run --home %i\n"),
            "{u}"
        );
        assert!(
            u.contains("\nEnvironment=\"PATH=/home/u/.hoop/bin:/opt/node/bin:/usr/bin:/bin\"\n")
        );
        assert!(u.contains("\nEnvironment=\"HOOP_ROOT=/home/u/.hoop\"\n"));
        // A user manager has no network-online.target to wait on.
        assert!(
            !u.lines()
                .any(|l| !l.starts_with('#') && l.contains("network-online.target")),
            "{u}"
        );
    }

    #[test]
    fn systemd_values_are_quoted_and_percent_escaped() {
        let mut f = facts();
        f.hoop_bin = "/home/u/my tools/100%/$HOME/hoop".into();
        f.root = "/home/u/$x %h/.hoop".into();
        let u = systemd_unit(&f);
        assert!(u.contains("ExecStart=\"/home/u/my tools/100%%/$HOME/hoop\" sentinel"));
        assert!(u.contains("Environment=\"HOOP_ROOT=/home/u/$x %%h/.hoop\"\n"));
        assert_eq!(systemd_quote(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    #[test]
    fn the_plist_parses_back_with_every_key_of_the_right_type() {
        let bytes = launchd_plist(&facts(), "bolt", Path::new("/home/u/.hoop/bolt/logs")).unwrap();
        let v = plist::Value::from_reader_xml(bytes.as_slice()).unwrap();
        let d = v.as_dictionary().unwrap();
        assert_eq!(
            d.get("Label").and_then(|x| x.as_string()),
            Some("dev.hoop.sentinel.bolt")
        );
        let args: Vec<&str> = d
            .get("ProgramArguments")
            .and_then(|x| x.as_array())
            .unwrap()
            .iter()
            .map(|x| x.as_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "/home/u/.hoop/bin/hoop",
                "sentinel",
                "run",
                "--home",
                "bolt"
            ]
        );
        assert!(Path::new(args[0]).is_absolute());
        assert_eq!(d.get("RunAtLoad").and_then(|x| x.as_boolean()), Some(true));
        assert_eq!(d.get("KeepAlive").and_then(|x| x.as_boolean()), Some(true));
        assert_eq!(
            d.get("ThrottleInterval")
                .and_then(|x| x.as_unsigned_integer()),
            Some(limits::LAUNCHD_THROTTLE_SEC)
        );
        let env = d
            .get("EnvironmentVariables")
            .and_then(|x| x.as_dictionary())
            .unwrap();
        assert_eq!(
            env.get("PATH").and_then(|x| x.as_string()),
            Some(facts().path.as_str())
        );
        assert_eq!(
            env.get("HOOP_ROOT").and_then(|x| x.as_string()),
            Some("/home/u/.hoop")
        );
        for (key, file) in [
            ("StandardOutPath", "sentinel.out.log"),
            ("StandardErrorPath", "sentinel.err.log"),
        ] {
            assert_eq!(
                d.get(key).and_then(|x| x.as_string()),
                Some(format!("/home/u/.hoop/bolt/logs/{file}").as_str()),
                "{key}"
            );
        }
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(!text.contains("{{"), "{text}");
        assert_eq!(unit_path(&bytes).as_deref(), Some(facts().path.as_str()));
    }

    #[test]
    fn unit_path_reads_the_systemd_unit_too() {
        let u = systemd_unit(&facts());
        assert_eq!(
            unit_path(u.as_bytes()).as_deref(),
            Some(facts().path.as_str())
        );
    }

    #[test]
    fn protected_folders_are_named() {
        let h = Path::new("/Users/u");
        for (p, want) in [
            ("/Users/u/Documents/repo/target/hoop", Some("~/Documents")),
            ("/Users/u/Desktop/x", Some("~/Desktop")),
            ("/Users/u/Downloads", Some("~/Downloads")),
            ("/Users/u/.hoop/bolt", None),
            ("/Users/u/DocumentsOld/x", None),
            ("/Users/other/Documents/x", None),
        ] {
            assert_eq!(protected_folder(h, Path::new(p)).as_deref(), want, "{p}");
        }
    }
}
