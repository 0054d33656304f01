//! The command-line commands, as library functions that `main` calls, one file each: `init`,
//! `export-instance`, `solve`, `demo`, `report`, `serve`, `list`, `calendar` and `feed`, `token`, `user` and `task`.
//! They print for people (stdout for results, stderr for progress) and sort failures into the
//! caller's fault and ours, which `main` turns into exit codes.

mod calendar;
mod demo;
mod export;
mod init;
mod list;
mod report;
mod serve;
mod solve;
mod task;
mod token;
mod user;
mod webhook;

pub use calendar::{calendar, feed, FeedAction};
pub use demo::demo;
pub use export::export_instance;
pub use init::{init, write_example};
pub use list::{list, Listing};
pub use report::report;
pub use serve::{serve, AuthFlags, ServeConfig};
pub use solve::solve;
pub use task::{task, TaskAction};
pub use token::{token, TokenAction};
pub use user::{user, UserCommand};
pub use webhook::{check_events, webhook, webhook_json, WebhookCommand};

use crate::domain::RoomId;
use crate::error::Blame;
use crate::reflow::{Month, ReflowRequest};
use crate::store::{Store, Target};
use anyhow::{anyhow, Context};
use std::path::Path;

/// Who the history records for what an operator does with a command (`token`, `user`, `task`).
const OPERATOR: &str = "operator";

/// A failed command: the input was wrong (exit 2), or the work failed (exit 1).
#[derive(Debug)]
pub enum CommandError {
    Input(anyhow::Error),
    Failed(anyhow::Error),
}

impl<E: Blame> From<E> for CommandError {
    fn from(e: E) -> Self {
        if e.is_ours() { CommandError::Failed(e.into()) } else { CommandError::Input(e.into()) }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> Self {
        CommandError::Failed(e.into())
    }
}

pub type CommandResult = Result<(), CommandError>;

/// Removes a database file and its WAL companions; a file that is not there is no error.
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

fn open_existing(db: &Target) -> Result<Store, CommandError> {
    if db.file().is_some_and(|file| !file.exists()) {
        return Err(CommandError::Input(anyhow!("{db} does not exist: create it with `studioflow init --db {db} --demo`")));
    }
    let store = Store::open(db).with_context(|| format!("opening {db}")).map_err(CommandError::Failed)?;
    store.studio()?;
    Ok(store)
}

