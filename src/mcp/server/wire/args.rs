//! The tools' arguments as they arrive: the public contract, with JSON schemas derived from these
//! types (`deny_unknown_fields`, doc comments as the schema's text). Every text is one of the
//! project's validated text types (`domain::text`), so a value that breaks its rule is refused
//! while it is read, naming the argument.
//! The arguments that route a call (a reflow's month, the one room a call is about) are mirrored
//! into `Mcp-Param-Month` and `Mcp-Param-Room` headers (`x-mcp-header`, 2026-07-28): only required
//! string arguments, since a client mirrors only a property whose type is a single primitive.

use super::nullable;
use crate::domain::{Email, Id, Line, List, Name, Notes, Tag};
use crate::store::Entity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    #[schemars(extend("x-mcp-header" = "Room"))]
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
    /// Skills any engineer of the session must have, e.g. ["mixing"]; the engineer, if given,
    /// must have them all, and a reflow re-staffs the session only with an engineer who does.
    #[serde(default)]
    pub engineer_skills: List<Tag>,
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
    #[schemars(extend("x-mcp-header" = "Room"))]
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
    #[schemars(extend("x-mcp-header" = "Month"))]
    pub month: String,
    /// The rooms whose bookings must move: their offline windows in the month are used, and a room
    /// with none is treated as offline the whole month. It may be empty (or left out) when
    /// engineers are away from sessions or sessions are flagged displaced: those move too.
    #[serde(default)]
    pub offline_rooms: List<Id>,
    /// How far a booking's start may shift within its day, 0 to 720 minutes (default 120).
    pub max_shift_minutes: Option<i64>,
    /// Plan and record the reflow without moving anything (default false).
    #[serde(default)]
    pub dry_run: bool,
    /// Solve, then ask before moving anything: as an elicitation in the task's inputRequests (a
    /// client that declares the tasks extension), in an input-required result (2026-07-28), or
    /// as an elicitation/create mid-call (a 2025-11-25 client in a session that declared
    /// elicitation). Default false.
    #[serde(default)]
    pub require_approval: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetReflowArgs {
    /// The reflow's id, e.g. "rf_0001".
    pub reflow_id: Id,
}

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
    /// Whether they are e-mailed when their sessions change (default true; needs an email and a
    /// server started with --smtp).
    pub notify: Option<bool>,
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
    /// When they work, in the form of a room's opening hours, e.g. ["mon-fri 10:00-19:00"]; a
    /// session with them must lie inside one span. Without it: always.
    pub working_hours: Option<List<Line>>,
    /// Their hourly rate, in minor units of the studio's currency (default 0).
    pub hourly_rate: Option<i64>,
    /// Whether they are e-mailed when their sessions change (default true; needs an email and a
    /// server started with --smtp).
    pub notify: Option<bool>,
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
    /// false stops e-mails about their sessions (the address stays), true sends them again.
    pub notify: Option<bool>,
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
    /// New working hours (replace the old ones), e.g. ["mon-fri 10:00-19:00"]; null: always.
    /// Their future sessions outside the new hours are flagged displaced and listed.
    #[serde(default, deserialize_with = "nullable")]
    pub working_hours: Option<Option<List<Line>>>,
    /// Their hourly rate, in minor units.
    pub hourly_rate: Option<i64>,
    /// false deactivates the engineer (they cannot be booked; their bookings stay), true reactivates.
    pub active: Option<bool>,
    /// false stops e-mails about their sessions (the address stays), true sends them again.
    pub notify: Option<bool>,
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
    /// The shortest session it takes, 1 to 1440 minutes (default: no rule).
    pub min_minutes: Option<i64>,
    /// The longest session it takes, 1 to 1440 minutes, at least min_minutes (default: no rule).
    pub max_minutes: Option<i64>,
    /// The notice a new session needs, 0 to 527040 minutes (default: none).
    pub lead_minutes: Option<i64>,
    /// How many days ahead a new session may start at the latest, 1 to 3650 (default: the studio's horizon).
    pub max_advance_days: Option<i64>,
    /// Sessions start on this grid of minutes from local midnight, a divisor of 1440 such as 30 or 60 (default: none).
    pub start_step_minutes: Option<i64>,
    /// Its hourly rate, in minor units of the studio's currency (e.g. 6000 for 60.00; default 0).
    pub hourly_rate: Option<i64>,
    /// Time-of-week overrides of the hourly rate, e.g. [{"days": "sat-sun", "from": "00:00", "to": "24:00", "hourly_rate": 9000}]; they may not overlap.
    pub rates: Option<List<RateArg>>,
}

