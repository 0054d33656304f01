//! The `studioflow` command: flags become a validated request, logs go to stderr, and each outcome
//! maps to a documented exit code. The work itself lives in the library's `commands` module.
//!
//! Exit codes: 0 done; 1 failed (database, file or internal error); 2 the input or the flags were
//! wrong (a usage error, an unknown room, a malformed instance): the message says what to change.
//! `client` adds 3 (the reflow task was cancelled), 4 (it waits for an answer no one gave) and
//! 130 (Ctrl-C: the task goes on, and stays saved); see `studioflow::client`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use studioflow::store::Target;

/// mimalloc rather than glibc's malloc: a served answer allocates and frees many small buffers
/// across threads (BENCHMARKS.md, "Serving").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;
use studioflow::client::{self, terminal::Answer, ClientError};
use studioflow::commands::{self, CommandError};

#[derive(Parser)]
#[command(name = "studioflow", version, about = "Studio bookings for people and AI agents, with month reflows when a room goes offline.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a studio database: the demo studio, or your own from a studio file.
    Init {
        /// The database to create: a file, or a postgres:// URL (see README, "Several servers").
        #[arg(long, env = "STUDIOFLOW_DB", required_unless_present = "example")]
        db: Option<Target>,
        /// Load the demo studio (7 rooms, September and October 2026, studio-b offline for a fortnight).
        #[arg(long, conflicts_with_all = ["studio", "bookings"])]
        demo: bool,
        /// A studio file (studio, rooms, clients, engineers): see README, "The studio file", or
        /// write a starter one with --example.
        #[arg(long, required_unless_present_any = ["demo", "example"])]
        studio: Option<PathBuf>,
        /// Write a commented starter studio file to FILE (an existing file is never replaced) and
        /// touch no database: edit it, then `init --db ... --studio FILE`.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["db", "demo", "studio", "bookings"])]
        example: Option<PathBuf>,
        /// A bookings file in the format of data/demo/bookings.toml (series and one-off bookings).
        #[arg(long, requires = "studio")]
        bookings: Option<PathBuf>,
    },
    /// Print a month as a reflow instance (REFLOW.md), with the given rooms offline.
    ExportInstance {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// The month, YYYY-MM.
        #[arg(long)]
        month: String,
        /// The offline rooms, comma-separated: their stored offline windows in the month are used,
        /// and a room with none is offline the whole month. Left out: none (the month's displaced
        /// sessions and those whose engineer is away are affected all the same).
        #[arg(long, value_delimiter = ',')]
        offline: Vec<String>,
        /// How far (minutes) a booking's start may shift on its day.
        #[arg(long, default_value_t = studioflow::reflow::DEFAULT_MAX_SHIFT)]
        max_shift_minutes: i64,
    },
    /// Solve a reflow instance: the solution JSON on stdout, a one-line summary on stderr.
    Solve {
        /// The instance file (REFLOW.md JSON), or - for standard input.
        file: PathBuf,
        /// Worker threads (default: the machine's cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Stop improving after this many seconds and answer with the best plan found.
        #[arg(long, default_value_t = 10.0)]
        time_limit: f64,
        /// Stop after this many rounds of improvement instead: the same answer on any machine and
        /// thread count, as long as the time limit does not come first.
        #[arg(long)]
        work_limit: Option<u64>,
    },
    /// Write the studio's view of a month (and of a reflow) as one self-contained HTML page.
    Report {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// The month, YYYY-MM (default: the reflow's month).
        #[arg(long, required_unless_present = "reflow")]
        month: Option<String>,
        /// A stored reflow to review, e.g. rf_0001.
        #[arg(long)]
        reflow: Option<String>,
        /// The HTML file to write.
        #[arg(long, default_value = "report.html")]
        out: PathBuf,
    },
    /// Print a room's, a client's or an engineer's calendar as iCalendar (RFC 5545), by default
    /// from 60 days back to 400 days ahead.
    Calendar {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        #[command(flatten)]
        of: WhoseCalendar,
        /// The start of the window: a date (YYYY-MM-DD) or a time.
        #[arg(long)]
        from: Option<String>,
        /// The end of the window: a date (YYYY-MM-DD, its midnight) or a time.
        #[arg(long)]
        to: Option<String>,
    },
    /// Subscribable calendar feeds: create one (its URL is printed once), list them, revoke one.
    Feed {
        #[command(subcommand)]
        action: FeedCommand,
    },
    /// API tokens for remote clients: create one (its secret is printed once), list them and the
    /// OAuth grants of --oauth-server, revoke one.
    Token {
        #[command(subcommand)]
        action: TokenCommand,
    },
    /// Staff accounts for `serve --oauth-server`: create, list, disable, set a password or a role.
    User {
        #[command(subcommand)]
        action: commands::UserCommand,
    },
    /// Webhook endpoints: create one (its signing secret is printed once), list them, delete
    /// one, see its latest delivery attempts.
    Webhook {
        #[command(subcommand)]
        action: commands::WebhookCommand,
    },
    /// List the studio's rooms, clients or engineers, with their ids.
    List {
        /// What to list.
        #[arg(value_enum)]
        what: ListWhat,
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// One JSON array, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// The studio's durable tasks, whoever owns them: list them, cancel one.
    Task {
        #[command(subcommand)]
        action: TaskCommand,
    },
    /// Serve the studio's tools over MCP: stdio by default, or Streamable HTTP at /mcp with --http.
    Serve(ServeArgs),
    /// Ask a studioflow server for month reflows as durable tasks, and follow them to their end,
    /// across crashes: the task ids are saved before anything else happens.
    Client {
        /// The server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
        #[arg(long, global = true, conflicts_with = "stdio")]
        server: Option<String>,
        /// Start this server command and talk to it on stdio, e.g. "studioflow serve --db studio.db"
        /// (split on spaces; no shell quoting).
        #[arg(long, global = true)]
        stdio: Option<String>,
        /// A bearer token for the HTTP server (sent as Authorization: Bearer); never saved.
        #[arg(long, global = true, env = "STUDIOFLOW_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The state file of saved tasks (default: $XDG_STATE_HOME/studioflow/tasks.json,
        /// or ~/.local/state/studioflow/tasks.json).
        #[arg(long, global = true)]
        state: Option<PathBuf>,
        #[command(subcommand)]
        action: ClientAction,
    },
    /// Create a fresh demo database and run its scenario end to end: studio-b goes offline for a
    /// fortnight of September 2026 and the month is reflowed.
    Demo {
        /// Where to create the demo database (replaced on each run).
        #[arg(long, default_value = "studioflow-demo.db")]
        db: PathBuf,
    },
}

