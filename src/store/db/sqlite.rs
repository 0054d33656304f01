//! The SQLite half of the connection layer: the only file that names rusqlite.

use super::{Cell, Refusal, Result, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::path::Path;

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
        Ok(Conn { conn, busy })
    }

    pub fn execute(&self, sql: &str, values: &[Value]) -> Result<usize> {
        execute(&mut self.prepare_cached(sql)?, values)
    }

    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        Ok(self.conn.execute_batch(sql)?)
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
