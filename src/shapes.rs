//! How a reflow, a booking, a room and an offline window are written out for programs and for
//! pages: times in the studio's zone (RFC 3339 with its offset), ids as text. One shape, below the MCP edge: the edge's answers
//! are these (their doc comments become the answers' schema text), and the view draws the same
//! fields, so a tool's answer and a page can never differ. It knows no protocol.

// A booking's shape lives below the store, which tells webhooks of bookings in it too.
pub use crate::domain::{booking_out as booking, BookingOut};
use crate::domain::{OfflineWindow, Room, StudioTz};
use crate::store::ReflowRecord;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReflowOut {
    pub reflow_id: String,
    pub month: String,
    /// Whether the moves were written (false for a dry run).
    pub applied: bool,
    /// Bookings in an offline room at an offline time, or whose engineer cannot work them (away,
    /// or outside their working hours).
    pub affected: u32,
    pub moved: u32,
    pub unresolved: u32,
    /// Moved sessions given to another engineer (their own could not work them, or a swap was
    /// cheaper); each such move names both engineers.
    pub engineer_changes: u32,
    /// The REFLOW.md cost of the plan (lower is better).
    pub cost: i64,
    /// A proven lower bound on the cost; equal to `cost` when the plan is optimal.
    pub lower_bound: Option<i64>,
    pub unresolved_bookings: Vec<UnresolvedOut>,
    pub moves: Vec<MoveOut>,
    /// The price difference the studio absorbed, in minor units: each moved booking keeps its
    /// price, and this is the sum of what the new places would cost today less those prices.
    pub absorbed: i64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnresolvedOut {
    pub booking: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MoveOut {
    pub booking: String,
    pub from_room: String,
    pub from_start: String,
    pub to_room: String,
    pub to_start: String,
    pub to_end: String,
    /// The session's engineer before the move.
    pub from_engineer: Option<String>,
    /// Its engineer after the move; differs from `from_engineer` when the reflow re-staffed it.
    pub to_engineer: Option<String>,
}

/// A stored reflow as it is written out: its moves and its unresolved bookings with their reasons.
pub fn reflow(tz: &StudioTz, r: &ReflowRecord) -> ReflowOut {
    ReflowOut {
        reflow_id: r.id.clone(),
        month: r.month.clone(),
        applied: r.applied,
        affected: r.affected as u32,
        moved: r.moves.len() as u32,
        unresolved: r.unresolved.len() as u32,
        engineer_changes: r.moves.iter().filter(|m| m.moved.changes_engineer()).count() as u32,
        cost: r.cost,
        lower_bound: r.lower_bound,
        absorbed: r.absorbed,
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
                from_engineer: m.from_engineer.as_ref().map(|e| e.0.clone()),
                to_engineer: m.to_engineer.as_ref().map(|e| e.0.clone()),
            })
            .collect(),
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
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
    /// The shortest session it takes, in minutes (absent: no rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_minutes: Option<i64>,
    /// The longest session it takes, in minutes (absent: no rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<i64>,
    /// The notice a new session needs, in minutes (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_minutes: Option<i64>,
    /// How many days ahead a new session may start at the latest (absent: the studio's horizon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_advance_days: Option<i64>,
    /// Sessions start on this grid of minutes from local midnight (absent: any quarter hour).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_step_minutes: Option<i64>,
    /// Its hourly rate in minor units of the studio's currency (absent: 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hourly_rate: Option<i64>,
    /// Its time-of-week overrides, e.g. {"days": "sat-sun", "from": "00:00", "to": "24:00", "hourly_rate": 9000} (absent: none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<RateOut>,
    /// Offline windows that have not ended yet.
    pub offline_windows: Vec<WindowOut>,
}

/// A time-of-week override of a room's hourly rate.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RateOut {
    pub days: String,
    pub from: String,
    pub to: String,
    pub hourly_rate: i64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WindowOut {
    pub id: i64,
    pub room: String,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// An offline window as it is written out.
pub fn window(tz: &StudioTz, w: &OfflineWindow) -> WindowOut {
    WindowOut { id: w.id, room: w.room.0.clone(), from: tz.format(w.from), to: tz.format(w.to), reason: w.reason.clone() }
}

/// A room as it is written out, with the offline windows of its that have not ended.
pub fn room(tz: &StudioTz, r: Room, windows: &[OfflineWindow]) -> RoomOut {
    RoomOut {
        id: r.id.0,
        name: r.name,
        capacity: r.capacity,
        features: r.features,
        opening_hours: r.hours.into_lines(),
        buffer_minutes: r.buffer.num_minutes(),
        active: r.active,
        min_minutes: r.rules.min_minutes,
        max_minutes: r.rules.max_minutes,
        lead_minutes: r.rules.lead_minutes,
        max_advance_days: r.rules.max_advance_days,
        start_step_minutes: r.rules.start_step_minutes,
        hourly_rate: (r.price.hourly_rate != 0).then_some(r.price.hourly_rate),
        rates: r
            .price
            .rates
            .into_iter()
            .map(|x| RateOut { days: x.days, from: crate::domain::Rate::clock_text(x.from), to: crate::domain::Rate::clock_text(x.to), hourly_rate: x.hourly_rate })
            .collect(),
        offline_windows: windows.iter().map(|w| window(tz, w)).collect(),
    }
}
