//! The demo studio: rooms, people, two months of bookings and the seed scenario (studio-b offline
//! for a fortnight of September 2026), read from the text files in `data/demo` that are compiled
//! into the binary. The same reader loads a studio's own files of that format. Loading goes
//! through the store's ordinary write rules, in one transaction.

use crate::domain::{
    ClientId, EngineerId, Profile, Session, DEFAULT_HORIZON_DAYS, MAX_HORIZON_DAYS, Room, RoomId, SeriesId, Status, Studio, StudioTz, WeeklyHours,
};
use crate::store::{PersonKind, Store, StoreError};
use anyhow::{bail, Context};
use chrono::{Duration, NaiveDateTime};
use serde::Deserialize;

/// The studio, rooms, people and scenario, as `data/demo/studio.toml` writes them.
pub const STUDIO_TOML: &str = include_str!("../data/demo/studio.toml");
/// The series and one-off bookings, as `data/demo/bookings.toml` writes them.
pub const BOOKINGS_TOML: &str = include_str!("../data/demo/bookings.toml");
/// A commented starter studio, every field explained: what `init --example FILE` writes.
pub const EXAMPLE_TOML: &str = include_str!("../data/example/studio.toml");

/// The month the seed scenario reflows, and the room that goes offline in it.
pub const SCENARIO_MONTH: &str = "2026-09";
pub const SCENARIO_ROOM: &str = "studio-b";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StudioFile {
    studio: StudioSection,
    rooms: Vec<RoomEntry>,
    clients: Vec<PersonEntry>,
    engineers: Vec<PersonEntry>,
    #[serde(default)]
    offline: Vec<OfflineEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StudioSection {
    name: String,
    timezone: String,
    notice_hours: i64,
    clock: Option<String>,
    /// How far ahead of the clock sessions may be booked, in days (default 730).
    horizon_days: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomEntry {
    id: String,
    name: String,
    capacity: u32,
    features: Vec<String>,
    buffer_minutes: i64,
    hours: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonEntry {
    id: String,
    name: String,
    email: Option<String>,
    phone: Option<String>,
    notes: Option<String>,
    /// Engineers only.
    #[serde(default)]
    skills: Vec<String>,
}

impl PersonEntry {
    fn profile(&self) -> Profile {
        Profile { email: self.email.clone(), phone: self.phone.clone(), notes: self.notes.clone(), skills: self.skills.clone(), active: true, hours: None, hourly_rate: 0, notify: true }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OfflineEntry {
    room: String,
    from: String,
    to: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BookingsFile {
    series: Vec<SessionEntry>,
    bookings: Vec<SessionEntry>,
}

/// One booking, or the first session of a series (with `id` and `rrule`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionEntry {
    id: Option<String>,
    rrule: Option<String>,
    room: String,
    client: String,
    engineer: Option<String>,
    start: String,
    minutes: i64,
    party_size: u32,
    #[serde(default)]
    requires: Vec<String>,
    /// What any engineer of the session must be able to do.
    #[serde(default)]
    engineer_skills: Vec<String>,
    #[serde(default)]
    pinned: bool,
    status: Option<String>,
}

/// A refusal of one entry of a studio file, saying which entry it is about.
fn naming(what: &str, id: &str, e: StoreError) -> StoreError {
    match e {
        StoreError::Invalid { field, message } => StoreError::invalid(field, format!("{what} {id:?}: {message}")),
        other => other,
    }
}

/// What the demo files hold, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    pub rooms: usize,
    pub clients: usize,
    pub engineers: usize,
    pub series: usize,
    pub bookings: usize,
    pub offline_windows: usize,
}

/// Loads the demo studio into `store`, which must hold no studio yet.
pub fn load_demo(store: &mut Store) -> anyhow::Result<Loaded> {
    load(store, STUDIO_TOML, Some(BOOKINGS_TOML))
}

/// Loads a studio file and, optionally, a bookings file (the formats of `data/demo`) into `store`,
/// which must hold no studio yet, in one transaction: all or nothing.
pub fn load(store: &mut Store, studio_text: &str, bookings_text: Option<&str>) -> anyhow::Result<Loaded> {
    if store.studio().is_ok() {
        bail!("this database already holds a studio: load a studio only into a new database");
    }
    let studio_file: StudioFile = toml::from_str(studio_text).context("reading the studio file")?;
    let bookings_file: BookingsFile = match bookings_text {
        Some(text) => toml::from_str(text).context("reading the bookings file")?,
        None => BookingsFile { series: Vec::new(), bookings: Vec::new() },
    };
    let s = &studio_file.studio;
    let tz: StudioTz = s.timezone.parse()?;
    let local = |text: &str| -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
        let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M").with_context(|| format!("reading time {text:?}"))?;
        Ok(tz.resolve(naive)?)
    };
    // Numbers from a file are checked before they become durations, which refuse to overflow.
    if !(0..=8760).contains(&s.notice_hours) {
        bail!("notice_hours must be 0 to 8760 (a year)");
    }
    if let Some(r) = studio_file.rooms.iter().find(|r| !(0..=240).contains(&r.buffer_minutes)) {
        bail!("room {}: buffer_minutes must be 0 to 240", r.id);
    }
    if let Some(e) = bookings_file.series.iter().chain(&bookings_file.bookings).find(|e| !(1..=1440).contains(&e.minutes)) {
        bail!("the session of {} at {} lasts {} minutes: a session lasts 1 to 1440 minutes", e.client, e.start, e.minutes);
    }
    let horizon_days = s.horizon_days.unwrap_or(DEFAULT_HORIZON_DAYS);
    if !(1..=MAX_HORIZON_DAYS).contains(&horizon_days) {
        bail!("horizon_days must be 1 to {MAX_HORIZON_DAYS} (ten years)");
    }
    let studio = Studio {
        name: s.name.clone(),
        tz,
        notice: Duration::hours(s.notice_hours),
        clock: s.clock.as_deref().map(local).transpose()?,
        horizon: Duration::days(horizon_days),
    };

    let mut loaded = Loaded { rooms: 0, clients: 0, engineers: 0, series: 0, bookings: 0, offline_windows: 0 };
    // Loading a studio is the `init` command's work (or `serve --demo`'s, which runs it).
    store.write_as(&crate::domain::Actor::new("studioflow", "init"), |w| {
        // A studio's own files may hold sessions already held: they load as records (the demo's
        // all lie after its clock anyway). The horizon still holds for them.
        w.load_history();
        w.set_studio(&studio)?;
        for r in &studio_file.rooms {
            let hours = WeeklyHours::parse(&r.hours).map_err(|e| StoreError::invalid("hours", format!("room {}: {e}", r.id)))?;
            w.add_room(&Room {
                id: RoomId::new(&r.id),
                name: r.name.clone(),
                capacity: r.capacity,
                features: r.features.clone(),
                hours,
                buffer: Duration::minutes(r.buffer_minutes),
                active: true,
                rules: Default::default(),
                price: Default::default(),
            })?;
        }
        for c in &studio_file.clients {
            if !c.skills.is_empty() {
                return Err(StoreError::invalid("skills", format!("client {:?}: only engineers have skills", c.id)));
            }
            w.create_person(PersonKind::Client, Some(&c.id), &c.name, c.profile()).map_err(|e| naming("client", &c.id, e))?;
        }
        for e in &studio_file.engineers {
            w.create_person(PersonKind::Engineer, Some(&e.id), &e.name, e.profile()).map_err(|err| naming("engineer", &e.id, err))?;
        }
        loaded.rooms = studio_file.rooms.len();
        loaded.clients = studio_file.clients.len();
        loaded.engineers = studio_file.engineers.len();

        // Bookings first, offline windows last: the fortnight's bookings were made before the room broke.
        let session = |entry: &SessionEntry| -> Result<Session, StoreError> {
            let start = local(&entry.start).map_err(|e| StoreError::invalid("start", format!("{e:#}")))?;
            let status = match entry.status.as_deref() {
                None => Status::Confirmed,
                Some(s) => Status::parse(s).ok_or_else(|| StoreError::invalid("status", format!("unknown status {s:?}")))?,
            };
            Ok(Session {
                room: RoomId::new(&entry.room),
                client: ClientId::new(&entry.client),
                engineer: entry.engineer.as_deref().map(EngineerId::new),
                start,
                end: start + Duration::minutes(entry.minutes),
                party_size: entry.party_size,
                requires: entry.requires.clone(),
                engineer_skills: entry.engineer_skills.clone(),
                status,
                pinned: entry.pinned,
            })
        };
        for entry in &bookings_file.series {
            let rrule = entry.rrule.as_deref().ok_or_else(|| StoreError::invalid("rrule", "a series needs an rrule"))?;
            let id = entry.id.as_deref().map(SeriesId::new);
            let (_, sessions) = w.create_series(id, rrule, &session(entry)?)?;
            loaded.series += 1;
            loaded.bookings += sessions.len();
        }
        for entry in &bookings_file.bookings {
            w.create_booking(&session(entry)?)?;
            loaded.bookings += 1;
        }
        for o in &studio_file.offline {
            let (from, to) = (local(&o.from), local(&o.to));
            let (from, to) = (from.map_err(|e| StoreError::invalid("from", format!("{e:#}")))?, to.map_err(|e| StoreError::invalid("to", format!("{e:#}")))?);
            w.add_offline_window(&RoomId::new(&o.room), from, to, &o.reason)?;
            loaded.offline_windows += 1;
        }
        Ok(())
    })
    .context("loading the studio")?;
    Ok(loaded)
}
