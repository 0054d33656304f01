//! The command-line commands, as library functions that `main` calls: `init`, `export-instance`,
//! `solve` and `demo`. They print for people (stdout for results, stderr for progress) and sort
//! failures into the caller's fault and ours, which `main` turns into exit codes.

use crate::demo;
use crate::domain::{RoomId, Status, StudioTz};
use crate::reflow::{self, Month, ReflowError, ReflowRequest, DEFAULT_MAX_SHIFT};
use crate::store::ReflowRecord;
use crate::store::{Store, StoreError};
use anyhow::{anyhow, Context};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use studioflow_solver as solver;

/// A failed command: the input was wrong (exit 2), or the work failed (exit 1).
#[derive(Debug)]
pub enum CommandError {
    Input(anyhow::Error),
    Failed(anyhow::Error),
}

impl From<StoreError> for CommandError {
    fn from(e: StoreError) -> Self {
        if e.is_ours() { CommandError::Failed(e.into()) } else { CommandError::Input(e.into()) }
    }
}

impl From<ReflowError> for CommandError {
    fn from(e: ReflowError) -> Self {
        match e {
            ReflowError::Store(e) => e.into(),
            other => CommandError::Input(other.into()),
        }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> Self {
        CommandError::Failed(e.into())
    }
}

pub type CommandResult = Result<(), CommandError>;

/// `init`: creates a new database holding the demo studio or the studio of the given files.
pub fn init(db: &Path, demo: bool, studio: Option<&Path>, bookings: Option<&Path>) -> CommandResult {
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display())).map_err(CommandError::Input)
    };
    let (studio_text, bookings_text) = match (demo, studio) {
        (true, _) => (demo::STUDIO_TOML.to_owned(), Some(demo::BOOKINGS_TOML.to_owned())),
        (false, Some(path)) => (read(path)?, bookings.map(read).transpose()?),
        (false, None) => return Err(CommandError::Input(anyhow!("give --demo or --studio FILE"))),
    };
    let existed = db.exists();
    let mut store = Store::open(db).with_context(|| format!("opening {}", db.display())).map_err(CommandError::Failed)?;
    if store.studio().is_ok() {
        return Err(CommandError::Input(anyhow!("{} already holds a studio: choose a new file", db.display())));
    }
    match demo::load(&mut store, &studio_text, bookings_text.as_deref()) {
        Ok(loaded) => {
            println!(
                "Created {}: {} rooms, {} clients, {} engineers, {} bookings ({} series), {} offline windows.",
                db.display(), loaded.rooms, loaded.clients, loaded.engineers, loaded.bookings, loaded.series, loaded.offline_windows
            );
            Ok(())
        }
        Err(e) => {
            // The load is one transaction, so nothing of it was written; a file we created is removed.
            drop(store);
            if !existed {
                remove_database(db);
            }
            Err(CommandError::Input(e))
        }
    }
}

fn remove_database(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }
}

fn parse_request(month: &str, offline: &[String], max_shift_minutes: i64) -> Result<ReflowRequest, CommandError> {
    let month = Month::parse(month)?;
    let offline_rooms = offline.iter().map(|r| RoomId::new(r.trim())).filter(|r| !r.as_str().is_empty()).collect();
    Ok(ReflowRequest { month, offline_rooms, max_shift_minutes })
}

fn open_existing(db: &Path) -> Result<Store, CommandError> {
    if !db.exists() {
        return Err(CommandError::Input(anyhow!("{} does not exist: create it with `studioflow init --db {} --demo`", db.display(), db.display())));
    }
    let store = Store::open(db).with_context(|| format!("opening {}", db.display())).map_err(CommandError::Failed)?;
    store.studio()?;
    Ok(store)
}

/// `export-instance`: prints the month as a REFLOW.md instance.
pub fn export_instance(db: &Path, month: &str, offline: &[String], max_shift_minutes: i64) -> CommandResult {
    let store = open_existing(db)?;
    let request = parse_request(month, offline, max_shift_minutes)?;
    let export = reflow::export_instance(&store, &request)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &export.instance).map_err(|e| CommandError::Failed(e.into()))?;
    writeln!(out)?;
    Ok(())
}

