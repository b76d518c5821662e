//! `hoop backend …`: serve the reference backend, or drive a running one as
//! its operator (create users and rooms, read a room, post as anyone, mint
//! and revoke keys, disable accounts, approve reinforcement applications,
//! create cards, push events, arm a fault, move its clock). Operator commands print
//! JSON of what they created on stdout, one object per line; `room read`
//! prints the room as text lines unless `--json`.
//!
//! `serve` listens on loopback only, unless `--allow-non-loopback` says
//! otherwise (then it warns on stderr).
//!
//! The admin token comes from `HOOP_ADMIN_TOKEN` or the token file that
//! `serve` writes (mode 0600, never printed).

use std::collections::HashMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hoop_api::admin::{
    AdminClient, AdminCreateCard, CreateConversation, CreateProvisionKey, CreateUser, FaultPoint,
    PostAs, ProvisionKind, Push, PushEvent,
};
use hoop_api::types::{AssignTask, Mention, Message, MessageKind, MessagePage, SendMessage};
use hoop_core::fsutil::{WriteOptions, write_atomic};

/// Environment variable naming the backend an operator command talks to.
pub const URL_ENV: &str = "HOOP_BACKEND_URL";
/// Environment variable carrying the admin token (else the token file).
pub const ADMIN_TOKEN_ENV: &str = "HOOP_ADMIN_TOKEN";
/// Environment variable with the agent secret logins must carry (serve).
pub const AGENT_SECRET_ENV: &str = "HOOP_AGENT_SECRET";

#[derive(clap::Subcommand)]
pub enum Command {
    /// Run the reference backend until SIGINT/SIGTERM. Prints
    /// `listening on http://ADDR` as its first stdout line.
    Serve(ServeArgs),
    /// Users (humans and agents).
    #[command(subcommand)]
    User(UserCmd),
    /// Conversations (rooms).
    #[command(subcommand)]
    Room(RoomCmd),
    /// Post a message as any member, through the same gates as a user's send.
    Post(PostArgs),
    /// MCP keys.
    #[command(subcommand)]
    Key(KeyCmd),
    /// Provisioning keys.
    #[command(subcommand, name = "provision-key")]
    ProvisionKey(ProvisionKeyCmd),
    /// Reinforcement applications.
    #[command(subcommand)]
    Reinforce(ReinforceCmd),
    /// Fail the next request reaching a point inside a transaction (checks
    /// that a failed write leaves nothing behind).
    #[command(subcommand)]
    Fault(FaultCmd),
    /// Work cards.
    #[command(subcommand)]
    Card(CardCmd),
    /// Push a WebSocket event to a user.
    #[command(subcommand)]
    Push(PushCmd),
    /// The server's clock (JWT expiry, presence, leases, rate windows).
    #[command(subcommand)]
    Clock(ClockCmd),
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 = any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// SQLite file; without it everything lives in memory.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// File holding the agent secret logins must carry (the bare value, or
    /// an agent.env-style `HOOP_AGENT_SECRET=…` line). Env HOOP_AGENT_SECRET
    /// works too.
    #[arg(long)]
    pub agent_secret_file: Option<PathBuf>,
    /// Where to write the admin token (0600). Default
    /// `<HOOP_ROOT or ~/.hoop>/backend/admin.token`.
    #[arg(long)]
    pub admin_token_file: Option<PathBuf>,
    /// Allow an --addr that is not loopback (0.0.0.0, a LAN address…). The
    /// reference backend has no TLS and is meant for one machine: anyone who
    /// reaches the address can try it.
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// The base URL written into `claude mcp add …` lines (default: this
    /// server's own address).
    #[arg(long, conflicts_with = "no_public_base")]
    pub public_base: Option<String>,
    /// Write a placeholder base into `claude mcp add …` lines instead, as a
    /// production server with no public base configured does.
    #[arg(long)]
    pub no_public_base: bool,
}

