//! `hoop backend serve` as a real child process, driven from the shell the
//! way an operator would: the first stdout line names the address, the admin
//! token lands in a 0600 file and never on stdout/stderr, every operator
//! command prints JSON of what it created, SIGTERM stops the server cleanly,
//! and `--db` keeps the data across restarts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Every wait here is bounded by this.
const WAIT: Duration = Duration::from_secs(20);

fn hoop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hoop"));
    c.env_remove("HOOP_ADMIN_TOKEN")
        .env_remove("HOOP_BACKEND_URL")
        .env_remove("HOOP_AGENT_SECRET")
        .env("HOOP_LOG", "info");
    c
}

/// The server child; killed on drop so a failing test leaves nothing behind.
struct Server {
    child: Child,
    url: String,
    stderr_path: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(root: &Path, db: &Path) -> Server {
    let stderr_path = root.join("serve.stderr");
    std::fs::create_dir_all(root).unwrap();
    let mut child = hoop()
        .args(["backend", "serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(db)
        .env("HOOP_ROOT", root)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("hoop backend serve starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        // Keep draining so the server never blocks on a full pipe.
        for _ in lines {}
    });
    let first = rx.recv_timeout(WAIT).expect("a first stdout line in time");
    let url = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Server {
        child,
        url,
        stderr_path,
    }
}

/// Run an operator command against `srv`; returns the output.
fn op(srv: &Server, root: &Path, args: &[&str]) -> Output {
    hoop()
        .arg("backend")
        .args(args)
        .env("HOOP_ROOT", root)
        .env("HOOP_BACKEND_URL", &srv.url)
        .output()
        .expect("operator command runs")
}

/// Run, require success, parse the one JSON line it printed.
fn op_json(srv: &Server, root: &Path, args: &[&str]) -> Value {
    let out = op(srv, root, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one JSON line: {text:?}");
    serde_json::from_str(&text).unwrap()
}

/// A minimal HTTP/1.1 exchange (Connection: close) → (status, JSON body).
fn http(
    url: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = bearer
        .map(|b| format!("Authorization: Bearer {b}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp).to_string();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let payload = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        // One or more chunks: join them.
        let mut out = String::new();
        let mut r = rest;
        while let Some((size, tail)) = r.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&tail[..n]);
            r = &tail[n + 2..];
        }
        out
    } else {
        rest.to_string()
    };
    let v = if payload.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&payload).unwrap_or(Value::String(payload))
    };
    (status, v)
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(Instant::now() < deadline, "the server stops in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_and_operate_from_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let db = dir.path().join("backend.sqlite");
    let mut srv = serve(&root, &db);

    // The admin token: a 0600 file under <HOOP_ROOT>/backend/.
    let token_file = root.join("backend").join("admin.token");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(token.len() >= 32);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let ann = op_json(
        &srv,
        &root,
        &[
            "user",
            "add",
            "--email",
            "ann@example.test",
            "--username",
            "ann",
        ],
    );
    let bolt = op_json(
        &srv,
        &root,
        &[
            "user",
            "add",
            "--email",
            "bolt@example.test",
            "--username",
            "bolt",
            "--nickname",
            "Bolt",
            "--agent",
        ],
    );
    assert_eq!(
        (ann["is_agent"].as_bool(), bolt["is_agent"].as_bool()),
        (Some(false), Some(true))
    );
    let room = op_json(
        &srv,
        &root,
        &[
            "room",
            "add",
            "--title",
            "ops",
            "--workroom",
            "--member",
            "ann",
            "--member",
            "bolt@example.test",
        ],
    );
    assert_eq!(room["is_workroom"], true);
    assert_eq!(room["ai_member_count"], 1);
    let room_id = room["id"].as_i64().unwrap().to_string();

    let msg = op_json(
        &srv,
        &root,
        &[
            "post",
            "--as",
            "ann",
            "--room",
            &room_id,
            "--mention",
            "bolt",
            "--mention",
            "everyone",
            "hi @bolt",
        ],
    );
    assert_eq!(msg["mentions"], json!([bolt["id"], "everyone"]));
    assert_eq!(msg["sender_username"], "ann");

    // The operator's posts take the REST text route's checks (production
    // runs no markdown gate there), and may seed kinds the toolkit must
    // tolerate; an image kind is refused (images have their own route).
    let voice = op_json(
        &srv,
        &root,
        &[
            "post", "--as", "ann", "--room", &room_id, "--kind", "voice", "**~**",
        ],
    );
    assert_eq!(
        (voice["kind"].as_str(), voice["body"].as_str()),
        (Some("voice"), Some("**~**"))
    );
    let refused = op(
        &srv,
        &root,
        &[
            "post", "--as", "ann", "--room", &room_id, "--kind", "image", "x",
        ],
    );
    assert!(!refused.status.success());
    let empty = op(
        &srv,
        &root,
        &["post", "--as", "ann", "--room", &room_id, " "],
    );
    assert!(!empty.status.success());
    assert!(String::from_utf8_lossy(&empty.stderr).contains("bad_request"));

    // The MCP key is printed once and works on /mcp.
    let key = op_json(&srv, &root, &["key", "mint", "--user", "bolt"]);
    let key = key["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("hoopmcp_"));
    let (st, v) = http(
        &srv.url,
        "POST",
        "/mcp",
        Some(&key),
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "chat_read", "arguments": {"conversation_id": room["id"]}}})),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["result"]["structuredContent"]["messages"][1]["body"],
        "hi @bolt"
    );

    // Revoking ends every live key of the account.
    let revoked = op_json(&srv, &root, &["key", "revoke", "--user", "bolt"]);
    assert_eq!(revoked["revoked"], 1, "{revoked}");
    let (st, _) = http(
        &srv.url,
        "POST",
        "/mcp",
        Some(&key),
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
    );
    assert_eq!(st, 401, "a revoked key is refused");

    let pk_now = op_json(&srv, &root, &["clock", "advance", "0"])["now"]
        .as_i64()
        .unwrap();
    let pk = op_json(
        &srv,
        &root,
        &[
            "provision-key",
            "create",
            "--kind",
            "sentinel",
            "--room",
            &room_id,
            "--ttl",
            "2d",
        ],
    );
    let (st, v) = http(
        &srv.url,
        "POST",
        "/v1/provision-keys/redeem",
        None,
        Some(json!({"key": pk["key"], "name": "nova", "machine": "m1"})),
    );
    assert_eq!((st, v["fixed_code"].as_str()), (200, Some("123456")), "{v}");
    assert_ne!(v["user"]["id"], bolt["id"], "redeem creates a new account");
    // The server reads its clock when it creates the key, somewhere between
    // the two reads here (a second may tick over in between).
    let pk_after = op_json(&srv, &root, &["clock", "advance", "0"])["now"]
        .as_i64()
        .unwrap();
    let ttl = 2 * 24 * 3600;
    let expires = pk["expires_at"].as_i64().unwrap();
    assert!(
        (pk_now + ttl..=pk_after + ttl).contains(&expires),
        "--ttl 2d: expires_at {expires} is not 2 days after a moment in [{pk_now}, {pk_after}]"
    );

    let card = op_json(
        &srv,
        &root,
        &[
            "card",
            "add",
            "--title",
            "ship it",
            "--assignee",
            "bolt",
            "--room",
            &room_id,
        ],
    );
    assert_eq!(
        (card["status"].as_str(), card["assignee_id"].as_i64()),
        (Some("queued"), bolt["id"].as_i64())
    );
    let pushed = op_json(&srv, &root, &["push", "recheck", "--user", "bolt"]);
    assert_eq!(pushed["delivered"], 0, "nobody connected");

    // Login, then the clock moves past the JWT's 15 minutes.
    let (st, login) = http(
        &srv.url,
        "POST",
        "/v1/auth/login",
        None,
        Some(json!({"email": "bolt@example.test", "code": "123456"})),
    );
    assert_eq!(st, 200, "{login}");
    let jwt = login["token"].as_str().unwrap().to_string();
    assert_eq!(http(&srv.url, "GET", "/v1/me", Some(&jwt), None).0, 200);
    let now = op_json(&srv, &root, &["clock", "advance", "901"]);
    assert!(now["now"].as_i64().unwrap() >= login["expires_at"].as_i64().unwrap());
    let (st, v) = http(&srv.url, "GET", "/v1/me", Some(&jwt), None);
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (401, Some("unauthorized"))
    );

    // A wrong admin token is refused.
    let out = hoop()
        .args(["backend", "user", "list"])
        .env("HOOP_ROOT", &root)
        .env("HOOP_BACKEND_URL", &srv.url)
        .env("HOOP_ADMIN_TOKEN", "wrong")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));

    // SIGTERM: a clean stop; the token never appeared in the server's output.
    let pid = srv.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let st = wait_exit(&mut srv.child);
    assert!(st.success(), "{st:?}");
    let stderr = std::fs::read_to_string(&srv.stderr_path).unwrap();
    assert!(!stderr.contains(&token), "the admin token is never logged");
    assert!(!stderr.contains(&key), "MCP keys are never logged");
    drop(srv);

    // --db keeps everything across a restart (with a fresh admin token).
    let srv2 = serve(&root, &db);
    let users = op_json(&srv2, &root, &["user", "list"]);
    let names: Vec<&str> = users
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["ann", "bolt", "nova"],
        "nova: the redeemed account"
    );
    let token2 = std::fs::read_to_string(&token_file).unwrap();
    assert_ne!(token2.trim(), token, "a new token per start");
}