/// Whose calendar: exactly one of a room, a client or an engineer.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct WhoseCalendar {
    #[arg(long)]
    room: Option<String>,
    #[arg(long)]
    client: Option<String>,
    #[arg(long)]
    engineer: Option<String>,
}

impl WhoseCalendar {
    fn calendar(self) -> studioflow::domain::CalendarOf {
        use studioflow::domain::{CalendarOf, ClientId, EngineerId, RoomId};
        match (self.room, self.client, self.engineer) {
            (Some(room), _, _) => CalendarOf::Room(RoomId::new(room)),
            (_, Some(client), _) => CalendarOf::Client(ClientId::new(client)),
            (_, _, Some(engineer)) => CalendarOf::Engineer(EngineerId::new(engineer)),
            // clap's group makes one of the three required.
            (None, None, None) => CalendarOf::Room(RoomId::new("")),
        }
    }
}

#[derive(Subcommand)]
enum FeedCommand {
    /// Create a feed for one calendar and print its URL (shown only this once).
    Create {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        #[command(flatten)]
        of: WhoseCalendar,
        /// A note for the list, e.g. who it was given to.
        #[arg(long)]
        label: Option<String>,
        /// The public URL where `serve --http` is reached (the origin of its `--resource`), to print
        /// a whole URL, e.g. https://studio.example.com or http://127.0.0.1:8080.
        #[arg(long, env = "STUDIOFLOW_PUBLIC_URL", value_parser = base_url)]
        base_url: String,
    },
    /// List feeds (never their secrets).
    List {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
    },
    /// Revoke a feed: its URL answers 404 from then on.
    Revoke {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// The feed's id (fd_...), from `feed list`.
        id: String,
    },
}

