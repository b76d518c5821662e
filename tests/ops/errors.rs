//! Each operator-facing refusal of the operator's commands (`install`,
//! `status`, `doctor`, `restart`, `provision`, `mcp`, `hooks`, `demo`,
//! `completions`), asserted on the exact line an operator reads: its cause
//! once, and the fix.

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
