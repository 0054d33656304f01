//! The one way the store talks to a database, whichever it is: a [`Connection`] to an SQLite file
//! or to PostgreSQL, shaped like the few parts of rusqlite the store uses. The store's SQL is
//! written once, in the dialect both accept (`?` and `?N` parameters, which the PostgreSQL half
//! rewrites to `$n`); arguments are [`Value`]s, rows are read with [`Row::get`]. The store picks a
//! backend at open and asks [`Connection::backend`] in the few places where the two differ.
//!
//! `sqlite.rs` is the only file that names rusqlite and `pg.rs` the only one that names
//! postgres (the tidy test checks both).

pub mod combine;
mod pg;
mod sqlite;
mod target;
mod value;

pub use target::Target;
pub use value::{Cell, FromValue, Params, ToValue, Value};
pub(crate) use value::params;

use std::path::Path;

/// Which database a connection speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// What went wrong talking to the database.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sqlite(#[from] sqlite::Error),
    /// Told in full by its message (PostgreSQL's own words and code), with no source to repeat.
    #[error("{}", pg::describe(.0))]
    Postgres(pg::Error),
    /// A statement that must return a row returned none.
    #[error("no row where one was expected")]
    NoRows,
    /// A column holds something its reader cannot take.
    #[error("column {column}: {message}")]
    Column { column: usize, message: String },
    /// The database cannot be reached as asked: the message says what to change.
    #[error("{0}")]
    Setup(String),
    /// The connection is gone: the server closed it (its backend was terminated, the server shut
    /// down or restarted) or the network failed. A transient fault: another connection may do
    /// the same work. `maybe_committed`: something sent on this connection since it was handed
    /// out may have been committed (a COMMIT in flight, a write outside a transaction, or an
    /// earlier commit), so whether that took effect is unknown; otherwise nothing was changed.
    #[error("{}", pg::describe(.error))]
    Lost { error: pg::Error, maybe_committed: bool },
    /// A write transaction begun with its first statement ([`Connection::begin_early`]) found
    /// that the cached values it went on had changed: it was rolled back.
    #[error("the studio's settings or rooms changed as this write began")]
    Stale,
    /// The connection that sent this write with others' (group commit: [`combine`]) was lost
    /// once their commit may have been reached: whether it took effect is unknown. What
    /// PostgreSQL or the network said.
    #[error("the connection that sent this write with others was lost as they were committed: {0}")]
    LostWithOthers(String),
}

impl From<pg::Error> for Error {
    fn from(e: pg::Error) -> Error {
        Error::Postgres(e)
    }
}

/// How a statement was refused, as far as the store cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Another connection held a lock too long.
    Busy,
    /// A unique index or key: the constraint's or index's name, where the database gives it.
    Unique(Option<String>),
    /// An exclusion constraint (PostgreSQL's no-overlap rules), by name.
    Overlap(String),
    /// SQLite could not open or write its file (SQLITE_READONLY, SQLITE_CANTOPEN): the store
    /// explains why from the file system (`store/file.rs`).
    FileAccess,
}

impl Error {
    /// A column that could not be read as wanted.
    pub fn column(column: usize, message: impl Into<String>) -> Error {
        Error::Column { column, message: message.into() }
    }

