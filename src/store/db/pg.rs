//! The PostgreSQL half of the connection layer: the only file that names the PostgreSQL client
//! (tokio-postgres, driven by a runtime of each connection's own, so that the store's calls stay
//! blocking, as on SQLite).
//!
//! The store's SQL uses SQLite's `?` and `?N` parameters; each statement is rewritten to `$n`
//! once, prepared once per connection and kept. Arguments are converted to the type the server
//! deduced for each parameter, and columns are read back as [`Value`]s: every integer the schema
//! holds is BIGINT, a boolean expression reads as 0 or 1.
//!
//! A write transaction's `BEGIN` waits for the first statement of the transaction and goes out
//! with it, pipelined ([`Conn::defer_begin`]): the studio's lock is taken and the statement run in
//! one round trip, so the lock is not held while the answer to a lone `BEGIN` travels back. The
//! group commit's batches are the exception ([`Conn::begin_now`]): their sender waits for the
//! lock first, and gathers its batch then.
//!
//! Each connection's runtime blocks its thread, which tokio refuses (with a panic) on a thread
//! that drives the server's runtime. The server keeps its store calls on blocking threads, but a
//! connection can still be made, used or dropped on a worker (r2d2 topping up the pool, the last
//! `Arc<Pool>` going away), so every call to the client goes through [`off_runtime`]: there, as
//! on SQLite, it blocks its thread rather than bringing the server down.

use super::{Refusal, Result, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use tokio_postgres::types::{IsNull, ToSql, Type};

pub use tokio_postgres::{Error, Statement};

/// The advisory lock every write transaction of a studio takes first (ASCII "sflw").
const WRITER_LOCK: i32 = 0x7366_6c77;

// The two parts of [`COMMIT_THEN_FLUSH`], as macros so that `concat!` can join them.
macro_rules! commit_before_flush {
    () => {
        "SELECT set_config('synchronous_commit', \
         CASE WHEN current_setting('synchronous_standby_names') = '' THEN 'off' ELSE current_setting('synchronous_commit') END, true); \
         COMMIT;"
    };
}

macro_rules! flush {
    () => {
        "SELECT pg_logical_emit_message(true, 'studioflow.flush', '')"
    };
}

/// The commit of [`Conn::commit_write`], then the flush: the transaction's commit does not wait
/// for the write-ahead log's flush, unless the server has a synchronous standby (as it is
/// configured when the commit is sent: then a commit waits, as by default, for the standby to have
/// it before anyone sees it, so that a failover never loses what others have read); then a
/// transaction of its own writes an empty message to the log and commits synchronously.
const COMMIT_THEN_FLUSH: &str = concat!(commit_before_flush!(), " ", flush!());

/// The commit of [`COMMIT_THEN_FLUSH`], which releases the studio's lock, for a batch to send
/// apart from its flush ([`Conn::queries_then_commit`]).
const COMMIT_BEFORE_FLUSH: &str = commit_before_flush!();

/// The flush of [`COMMIT_THEN_FLUSH`].
const FLUSH: &str = flush!();

/// Whether the connection's role may call `pg_logical_emit_message` with a text message (every
/// role may, unless an administrator revoked it): the flush of [`Conn::commit_write`]. Its
/// signature changed in PostgreSQL 17 (a fourth argument with a default), so it is found by name.
const FLUSH_ALLOWED: &str = "SELECT bool_or(has_function_privilege(p.oid, 'EXECUTE')) FROM pg_catalog.pg_proc p \
     WHERE p.proname = 'pg_logical_emit_message' AND p.pronamespace = 'pg_catalog'::regnamespace \
     AND p.proargtypes[2] = 'text'::regtype";

/// The client and the runtime that drives its connection (a task on it, run while a call
/// blocks on the runtime).
struct Io {
    runtime: tokio::runtime::Runtime,
    /// Always `Some` but in `drop`.
    client: Option<tokio_postgres::Client>,
    /// The connection's task, which ends once the client is dropped and it has said goodbye.
    connection: Option<tokio::task::JoinHandle<()>>,
}

/// A connection says goodbye (`Terminate`, sent as the client is dropped) as it closes, so that
/// PostgreSQL logs no broken one: its task is run until it ends, for a second at most.
impl Drop for Io {
    fn drop(&mut self) {
        drop(self.client.take());
        if let Some(connection) = self.connection.take() {
            let _ = self.runtime.block_on(async { tokio::time::timeout(std::time::Duration::from_secs(1), connection).await });
        }
    }
}

impl Io {
    /// Runs `work` on the client to its end, off the server's runtime ([`off_runtime`]).
    fn run<'a, T: Send, F: Future<Output = Result<T, Error>>>(&'a self, work: impl FnOnce(&'a tokio_postgres::Client) -> F + Send) -> Result<T> {
        let client = self.client.as_ref().ok_or_else(|| super::Error::Setup("the connection was closed".into()))?;
        Ok(off_runtime(|| self.runtime.block_on(work(client)))?)
    }

    fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(tokio_postgres::Client::is_closed)
    }
}

