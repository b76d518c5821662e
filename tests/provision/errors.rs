//! The one rendering of an error chain (issue 20 item 9), through the real
//! binary: the operator's last line names each cause once, innermost last,
//! with the URL and the OS cause; a refused key says to ask the admin for a
//! new one and is never called usable.

use std::process::{Command, Stdio};

use super::{World, text};

/// `hoop ARGS` with a fresh root, nothing inherited but `PATH`; its stderr.
async fn stderr_of(args: &[&str], root: &std::path::Path) -> (Option<i32>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOOP_ROOT", root)
        .env("HOOP_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || c.output().unwrap()),
    )
    .await
    .expect("hoop exits within 60 s")
    .unwrap();
    (out.status.code(), text(&out.stderr))
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_backend_names_the_url_and_the_os_cause_once() {
    let root = tempfile::tempdir().unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let key = format!("hoopprov_{}", "0".repeat(64));
    let url = format!("http://127.0.0.1:{port}");
    let (code, stderr) = stderr_of(
        &[
            "provision",
            "redeem",
            "--key",
            &key,
            "--home",
            "kai",
            "--url",
            &url,
        ],
        root.path(),
    )
    .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        last_line(&stderr),
        format!(
            "hoop: the redeem did not happen (nothing was created and the key was not spent): \
             cannot reach http://127.0.0.1:{port}/v1/provision-keys/redeem: error sending \
             request: client error (Connect): tcp connect error: Connection refused (os error \
             111)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(&key), "the key is never printed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_says_to_ask_the_admin_and_is_never_called_usable() {
    let w = World::start().await;
    let root = tempfile::tempdir().unwrap();
    let key = format!("hoopprov_{}", "0".repeat(64));
    let (code, stderr) = stderr_of(
        &[
            "provision",
            "redeem",
            "--key",
            &key,
            "--home",
            "kai",
            "--url",
            &w.base(),
        ],
        root.path(),
    )
    .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        last_line(&stderr),
        "hoop: the backend refused the provisioning key, so nothing was created: refused (403 \
         key_invalid): unknown, expired or already redeemed provisioning key; this key will \
         not work again: ask the admin for a new one",
        "{stderr}"
    );
    assert!(!stderr.contains("usable"), "{stderr}");
}
