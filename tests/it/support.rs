//! Shared fixtures: a test database on either backend ([`TestDb`], and [`on_both!`] to run one
//! test body on both), a small studio in it, helpers to read times, and ([`issuer`]) a test OAuth
//! issuer that serves keys and mints access tokens.
//!
//! A test that needs a PostgreSQL database is `#[ignore = "needs STUDIOFLOW_TEST_PG ..."]`, so that
//! `cargo test` counts it as ignored rather than passed; `cargo test -- --include-ignored` runs it,
//! and without the variable it fails saying so ([`PgSchema::new`]).

pub mod issuer;

use chrono::{DateTime, Duration, Utc};
use std::path::PathBuf;
use studioflow::domain::{
    ClientId, EngineerId, Session, Person, Room, RoomId, Status, Studio, StudioTz, WeeklyHours,
};
use studioflow::store::{Store, Target};
use tempfile::TempDir;

pub fn london() -> StudioTz {
    "Europe/London".parse().unwrap()
}

/// A local time in London, `YYYY-MM-DDTHH:MM`.
pub fn at(local: &str) -> DateTime<Utc> {
    london().parse(local).unwrap()
}

/// The PostgreSQL server the PostgreSQL runs of the tests use: `STUDIOFLOW_TEST_PG`, a URL such
/// as `postgres://postgres@127.0.0.1/test`. The tests that need it are ignored unless asked for
/// (`--include-ignored`), and fail without it.
pub const PG_ENV: &str = "STUDIOFLOW_TEST_PG";

/// A schema of its own in the test PostgreSQL database, dropped with everything in it when the
/// test ends.
pub struct PgSchema {
    base: String,
    pub name: String,
}

impl PgSchema {
    /// A schema in `STUDIOFLOW_TEST_PG`'s database for the test `test`. Without the variable the
    /// test fails, saying it is needed: a test asked to run on PostgreSQL never passes silently.
    pub fn new(test: &str) -> PgSchema {
        let Ok(base) = std::env::var(PG_ENV) else {
            panic!(
                "{test} needs {PG_ENV} (a PostgreSQL database, e.g. {PG_ENV}=postgres://postgres@127.0.0.1/test; see README), \
                 which is not set: set it, or run without --include-ignored / --ignored"
            );
        };
        PgSchema::in_database(&base)
    }

    /// A schema of its own in the database `base` names (a URL), such as a private cluster's.
    pub fn in_database(base: &str) -> PgSchema {
        let base = base.to_owned();
        // The databases where the extension was made, by URL.
        static EXTENSION: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).unwrap();
        let name = format!("t_{}", data_encoding::HEXLOWER.encode(&random));
        let mut client = postgres::Client::connect(&base, postgres::NoTls).unwrap_or_else(|e| panic!("{PG_ENV}={base}: {e}"));
        // Once per run and database, under a lock: concurrent CREATE EXTENSION races on the catalog.
        let mut made = EXTENSION.lock().unwrap_or_else(|e| e.into_inner());
        if !made.contains(&base) {
            client.batch_execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public").unwrap();
            made.push(base.clone());
        }
        drop(made);
        client.batch_execute(&format!("CREATE SCHEMA {name}")).unwrap();
        PgSchema { base, name }
    }

    /// The URL of the schema: the base URL with its search_path set to the schema alone.
    pub fn url(&self) -> String {
        let join = if self.base.contains('?') { '&' } else { '?' };
        format!("{}{join}options=-csearch_path%3D{}", self.base, self.name)
    }

    /// A client of the schema's own, for raw SQL (a writer outside studioflow).
    pub fn client(&self) -> postgres::Client {
        let mut client = postgres::Client::connect(&self.base, postgres::NoTls).unwrap();
        client.batch_execute(&format!("SET search_path = {}", self.name)).unwrap();
        client
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

/// A temporary directory that lives as long as the test, and a database path inside it.
pub struct TempDb {
    /// Held so that the directory, and the file in it, live as long as the test.
    pub _dir: TempDir,
    pub path: PathBuf,
}

pub fn temp_db() -> TempDb {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("studio.db");
    TempDb { _dir: dir, path }
}

impl AsRef<std::ffi::OsStr> for TempDb {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_ref()
    }
}