/// A public base URL: `http://` or `https://`, a host, maybe a port and a path; no query.
fn base_url(text: &str) -> Result<String, String> {
    let text = text.trim().trim_end_matches('/');
    let rest = text.strip_prefix("https://").or_else(|| text.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !rest.contains(['?', '#']) && !rest.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            Ok(text.to_owned())
        }
        _ => Err(format!("{text:?} is not a base URL such as https://studio.example.com or http://127.0.0.1:8080")),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ListWhat {
    Rooms,
    Clients,
    Engineers,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token and print its secret (shown only this once).
    Create {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// Who or what will use it, e.g. mixing-agent: what the history shows, unique among live tokens.
        #[arg(long)]
        name: String,
        /// What it may do, comma-separated: studio:read, bookings:write, studio:manage, reflow:apply.
        #[arg(long = "scope", value_name = "SCOPES", value_parser = studioflow::auth::Scopes::parse_list)]
        scopes: studioflow::auth::Scopes,
        /// Days until it stops working, 1 to 3650; without it, it works until revoked.
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..=3650))]
        expires: Option<u32>,
    },
    /// List tokens (never their secrets): id, name, scopes, created, last used, expires and status;
    /// then the grants of --oauth-server: id, user, client, scopes, created, last used, status.
    List {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// Print a JSON array, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token, or an OAuth grant (and every token of it): it stops working at once.
    Revoke {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// The token's id (tok_...) or the grant's (gr_...), from `token list`.
        id: String,
    },
}

