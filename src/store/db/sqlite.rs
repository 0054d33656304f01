//! The SQLite half of the connection layer: the only file that names rusqlite.

use super::{Cell, Refusal, Result, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError, Weak};
use std::time::Duration;

pub use rusqlite::Error;
pub type Row<'r> = rusqlite::Row<'r>;
pub type Statement<'c> = rusqlite::CachedStatement<'c>;

/// How many prepared statements a connection keeps: the store has about a hundred.
const STATEMENT_CACHE: usize = 128;

/// How much of a database file is read through a memory map: more than a large studio's file.
const MMAP_BYTES: i64 = 1 << 30;

pub struct Conn {
    conn: rusqlite::Connection,
    /// How long a statement waits for another connection's lock, usually.
    busy: std::time::Duration,
    /// The turn of this process's writers of the file (`None` in memory), and whether this
    /// connection holds it: see [`Conn::begin_write`].
    writers: Option<Arc<Writers>>,
    holding: std::cell::Cell<bool>,
}

/// The write transactions of one database file in this process, one at a time. SQLite lets one
/// connection write at a time, and another that asks meanwhile is told the file is busy; its busy
/// handler then sleeps and asks again, 1, 2, 5, 10 ms and on up to 100 ms between tries, whether
/// the writer before it took a millisecond or a minute. With eight writers of one server, that left
/// the cores half idle and a booking's p99 at 80-107 ms (`cargo bench --bench servers`). Here a
/// writer waits for the turn of the one before it and is woken as it ends. Writers of other
/// processes on the same file still meet at SQLite's lock, as before.
struct Writers {
    taken: Mutex<bool>,
    freed: Condvar,
}

impl Writers {
    /// The turn of the file at `path` (already open, so that it can be resolved), shared by every
    /// connection of this process to the file, whatever the path it was opened by.
    fn of(path: &Path) -> Result<Arc<Writers>> {
        static FILES: LazyLock<Mutex<HashMap<PathBuf, Weak<Writers>>>> = LazyLock::new(Default::default);
        let path = std::fs::canonicalize(path).map_err(|e| super::Error::Setup(format!("resolving {}: {e}", path.display())))?;
        let mut files = FILES.lock().unwrap_or_else(PoisonError::into_inner);
        files.retain(|_, writers| writers.strong_count() > 0);
        if let Some(writers) = files.get(&path).and_then(Weak::upgrade) {
            return Ok(writers);
        }
        let writers = Arc::new(Writers { taken: Mutex::new(false), freed: Condvar::new() });
        files.insert(path, Arc::downgrade(&writers));
        Ok(writers)
    }

    /// Waits up to `busy` for the turn; false if another writer of this process kept it longer.
    fn take(&self, busy: Duration) -> bool {
        let taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut taken, waited) = self.freed.wait_timeout_while(taken, busy, |taken| *taken).unwrap_or_else(PoisonError::into_inner);
        if waited.timed_out() && *taken {
            return false;
        }
        *taken = true;
        true
    }

    fn give_back(&self) {
        *self.taken.lock().unwrap_or_else(PoisonError::into_inner) = false;
        self.freed.notify_one();
    }
}

impl Conn {
    /// A file (`None`: memory), in WAL with full sync and foreign keys on.
    pub fn open(path: Option<&Path>, busy: std::time::Duration) -> Result<Conn> {
        let conn = match path {
            Some(path) => rusqlite::Connection::open(path)?,
            None => rusqlite::Connection::open_in_memory()?,
        };
        // Wait for other connections first: two processes may open a new file at the same moment.
        conn.busy_timeout(busy)?;
        // WAL lets readers go on while one writer commits; FULL makes a commit survive power loss.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Pages read through a memory map, not a system call each: a search steps through a few
        // hundred rows, and a system call per page was a third of its reads in a profile.
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // One plan per cached statement, whatever its parameters: without this, a statement whose
        // plan may depend on a bound value (a `LIMIT ?`, say) is compiled again on every run once
        // rebound, which was a fifth of the CPU of an HTTP `query_bookings`.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        let writers = path.map(Writers::of).transpose()?;
        Ok(Conn { conn, busy, writers, holding: std::cell::Cell::new(false) })
    }

    pub fn execute(&self, sql: &str, values: &[Value]) -> Result<usize> {
        execute(&mut self.prepare_cached(sql)?, values)
    }

    /// Runs `sql`; once no transaction is open after it (a `COMMIT`, a `ROLLBACK`, or one that
    /// SQLite ended itself on an error), the writers' turn this connection held is given back.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        let done = self.conn.execute_batch(sql);
        self.give_back_when_done();
        Ok(done?)
    }

    /// Begins a write transaction (`BEGIN IMMEDIATE`) once the writers of this process before it
    /// are done ([`Writers`]), waiting no longer than the busy timeout for them: past it, the file
    /// is busy, as SQLite itself would have said.
    pub fn begin_write(&self) -> Result<()> {
        if let Some(writers) = &self.writers
            && !self.holding.get()
        {
            if !writers.take(self.busy) {
                let busy = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY);
                return Err(Error::SqliteFailure(busy, Some("another write of this server took longer than the busy timeout".into())).into());
            }
            self.holding.set(true);
        }
        self.execute_batch("BEGIN IMMEDIATE")
    }

    fn give_back_when_done(&self) {
        if self.holding.get() && self.conn.is_autocommit() {
            self.holding.set(false);
            if let Some(writers) = &self.writers {
                writers.give_back();
            }
        }
    }

    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(self.conn.prepare_cached(sql)?)
    }

    /// Begins a read transaction: the reads until [`Conn::end_read`] see the database as it was
    /// at the first of them, and take the write-ahead log's read lock once rather than once each.
    /// Inside a transaction already (none should be open here) it begins nothing and says so.
    pub fn begin_read(&self) -> Result<bool> {
        if !self.conn.is_autocommit() {
            return Ok(false);
        }
        execute(&mut self.prepare_cached("BEGIN DEFERRED")?, &[])?;
        Ok(true)
    }

    /// Ends the read transaction [`Conn::begin_read`] began, if it is still open.
    pub fn end_read(&self) -> Result<()> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        execute(&mut self.prepare_cached("COMMIT")?, &[]).map(drop)
    }

    /// [`Conn::execute`] with a busy timeout of `wait` for this statement alone.
    pub fn execute_waiting(&self, sql: &str, values: &[Value], wait: std::time::Duration) -> Result<usize> {
        self.conn.busy_timeout(wait)?;
        let done = self.execute(sql, values);
        self.conn.busy_timeout(self.busy)?;
        done
    }
}

