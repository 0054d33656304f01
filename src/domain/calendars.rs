//! Whose calendar: a room's, a client's or an engineer's. The calendar resources, the iCalendar
//! feeds and their secrets are all scoped to one of these; the names here are the ones their URLs
//! use (`rooms`, `clients`, `engineers`).

use super::{ClientId, EngineerId, RoomId};
use std::fmt;

/// One calendar of the studio: the bookings of a room, of a client or of an engineer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CalendarOf {
    Room(RoomId),
    Client(ClientId),
    Engineer(EngineerId),
}

impl CalendarOf {
    /// The kinds, singular, as stored and as the command line names them.
    pub const KINDS: [&'static str; 3] = ["room", "client", "engineer"];

    /// A calendar from its kind (singular `room` or plural `rooms`) and id.
    pub fn new(kind: &str, id: &str) -> Option<CalendarOf> {
        // An id that breaks the rule of ids names nothing (and is never sent to a database).
        if super::TextKind::Id.clean(id).ok()? != id {
            return None;
        }
        match kind {
            "room" | "rooms" => Some(CalendarOf::Room(RoomId::new(id))),
            "client" | "clients" => Some(CalendarOf::Client(ClientId::new(id))),
            "engineer" | "engineers" => Some(CalendarOf::Engineer(EngineerId::new(id))),
            _ => None,
        }
    }

    /// `room`, `client` or `engineer`.
    pub fn kind(&self) -> &'static str {
        match self {
            CalendarOf::Room(_) => "room",
            CalendarOf::Client(_) => "client",
            CalendarOf::Engineer(_) => "engineer",
        }
    }

    /// `rooms`, `clients` or `engineers`: the path segment of its URLs.
    pub fn plural(&self) -> &'static str {
        match self {
            CalendarOf::Room(_) => "rooms",
            CalendarOf::Client(_) => "clients",
            CalendarOf::Engineer(_) => "engineers",
        }
    }

    pub fn id(&self) -> &str {
        match self {
            CalendarOf::Room(id) => id.as_str(),
            CalendarOf::Client(id) => id.as_str(),
            CalendarOf::Engineer(id) => id.as_str(),
        }
    }
}

impl fmt::Display for CalendarOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind(), self.id())
    }
}