/// The statements that begin a write transaction ([`Conn::begin_sql`]), and whether their last
/// reads the cache's version.
struct Begin {
    sql: String,
    reads_version: bool,
}

pub struct Conn {
    /// Always `Some` but in `drop`, which takes it to close it where that is allowed.
    io: RefCell<Option<Io>>,
    statements: RefCell<HashMap<String, Statement>>,
    /// Whether a writer's commit is flushed apart from it ([`Conn::commit_write`]): when this
    /// connection's role may write the flush's message, [`FLUSH_ALLOWED`].
    flush_apart: bool,
    /// The `BEGIN` of a write transaction that waits for its first statement ([`Conn::defer_begin`]).
    deferred: RefCell<Option<Begin>>,
    /// The version the last `BEGIN` read, once it has been sent: taken by [`Conn::take_begun`].
    begun: Cell<Option<Option<i64>>>,
}

/// Closing the client's runtime blocks, which tokio refuses on a thread that drives a runtime,
/// and a server may drop its last pooled connection on a worker thread (when its `Arc<Pool>`
/// goes away there, even while the runtime shuts down): there the connection is closed on a
/// thread of its own.
impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(io) = self.io.get_mut().take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            std::thread::spawn(move || drop(io));
        }
    }
}

impl Conn {
    pub fn connect(url: &str) -> Result<Conn> {
        // sslrootcert is libpq's, not the crate's: it is taken out before the crate reads the URL.
        let (url, root) = take_parameter(url, "sslrootcert");
        let config: tokio_postgres::Config =
            url.parse().map_err(|e| super::Error::Setup(format!("{e}: the PostgreSQL URL looks like postgres://USER@HOST:PORT/DATABASE")))?;
        let tls = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Require => {
                Some(Tls(crate::tls::verifying_client(root.as_deref().map(std::path::Path::new)).map_err(super::Error::Setup)?))
            }
            _ if root.is_some() => {
                return Err(super::Error::Setup("sslrootcert is read only with sslmode=require: add sslmode=require to the URL".into()));
            }
            _ => None,
        };
        // Made, and on failure dropped, where blocking is allowed ([`off_runtime`]).
        let (runtime, client, connection) = off_runtime(|| -> Result<_> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| super::Error::Setup(format!("a runtime for the PostgreSQL connection could not start: {e}")))?;
            let (client, connection) = runtime.block_on(async {
                // The connection's task lives on the runtime, and runs whenever a call blocks on it.
                let spawn = |connection: Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>| tokio::spawn(async move {
                    let _ = connection.await;
                });
                match tls {
                    Some(tls) => config.connect(tls).await.map(|(client, connection)| (client, spawn(Box::pin(connection)))),
                    None => config.connect(tokio_postgres::NoTls).await.map(|(client, connection)| (client, spawn(Box::pin(connection)))),
                }
            })?;
            Ok((runtime, client, connection))
        })?;
        // Owned by a `Conn` at once, whose drop closes it where that is allowed.
        let mut conn = Conn {
            io: RefCell::new(Some(Io { runtime, client: Some(client), connection: Some(connection) })),
            statements: RefCell::new(HashMap::new()),
            flush_apart: false,
            deferred: RefCell::new(None),
            begun: Cell::new(None),
        };
        // The schema the URL names (search_path) must exist: a missing one would only show at
        // the first CREATE TABLE, as "no schema has been selected".
        let sql = format!("SELECT current_schema(), ({FLUSH_ALLOWED})");
        let first = conn.io()?.run(|client| client.query_one(&sql, &[]))?;
        let (schema, flush_apart): (Option<String>, Option<bool>) = (first.get(0), first.get(1));
        if schema.is_none() {
            let path: String = conn.io()?.run(|client| client.query_one("SHOW search_path", &[]))?.get(0);
            return Err(super::Error::Setup(format!(
                "no schema of the search_path ({path}) exists in this database: create it first (CREATE SCHEMA name), \
                 or set options=-csearch_path%3Dname in the URL to one that does"
            )));
        }
        conn.flush_apart = flush_apart == Some(true);
        // A writer waiting for the studio's lock must see what was committed while it waited:
        // READ COMMITTED takes a fresh snapshot per statement, whatever the server's default.
        conn.execute_batch("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")?;
        Ok(conn)
    }

    fn io(&self) -> Result<std::cell::Ref<'_, Io>> {
        std::cell::Ref::filter_map(self.io.borrow(), Option::as_ref).map_err(|_| super::Error::Setup("the connection was closed".into()))
    }

    pub fn is_closed(&self) -> bool {
        self.io.borrow().as_ref().is_none_or(Io::is_closed)
    }

    pub fn prepare_cached(&self, sql: &str) -> Result<Statement> {
        if let Some(stmt) = self.statements.borrow().get(sql) {
            return Ok(stmt.clone());
        }
        let rewritten = rewrite(sql);
        let stmt = self.io()?.run(|client| client.prepare(&rewritten))?;
        self.statements.borrow_mut().insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }

    pub fn execute(&self, sql: &str, values: &[Value]) -> Result<usize> {
        let stmt = self.prepare_cached(sql)?;
        self.execute_prepared(&stmt, values)
    }

    pub fn execute_prepared(&self, stmt: &Statement, values: &[Value]) -> Result<usize> {
        let args = arguments(values);
        let io = self.io()?;
        let changed = self.after_begin(&io, |client| client.execute(stmt, &args))?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    pub fn query_prepared(&self, stmt: &Statement, values: &[Value]) -> Result<Vec<Vec<Value>>> {
        let args = arguments(values);
        let io = self.io()?;
        let rows = self.after_begin(&io, |client| client.query(stmt, &args))?;
        values_of(&rows)
    }

    /// Runs `work`, after the deferred `BEGIN` if one waits: both go out at once, and the
    /// version the `BEGIN` read is kept for [`Conn::take_begun`]. A `BEGIN` that fails fails the
    /// work too (it runs in the aborted transaction), with the `BEGIN`'s error.
    fn after_begin<'a, T: Send, F: Future<Output = Result<T, Error>>>(
        &self,
        io: &'a Io,
        work: impl FnOnce(&'a tokio_postgres::Client) -> F + Send,
    ) -> Result<T> {
        let Some(begin) = self.deferred.borrow_mut().take() else {
            return io.run(work);
        };
        let (began, worked) = io.run(|client| {
            let began = client.simple_query(&begin.sql);
            let worked = work(client);
            async move {
                let (began, worked) = both(began, worked).await;
                Ok::<_, Error>((began, worked))
            }
        })?;
        let began = began.map_err(super::Error::from).and_then(|messages| begun_version(messages, begin.reads_version));
        if began.is_err() {
            let _ = self.execute_batch("ROLLBACK");
        }
        self.begun.set(Some(began?));
        Ok(worked?)
    }

    /// [`Conn::execute`] in a transaction of its own whose lock waits end after `wait`.
    pub fn execute_waiting(&self, sql: &str, values: &[Value], wait: std::time::Duration) -> Result<usize> {
        self.execute_batch(&format!("BEGIN; SET LOCAL lock_timeout = {}", wait.as_millis().max(1)))?;
        match self.execute(sql, values) {
            Ok(changed) => {
                self.execute_batch("COMMIT")?;
                Ok(changed)
            }
            Err(e) => {
                let _ = self.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        if self.deferred.borrow().is_some() {
            if sql == "ROLLBACK" {
                // Nothing was begun on the server: there is nothing to undo.
                self.deferred.borrow_mut().take();
                return Ok(());
            }
            // Another statement of the transaction (a savepoint, say) goes after the `BEGIN`.
            let io = self.io()?;
            return self.after_begin(&io, |client| client.batch_execute(sql));
        }
        Ok(self.io()?.run(|client| client.batch_execute(sql))?)
    }

    /// The statements that begin a write transaction: `BEGIN`, then the studio's writer lock
    /// (held to COMMIT or ROLLBACK, or until the connection dies), keyed by the schema so that
    /// studios sharing a database run side by side; then `version`, a query of one integer
    /// without parameters, if given.
    fn begin_sql(version: Option<&str>) -> Begin {
        let mut sql = format!("BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK}, hashtext(current_schema()))");
        if let Some(version) = version {
            sql += "; ";
            sql += version;
        }
        Begin { sql, reads_version: version.is_some() }
    }

    /// Begins a write transaction now ([`Conn::begin_sql`]), and returns the version it read.
    pub fn begin_write(&self, version: Option<&str>) -> Result<Option<i64>> {
        // One round trip for all: a writer holds the lock for every round trip it makes. Its
        // commit is made durable after the lock is released ([`Conn::commit_write`]).
        let begin = Conn::begin_sql(version);
        let began = (|| begun_version(self.io()?.run(|client| client.simple_query(&begin.sql))?, begin.reads_version))();
        if began.is_err() {
            let _ = self.execute_batch("ROLLBACK");
        }
        began
    }

    /// Begins a write transaction with its first statement, whatever that is: the two go out
    /// together, and the studio's lock is held for one round trip fewer. The version the `BEGIN`
    /// read is known only then ([`Conn::take_begun`]); what was done before it on a cached value
    /// must be checked against it. A transaction that ends before any statement costs nothing.
    pub fn defer_begin(&self, version: Option<&str>) {
        self.begun.set(None);
        *self.deferred.borrow_mut() = Some(Conn::begin_sql(version));
    }

    /// The version read by a deferred `BEGIN` ([`Conn::defer_begin`]) that has now been sent, once.
    pub fn take_begun(&self) -> Option<Option<i64>> {
        self.begun.take()
    }

    /// Commits a transaction of [`Conn::begin_write`], and returns once it is durable, in one
    /// round trip ([`COMMIT_THEN_FLUSH`]). The commit itself does not wait for the disk, so the
    /// studio's lock, released by the commit, is not held through the flush of the write-ahead
    /// log: the next writer runs while this one's flush is under way, and flushes of several
    /// writers can be one. The statement after the commit is a transaction of its own that writes
    /// to the log (an empty message, the smallest record a transaction can write without a table,
    /// which takes it a transaction id), so it commits synchronously, with a flush of the log up to
    /// its own commit record, which comes after this transaction's: the caller hears of success
    /// only once the writes would survive a crash. (A transaction that writes nothing to the log
    /// commits without a flush, even with a transaction id.) For the time of that flush, other
    /// sessions may already see the writes; anything they commit after is flushed with them,
    /// since the log is flushed in order.
    ///
    /// A role that may not write that message ([`FLUSH_ALLOWED`]) commits as by default, flushed
    /// under the lock. A transaction whose `BEGIN` was never sent has nothing to commit.
    pub fn commit_write(&self) -> Result<()> {
        if self.deferred.borrow_mut().take().is_some() {
            return Ok(());
        }
        if !self.flush_apart {
            return self.execute_batch("COMMIT");
        }
        let committed = self.execute_batch(COMMIT_THEN_FLUSH);
        if committed.as_ref().is_err_and(|e| !matches!(e, super::Error::Postgres(e) if is_lost(e))) {
            // Refused before the COMMIT ran (cancelled, say), the transaction would stay open and
            // aborted: it is ended here. After the COMMIT, this only draws a warning.
            let _ = self.execute_batch("ROLLBACK");
        }
        committed
    }

    /// [`Conn::query_prepared`], then the commit of [`Conn::commit_write`], sent together (with a
    /// deferred `BEGIN` before them, if one waits): a write transaction whose last statement is
    /// known before its answer holds the studio's lock for no round trip at all, only for the
    /// time PostgreSQL takes to run the statement and the commit. A statement that fails aborts
    /// the transaction, and the `COMMIT` behind it then rolls it back.
    ///
    /// The rows, or the first error; and whether the commit may have been reached: not when the
    /// connection was lost before its first statement was answered, since PostgreSQL runs a
    /// connection's statements in order and answers each before it runs the next.
    pub fn query_then_commit(&self, stmt: &Statement, values: &[Value]) -> (Result<Vec<Vec<Value>>>, bool) {
        let (rows, maybe_committed) = self.queries_then_commit(&[(stmt, values)], &|| {});
        (rows.and_then(|mut each| each.pop().ok_or(super::Error::NoRows)), maybe_committed)
    }

    /// [`Conn::query_then_commit`] of several statements, sent one after the other, in order, and
    /// committed together: one transaction, one lock, one commit and one flush for all. Either
    /// all of them are committed or none: a statement that fails aborts the transaction, and the
    /// `COMMIT` behind them rolls it back. The rows of each, in order, or the first error.
    ///
    /// `released` is called once the studio's lock is released: as the commit is answered, before
    /// the flush is (or as soon as the transaction failed).
    pub fn queries_then_commit(&self, batch: &[(&Statement, &[Value])], released: &(dyn Fn() + Sync)) -> (Result<Vec<Vec<Vec<Value>>>>, bool) {
        let args: Vec<_> = batch.iter().map(|(_, values)| arguments(values)).collect();
        let begin = self.deferred.borrow_mut().take();
        let (commit, flush) = if self.flush_apart { (COMMIT_BEFORE_FLUSH, Some(FLUSH)) } else { ("COMMIT", None) };
        let io = match self.io() {
            Ok(io) => io,
            Err(e) => return (Err(e), false),
        };
        let sent = io.run(|client| {
            let began = begin.as_ref().map(|begin| client.simple_query(&begin.sql));
            let queried: Vec<_> = batch.iter().zip(&args).map(|((stmt, _), args)| client.query(*stmt, args)).collect();
            let committed = client.simple_query(commit);
            let flushed = flush.map(|flush| client.simple_query(flush));
            async move {
                let began = async move {
                    match began {
                        Some(began) => Some(began.await),
                        None => None,
                    }
                };
                let committed = async move {
                    let committed = committed.await;
                    released();
                    committed
                };
                let flushed = async move {
                    match flushed {
                        Some(flushed) => flushed.await.map(|_| ()),
                        None => Ok(()),
                    }
                };
                let (began, (queried, (committed, flushed))) = both(began, both(in_order(queried), both(committed, flushed))).await;
                Ok::<_, Error>((began, queried, committed.and(flushed)))
            }
        });
        let (began, queried, committed) = match sent {
            Ok(sent) => sent,
            Err(e) => return (Err(e), false),
        };
        let answered = |result: Result<(), &Error>| result.is_ok() || result.is_err_and(|e| !is_lost(e));
        let first_answered = match (&began, queried.first()) {
            (Some(began), _) => answered(began.as_ref().map(|_| ())),
            (None, Some(queried)) => answered(queried.as_ref().map(|_| ())),
            (None, None) => answered(committed.as_ref().map(|_| ())),
        };
        // A statement refused leaves the transaction aborted, and the commit's first statement
        // is then refused too, so the COMMIT behind it never runs: the transaction is ended here.
        let refused = |result: Result<(), &Error>| result.is_err_and(|e| !is_lost(e));
        if began.as_ref().is_some_and(|began| refused(began.as_ref().map(|_| ())))
            || queried.iter().any(|queried| refused(queried.as_ref().map(|_| ())))
            || refused(committed.as_ref().map(|_| ()))
        {
            let _ = self.execute_batch("ROLLBACK");
        }
        if let (Some(began), Some(begin)) = (began, &begin) {
            match began.map_err(super::Error::from).and_then(|messages| begun_version(messages, begin.reads_version)) {
                Ok(version) => self.begun.set(Some(version)),
                Err(e) => return (Err(e), first_answered),
            }
        }
        let mut rows = Vec::with_capacity(queried.len());
        for queried in queried {
            match queried {
                Ok(queried) => rows.push(queried),
                Err(e) => return (Err(e.into()), first_answered),
            }
        }
        if let Err(e) = committed {
            return (Err(e.into()), first_answered);
        }
        (rows.iter().map(|rows| values_of(rows)).collect(), true)
    }

    /// Whether a deferred `BEGIN` waits for the transaction's first statement
    /// ([`Conn::defer_begin`]): nothing of the transaction has been sent, and it holds no lock.
    pub fn begin_waits(&self) -> bool {
        self.deferred.borrow().is_some()
    }

    /// Sends the deferred `BEGIN` ([`Conn::defer_begin`]) now, alone, and returns once it is
    /// answered: once the transaction holds the studio's lock.
    pub fn begin_now(&self) -> Result<()> {
        let io = self.io()?;
        self.after_begin(&io, |_| async { Ok::<(), tokio_postgres::Error>(()) })
    }

    /// Drops a deferred `BEGIN` that will not be sent: the transaction's statement went out on
    /// another connection, in its transaction.
    pub fn forget_begin(&self) {
        self.deferred.borrow_mut().take();
        self.begun.set(None);
    }

    /// Takes the session-level advisory lock `purpose` of this studio if it is free.
    pub fn try_lock(&self, purpose: i32) -> Result<bool> {
        let took = self.query_one_int("SELECT pg_try_advisory_lock(?1, hashtext(current_schema()))::int", &[Value::Int(purpose.into())])?;
        Ok(took == 1)
    }

    pub fn unlock(&self, purpose: i32) -> Result<()> {
        self.query_one_int("SELECT pg_advisory_unlock(?1, hashtext(current_schema()))::int", &[Value::Int(purpose.into())])?;
        Ok(())
    }

    fn query_one_int(&self, sql: &str, values: &[Value]) -> Result<i64> {
        let stmt = self.prepare_cached(sql)?;
        match self.query_prepared(&stmt, values)?.first().and_then(|row| row.first()) {
            Some(Value::Int(value)) => Ok(*value),
            _ => Err(super::Error::NoRows),
        }
    }
}

/// Every column of every row, as the store reads them.
fn values_of(rows: &[tokio_postgres::Row]) -> Result<Vec<Vec<Value>>> {
    rows.iter().map(|row| (0..row.len()).map(|i| row.try_get::<_, Value>(i).map_err(super::Error::from)).collect()).collect()
}

/// The version a `BEGIN` of [`Conn::begin_sql`] read: the value of its last row, if it read one.
fn begun_version(messages: Vec<tokio_postgres::SimpleQueryMessage>, reads_version: bool) -> Result<Option<i64>> {
    if !reads_version {
        return Ok(None);
    }
    let last = messages.iter().rev().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).and_then(|v| v.parse::<i64>().ok())),
        _ => None,
    });
    match last {
        Some(Some(value)) => Ok(Some(value)),
        _ => Err(super::Error::NoRows),
    }
}