impl From<&TempDb> for Target {
    fn from(db: &TempDb) -> Target {
        Target::File(db.path.clone())
    }
}

/// A test's database on one backend or the other: an SQLite file in a temporary directory, or a
/// schema of its own in `STUDIOFLOW_TEST_PG`'s database. The raw-SQL helpers speak to it through
/// the drivers themselves (rusqlite, postgres), not through the store's layer, so that what a
/// test reads back is what the database holds; their SQL must be portable.
///
/// As `AsRef<OsStr>` it is the binary's `--db` argument, so `stdio(db, ..)` serves it.
pub struct TestDb {
    backend: Backend,
    /// [`TestDb::db_arg`], kept to be lent as an `OsStr`.
    arg: String,
    /// A temporary directory for the test's other files (and the SQLite database).
    dir: TempDir,
}

enum Backend {
    Sqlite(PathBuf),
    Postgres(PgSchema),
}

impl TestDb {
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("studio.db");
        TestDb { arg: path.to_str().unwrap().to_owned(), backend: Backend::Sqlite(path), dir }
    }

    /// A schema of its own in `STUDIOFLOW_TEST_PG`'s database; fails the test, saying so, when the
    /// variable is not set ([`PgSchema::new`]).
    pub fn postgres(test: &str) -> TestDb {
        let schema = PgSchema::new(test);
        TestDb { arg: schema.url(), backend: Backend::Postgres(schema), dir: tempfile::tempdir().unwrap() }
    }

    /// A path for a file of the test's own (an instance, a log, a client's state), beside the
    /// database on SQLite.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The SQLite file, for the few checks that read the file itself; `None` on PostgreSQL.
    pub fn path(&self) -> Option<&std::path::Path> {
        match &self.backend {
            Backend::Sqlite(path) => Some(path),
            Backend::Postgres(_) => None,
        }
    }

    /// A schema of its own in the PostgreSQL database `base` names (a URL), such as a private
    /// cluster's rather than `STUDIOFLOW_TEST_PG`'s.
    pub fn postgres_in(base: &str) -> TestDb {
        let schema = PgSchema::in_database(base);
        TestDb { arg: schema.url(), backend: Backend::Postgres(schema), dir: tempfile::tempdir().unwrap() }
    }

    /// Another empty database on the same backend.
    pub fn another(&self) -> TestDb {
        match &self.backend {
            Backend::Sqlite(_) => TestDb::sqlite(),
            Backend::Postgres(schema) => TestDb::postgres(&schema.name),
        }
    }

    pub fn target(&self) -> Target {
        match &self.backend {
            Backend::Sqlite(path) => Target::File(path.clone()),
            Backend::Postgres(_) => Target::Postgres(self.arg.clone()),
        }
    }

    /// What the binary's `--db` takes: the file's path, or the schema's URL.
    pub fn db_arg(&self) -> &str {
        &self.arg
    }

    /// A store on the database, its schema brought up to date.
    pub fn open(&self) -> Store {
        Store::open(self).unwrap()
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// Every row of a query, each column as text (an integer in decimal, NULL as `None`).
    pub fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        match &self.backend {
            Backend::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                let columns = stmt.column_count();
                stmt.query_map([], |row| {
                    (0..columns)
                        .map(|i| {
                            Ok(match row.get_ref(i)? {
                                rusqlite::types::ValueRef::Null => None,
                                rusqlite::types::ValueRef::Integer(n) => Some(n.to_string()),
                                rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8(t.to_vec()).unwrap()),
                                other => panic!("{sql}: column {i} is {other:?}"),
                            })
                        })
                        .collect()
                })
                .unwrap()
                .map(Result::unwrap)
                .collect()
            }
            Backend::Postgres(schema) => {
                use postgres::types::Type;
                let rows = schema.client().query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
                rows.iter()
                    .map(|row| {
                        row.columns()
                            .iter()
                            .enumerate()
                            .map(|(i, column)| match *column.type_() {
                                Type::INT8 => row.get::<_, Option<i64>>(i).map(|n| n.to_string()),
                                Type::INT4 => row.get::<_, Option<i32>>(i).map(|n| n.to_string()),
                                Type::BOOL => row.get::<_, Option<bool>>(i).map(|b| i64::from(b).to_string()),
                                _ => row.get::<_, Option<String>>(i),
                            })
                            .collect()
                    })
                    .collect()
            }
        }
    }

    /// The first column of the only row of a query, as text.
    pub fn text(&self, sql: &str) -> Option<String> {
        let rows = self.rows(sql);
        assert_eq!(rows.len(), 1, "{sql}: one row expected");
        rows[0][0].clone()
    }

    /// The first column of the only row of a query: an integer (COUNT(*), say).
    pub fn scalar(&self, sql: &str) -> i64 {
        self.text(sql).unwrap_or_else(|| panic!("{sql}: NULL")).parse().unwrap()
    }

    /// Runs statements, as a writer outside studioflow would.
    pub fn exec(&self, sql: &str) {
        self.try_exec(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// [`TestDb::exec`], the database's refusal as text.
    pub fn try_exec(&self, sql: &str) -> Result<(), String> {
        match &self.backend {
            Backend::Sqlite(path) => rusqlite::Connection::open(path).unwrap().execute_batch(sql).map_err(|e| e.to_string()),
            Backend::Postgres(schema) => schema.client().batch_execute(sql).map_err(|e| match e.as_db_error() {
                Some(db) => db.message().to_owned(),
                None => e.to_string(),
            }),
        }
    }

    /// Whether `needle` occurs anywhere in the database: in the SQLite file or its WAL companions,
    /// or in any row of any table of the PostgreSQL schema (each row as text).
    pub fn holds(&self, needle: &[u8]) -> bool {
        let found = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        match &self.backend {
            Backend::Sqlite(file) => ["", "-wal", "-shm"].iter().any(|suffix| {
                let mut path = file.as_os_str().to_owned();
                path.push(suffix);
                std::fs::read(path).is_ok_and(|bytes| found(&bytes))
            }),
            Backend::Postgres(_) => {
                let tables = self.rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()");
                tables.iter().any(|table| {
                    let rows = self.rows(&format!("SELECT CAST(t AS TEXT) FROM {} t", table[0].as_deref().unwrap()));
                    rows.iter().flatten().flatten().any(|row| found(row.as_bytes()))
                })
            }
        }
    }

    /// The studio's tables, by name.
    pub fn tables(&self) -> Vec<String> {
        let sql = match self.backend {
            Backend::Sqlite(_) => "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            Backend::Postgres(_) => "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
        };
        self.rows(sql).into_iter().map(|row| row[0].clone().unwrap()).collect()
    }

    /// Every row of every table, each as text, sorted: what "the database did not change" means.
    pub fn dump(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        self.tables()
            .into_iter()
            .map(|table| {
                // On PostgreSQL a row reads as one text (its columns include ranges, which the
                // raw reader does not know).
                let sql = match self.backend {
                    Backend::Sqlite(_) => format!("SELECT * FROM \"{table}\""),
                    Backend::Postgres(_) => format!("SELECT CAST(t AS TEXT) FROM \"{table}\" t"),
                };
                let mut rows: Vec<String> = self
                    .rows(&sql)
                    .into_iter()
                    .map(|row| row.into_iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join("|"))
                    .collect();
                rows.sort();
                (table, rows)
            })
            .collect()
    }

    /// How many rows each table holds, in one query: a cheap check that nothing was written.
    pub fn counts(&self) -> String {
        let tables = self.tables();
        let counts: Vec<String> = tables.iter().map(|t| format!("CAST((SELECT COUNT(*) FROM \"{t}\") AS TEXT)")).collect();
        self.text(&format!("SELECT {}", counts.join(" || ',' || "))).unwrap_or_default()
    }

    /// Sets the recorded schema version, as a newer studioflow would have left it.
    pub fn set_schema_version(&self, version: i64) {
        match self.backend {
            Backend::Sqlite(_) => self.exec(&format!("PRAGMA user_version = {version}")),
            Backend::Postgres(_) => self.exec(&format!("UPDATE studioflow_schema SET version = {version} WHERE id = 1")),
        }
    }
}

impl From<&TestDb> for Target {
    fn from(db: &TestDb) -> Target {
        db.target()
    }
}

impl AsRef<std::ffi::OsStr> for TestDb {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.arg.as_ref()
    }
}

