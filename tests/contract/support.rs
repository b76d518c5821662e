//! One reference backend per test, an operator client, and homes under a
//! temporary root that the clients (and the `hoop` binary) read.

use std::path::PathBuf;
use std::time::Duration;

use hoop_api::admin::{AdminClient, CreateConversation, CreateUser, PostAs};
use hoop_api::types::{Conversation, ConversationId, Message, SendMessage, User, UserId};
use hoop_api::{Client, ClientConfig};
use hoop_core::home::{Home, HomeConfig};
use hoop_refbackend::{Config, Running};

/// Every wait in this suite is bounded by this.
pub const BOUND: Duration = Duration::from_secs(20);

pub struct Env {
    pub backend: Running,
    pub admin: AdminClient,
    pub root: tempfile::TempDir,
}

/// An agent account with a home on disk and a client reading it.
pub struct Agent {
    pub user: User,
    pub home: Home,
    pub client: Client,
}

impl Env {
    pub async fn start() -> Env {
        Env::start_with(Config::default()).await
    }

    pub async fn start_with(cfg: Config) -> Env {
        let backend = hoop_refbackend::spawn("127.0.0.1:0".parse().unwrap(), cfg)
            .await
            .expect("the reference backend starts");
        let admin = AdminClient::new(&backend.base_url(), &backend.admin_token);
        Env {
            backend,
            admin,
            root: tempfile::tempdir().unwrap(),
        }
    }

    pub fn base(&self) -> String {
        self.backend.base_url()
    }

    pub async fn user(&self, name: &str, is_agent: bool) -> User {
        self.admin
            .create_user(&CreateUser {
                email: format!("{name}@example.test"),
                username: name.to_string(),
                nickname: None,
                is_agent,
            })
            .await
            .expect("create user")
    }

    /// An agent with `<root>/<name>/config.json` written.
    pub async fn agent(&self, name: &str) -> Agent {
        let user = self.user(name, true).await;
        let home = Home::new(self.root.path(), name).unwrap();
        std::fs::create_dir_all(home.dir()).unwrap();
        let cfg = HomeConfig {
            base_url: self.base(),
            email: user.email.clone(),
            login_code: None,
        };
        std::fs::write(home.config_path(), serde_json::to_vec(&cfg).unwrap()).unwrap();
        let client = Client::for_home(&home).expect("client from home");
        Agent { user, home, client }
    }

    /// A client for a person: logs in with a one-time code the operator
    /// issues (people never take the fixed code).
    pub async fn person_client(&self, user: &User) -> Client {
        let code = self.admin.issue_login_code(user.id).await.expect("code");
        Client::new(ClientConfig {
            base_url: self.base(),
            email: user.email.clone(),
            login_code: code.code,
            agent_secret: None,
            token_cache: None,
        })
        .unwrap()
    }

    /// A client for `email` with its own token cache path (not a home).
    pub fn client_for(&self, email: &str, cache: Option<PathBuf>) -> Client {
        Client::new(ClientConfig {
            base_url: self.base(),
            email: email.to_string(),
            login_code: hoop_core::limits::FIXED_LOGIN_CODE.to_string(),
            agent_secret: None,
            token_cache: cache,
        })
        .unwrap()
    }

    pub async fn room(&self, title: &str, members: &[UserId]) -> Conversation {
        self.admin
            .create_conversation(&CreateConversation {
                title: title.to_string(),
                is_workroom: false,
                member_ids: members.to_vec(),
            })
            .await
            .expect("create room")
    }

    /// Post `body` as `sender` through the operator surface.
    pub async fn post_as(&self, room: ConversationId, sender: UserId, body: &str) -> Message {
        self.admin
            .post_as(
                room,
                &PostAs {
                    sender_id: sender,
                    message: SendMessage {
                        body: body.to_string(),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
            .expect("post as")
    }

    /// Move the server's clock to the first second of a calendar minute, so
    /// a test's burst of sends stays inside one rate bucket.
    pub fn start_of_a_minute(&self) {
        let now = self.backend.clock().now();
        self.backend.clock().advance(60 - now.rem_euclid(60));
    }

    /// The newest messages of a room, read as `agent`.
    pub async fn newest(&self, agent: &Agent, room: ConversationId, n: u32) -> Vec<Message> {
        agent
            .client
            .messages(room, n, None)
            .await
            .expect("read messages")
            .messages
    }
}

/// A plain send of `body`.
pub fn text(body: &str) -> SendMessage {
    SendMessage {
        body: body.to_string(),
        ..Default::default()
    }
}