/// Both futures to their ends, each polled first in the order given: the requests they send go
/// out in that order, one after the other, before either is answered (tokio-postgres pipelines
/// requests made before their answers are awaited).
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut out_a, mut out_b) = (None, None);
    std::future::poll_fn(|cx| {
        if out_a.is_none()
            && let Poll::Ready(out) = a.as_mut().poll(cx)
        {
            out_a = Some(out);
        }
        if out_b.is_none()
            && let Poll::Ready(out) = b.as_mut().poll(cx)
        {
            out_b = Some(out);
        }
        match (out_a.take(), out_b.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                (out_a, out_b) = (a, b);
                Poll::Pending
            }
        }
    })
    .await
}

/// Every future to its end, each polled first in the order given, as [`both`] does for two.
async fn in_order<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(out) => *output = Some(out),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// Runs `f`, which blocks on a connection's own runtime, where that is allowed: as it is
/// outside tokio and on its blocking threads; on a worker of a multi-threaded runtime, with the
/// worker handed over meanwhile (`block_in_place`); on a current-thread runtime, on a thread of
/// its own.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Err(_) => f(),
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        Ok(_) => std::thread::scope(|scope| scope.spawn(f).join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))),
    }
}

/// `url` without its query parameter `name`, and that parameter's value (percent-decoded).
fn take_parameter(url: &str, name: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), None) };
    let mut value = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some((key, found)) if key == name => {
                value = Some(percent_decoded(found));
                false
            }
            _ => true,
        })
        .collect();
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    (url, value)
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, ..) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// TLS for `sslmode=require`, with rustls: the server's certificate and host name are verified
/// against the platform's roots and the URL's `sslrootcert` (stricter than libpq's `require`,
/// which only encrypts). Channel binding is not offered.
struct Tls(std::sync::Arc<rustls::ClientConfig>);

