//! `hoop completions`: a script per shell, generated from the real command
//! line, that the shell accepts.

use std::process::Command;

fn script(shell: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(out.status.success(), "{shell}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Each shell's script has its shell's shape and names the subcommands.
#[test]
fn each_shell_gets_a_script_naming_the_subcommands() {
    let cases = [
        ("bash", "complete -F _hoop"),
        ("zsh", "#compdef hoop"),
        ("fish", "complete -c hoop"),
    ];
    for (shell, shape) in cases {
        let s = script(shell);
        assert!(s.contains(shape), "{shell}: no {shape:?}");
        for sub in ["sentinel", "say", "usage", "completions"] {
            assert!(s.contains(sub), "{shell}: {sub} missing");
        }
    }
}

/// bash loads the script and registers the completion for `hoop`.
#[test]
fn bash_accepts_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hoop.bash");
    std::fs::write(&path, script("bash")).unwrap();
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c"])
        .arg(format!("source {} && complete -p hoop", path.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("_hoop") && stdout.contains("hoop"),
        "{stdout}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_hoop"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bash") && err.contains("fish"), "{err}");
}
