//! `studioflow serve`: the composition root of the server. Flags are checked before any work, then
//! the store, the task runner (resuming work a killed process left), the sweepers of expired tasks
//! and expired holds, and the MCP server are put together and served on stdio or HTTP until the end.

use super::{CommandError, CommandResult};
use crate::demo;
use anyhow::{anyhow, Context};
use std::sync::Arc;
use std::time::Duration;
use studioflow_solver as solver;

/// What `serve` was asked to do.
pub struct ServeConfig {
    pub db: crate::store::Target,
    pub http: Option<std::net::SocketAddr>,
    pub demo: bool,
    pub allow_hosts: Vec<String>,
    pub allow_origins: Vec<String>,
    /// HTTP: seconds for a request's headers, for its body, and of idleness; open connections at most.
    pub http_header_timeout: f64,
    pub http_body_timeout: f64,
    pub http_idle_timeout: f64,
    pub http_max_connections: usize,
    pub solver_threads: Option<usize>,
    pub solver_time_limit: f64,
    /// Seconds a task is kept after it is created.
    pub task_ttl: f64,
    /// Seconds a task's lease lasts unless renewed.
    pub task_lease: f64,
    /// Webhooks may go to loopback, private and link-local addresses.
    pub webhooks_to_private: bool,
    /// `--smtp URL`: where e-mail goes; without it none is attempted.
    pub smtp: Option<String>,
    /// `--mail-from ADDRESS`: the sender of that e-mail.
    pub mail_from: Option<String>,
    /// `--request-state-keys`: `id=secret,...`, or a random key of this process's own.
    pub request_state_keys: Option<String>,
    pub auth: AuthFlags,
    /// Tests only: a pause per solved part, to stop a process in the middle of a solve.
    #[cfg(feature = "testing")]
    pub test_solve_delay_ms: Option<u64>,
    /// Tests only: a pause inside the transaction that applies a task's plan, to lose its
    /// database connection there.
    #[cfg(feature = "testing")]
    pub test_apply_delay_ms: Option<u64>,
    /// Tests only: also serve the MCP conformance suite's fixture tools.
    #[cfg(feature = "testing")]
    pub conformance_fixtures: bool,
    /// Tests only: how long a webhook attempt may take (instead of 15 s).
    #[cfg(feature = "testing")]
    pub test_webhook_timeout_ms: Option<u64>,
}

/// Who may call over HTTP.
pub struct AuthFlags {
    /// Require a bearer token, also on loopback.
    pub require: bool,
    pub oauth_issuer: Option<String>,
    /// The public URL of `/mcp`.
    pub resource: Option<String>,
    /// Requests per minute per principal.
    pub rate_limit: u32,
    /// Failed authentications per minute per source address.
    pub failure_limit: u32,
    /// Least seconds between two fetches of the issuer's keys.
    pub key_refresh: f64,
    /// Be an OAuth 2.1 authorization server too (`crate::oauth`), whose issuer is the origin of the resource.
    pub oauth_server: bool,
    /// Seconds an access token of this server lives.
    pub oauth_access_ttl: f64,
    /// PEM roots trusted, besides the platform's, when fetching client metadata documents.
    pub oauth_client_ca: Option<std::path::PathBuf>,
    /// Fetch client metadata documents from private addresses too.
    pub oauth_private_client_documents: bool,
    /// Tests only: milliseconds an authorization code lives (60 s otherwise).
    #[cfg(feature = "testing")]
    pub test_code_ttl_ms: Option<u64>,
}

impl AuthFlags {
    fn on(&self) -> bool {
        self.require || self.oauth_issuer.is_some() || self.oauth_server
    }

