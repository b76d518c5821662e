//! The heartbeat task against the real reference backend: each beat says
//! whether a turn is running (seed 002 L57: heartbeats report idle), and
//! the backend records it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hoop_api::admin::{AdminClient, CreateUser};
use hoop_api::rest::{Client, ClientConfig};
use hoop_api::types::AgentState;
use hoop_sentinel::config::Timings;

/// How long the backend may take to show a state the task reports.
const BOUND: Duration = Duration::from_secs(20);

async fn state_of(client: &Client, id: i64) -> Option<AgentState> {
    let list = client.presence().await.unwrap();
    list.iter().find(|p| p.user_id == id).and_then(|p| p.state)
}

/// Wait (bounded) until the backend shows `want` for `id`.
async fn until_state(client: &Client, id: i64, want: AgentState) {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        if state_of(client, id).await == Some(want) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the backend never showed {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beats_report_working_during_a_turn_and_idle_otherwise() {
    let backend = hoop_refbackend::spawn(
        "127.0.0.1:0".parse().unwrap(),
        hoop_refbackend::Config {
            admin_token: Some("admin".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
    let agent = admin
        .create_user(&CreateUser {
            email: "bolt@example.com".into(),
            username: "bolt".into(),
            nickname: None,
            is_agent: true,
        })
        .await
        .unwrap();
    let client = Arc::new(
        Client::new(ClientConfig {
            base_url: backend.base_url(),
            email: agent.email.clone(),
            login_code: hoop_core::limits::FIXED_LOGIN_CODE.into(),
            agent_secret: None,
            token_cache: None,
        })
        .unwrap(),
    );
    let turn = Arc::new(AtomicBool::new(false));
    let timings = Timings {
        heartbeat_every: Some(Duration::from_millis(30)),
        ..Timings::default()
    };
    let probe = turn.clone();
    let task = tokio::spawn(hoop_sentinel::tasks::heartbeat::run(
        client.clone(),
        timings,
        move || probe.load(Ordering::SeqCst),
    ));
    until_state(&client, agent.id, AgentState::Idle).await;
    turn.store(true, Ordering::SeqCst);
    until_state(&client, agent.id, AgentState::Working).await;
    turn.store(false, Ordering::SeqCst);
    until_state(&client, agent.id, AgentState::Idle).await;
    task.abort();
}