#[test]
fn the_operator_reads_any_room_from_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let srv = serve(&root, &dir.path().join("backend.sqlite"));
    op_json(
        &srv,
        &root,
        &[
            "user",
            "add",
            "--email",
            "ann@example.test",
            "--username",
            "ann",
        ],
    );
    op_json(
        &srv,
        &root,
        &[
            "user",
            "add",
            "--email",
            "bolt@example.test",
            "--username",
            "bolt",
            "--agent",
        ],
    );
    let room = op_json(
        &srv,
        &root,
        &[
            "room", "add", "--title", "ops", "--member", "ann", "--member", "bolt",
        ],
    );
    let room_id = room["id"].as_i64().unwrap().to_string();
    let empty = op(&srv, &root, &["room", "read", "--room", &room_id]);
    assert!(empty.status.success());
    assert_eq!(String::from_utf8_lossy(&empty.stdout), "(no messages)\n");
    let mut ids = Vec::new();
    for (who, text) in [
        ("ann", "first"),
        ("bolt", "second\nwith a second line"),
        ("ann", "third \u{1b}[2J clears nothing"),
    ] {
        let mut args = vec!["post", "--as", who, "--room", &room_id];
        if who == "ann" {
            args.extend(["--mention", "bolt"]);
        }
        args.push(text);
        ids.push(op_json(&srv, &root, &args)["id"].as_i64().unwrap());
    }

    // Text: oldest first, one line each, control characters escaped.
    let out = op(
        &srv,
        &root,
        &["room", "read", "--room", &room_id, "--limit", "2"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with(&format!("#{} ", ids[1])) && lines[0].ends_with(" bolt: second"),
        "{text}"
    );
    assert_eq!(lines[1], "    with a second line");
    assert!(
        lines[2].starts_with(&format!("#{} ", ids[2]))
            && lines[2].ends_with(" ann → @bolt: third \\u{1b}[2J clears nothing"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no raw escape reaches the terminal"
    );
    assert_eq!(
        lines[3],
        format!("(older messages exist: --before {})", ids[1])
    );

    // --json: the page as the server answers it (newest first), one line.
    let page = op_json(
        &srv,
        &root,
        &[
            "room",
            "read",
            "--room",
            &room_id,
            "--json",
            "--before",
            &ids[1].to_string(),
        ],
    );
    assert_eq!(page["has_more"], false);
    let got: Vec<i64> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert_eq!(got, vec![ids[0]]);

    // Bad input: an unknown room, a limit out of range.
    let out = op(&srv, &root, &["room", "read", "--room", "999"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
    let out = op(
        &srv,
        &root,
        &["room", "read", "--room", &room_id, "--limit", "0"],
    );
    assert!(!out.status.success());
}

#[test]
fn serve_listens_beyond_loopback_only_when_told_and_then_warns() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let refused = hoop()
        .args(["backend", "serve", "--addr", "0.0.0.0:0"])
        .env("HOOP_ROOT", &root)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty(), "nothing listens");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("not a loopback address"), "{err}");

    let stderr_path = root.join("serve.stderr");
    let mut child = hoop()
        .args([
            "backend",
            "serve",
            "--addr",
            "0.0.0.0:0",
            "--allow-non-loopback",
        ])
        .env("HOOP_ROOT", &root)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        for _ in lines {}
    });
    let first = rx.recv_timeout(WAIT).expect("a first stdout line in time");
    let srv = Server {
        child,
        url: first.replace("listening on ", ""),
        stderr_path,
    };
    assert!(srv.url.starts_with("http://0.0.0.0:"), "{first}");
    let err = std::fs::read_to_string(&srv.stderr_path).unwrap();
    assert!(err.contains("warning: listening on 0.0.0.0"), "{err}");
}