/// One test body, two tests: `NAME::sqlite` on a temporary SQLite file and `NAME::postgres` on a
/// schema of its own in `STUDIOFLOW_TEST_PG`'s database. The PostgreSQL one is ignored unless
/// asked for (`cargo test -- --include-ignored`, with the variable set; without it, it fails
/// saying so). The body sees the database as `DB: &TestDb`; the functions and imports of the
/// enclosing module are in scope.
///
/// ```ignore
/// on_both! {
///     /// What the test shows.
///     fn a_rule_holds(db) {
///         let store = small_studio(db);
///     }
/// }
/// ```
macro_rules! on_both {
    ($($(#[$meta:meta])* fn $name:ident($db:ident) $body:block)*) => {$(
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn sqlite() {
                let db = $crate::support::TestDb::sqlite();
                let $db: &$crate::support::TestDb = &db;
                $body
            }

            #[test]
            #[ignore = "needs STUDIOFLOW_TEST_PG (a PostgreSQL database; see README)"]
            fn postgres() {
                let db = $crate::support::TestDb::postgres(concat!(module_path!(), "::", stringify!($name)));
                let $db: &$crate::support::TestDb = &db;
                $body
            }
        }
    )*};
}
pub(crate) use on_both;

/// A small studio: `live` (6 people, drums, 10:00-02:00, 15-minute turnaround), `booth`
/// (2 people, vocal-booth, weekdays 09:00-18:00) and `hall` (4 people, open round the clock);
/// clients c1-c3, engineers e1-e2; the clock at 2026-08-31 09:00 and 48 hours' notice.
pub fn small_studio(db: impl Into<Target>) -> Store {
    let mut store = Store::open(db).unwrap();
    store
        .write_with(|w| {
            w.set_studio(&Studio {
                name: "Test Rooms".into(),
                tz: london(),
                notice: Duration::hours(48),
                clock: Some(at("2026-08-31T09:00")),
                horizon: Duration::days(730),
            })?;
            let room = |id: &str, capacity, features: &[&str], hours: &[&str], buffer| Room {
                id: RoomId::new(id),
                name: id.to_uppercase(),
                capacity,
                features: features.iter().map(|f| f.to_string()).collect(),
                hours: WeeklyHours::parse(hours).unwrap(),
                buffer: Duration::minutes(buffer),
                active: true,
                rules: Default::default(),
                price: Default::default(),
            };
            w.add_room(&room("live", 6, &["drums"], &["mon-sun 10:00-02:00"], 15))?;
            w.add_room(&room("booth", 2, &["vocal-booth"], &["mon-fri 09:00-18:00"], 0))?;
            w.add_room(&room("hall", 4, &[], &["mon-sun 00:00-24:00"], 0))?;
            for c in ["c1", "c2", "c3"] {
                w.add_client(&Person { id: ClientId::new(c), name: format!("Client {c}") })?;
            }
            for e in ["e1", "e2"] {
                w.add_engineer(&Person { id: EngineerId::new(e), name: format!("Engineer {e}") })?;
            }
            Ok(())
        })
        .unwrap();
    store
}

/// A confirmed booking of `client` in `room` from `start` for `minutes`.
pub fn session(room: &str, client: &str, start: &str, minutes: i64) -> Session {
    let start = at(start);
    Session {
        room: RoomId::new(room),
        client: ClientId::new(client),
        engineer: None,
        start,
        end: start + Duration::minutes(minutes),
        party_size: 1,
        requires: Vec::new(),
        engineer_skills: Vec::new(),
        status: Status::Confirmed,
        pinned: false,
    }
}

/// How many tools the server lists: the entries of the tools/list snapshot (tests/it/mcp.rs keeps
/// it equal to the server's answer), for the SDK clients that count them.
pub fn tool_count() -> usize {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots/tools_list.json");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    listed.len()
}
