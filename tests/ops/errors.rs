//! Each operator-facing refusal of the operator's commands (`install`,
//! `status`, `doctor`, `restart`, `provision`, `mcp`, `hooks`, `demo`,
//! `completions`, `sentinel`, `say`, `send-image`, `read`, `pass`, `usage`,
//! `worker`, `backend`), asserted on the exact line an operator reads: its
//! cause once, and the fix.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `hoop ARGS` with HOME and the hoop root under `dir`, nothing inherited
/// but PATH; stdin empty.
fn hoop(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("HOOP_ROOT", dir.join("root"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn refused(out: &Output, code: i32, line: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).lines().any(|l| l == line),
        "want the line\n{line}\nin\n{}",
        text(&out.stderr)
    );
}

#[test]
fn install_and_doctor_name_a_missing_binary_and_a_missing_home() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &hoop(
            d.path(),
            &[
                "install",
                "--plan",
                "--manager",
                "none",
                "--binary",
                "/nonexistent/hoop",
            ],
        ),
        1,
        "hoop: /nonexistent/hoop does not exist: No such file or directory (os error 2)",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["doctor", "--manager", "none"])
        .env_clear()
        .env("HOOP_ROOT", d.path().join("root"))
        .output()
        .unwrap();
    refused(&out, 1, "hoop: no home directory: set HOME");
}

#[test]
fn restart_names_a_home_that_is_not_there() {
    let d = tempfile::tempdir().unwrap();
    let out = hoop(d.path(), &["restart", "nope", "--manager", "none"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).lines().any(|l| l
            == format!(
                "nope: FAILED: no home at {} (no config.json); fix: `hoop status` lists this \
                 machine's homes",
                d.path().join("root/nope").display()
            )),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn redeem_refuses_an_empty_stdin_key_and_an_email_without_force() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &hoop(
            d.path(),
            &[
                "provision",
                "redeem",
                "--key",
                "-",
                "--home",
                "kai",
                "--url",
                "http://127.0.0.1:9",
            ],
        ),
        1,
        "hoop: --key -: stdin had no key",
    );
    let out = hoop(
        d.path(),
        &[
            "provision",
            "redeem",
            "--email",
            "kai@x",
            "--home",
            "kai",
            "--url",
            "http://127.0.0.1:9",
        ],
    );
    refused(
        &out,
        2,
        "error: the following required arguments were not provided:",
    );
    assert!(
        text(&out.stderr).contains("  --force"),
        "{}",
        text(&out.stderr)
    );
    assert!(!d.path().join("root").exists(), "nothing written");
}

#[test]
fn mcp_add_line_names_a_home_without_a_key_and_a_bad_key() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &hoop(d.path(), &["mcp", "add-line", "--home", "kai"]),
        1,
        &format!(
            "hoop: reading {} (is kai a reinforcement home?): No such file or directory (os error 2)",
            d.path().join("root/kai/.mcp_key").display()
        ),
    );
    let out = hoop(
        d.path(),
        &["mcp", "add-line", "--key", "hoopprov_not_an_mcp_key"],
    );
    refused(
        &out,
        1,
        "hoop: not an MCP key (expected hoopmcp_ followed by letters, digits or '_')",
    );
    assert!(!text(&out.stderr).contains("hoopprov_not"), "never echoed");
}

#[test]
fn hooks_install_names_a_broken_settings_file_and_a_drifted_one() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.json");
    std::fs::write(&bad, "{bad").unwrap();
    refused(
        &hoop(
            d.path(),
            &[
                "hooks",
                "install",
                "--claude",
                "--settings",
                bad.to_str().unwrap(),
            ],
        ),
        1,
        &format!(
            "hoop: {} is not valid JSON (key must be a string at line 1 column 2); fix it by \
             hand first",
            bad.display()
        ),
    );
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        "{bad",
        "left as it was"
    );
    let empty = d.path().join("empty.json");
    std::fs::write(&empty, "{}").unwrap();
    refused(
        &hoop(
            d.path(),
            &[
                "hooks",
                "install",
                "--claude",
                "--check",
                "--settings",
                empty.to_str().unwrap(),
            ],
        ),
        1,
        &format!(
            "{}: hooks differ from what `hoop hooks install` makes; fix: run the same command \
             without --check",
            empty.display()
        ),
    );
}

#[test]
fn completions_name_the_shells_it_knows() {
    let d = tempfile::tempdir().unwrap();
    let out = hoop(d.path(), &["completions", "tcsh"]);
    refused(&out, 2, "error: invalid value 'tcsh' for '<SHELL>'");
    assert!(
        text(&out.stderr).contains("[possible values: bash, zsh, fish]"),
        "{}",
        text(&out.stderr)
    );
}

