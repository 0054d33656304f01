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
    pub db: std::path::PathBuf,
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
    /// Tests only: a pause per solved part, to stop a process in the middle of a solve.
    #[cfg(feature = "testing")]
    pub test_solve_delay_ms: Option<u64>,
    /// Tests only: also serve the MCP conformance suite's fixture tools.
    #[cfg(feature = "testing")]
    pub conformance_fixtures: bool,
}

impl ServeConfig {
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
        #[allow(unused_mut)]
        let mut config = crate::tasks::TaskConfig::new(
            Duration::from_secs_f64(self.task_ttl),
            self.solver_threads.unwrap_or(solver::Options::default().threads),
            Duration::from_secs_f64(self.solver_time_limit),
        );
        #[cfg(feature = "testing")]
        {
            config.test_delay_per_part = self.test_solve_delay_ms.map(Duration::from_millis);
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
    let ttl = task_config.ttl;
    let pool = crate::store::Pool::open(&config.db, 8)
        .with_context(|| format!("opening {}", config.db.display()))
        .map_err(CommandError::Failed)?;
    if config.demo {
        pool.with(|store| -> Result<(), CommandError> {
            if store.studio().is_err() {
                let loaded = demo::load_demo(store).map_err(CommandError::Failed)?;
                tracing::info!(bookings = loaded.bookings, "loaded the demo studio");
            }
            Ok(())
        })??;
    }
    let pool = Arc::new(pool);
    let tasks = crate::tasks::Tasks::new(pool.clone(), task_config);
    let holds = pool.clone();
    // Work a killed process left behind is redone before anyone asks about it.
    let resumed = tasks.resume()?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed reflow tasks left working");
    }
    #[allow(unused_mut)]
    let mut server = crate::mcp::StudioServer::new(crate::mcp::Ctx { pool, tasks: tasks.clone() });
    #[cfg(feature = "testing")]
    if config.conformance_fixtures {
        tracing::warn!("serving the conformance suite's fixture tools (--conformance-fixtures): for tests only");
        server = server.with_conformance_fixtures();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let outcome = runtime.block_on(async move {
        tokio::spawn(sweep_expired(tasks, ttl));
        tokio::spawn(release_expired_holds(holds));
        match config.http {
            None => crate::mcp::serve_stdio(server).await,
            Some(address) => {
                let listener = tokio::net::TcpListener::bind(address).await.with_context(|| format!("listening on {address}"))?;
                let mut http = crate::mcp::HttpConfig::default();
                http.allowed_hosts.extend(config.allow_hosts);
                http.allowed_origins.extend(config.allow_origins);
                http.limits = http_limits;
                eprintln!("studioflow: serving MCP at http://{}/mcp", listener.local_addr()?);
                crate::mcp::serve_http(server, listener, http, shutdown_signal()).await
            }
        }
    });
    // A pending read of stdin cannot be cancelled: do not wait for it at exit.
    runtime.shutdown_background();
    outcome.map_err(CommandError::Failed)
}

/// Deletes expired tasks a few times per time to live, at least once a minute, for as long as the
/// server runs.
async fn sweep_expired(tasks: Arc<crate::tasks::Tasks>, ttl: Duration) {
    let every = (ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let tasks = tasks.clone();
        match tokio::task::spawn_blocking(move || tasks.sweep()).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(deleted = n, "deleted expired tasks"),
            Ok(Err(e)) => tracing::warn!(error = %e, "sweeping expired tasks failed"),
            Err(_) => break,
        }
    }
}

/// How often expired holds are looked for: a released hold frees its slot within this long.
const HOLD_SWEEP: Duration = Duration::from_secs(1);

/// Releases (cancels) tentative bookings whose hold has ended, by the studio's clock, for as long
/// as the server runs; each release is recorded as done through "hold expiry".
async fn release_expired_holds(pool: Arc<crate::store::Pool>) {
    let mut tick = tokio::time::interval(HOLD_SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let pool = pool.clone();
        let released = tokio::task::spawn_blocking(move || {
            pool.with(|store| {
                let now = store.studio()?.now(chrono::Utc::now());
                if !store.has_expired_holds(now)? {
                    return Ok(Vec::new());
                }
                store.write_as(&crate::domain::Actor::new("studioflow", "hold expiry"), |w| w.release_expired_holds(now))
            })?
        });
        match released.await {
            Ok(Ok(bookings)) if bookings.is_empty() => {}
            Ok(Ok(bookings)) => tracing::info!(released = bookings.len(), "released expired holds"),
            Ok(Err(crate::store::StoreError::NoStudio)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "releasing expired holds failed"),
            Err(_) => break,
        }
    }
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