impl tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket> for Tls {
    type Stream = TlsStream;
    type TlsConnect = TlsConnect;
    type Error = std::io::Error;

    fn make_tls_connect(&mut self, host: &str) -> std::io::Result<TlsConnect> {
        let name = rustls_pki_types::ServerName::try_from(host.to_owned())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{host:?} is not a host name TLS can verify")))?;
        Ok(TlsConnect { config: self.0.clone(), name })
    }
}

struct TlsConnect {
    config: std::sync::Arc<rustls::ClientConfig>,
    name: rustls_pki_types::ServerName<'static>,
}

impl tokio_postgres::tls::TlsConnect<tokio_postgres::Socket> for TlsConnect {
    type Stream = TlsStream;
    type Error = std::io::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<TlsStream>> + Send>>;

    fn connect(self, socket: tokio_postgres::Socket) -> Self::Future {
        Box::pin(async move { tokio_rustls::TlsConnector::from(self.config).connect(self.name, socket).await.map(TlsStream) })
    }
}

struct TlsStream(tokio_rustls::client::TlsStream<tokio_postgres::Socket>);

impl tokio::io::AsyncRead for TlsStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for TlsStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

impl tokio_postgres::tls::TlsStream for TlsStream {
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        tokio_postgres::tls::ChannelBinding::none()
    }
}

