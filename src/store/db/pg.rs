//! The PostgreSQL half of the connection layer: the only file that names the postgres crate.
//!
//! The store's SQL uses SQLite's `?` and `?N` parameters; each statement is rewritten to `$n`
//! once, prepared once per connection and kept. Arguments are converted to the type the server
//! deduced for each parameter, and columns are read back as [`Value`]s: every integer the schema
//! holds is BIGINT, a boolean expression reads as 0 or 1.
//!
//! The postgres crate blocks on a runtime of its own, which tokio refuses (with a panic) on a
//! thread that drives the server's runtime. The server keeps its store calls on blocking threads,
//! but a connection can still be made, used or dropped on a worker (r2d2 topping up the pool, the
//! last `Arc<Pool>` going away), so every call to the client goes through [`off_runtime`]: there,
//! as on SQLite, it blocks its thread rather than bringing the server down.

use super::{Refusal, Result, Value};
use postgres::types::{IsNull, ToSql, Type};
use std::cell::RefCell;
use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use postgres::{Error, Statement};

/// The advisory lock every write transaction of a studio takes first (ASCII "sflw").
const WRITER_LOCK: i32 = 0x7366_6c77;

/// The commit of [`Conn::commit_write`], then the flush: the transaction's commit does not wait
/// for the write-ahead log's flush, unless the server has a synchronous standby (as it is
/// configured when the commit is sent: then a commit waits, as by default, for the standby to have
/// it before anyone sees it, so that a failover never loses what others have read); then a
/// transaction of its own writes an empty message to the log and commits synchronously.
const COMMIT_THEN_FLUSH: &str = "SELECT set_config('synchronous_commit', \
     CASE WHEN current_setting('synchronous_standby_names') = '' THEN 'off' ELSE current_setting('synchronous_commit') END, true); \
     COMMIT; SELECT pg_logical_emit_message(true, 'studioflow.flush', '')";

/// Whether the connection's role may call `pg_logical_emit_message` with a text message (every
/// role may, unless an administrator revoked it): the flush of [`Conn::commit_write`]. Its
/// signature changed in PostgreSQL 17 (a fourth argument with a default), so it is found by name.
const FLUSH_ALLOWED: &str = "SELECT bool_or(has_function_privilege(p.oid, 'EXECUTE')) FROM pg_catalog.pg_proc p \
     WHERE p.proname = 'pg_logical_emit_message' AND p.pronamespace = 'pg_catalog'::regnamespace \
     AND p.proargtypes[2] = 'text'::regtype";

pub struct Conn {
    /// Always `Some` but in `drop`, which takes it to close it where that is allowed.
    client: RefCell<Option<postgres::Client>>,
    statements: RefCell<HashMap<String, Statement>>,
    /// Whether a writer's commit is flushed apart from it ([`Conn::commit_write`]): when this
    /// connection's role may write the flush's message, [`FLUSH_ALLOWED`].
    flush_apart: bool,
}

/// Closing a `postgres::Client` blocks on its runtime too, and a server may drop its last pooled
/// connection on a worker thread (when its `Arc<Pool>` goes away there, even while the runtime
/// shuts down): there the client is closed on a thread of its own.
impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(client) = self.client.get_mut().take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            std::thread::spawn(move || drop(client));
        }
    }
}

impl Conn {
    pub fn connect(url: &str) -> Result<Conn> {
        // sslrootcert is libpq's, not the crate's: it is taken out before the crate reads the URL.
        let (url, root) = take_parameter(url, "sslrootcert");
        let config: postgres::Config = url.parse().map_err(|e| super::Error::Setup(format!("{e}: the PostgreSQL URL looks like postgres://USER@HOST:PORT/DATABASE")))?;
        let tls = match config.get_ssl_mode() {
            postgres::config::SslMode::Require => {
                Some(Tls(crate::tls::verifying_client(root.as_deref().map(std::path::Path::new)).map_err(super::Error::Setup)?))
            }
            _ if root.is_some() => {
                return Err(super::Error::Setup("sslrootcert is read only with sslmode=require: add sslmode=require to the URL".into()));
            }
            _ => None,
        };
        let client = off_runtime(|| -> Result<(postgres::Client, bool)> {
            let mut client = match tls {
                Some(tls) => config.connect(tls)?,
                None => config.connect(postgres::NoTls)?,
            };
            // The schema the URL names (search_path) must exist: a missing one would only show at
            // the first CREATE TABLE, as "no schema has been selected".
            let first = client.query_one(&format!("SELECT current_schema(), ({FLUSH_ALLOWED})"), &[])?;
            let (schema, flush_apart): (Option<String>, Option<bool>) = (first.get(0), first.get(1));
            if schema.is_none() {
                let path: String = client.query_one("SHOW search_path", &[])?.get(0);
                return Err(super::Error::Setup(format!(
                    "no schema of the search_path ({path}) exists in this database: create it first (CREATE SCHEMA name), \
                     or set options=-csearch_path%3Dname in the URL to one that does"
                )));
            }
            Ok((client, flush_apart == Some(true)))
        })?;
        let (client, flush_apart) = client;
        let conn = Conn { client: RefCell::new(Some(client)), statements: RefCell::new(HashMap::new()), flush_apart };
        // A writer waiting for the studio's lock must see what was committed while it waited:
        // READ COMMITTED takes a fresh snapshot per statement, whatever the server's default.
        conn.execute_batch("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")?;
        Ok(conn)
    }