#[test]
fn accounts_and_keys_from_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let srv = serve(&root, &dir.path().join("backend.sqlite"));
    let login_with = |email: &str, code: &str| {
        http(
            &srv.url,
            "POST",
            "/v1/auth/login",
            None,
            Some(json!({"email": email, "code": code})),
        )
    };
    let login = |email: &str| login_with(email, "123456");
    for (name, agent) in [("ann", false), ("bolt", true)] {
        let mut args = vec![
            "user".to_string(),
            "add".into(),
            "--email".into(),
            format!("{name}@example.test"),
            "--username".into(),
            name.into(),
        ];
        if agent {
            args.push("--agent".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        op_json(&srv, &root, &args);
    }

    // Disable: the login is refused and no key can be minted; enable again.
    let st = op_json(&srv, &root, &["user", "disable", "--user", "bolt"]);
    assert_eq!(st["active"], false);
    assert_eq!(login("bolt@example.test").0, 401);
    let refused = op(&srv, &root, &["key", "mint", "--user", "bolt"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("forbidden"));
    op_json(&srv, &root, &["user", "enable", "--user", "bolt"]);
    assert_eq!(login("bolt@example.test").0, 200);
    let minted = op_json(
        &srv,
        &root,
        &["key", "mint", "--user", "bolt", "--ttl", "1h"],
    );
    assert!(minted["key"].as_str().unwrap().starts_with("hoopmcp_"));

    // A person logs in with a one-time code the operator issues, never with
    // the public fixed code.
    assert_eq!(login("ann@example.test").0, 401);
    let issued = op_json(&srv, &root, &["user", "code", "--user", "ann"]);
    let code = issued["code"].as_str().unwrap();
    // Ann applies for a reinforcement account; the operator approves it.
    let (st, ann) = login_with("ann@example.test", code);
    assert_eq!(st, 200);
    let (st, app) = http(
        &srv.url,
        "POST",
        "/v1/reinforce/applications",
        ann["token"].as_str(),
        Some(json!({"name": "nova"})),
    );
    assert_eq!(st, 201, "{app}");
    let id = app["id"].as_i64().unwrap().to_string();
    let approved = op_json(&srv, &root, &["reinforce", "approve", "--id", &id]);
    assert_eq!(approved["agent"]["username"], "nova_aid");
    assert_eq!(approved["application"]["status"], "approved");

    // An armed fault fails the next redeem; the key then works.
    let pk = op_json(&srv, &root, &["provision-key", "create"]);
    let armed = op_json(&srv, &root, &["fault", "arm", "redeem_before_commit"]);
    assert_eq!(armed["times"], 1);
    let redeem = || {
        http(
            &srv.url,
            "POST",
            "/v1/provision-keys/redeem",
            None,
            Some(json!({"key": pk["key"], "name": "vega"})),
        )
    };
    assert_eq!(redeem().0, 500);
    assert_eq!(redeem().0, 200);
    let bad = op(&srv, &root, &["fault", "arm", "nowhere"]);
    assert!(!bad.status.success());
}
