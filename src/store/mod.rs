//! The store: the only code that speaks SQL. A [`Store`] is one connection to a studio's database,
//! an SQLite file or a PostgreSQL schema (one SQL text for both, through [`db`]); every write goes
//! through a [`Writer`], the studio's one write transaction at a time, which checks the calendar's
//! rules and writes in one step, so a check-then-insert cannot race another process or server.
//! It stores instants as unix seconds (UTC) and knows nothing of MCP or of the solver.

pub mod db;
mod edits;
mod events;
mod calendars;
mod file;
mod history;
mod migrations;
mod pool;
mod read;
mod roster;
mod tasks;
mod tokens;
mod write;

pub use db::{Backend, Target};
pub use migrations::{migrate_to, MigrationError, LATEST as SCHEMA_VERSION};
pub use edits::{BookingEdit, Undone, WindowRemoved};
pub use events::{Entity, Event, EventQuery};
pub use calendars::{CalendarEntry, FeedRecord};
pub use history::{MoveRecord, NewReflow, ReflowRecord};
pub use roster::{PersonEdit, PersonKind, PersonQuery, PersonRecord, RoomChange, RoomEdit};
pub use pool::Pool;
pub use read::{BookingQuery, Busy};
pub use tasks::{Lease, LiveTask, NewTask, TaskChange, TaskOutcome, TaskRecord, TaskStatus};
pub use tokens::{ApiToken, TokenCheck, TokenStatus, TOKEN_PREFIX};
pub use write::{CancelScope, Writer};

use crate::domain::{
    check_list, Actor, BookingId, ClientId, EngineerId, Refusal, RoomId, SeriesError, SeriesId, Studio, StudioTz, TextKind, TimeError,
    MAX_PEOPLE,
};
use chrono::{DateTime, Duration, Utc};
use db::{Connection, OptionalExtension};

