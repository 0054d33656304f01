//! `studioflow demo`: a fresh demo database, its scenario reflowed end to end through the same
//! task runner the server uses, and a summary for people: what moved, and what could not, and why.

use super::{remove_database, CommandError, CommandResult};
use crate::demo;
use crate::domain::{RoomId, Status, StudioTz};
use crate::reflow_text::{MoveLine, ReflowReport, UnresolvedLine};
use crate::reflow::{Month, ReflowRequest, DEFAULT_MAX_SHIFT};
use crate::store::{ReflowRecord, Store};
use anyhow::{anyhow, Context};
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use studioflow_solver as solver;

/// The demo's page, written next to its database.
pub const PAGE: &str = "studioflow-demo.html";

/// `demo`: a fresh demo database, its scenario reflowed end to end, and a summary.
pub fn demo(db: &Path) -> CommandResult {
    remove_database(db);
    let mut store = Store::open(db).with_context(|| format!("creating {}", db.display())).map_err(CommandError::Failed)?;
    let loaded = demo::load_demo(&mut store).map_err(CommandError::Failed)?;
    let studio = store.studio()?.clone();
    let tz = studio.tz;
    let clock = studio.now(Utc::now());
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
    let config = crate::tasks::TaskConfig::new(
        std::time::Duration::from_secs(86_400),
        solver::Options::default().threads,
        std::time::Duration::from_secs(10),
    );
    let tasks = crate::tasks::Tasks::new(pool.clone(), config);
    let job = crate::tasks::ReflowJob { request, dry_run: false, require_approval: false, actor: crate::domain::Actor::new("studioflow", "demo"), owner: None };
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
        task = tasks.get(&task.id, None).map_err(|e| CommandError::Failed(e.into()))?;
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

    // The same review as a page, next to the database.
    let page_path = db.with_file_name(PAGE);
    let page = crate::view::page(&crate::view::build(&store, None, Some(&record.id))?)?;
    super::report::write_page(&page_path, &page)?;
    println!();
    println!("The reflow's review, to open in a browser: {}", page_path.display());
    Ok(())
}

fn show(tz: &StudioTz, t: DateTime<Utc>) -> String {
    tz.local(t).format("%a %-d %b %Y %H:%M").to_string()
}

fn month_counts(store: &Store, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<BTreeMap<RoomId, usize>, CommandError> {
    let mut counts = BTreeMap::new();
    for room in store.rooms()?.iter() {
        counts.insert(room.id.clone(), 0);
    }
    for b in store.bookings_between(from, to)? {
        if b.status != Status::Cancelled && b.start >= from {
            *counts.entry(b.room.clone()).or_default() += 1;
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
    let clients: HashMap<_, _> = store.clients()?.into_iter().map(|c| (c.id, c.name)).collect();
    let mut unresolved = Vec::new();
    for (booking, reason) in &reflow.unresolved {
        let Some(b) = store.booking(booking)? else { continue };
        let detail = format!(
            "{}-{}  {}  {} (party of {})",
            show(tz, b.start),
            tz.local(b.end).format("%H:%M"),
            b.room,
            clients.get(&b.client).map_or(b.client.as_str(), String::as_str),
            b.party_size
        );
        unresolved.push(UnresolvedLine { booking: booking.to_string(), detail: Some(detail), reason: reason.clone() });
    }
    let report = ReflowReport {
        reflow_id: reflow.id.clone(),
        month: reflow.month.clone(),
        applied: reflow.applied,
        affected: reflow.affected,
        cost: reflow.cost,
        lower_bound: reflow.lower_bound,
        absorbed: reflow.absorbed,
        moves: reflow
            .moves
            .iter()
            .map(|m| MoveLine {
                booking: m.moved.booking.to_string(),
                from_room: m.moved.from_room.to_string(),
                to_room: m.moved.to_room.to_string(),
                shifted: m.moved.to_start != m.moved.from_start,
                from_engineer: m.moved.from_engineer.as_ref().map(ToString::to_string),
                to_engineer: m.moved.to_engineer.as_ref().map(ToString::to_string),
            })
            .collect(),
        unresolved,
    };
    // The headline and the unresolved list are printed as the client prints them (crate::reflow_text).
    let mut out = std::io::stdout().lock();
    writeln!(out)?;
    report.write_headline(&mut out)?;
    writeln!(out)?;
    writeln!(out, "Bookings per room in {} (before -> after):", reflow.month)?;
    for (room, n) in before {
        let m = after.get(room).copied().unwrap_or(0);
        let delta = m as i64 - *n as i64;
        let delta = if delta == 0 { String::new() } else { format!("  ({delta:+})") };
        writeln!(out, "  {:<12} {:>4} -> {:>4}{delta}", room.as_str(), n, m)?;
    }
    report.write_engineer_changes(&mut out)?;
    report.write_unresolved(&mut out)?;
    Ok(())
}