#[derive(Subcommand)]
enum TaskCommand {
    /// List every task of the studio, whoever owns it: id, status, month, owner, created and
    /// status message.
    List {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// Print a JSON array, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Cancel a live task, whoever owns it: nothing of it is applied, and its month is free again.
    Cancel {
        #[arg(long, env = "STUDIOFLOW_DB")]
        db: Target,
        /// The task's id (tsk_...), from `task list`.
        id: String,
    },
}

#[derive(clap::Args)]
struct ServeArgs {
    /// The database: a file (created with an empty schema if missing), or a postgres:// URL.
    #[arg(long, env = "STUDIOFLOW_DB", default_value = "studioflow.db")]
    db: Target,
    /// Serve Streamable HTTP instead of stdio, on ADDR:PORT or on a PORT of 127.0.0.1.
    #[arg(long, value_parser = http_address)]
    http: Option<std::net::SocketAddr>,
    /// Load the demo studio first, if the database holds no studio yet.
    #[arg(long)]
    demo: bool,
    /// Another Host name (with or without :port) to accept over HTTP, besides localhost.
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// Another browser Origin (scheme://host:port, or :* for any port) to accept over HTTP.
    #[arg(long = "allow-origin")]
    allow_origins: Vec<String>,
    /// HTTP: seconds a client may take to send a request's headers, from its first byte.
    #[arg(long, default_value_t = 10.0)]
    http_header_timeout: f64,
    /// HTTP: seconds a client may take to send a request's body, after its headers.
    #[arg(long, default_value_t = 30.0)]
    http_body_timeout: f64,
    /// HTTP: seconds a connection may stay open with no request under way.
    #[arg(long, default_value_t = 60.0)]
    http_idle_timeout: f64,
    /// HTTP: open connections at most; at the cap, the longest-idle one is closed to make room.
    #[arg(long, default_value_t = 512)]
    http_max_connections: usize,
    /// Solver threads for reflows (default: the machine's cores).
    #[arg(long)]
    solver_threads: Option<usize>,
    /// Seconds a reflow may spend improving its plan.
    #[arg(long, default_value_t = 10.0)]
    solver_time_limit: f64,
    /// Seconds a reflow task is kept after it is created (at most 7 days).
    #[arg(long, default_value_t = 86_400.0)]
    task_ttl: f64,
    /// Seconds a server's hold on a running reflow lasts unless renewed (every third of it): when
    /// a server dies, another on the same database takes its tasks over within this long.
    #[arg(long, default_value_t = studioflow::tasks::DEFAULT_LEASE.as_secs_f64())]
    task_lease: f64,
    /// Deliver webhooks to loopback, private and link-local addresses (and over plain http) too:
    /// for a receiver on the studio's own network. Without it they are refused.
    #[arg(long)]
    webhooks_to_private: bool,
    /// Send e-mail (with calendar updates) through this SMTP server: smtp://HOST[:PORT] (plain),
    /// smtp://USER:PASSWORD@HOST:587?tls=starttls (STARTTLS) or smtps://USER:PASSWORD@HOST (TLS).
    /// Without it no e-mail is attempted.
    #[arg(long, value_name = "URL", env = "STUDIOFLOW_SMTP", hide_env_values = true)]
    smtp: Option<String>,
    /// The sender of that e-mail, e.g. "Studio <bookings@example.com>" (needed with --smtp).
    #[arg(long, value_name = "ADDRESS")]
    mail_from: Option<String>,
    /// Keys that seal the requestState of a reflow approved without the Tasks extension, as
    /// `id=secret,...` (secrets of 32 bytes or more; the first seals, all open). Servers behind one
    /// address must share them; without them each server makes a random key of its own.
    #[arg(long, env = "STUDIOFLOW_REQUEST_STATE_KEYS", hide_env_values = true)]
    request_state_keys: Option<String>,
    #[command(flatten)]
    auth: AuthArgs,
    /// Tests only: pause this long after each solved part.
    #[cfg(feature = "testing")]
    #[arg(long, hide = true)]
    test_solve_delay_ms: Option<u64>,
    /// Tests only: pause this long inside the transaction that applies a task's plan, before it commits.
    #[cfg(feature = "testing")]
    #[arg(long, hide = true)]
    test_apply_delay_ms: Option<u64>,
    /// Tests only: also serve the MCP conformance suite's fixture tools (tests/conformance/README.md).
    #[cfg(feature = "testing")]
    #[arg(long, hide = true)]
    conformance_fixtures: bool,
    /// Tests only: milliseconds a webhook attempt may take (instead of 15 s).
    #[cfg(feature = "testing")]
    #[arg(long, hide = true)]
    test_webhook_timeout_ms: Option<u64>,
}

/// Who may call over HTTP (README: "Running on a network").
#[derive(clap::Args)]
struct AuthArgs {
    /// HTTP: require a bearer token (an API token from `studioflow token create`, or an access
    /// token of --oauth-issuer) on every request, also on loopback. Off loopback it is required.
    #[arg(long)]
    require_auth: bool,
    /// HTTP: accept OAuth 2.1 access tokens (JWT) from this issuer (needs --resource); turns
    /// authentication on.
    #[arg(long, value_name = "URL", requires = "resource")]
    oauth_issuer: Option<String>,
    /// HTTP: this server's public URL of /mcp (e.g. https://studio.example.com/mcp): the audience
    /// access tokens must name, and what the protected resource metadata says; its host is accepted.
    #[arg(long, value_name = "URL")]
    resource: Option<String>,
    /// HTTP with authentication: requests per minute per principal (bursts of a quarter of it).
    #[arg(long, value_name = "PER_MINUTE", default_value_t = 600)]
    rate_limit: u32,
    /// HTTP with authentication: failed authentications per source address answered 401 in any
    /// minute; past them, that address's failing requests get 429 (valid credentials are still served).
    #[arg(long, value_name = "PER_MINUTE", default_value_t = 20)]
    auth_failure_limit: u32,
    /// Least seconds between two fetches of the issuer's keys (an unknown key id asks for one).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    oauth_key_refresh: f64,
    /// HTTP: be an OAuth 2.1 authorization server too, whose issuer is the origin of --resource:
    /// staff accounts (`studioflow user`) sign in and grant MCP clients tokens; turns authentication on.
    #[arg(long)]
    oauth_server: bool,
    /// Seconds an access token of --oauth-server lives (refresh tokens renew it).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600.0)]
    oauth_access_ttl: f64,
    /// PEM certificates trusted, besides the platform's, when fetching client metadata documents.
    #[arg(long, value_name = "FILE")]
    oauth_client_ca: Option<PathBuf>,
    /// Fetch client metadata documents (client ids that are https URLs) from loopback, private and
    /// link-local addresses too; by default only public addresses are fetched, so that a client id
    /// cannot make the server call the studio's own network.
    #[arg(long)]
    oauth_private_client_documents: bool,
    /// Tests only: milliseconds an authorization code lives.
    #[cfg(feature = "testing")]
    #[arg(long, hide = true)]
    test_oauth_code_ttl_ms: Option<u64>,
}

impl ServeArgs {
    fn config(self) -> commands::ServeConfig {
        commands::ServeConfig {
            db: self.db,
            http: self.http,
            demo: self.demo,
            allow_hosts: self.allow_hosts,
            allow_origins: self.allow_origins,
            http_header_timeout: self.http_header_timeout,
            http_body_timeout: self.http_body_timeout,
            http_idle_timeout: self.http_idle_timeout,
            http_max_connections: self.http_max_connections,
            solver_threads: self.solver_threads,
            solver_time_limit: self.solver_time_limit,
            task_ttl: self.task_ttl,
            task_lease: self.task_lease,
            webhooks_to_private: self.webhooks_to_private,
            smtp: self.smtp,
            mail_from: self.mail_from,
            request_state_keys: self.request_state_keys,
            auth: commands::AuthFlags {
                require: self.auth.require_auth,
                oauth_issuer: self.auth.oauth_issuer,
                resource: self.auth.resource,
                rate_limit: self.auth.rate_limit,
                failure_limit: self.auth.auth_failure_limit,
                key_refresh: self.auth.oauth_key_refresh,
                oauth_server: self.auth.oauth_server,
                oauth_access_ttl: self.auth.oauth_access_ttl,
                oauth_client_ca: self.auth.oauth_client_ca,
                oauth_private_client_documents: self.auth.oauth_private_client_documents,
                #[cfg(feature = "testing")]
                test_code_ttl_ms: self.auth.test_oauth_code_ttl_ms,
            },
            #[cfg(feature = "testing")]
            test_solve_delay_ms: self.test_solve_delay_ms,
            #[cfg(feature = "testing")]
            test_apply_delay_ms: self.test_apply_delay_ms,
            #[cfg(feature = "testing")]
            conformance_fixtures: self.conformance_fixtures,
            #[cfg(feature = "testing")]
            test_webhook_timeout_ms: self.test_webhook_timeout_ms,
        }
    }
}

#[derive(Subcommand)]
enum ClientAction {
    /// Ask for a month reflow as a task, save its id, and follow it to its end.
    Reflow {
        /// The month, YYYY-MM.
        #[arg(long)]
        month: String,
        /// The offline rooms (space- or comma-separated); left out, none (for a month whose
        /// engineers are away from sessions, or whose sessions are displaced).
        #[arg(long, value_delimiter = ',', num_args = 1..)]
        offline: Vec<String>,
        /// Plan and record the reflow without moving anything.
        #[arg(long)]
        dry_run: bool,
        /// Solve, then ask before moving anything.
        #[arg(long)]
        require_approval: bool,
        /// Answer the approval question without asking (for scripts).
        #[arg(long, value_parser = answer)]
        answer: Option<Answer>,
    },
    /// Follow every saved task to its end (with --server or --stdio: only that server's).
    Resume {
        /// Answer an approval question without asking (for scripts).
        #[arg(long, value_parser = answer)]
        answer: Option<Answer>,
    },
    /// List the saved tasks with their last known state (asks no server).
    Status,
    /// Cancel a task (on its saved server, unless --server or --stdio names one).
    Cancel {
        /// The task's id (tsk_...).
        task_id: String,
    },
}

fn answer(text: &str) -> Result<Answer, String> {
    match text {
        "accept" => Ok(Answer::Accept),
        "decline" => Ok(Answer::Decline),
        _ => Err(format!("{text:?}: answer accept or decline")),
    }
}

/// `8080` means `127.0.0.1:8080`: loopback unless an address is given.
fn http_address(text: &str) -> Result<std::net::SocketAddr, String> {
    match text.parse::<u16>() {
        Ok(port) => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
        Err(_) => text.parse().map_err(|_| format!("{text:?} is not PORT or ADDR:PORT (e.g. 8080 or 127.0.0.1:8080)")),
    }
}

fn main() -> ExitCode {
    use std::io::IsTerminal;
    let cli = Cli::parse();
    let quiet = if matches!(cli.command, Command::Client { .. }) { studioflow::mcp::client::LOG_FILTER } else { "warn" };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| quiet.into()))
        .init();

    let outcome = match cli.command {
        Command::Client { server, stdio, token, state, action } => {
            let connection = client::Connection { server, stdio, token };
            let ran = match action {
                ClientAction::Reflow { month, offline, dry_run, require_approval, answer } => {
                    client::reflow(&connection, client::ReflowArgs { month, offline, dry_run, require_approval, answer, state })
                }
                ClientAction::Resume { answer } => client::resume(&connection, state, answer),
                ClientAction::Status => client::status(state),
                ClientAction::Cancel { task_id } => client::cancel(&connection, &task_id, state),
            };
            return match ran {
                Ok(exit) => ExitCode::from(exit.code()),
                Err(ClientError::Input(message)) => {
                    eprintln!("error: {message}");
                    ExitCode::from(2)
                }
                Err(ClientError::Failed(e)) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            };
        }
        Command::Init { example: Some(file), .. } => commands::write_example(&file),
        Command::Init { db: Some(db), demo, studio, bookings, example: None } => commands::init(&db, demo, studio.as_deref(), bookings.as_deref()),
        // clap requires --db unless --example is given.
        Command::Init { db: None, .. } => Err(CommandError::Input(anyhow::anyhow!("give --db (or --example FILE)"))),
        Command::ExportInstance { db, month, offline, max_shift_minutes } => {
            commands::export_instance(&db, &month, &offline, max_shift_minutes)
        }
        Command::Solve { file, threads, time_limit, work_limit } => commands::solve(&file, threads, time_limit, work_limit),
        Command::Demo { db } => commands::demo(&db),
        Command::Report { db, month, reflow, out } => commands::report(&db, month.as_deref(), reflow.as_deref(), &out),
        Command::Calendar { db, of, from, to } => commands::calendar(&db, &of.calendar(), from.as_deref(), to.as_deref()),
        Command::Feed { action } => match action {
            FeedCommand::Create { db, of, label, base_url } => {
                commands::feed(&db, commands::FeedAction::Create { of: of.calendar(), label, base_url })
            }
            FeedCommand::List { db } => commands::feed(&db, commands::FeedAction::List),
            FeedCommand::Revoke { db, id } => commands::feed(&db, commands::FeedAction::Revoke { id }),
        },
        Command::Token { action } => match action {
            TokenCommand::Create { db, name, scopes, expires } => {
                commands::token(&db, commands::TokenAction::Create { name, scopes, expires_days: expires })
            }
            TokenCommand::List { db, json } => commands::token(&db, commands::TokenAction::List { json }),
            TokenCommand::Revoke { db, id } => commands::token(&db, commands::TokenAction::Revoke { id }),
        },
        Command::User { action } => commands::user(action),
        Command::Webhook { action } => commands::webhook(action),
        Command::List { what, db, json } => {
            let what = match what {
                ListWhat::Rooms => commands::Listing::Rooms,
                ListWhat::Clients => commands::Listing::Clients,
                ListWhat::Engineers => commands::Listing::Engineers,
            };
            commands::list(&db, what, json)
        }
        Command::Task { action } => match action {
            TaskCommand::List { db, json } => commands::task(&db, commands::TaskAction::List { json }),
            TaskCommand::Cancel { db, id } => commands::task(&db, commands::TaskAction::Cancel { id }),
        },
        Command::Serve(args) => commands::serve(args.config()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(CommandError::Input(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
        Err(CommandError::Failed(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
