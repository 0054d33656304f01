//! The tools' arguments and answers as they travel: the public contract, with JSON schemas derived
//! from these types. Each answer type is built by hand from domain types, so that a change inside
//! the project never changes the wire by accident.

use crate::domain::{Booking, Email, Id, Line, List, Name, Notes, OfflineWindow, Room, StudioTz, Tag, MAX_LIST};
use schemars::{json_schema, Schema, SchemaGenerator};
use std::borrow::Cow;
use crate::store::{Event, MoveRecord, PersonRecord, ReflowRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// ---- the text rules, as schemas -------------------------------------------------------------

/// Each kind of text from outside (`domain::TextKind`) as a JSON schema: a string with its length,
/// so that a client sees the limit before the server refuses it.
macro_rules! text_schema {
    ($($name:ident: $min:expr),* $(,)?) => {$(
        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let mut schema = json_schema!({"type": "string", "maxLength": $name::KIND.max_chars()});
                if $min > 0 {
                    schema.insert("minLength".into(), $min.into());
                }
                schema
            }
        }
    )*};
}

text_schema!(Id: 1, Name: 1, Line: 0, Notes: 0, Email: 0, Tag: 1);

impl<T: JsonSchema> JsonSchema for List<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("List_of_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": generator.subschema_for::<T>(), "maxItems": MAX_LIST})
    }
}

/// A field that may be left out (no change), null (take it off) or given: `Some(None)` is null.
fn nullable<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