/// `solve`: reads an instance, prints the solution JSON on stdout and a summary line on stderr.
pub fn solve(file: &Path, threads: Option<usize>, time_limit: f64) -> CommandResult {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display())).map_err(CommandError::Input)?
    };
    let instance: solver::Instance = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a REFLOW.md instance", file.display()))
        .map_err(CommandError::Input)?;
    instance.check().map_err(|e| CommandError::Input(anyhow!("the instance is invalid: {e}")))?;
    if !(time_limit > 0.0 && time_limit <= 86_400.0) {
        return Err(CommandError::Input(anyhow!("--time-limit must be more than 0 and at most 86400 seconds")));
    }
    if threads == Some(0) {
        return Err(CommandError::Input(anyhow!("--threads must be at least 1")));
    }
    let options = solver::Options {
        threads: threads.unwrap_or(solver::Options::default().threads),
        time_limit: std::time::Duration::from_secs_f64(time_limit),
        ..solver::Options::default()
    };
    let report = solver::solve_with_report(&instance, &options);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &report.solution).map_err(|e| CommandError::Failed(e.into()))?;
    writeln!(out)?;
    eprintln!("{}", summary_line(&report, options.threads));
    Ok(())
}

fn summary_line(report: &solver::Report, threads: usize) -> String {
    let s = &report.solution;
    let quality = if report.proven_optimal {
        "proven optimal".to_owned()
    } else {
        format!("lower bound {}", report.lower_bound)
    };
    let stopped = if report.cancelled { ", cancelled" } else if report.timed_out { ", time limit reached" } else { "" };
    format!(
        "moved {}, unresolved {}, cost {} ({quality}) in {:.2} s on {threads} thread(s), {} part(s){stopped}",
        s.moved, s.unresolved, s.cost, report.elapsed.as_secs_f64(), report.parts
    )
}

/// `demo`: a fresh demo database, its scenario reflowed end to end, and a summary.
pub fn demo(db: &Path) -> CommandResult {
    remove_database(db);
    let mut store = Store::open(db).with_context(|| format!("creating {}", db.display())).map_err(CommandError::Failed)?;
    let loaded = demo::load_demo(&mut store).map_err(CommandError::Failed)?;
    let studio = store.studio()?.clone();
    let tz = studio.tz;
    let clock = studio.now();
    println!("{} ({}), the studio clock at {}", studio.name, tz, show(&tz, clock));
    println!(
        "Loaded {} rooms, {} clients, {} engineers and {} bookings ({} weekly series) into {}.",
        loaded.rooms, loaded.clients, loaded.engineers, loaded.bookings, loaded.series, db.display()
    );

    let request = ReflowRequest {
        month: Month::parse(demo::SCENARIO_MONTH)?,
        offline_rooms: vec![RoomId::new(demo::SCENARIO_ROOM)],
        max_shift_minutes: DEFAULT_MAX_SHIFT,
    };
    let (month_start, month_end) = request.month.bounds(&tz);
    for w in store.offline_windows(Some(&request.offline_rooms[0]), month_start, month_end)? {
        println!("{} is offline from {} to {}: {}.", w.room, show(&tz, w.from), show(&tz, w.to), w.reason);
    }
    let before = month_counts(&store, month_start, month_end)?;

    // The reflow runs as a durable task, through the same runner the MCP server uses; its status
    // messages are the progress shown here.
    drop(store);
    let pool = Arc::new(crate::store::Pool::open(db, 2).map_err(|e| CommandError::Failed(e.into()))?);
    let config = crate::tasks::TaskConfig {
        ttl: std::time::Duration::from_secs(86_400),
        solver_threads: solver::Options::default().threads,
        solver_time_limit: std::time::Duration::from_secs(10),
        test_delay_per_part: None,
    };
    let tasks = crate::tasks::Tasks::new(pool.clone(), config, Arc::new(crate::mcp::ToolRender));
    let job = crate::tasks::ReflowJob { request, dry_run: false, require_approval: false };
    let started = Instant::now();
    let mut task = tasks.start_reflow(&job).map_err(|e| CommandError::Failed(e.into()))?;
    eprintln!("Task {} created.", task.id);
    let mut shown = String::new();
    loop {
        let message = task.status_message.clone().unwrap_or_default();
        if message != shown {
            eprintln!("  [{}] {message}", task.status.as_str());
            shown = message;
        }
        if task.status.is_final() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        task = tasks.get(&task.id).map_err(|e| CommandError::Failed(e.into()))?;
    }
    let elapsed = started.elapsed();
    let reflow_id = match (task.status, &task.reflow_id) {
        (crate::store::TaskStatus::Completed, Some(id)) => id.clone(),
        _ => return Err(CommandError::Failed(anyhow!("the reflow task ended {}: {shown}", task.status.as_str()))),
    };
    let store = Store::open(db).map_err(|e| CommandError::Failed(e.into()))?;
    let record = store.reflow(&reflow_id)?.ok_or_else(|| CommandError::Failed(anyhow!("reflow {reflow_id} is missing")))?;
    let after = month_counts(&store, month_start, month_end)?;
    print_reflow(&store, &tz, &record, &before, &after)?;
    eprintln!("Solved and applied in {:.2} s.", elapsed.as_secs_f64());
    Ok(())
}