/// How an operator command reaches the server.
#[derive(clap::Args, Clone)]
pub struct Conn {
    /// Base URL of the running backend.
    #[arg(long, alias = "backend", env = URL_ENV)]
    pub url: String,
    /// Admin token file, used when HOOP_ADMIN_TOKEN is not set.
    #[arg(long)]
    pub admin_token_file: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
pub enum UserCmd {
    /// Create a user.
    Add {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        email: String,
        #[arg(long)]
        username: String,
        #[arg(long)]
        nickname: Option<String>,
        /// An AI agent account (`is_agent`).
        #[arg(long)]
        agent: bool,
    },
    /// List users.
    List {
        #[command(flatten)]
        conn: Conn,
    },
    /// Issue a person's one-time login code (the reference backend mails
    /// nothing): printed once as JSON, valid 10 minutes, single use, void
    /// after 5 wrong tries. Agents log in with their fixed code or a key.
    Code {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
    },
    /// Make an account inactive: its MCP keys, tokens and logins are
    /// refused until it is enabled again.
    Disable {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
    },
    /// Make an account active again.
    Enable {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
    },
}

#[derive(clap::Subcommand)]
pub enum RoomCmd {
    /// Create a conversation with members (id, username or email).
    Add {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        title: String,
        /// A workroom (cards are run there).
        #[arg(long)]
        workroom: bool,
        #[arg(long = "member")]
        members: Vec<String>,
    },
    /// Add a member to a conversation.
    Member {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        room: i64,
        #[arg(long)]
        user: String,
    },
    /// Read a conversation's newest messages (any room: no membership
    /// needed), oldest first, one line each.
    Read {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        room: i64,
        /// How many messages (1–100).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Only messages older than this id (paging back).
        #[arg(long)]
        before: Option<i64>,
        /// Print the page as one JSON line (newest first, as the server
        /// answers it) instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
pub struct PostArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// Sender: id, username or email.
    #[arg(long = "as")]
    pub sender: String,
    #[arg(long)]
    pub room: i64,
    /// Structured mention: a user (id, username or email) or `everyone`.
    #[arg(long = "mention")]
    pub mentions: Vec<String>,
    /// The message kind: `text` (default), `voice`, or any other word, to
    /// seed a room with kinds the toolkit must tolerate (not `image`).
    #[arg(long, default_value = "text")]
    pub kind: String,
    pub text: String,
}

#[derive(clap::Subcommand)]
pub enum KeyCmd {
    /// Mint an MCP key for an active agent account; printed once (the
    /// server keeps only its SHA-256).
    Mint {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
        /// The key's life: seconds, or a number with s, m, h or d (default
        /// 90 days; the server clamps it to a year).
        #[arg(long, value_parser = parse_ttl)]
        ttl: Option<i64>,
    },
    /// Revoke every live MCP key of a user.
    Revoke {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
    },
}

#[derive(clap::Subcommand)]
pub enum ProvisionKeyCmd {
    /// Create a provisioning key: redeeming it creates a NEW agent account.
    Create {
        #[command(flatten)]
        conn: Conn,
        /// `sentinel` or `reinforcement`.
        #[arg(long, default_value = "sentinel")]
        kind: String,
        /// A room the account joins on redeem.
        #[arg(long)]
        room: Option<i64>,
        /// The key's life: seconds, or a number with s, m, h or d (default
        /// 7 days; the server clamps it to 90 days).
        #[arg(long, value_parser = parse_ttl)]
        ttl: Option<i64>,
    },
}

#[derive(clap::Subcommand)]
pub enum ReinforceCmd {
    /// Approve an application: creates the reinforcement account, owned by
    /// the applicant.
    Approve {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        id: i64,
    },
}

#[derive(clap::Subcommand)]
pub enum FaultCmd {
    /// Arm a point: `redeem_before_commit` or `rotate_before_commit`.
    Arm {
        #[command(flatten)]
        conn: Conn,
        point: String,
        /// How many requests fail there.
        #[arg(long, default_value_t = 1)]
        times: u32,
    },
}

/// A key's life on the command line: `3600`, `90s`, `30m`, `12h`, `7d` →
/// seconds (positive, no overflow).
pub fn parse_ttl(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (digits, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c),
        _ => (s, 's'),
    };
    let scale: i64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        other => return Err(format!("unknown unit {other:?} (use s, m, h or d)")),
    };
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration like 7d, 12h, 30m or 3600"))?;
    if n <= 0 {
        return Err(format!("{s:?}: a key's life must be positive"));
    }
    n.checked_mul(scale)
        .ok_or_else(|| format!("{s:?} is too long"))
}

