//! A booking as it is written out for programs: times in the studio's zone (RFC 3339 with its
//! offset), ids as text. The tools' answers (through `crate::shapes`), the view and the webhooks'
//! payloads (`crate::store::outbox`) all use [`booking_out`], so none can differ from another; it
//! lives here, below the store, so that the store may use it. It knows no protocol.

use super::{Booking, StudioTz};
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
    BookingOut {
        id: b.id.0.clone(),
        room: b.room.0.clone(),
        client: b.client.0.clone(),
        engineer: b.engineer.as_ref().map(|e| e.0.clone()),
        start: tz.format(b.start),
        end: tz.format(b.end),
        party_size: b.party_size,
        requires: b.requires.clone(),
        engineer_skills: b.engineer_skills.clone(),
        series: b.series.as_ref().map(|s| s.0.clone()),
        status: b.status.to_string(),
        pinned: b.pinned,
        notes: b.notes.clone(),
        hold_until: b.hold_until.map(|t| tz.format(t)),
        displaced: b.displaced,
        price: b.money.price,
        deposit_due: b.money.deposit_due,
        paid: b.money.paid,
    }
}