fn show(tz: &StudioTz, t: DateTime<Utc>) -> String {
    tz.local(t).format("%a %-d %b %Y %H:%M").to_string()
}

fn month_counts(store: &Store, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<BTreeMap<RoomId, usize>, CommandError> {
    let mut counts = BTreeMap::new();
    for room in store.rooms()? {
        counts.insert(room.id, 0);
    }
    for b in store.bookings_between(from, to)? {
        if b.status != Status::Cancelled && b.start >= from {
            *counts.entry(b.room).or_default() += 1;
        }
    }
    Ok(counts)
}

fn print_reflow(
    store: &Store,
    tz: &StudioTz,
    reflow: &ReflowRecord,
    before: &BTreeMap<RoomId, usize>,
    after: &BTreeMap<RoomId, usize>,
) -> CommandResult {
    let quality = match reflow.lower_bound {
        Some(bound) if bound >= reflow.cost => "proven optimal".to_owned(),
        Some(bound) => format!("lower bound {bound}"),
        None => "no bound recorded".to_owned(),
    };
    println!();
    println!(
        "Reflow {}: {} affected bookings; moved {}, unresolved {}. Cost {} ({quality}).",
        reflow.id, reflow.affected, reflow.moves.len(), reflow.unresolved.len(), reflow.cost
    );
    let same_room = reflow.moves.iter().filter(|m| m.moved.to_room == m.moved.from_room).count();
    let shifted = reflow.moves.iter().filter(|m| m.moved.to_start != m.moved.from_start).count();
    println!(
        "  {} moved to another room, {} kept their room at a new time; {} start at a different time.",
        reflow.moves.len() - same_room, same_room, shifted
    );
    let month = &reflow.month;
    println!();
    println!("Bookings per room in {month} (before -> after):");
    for (room, n) in before {
        let m = after.get(room).copied().unwrap_or(0);
        let delta = m as i64 - *n as i64;
        let delta = if delta == 0 { String::new() } else { format!("  ({delta:+})") };
        println!("  {:<12} {:>4} -> {:>4}{delta}", room.as_str(), n, m);
    }

    if !reflow.unresolved.is_empty() {
        println!();
        println!("Unresolved, left where they are:");
        let clients: HashMap<_, _> = store.clients()?.into_iter().map(|c| (c.id, c.name)).collect();
        for (booking, reason) in &reflow.unresolved {
            let Some(b) = store.booking(booking)? else { continue };
            println!(
                "  {}  {}-{}  {}  {} (party of {})",
                booking,
                show(tz, b.start),
                tz.local(b.end).format("%H:%M"),
                b.room,
                clients.get(&b.client).map_or(b.client.as_str(), String::as_str),
                b.party_size
            );
            println!("      {reason}");
        }
    }
    Ok(())
}

/// What `serve` was asked to do.
pub struct ServeConfig {
    pub db: std::path::PathBuf,
    pub http: Option<std::net::SocketAddr>,
    pub demo: bool,
    pub allow_hosts: Vec<String>,
    pub allow_origins: Vec<String>,
    pub solver_threads: Option<usize>,
    pub solver_time_limit: f64,
    /// Seconds a task is kept after it is created.
    pub task_ttl: f64,
    /// Tests only: a pause per solved part, to stop a process in the middle of a solve.
    pub test_solve_delay_ms: Option<u64>,
    /// Tests only: also serve the MCP conformance suite's fixture tools.
    pub conformance_fixtures: bool,
}

/// `serve`: the MCP server on stdio (until stdin closes) or on HTTP (until SIGTERM or Ctrl-C).
pub fn serve(config: ServeConfig) -> CommandResult {
    if !(config.solver_time_limit > 0.0 && config.solver_time_limit <= 3600.0) {
        return Err(CommandError::Input(anyhow!("--solver-time-limit must be more than 0 and at most 3600 seconds")));
    }
    if config.solver_threads == Some(0) {
        return Err(CommandError::Input(anyhow!("--solver-threads must be at least 1")));
    }
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
    if !(config.task_ttl >= 1.0 && config.task_ttl <= crate::tasks::MAX_TTL.as_secs_f64()) {
        return Err(CommandError::Input(anyhow!("--task-ttl must be 1 second to 7 days (604800 seconds)")));
    }
    let pool = Arc::new(pool);
    let solver_threads = config.solver_threads.unwrap_or(solver::Options::default().threads);
    let solver_time_limit = std::time::Duration::from_secs_f64(config.solver_time_limit);
    let ttl = std::time::Duration::from_secs_f64(config.task_ttl);
    let task_config = crate::tasks::TaskConfig {
        ttl,
        solver_threads,
        solver_time_limit,
        test_delay_per_part: config.test_solve_delay_ms.map(std::time::Duration::from_millis),
    };
    let tasks = crate::tasks::Tasks::new(pool.clone(), task_config, Arc::new(crate::mcp::ToolRender));
    // Work a killed process left behind is redone before anyone asks about it.
    let resumed = tasks.resume()?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed reflow tasks left working");
    }
    let ctx = crate::mcp::Ctx { pool, solver_threads, solver_time_limit };
    let mut server = crate::mcp::StudioServer::new(ctx, tasks.clone());
    if config.conformance_fixtures {
        tracing::warn!("serving the conformance suite's fixture tools (--conformance-fixtures): for tests only");
        server = server.with_conformance_fixtures();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let outcome = runtime.block_on(async move {
        // The sweeper deletes expired tasks a few times per time to live, at least once a minute.
        let every = (ttl / 4).clamp(std::time::Duration::from_millis(250), std::time::Duration::from_secs(60));
        tokio::spawn(async move {
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
        });
        match config.http {
            None => crate::mcp::serve_stdio(server).await,
            Some(address) => {
                let listener = tokio::net::TcpListener::bind(address).await.with_context(|| format!("listening on {address}"))?;
                let mut http = crate::mcp::HttpConfig::default();
                http.allowed_hosts.extend(config.allow_hosts);
                http.allowed_origins.extend(config.allow_origins);
                eprintln!("studioflow: serving MCP at http://{}/mcp", listener.local_addr()?);
                crate::mcp::serve_http(server, listener, http, shutdown_signal()).await
            }
        }
    });
    // A pending read of stdin cannot be cancelled: do not wait for it at exit.
    runtime.shutdown_background();
    outcome.map_err(CommandError::Failed)
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
