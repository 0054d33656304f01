//! A calendar (a room's, a client's or an engineer's bookings) as iCalendar (RFC 5545), written
//! line by line with [`lines`]. Each booking is one VEVENT whose UID is its booking id (so it
//! survives moves), whose SEQUENCE is the booking's revision (raised by the store on every change)
//! and whose DTSTAMP is its last change; cancelled sessions stay in the feed as STATUS:CANCELLED.
//! Times are written in UTC, which every calendar program shows in its own zone. Names reach the
//! calendar as TEXT, escaped, so no name can add a line of its own.

use crate::domain::{CalendarOf, Status};
use crate::store::{CalendarEntry, Store, StoreError};
use chrono::{DateTime, Duration, Utc};
use lines::ContentLines;
use std::collections::HashMap;

pub mod lines;
// Its strict reader's own tests, and the seeds, run with the unit tests too.
#[cfg(any(feature = "fuzzing", test))]
pub mod fuzz;

/// How far back a calendar reaches by default.
pub const DAYS_BACK: i64 = 60;
/// How far ahead a calendar reaches by default.
pub const DAYS_AHEAD: i64 = 400;

/// The default window of a calendar at `now`: 60 days back, 400 ahead.
pub fn default_window(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    (now - Duration::days(DAYS_BACK), now + Duration::days(DAYS_AHEAD))
}

/// Why a calendar could not be written.
#[derive(Debug, thiserror::Error)]
pub enum IcsError {
    #[error("there is no {0}: `studioflow list rooms|clients|engineers` (or the list tools over MCP) shows the ids")]
    Unknown(CalendarOf),
    #[error("the window ends before it starts: give --to after --from")]
    EmptyWindow,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl crate::error::Blame for IcsError {
    fn is_ours(&self) -> bool {
        match self {
            IcsError::Unknown(_) | IcsError::EmptyWindow => false,
            IcsError::Store(e) => e.is_ours(),
        }
    }
}

/// The calendar of `of` over `[from, to)`, or the default window around the studio's now.
pub fn calendar(store: &Store, of: &CalendarOf, window: Option<(DateTime<Utc>, DateTime<Utc>)>) -> Result<String, IcsError> {
    if !store.calendar_exists(of)? {
        return Err(IcsError::Unknown(of.clone()));
    }
    let studio = store.studio()?.clone();
    let (from, to) = window.unwrap_or_else(|| default_window(studio.now(Utc::now())));
    if to <= from {
        return Err(IcsError::EmptyWindow);
    }
    let entries = store.calendar_entries(of, from, to)?;
    let rooms: HashMap<String, String> = store.rooms()?.iter().map(|r| (r.id.0.clone(), r.name.clone())).collect();
    let clients: HashMap<String, String> = store.clients()?.into_iter().map(|c| (c.id.0, c.name)).collect();
    let engineers: HashMap<String, String> = store.engineers()?.into_iter().map(|e| (e.id.0, e.name)).collect();
    let names = Names { rooms, clients, engineers };
    Ok(render(&studio.name, studio.tz.name(), &title(&studio.name, of, &names), &entries, &names))
}

/// The names of the studio's rooms and people, by id.
struct Names {
    rooms: HashMap<String, String>,
    clients: HashMap<String, String>,
    engineers: HashMap<String, String>,
}

impl Names {
    fn of(&self, of: &CalendarOf) -> String {
        let map = match of {
            CalendarOf::Room(_) => &self.rooms,
            CalendarOf::Client(_) => &self.clients,
            CalendarOf::Engineer(_) => &self.engineers,
        };
        map.get(of.id()).cloned().unwrap_or_else(|| of.id().to_owned())
    }
}

/// The calendar's name: the studio's, then whose calendar it is.
fn title(studio: &str, of: &CalendarOf, names: &Names) -> String {
    format!("{studio}: {} {}", of.kind(), names.of(of))
}

fn name<'a>(map: &'a HashMap<String, String>, id: &'a str) -> &'a str {
    map.get(id).map(String::as_str).unwrap_or(id)
}

/// The UID of a booking of `studio`, in its feeds and its e-mail alike: the booking's id, and a
/// domain part made of the studio's name, which keeps two studios' booking ids apart in one
/// calendar program.
pub fn uid(studio: &str, booking: &str) -> String {
    let domain: String = studio
        .chars()
        .filter_map(|c| if c.is_ascii_alphanumeric() { Some(c.to_ascii_lowercase()) } else if c == ' ' || c == '-' { Some('-') } else { None })
        .collect();
    let domain = if domain.is_empty() { "studio" } else { &domain };
    format!("{booking}@{domain}.studioflow")
}

/// The iCalendar text of `entries`.
fn render(studio: &str, zone: &str, title: &str, entries: &[CalendarEntry], names: &Names) -> String {
    let mut ics = ContentLines::new();
    ics.begin("VCALENDAR");
    ics.text("VERSION", "2.0");
    ics.text("PRODID", concat!("-//studioflow//studioflow ", env!("CARGO_PKG_VERSION"), "//EN"));
    ics.text("CALSCALE", "GREGORIAN");
    ics.text("X-WR-TIMEZONE", zone);
    // NAME is RFC 7986's; X-WR-CALNAME is what older calendar programs read.
    ics.text("NAME", title);
    ics.text("X-WR-CALNAME", title);
    for entry in entries {
        let b = &entry.booking;
        let room = name(&names.rooms, b.room.as_str());
        let client = name(&names.clients, b.client.as_str());
        let engineer = b.engineer.as_ref().map(|e| name(&names.engineers, e.as_str()));
        let mut description = format!("Booking {}\nRoom: {room} ({})\nClient: {client} ({})", b.id, b.room, b.client);
        if let (Some(engineer), Some(id)) = (engineer, &b.engineer) {
            description += &format!("\nEngineer: {engineer} ({id})");
        }
        description += &format!("\nParty of {}", b.party_size);
        if !b.requires.is_empty() {
            description += &format!("\nNeeds: {}", b.requires.join(", "));
        }
        if let Some(series) = &b.series {
            description += &format!("\nSeries: {series}");
        }
        let status = match b.status {
            Status::Confirmed => "CONFIRMED",
            Status::Tentative => "TENTATIVE",
            Status::Cancelled => "CANCELLED",
        };
        let summary = match engineer {
            Some(engineer) => format!("{client} in {room} with {engineer}"),
            None => format!("{client} in {room}"),
        };
        // The properties in the order the `icalendar` crate wrote them (by name), so that a feed
        // reads as it did before this writer replaced it.
        ics.begin("VEVENT");
        ics.utc("CREATED", entry.created);
        ics.text("DESCRIPTION", &description);
        ics.utc("DTEND", b.end);
        ics.utc("DTSTAMP", entry.updated);
        ics.utc("DTSTART", b.start);
        ics.utc("LAST-MODIFIED", entry.updated);
        ics.text("LOCATION", room);
        // SEQUENCE is a non-negative INTEGER, which RFC 5545 §3.3.8 keeps to 32 signed bits.
        ics.integer("SEQUENCE", entry.revision.clamp(0, i64::from(i32::MAX)));
        ics.text("STATUS", status);
        ics.text("SUMMARY", &summary);
        ics.text("UID", &uid(studio, b.id.as_str()));
        ics.end("VEVENT");
    }
    ics.end("VCALENDAR");
    ics.finish()
}