/// A connection dropped inside its write transaction (which SQLite rolls back) gives back its turn.
impl Drop for Conn {
    fn drop(&mut self) {
        if self.holding.take()
            && let Some(writers) = &self.writers
        {
            writers.give_back();
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(value) => ToSqlOutput::Borrowed(ValueRef::Integer(*value)),
            Value::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
        })
    }
}

pub fn execute(stmt: &mut Statement<'_>, values: &[Value]) -> Result<usize> {
    Ok(stmt.execute(rusqlite::params_from_iter(values))?)
}

/// Calls `f` on each row until it returns false.
pub fn for_each_row(stmt: &mut Statement<'_>, values: &[Value], mut f: impl FnMut(&Row<'_>) -> bool) -> Result<()> {
    let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
    while let Some(row) = rows.next()? {
        if !f(row) {
            break;
        }
    }
    Ok(())
}

pub fn first_row<T>(stmt: &mut Statement<'_>, values: &[Value], f: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
    let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
    match rows.next()? {
        Some(row) => f(row),
        None => Err(super::Error::NoRows),
    }
}

/// Reads one column as a [`Cell`] and hands it to `read`.
pub fn with_cell<T>(row: &Row<'_>, column: usize, read: impl FnOnce(Cell<'_>) -> T) -> Result<T> {
    Ok(match row.get_ref(column)? {
        ValueRef::Null => read(Cell::Null),
        ValueRef::Integer(value) => read(Cell::Int(value)),
        ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => read(Cell::Text(text)),
            Err(_) => return Err(super::Error::column(column, "text that is not UTF-8")),
        },
        ValueRef::Real(_) => return Err(super::Error::column(column, "a real number where the store keeps none")),
        ValueRef::Blob(_) => return Err(super::Error::column(column, "a blob where the store keeps none")),
    })
}

pub fn refusal(e: &Error) -> Option<Refusal> {
    /// SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE.
    const UNIQUE: [std::ffi::c_int; 2] = [1555, 2067];
    match e {
        Error::SqliteFailure(failure, _) if UNIQUE.contains(&failure.extended_code) => Some(Refusal::Unique(None)),
        _ => match e.sqlite_error_code()? {
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => Some(Refusal::Busy),
            rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen => Some(Refusal::FileAccess),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn count(conn: &Conn) -> i64 {
        conn.conn.query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0)).unwrap()
    }

    /// A writer that asks while another of the process writes the same file (opened by another
    /// path) gets its turn as the first commits, and sees what it committed; past the busy
    /// timeout it is told the file is busy, and a connection dropped mid-write gives its turn back.
    #[test]
    fn writers_of_one_file_take_turns_and_a_dropped_one_gives_its_turn_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.db");
        let first = Conn::open(Some(&path), Duration::from_secs(10)).unwrap();
        first.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        first.begin_write().unwrap();
        first.execute_batch("INSERT INTO t VALUES (1)").unwrap();

        let (asked, asking) = mpsc::channel();
        let (began, beginning) = mpsc::channel();
        let by_another_path = dir.path().join(".").join("turns.db");
        // Counts the times the second meets SQLite's lock (and waits a millisecond, as asked).
        static MET_THE_LOCK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        fn met_the_lock(_tries: i32) -> bool {
            MET_THE_LOCK.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
            true
        }
        let second = std::thread::spawn(move || {
            let second = Conn::open(Some(&by_another_path), Duration::from_secs(10)).unwrap();
            second.conn.busy_handler(Some(met_the_lock)).unwrap();
            asked.send(()).unwrap();
            second.begin_write().unwrap();
            began.send(count(&second)).unwrap();
            second.execute_batch("INSERT INTO t VALUES (2); COMMIT").unwrap();
        });
        asking.recv().unwrap();
        // The second waits for the turn, not for SQLite's lock.
        assert!(beginning.recv_timeout(Duration::from_millis(200)).is_err(), "the second began inside the first's write");
        first.execute_batch("COMMIT").unwrap();
        assert_eq!(beginning.recv_timeout(Duration::from_secs(5)).unwrap(), 1, "the second saw the first's commit");
        second.join().unwrap();
        assert_eq!(count(&first), 2);
        assert_eq!(MET_THE_LOCK.load(std::sync::atomic::Ordering::SeqCst), 0, "the second asked SQLite for the lock while the first held it");

        // Past the busy timeout the file is busy; a connection dropped inside its write gives the turn back.
        let impatient = Conn::open(Some(&path), Duration::from_millis(50)).unwrap();
        first.begin_write().unwrap();
        let refused = impatient.begin_write().unwrap_err();
        assert!(matches!(&refused, super::super::Error::Sqlite(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)), "{refused:?}");
        drop(first);
        impatient.begin_write().unwrap();
        impatient.execute_batch("INSERT INTO t VALUES (3); COMMIT").unwrap();
        assert_eq!(count(&impatient), 3);
    }
}