#[derive(clap::Subcommand)]
pub enum CardCmd {
    /// Every card (of a room with --room), newest first, one line each:
    /// `#ID STATUS room=… assignee=… parent=… TITLE`, then its result or
    /// error and tokens.
    List {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        room: Option<i64>,
        /// Print the cards as the server answers them (a JSON list).
        #[arg(long)]
        json: bool,
    },
    /// One card as the server answers it (JSON).
    Show {
        #[command(flatten)]
        conn: Conn,
        /// The card id.
        id: i64,
    },
    /// Assign a queued card in a room (every card lives in a workroom).
    Add {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        title: String,
        #[arg(long)]
        assignee: Option<String>,
        #[arg(long)]
        parent: Option<i64>,
        #[arg(long)]
        room: i64,
    },
}

#[derive(clap::Subcommand)]
pub enum PushCmd {
    /// `workroom.task.recheck`.
    Recheck {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
        #[arg(long)]
        room: Option<i64>,
    },
    /// `provision.pending`.
    ProvisionPending {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        user: String,
    },
}

#[derive(clap::Subcommand)]
pub enum ClockCmd {
    /// Move the server's clock forward by SECS seconds.
    Advance {
        #[command(flatten)]
        conn: Conn,
        secs: i64,
    },
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    let rt = super::runtime()?;
    rt.block_on(async move {
        match c {
            Command::Serve(a) => serve(a).await,
            other => operate(other).await,
        }
    })
}

fn default_token_file() -> anyhow::Result<PathBuf> {
    Ok(hoop_core::home::root()?.join("backend").join("admin.token"))
}

fn read_agent_secret(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the agent secret file {}", path.display()))?;
    let from_env_line = text.lines().find_map(|l| {
        let l = l.trim();
        let l = l.strip_prefix("export ").unwrap_or(l);
        let (k, v) = l.split_once('=')?;
        (k.trim() == hoop_core::home::AGENT_SECRET_VAR)
            .then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
    });
    let secret = from_env_line.unwrap_or_else(|| text.trim().to_string());
    if secret.is_empty() {
        bail!("the agent secret file {} is empty", path.display());
    }
    Ok(secret)
}

async fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let agent_secret = match &a.agent_secret_file {
        Some(p) => Some(read_agent_secret(p)?),
        None => std::env::var(AGENT_SECRET_ENV)
            .ok()
            .filter(|s| !s.is_empty()),
    };
    let token_file = match a.admin_token_file {
        Some(p) => p,
        None => default_token_file()?,
    };
    if hoop_refbackend::check_listen_addr(a.addr, a.allow_non_loopback)? {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "warning: listening on {} (not loopback): anyone who reaches it can try to log in; \
             there is no TLS",
            a.addr
        )?;
    }
    let cfg = hoop_refbackend::Config {
        db: a.db,
        agent_secret,
        admin_token: None,
        allow_non_loopback: a.allow_non_loopback,
        public_base: match (a.public_base, a.no_public_base) {
            (_, true) => hoop_refbackend::PublicBase::Unset,
            (Some(u), false) => hoop_refbackend::PublicBase::Url(u),
            (None, false) => hoop_refbackend::PublicBase::Listen,
        },
        ..hoop_refbackend::Config::default()
    };
    let running = hoop_refbackend::spawn(a.addr, cfg).await?;
    write_atomic(
        &token_file,
        format!("{}\n", running.admin_token).as_bytes(),
        WriteOptions::SECRET,
    )
    .with_context(|| format!("writing the admin token to {}", token_file.display()))?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", running.base_url())?;
        out.flush()?;
    }
    tracing::info!(token_file = %token_file.display(), "admin token written");
    wait_for_stop().await?;
    running.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_stop() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}

fn client(conn: &Conn) -> anyhow::Result<AdminClient> {
    let token = match std::env::var(ADMIN_TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty())
    {
        Some(t) => t,
        None => {
            let path = match &conn.admin_token_file {
                Some(p) => p.clone(),
                None => default_token_file()?,
            };
            std::fs::read_to_string(&path)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "no {ADMIN_TOKEN_ENV} and cannot read the admin token file {}: {e}; \
                         fix: set {ADMIN_TOKEN_ENV}, or point --admin-token-file at the file \
                         `hoop backend serve` wrote",
                        path.display()
                    )
                })?
                .trim()
                .to_string()
        }
    };
    Ok(AdminClient::new(&conn.url, &token))
}