    /// Checks the flags against where the server listens, before anything is opened.
    fn check(&self, http: Option<std::net::SocketAddr>) -> Result<(), CommandError> {
        let input = |message: String| Err(CommandError::Input(anyhow!(message)));
        let Some(address) = http else {
            if self.on() || self.resource.is_some() {
                return input("--require-auth, --oauth-issuer, --oauth-server and --resource are for --http: on stdio the server runs as the local user".into());
            }
            return Ok(());
        };
        if !address.ip().is_loopback() && !self.on() {
            return input(format!(
                "listening on {address}, beyond this machine, needs authentication. Either create an API token \
                 (studioflow token create --db FILE --name NAME --scope studio:read,bookings:write) and serve with \
                 --require-auth, or accept an OAuth issuer's access tokens with --oauth-issuer URL --resource URL \
                 (README: \"Running on a network\"). To stay on this machine, listen on 127.0.0.1."
            ));
        }
        if self.rate_limit == 0 || self.failure_limit == 0 {
            return input("--rate-limit and --auth-failure-limit must be at least 1 a minute".into());
        }
        if !(self.key_refresh >= 0.0 && self.key_refresh <= 3600.0) {
            return input("--oauth-key-refresh must be 0 to 3600 seconds".into());
        }
        if let Some(resource) = &self.resource {
            crate::mcp::Gate::check_resource(resource).or_else(input)?;
            self.verifier(resource).map(drop).or_else(input)?;
        }
        if self.oauth_server {
            if !(self.oauth_access_ttl >= 1.0 && self.oauth_access_ttl <= 86_400.0) {
                return input("--oauth-access-ttl must be 1 to 86400 seconds".into());
            }
            let resource = self.resource.clone().unwrap_or_else(|| format!("http://{address}/mcp"));
            self.authorization_server_config(&resource).map(drop).or_else(input)?;
        } else if self.oauth_client_ca.is_some() {
            return input("--oauth-client-ca is for --oauth-server".into());
        } else if self.oauth_private_client_documents {
            return input("--oauth-private-client-documents is for --oauth-server".into());
        }
        Ok(())
    }

    /// The authorization server's settings, for a resource URL.
    fn authorization_server_config(&self, resource: &str) -> Result<crate::oauth::Config, String> {
        let mut config = crate::oauth::Config::new(resource)?;
        config.access_ttl = Duration::from_secs_f64(self.oauth_access_ttl);
        config.client_ca = self.oauth_client_ca.clone();
        config.private_client_documents = self.oauth_private_client_documents;
        if let Some(path) = &config.client_ca
            && !path.is_file()
        {
            return Err(format!("--oauth-client-ca {}: no such file", path.display()));
        }
        #[cfg(feature = "testing")]
        if let Some(ms) = self.test_code_ttl_ms {
            config.code_ttl = Duration::from_millis(ms);
        }
        Ok(config)
    }

    /// The verifier of the issuer's access tokens, if one is configured.
    fn verifier(&self, resource: &str) -> Result<Option<crate::auth::jwt::Verifier>, String> {
        let Some(issuer) = &self.oauth_issuer else { return Ok(None) };
        let config = crate::auth::jwt::IssuerConfig {
            min_refresh: Duration::from_secs_f64(self.key_refresh),
            ..crate::auth::jwt::IssuerConfig::new(issuer.as_str(), resource)
        };
        crate::auth::jwt::Verifier::new(config).map(Some).map_err(|e| e.to_string())
    }

    /// The gate for a server listening at `local`, or `None` without authentication, and the
    /// authorization server with `--oauth-server`.
    /// The flags were checked by [`AuthFlags::check`]: an error here is not the caller's.
    #[allow(clippy::type_complexity)]
    fn gate(
        &self,
        pool: Arc<crate::store::Pool>,
        local: std::net::SocketAddr,
        server: &crate::mcp::StudioServer,
    ) -> anyhow::Result<(Option<Arc<crate::mcp::Gate>>, Option<Arc<crate::oauth::AuthorizationServer>>)> {
        if !self.on() {
            return Ok((None, None));
        }
        let resource = self.resource.clone().unwrap_or_else(|| format!("http://{local}/mcp"));
        let authorization_server = match self.oauth_server {
            true => {
                let config = self.authorization_server_config(&resource).map_err(|e| anyhow!(e))?;
                Some(Arc::new(crate::oauth::AuthorizationServer::new(config, pool.clone()).map_err(|e| anyhow!(e))?))
            }
            false => None,
        };
        let issuers = authorization_server.iter().map(|s| s.issuer().to_owned()).chain(self.oauth_issuer.clone()).collect();
        let config = crate::mcp::AuthConfig {
            verifier: self.verifier(&resource).map_err(|e| anyhow!(e))?,
            resource,
            issuers,
            limits: crate::mcp::RateLimits { per_principal: self.rate_limit, failures_per_source: self.failure_limit },
        };
        let gate = crate::mcp::Gate::new(pool, config, server).map_err(|e| anyhow!(e))?;
        Ok((Some(Arc::new(gate)), authorization_server))
    }
}