/// A time-of-week override of a room's hourly rate.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateArg {
    /// Days, e.g. "sat-sun" or "mon,wed".
    pub days: Line,
    /// From, local time HH:MM.
    pub from: Line,
    /// To, local time HH:MM after `from` (24:00 for the end of the day).
    pub to: Line,
    /// The hourly rate then, in minor units.
    pub hourly_rate: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateRoomArgs {
    /// The room's id.
    #[schemars(extend("x-mcp-header" = "Room"))]
    pub id: Id,
    pub name: Option<Name>,
    #[schemars(range(min = 1, max = 1000))]
    pub capacity: Option<u32>,
    /// The new feature list (replaces the old one).
    pub features: Option<List<Tag>>,
    /// The new weekly opening hours (replace the old ones).
    pub opening_hours: Option<List<Line>>,
    pub buffer_minutes: Option<i64>,
    /// The shortest session it takes (null: no rule). Rules hold for sessions booked or moved
    /// from now on; they never displace a session already booked.
    #[serde(default, deserialize_with = "nullable")]
    pub min_minutes: Option<Option<i64>>,
    /// The longest session it takes (null: no rule).
    #[serde(default, deserialize_with = "nullable")]
    pub max_minutes: Option<Option<i64>>,
    /// The notice a new session needs, in minutes (null: none).
    #[serde(default, deserialize_with = "nullable")]
    pub lead_minutes: Option<Option<i64>>,
    /// How many days ahead a new session may start at the latest (null: no rule).
    #[serde(default, deserialize_with = "nullable")]
    pub max_advance_days: Option<Option<i64>>,
    /// The grid of starts in minutes from local midnight (null: none).
    #[serde(default, deserialize_with = "nullable")]
    pub start_step_minutes: Option<Option<i64>>,
    /// Its hourly rate, in minor units. A new rate prices sessions booked from now on.
    pub hourly_rate: Option<i64>,
    /// Its time-of-week overrides (replace the old ones; [] removes them).
    pub rates: Option<List<RateArg>>,
    /// false retires the room: it cannot be booked, and its future bookings are displaced.
    pub active: Option<bool>,
    /// Apply a change that puts future bookings out of the room, marking them displaced (default
    /// false: such a change is refused, listing them).
    #[serde(default)]
    pub force: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveOfflineWindowArgs {
    /// The window's id, as list_offline_windows shows it.
    pub id: i64,
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
    /// Skills any engineer of the session must have (replaces the old list; [] clears it).
    pub engineer_skills: Option<List<Tag>>,
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReflowIdArgs {
    /// The reflow's id, e.g. "rf_0001".
    pub reflow_id: Id,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListChangesArgs {
    /// The `next_cursor` of an earlier answer: only changes committed after it. Without it, from
    /// the first change.
    pub since: Option<Id>,
    /// Only changes to this kind of thing.
    pub entity: Option<Entity>,
    /// Only changes to the thing with this id (a booking id, a room id, a window id...).
    pub id: Option<Id>,
    /// Changes per page, 1 to 1000 (default 100).
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTimeOffArgs {
    /// The engineer's id.
    pub engineer: Id,
    /// When it starts: RFC 3339 with an offset, or local studio time (2026-09-07T00:00).
    pub from: Line,
    /// When they are back: after `from` (at most 366 days later), after the studio's clock, and no
    /// later than its booking horizon.
    pub to: Line,
    /// Why, for the people who read the calendar (e.g. "holiday"; default "time off").
    pub reason: Option<Line>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTimeOffArgs {
    /// Only this engineer's.
    pub engineer: Option<Id>,
    /// Keep time off that ends after this time (default: now).
    pub from: Option<Line>,
    /// Keep time off that starts before this time (default: a year after `from`).
    pub to: Option<Line>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveTimeOffArgs {
    /// The time off's id, as list_time_off shows it.
    pub id: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateStudioArgs {
    /// ISO 4217 code of three capital letters, e.g. "GBP"; prices are integers in its minor unit.
    pub currency: Option<Line>,
    /// The share of a held booking's price owed as a deposit, 0 to 100.
    pub deposit_percent: Option<i64>,
    /// How long a freed slot is held for the first matching waitlist entry, 1 to 168 hours.
    pub waitlist_hold_hours: Option<i64>,
    /// The staff address that gets each reflow's digest (counts, and every session that could not
    /// be moved with its reason and the client's contact); "" clears it.
    pub notify_email: Option<Email>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuoteArgs {
    /// The room's id.
    #[schemars(extend("x-mcp-header" = "Room"))]
    pub room: Id,
    /// The start: RFC 3339 with an offset, or local studio time.
    pub start: Line,
    /// The end, after the start, at most 24 hours later.
    pub end: Line,
    /// An engineer whose time is priced too.
    pub engineer: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordPaymentArgs {
    /// The booking's id.
    pub booking: Id,
    /// The money received, in minor units of the studio's currency (1 to 1000000000), at most
    /// what is still owed on the booking (its price less what was paid).
    pub amount: i64,
    /// The payer's or the bank's reference, as given.
    pub reference: Option<Line>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinWaitlistArgs {
    /// The client's id.
    pub client: Id,
    /// The earliest the session may start: RFC 3339 with an offset, or local studio time.
    pub from: Line,
    /// The latest the session may end: after `from` (at most 366 days later), after the studio's
    /// clock, and no later than its booking horizon.
    pub to: Line,
    /// The session's length, 15 to 1440 minutes.
    pub duration_minutes: i64,
    /// Only this room. Give a room or `requires`, not both; neither: any room.
    pub room: Option<Id>,
    /// Features the room must have (any room that has them).
    #[serde(default)]
    pub requires: List<Tag>,
    /// The engineer the session must have.
    pub engineer: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWaitlistArgs {
    /// Only this client's entries.
    pub client: Option<Id>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaveWaitlistArgs {
    /// The entry's id, as list_waitlist shows it.
    pub id: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudioReportArgs {
    /// The month, YYYY-MM (four-digit year from 2000 to 2199, month 01 to 12).
    #[schemars(pattern(r"^[0-9]{4}-(0[1-9]|1[0-2])$"))]
    pub month: String,
}
