//! The tools' answers as they leave: the public contract, with JSON schemas derived from these
//! types, each built by hand from domain types, so that a change inside the project never changes
//! the wire by accident. A reflow and a booking are written by `crate::shapes`, which the view
//! shares.

use super::{reflow, BookingOut, ReflowOut, RoomOut, WindowOut};
use crate::availability::Slot;
use crate::domain::StudioTz;
use crate::store::{Event, MoveRecord, PersonRecord, ReflowRecord, SharedBooking};
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoomsOut {
    pub rooms: Vec<RoomOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BookingsOut {
    pub bookings: Vec<BookingOut>,
    /// Pass as `cursor` to read the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A page of bookings as `query_bookings` answers it, [`BookingsOut`] on the wire (its schema is
/// that one's): its JSON text written straight from the bookings by
/// [`crate::domain::write_booking_json`], serde_json's text of it (a test holds the two
/// together); its value, for a transport that wants one, built as [`BookingsOut`].
pub struct BookingsPage {
    pub tz: StudioTz,
    /// Shared with the bookings the server holds in memory, not copied.
    pub bookings: Vec<SharedBooking>,
    /// Pass as `cursor` to read the next page; None on the last page.
    pub next_cursor: Option<String>,
}

impl BookingsPage {
    /// The page as [`BookingsOut`] builds it.
    pub fn out(&self) -> BookingsOut {
        BookingsOut { bookings: self.bookings.iter().map(|b| crate::domain::booking_out(&self.tz, b)).collect(), next_cursor: self.next_cursor.clone() }
    }

    /// The page as JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(64 + 512 * self.bookings.len());
        out.push_str("{\"bookings\":[");
        // A page in start order writes many instants of one day.
        let mut day = crate::domain::DayWritten::default();
        for (at, booking) in self.bookings.iter().enumerate() {
            if at > 0 {
                out.push(',');
            }
            crate::domain::write_booking_json_on(&self.tz, &mut day, booking, &mut out);
        }
        out.push_str("],\"next_cursor\":");
        crate::domain::json_optional_text(&mut out, self.next_cursor.as_deref());
        out.push('}');
        out
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BookingDetailOut {
    pub booking: BookingOut,
    pub series: Option<SeriesOut>,
    /// The reflows that moved (or planned to move) this booking, oldest first.
    pub reflow_history: Vec<HistoryOut>,
    /// Every recorded change to this booking, oldest first: who, when, through what, and the
    /// fields before and after.
    pub history: Vec<EventOut>,
    /// The payments recorded for it, oldest first.
    pub payments: Vec<PaymentOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SeriesOut {
    pub id: String,
    pub rrule: String,
    /// Sessions of the series still booked (not cancelled).
    pub active_sessions: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HistoryOut {
    pub reflow_id: String,
    pub applied: bool,
    pub from_room: String,
    pub from_start: String,
    pub to_room: String,
    pub to_start: String,
    /// The engineer before and after the move (they differ when the reflow re-staffed it).
    pub from_engineer: Option<String>,
    pub to_engineer: Option<String>,
}

/// The free slots a search found, as `find_free_slots` answers them, [`SlotsOut`] on the wire
/// (its schema is that one's): its JSON text written straight from the slots, serde_json's text
/// of it (a test holds the two together); its value, for a transport that wants one, built as
/// [`SlotsOut`].
pub struct SlotsPage {
    pub tz: StudioTz,
    pub slots: Vec<Slot>,
}

impl SlotsPage {
    /// The slots as [`SlotsOut`] builds them.
    pub fn out(&self) -> SlotsOut {
        let tz = &self.tz;
        let slot = |s: &Slot| SlotOut { room: s.room.0.clone(), start: tz.format(s.start), end: tz.format(s.end), latest_start: tz.format(s.latest_start) };
        SlotsOut { slots: self.slots.iter().map(slot).collect() }
    }

    /// The slots as JSON text.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(16 + 128 * self.slots.len());
        out.push_str("{\"slots\":[");
        let mut day = crate::domain::DayWritten::default();
        for (at, slot) in self.slots.iter().enumerate() {
            if at > 0 {
                out.push(',');
            }
            out.push_str("{\"room\":");
            crate::domain::json_text(&mut out, slot.room.as_str());
            for (name, t) in [(",\"start\":\"", slot.start), ("\",\"end\":\"", slot.end), ("\",\"latest_start\":\"", slot.latest_start)] {
                out.push_str(name);
                self.tz.write_on(&mut day, t, &mut out);
            }
            out.push_str("\"}");
        }
        out.push_str("]}");
        out
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SlotsOut {
    pub slots: Vec<SlotOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SlotOut {
    pub room: String,
    /// The earliest start in this free window.
    pub start: String,
    pub end: String,
    /// The latest start that still fits in the same free window (it may be after the search's
    /// `to`, which bounds only the earliest start).
    pub latest_start: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CreatedOut {
    /// The booking, or every session of a series, in start order.
    pub bookings: Vec<BookingOut>,
    pub series: Option<String>,
    /// True when this answer repeats an earlier request with the same idempotency key.
    pub replayed: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CancelledOut {
    pub cancelled: Vec<BookingOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MovedOut {
    pub booking: BookingOut,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OfflineOut {
    pub window: WindowOut,
    /// Active bookings in the room during the window; they stay where they are until a reflow.
    pub affected: u32,
    pub affected_bookings: Vec<String>,
    /// What to do next.
    pub next_step: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WindowsOut {
    pub windows: Vec<WindowOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StoredReflowOut {
    #[serde(flatten)]
    pub reflow: ReflowOut,
    /// Whether it was applied and later undone with undo_reflow.
    pub undone: bool,
    /// The request as it was made: month, offline_rooms, max_shift_minutes.
    pub request: serde_json::Value,
    pub created_at: String,
}

pub fn history(tz: &StudioTz, record: &MoveRecord) -> HistoryOut {
    let m = &record.moved;
    HistoryOut {
        reflow_id: record.reflow.clone(),
        applied: record.applied,
        from_room: m.from_room.0.clone(),
        from_start: tz.format(m.from_start),
        to_room: m.to_room.0.clone(),
        to_start: tz.format(m.to_start),
        from_engineer: m.from_engineer.as_ref().map(|e| e.0.clone()),
        to_engineer: m.to_engineer.as_ref().map(|e| e.0.clone()),
    }
}

pub fn stored_reflow(tz: &StudioTz, r: &ReflowRecord) -> StoredReflowOut {
    StoredReflowOut { reflow: reflow(tz, r), undone: r.undone, request: r.request.clone(), created_at: tz.format(r.created_at) }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PersonOut {
    pub id: String,
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub notes: Option<String>,
    /// Tags (engineers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// When an engineer works, as a room's opening hours; absent: always (and for clients).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_hours: Option<Vec<String>>,
    /// An engineer's hourly rate, in minor units (absent for clients).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hourly_rate: Option<i64>,
    /// An inactive person cannot be booked.
    pub active: bool,
    /// Whether they are e-mailed when their sessions change (with an address, on a server with --smtp).
    pub notify: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ClientsOut {
    pub clients: Vec<PersonOut>,
    /// Pass as `cursor` to read the next page; null on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EngineersOut {
    pub engineers: Vec<PersonOut>,
    /// Pass as `cursor` to read the next page; null on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ClientOut {
    pub client: PersonOut,
    /// When the client was deactivated: their future bookings, which stay (cancel or keep them).
    pub future_bookings: Vec<BookingOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EngineerOut {
    pub engineer: PersonOut,
    /// When the engineer was deactivated: their future bookings, which stay (reassign or keep them).
    pub future_bookings: Vec<BookingOut>,
    /// When their working hours changed: the future sessions outside the new hours, flagged
    /// displaced (the first 20); they hold nothing until moved.
    pub displaced: Vec<BookingOut>,
    /// How many sessions the change displaced in all.
    pub displaced_count: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoomChangedOut {
    pub room: RoomOut,
    /// Future bookings this change put out of the room (the first 20); they hold nothing until moved.
    pub displaced: Vec<BookingOut>,
    /// How many bookings it displaced in all.
    pub displaced_count: u32,
    /// What to do next.
    pub next_step: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WindowRemovedOut {
    pub removed: WindowOut,
    /// Bookings an applied reflow moved out of this window that could go back now: each is still
    /// where the reflow put it, and its old place is free.
    pub could_return: Vec<ReturnOut>,
    /// Bookings the window displaced that cannot take their place back, because their room (with
    /// its turnaround) or their people were booked while they held nothing: they stay displaced
    /// until moved (reflow_month with no offline room moves a month's displaced bookings).
    pub still_displaced: Vec<BookingOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReturnOut {
    pub booking: String,
    /// Where it is now.
    pub room: String,
    pub start: String,
    /// Where it was before the reflow (move_booking puts it back).
    pub original_room: String,
    pub original_start: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UpdatedOut {
    /// The bookings as they are now.
    pub bookings: Vec<BookingOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UndoneOut {
    pub reflow_id: String,
    /// The bookings, back where they were before the reflow.
    pub restored: Vec<BookingOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EventOut {
    /// Its place in commit order.
    pub seq: i64,
    /// When, by the studio's clock.
    pub at: String,
    /// Who: the MCP client's name, or the command.
    pub who: String,
    /// Through what: a tool, a command, a reflow ("reflow rf_0001"), "hold expiry".
    pub via: String,
    /// "booking", "room", "client", "engineer", "offline_window" or "reflow"; the operator's
    /// "token" (created, revoked) and "task" (cancelled from outside MCP).
    pub entity: String,
    pub id: String,
    /// What happened: "created", "updated", "moved", "cancelled", "displaced", ...
    pub action: String,
    /// The changed fields as they were (empty when created).
    pub before: serde_json::Map<String, serde_json::Value>,
    /// The changed fields as they are (empty when removed).
    pub after: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChangesOut {
    pub events: Vec<EventOut>,
    /// Pass as `since` to read what comes next, now or later: nothing is missed or repeated.
    pub next_cursor: String,
    /// Whether more changes are already there to read.
    pub more: bool,
}

pub fn person(p: &PersonRecord, engineer: bool) -> PersonOut {
    PersonOut {
        id: p.id.clone(),
        name: p.name.clone(),
        email: p.profile.email.clone(),
        phone: p.profile.phone.clone(),
        notes: p.profile.notes.clone(),
        skills: engineer.then(|| p.profile.skills.clone()),
        working_hours: p.profile.hours.as_ref().map(|h| h.to_lines()),
        hourly_rate: engineer.then_some(p.profile.hourly_rate),
        active: p.profile.active,
        notify: p.profile.notify,
    }
}

pub fn event(tz: &StudioTz, e: &Event) -> EventOut {
    EventOut {
        seq: e.seq,
        at: tz.format(e.at),
        who: e.who.clone(),
        via: e.via.clone(),
        entity: e.entity.as_str().to_owned(),
        id: e.id.clone(),
        action: e.action.clone(),
        before: e.before.clone(),
        after: e.after.clone(),
    }
}

/// An engineer's time off as it is written out.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimeOffOut {
    pub id: i64,
    pub engineer: String,
    pub from: String,
    pub to: String,
    pub reason: String,
}

pub fn time_off(tz: &StudioTz, t: &crate::domain::TimeOff) -> TimeOffOut {
    TimeOffOut { id: t.id, engineer: t.engineer.0.clone(), from: tz.format(t.from), to: tz.format(t.to), reason: t.reason.clone() }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TimeOffAddedOut {
    pub time_off: TimeOffOut,
    /// The engineer's sessions it covers, flagged displaced (the first 20): they hold nothing
    /// until a reflow or a person moves them (or gives them another engineer).
    pub displaced: Vec<BookingOut>,
    /// How many sessions it displaced in all.
    pub displaced_count: u32,
    /// What to do next.
    pub next_step: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TimeOffListOut {
    pub time_off: Vec<TimeOffOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TimeOffRemovedOut {
    pub removed: TimeOffOut,
    /// Sessions it had displaced that took their places back.
    pub restored: Vec<BookingOut>,
    /// Sessions it had displaced that cannot take their places back (taken meanwhile, or another
    /// rule holds them out): move them, or reflow their month.
    pub still_displaced: Vec<BookingOut>,
}

/// The studio and its settings.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StudioOut {
    pub name: String,
    /// Its IANA time zone.
    pub timezone: String,
    /// ISO 4217; prices are integers in its minor unit.
    pub currency: String,
    pub deposit_percent: i64,
    pub waitlist_hold_hours: i64,
    /// How far ahead (minutes) a session must be booked or changed.
    pub notice_minutes: i64,
    /// How far ahead (days) sessions may be booked.
    pub horizon_days: i64,
    /// The staff address that gets each reflow's digest, if set.
    pub notify_email: Option<String>,
}

/// One line of a quote: a period at one rate.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QuoteLineOut {
    /// "room" or "engineer".
    pub what: String,
    pub from: String,
    pub to: String,
    /// Minor units an hour.
    pub hourly_rate: i64,
    pub minutes: i64,
    /// hourly_rate * minutes / 60, rounded half up to a whole minor unit.
    pub amount: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct QuoteOut {
    /// The sum of the lines, in minor units.
    pub total: i64,
    pub currency: String,
    pub lines: Vec<QuoteLineOut>,
}

/// A payment, as recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PaymentOut {
    pub id: i64,
    pub booking: String,
    /// In minor units of the studio's currency.
    pub amount: i64,
    pub reference: Option<String>,
    /// When it was recorded, by the studio's clock.
    pub at: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PaymentRecordedOut {
    pub payment: PaymentOut,
    /// The booking after the payment: its price, deposit due and paid.
    pub booking: BookingOut,
    /// Whether this payment covered the deposit of a booking on hold: the hold is cleared and
    /// the booking confirmed.
    pub confirmed: bool,
}

/// A client waiting for a time.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitlistEntryOut {
    pub id: i64,
    pub client: String,
    pub from: String,
    pub to: String,
    pub duration_minutes: i64,
    pub room: Option<String>,
    pub requires: Vec<String>,
    pub engineer: Option<String>,
    /// When they joined: the list is served in this order.
    pub joined_at: String,
}

pub fn waitlist_entry(tz: &StudioTz, e: &crate::store::WaitlistEntry) -> WaitlistEntryOut {
    WaitlistEntryOut {
        id: e.id,
        client: e.client.0.clone(),
        from: tz.format(e.from),
        to: tz.format(e.to),
        duration_minutes: e.duration_minutes,
        room: e.room.as_ref().map(|r| r.0.clone()),
        requires: e.requires.clone(),
        engineer: e.engineer.as_ref().map(|x| x.0.clone()),
        joined_at: tz.format(e.joined_at),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitlistOut {
    /// In the order they are served: by join time.
    pub waitlist: Vec<WaitlistEntryOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitlistJoinedOut {
    pub entry: WaitlistEntryOut,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitlistLeftOut {
    pub removed: WaitlistEntryOut,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page written by hand is serde_json's text: empty or not, with a cursor or without.
    #[test]
    fn a_page_of_bookings_is_written_as_serde_json_writes_it() {
        use crate::domain::{Booking, BookingId, ClientId, Money, RoomId, SeriesId, Session, Status};
        let tz: StudioTz = "Europe/London".parse().unwrap();
        let booking = |id: &str, notes: Option<&str>| SharedBooking::new(Booking {
            id: BookingId::new(id),
            series: Some(SeriesId::new("series-001")),
            session: Session {
                room: RoomId::new("studio-a"),
                client: ClientId::new("c\"1"),
                engineer: None,
                start: tz.parse("2026-09-07T10:00").unwrap(),
                end: tz.parse("2026-09-07T12:00").unwrap(),
                party_size: 3,
                requires: vec!["drums".into(), "piano\n".into()],
                engineer_skills: vec![],
                status: Status::Confirmed,
                pinned: true,
            },
            notes: notes.map(str::to_owned),
            hold_until: None,
            displaced: false,
            money: Money { price: None, deposit_due: 0, paid: 1200 },
        }, 1);
        let pages = [
            BookingsPage { tz, bookings: vec![], next_cursor: None },
            BookingsPage { tz, bookings: vec![booking("bk_1", None)], next_cursor: Some("c1.6a1f.2".into()) },
            BookingsPage { tz, bookings: vec![booking("bk_1", Some("late \\ ok")), booking("bk_2", None)], next_cursor: None },
        ];
        for page in pages {
            assert_eq!(page.to_json(), serde_json::to_string(&page.out()).unwrap());
        }
    }

    /// Slots written by hand are serde_json's text: none, one, several, a room id to escape,
    /// either side of a clock change.
    #[test]
    fn free_slots_are_written_as_serde_json_writes_them() {
        use crate::domain::RoomId;
        let tz: StudioTz = "Europe/London".parse().unwrap();
        let slot = |room: &str, start: &str, latest: &str| {
            let start = tz.parse(start).unwrap();
            Slot { room: RoomId::new(room), start, end: start + chrono::Duration::minutes(90), latest_start: tz.parse(latest).unwrap() }
        };
        let pages = [
            SlotsPage { tz, slots: vec![] },
            SlotsPage { tz, slots: vec![slot("studio-a", "2026-09-07T10:00", "2026-09-07T20:30")] },
            SlotsPage {
                tz,
                slots: vec![
                    slot("room \"b\"\\\n", "2026-10-24T23:15", "2026-10-25T00:45"),
                    slot("studio-a", "2026-10-25T00:30", "2026-10-25T02:00"),
                    slot("studio-a", "2026-03-29T00:15", "2026-03-29T03:00"),
                ],
            },
        ];
        for page in pages {
            assert_eq!(page.to_json(), serde_json::to_string(&page.out()).unwrap());
        }
    }
}