/// Arguments as tokio-postgres takes them.
fn arguments(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|value| value as &(dyn ToSql + Sync)).collect()
}

/// `?` becomes `$k` (k counting up), `?N` becomes `$N`; quoted text is left alone.
pub fn rewrite(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let (mut next, mut quote, mut chars) = (1, None, sql.chars().peekable());
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (Some(_), c) => out.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (None, '?') => {
                out.push('$');
                let mut numbered = false;
                while let Some(digit) = chars.next_if(char::is_ascii_digit) {
                    out.push(digit);
                    numbered = true;
                }
                if !numbered {
                    out.push_str(&next.to_string());
                    next += 1;
                }
            }
            (None, c) => out.push(c),
        }
    }
    out
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(value) => match *ty {
                Type::INT8 => value.to_sql(ty, out),
                Type::INT4 => i32::try_from(*value)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*value)?.to_sql(ty, out),
                Type::BOOL => (*value != 0).to_sql(ty, out),
                _ => Err(format!("an integer cannot be passed as {ty}").into()),
            },
            Value::Text(text) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => text.as_str().to_sql(ty, out),
                _ => Err(format!("text cannot be passed as {ty}").into()),
            },
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::INT4 | Type::INT2 | Type::BOOL | Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN)
    }

    tokio_postgres::types::to_sql_checked!();
}

