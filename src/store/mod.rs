//! The store: the only code that speaks SQL. A [`Store`] is one connection to a studio's database,
//! an SQLite file or a PostgreSQL schema (one SQL text for both, through [`db`]); every write goes
//! through a [`Writer`], the studio's one write transaction at a time, which checks the calendar's
//! rules and writes in one step, so a check-then-insert cannot race another process or server.
//! It stores instants as unix seconds (UTC) and knows nothing of MCP or of the solver.

pub mod db;
mod calendars;
mod edits;
mod error;
mod events;
mod file;
mod grants;
mod idempotency;
mod mail;
mod migrations;
mod mirror;
mod outbox;
mod payments;
mod pool;
mod prices;
mod read;
mod reflows;
mod roster;
mod rules;
mod staff_address;
mod tasks;
mod time_off;
mod tokens;
mod users;
mod waitlist;
mod webhooks;
mod write;

pub use db::{Backend, Target};
use std::sync::Arc;
pub use migrations::{migrate_to, MigrationError, LATEST as SCHEMA_VERSION};
pub use edits::{BookingEdit, Undone, WindowRemoved};
pub use error::{as_task, PlanRefusal, Remedy, Result, StoreError, UndoRefusal};
pub use events::{Action, Entity, Event, EventQuery};
pub use calendars::{CalendarEntry, FeedRecord};
pub use reflows::{MoveRecord, NewReflow, ReflowRecord};
pub use roster::{PersonEdit, PersonKind, PersonQuery, PersonRecord, RoomChange, RoomEdit};
pub use payments::{Payment, PaymentRecorded};
use mirror::Mirror;
pub use mirror::SharedBooking;
pub use pool::Pool;
pub use waitlist::{NewWaitlistEntry, WaitlistEntry};
pub use prices::SettingsEdit;
pub use read::{BookingQuery, Busy, BusyPeople, BusySpan, MAX_BOOKING};
pub use rules::CancelScope;
pub use time_off::{TimeOffAdded, TimeOffRemoved, MAX_TIME_OFF};
pub use tasks::{Lease, LiveTask, NewTask, TaskChange, TaskOutcome, TaskRecord, TaskStatus};
pub use tokens::{ApiToken, TokenCheck, TokenStatus, TOKEN_PREFIX};
pub use grants::{Access, AccessCheck, CodeExchange, Exchanged, GrantRecord, GrantRefusal, Issued, NewCode, RegisteredClient, ACCESS_PREFIX, REFRESH_LIFETIME, REFRESH_PREFIX};
pub use users::{Credentials, User, SETUP_LIFETIME};
pub use write::{Alone, Writer};
pub use outbox::{event_type, Attempt, Claimed, Endpoint, Next, Notification, NotificationQuery, Webhook, EVENT_TYPES, MAX_WEBHOOKS, STATUSES};

use crate::domain::{check_list, Actor, Studio, StudioTz, TextKind, TimeError, MAX_PEOPLE};
use chrono::{DateTime, Duration, Utc};
use db::{Connection, OptionalExtension};