impl ServeConfig {
    /// The mailer `--smtp` and `--mail-from` ask for (both or neither), checked before anything opens.
    fn mailer(&self) -> Result<Option<crate::notify::mail::Mailer>, CommandError> {
        let input = |message: String| CommandError::Input(anyhow!(message));
        match (&self.smtp, &self.mail_from) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(input("--smtp needs --mail-from ADDRESS: the sender of the e-mail, e.g. \"Studio <bookings@example.com>\"".into())),
            (None, Some(_)) => Err(input("--mail-from is for --smtp URL (or STUDIOFLOW_SMTP): without a server no e-mail is sent".into())),
            (Some(url), Some(from)) => {
                let url = crate::notify::mail::parse_smtp_url(url).map_err(input)?;
                crate::notify::mail::Mailer::new(&url, from, crate::notify::webhook::TIMEOUT).map(Some).map_err(input)
            }
        }
    }

    /// Checks the flags before anything is opened or loaded, and says how runs are configured.
    fn task_config(&self) -> Result<crate::tasks::TaskConfig, CommandError> {
        if !(self.solver_time_limit > 0.0 && self.solver_time_limit <= 3600.0) {
            return Err(CommandError::Input(anyhow!("--solver-time-limit must be more than 0 and at most 3600 seconds")));
        }
        if self.solver_threads == Some(0) {
            return Err(CommandError::Input(anyhow!("--solver-threads must be at least 1")));
        }
        if !(self.task_ttl >= 1.0 && self.task_ttl <= crate::tasks::MAX_TTL.as_secs_f64()) {
            return Err(CommandError::Input(anyhow!("--task-ttl must be 1 second to 7 days (604800 seconds)")));
        }
        if !(self.task_lease >= 0.5 && self.task_lease <= 600.0) {
            return Err(CommandError::Input(anyhow!("--task-lease must be 0.5 to 600 seconds")));
        }
        let mut config = crate::tasks::TaskConfig::new(
            Duration::from_secs_f64(self.task_ttl),
            self.solver_threads.unwrap_or(solver::Options::default().threads),
            Duration::from_secs_f64(self.solver_time_limit),
        );
        config.lease = Duration::from_secs_f64(self.task_lease);
        config.claim_every = config.claim_every.min(config.lease / 2);
        #[cfg(feature = "testing")]
        {
            config.test_delay_per_part = self.test_solve_delay_ms.map(Duration::from_millis);
            config.test_apply_delay = self.test_apply_delay_ms.map(Duration::from_millis);
        }
        Ok(config)
    }
}