    /// Why the database refused a statement, if that is what happened.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Error::Sqlite(e) => sqlite::refusal(e),
            Error::Postgres(e) => pg::refusal(e),
            _ => None,
        }
    }

    /// The connection was lost, with nothing sent on it possibly committed ([`Error::Lost`]).
    pub fn lost_uncommitted(&self) -> bool {
        matches!(self, Error::Lost { maybe_committed: false, .. })
    }

    /// The connection was lost after something sent on it may have been committed.
    pub fn lost_maybe_committed(&self) -> bool {
        matches!(self, Error::Lost { maybe_committed: true, .. } | Error::LostWithOthers(_))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Result::optional`]: "no row" as `None`, as rusqlite's extension of the same name.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(Error::NoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// One row of a result, read by column position.
pub struct Row<'r>(RowRef<'r>);

enum RowRef<'r> {
    Sqlite(&'r sqlite::Row<'r>),
    Values(&'r [Value]),
}

/// A column position (rusqlite's shape: `row.get::<_, String>(0)`).
pub trait ColumnIndex {
    fn position(self) -> usize;
}

impl ColumnIndex for usize {
    fn position(self) -> usize {
        self
    }
}

impl Row<'_> {
    /// A text column (or NULL) lent to `read` without a copy: for rows read by the hundred whose
    /// text is only compared.
    pub fn with_text<T>(&self, column: usize, read: impl FnOnce(Option<&str>) -> T) -> Result<T> {
        self.cell(column, |cell| match cell {
            Cell::Null => Ok(read(None)),
            Cell::Text(text) => Ok(read(Some(text))),
            other => Err(Error::column(column, format!("expected text, found {}", other.kind()))),
        })
    }

    pub fn get<I: ColumnIndex, T: FromValue>(&self, column: I) -> Result<T> {
        let column = column.position();
        self.cell(column, |cell| T::from_cell(cell).map_err(|message| Error::column(column, message)))
    }

    /// Column `column` as a [`Cell`] borrowed from the row, handed to `read`.
    fn cell<T>(&self, column: usize, read: impl FnOnce(Cell<'_>) -> Result<T>) -> Result<T> {
        match &self.0 {
            RowRef::Sqlite(row) => sqlite::with_cell(row, column, read)?,
            RowRef::Values(values) => match values.get(column) {
                Some(Value::Null) => read(Cell::Null),
                Some(Value::Int(value)) => read(Cell::Int(*value)),
                Some(Value::Text(text)) => read(Cell::Text(text)),
                None => Err(Error::column(column, "no such column")),
            },
        }
    }
}

/// One connection, to either backend.
pub struct Connection {
    inner: Inner,
    /// What was sent on it since it was handed out ([`Connection::begin_use`]).
    activity: std::cell::Cell<Activity>,
    /// Set for good once the connection was found lost: the pool then drops it.
    lost: std::cell::Cell<bool>,
    /// Values read rarely changed, kept across uses: see [`Connection::cached`].
    cache: Cache,
    /// A write transaction begun as the connection was handed out ([`Connection::begin_early`]),
    /// which the next [`Connection::transaction`] takes over.
    early: std::cell::Cell<bool>,
    /// An SQLite read transaction begun as the connection was handed out
    /// ([`Connection::hold_cache_version`]): the use's reads see one snapshot, and lock the log
    /// once. Ended before anything is written, and at the end of the use.
    snapshot: std::cell::Cell<bool>,
    /// A write transaction begun early on PostgreSQL whose `BEGIN` waits for its first statement
    /// ([`Connection::begin_early`]), with the version it was assumed to read.
    deferred: std::cell::Cell<Option<Option<i64>>>,
    /// This use found the cache's version moved as its deferred `BEGIN` was sent: the work done
    /// on it changed nothing, and may be done again ([`Connection::changed_meanwhile`]).
    stale: std::cell::Cell<bool>,
    /// Clients found, as one of their bookings was written, to be told of them by e-mail: their
    /// bookings on this connection take the usual two round trips, which write the e-mail in the
    /// same transaction (`Writer::create_booking_alone`). A hint: one found wrong costs a round
    /// trip, and each booking written the usual way corrects it.
    told_by_mail: std::cell::RefCell<std::collections::HashSet<String>>,
    /// The group commit of the pool this connection belongs to, if any ([`combine`]).
    combiner: Option<std::sync::Arc<combine::Combiner>>,
}

/// What [`Connection::cached`] keeps. The store names a query of one integer, a version that
/// every change of the cached tables moves (a trigger bumps it, in the changing transaction), and
/// each kept value is stamped with the version it was read at. A value is used only while the
/// version read since is the same: read in the round trip that starts a write transaction (under
/// the studio's writer lock, where only this transaction can move it), or by the pool as it hands
/// the connection out; otherwise it is read again before the value is used. Once a transaction
/// has sent a write that names a cached table, values are neither used from nor kept until it
/// ends (they may be its own, and a rollback could give their version to other contents).
#[derive(Default)]
struct Cache {
    /// The query of the version, once the schema has it.
    source: std::cell::Cell<Option<&'static str>>,
    /// The tables whose changes move the version.
    tables: std::cell::Cell<&'static [&'static str]>,
    /// The version as last read, while it still holds: until a write that may move it, the end
    /// of a transaction or the end of a use.
    version: std::cell::Cell<Option<i64>>,
    /// This transaction has sent a write that names a cached table.
    wrote: std::cell::Cell<bool>,
    /// The version as last read from the database, however long ago: what a deferred `BEGIN`
    /// expects to read ([`Connection::begin_early`]).
    known: std::cell::Cell<Option<i64>>,
    /// The query of the version and of the bookings' change clock in one row, for a connection
    /// that reads bookings from memory ([`Connection::hold_booking_clock`]).
    with_clock: std::cell::Cell<Option<&'static str>>,
    /// The bookings' change clock read with the version as the connection was handed out, until
    /// the use's next statement (which may read, or write, what is newer; on SQLite, until the
    /// snapshot it was read in ends), a transaction's start or end, or the end of the use.
    clock: std::cell::Cell<Option<i64>>,
    values: std::cell::RefCell<std::collections::HashMap<&'static str, (i64, Box<dyn std::any::Any + Send>)>>,
}

impl Cache {
    /// Notes a write about to be sent. Outside a transaction it commits by itself, so the version
    /// read before it may be stale. Inside one (which holds the studio's writer lock), only a
    /// write of its own to a cached table can move the version.
    fn sending_write(&self, in_transaction: bool, sql: &str) {
        if !in_transaction {
            self.version.set(None);
        } else if self.tables.get().iter().any(|table| writes_to(sql, table)) {
            self.version.set(None);
            self.wrote.set(true);
        }
    }
}

/// Whether `sql` names `table` as the target of a write (any case): after `INSERT INTO`,
/// `UPDATE`, `DELETE FROM`, `TRUNCATE`, `ALTER`, `DROP` or `CREATE TABLE`, or `ON` (a trigger's
/// or an index's table). A table only read (a subquery's `FROM`, a join) is not written: a
/// booking's insert that checks the offline windows leaves what was read of them standing.
fn writes_to(sql: &str, table: &str) -> bool {
    let (bytes, name) = (sql.as_bytes(), table.as_bytes());
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    // The word that ends before `end`, past any blanks.
    let word_before = |end: usize| {
        let end = bytes[..end].iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |at| at + 1);
        let start = bytes[..end].iter().rposition(|b| !word(*b)).map_or(0, |at| at + 1);
        (start, sql.get(start..end).unwrap_or(""))
    };
    const TARGET_AFTER: [&str; 7] = ["INTO", "UPDATE", "TRUNCATE", "TABLE", "ONLY", "EXISTS", "ON"];
    bytes.windows(name.len()).enumerate().any(|(at, here)| {
        if !here.eq_ignore_ascii_case(name) || (at > 0 && word(bytes[at - 1])) || bytes.get(at + name.len()).is_some_and(|b| word(*b)) {
            return false;
        }
        let (start, before) = word_before(at);
        TARGET_AFTER.iter().any(|k| before.eq_ignore_ascii_case(k))
            || (before.eq_ignore_ascii_case("FROM") && word_before(start).1.eq_ignore_ascii_case("DELETE"))
    })
}

/// What a connection did since it was handed out: enough to tell, when it is lost, whether the
/// work on it changed nothing (and may be done again on another) or may have been committed.
#[derive(Debug, Clone, Copy, Default)]
struct Activity {
    /// Inside [`Connection::transaction`], whose statements commit only with it.
    in_transaction: bool,
    /// A COMMIT, or a statement outside a transaction that may write, was sent.
    maybe_committed: bool,
}

/// Whether `sql` only reads: a statement of its own outside a transaction that does not is
/// committed by itself, the moment the server runs it.
fn reads_only(sql: &str) -> bool {
    let head = sql.trim_start();
    ["SELECT", "SHOW"].iter().any(|word| head.get(..word.len()).is_some_and(|h| h.eq_ignore_ascii_case(word)))
}

enum Inner {
    Sqlite(sqlite::Conn),
    Postgres(pg::Conn),
}

/// Rows already read, each mapped: what [`Statement::query_map`] returns.
pub type Rows<T> = std::vec::IntoIter<Result<T>>;

impl Connection {
    fn new(inner: Inner) -> Connection {
        Connection {
            inner,
            activity: Default::default(),
            lost: Default::default(),
            cache: Default::default(),
            early: Default::default(),
            snapshot: Default::default(),
            deferred: Default::default(),
            stale: Default::default(),
            told_by_mail: Default::default(),
            combiner: None,
        }
    }

    /// Sends the last statements of this connection's write transactions, where the writer
    /// allows, with those of the other connections that share `combiner` ([`combine`]).
    pub fn share_combiner(&mut self, combiner: &std::sync::Arc<combine::Combiner>) {
        self.combiner = Some(combiner.clone());
    }

    /// Opens (creating if needed) an SQLite file: WAL, full sync, foreign keys on, and a wait for
    /// other connections' locks of `busy` at most.
    pub fn open_sqlite(path: &Path, busy: std::time::Duration) -> Result<Connection> {
        Ok(Connection::new(Inner::Sqlite(sqlite::Conn::open(Some(path), busy)?)))
    }

    /// A private SQLite database in memory.
    pub fn open_sqlite_in_memory() -> Result<Connection> {
        Ok(Connection::new(Inner::Sqlite(sqlite::Conn::open(None, std::time::Duration::ZERO)?)))
    }

    /// Connects to PostgreSQL at `url`, at READ COMMITTED. A server that cannot be reached (down,
    /// restarting) is [`Error::Lost`], as for a connection lost later.
    pub fn connect_postgres(url: &str) -> Result<Connection> {
        match pg::Conn::connect(url) {
            Ok(conn) => Ok(Connection::new(Inner::Postgres(conn))),
            Err(Error::Postgres(error)) if pg::is_lost(&error) => Err(Error::Lost { error, maybe_committed: false }),
            Err(e) => Err(e),
        }
    }

    /// Whether the connection is gone for good: the database closed it, or a statement found it
    /// lost (PostgreSQL; an SQLite file never is).
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            Inner::Sqlite(_) => false,
            Inner::Postgres(conn) => self.lost.get() || conn.is_closed(),
        }
    }

    /// Starts a new use of the connection (the pool hands it out): what was sent on it before no
    /// longer counts for [`Connection::lost_uncommitted`].
    pub fn begin_use(&self) {
        self.activity.set(Activity::default());
        self.stale.set(false);
    }

    /// Whether this use's deferred `BEGIN` found the cache's version moved, after work had gone
    /// on the values it replaced: the transaction was rolled back, and the work may be done again.
    pub fn changed_meanwhile(&self) -> bool {
        self.stale.get()
    }

    /// Whether the connection was lost during this use with nothing sent on it possibly
    /// committed: the work done on it changed nothing, and may be done again on another.
    pub fn lost_uncommitted(&self) -> bool {
        self.lost.get() && !self.activity.get().maybe_committed
    }

    /// Notes that a statement is about to be sent: one that may write, outside a transaction, is
    /// committed by itself.
    fn sending(&self, writes: bool, sql: &str) {
        // Whatever the statement reads may be newer than the clock held since the hand-out: the
        // memory must not then answer older than it. A read in the SQLite snapshot the clock was
        // read in sees nothing newer, so the clock holds until the snapshot ends.
        if writes || !self.snapshot.get() {
            self.cache.clock.set(None);
        }
        if writes {
            self.end_snapshot();
            self.cache.sending_write(self.activity.get().in_transaction, sql);
        }
        let mut activity = self.activity.get();
        if writes && !activity.in_transaction {
            activity.maybe_committed = true;
            self.activity.set(activity);
        }
    }

    /// Notes that a COMMIT (or a transaction of its own) is about to be sent.
    fn committing(&self) {
        self.end_of_transaction();
        self.activity.set(Activity { in_transaction: false, maybe_committed: true });
    }

    /// An error as the store sees it: a PostgreSQL error that means the connection is gone
    /// becomes [`Error::Lost`], saying whether anything may have been committed first, and the
    /// connection is marked lost for the pool.
    fn observed<T>(&self, result: Result<T>) -> Result<T> {
        let result = match &self.inner {
            Inner::Postgres(conn) => self.settle_deferred(conn, result),
            Inner::Sqlite(_) => result,
        };
        result.map_err(|e| match e {
            Error::Postgres(error) if pg::is_lost(&error) => {
                self.lost.set(true);
                Error::Lost { error, maybe_committed: self.activity.get().maybe_committed }
            }
            other => other,
        })
    }

    /// Once a deferred `BEGIN` has gone out with a statement: the version it read against the one
    /// assumed. The same, the statement's result stands. Moved (another server changed a room,
    /// say), whatever was done on the values cached at the old one may be wrong: the values are
    /// dropped, and the statement's result becomes [`Error::Stale`], which rolls the
    /// transaction back.
    fn settle_deferred<T>(&self, conn: &pg::Conn, result: Result<T>) -> Result<T> {
        let Some(read) = conn.take_begun() else { return result };
        let Some(assumed) = self.deferred.take() else { return result };
        if read.is_some() {
            self.cache.known.set(read);
        }
        if read == assumed || self.cache.source.get().is_none() {
            return result;
        }
        self.cache.values.borrow_mut().clear();
        self.cache.version.set(read);
        self.stale.set(true);
        Err(Error::Stale)
    }

    pub fn backend(&self) -> Backend {
        match &self.inner {
            Inner::Sqlite(_) => Backend::Sqlite,
            Inner::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs one statement and returns how many rows it changed.
    pub fn execute(&self, sql: &str, params: impl Params) -> Result<usize> {
        let values = params.into_values();
        self.sending(!reads_only(sql), sql);
        self.observed(match &self.inner {
            Inner::Sqlite(conn) => conn.execute(sql, &values),
            Inner::Postgres(conn) => conn.execute(sql, &values),
        })
    }

    /// [`Connection::execute`] outside any transaction, giving up with [`Refusal::Busy`] if
    /// another connection's lock is not released within `wait` (instead of the usual wait).
    pub fn execute_waiting(&self, sql: &str, params: impl Params, wait: std::time::Duration) -> Result<usize> {
        let values = params.into_values();
        self.end_snapshot();
        self.committing();
        self.observed(match &self.inner {
            Inner::Sqlite(conn) => conn.execute_waiting(sql, &values, wait),
            Inner::Postgres(conn) => conn.execute_waiting(sql, &values, wait),
        })
    }

    /// Runs several statements, with no arguments (schema changes).
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        self.sending(!reads_only(sql), sql);
        self.batch(sql)
    }

    /// [`Connection::execute_batch`] for the transaction's own statements, which note themselves.
    fn batch(&self, sql: &str) -> Result<()> {
        self.observed(match &self.inner {
            Inner::Sqlite(conn) => conn.execute_batch(sql),
            Inner::Postgres(conn) => conn.execute_batch(sql),
        })
    }

    /// The first row of a query, mapped; [`Error::NoRows`] if there is none.
    pub fn query_row<T>(&self, sql: &str, params: impl Params, f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        self.prepare_cached(sql)?.query_row(params, f)
    }

    /// A statement, prepared once per connection and kept.
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        let inner = self.observed(match &self.inner {
            Inner::Sqlite(conn) => conn.prepare_cached(sql).map(StatementInner::Sqlite),
            Inner::Postgres(conn) => conn.prepare_cached(sql).map(|stmt| StatementInner::Postgres(conn, stmt)),
        })?;
        Ok(Statement { conn: self, writes: !reads_only(sql), sql: sql.to_owned(), inner })
    }

    /// Starts the studio's write transaction: one writer at a time per studio, and a writer sees
    /// everything committed before it got its turn. SQLite: `BEGIN IMMEDIATE`. PostgreSQL: a
    /// READ COMMITTED transaction that first takes the studio's advisory lock (per schema, so
    /// studios sharing one database do not wait for each other).
    ///
    /// On PostgreSQL the same round trip reads the cache's version ([`Connection::cached`]).
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        if self.early.take() {
            return Ok(Transaction::begun(self, true));
        }
        self.begin()?;
        Ok(Transaction::begun(self, true))
    }

    /// Begins the studio's write transaction now, as [`Connection::transaction`] does, for the
    /// next call of that to take over: the pool does this as it hands out a connection for a
    /// write, so that the transaction's first round trip is also the check that the connection
    /// answers, and reads the cache's version. Rolled back at the end of the use if nothing took
    /// it over ([`Connection::end_use`]).
    ///
    /// On PostgreSQL, when the connection has read the cache's version before, the `BEGIN` is not
    /// sent now but with the transaction's first statement, in one round trip (see
    /// [`pg::Conn::defer_begin`]), and the version is assumed unmoved until then: a connection
    /// lost meanwhile is found by that statement, and work done on a cached value that moved
    /// meanwhile is undone ([`Connection::changed_meanwhile`]). The pool runs the work again
    /// for either.
    pub fn begin_early(&self) -> Result<()> {
        if let Inner::Postgres(conn) = &self.inner {
            let (source, assumed) = (self.cache.source.get(), self.cache.known.get());
            if source.is_none() || assumed.is_some() {
                self.end_snapshot();
                self.end_of_transaction();
                conn.defer_begin(source);
                self.deferred.set(Some(assumed));
                self.cache.version.set(assumed);
                self.activity.set(Activity { in_transaction: true, ..self.activity.get() });
                self.early.set(true);
                return Ok(());
            }
        }
        self.begin()?;
        self.early.set(true);
        Ok(())
    }

    fn begin(&self) -> Result<()> {
        self.deferred.set(None);
        self.end_snapshot();
        self.end_of_transaction();
        let version = self.observed(match &self.inner {
            Inner::Sqlite(conn) => conn.begin_write().map(|()| None),
            Inner::Postgres(conn) => conn.begin_write(self.cache.source.get()),
        })?;
        self.cache.version.set(version);
        if version.is_some() {
            self.cache.known.set(version);
        }
        self.activity.set(Activity { in_transaction: true, ..self.activity.get() });
        Ok(())
    }

    /// The cache's version that this transaction's work has gone on so far: the one its deferred
    /// `BEGIN` is assumed to read, or the one it read; None without one (or once it wrote to a
    /// cached table).
    pub fn version_gone_on(&self) -> Option<i64> {
        match self.deferred.get() {
            Some(assumed) => assumed,
            None => self.cache.version.get(),
        }
    }

    /// Whether `client` was last found told of their bookings by e-mail (a hint kept per
    /// connection: see the field `told_by_mail`).
    pub fn told_by_mail(&self, client: &str) -> bool {
        self.told_by_mail.borrow().contains(client)
    }

    /// Notes whether `client` is told of their bookings by e-mail, as a write just found.
    pub fn note_told_by_mail(&self, client: &str, told: bool) {
        let mut known = self.told_by_mail.borrow_mut();
        if !told {
            known.remove(client);
        } else if !known.contains(client) {
            known.insert(client.to_owned());
        }
    }

    /// Whether a transaction of [`Connection::transaction`] is open: what it writes is its own
    /// until it commits.
    pub fn in_transaction(&self) -> bool {
        self.activity.get().in_transaction
    }

    /// Names the query of the cache's version (one row, one integer), once the schema has it,
    /// and the tables whose changes move it: until then [`Connection::cached`] keeps nothing.
    pub fn set_cache_version(&self, sql: &'static str, tables: &'static [&'static str]) {
        self.cache.source.set(Some(sql));
        self.cache.tables.set(tables);
    }

    /// Whether changes of `table` move the cache's version: what [`Connection::cached`] keeps
    /// of it is as fresh as a read.
    pub fn caches(&self, table: &str) -> bool {
        self.cache.source.get().is_some() && self.cache.tables.get().contains(&table)
    }

    /// Whether [`Connection::cached`] keeps values now: the schema has the cache's version, and
    /// this transaction has not written a cached table.
    pub fn keeping(&self) -> bool {
        self.cache.source.get().is_some() && !self.cache.wrote.get()
    }

    /// Reads the cache's version now and holds it until the end of this use ([`Connection::end_use`]),
    /// a write or a transaction's start or end; without a version yet, checks that the
    /// connection answers. The pool does this as it hands the connection out.
    ///
    /// On SQLite this also begins a read transaction that lasts until the use writes or ends:
    /// every read of one request (a search's rooms, windows and bookings) sees the same
    /// snapshot, and the log's read lock is taken once rather than once a statement.
    pub fn hold_cache_version(&self) -> Result<()> {
        if let Inner::Sqlite(conn) = &self.inner
            && !self.snapshot.get() && !self.activity.get().in_transaction {
                self.snapshot.set(conn.begin_read()?);
            }
        match (self.cache.source.get(), self.cache.with_clock.get()) {
            (Some(_), Some(sql)) => {
                let (version, clock): (i64, i64) = self.query_row(sql, (), |row| Ok((row.get(0)?, row.get(1)?)))?;
                self.cache.version.set(Some(version));
                self.cache.known.set(Some(version));
                self.cache.clock.set(Some(clock));
            }
            (Some(sql), None) => {
                let version: i64 = self.query_row(sql, (), |row| row.get(0))?;
                self.cache.version.set(Some(version));
                self.cache.known.set(Some(version));
            }
            (None, _) => self.query_row("SELECT 1", (), |_| Ok(()))?,
        }
        Ok(())
    }

    /// Has [`Connection::hold_cache_version`] read the bookings' change clock too, by `sql`: the
    /// version and the clock in one row. A connection whose bookings are read from memory asks
    /// the clock before every read of them; read as the connection is handed out, in the same
    /// round trip as the version, it costs none of its own ([`Connection::held_clock`]).
    pub fn hold_booking_clock(&self, sql: &'static str) {
        self.cache.with_clock.set(Some(sql));
    }

    /// The bookings' change clock read as this use began ([`Connection::hold_booking_clock`]), if
    /// nothing was sent on the connection since, or only reads in the SQLite snapshot it was read
    /// in: a read of the bookings may take it then. Every change committed before the use began is numbered at or
    /// below it, and nothing the use read is newer.
    pub fn held_clock(&self) -> Option<i64> {
        self.cache.clock.get()
    }

    /// Ends a use of the connection: the version held is not trusted past it, and a transaction
    /// begun early that nothing took over is rolled back.
    pub fn end_use(&self) {
        if self.early.take() {
            drop(Transaction::begun(self, true));
        }
        self.deferred.set(None);
        self.end_snapshot();
        self.cache.version.set(None);
        self.cache.clock.set(None);
    }

    /// Ends the read transaction of [`Connection::hold_cache_version`], if one is open: before a
    /// write (which would otherwise have to upgrade a snapshot that may be stale), and at the end
    /// of the use. The version read in it is not trusted past it.
    fn end_snapshot(&self) {
        if !self.snapshot.take() {
            return;
        }
        self.cache.version.set(None);
        self.cache.clock.set(None);
        if let Inner::Sqlite(conn) = &self.inner
            && let Err(e) = conn.end_read() {
                // A read transaction's end releases a lock and cannot lose anything; should it
                // fail, the next BEGIN reports the connection's state.
                tracing::warn!("ending a read transaction: {e}");
            }
    }

    /// Marks the connection lost, so that the pool drops it rather than hand it out again.
    pub fn discard(&self) {
        self.lost.set(true);
    }

    fn end_of_transaction(&self) {
        self.cache.version.set(None);
        self.cache.clock.set(None);
        self.cache.wrote.set(false);
    }

    /// `load`'s value, kept under `key` and read again only once the cache's version has moved
    /// (see [`Cache`]): for what every request needs and rarely changes (the studio, its rooms).
    pub fn cached<T: Clone + Send + 'static, E: From<Error>>(&self, key: &'static str, load: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.cached_while(key, |_| true, load)
    }

    /// [`Connection::cached`] of a value that also depends on what the cached tables do not hold
    /// (the clock, another table): a kept value is used only while the version has not moved and
    /// `fits` it; otherwise `load`'s takes its place.
    pub fn cached_while<T: Clone + Send + 'static, E: From<Error>>(
        &self,
        key: &'static str,
        fits: impl FnOnce(&T) -> bool,
        load: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let Some(sql) = self.cache.source.get() else { return load() };
        if self.cache.wrote.get() {
            return load();
        }
        let version = match self.cache.version.get() {
            Some(version) => version,
            None => {
                let version: i64 = self.query_row(sql, (), |row| row.get(0))?;
                self.cache.known.set(Some(version));
                // Inside a transaction that has not written, the version holds until it does.
                if self.activity.get().in_transaction {
                    self.cache.version.set(Some(version));
                }
                version
            }
        };
        if let Some((seen, value)) = self.cache.values.borrow().get(key)
            && *seen == version
            && let Some(value) = value.downcast_ref::<T>()
            && fits(value)
        {
            return Ok(value.clone());
        }
        let value = load()?;
        if !self.cache.wrote.get() {
            self.cache.values.borrow_mut().insert(key, (version, Box::new(value.clone())));
        }
        Ok(value)
    }

    /// Takes this studio's lock named `purpose` for as long as the connection lives or until
    /// [`Connection::unlock`], if no other connection holds it: true if taken. On PostgreSQL a
    /// session-level advisory lock, released by the server when the connection ends (its process
    /// died, say); on SQLite always true (one process serves a file, and its write transactions
    /// serialise the rest).
    pub fn try_lock(&self, purpose: i32) -> Result<bool> {
        match &self.inner {
            Inner::Sqlite(_) => Ok(true),
            Inner::Postgres(conn) => self.observed(conn.try_lock(purpose)),
        }
    }

    /// Releases a lock [`Connection::try_lock`] took.
    pub fn unlock(&self, purpose: i32) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(_) => Ok(()),
            Inner::Postgres(conn) => self.observed(conn.unlock(purpose)),
        }
    }
}

/// A prepared statement.
pub struct Statement<'c> {
    conn: &'c Connection,
    /// Whether it may write (anything but a SELECT): alone, outside a transaction, it commits.
    writes: bool,
    /// Its text, for the cache to tell whether it may change a cached table.
    sql: String,
    inner: StatementInner<'c>,
}

enum StatementInner<'c> {
    Sqlite(sqlite::Statement<'c>),
    Postgres(&'c pg::Conn, pg::Statement),
}

impl Statement<'_> {
    pub fn execute(&mut self, params: impl Params) -> Result<usize> {
        let values = params.into_values();
        self.conn.sending(self.writes, &self.sql);
        let done = match &mut self.inner {
            StatementInner::Sqlite(stmt) => sqlite::execute(stmt, &values),
            StatementInner::Postgres(conn, stmt) => conn.execute_prepared(stmt, &values),
        };
        self.conn.observed(done)
    }

    /// Every row, each mapped by `f`; reading stops at the first error, which is the last item.
    pub fn query_map<T>(&mut self, params: impl Params, mut f: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Rows<T>> {
        let values = params.into_values();
        self.conn.sending(self.writes, &self.sql);
        let mut out = Vec::new();
        let read = match &mut self.inner {
            StatementInner::Sqlite(stmt) => sqlite::for_each_row(stmt, &values, |row| {
                let mapped = f(&Row(RowRef::Sqlite(row)));
                let go_on = mapped.is_ok();
                out.push(mapped);
                go_on
            }),
            StatementInner::Postgres(conn, stmt) => conn.query_prepared(stmt, &values).map(|rows| {
                for row in rows {
                    let mapped = f(&Row(RowRef::Values(&row)));
                    let go_on = mapped.is_ok();
                    out.push(mapped);
                    if !go_on {
                        break;
                    }
                }
            }),
        };
        self.conn.observed(read)?;
        Ok(out.into_iter())
    }

    /// The first row, mapped; [`Error::NoRows`] if there is none.
    pub fn query_row<T>(&mut self, params: impl Params, f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        let values = params.into_values();
        self.conn.sending(self.writes, &self.sql);
        let read = match &mut self.inner {
            StatementInner::Sqlite(stmt) => sqlite::first_row(stmt, &values, |row| f(&Row(RowRef::Sqlite(row)))),
            StatementInner::Postgres(conn, stmt) => match conn.query_prepared(stmt, &values) {
                Ok(rows) => rows.first().ok_or(Error::NoRows).and_then(|first| f(&Row(RowRef::Values(first)))),
                Err(e) => Err(e),
            },
        };
        self.conn.observed(read)
    }
}

/// A write transaction ([`Connection::transaction`]), or a savepoint inside one
/// ([`Transaction::savepoint`]). What it does is kept by [`Transaction::commit`]; dropping it
/// undoes it (and, for a transaction, lets others see nothing of it).
pub struct Transaction<'c> {
    conn: &'c Connection,
    open: bool,
    /// A whole transaction (COMMIT keeps it, ROLLBACK undoes it), not a savepoint inside one.
    whole: bool,
}

impl<'c> Transaction<'c> {
    fn begun(conn: &'c Connection, whole: bool) -> Transaction<'c> {
        Transaction { conn, open: true, whole }
    }

    /// Keeps what it did. A connection lost at a COMMIT is [`Error::Lost`] with
    /// `maybe_committed`: the server may have committed before the answer was lost.
    pub fn commit(mut self) -> Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        self.open = false;
        if self.whole {
            self.conn.committing();
            self.conn.observed(match &self.conn.inner {
                Inner::Sqlite(conn) => conn.execute_batch("COMMIT"),
                Inner::Postgres(conn) => conn.commit_write(),
            })
        } else {
            self.conn.batch("RELEASE studioflow_step")
        }
    }

    /// The first row of `sql` (a statement that writes), mapped, and then the commit, as one:
    /// on PostgreSQL both go out together ([`pg::Conn::query_then_commit`]), so the studio's lock
    /// is not held across a round trip between them; on SQLite one after the other. A statement
    /// that fails leaves nothing committed; `f` runs once the commit is done. The transaction is
    /// over either way (a savepoint's step, kept).
    pub fn query_row_then_commit<T>(&mut self, sql: &str, params: impl Params, f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let (Inner::Postgres(pg), StatementInner::Postgres(_, prepared), true) = (&self.conn.inner, &stmt.inner, self.whole) else {
            let value = stmt.query_row(params, f)?;
            self.finish()?;
            return Ok(value);
        };
        self.open = false;
        self.conn.sending(true, sql);
        self.conn.end_of_transaction();
        let (rows, maybe_committed) = pg.query_then_commit(prepared, &params.into_values());
        let activity = self.conn.activity.get();
        self.conn.activity.set(Activity { in_transaction: false, maybe_committed: activity.maybe_committed || maybe_committed });
        let rows = self.conn.observed(rows)?;
        rows.first().ok_or(Error::NoRows).and_then(|first| f(&Row(RowRef::Values(first))))
    }

    /// [`Transaction::query_row_then_commit`] of a statement that may go out with the like
    /// statements of other connections of the pool, in one transaction of one of them (group
    /// commit: [`combine`]), when this transaction has sent nothing yet (its `BEGIN` waits, on
    /// PostgreSQL): the statement must then check, by itself and under the lock, every rule it
    /// depends on, and write nothing when one fails, since it runs after the others' writes, in
    /// a transaction whose `BEGIN` it did not read. Otherwise, and on SQLite, as
    /// `query_row_then_commit`.
    ///
    /// None when nothing was committed because a statement sent with this one failed (or the
    /// connection that sent them was lost before any could be committed): the transaction is
    /// over, and the caller makes its write again, on its own. A batch lost once its commit may
    /// have been reached is [`Error::LostWithOthers`] for the others, [`Error::Lost`] for the
    /// connection that sent it.
    ///
    /// `many` is the statement for a batch of `sql`s, sent in their place when the batch holds
    /// more than one (all of them `sql`): one statement under the lock rather than one each. Its
    /// one argument is a JSON array of each statement's arguments, in the batch's order, and it
    /// returns one row for each of them, in that order: `sql`'s row, then the statement's
    /// position in the batch (from 1) and 1 if it is to be made again (it wrote nothing), else 0.
    pub fn query_row_then_commit_with_others<T>(
        &mut self,
        sql: &str,
        many: Option<&str>,
        params: impl Params,
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let (Inner::Postgres(pg), Some(combiner), true) = (&self.conn.inner, &self.conn.combiner, self.whole) else {
            return self.query_row_then_commit(sql, params, f).map(Some);
        };
        if !pg.begin_waits() {
            return self.query_row_then_commit(sql, params, f).map(Some);
        }
        let mut leading = match combiner.offer(sql, params.into_values()) {
            combine::Turn::Lead(leading) => leading,
            combine::Turn::Done(outcome) => {
                // Sent by another connection: this one's transaction never began.
                self.open = false;
                self.conn.end_of_transaction();
                self.conn.deferred.set(None);
                pg.forget_begin();
                let activity = self.conn.activity.get();
                let committed = matches!(outcome, combine::Outcome::Rows(_) | combine::Outcome::Unknown(_));
                self.conn.activity.set(Activity { in_transaction: false, maybe_committed: activity.maybe_committed || committed });
                return match outcome {
                    combine::Outcome::Rows(rows) => rows.first().ok_or(Error::NoRows).and_then(|first| f(&Row(RowRef::Values(first)))).map(Some),
                    combine::Outcome::Again | combine::Outcome::Lead => Ok(None),
                    combine::Outcome::Unknown(message) => Err(Error::LostWithOthers(message)),
                };
            }
        };
        // The transaction begins alone; once it holds the studio's lock, every statement queued
        // meanwhile goes out with this one (see `combine`). Its own, and the statement for many,
        // are prepared first, so that the lock is not held for that.
        let prepare = |sql: &str| match self.conn.prepare_cached(sql)?.inner {
            StatementInner::Postgres(_, prepared) => Ok(prepared),
            StatementInner::Sqlite(..) => Err(Error::Setup("a PostgreSQL connection prepared an SQLite statement".into())),
        };
        let began = prepare(sql).and_then(|_| many.map(prepare).transpose()).and_then(|many| pg.begin_now().map(|()| many));
        let many = match began {
            Ok(many) => many,
            Err(e) => {
                // Nothing of the batch was sent: the others make theirs again, and this one fails.
                drop(leading);
                self.open = false;
                self.conn.end_of_transaction();
                return self.conn.observed(Err(e));
            }
        };
        leading.gather();
        let alone = leading.statements().len() == 1;
        let many = many.filter(|_| !alone && leading.statements().iter().all(|statement| statement.sql == sql));
        let together = many.is_some();
        let (statements, values) = match many {
            Some(many) => (vec![many], Some(vec![combine::together(leading.statements())])),
            None => (leading.statements().iter().map(|statement| prepare(&statement.sql)).collect::<Result<Vec<_>>>()?, None),
        };
        self.open = false;
        self.conn.sending(true, sql);
        self.conn.end_of_transaction();
        let batch: Vec<(&pg::Statement, &[Value])> = match &values {
            Some(values) => vec![(&statements[0], &values[..])],
            None => statements.iter().zip(leading.statements()).map(|(prepared, statement)| (prepared, &statement.values[..])).collect(),
        };
        let (rows, maybe_committed) = pg.queries_then_commit(&batch, &|| leading.released());
        let activity = self.conn.activity.get();
        self.conn.activity.set(Activity { in_transaction: false, maybe_committed: activity.maybe_committed || maybe_committed });
        let rows = match rows {
            Ok(mut rows) if together => Ok(combine::apart(rows.pop().unwrap_or_default(), leading.statements().len())),
            rows => rows.map(|rows| rows.into_iter().map(combine::Outcome::Rows).collect()),
        };
        let own = match rows {
            Ok(mut outcomes) => {
                let own = outcomes.remove(0);
                leading.tell(outcomes);
                match own {
                    combine::Outcome::Rows(own) => own,
                    combine::Outcome::Again | combine::Outcome::Lead => return Ok(None),
                    combine::Outcome::Unknown(message) => return Err(Error::LostWithOthers(message)),
                }
            }
            Err(e) => {
                let lost_committing = maybe_committed && matches!(&e, Error::Postgres(error) if pg::is_lost(error));
                let told = if lost_committing { combine::Outcome::Unknown(e.to_string()) } else { combine::Outcome::Again };
                leading.tell(std::iter::repeat(told));
                let e = match self.conn.observed(Err::<(), _>(e)) {
                    Err(e) => e,
                    Ok(()) => Error::NoRows,
                };
                // Refused, the batch may have been refused for another's statement: this one
                // is made again on its own, as the others are. Alone, its refusal is its own.
                if alone || matches!(e, Error::Lost { .. } | Error::Stale) {
                    return Err(e);
                }
                return Ok(None);
            }
        };
        let own = self.conn.observed(Ok(own))?;
        own.first().ok_or(Error::NoRows).and_then(|first| f(&Row(RowRef::Values(first)))).map(Some)
    }

    /// A nested step that its `commit` keeps and dropping undoes, leaving the rest.
    pub fn savepoint(&self) -> Result<Transaction<'_>> {
        self.conn.batch("SAVEPOINT studioflow_step")?;
        Ok(Transaction::begun(self.conn, false))
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let undo = if self.whole {
            self.conn.end_of_transaction();
            self.conn.activity.set(Activity { in_transaction: false, ..self.conn.activity.get() });
            "ROLLBACK"
        } else {
            "ROLLBACK TO studioflow_step; RELEASE studioflow_step"
        };
        // On a lost connection there is nothing to roll back: the server did, when it ended.
        if let Err(e) = self.conn.batch(undo)
            && !matches!(e, Error::Lost { .. })
        {
            tracing::warn!(error = %e, "rolling back failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_written_only_as_a_statement_s_target() {
        assert!(writes_to("UPDATE rooms SET name = ?", "rooms"));
        assert!(writes_to("insert into ROOMS (id) values (?)", "rooms"));
        assert!(writes_to("DELETE FROM studio", "studio"));
        assert!(writes_to("DELETE\n  FROM offline_windows WHERE id = ?", "offline_windows"));
        assert!(writes_to("WITH w AS (UPDATE offline_windows SET to_at = ?1 RETURNING id) SELECT id FROM w", "offline_windows"));
        assert!(writes_to("INSERT INTO offline_windows(room_id) VALUES (?)", "offline_windows"));
        assert!(writes_to("TRUNCATE webhooks", "webhooks"));
        assert!(writes_to("ALTER TABLE rooms ADD COLUMN x", "rooms"));
        assert!(writes_to("DROP TABLE IF EXISTS rooms", "rooms"));
        assert!(writes_to("CREATE TRIGGER t AFTER INSERT ON rooms BEGIN SELECT 1; END", "rooms"));
        assert!(!writes_to("INSERT INTO bookings (room_id) VALUES (?)", "rooms"));
        assert!(!writes_to("UPDATE studioflow_schema SET version = 1", "studio"));
        assert!(!writes_to("INSERT INTO events (entity) VALUES ('room')", "rooms"));
        assert!(!writes_to("", "rooms"));
        assert!(!writes_to("COMMIT", "webhooks"));
        assert!(!writes_to("rooms", "rooms"));
        // Read, not written: a booking's insert that checks the windows, a deletion that reads them.
        assert!(!writes_to("WITH c AS (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM offline_windows WHERE room_id = ?)) INSERT INTO bookings SELECT * FROM c", "offline_windows"));
        assert!(!writes_to("DELETE FROM bookings WHERE room_id IN (SELECT room_id FROM offline_windows)", "offline_windows"));
        assert!(!writes_to("UPDATE bookings SET displaced = 1 FROM offline_windows w WHERE w.room_id = bookings.room_id", "offline_windows"));
    }

    #[test]
    fn only_a_select_or_show_counts_as_reading() {
        // Outside a transaction anything else commits by itself, so a connection lost there may
        // have changed something: the pool does not run such work again.
        for sql in ["SELECT 1", "  select id FROM tasks", "SHOW search_path"] {
            assert!(reads_only(sql), "{sql}");
        }
        for sql in ["UPDATE tasks SET lease_expires_ms = NULL", "INSERT INTO t VALUES (1)", "DELETE FROM t", "COMMIT", "SET x = 1", "SEL"] {
            assert!(!reads_only(sql), "{sql}");
        }
    }
}