/// The version of what connections keep ([`db::Connection::cached`]: the studio, its rooms, its
/// webhooks), bumped by triggers on those tables from migration 19 on.
const CACHE_VERSION: &str = "SELECT version FROM cache_version WHERE id = 1";
const CACHE_VERSION_SINCE: i64 = 19;
/// [`CACHE_VERSION`] and the bookings' change clock (mirror.rs) in one row, for a connection
/// that reads bookings from memory (the clock is there since [`mirror::SINCE`]).
const CACHE_VERSION_AND_CLOCK: &str = "SELECT version, (SELECT n FROM booking_clock WHERE id = 1) FROM cache_version WHERE id = 1";
/// The tables whose triggers bump [`CACHE_VERSION`].
const CACHED_TABLES: &[&str] = &["studio", "rooms", "webhooks"];
/// [`CACHED_TABLES`] and the offline windows, whose triggers bump it since schema
/// [`WINDOWS_CACHED_SINCE`].
const CACHED_TABLES_WITH_WINDOWS: &[&str] = &["studio", "rooms", "webhooks", "offline_windows"];
const WINDOWS_CACHED_SINCE: i64 = 24;

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
    /// The SQLite file, to say why it cannot be written when SQLite refuses to (`explained`).
    file: Option<std::path::PathBuf>,
    /// The bookings in memory, shared with the other connections of a pool (`mirror.rs`); a
    /// store opened by itself reads the table.
    mirror: Option<Arc<Mirror>>,
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
        if version >= CACHE_VERSION_SINCE {
            let cached = if version >= WINDOWS_CACHED_SINCE { CACHED_TABLES_WITH_WINDOWS } else { CACHED_TABLES };
            conn.set_cache_version(CACHE_VERSION, cached);
        }
        let mut store = Store { conn, version, studio: None, file: None, mirror: None };
        store.studio = store.load_studio()?;
        Ok(store)
    }

    /// Reads bookings through `mirror`, kept with other connections to the same database, once
    /// the schema numbers their changes; before that, from the table.
    /// Sends a booking's insert with those other connections of the pool have ready at the same
    /// moment, in one transaction (PostgreSQL's group commit: [`db::combine`]).
    pub(crate) fn share_combiner(&mut self, combiner: &Arc<db::combine::Combiner>) {
        self.conn.share_combiner(combiner);
    }

    pub(crate) fn share_mirror(&mut self, mirror: &Arc<Mirror>) {
        if self.version >= mirror::SINCE {
            self.mirror = Some(mirror.clone());
            // Read with the version as the connection is handed out: on PostgreSQL the clock's
            // own query would be a round trip, and on SQLite a statement of its own for every
            // read of the bookings, where the held clock serves all of a use's reads.
            self.conn.hold_booking_clock(CACHE_VERSION_AND_CLOCK);
        }
    }

    /// Reads the bookings into memory now, if this store keeps them there, rather than at the
    /// first read that needs them (a server does this as it starts).
    pub fn load_bookings_into_memory(&self) -> Result<()> {
        match self.mirror() {
            Some(mirror) => mirror.catch_up(&self.conn),
            None => Ok(()),
        }
    }

    /// How many bookings this store holds in memory (see `mirror.rs`); `None` for one that reads
    /// them from the table.
    pub fn bookings_in_memory(&self) -> Option<usize> {
        self.mirror.as_deref().map(Mirror::len)
    }

    /// The bookings in memory, unless the connection is inside a transaction (see `mirror.rs`).
    fn mirror(&self) -> Option<&Mirror> {
        self.mirror.as_deref().filter(|_| Mirror::usable_on(&self.conn))
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

    /// Books one session as `actor`, alone in its transaction, with notes and a hold as
    /// [`Writer::create_booking_with`] takes them; on PostgreSQL its insert and commit mostly go
    /// out together ([`Writer::create_booking_alone`]).
    pub fn create_booking_as(
        &mut self,
        actor: &Actor,
        new: &crate::domain::Session,
        notes: Option<&str>,
        hold_until: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<crate::domain::Booking> {
        let file = self.file.clone();
        let booked = (|| {
            let mut writer = self.write_by(actor)?;
            match writer.create_booking_alone(new, notes, hold_until)? {
                Alone::Committed(booking) => Ok(Some(booking)),
                Alone::Open(booking) => {
                    self.studio = writer.commit()?;
                    Ok(Some(booking))
                }
                Alone::Again => Ok(None),
            }
        })();
        match booked.map_err(|e| explained(file.as_deref(), e))? {
            Some(booking) => Ok(booking),
            None => self.write_as(actor, |w| w.create_booking_with(new, notes, hold_until)),
        }
    }

    fn load_studio(&self) -> Result<Option<Studio>> {
        load_studio(&self.conn, self.version)
    }

    /// Whether the connection still answers (the pool asks before handing it out): the same
    /// round trip reads the cache's version, which then holds for this use.
    pub fn is_alive(&self) -> Result<()> {
        Ok(self.conn.hold_cache_version()?)
    }

    /// [`Store::is_alive`] for work that writes, on PostgreSQL: the same round trip begins the
    /// write transaction that the work's first [`Store::write`] then takes over (see
    /// [`Connection::begin_early`]). On SQLite, where a check costs no round trip, as
    /// [`Store::is_alive`].
    pub(crate) fn is_alive_writing(&self) -> Result<()> {
        match self.conn.backend() {
            Backend::Postgres => Ok(self.conn.begin_early()?),
            Backend::Sqlite => self.is_alive(),
        }
    }

    /// Marks the connection lost (its check failed), so that the pool drops it.
    pub(crate) fn discard(&self) {
        self.conn.discard();
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

    /// Whether this use's write transaction found the studio's settings or rooms changed as it
    /// began, and was undone: the work may be done again ([`db::Connection::changed_meanwhile`]).
    pub(crate) fn changed_meanwhile(&self) -> bool {
        self.conn.changed_meanwhile()
    }

    /// Ends a use of the connection (the pool takes it back): the cache's version read when it
    /// was handed out is not trusted past it.
    pub(crate) fn end_use(&self) {
        self.conn.end_use();
    }

    /// Reads the studio's settings again, for a connection that others may have written through:
    /// from the cache, when its version has not moved since they were read.
    pub fn refresh_studio(&mut self) -> Result<()> {
        let version = self.version;
        self.studio = self.conn.cached("studio", || load_studio(&self.conn, version))?;
        Ok(())
    }

    /// `load`'s value, kept by this connection under `key` while the studio, its rooms and its
    /// webhooks are unchanged and the kept value `fits` what else it shows (checked by the caller
    /// on each use): an answer written once and sent again while nothing it shows has moved.
    pub fn kept<T: Clone + Send + 'static, E: From<StoreError>>(
        &self,
        key: &'static str,
        fits: impl FnOnce(&T) -> bool,
        load: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        struct Failed<E>(E);
        impl<E: From<StoreError>> From<db::Error> for Failed<E> {
            fn from(e: db::Error) -> Self {
                Failed(StoreError::from(e).into())
            }
        }
        self.conn.cached_while(key, fits, || load().map_err(Failed)).map_err(|Failed(e)| e)
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

    /// Whether [`Store::kept`] keeps values now: not on a schema without the cache's version, nor
    /// in a transaction that has written a cached table, where each use loads its own.
    pub(crate) fn keeping(&self) -> bool {
        self.conn.keeping()
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