/// `serve`: the MCP server on stdio (until stdin closes) or on HTTP (until SIGTERM or Ctrl-C).
pub fn serve(config: ServeConfig) -> CommandResult {
    let task_config = config.task_config()?;
    let http_limits = crate::mcp::HttpLimits::from_flags(
        config.http_header_timeout,
        config.http_body_timeout,
        config.http_idle_timeout,
        config.http_max_connections,
    )
    .map_err(|e| CommandError::Input(anyhow!(e)))?;
    config.auth.check(config.http)?;
    let mailer = config.mailer()?;
    let states = match &config.request_state_keys {
        Some(spec) => Some(crate::mcp::RequestStates::from_spec(spec).map_err(|e| CommandError::Input(anyhow!("--request-state-keys: {e}")))?),
        None => None,
    };
    let ttl = task_config.ttl;
    let existed = config.db.file().is_none_or(std::path::Path::exists);
    let pool = crate::store::Pool::open(&config.db, 8)
        .with_context(|| format!("opening {}", config.db))
        .map_err(CommandError::Failed)?;
    pool.with(|store| -> Result<(), CommandError> {
        if store.studio().is_ok() {
            return Ok(());
        }
        if config.demo {
            let loaded = demo::load_demo(store).map_err(CommandError::Failed)?;
            tracing::info!(bookings = loaded.bookings, "loaded the demo studio");
            return Ok(());
        }
        // A server on an empty database answers every tool with "no studio": say so once, where
        // the person starting it looks, with the way out.
        let db = &config.db;
        let created = match db.file() {
            Some(file) if !existed => format!(", a new file created just now at {}", std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned()).display()),
            _ => String::new(),
        };
        eprintln!(
            "note: {db} holds no studio yet{created}: every tool will answer that there is none. \
             Load one with `studioflow init --db {db} --demo` (or `--studio FILE`; `studioflow init --example FILE` writes a starter), \
             or start with `studioflow serve --demo`."
        );
        Ok(())
    })??;
    let pool = Arc::new(pool);
    // The bookings are read into memory beside the start-up rather than by the first query.
    let loading = pool.clone();
    std::thread::spawn(move || {
        if let Err(e) = loading.with(|store| store.load_bookings_into_memory()).and_then(|loaded| loaded) {
            tracing::warn!(error = %e, "reading the bookings into memory at start failed: the first query reads them");
        }
    });
    let auth_pool = pool.clone();
    let tasks = crate::tasks::Tasks::new(pool.clone(), task_config);
    let holds = pool.clone();
    let outbox = pool.clone();
    #[cfg(feature = "testing")]
    let timeout = config.test_webhook_timeout_ms.map_or(crate::notify::webhook::TIMEOUT, Duration::from_millis);
    #[cfg(not(feature = "testing"))]
    let timeout = crate::notify::webhook::TIMEOUT;
    if let Some(mailer) = &mailer {
        tracing::info!(mailer = ?mailer, "e-mail goes out through SMTP");
    }
    let delivery = crate::notify::Delivery { allow_private: config.webhooks_to_private, server: crate::tasks::process::server_name(), timeout, mailer };
    // Work a killed process left behind is redone before anyone asks about it; from then on this
    // server keeps its leases and takes over tasks whose server died.
    let resumed = tasks.resume()?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed reflow tasks left working");
    }
    tasks.start_leases()?;
    let ctx = crate::mcp::Ctx { pool, tasks: tasks.clone(), webhooks_to_private: config.webhooks_to_private };
    let server = match states {
        Some(states) => crate::mcp::StudioServer::with_request_states(ctx, states),
        None => crate::mcp::StudioServer::new(ctx).map_err(CommandError::Failed)?,
    };
    // One client on stdio waits on each answer: a single thread reads its line, answers it (a
    // quick read runs right there) and writes the answer, with no thread switch on the way, and
    // the blocking pool takes the rest. HTTP serves many at once on a thread per core.
    let runtime = match config.http {
        None => tokio::runtime::Builder::new_current_thread().enable_all().build()?,
        Some(_) => tokio::runtime::Builder::new_multi_thread().enable_all().build()?,
    };
    let outcome = runtime.block_on(async move {
        tokio::spawn(crate::tasks::sweep_expired_tasks(tasks, ttl));
        tokio::spawn(crate::tasks::release_expired_holds(holds));
        tokio::spawn(crate::notify::run(outbox, delivery));
        #[cfg(feature = "testing")]
        if config.conformance_fixtures {
            tracing::warn!("serving the conformance suite's fixture tools (--conformance-fixtures): for tests only");
            return listen(crate::mcp::FixtureServer::new(server)?, config, http_limits, auth_pool).await;
        }
        listen(server, config, http_limits, auth_pool).await
    });
    // A pending read of stdin cannot be cancelled: do not wait for it at exit.
    runtime.shutdown_background();
    outcome.map_err(CommandError::Failed)
}

/// Serves `server` on stdio, or over HTTP at the configured address, until the end.
async fn listen(server: impl crate::mcp::Served, config: ServeConfig, http_limits: crate::mcp::HttpLimits, auth_pool: Arc<crate::store::Pool>) -> anyhow::Result<()> {
    let Some(address) = config.http else { return crate::mcp::serve_stdio(server).await };
    let listener = tokio::net::TcpListener::bind(address).await.with_context(|| format!("listening on {address}"))?;
    let local = listener.local_addr()?;
    let mut http = crate::mcp::HttpConfig::default();
    http.allowed_hosts.extend(config.allow_hosts);
    // The public URL's host is where clients reach the server (through a proxy, say).
    http.allowed_hosts.extend(config.auth.resource.as_deref().and_then(crate::mcp::Gate::resource_host));
    http.allowed_origins.extend(config.allow_origins);
    http.limits = http_limits;
    (http.auth, http.oauth) = config.auth.gate(auth_pool, local, server.studio())?;
    if let Some(authorization_server) = &http.oauth {
        // The sign-in forms post from the issuer's own pages.
        http.allowed_origins.push(authorization_server.issuer().trim_end_matches('/').to_owned());
    }
    // Scripts read the first line for the address.
    eprintln!("studioflow: serving MCP at http://{local}/mcp");
    if http.auth.is_some() {
        eprintln!("studioflow: every request needs a bearer token");
    }
    if let Some(authorization_server) = &http.oauth {
        eprintln!("studioflow: the authorization server's issuer is {}: connect a host to {}", authorization_server.issuer(), config.auth.resource.clone().unwrap_or_else(|| format!("http://{local}/mcp")));
    }
    crate::mcp::serve_http(server, listener, http, shutdown_signal()).await
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