// ---- arguments ------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryBookingsArgs {
    /// Keep bookings that end after this time: RFC 3339 with an offset, or local studio time (2026-09-07T10:00).
    pub from: Option<Line>,
    /// Keep bookings that start before this time; same forms as `from`.
    pub to: Option<Line>,
    /// Only this room (its id, e.g. "studio-a").
    pub room: Option<Id>,
    /// Only this client.
    pub client: Option<Id>,
    /// Only this engineer.
    pub engineer: Option<Id>,
    /// Only this recurring series.
    pub series: Option<Id>,
    /// Only this status. Without it, confirmed and tentative bookings are listed, not cancelled ones.
    pub status: Option<StatusArg>,
    /// Bookings per page, 1 to 500 (default 50).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page, to read the next one.
    pub cursor: Option<Id>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusArg {
    Confirmed,
    Tentative,
    Cancelled,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The booking's id, e.g. "bk_00017".
    pub id: Id,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindFreeSlotsArgs {
    /// Start of the search: RFC 3339 with an offset, or local studio time.
    pub from: Line,
    /// End of the search: it bounds the start (every slot starts before `to`; its session may
    /// end after it). At most 31 days after `from`, counted on the studio's wall clock.
    pub to: Line,
    /// How long the session lasts, 15 to 1440 minutes.
    pub duration_minutes: u32,
    /// How many people come (default 1); only rooms that hold them are searched.
    #[schemars(range(min = 1, max = 1000))]
    pub party_size: Option<u32>,
    /// Features the room must have, e.g. ["drums", "vocal-booth"].
    #[serde(default)]
    pub requires: List<Tag>,
    /// Search only this room.
    pub room: Option<Id>,
    /// Leave out times when this client is already booked.
    pub client: Option<Id>,
    /// Leave out times when this engineer is already booked.
    pub engineer: Option<Id>,
    /// Most slots to return, 1 to 200 (default 20).
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBookingArgs {
    /// The room's id.
    pub room: Id,
    /// The client's id.
    pub client: Id,
    /// Start: RFC 3339 with an offset, or local studio time (2026-09-07T10:00); not before the
    /// studio's clock, nor beyond its booking horizon (two years ahead unless the studio sets another).
    pub start: Line,
    /// End; same forms as `start`. With `recurrence`, every session keeps this length.
    pub end: Line,
    /// The engineer's id, if one is needed.
    pub engineer: Option<Id>,
    /// How many people come (default 1).
    #[schemars(range(min = 1, max = 1000))]
    pub party_size: Option<u32>,
    /// Features the session needs, e.g. ["drums"]; the room must have them all.
    #[serde(default)]
    pub requires: List<Tag>,
    /// An RFC 5545 RRULE for a recurring series, e.g. "FREQ=WEEKLY;COUNT=8". It needs COUNT or
    /// UNTIL; every session is booked, or none is. Every session must start within the booking
    /// horizon, and a COUNT is booked exactly or refused.
    pub recurrence: Option<Line>,
    /// "confirmed" (default) or "tentative".
    pub status: Option<StatusArg>,
    /// Hold a tentative booking until this time (RFC 3339 or local studio time, at the latest its
    /// start): past it, the server releases the booking and the slot is free again. Confirm it
    /// with update_booking {status: "confirmed"}.
    pub hold_until: Option<Line>,
    /// Staff notes, free text.
    pub notes: Option<Notes>,
    /// A key of your choice: a retry with the same key and arguments returns the same booking(s)
    /// and books nothing twice.
    pub idempotency_key: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBookingArgs {
    /// The booking's id.
    pub id: Id,
    /// "occurrence" (default): this booking only; "following": this and every later session of its
    /// series; "series": every session of its series that has not started yet.
    pub scope: Option<ScopeArg>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScopeArg {
    Occurrence,
    Following,
    Series,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveBookingArgs {
    /// The booking's id.
    pub id: Id,
    /// The new room (default: the same room).
    pub room: Option<Id>,
    /// The new start, within the same window as a new booking's; the booking keeps its length.
    pub start: Line,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetRoomOfflineArgs {
    /// The room's id.
    pub room: Id,
    /// When it goes out of use: RFC 3339 with an offset, or local studio time.
    pub from: Line,
    /// When it comes back: after the studio's clock, and no later than its booking horizon.
    /// A window that overlaps or touches another of the room's is merged with it.
    pub to: Line,
    /// Why, for the people who read the calendar (e.g. "desk replacement").
    pub reason: Line,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListOfflineWindowsArgs {
    /// Only this room.
    pub room: Option<Id>,
    /// Keep windows that end after this time (default: now).
    pub from: Option<Line>,
    /// Keep windows that start before this time (default: a year after `from`).
    pub to: Option<Line>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReflowMonthArgs {
    /// The month, YYYY-MM (four-digit year from 2000 to 2199, month 01 to 12).
    #[schemars(pattern(r"^[0-9]{4}-(0[1-9]|1[0-2])$"))]
    pub month: String,
    /// The rooms whose bookings must move: their offline windows in the month are used, and a room
    /// with none is treated as offline the whole month.
    pub offline_rooms: List<Id>,
    /// How far a booking's start may shift within its day, 0 to 720 minutes (default 120).
    pub max_shift_minutes: Option<i64>,
    /// Plan and record the reflow without moving anything (default false).
    #[serde(default)]
    pub dry_run: bool,
    /// Solve, then ask before moving anything (needs a client that declares the tasks extension;
    /// the question comes as an elicitation in the task's inputRequests). Default false.
    #[serde(default)]
    pub require_approval: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetReflowArgs {
    /// The reflow's id, e.g. "rf_0001".
    pub reflow_id: Id,
}

// ---- answers --------------------------------------------------------------------------------

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoomsOut {
    pub rooms: Vec<RoomOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoomOut {
    pub id: String,
    pub name: String,
    pub capacity: u32,
    pub features: Vec<String>,
    /// Weekly opening hours, e.g. "mon-fri 10:00-01:00" (a close before the open is past midnight).
    pub opening_hours: Vec<String>,
    /// Turnaround kept free between two sessions in the room.
    pub buffer_minutes: i64,
    /// False for a retired room: it cannot be booked and no reflow moves anything into it.
    pub active: bool,
    /// Offline windows that have not ended yet.
    pub offline_windows: Vec<WindowOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WindowOut {
    pub id: i64,
    pub room: String,
    pub from: String,
    pub to: String,
    pub reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BookingOut {
    pub id: String,
    pub room: String,
    pub client: String,
    pub engineer: Option<String>,
    pub start: String,
    pub end: String,
    pub party_size: u32,
    pub requires: Vec<String>,
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
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BookingsOut {
    pub bookings: Vec<BookingOut>,
    /// Pass as `cursor` to read the next page; null on the last page.
    pub next_cursor: Option<String>,
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
pub struct ReflowOut {
    pub reflow_id: String,
    pub month: String,
    /// Whether the moves were written (false for a dry run).
    pub applied: bool,
    /// Bookings in an offline room at an offline time.
    pub affected: u32,
    pub moved: u32,
    pub unresolved: u32,
    /// The REFLOW.md cost of the plan (lower is better).
    pub cost: i64,
    /// A proven lower bound on the cost; equal to `cost` when the plan is optimal.
    pub lower_bound: Option<i64>,
    pub unresolved_bookings: Vec<UnresolvedOut>,
    pub moves: Vec<MoveOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UnresolvedOut {
    pub booking: String,
    pub reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MoveOut {
    pub booking: String,
    pub from_room: String,
    pub from_start: String,
    pub to_room: String,
    pub to_start: String,
    pub to_end: String,
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

// ---- conversions ----------------------------------------------------------------------------

pub fn booking(tz: &StudioTz, b: &Booking) -> BookingOut {
    BookingOut {
        id: b.id.0.clone(),
        room: b.room.0.clone(),
        client: b.client.0.clone(),
        engineer: b.engineer.as_ref().map(|e| e.0.clone()),
        start: tz.format(b.start),
        end: tz.format(b.end),
        party_size: b.party_size,
        requires: b.requires.clone(),
        series: b.series.as_ref().map(|s| s.0.clone()),
        status: b.status.to_string(),
        pinned: b.pinned,
        notes: b.notes.clone(),
        hold_until: b.hold_until.map(|t| tz.format(t)),
        displaced: b.displaced,
    }
}

pub fn window(tz: &StudioTz, w: &OfflineWindow) -> WindowOut {
    WindowOut { id: w.id, room: w.room.0.clone(), from: tz.format(w.from), to: tz.format(w.to), reason: w.reason.clone() }
}

pub fn room(tz: &StudioTz, r: &Room, windows: &[OfflineWindow]) -> RoomOut {
    RoomOut {
        id: r.id.0.clone(),
        name: r.name.clone(),
        capacity: r.capacity,
        features: r.features.clone(),
        opening_hours: r.hours.to_lines(),
        buffer_minutes: r.buffer.num_minutes(),
        active: r.active,
        offline_windows: windows.iter().map(|w| window(tz, w)).collect(),
    }
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
    }
}

/// A stored reflow as `reflow_month` answers it: the synchronous call and the task both answer
/// from the record, so the two answers are the same document.
pub fn reflow(tz: &StudioTz, r: &ReflowRecord) -> ReflowOut {
    ReflowOut {
        reflow_id: r.id.clone(),
        month: r.month.clone(),
        applied: r.applied,
        affected: r.affected as u32,
        moved: r.moves.len() as u32,
        unresolved: r.unresolved.len() as u32,
        cost: r.cost,
        lower_bound: r.lower_bound,
        unresolved_bookings: r
            .unresolved
            .iter()
            .map(|(b, reason)| UnresolvedOut { booking: b.0.clone(), reason: reason.clone() })
            .collect(),
        moves: r
            .moves
            .iter()
            .map(|record| &record.moved)
            .map(|m| MoveOut {
                booking: m.booking.0.clone(),
                from_room: m.from_room.0.clone(),
                from_start: tz.format(m.from_start),
                to_room: m.to_room.0.clone(),
                to_start: tz.format(m.to_start),
                to_end: tz.format(m.to_end),
            })
            .collect(),
    }
}

pub fn stored_reflow(tz: &StudioTz, r: &ReflowRecord) -> StoredReflowOut {
    StoredReflowOut { reflow: reflow(tz, r), undone: r.undone, request: r.request.clone(), created_at: tz.format(r.created_at) }
}

// ---- the studio's management: people, rooms, edits, reflow approval and undo, history --------

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListPeopleArgs {
    /// Part of an id or a name, any case (e.g. "osei").
    pub query: Option<Line>,
    /// Only active (true) or only inactive (false) people; both without it.
    pub active: Option<bool>,
    /// People per page, 1 to 500 (default 50).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page, to read the next one.
    pub cursor: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateClientArgs {
    /// The client's name (a band, an artist, a podcast), e.g. "Amara Osei".
    pub name: Name,
    /// An email address, e.g. "amara@example.com".
    pub email: Option<Email>,
    pub phone: Option<Line>,
    /// Free text for staff.
    pub notes: Option<Notes>,
    /// The id to give (a-z, 0-9, '-', '_'); without it one is made from the name, e.g. "amara-osei".
    pub id: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEngineerArgs {
    /// The engineer's name.
    pub name: Name,
    pub email: Option<Email>,
    pub phone: Option<Line>,
    pub notes: Option<Notes>,
    /// Free-text tags, e.g. ["mixing", "drums"].
    #[serde(default)]
    pub skills: List<Tag>,
    /// The id to give (a-z, 0-9, '-', '_'); without it one is made from the name.
    pub id: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateClientArgs {
    /// The client's id.
    pub id: Id,
    pub name: Option<Name>,
    /// A new email; "" clears it.
    pub email: Option<Email>,
    /// A new phone number; "" clears it.
    pub phone: Option<Line>,
    /// New notes; "" clears them.
    pub notes: Option<Notes>,
    /// false deactivates the client (they cannot be booked; their bookings stay), true reactivates.
    pub active: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEngineerArgs {
    /// The engineer's id.
    pub id: Id,
    pub name: Option<Name>,
    /// A new email; "" clears it.
    pub email: Option<Email>,
    /// A new phone number; "" clears it.
    pub phone: Option<Line>,
    /// New notes; "" clears them.
    pub notes: Option<Notes>,
    /// The new list of tags (replaces the old one).
    pub skills: Option<List<Tag>>,
    /// false deactivates the engineer (they cannot be booked; their bookings stay), true reactivates.
    pub active: Option<bool>,
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
    /// An inactive person cannot be booked.
    pub active: bool,
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
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRoomArgs {
    /// The room's id (a-z, 0-9, '-', '_'), e.g. "studio-d".
    pub id: Id,
    pub name: Name,
    /// How many people it holds, at least 1.
    #[schemars(range(min = 1, max = 1000))]
    pub capacity: u32,
    /// What it has, e.g. ["drums", "vocal-booth"].
    #[serde(default)]
    pub features: List<Tag>,
    /// Weekly opening hours as list_rooms shows them, e.g. ["mon-fri 10:00-01:00", "sat 12:00-18:00"].
    pub opening_hours: List<Line>,
    /// Turnaround kept free between two sessions, 0 to 240 minutes (default 0).
    pub buffer_minutes: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateRoomArgs {
    /// The room's id.
    pub id: Id,
    pub name: Option<Name>,
    #[schemars(range(min = 1, max = 1000))]
    pub capacity: Option<u32>,
    /// The new feature list (replaces the old one).
    pub features: Option<List<Tag>>,
    /// The new weekly opening hours (replace the old ones).
    pub opening_hours: Option<List<Line>>,
    pub buffer_minutes: Option<i64>,
    /// false retires the room: it cannot be booked, and its future bookings are displaced.
    pub active: Option<bool>,
    /// Apply a change that puts future bookings out of the room, marking them displaced (default
    /// false: such a change is refused, listing them).
    #[serde(default)]
    pub force: bool,
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveOfflineWindowArgs {
    /// The window's id, as list_offline_windows shows it.
    pub id: i64,
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBookingArgs {
    /// The booking's id.
    pub id: Id,
    /// The engineer's id; null takes the engineer off.
    #[serde(default, deserialize_with = "nullable")]
    pub engineer: Option<Option<Id>>,
    #[schemars(range(min = 1, max = 1000))]
    pub party_size: Option<u32>,
    /// What the session needs (replaces the old list).
    pub requires: Option<List<Tag>>,
    /// Staff notes; "" clears them.
    pub notes: Option<Notes>,
    /// "confirmed" (which ends a hold) or "tentative"; cancel with cancel_booking.
    pub status: Option<StatusArg>,
    /// Locked by staff: a reflow never moves a pinned booking.
    pub pinned: Option<bool>,
    /// Hold a tentative booking until this time; "" clears the hold.
    pub hold_until: Option<Line>,
    /// "occurrence" (default): this booking; "following": this and every later session of its
    /// series; "series": every session of its series that has not started.
    pub scope: Option<ScopeArg>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UpdatedOut {
    /// The bookings as they are now.
    pub bookings: Vec<BookingOut>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReflowIdArgs {
    /// The reflow's id, e.g. "rf_0001".
    pub reflow_id: Id,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UndoneOut {
    pub reflow_id: String,
    /// The bookings, back where they were before the reflow.
    pub restored: Vec<BookingOut>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityArg {
    Booking,
    Room,
    Client,
    Engineer,
    OfflineWindow,
    Reflow,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListChangesArgs {
    /// The `next_cursor` of an earlier answer: only changes committed after it. Without it, from
    /// the first change.
    pub since: Option<Id>,
    /// Only changes to this kind of thing.
    pub entity: Option<EntityArg>,
    /// Only changes to the thing with this id (a booking id, a room id, a window id...).
    pub id: Option<Id>,
    /// Changes per page, 1 to 1000 (default 100).
    pub limit: Option<u32>,
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
        active: p.profile.active,
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