impl<'a> tokio_postgres::types::FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Value, Box<dyn std::error::Error + Sync + Send>> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            _ => Value::Text(<&str>::from_sql(ty, raw)?.to_owned()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Value, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Value::Null)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::INT4 | Type::INT2 | Type::BOOL | Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME)
    }
}

/// The error as PostgreSQL told it: its message, detail and hint (the crate's own text for a
/// server error is only "db error").
pub fn describe(e: &Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{} ({})", db.message(), db.code().code());
            for extra in [db.detail(), db.hint()].into_iter().flatten() {
                text.push_str(": ");
                text.push_str(extra);
            }
            text
        }
        None => {
            // A connection error says what failed only in its source ("connection refused").
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

/// Whether an error means the connection is gone, rather than that the database refused or
/// failed a statement: the client found it closed, the socket failed (reset, refused, timed
/// out), or the server said it is ending the session: SQLSTATE class 08 (connection
/// exception), 57P01 (terminated by an administrator, or a fast shutdown), 57P02 (crash
/// shutdown), 57P03 (cannot connect now: starting up or shutting down), 57P05 (idle session
/// timeout), 25P03 (idle in transaction timeout). Nothing sent on the session commits after any
/// of these; whether something sent before was committed is the caller's to know.
pub fn is_lost(e: &Error) -> bool {
    use tokio_postgres::error::SqlState;
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        return code.code().starts_with("08")
            || [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW, SqlState::IDLE_SESSION_TIMEOUT, SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT]
                .contains(code);
    }
    // The crate keeps its error kinds private: a failed socket is told by its source, and by
    // the kind of I/O error (a TLS handshake refused, say, is InvalidData: not a lost connection).
    use std::io::ErrorKind::*;
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | ConnectionRefused | BrokenPipe | UnexpectedEof | TimedOut | NotConnected
                    | HostUnreachable | NetworkUnreachable | NetworkDown
            );
        }
        source = cause.source();
    }
    false
}

