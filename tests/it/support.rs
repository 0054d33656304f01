//! Shared fixtures: a small studio in a temporary database file, helpers to read times, and
//! ([`issuer`]) a test OAuth issuer that serves keys and mints access tokens.

pub mod issuer;

use chrono::{DateTime, Duration, Utc};
use std::path::PathBuf;
use studioflow::domain::{
    ClientId, EngineerId, Session, Person, Room, RoomId, Status, Studio, StudioTz, WeeklyHours,
};
use studioflow::store::Store;
use tempfile::TempDir;

pub fn london() -> StudioTz {
    "Europe/London".parse().unwrap()
}

/// A local time in London, `YYYY-MM-DDTHH:MM`.
pub fn at(local: &str) -> DateTime<Utc> {
    london().parse(local).unwrap()
}

/// The PostgreSQL server the PostgreSQL runs of the tests use: `STUDIOFLOW_TEST_PG`, a URL such
/// as `postgres://postgres@127.0.0.1/test`. Unset, those runs say they were skipped and pass.
pub const PG_ENV: &str = "STUDIOFLOW_TEST_PG";

/// A schema of its own in the test PostgreSQL database, dropped with everything in it when the
/// test ends; `None` (after saying so on stderr) when `STUDIOFLOW_TEST_PG` is not set.
pub struct PgSchema {
    base: String,
    pub name: String,
}

impl PgSchema {
    pub fn new(test: &str) -> Option<PgSchema> {
        let Ok(base) = std::env::var(PG_ENV) else {
            eprintln!("skipped on PostgreSQL ({test}): {PG_ENV} is not set");
            return None;
        };
        static EXTENSION: std::sync::Once = std::sync::Once::new();
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).unwrap();
        let name = format!("t_{}", data_encoding::HEXLOWER.encode(&random));
        let mut client = postgres::Client::connect(&base, postgres::NoTls).unwrap_or_else(|e| panic!("{PG_ENV}={base}: {e}"));
        // Once per run: concurrent CREATE EXTENSION races on the catalog.
        EXTENSION.call_once(|| client.batch_execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public").unwrap());
        client.batch_execute(&format!("CREATE SCHEMA {name}")).unwrap();
        Some(PgSchema { base, name })
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

/// A small studio: `live` (6 people, drums, 10:00-02:00, 15-minute turnaround), `booth`
/// (2 people, vocal-booth, weekdays 09:00-18:00) and `hall` (4 people, open round the clock);
/// clients c1-c3, engineers e1-e2; the clock at 2026-08-31 09:00 and 48 hours' notice.
pub fn small_studio(db: &TempDb) -> Store {
    let mut store = Store::open(&db.path).unwrap();
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
        status: Status::Confirmed,
        pinned: false,
    }
}

// Several servers on one PostgreSQL schema (tests/it/servers.rs).

/// [`small_studio`] in any database: an SQLite file, or a PostgreSQL schema's [`PgSchema::url`].
/// The same studio, written the same way; `small_studio` can become a call of it.
pub fn small_studio_at(target: impl Into<studioflow::store::Target>) -> Store {
    let mut store = Store::open(target).unwrap();
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