/// Print one JSON object (what was created) as one stdout line.
fn print_json(v: serde_json::Value) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{v}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `card list`'s lines: one per card, then its result or error and what
/// it cost, indented.
fn card_lines(cards: &[hoop_api::types::Card]) -> String {
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut s = String::new();
    if cards.is_empty() {
        s.push_str("(no cards)\n");
    }
    for c in cards {
        let status = serde_json::to_value(c.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        s.push_str(&format!(
            "#{} {status} room={} assignee={} parent={} {}\n",
            c.id,
            c.conversation_id,
            opt(c.assignee_id),
            opt(c.parent_id),
            c.title
        ));
        if let Some(r) = &c.result {
            s.push_str(&format!("    result: {r}\n"));
        }
        if let Some(e) = &c.error {
            s.push_str(&format!("    error: {e}\n"));
        }
        if c.tokens_in.is_some() || c.tokens_out.is_some() {
            s.push_str(&format!(
                "    tokens in/cached/out = {}/{}/{}\n",
                opt(c.tokens_in),
                opt(c.tokens_cached_in),
                opt(c.tokens_out)
            ));
        }
    }
    s
}

async fn user_id(c: &AdminClient, who: &str) -> anyhow::Result<i64> {
    Ok(c.resolve_user(who).await?.id)
}

async fn operate(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Serve(_) => unreachable!("served above"),
        Command::User(UserCmd::Add {
            conn,
            email,
            username,
            nickname,
            agent,
        }) => {
            let c = client(&conn)?;
            let u = c
                .create_user(&CreateUser {
                    email,
                    username,
                    nickname,
                    is_agent: agent,
                })
                .await?;
            print_json(serde_json::to_value(&u)?)
        }
        Command::User(UserCmd::List { conn }) => {
            print_json(serde_json::to_value(&client(&conn)?.list_users().await?)?)
        }
        Command::Room(RoomCmd::Add {
            conn,
            title,
            workroom,
            members,
        }) => {
            let c = client(&conn)?;
            let mut member_ids = Vec::new();
            for m in &members {
                member_ids.push(user_id(&c, m).await?);
            }
            let conv = c
                .create_conversation(&CreateConversation {
                    title,
                    is_workroom: workroom,
                    member_ids,
                })
                .await?;
            print_json(serde_json::to_value(&conv)?)
        }
        Command::Room(RoomCmd::Member { conn, room, user }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            print_json(serde_json::to_value(&c.add_member(room, id).await?)?)
        }
        Command::Room(RoomCmd::Read {
            conn,
            room,
            limit,
            before,
            json,
        }) => {
            let c = client(&conn)?;
            let page = c.read_messages(room, limit, before).await?;
            if json {
                return print_json(serde_json::to_value(&page)?);
            }
            let users = c.list_users().await?;
            let names: HashMap<i64, String> =
                users.into_iter().map(|u| (u.id, u.username)).collect();
            let mut out = std::io::stdout().lock();
            out.write_all(render_page(&page, &names).as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Post(a) => {
            let c = client(&a.conn)?;
            let sender_id = user_id(&c, &a.sender).await?;
            let mut mentions = Vec::new();
            for m in &a.mentions {
                if m == "everyone" {
                    mentions.push(Mention::EVERYONE);
                } else {
                    mentions.push(Mention::User(user_id(&c, m).await?));
                }
            }
            let kind = MessageKind::from_word(&a.kind);
            if kind == MessageKind::Image {
                bail!("--kind image: images are sent through the images route");
            }
            let msg = c
                .post_as(
                    a.room,
                    &PostAs {
                        sender_id,
                        message: SendMessage {
                            body: a.text,
                            mentions,
                        },
                        kind,
                    },
                )
                .await?;
            print_json(serde_json::to_value(&msg)?)
        }
        Command::User(UserCmd::Code { conn, user }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            print_json(serde_json::to_value(&c.issue_login_code(id).await?)?)
        }
        Command::User(UserCmd::Disable { conn, user }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            print_json(serde_json::to_value(&c.set_user_active(id, false).await?)?)
        }
        Command::User(UserCmd::Enable { conn, user }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            print_json(serde_json::to_value(&c.set_user_active(id, true).await?)?)
        }
        Command::Key(KeyCmd::Mint { conn, user, ttl }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            print_json(serde_json::to_value(&c.mint_mcp_key_for(id, ttl).await?)?)
        }
        Command::Key(KeyCmd::Revoke { conn, user }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            print_json(serde_json::to_value(&c.revoke_mcp_keys(id).await?)?)
        }
        Command::ProvisionKey(ProvisionKeyCmd::Create {
            conn,
            kind,
            room,
            ttl,
        }) => {
            let c = client(&conn)?;
            let kind = match kind.as_str() {
                "sentinel" => ProvisionKind::Sentinel,
                "reinforcement" => ProvisionKind::Reinforcement,
                other => bail!("--kind is sentinel or reinforcement (not {other:?})"),
            };
            let k = c
                .create_provision_key(&CreateProvisionKey {
                    kind,
                    conversation_id: room,
                    ttl_secs: ttl,
                })
                .await?;
            print_json(serde_json::to_value(&k)?)
        }
        Command::Reinforce(ReinforceCmd::Approve { conn, id }) => print_json(serde_json::to_value(
            &client(&conn)?.approve_application(id).await?,
        )?),
        Command::Fault(FaultCmd::Arm { conn, point, times }) => {
            let point: FaultPoint =
                serde_json::from_value(serde_json::Value::String(point.clone())).map_err(|_| {
                    anyhow::anyhow!(
                        "unknown fault point {point:?} (redeem_before_commit, rotate_before_commit)"
                    )
                })?;
            print_json(serde_json::to_value(
                &client(&conn)?.arm_fault(point, times).await?,
            )?)
        }
        Command::Card(CardCmd::List { conn, room, json }) => {
            let cards = client(&conn)?
                .cards(&hoop_api::admin::AdminCardQuery {
                    conversation_id: room,
                    id: None,
                })
                .await?;
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string(&cards)?)?;
            } else {
                out.write_all(card_lines(&cards).as_bytes())?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Card(CardCmd::Show { conn, id }) => {
            let cards = client(&conn)?
                .cards(&hoop_api::admin::AdminCardQuery {
                    conversation_id: None,
                    id: Some(id),
                })
                .await?;
            let Some(card) = cards.into_iter().next() else {
                anyhow::bail!(
                    "no card {id} on {} (`hoop backend card list` lists them)",
                    conn.url
                );
            };
            println!("{}", serde_json::to_string_pretty(&card)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Card(CardCmd::Add {
            conn,
            title,
            assignee,
            parent,
            room,
        }) => {
            let c = client(&conn)?;
            let assignee_id = match assignee {
                Some(a) => Some(user_id(&c, &a).await?),
                None => None,
            };
            let card = c
                .create_card(&AdminCreateCard {
                    conversation_id: room,
                    task: AssignTask {
                        title,
                        assignee_id,
                        parent_id: parent,
                        message_id: None,
                    },
                    creator_id: None,
                })
                .await?;
            print_json(serde_json::to_value(&card)?)
        }
        Command::Push(PushCmd::Recheck { conn, user, room }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            let p = c
                .push(&Push {
                    user_id: id,
                    event: PushEvent::Recheck,
                    conversation_id: room,
                })
                .await?;
            print_json(serde_json::to_value(&p)?)
        }
        Command::Push(PushCmd::ProvisionPending { conn, user }) => {
            let c = client(&conn)?;
            let id = user_id(&c, &user).await?;
            let p = c
                .push(&Push {
                    user_id: id,
                    event: PushEvent::ProvisionPending,
                    conversation_id: None,
                })
                .await?;
            print_json(serde_json::to_value(&p)?)
        }
        Command::Clock(ClockCmd::Advance { conn, secs }) => print_json(serde_json::to_value(
            &client(&conn)?.advance_clock(secs).await?,
        )?),
    }
}

/// A room page as text for a terminal: oldest first, one line per message
/// (`#ID TIME SENDER [KIND] → MENTIONS: BODY`), a body's further lines
/// indented under it, and a last line saying how to page back when older
/// messages exist. Message text is someone else's input: control and
/// bidirectional-override characters are shown escaped, never sent to the
/// terminal.
fn render_page(page: &MessagePage, names: &HashMap<i64, String>) -> String {
    let mut out = String::new();
    if page.messages.is_empty() {
        out.push_str("(no messages)\n");
    }
    for m in page.messages.iter().rev() {
        out.push_str(&render_message(m, names));
    }
    if page.has_more
        && let Some(oldest) = page.messages.iter().map(|m| m.id).min()
    {
        out.push_str(&format!("(older messages exist: --before {oldest})\n"));
    }
    out
}

fn render_message(m: &Message, names: &HashMap<i64, String>) -> String {
    let time = hoop_meter::timefmt::fmt_ts(m.created_at.saturating_mul(1000));
    let mut head = format!("#{} {time} {}", m.id, terminal_safe(&m.sender_username));
    if m.kind != MessageKind::Text {
        let kind = serde_json::to_value(&m.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into());
        head.push_str(&format!(" [{}]", terminal_safe(&kind)));
    }
    if !m.mentions.is_empty() {
        let who: Vec<String> = m
            .mentions
            .iter()
            .map(|x| match x {
                Mention::User(id) => match names.get(id) {
                    Some(n) => format!("@{}", terminal_safe(n)),
                    None => format!("@{id}"),
                },
                other => match serde_json::to_value(other) {
                    Ok(serde_json::Value::String(s)) => format!("@{}", terminal_safe(&s)),
                    Ok(v) => terminal_safe(&v.to_string()),
                    Err(_) => "@?".into(),
                },
            })
            .collect();
        head.push_str(&format!(" → {}", who.join(" ")));
    }
    let mut lines = m.body.split('\n');
    let first = lines.next().unwrap_or("");
    let mut text = format!("{head}: {}\n", terminal_safe(first));
    for l in lines {
        text.push_str(&format!("    {}\n", terminal_safe(l)));
    }
    text
}

/// `s` with every control character and every bidirectional formatting
/// character written as an escape (`\u{1b}`, `\t`, `\u{202e}`), so text
/// from a chat cannot move the cursor, recolour or reorder the terminal.
fn terminal_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: i64, sender: &str, body: &str) -> Message {
        Message {
            id,
            conversation_id: 1,
            sender_id: 7,
            sender_username: sender.into(),
            body: body.into(),
            mentions: vec![],
            kind: MessageKind::Text,
            created_at: 1_800_000_000,
        }
    }

    #[test]
    fn parse_ttl_table() {
        let ok = [
            ("3600", 3600),
            ("90s", 90),
            ("30m", 1800),
            ("12h", 43_200),
            ("7d", 604_800),
            (" 90d ", 7_776_000),
        ];
        for (text, want) in ok {
            assert_eq!(parse_ttl(text), Ok(want), "{text:?}");
        }
        for bad in [
            "",
            "d",
            "0",
            "0d",
            "-5",
            "-1h",
            "7w",
            "1.5h",
            "7 d",
            "99999999999999999d",
        ] {
            assert!(parse_ttl(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn terminal_safe_table() {
        let cases = [
            ("plain text", "plain text"),
            ("tab\there", "tab\\there"),
            ("\u{1b}[31mred", "\\u{1b}[31mred"),
            ("cr\rover", "cr\\rover"),
            ("bell\u{7}", "bell\\u{7}"),
            ("c1\u{9b}2J", "c1\\u{9b}2J"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("iso\u{2066}x", "iso\\u{2066}x"),
            ("emoji 🚀 and 中文", "emoji 🚀 and 中文"),
        ];
        for (raw, want) in cases {
            assert_eq!(terminal_safe(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn a_page_reads_oldest_first_with_kinds_mentions_and_paging() {
        let mut status = msg(3, "bolt", "working on card 4");
        status.kind = MessageKind::Voice;
        let mut asked = msg(2, "ann", "hi @bolt\nsecond line");
        asked.mentions = vec![Mention::User(8), Mention::EVERYONE, Mention::User(99)];
        let page = MessagePage {
            messages: vec![status, asked],
            has_more: true,
        };
        let names = HashMap::from([(8, "bolt".to_string())]);
        assert_eq!(
            render_page(&page, &names),
            "#2 2027-01-15T08:00:00Z ann → @bolt @everyone @99: hi @bolt\n\
             \x20   second line\n\
             #3 2027-01-15T08:00:00Z bolt [voice]: working on card 4\n\
             (older messages exist: --before 2)\n"
        );
        let empty = MessagePage {
            messages: vec![],
            has_more: false,
        };
        assert_eq!(render_page(&empty, &names), "(no messages)\n");
    }
}