    fn client(&self) -> Result<std::cell::RefMut<'_, postgres::Client>> {
        std::cell::RefMut::filter_map(self.client.borrow_mut(), Option::as_mut).map_err(|_| super::Error::Setup("the connection was closed".into()))
    }

    pub fn is_closed(&self) -> bool {
        self.client.borrow().as_ref().is_none_or(postgres::Client::is_closed)
    }

    pub fn prepare_cached(&self, sql: &str) -> Result<Statement> {
        if let Some(stmt) = self.statements.borrow().get(sql) {
            return Ok(stmt.clone());
        }
        let client = &mut *self.client()?;
        let stmt = off_runtime(|| client.prepare(&rewrite(sql)))?;
        self.statements.borrow_mut().insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }

    pub fn execute(&self, sql: &str, values: &[Value]) -> Result<usize> {
        let stmt = self.prepare_cached(sql)?;
        self.execute_prepared(&stmt, values)
    }

    pub fn execute_prepared(&self, stmt: &Statement, values: &[Value]) -> Result<usize> {
        let args = arguments(values);
        let client = &mut *self.client()?;
        let changed = off_runtime(|| client.execute(stmt, &args))?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    pub fn query_prepared(&self, stmt: &Statement, values: &[Value]) -> Result<Vec<Vec<Value>>> {
        let args = arguments(values);
        let client = &mut *self.client()?;
        let rows = off_runtime(|| client.query(stmt, &args))?;
        rows.iter().map(|row| (0..row.len()).map(|i| row.try_get::<_, Value>(i).map_err(super::Error::from)).collect()).collect()
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
        let client = &mut *self.client()?;
        Ok(off_runtime(|| client.batch_execute(sql))?)
    }

    /// `BEGIN`, then the studio's writer lock (held to COMMIT or ROLLBACK, or until the
    /// connection dies), keyed by the schema so that studios sharing a database run side by side;
    /// then `version`, a query of one integer without parameters, if given, and its value.
    pub fn begin_write(&self, version: Option<&str>) -> Result<Option<i64>> {
        // One round trip for all: a writer holds the lock for every round trip it makes. Its
        // commit is made durable after the lock is released ([`Conn::commit_write`]).
        let mut sql = format!("BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK}, hashtext(current_schema()))");
        if let Some(version) = version {
            sql += "; ";
            sql += version;
        }
        let began = (|| {
            let client = &mut *self.client()?;
            let messages = off_runtime(|| client.simple_query(&sql))?;
            if version.is_none() {
                return Ok(None);
            }
            let last = messages.iter().rev().find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).and_then(|v| v.parse::<i64>().ok())),
                _ => None,
            });
            match last {
                Some(Some(value)) => Ok(Some(value)),
                _ => Err(super::Error::NoRows),
            }
        })();
        if began.is_err() {
            let _ = self.execute_batch("ROLLBACK");
        }
        began
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
    /// under the lock.
    pub fn commit_write(&self) -> Result<()> {
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

/// Runs `f`, which blocks on the postgres crate's own runtime, where that is allowed: as it is
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

impl postgres::tls::MakeTlsConnect<postgres::Socket> for Tls {
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

impl postgres::tls::TlsConnect<postgres::Socket> for TlsConnect {
    type Stream = TlsStream;
    type Error = std::io::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<TlsStream>> + Send>>;

    fn connect(self, socket: postgres::Socket) -> Self::Future {
        Box::pin(async move { tokio_rustls::TlsConnector::from(self.config).connect(self.name, socket).await.map(TlsStream) })
    }
}

struct TlsStream(tokio_rustls::client::TlsStream<postgres::Socket>);

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

impl postgres::tls::TlsStream for TlsStream {
    fn channel_binding(&self) -> postgres::tls::ChannelBinding {
        postgres::tls::ChannelBinding::none()
    }
}

/// Arguments as the postgres crate takes them.
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

    postgres::types::to_sql_checked!();
}

impl<'a> postgres::types::FromSql<'a> for Value {
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
    use postgres::error::SqlState;
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
    use postgres::error::SqlState;
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
