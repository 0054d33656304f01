//! A booking as it is written out for programs: times in the studio's zone (RFC 3339 with its
//! offset), ids as text. The tools' answers (through `crate::shapes`), the view and the webhooks'
//! payloads (`crate::store::outbox`) all use [`booking_out`], so none can differ from another; it
//! lives here, below the store, so that the store may use it. It knows no protocol.

use super::{Booking, Session, StudioTz};
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BookingOut {
    pub id: String,
    pub room: String,
    pub client: String,
    pub engineer: Option<String>,
    pub start: String,
    pub end: String,
    pub party_size: u32,
    pub requires: Vec<String>,
    /// Skills any engineer of the session must have.
    pub engineer_skills: Vec<String>,
    pub series: Option<String>,
    /// "confirmed", "tentative" or "cancelled".
    pub status: String,
    /// Locked by staff: a reflow never moves it.
    pub pinned: bool,
    /// Staff notes.
    pub notes: Option<String>,
    /// A tentative booking is released (cancelled) by the server after this time.
    pub hold_until: Option<String>,
    /// Put out of its room by a change to the room: it holds nothing until a reflow of its month
    /// or move_booking places it.
    pub displaced: bool,
    /// What it costs, in minor units of the studio's currency: the quote when it was booked, or
    /// when a person last changed its time, room or engineer (a reflow's move keeps it). Absent
    /// for a booking made before prices were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<i64>,
    /// The deposit it owes: deposit_percent of its price when booked on hold, rounded half up to
    /// a minor unit; paying it confirms the booking.
    pub deposit_due: i64,
    /// What was paid for it so far.
    pub paid: i64,
}

/// A booking as it is written out: the tools' answers and the webhooks' `data.booking`.
pub fn booking_out(tz: &StudioTz, b: &Booking) -> BookingOut {
    into_booking_out(tz, b.clone())
}

/// [`booking_out`] of a booking that is not needed after: its text moves instead of being copied
/// (a page of query results).
pub fn into_booking_out(tz: &StudioTz, b: Booking) -> BookingOut {
    let Booking { id, series, session, notes, hold_until, displaced, money } = b;
    let Session { room, client, engineer, start, end, party_size, requires, engineer_skills, status, pinned } = session;
    BookingOut {
        id: id.0,
        room: room.0,
        client: client.0,
        engineer: engineer.map(|e| e.0),
        start: tz.format(start),
        end: tz.format(end),
        party_size,
        requires,
        engineer_skills,
        series: series.map(|s| s.0),
        status: status.as_str().to_owned(),
        pinned,
        notes,
        hold_until: hold_until.map(|t| tz.format(t)),
        displaced,
        price: money.price,
        deposit_due: money.deposit_due,
        paid: money.paid,
    }
}