/// How long a connection waits for another's lock before it gives up with "database is locked".
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Work that one server at a time does for a studio ([`Store::exclusively`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusive {
    /// Ending and deleting expired tasks.
    TaskSweep = 1,
    /// Releasing expired holds.
    HoldSweep = 2,
}

/// One connection to a studio's database.
pub struct Store {
    conn: Connection,
    /// The schema version the connection found (or brought the database to) when it opened.
    version: i64,
    /// Read once at open (and after a write that changes it): every rule check needs the zone.
    studio: Option<Studio>,
    /// The rooms as last read, with SQLite's `data_version` then: rooms change rarely and every
    /// search needs them, so they are read again only after someone has written. (PostgreSQL has
    /// no such counter: there the rooms are read each time, a fraction of a millisecond.)
    rooms: std::cell::RefCell<Option<(i64, Vec<crate::domain::Room>)>>,
    /// The SQLite file, to say why it cannot be written when SQLite refuses to (`explained`).
    file: Option<std::path::PathBuf>,
}

/// What went wrong in the store: a refusal the caller can act on, bad input, or a database failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("unknown room \"{0}\": list the rooms to see their ids")]
    UnknownRoom(RoomId),
    #[error("unknown client \"{0}\"")]
    UnknownClient(ClientId),
    #[error("unknown engineer \"{0}\"")]
    UnknownEngineer(EngineerId),
    #[error("unknown booking \"{0}\"")]
    UnknownBooking(BookingId),
    #[error("unknown series \"{0}\"")]
    UnknownSeries(SeriesId),
    /// A value the caller gave cannot be stored; `field` names it, the message says what to change.
    #[error("{message}")]
    Invalid { field: &'static str, message: String },
    /// Bookings a plan was made from are no longer where it found them.
    #[error("{} changed since the plan was made", list_ids(.0))]
    Stale(Vec<BookingId>),
    /// One live reflow per month: this month's is already under way, as `task` when the caller
    /// may know it (a task of a principal is named to nobody: task ids leak nothing).
    #[error("a reflow of {month} is already under way{}", as_task(.task))]
    Busy { month: String, task: Option<String> },
    #[error(transparent)]
    Series(#[from] SeriesError),
    #[error(transparent)]
    Time(#[from] TimeError),
    #[error("this database holds no studio yet: create it with `studioflow init --db PATH [--demo]`")]
    NoStudio,
    #[error(transparent)]
    Migration(#[from] MigrationError),
    #[error("database error: {0}")]
    Database(db::Error),
    /// The connection to the database was lost (PostgreSQL terminated it, shut down or restarted,
    /// or the network failed) before anything was committed: a transient fault, and the same
    /// request may simply be sent again.
    #[error("the database connection was lost ({0}); nothing was changed: retry")]
    ConnectionLost(db::Error),
    /// The connection was lost while a change was being committed: it may have been made or
    /// not. A retry is safe where the request says so itself (an idempotency key).
    #[error(
        "the database connection was lost while the change was being committed ({0}), so it may or may not have been made: \
         read it back before retrying, or retry with the same idempotency key"
    )]
    OutcomeUnknown(db::Error),
    /// The database itself refused a write that would overlap another booking (PostgreSQL's
    /// exclusion constraints, named by `constraint`): a writer the store's own checks did not see.
    #[error("the database refused the change: it would overlap another booking ({constraint}); list the bookings again and pick another time")]
    Overlap { constraint: String },
    /// A stored row this build cannot read; the message names the row.
    #[error("the database holds a value this studioflow cannot read: {0}")]
    Corrupt(String),
    /// SQLite could not open or write the database file: the message says why (the file, its
    /// directory, a read-only file system) and what to change.
    #[error("{why}")]
    Unwritable { why: String, sqlite: String },
    /// No connection could be had from the pool in time (the database is down or restarting,
    /// or every connection is busy): a transient fault.
    #[error("no database connection could be had in time ({0}); nothing was changed: retry shortly")]
    Pool(String),
    /// A task ended or went away while a write for it was being prepared; the write rolls back.
    #[error("the task is no longer live")]
    TaskGone,
    /// A retired room, or a deactivated client or engineer, cannot be booked.
    #[error("{kind} \"{id}\" is inactive and cannot be booked: choose another {kind}, or reactivate it with update_{kind} {{\"active\": true}}")]
    Inactive { kind: &'static str, id: String },
    /// A change to a room would put future bookings out of it; `force` applies it anyway.
    #[error(
        "this change to {room} would displace {total} future {}: {}{}; change them first, or pass force: true to \
         apply it and mark them displaced (a reflow of their month then moves them)",
        if *.total == 1 { "booking" } else { "bookings" },
        list_ids(.bookings),
        if *.total > .bookings.len() { format!(" and {} more", .total - .bookings.len()) } else { String::new() }
    )]
    RoomChangeDisplaces { room: RoomId, bookings: Vec<BookingId>, total: usize },
    /// A reflow cannot be undone: it is unknown, was never applied, was undone already, or
    /// bookings are in the way; the message says which.
    #[error("{0}")]
    Undo(String),
    /// A stored plan cannot be applied as asked: the message says why.
    #[error("{0}")]
    Plan(String),
    #[error("unknown offline window {0}: list_offline_windows shows their ids")]
    UnknownWindow(i64),
    /// The operating system gave no randomness for a new secret.
    #[error("no randomness for a secret: {0}")]
    NoRandomness(#[from] getrandom::Error),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl From<db::Error> for StoreError {
    fn from(e: db::Error) -> StoreError {
        if e.lost_uncommitted() {
            return StoreError::ConnectionLost(e);
        }
        if e.lost_maybe_committed() {
            return StoreError::OutcomeUnknown(e);
        }
        match e.refusal() {
            Some(db::Refusal::Overlap(constraint)) => StoreError::Overlap { constraint },
            // A connection does not know its file's path: where the store does (opening, and
            // `write_as`), `explained` says what is in the way instead.
            Some(db::Refusal::FileAccess) => StoreError::Unwritable {
                why: format!(
                    "the database file cannot be opened or written ({e}): make it, and the directory it is in (SQLite creates FILE-wal and FILE-shm there), writable for the user running studioflow"
                ),
                sqlite: e.to_string(),
            },
            _ => StoreError::Database(e),
        }
    }
}

/// " as task ID", when the task may be named.
pub fn as_task(task: &Option<String>) -> String {
    task.as_ref().map(|id| format!(" as task {id}")).unwrap_or_default()
}

fn list_ids(ids: &[BookingId]) -> String {
    ids.iter().map(BookingId::as_str).collect::<Vec<_>>().join(", ")
}

impl StoreError {
    /// Bad input in `field`, with what to change.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> StoreError {
        StoreError::Invalid { field, message: message.into() }
    }
}

/// `text` as the store keeps it, by its kind's rule (the one rule every text from outside keeps,
/// whichever path it came by), or bad input in `field`.
pub(crate) fn clean_text(field: &'static str, kind: TextKind, text: &str) -> Result<String> {
    kind.clean(text).map_err(|fault| StoreError::invalid(field, format!("{field}: {fault}")))
}

/// A list from outside, each item by `kind`'s rule, refused past [`crate::domain::MAX_LIST`] items.
pub(crate) fn clean_list(field: &'static str, kind: TextKind, items: &[String]) -> Result<Vec<String>> {
    check_list(items).map_err(|fault| StoreError::invalid(field, format!("{field}: {fault}")))?;
    items.iter().map(|item| clean_text(field, kind, item)).collect()
}

/// A count of people (a room's capacity, a session's party) within what a studio can mean.
pub(crate) fn check_people(field: &'static str, n: u32) -> Result<()> {
    if !(1..=MAX_PEOPLE).contains(&n) {
        return Err(StoreError::invalid(field, format!("{field} must be 1 to {MAX_PEOPLE}")));
    }
    Ok(())
}

impl StoreError {
    /// Whether the failure is ours (the database, its contents, a task gone meanwhile) rather
    /// than something the caller asked for and can change.
    pub fn is_ours(&self) -> bool {
        matches!(
            self,
            StoreError::Database(_) | StoreError::Migration(_) | StoreError::Corrupt(_) | StoreError::Pool(_) | StoreError::TaskGone
                | StoreError::NoRandomness(_) | StoreError::Unwritable { .. } | StoreError::ConnectionLost(_) | StoreError::OutcomeUnknown(_)
        )
    }

    /// Whether the failure is ours and passing: the database connection was lost, or none could
    /// be had in time. Nothing is wrong with the request; sent again, it may succeed (after
    /// [`StoreError::OutcomeUnknown`], safely only if it carries an idempotency key).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::ConnectionLost(_) | StoreError::OutcomeUnknown(_) | StoreError::Pool(_))
    }

    /// Whether the database gave up on a lock another connection held.
    fn is_busy(&self) -> bool {
        match self {
            StoreError::Database(e) | StoreError::Migration(MigrationError::Database(e)) => e.refusal() == Some(db::Refusal::Busy),
            _ => false,
        }
    }
}

impl Store {
    /// Opens a studio's database (an SQLite file, created if needed, or a PostgreSQL URL) and
    /// brings its schema up to date.
    pub fn open(target: impl Into<Target>) -> Result<Store> {
        Store::open_retrying(&target.into(), migrations::LATEST)
    }

    /// Two processes creating one file at the same moment can meet a lock that SQLite reports at
    /// once rather than waiting (switching to WAL, or upgrading a read lock): open again shortly.
    fn open_retrying(target: &Target, version: i64) -> Result<Store> {
        let mut attempt = 0;
        loop {
            let conn = match target {
                Target::File(path) => Connection::open_sqlite(path, BUSY_TIMEOUT),
                Target::Postgres(url) => Connection::connect_postgres(url),
            };
            let opened = conn.map_err(StoreError::from).and_then(|conn| Store::with_connection(conn, version));
            match opened {
                Err(e) if e.is_busy() && attempt < 50 => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20 * attempt.min(10)));
                }
                Ok(mut store) => {
                    store.file = target.file().map(std::path::Path::to_path_buf);
                    return Ok(store);
                }
                Err(e) => return Err(explained(target.file(), e)),
            }
        }
    }

    /// A private database that lives as long as the store; for tests and scratch work.
    pub fn open_in_memory() -> Result<Store> {
        Store::with_connection(Connection::open_sqlite_in_memory()?, migrations::LATEST)
    }

    /// Opens a database at an older schema version, as an earlier studioflow left it; for upgrade tests.
    #[cfg(feature = "testing")]
    pub fn open_at_version(target: impl Into<Target>, version: i64) -> Result<Store> {
        Store::open_retrying(&target.into(), version)
    }

    fn with_connection(conn: Connection, version: i64) -> Result<Store> {
        let version = migrations::migrate_to(&conn, version)?;
        let mut store = Store { conn, version, studio: None, rooms: Default::default(), file: None };
        store.studio = store.load_studio()?;
        Ok(store)
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        Ok(migrations::version(&self.conn)?)
    }

    /// Which database this store speaks to.
    pub fn backend(&self) -> Backend {
        self.conn.backend()
    }

    /// The studio, or [`StoreError::NoStudio`] for a database that was never initialised.
    pub fn studio(&self) -> Result<&Studio> {
        self.studio.as_ref().ok_or(StoreError::NoStudio)
    }

    /// Starts a write transaction. Nothing it does is visible to others until [`Writer::commit`];
    /// dropping it without committing rolls everything back.
    pub fn write(&mut self) -> Result<Writer<'_>> {
        self.write_by(&Actor::default())
    }

    /// [`Store::write`], with the history naming `actor` as the one who wrote.
    pub fn write_by(&mut self, actor: &Actor) -> Result<Writer<'_>> {
        // `data_version` only moves for other connections' commits: forget our own copy here.
        self.rooms.borrow_mut().take();
        let tx = self.conn.transaction()?;
        Ok(Writer::new(tx, self.studio.clone(), actor.clone()))
    }

    /// Runs `f` in one write transaction and commits it if `f` succeeds; the history names
    /// studioflow itself as the writer (see [`Store::write_as`]).
    pub fn write_with<T>(&mut self, f: impl FnOnce(&mut Writer<'_>) -> Result<T>) -> Result<T> {
        self.write_as(&Actor::default(), f)
    }

    /// Runs `f` in one write transaction as `actor` and commits it if `f` succeeds; every change
    /// it makes is recorded in the history as theirs, in the same transaction.
    pub fn write_as<T>(&mut self, actor: &Actor, f: impl FnOnce(&mut Writer<'_>) -> Result<T>) -> Result<T> {
        let file = self.file.clone();
        let written = (|| {
            let mut writer = self.write_by(actor)?;
            let value = f(&mut writer)?;
            let studio = writer.commit()?;
            self.studio = studio;
            Ok(value)
        })();
        written.map_err(|e| explained(file.as_deref(), e))
    }

    fn load_studio(&self) -> Result<Option<Studio>> {
        load_studio(&self.conn, self.version)
    }

    /// Whether the connection still answers (the pool asks before handing it out).
    pub fn is_alive(&self) -> Result<()> {
        Ok(self.conn.query_row("SELECT 1", (), |_| Ok(()))?)
    }

    /// Whether the connection is gone for good (PostgreSQL closed it, or a statement found it
    /// lost), so the pool drops it.
    pub fn is_broken(&self) -> bool {
        self.conn.is_closed()
    }

    /// Starts a use of the connection (the pool hands it out): see [`Store::lost_uncommitted`].
    pub(crate) fn begin_use(&self) {
        self.conn.begin_use();
    }

    /// Whether the connection was lost during this use before anything sent on it may have been
    /// committed: the work done on it changed nothing and may be done again on another.
    pub(crate) fn lost_uncommitted(&self) -> bool {
        self.conn.lost_uncommitted()
    }

    /// Reads the studio's settings again, for a connection that others may have written through.
    pub fn refresh_studio(&mut self) -> Result<()> {
        self.studio = self.load_studio()?;
        Ok(())
    }

    /// Runs `f` unless another server is running work of the same `purpose` on this studio right
    /// now (then `None`): one sweeper at a time across servers. See [`Connection::try_lock`].
    pub fn exclusively<T>(&mut self, purpose: Exclusive, f: impl FnOnce(&mut Store) -> Result<T>) -> Result<Option<T>> {
        let key = purpose as i32;
        if !self.conn.try_lock(key)? {
            return Ok(None);
        }
        let outcome = f(self);
        self.conn.unlock(key)?;
        outcome.map(Some)
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// A refusal to open or write an SQLite file, told with why and what to change when the file is
/// known (`file.rs`); any other error as it is.
fn explained(file: Option<&std::path::Path>, e: StoreError) -> StoreError {
    let sqlite = match &e {
        StoreError::Unwritable { sqlite, .. } => sqlite.clone(),
        StoreError::Migration(MigrationError::Database(db)) if db.refusal() == Some(db::Refusal::FileAccess) => db.to_string(),
        _ => return e,
    };
    match file {
        Some(path) => StoreError::Unwritable { why: file::explain(path, &sqlite), sqlite },
        None => e,
    }
}

fn load_studio(conn: &Connection, version: i64) -> Result<Option<Studio>> {
    // A database held at an older schema (`open_at_version`, for upgrade tests) has no horizon
    // column yet: it reads as the default, which is what the migration writes.
    let horizon = if version >= 5 { "horizon_days".to_owned() } else { crate::domain::DEFAULT_HORIZON_DAYS.to_string() };
    let sql = format!("SELECT name, timezone, notice_minutes, clock, {horizon} FROM studio WHERE id = 1");
    let row = conn
        .query_row(&sql, (), |row| {
            Ok((
                (row.get::<_, String>(0)?, row.get::<_, String>(1)?),
                (row.get::<_, i64>(2)?, row.get::<_, Option<i64>>(3)?, row.get::<_, i64>(4)?),
            ))
        })
        .optional()?;
    let Some(((name, zone), (notice, clock, horizon_days))) = row else { return Ok(None) };
    let tz: StudioTz = zone.parse().map_err(|e: TimeError| StoreError::Corrupt(e.to_string()))?;
    Ok(Some(Studio {
        name,
        tz,
        notice: Duration::minutes(notice),
        clock: clock.map(instant).transpose()?,
        horizon: Duration::days(horizon_days),
    }))
}

/// An instant from its stored unix seconds.
fn instant(seconds: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0).ok_or_else(|| StoreError::Corrupt(format!("timestamp {seconds}")))
}

/// The instant stored in a row's column as unix seconds; the one way every table's instants are read.
fn instant_at(row: &db::Row<'_>, column: usize) -> db::Result<DateTime<Utc>> {
    let seconds: i64 = row.get(column)?;
    DateTime::from_timestamp(seconds, 0).ok_or_else(|| db::Error::column(column, format!("timestamp {seconds} is out of range")))
}

/// [`instant_at`] for a column that may be NULL.
fn instant_or_null_at(row: &db::Row<'_>, column: usize) -> db::Result<Option<DateTime<Utc>>> {
    match row.get::<_, Option<i64>>(column)? {
        Some(_) => instant_at(row, column).map(Some),
        None => Ok(None),
    }
}

fn json_list(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("list {text:?}: {e}")))
}

fn to_json_list(items: &[String]) -> String {
    serde_json::to_string(items).expect("a list of strings always serialises")
}
