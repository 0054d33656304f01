//! Why a booking cannot be written where it was asked for. Every refusal names what is in the way
//! (the other booking, the closed hours, the offline window) and what to change, because a person
//! or an agent has to act on it.

use super::{BookingId, ClientId, EngineerId, RoomId, Zoned};
use std::fmt;

/// A booking (or one occurrence of a series) that breaks a rule of the calendar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{room} is taken from {from} to {to} by {other}{buffer}: choose another time or room")]
    RoomTaken { room: RoomId, other: BookingId, from: Zoned, to: Zoned, buffer: BufferNote },
    #[error("client {client} is already booked from {from} to {to} ({other}): choose another time")]
    ClientBusy { client: ClientId, other: BookingId, from: Zoned, to: Zoned },
    #[error("engineer {engineer} is already booked from {from} to {to} ({other}): choose another time or engineer")]
    EngineerBusy { engineer: EngineerId, other: BookingId, from: Zoned, to: Zoned },
    #[error("engineer {engineer} does not work for part of {from} to {to}; their working hours are {hours}: choose a time inside them, or another engineer")]
    EngineerOffHours { engineer: EngineerId, from: Zoned, to: Zoned, hours: String },
    #[error("engineer {engineer} has time off from {from} to {to} ({reason}): choose another time or engineer")]
    EngineerAway { engineer: EngineerId, from: Zoned, to: Zoned, reason: String },
    #[error("{room} takes sessions of at least {min} minutes and this one is {minutes}: make it longer or choose another room")]
    TooShort { room: RoomId, minutes: i64, min: i64 },
    #[error("{room} takes sessions of at most {max} minutes and this one is {minutes}: make it shorter, split it, or choose another room")]
    TooLong { room: RoomId, minutes: i64, max: i64 },
    #[error("{room} needs {lead} minutes' notice for a new session: it may start at {earliest} at the earliest, not {start}; choose a later time")]
    TooSoon { room: RoomId, start: Zoned, earliest: Zoned, lead: i64 },
    #[error("{room} takes bookings at most {days} days ahead (until {latest}); {start} is later: choose an earlier time")]
    TooFarAhead { room: RoomId, start: Zoned, latest: Zoned, days: i64 },
    #[error("{room} starts sessions every {step} minutes from midnight; {start} is not on that grid: start at {next} instead, or choose another room")]
    OffStep { room: RoomId, start: Zoned, next: Zoned, step: i64 },
    #[error("{room} is closed for part of {from} to {to}; its hours are {hours}: choose a time inside one opening")]
    Closed { room: RoomId, from: Zoned, to: Zoned, hours: String },
    #[error("{room} is offline from {from} to {to} ({reason}): choose another room or time")]
    Offline { room: RoomId, from: Zoned, to: Zoned, reason: String },
    #[error("engineer {engineer} lacks the skills {} this session needs: choose an engineer who has them, or change engineer_skills", .missing.join(", "))]
    EngineerLacksSkills { engineer: EngineerId, missing: Vec<String> },
    #[error("{room} holds {capacity} people and the party is {party_size}: choose a larger room")]
    TooSmall { room: RoomId, capacity: u32, party_size: u32 },
    #[error("{room} has no {}: choose a room that has {}", .missing.join(", "), if .missing.len() == 1 { "it" } else { "them" })]
    MissingFeatures { room: RoomId, missing: Vec<String> },
    #[error("{start} is before the studio's clock ({now}): a new or moved session starts at the studio's clock or later")]
    Past { start: Zoned, now: Zoned },
    #[error("{start} is beyond the booking horizon ({horizon}, {days} days after the studio's clock): choose a time before it")]
    BeyondHorizon { start: Zoned, horizon: Zoned, days: i64 },
    #[error("the offline window ends at {to}, which is not after the studio's clock ({now}): a window must end in the future")]
    WindowEnded { to: Zoned, now: Zoned },
    #[error("the offline window ends at {to}, beyond the booking horizon ({horizon}): end it by then, nothing can be booked later")]
    WindowBeyondHorizon { to: Zoned, horizon: Zoned },
    #[error("{} of {total} sessions of the series cannot be booked, so none was: {}", .conflicts.len(), list(.conflicts))]
    Series { total: usize, conflicts: Vec<(Zoned, Refusal)> },
}

fn list(conflicts: &[(Zoned, Refusal)]) -> String {
    conflicts.iter().map(|(at, why)| format!("{at}: {why}")).collect::<Vec<_>>().join("; ")
}

/// The turnaround note on a room refusal: empty when the sessions overlap outright.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferNote(pub Option<i64>);

impl fmt::Display for BufferNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(minutes) => write!(f, " (with the room's {minutes}-minute turnaround)"),
            None => Ok(()),
        }
    }
}
