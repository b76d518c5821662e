//! Login, the token cache, re-login, the agent secret.

use hoop_api::Error;
use hoop_api::token::{self, CachedToken};
use hoop_core::clock::now_unix;
use hoop_core::limits::{JWT_LIFETIME, JWT_REFRESH_MARGIN};
use hoop_refbackend::Config;

use crate::support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_writes_the_cache_0600_and_me_answers() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    let me = a.client.me().await.unwrap();
    assert_eq!(me.id, a.user.id);
    let path = a.home.token_path();
    let cached = token::load(&path).expect("the token is cached");
    let lifetime = JWT_LIFETIME.as_secs() as i64;
    assert!((cached.expires_at - now_unix() - lifetime).abs() <= 5);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut keys: Vec<_> = raw.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["expires_at", "token"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_token_is_reused_without_logging_in() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    a.client.me().await.unwrap();
    // A second process whose login would fail: only the cache can work.
    let other = env.client_for("nobody@example.test", Some(a.home.token_path()));
    assert_eq!(other.me().await.unwrap().id, a.user.id);
    // Without the cache the same client is refused.
    let bare = env.client_for("nobody@example.test", None);
    assert!(matches!(bare.me().await, Err(Error::LoginRefused { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_refused_with_401_is_replaced_by_one_login() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    a.client.me().await.unwrap();
    let first = token::load(&a.home.token_path()).unwrap();
    // Server time passes the JWT's expiry; locally it still looks fresh.
    env.backend
        .clock()
        .advance(JWT_LIFETIME.as_secs() as i64 + 60);
    assert_eq!(a.client.me().await.unwrap().id, a.user.id);
    let second = token::load(&a.home.token_path()).unwrap();
    assert!(
        second.expires_at > first.expires_at,
        "a new login was cached"
    );
    assert_ne!(second.token, first.token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_within_the_refresh_margin_is_replaced_before_use() {
    let env = Env::start().await;
    let a = env.agent("bolt").await;
    a.client.me().await.unwrap();
    let real = token::load(&a.home.token_path()).unwrap();
    // Still valid on the server, but inside the margin locally.
    let nearly = CachedToken {
        token: real.token.clone(),
        expires_at: now_unix() + JWT_REFRESH_MARGIN.as_secs() as i64 - 5,
    };
    token::store(&a.home.token_path(), &nearly).unwrap();
    let fresh_process = env.client_for(&a.user.email, Some(a.home.token_path()));
    fresh_process.me().await.unwrap();
    let after = token::load(&a.home.token_path()).unwrap();
    assert!(
        after.expires_at > nearly.expires_at + 60,
        "logged in again instead of reusing a token about to expire"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_are_a_refused_login() {
    let env = Env::start().await;
    let c = env.client_for("nobody@example.test", None);
    assert!(matches!(c.login().await, Err(Error::LoginRefused { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_secret_from_agent_env_is_sent_on_login() {
    let env = Env::start_with(Config {
        agent_secret: Some("s3cr3t-value".into()),
        ..Config::default()
    })
    .await;
    let a = env.agent("bolt").await;
    // No agent.env yet: refused, and (as production) not told apart from
    // a wrong code; the client says what an operator can do about it.
    let gate = a.client.me().await.unwrap_err();
    let wrong = env
        .client_for("nobody@example.test", None)
        .login()
        .await
        .unwrap_err();
    match (&gate, &wrong) {
        (Error::LoginRefused { message: g }, Error::LoginRefused { message: w }) => {
            assert_eq!(g, w, "the gate is not a distinct answer")
        }
        other => panic!("{other:?}"),
    }
    let told = gate.to_string();
    for words in [
        "fixed code",
        "AGENT_LOGIN_SECRET or AGENT_LOGIN_CIDRS",
        "HOOP_AGENT_SECRET",
    ] {
        assert!(told.contains(words), "{told}");
    }
    std::fs::write(
        env.root.path().join("agent.env"),
        "# the machine's secret\nexport HOOP_AGENT_SECRET=\"s3cr3t-value\"\n",
    )
    .unwrap();
    let c = hoop_api::Client::for_home(&a.home).unwrap();
    assert_eq!(c.me().await.unwrap().id, a.user.id);
    assert!(!format!("{c:?}").contains("s3cr3t-value"), "Debug redacts");
    // A wrong secret is refused.
    std::fs::write(
        env.root.path().join("agent.env"),
        "HOOP_AGENT_SECRET=nope\n",
    )
    .unwrap();
    let c = hoop_api::Client::for_home(&a.home).unwrap();
    assert!(matches!(c.login().await, Err(Error::LoginRefused { .. })));
}