/// A home directory without `config.json` (never redeemed here, or a
/// mistyped name): every command that needs the home says so in one line,
/// with the fix, and the cause is not repeated after it.
#[test]
fn a_home_without_config_is_named_once_by_each_command() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("root/ghost")).unwrap();
    let line = format!(
        "no home at {} (no config.json); fix: `hoop status` lists this machine's homes",
        d.path().join("root/ghost").display()
    );
    refused(
        &hoop(d.path(), &["sentinel", "run", "--home", "ghost"]),
        78,
        &format!("hoop: {line}"),
    );
    refused(
        &hoop(d.path(), &["read", "--home", "ghost", "--room", "5"]),
        1,
        &format!("hoop: home \"ghost\": {line}"),
    );
    refused(
        &hoop(d.path(), &["say", "--home", "ghost", "--room", "5", "hi"]),
        1,
        &format!("hoop: home \"ghost\": {line}"),
    );
    // A config.json that cannot be read or parsed: the cause once.
    std::fs::create_dir_all(d.path().join("root/odd/config.json")).unwrap();
    refused(
        &hoop(d.path(), &["read", "--home", "odd", "--room", "5"]),
        1,
        &format!(
            "hoop: home \"odd\": reading {}: Is a directory (os error 21)",
            d.path().join("root/odd/config.json").display()
        ),
    );
    std::fs::create_dir_all(d.path().join("root/cut")).unwrap();
    std::fs::write(d.path().join("root/cut/config.json"), "{").unwrap();
    refused(
        &hoop(d.path(), &["read", "--home", "cut", "--room", "5"]),
        1,
        &format!(
            "hoop: home \"cut\": parsing {}: EOF while parsing an object at line 1 column 1",
            d.path().join("root/cut/config.json").display()
        ),
    );
    refused(
        &hoop(d.path(), &["sentinel", "run", "--home", "../x"]),
        78,
        "hoop: invalid home name \"../x\": use letters, digits, '-', '_' and '.' (not starting \
         with '.')",
    );
}

#[test]
fn send_image_names_a_file_that_is_no_image() {
    let d = tempfile::tempdir().unwrap();
    let txt = d.path().join("notes.txt");
    std::fs::write(&txt, "hi").unwrap();
    refused(
        &hoop(
            d.path(),
            &[
                "send-image",
                "--home",
                "kai",
                "--room",
                "5",
                "--file",
                txt.to_str().unwrap(),
            ],
        ),
        1,
        &format!(
            "hoop: {}: not an image type the backend takes (png, jpeg, gif, webp)",
            txt.display()
        ),
    );
}

#[test]
fn pass_refuses_a_room_nothing_was_shown_in_and_records_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out = hoop(
        d.path(),
        &["pass", "--home", "kai", "--room", "5", "not for me"],
    );
    refused(
        &out,
        1,
        "hoop: not passed, nothing recorded: nothing in room 5 was shown to you yet, so \
         nothing can be passed on: read it first with hoop read --home kai --room 5",
    );
    assert!(
        !d.path().join("root/kai").exists(),
        "nothing written in the home"
    );
}

#[test]
fn usage_names_a_bad_day_and_a_backwards_range() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &hoop(d.path(), &["usage", "--since", "2026-13-01"]),
        1,
        "hoop: --since \"2026-13-01\": expected YYYY-MM-DD",
    );
    refused(
        &hoop(
            d.path(),
            &["usage", "--since", "2026-02-01", "--until", "2026-01-01"],
        ),
        1,
        "hoop: --since is after --until",
    );
}

#[test]
fn worker_spawn_names_a_bad_agent_and_an_empty_prompt() {
    let d = tempfile::tempdir().unwrap();
    let spawn = |extra: &[&str]| {
        let mut args = vec![
            "worker", "spawn", "--home", "kai", "--card", "3", "--title", "t",
        ];
        args.extend_from_slice(extra);
        hoop(d.path(), &args)
    };
    refused(
        &spawn(&["--agent", "codex", "--", "fix", "it"]),
        1,
        "hoop: --agent is `claude` or `cursor-agent`, not \"codex\"",
    );
    refused(&spawn(&["--", "   "]), 1, "hoop: the prompt is empty");
    let empty = d.path().join("prompt.md");
    std::fs::write(&empty, "\n\n").unwrap();
    refused(
        &spawn(&["--", empty.to_str().unwrap()]),
        1,
        "hoop: the prompt is empty",
    );
}

#[test]
fn backend_commands_name_a_missing_admin_token_and_the_fix() {
    let d = tempfile::tempdir().unwrap();
    refused(
        &hoop(
            d.path(),
            &["backend", "card", "list", "--url", "http://127.0.0.1:9"],
        ),
        1,
        &format!(
            "hoop: no HOOP_ADMIN_TOKEN and cannot read the admin token file {}: No such file or \
             directory (os error 2); fix: set HOOP_ADMIN_TOKEN, or point --admin-token-file at \
             the file `hoop backend serve` wrote",
            d.path().join("root/backend/admin.token").display()
        ),
    );
}