pub fn refusal(e: &Error) -> Option<Refusal> {
    use tokio_postgres::error::SqlState;
    let db = e.as_db_error()?;
    let code = db.code();
    if *code == SqlState::LOCK_NOT_AVAILABLE || *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE {
        Some(Refusal::Busy)
    } else if *code == SqlState::UNIQUE_VIOLATION {
        Some(Refusal::Unique(db.constraint().map(str::to_owned)))
    } else if *code == SqlState::EXCLUSION_VIOLATION {
        Some(Refusal::Overlap(db.constraint().unwrap_or_default().to_owned()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn sslrootcert_is_taken_out_of_the_url_and_decoded() {
        use super::take_parameter;
        assert_eq!(take_parameter("postgres://h/db", "sslrootcert"), ("postgres://h/db".into(), None));
        assert_eq!(
            take_parameter("postgres://h/db?sslmode=require&sslrootcert=%2Fetc%2Fca.pem&user=a", "sslrootcert"),
            ("postgres://h/db?sslmode=require&user=a".into(), Some("/etc/ca.pem".into()))
        );
        assert_eq!(take_parameter("postgres://h/db?sslrootcert=/ca.pem", "sslrootcert"), ("postgres://h/db".into(), Some("/ca.pem".into())));
    }

    #[test]
    fn parameters_are_numbered_as_postgresql_numbers_them() {
        assert_eq!(rewrite("SELECT a FROM t WHERE x = ? AND y = '?' AND z = ?"), "SELECT a FROM t WHERE x = $1 AND y = '?' AND z = $2");
        assert_eq!(rewrite("VALUES (1, ?1, ?2) ON CONFLICT (id) DO UPDATE SET name = ?1, tz = ?12"), "VALUES (1, $1, $2) ON CONFLICT (id) DO UPDATE SET name = $1, tz = $12");
        assert_eq!(rewrite(r#"SELECT "a?" FROM t WHERE b = 'it''s ?' AND c = ?"#), r#"SELECT "a?" FROM t WHERE b = 'it''s ?' AND c = $1"#);
    }
}
