//! The REFLOW.md contract as Rust types: the instance a reflow starts from and the solution it ends
//! with, serialised exactly as the contract writes them. Reading an instance fills the contract's
//! defaults and checks its shape; it does not solve or judge anything.

use serde::{Deserialize, Serialize};

/// Minutes from 00:00 local wall-clock time on the first day of the month.
pub type Minute = i64;

/// A half-open interval `[start, end)` in instance minutes, written `[start, end]` in JSON.
pub type Interval = [Minute; 2];

/// Minutes in a day; day `d` covers `[1440 * d, 1440 * (d + 1))`.
pub const DAY: Minute = 1440;

/// The only instance format version this crate reads and writes.
pub const VERSION: u32 = 1;

/// One month of bookings and rooms, with the rooms that are offline for part of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Always [`VERSION`].
    pub version: u32,
    /// The month, `YYYY-MM`; informative for the solver, which only sees minutes.
    pub month: String,
    /// Placements start a whole number of grid steps from the original start (default 15).
    #[serde(default = "default_grid")]
    pub grid_minutes: Minute,
    /// How far a placement may start from the original start, either way (default 120).
    #[serde(default = "default_max_shift")]
    pub max_shift_minutes: Minute,
    /// Turnaround time required between two bookings in one room (default 0).
    #[serde(default)]
    pub buffer_minutes: Minute,
    /// The weights of the cost.
    #[serde(default)]
    pub weights: Weights,
    /// Every room of the studio or chain.
    pub rooms: Vec<Room>,
    /// Every booking of the month, affected or not.
    pub bookings: Vec<Booking>,
}

fn default_grid() -> Minute {
    15
}
fn default_max_shift() -> Minute {
    120
}

/// The weights of the cost; see [`crate::cost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// Per affected booking left unresolved (default 1000).
    pub unresolved: i64,
    /// Per extra room a series' placed affected occurrences use (default 20).
    pub series_split: i64,
    /// Per grid step a placed booking moves in time (default 2).
    pub shift_step: i64,
    /// Per placed booking in a room other than its own (default 1).
    pub room_change: i64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { unresolved: 1000, series_split: 20, shift_step: 2, room_change: 1 }
    }
}

/// A room: what it holds, when it is open and when it is offline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Room {
    /// Unique among the rooms.
    pub id: String,
    /// The largest party the room holds.
    pub capacity: u32,
    /// What the room offers (`drums`, `grand-piano`, ...).
    #[serde(default)]
    pub features: Vec<String>,
    /// When the room may be used, `[start, end)`.
    #[serde(default)]
    pub open: Vec<Interval>,
    /// When it may not (maintenance, repairs). Bookings that touch these are the ones that move.
    #[serde(default)]
    pub offline: Vec<Interval>,
}

/// A booking of the month.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Booking {
    /// Unique among the bookings.
    pub id: String,
    /// The id of the room it is booked in.
    pub room: String,
    /// First minute, inclusive.
    pub start: Minute,
    /// Last minute, exclusive.
    pub end: Minute,
    /// Who booked it; a client is in one place at a time.
    pub client: String,
    /// The engineer who runs it, if any; an engineer is in one place at a time.
    #[serde(default)]
    pub engineer: Option<String>,
    /// How many people come (default 1).
    #[serde(default = "default_party")]
    pub party_size: u32,
    /// Features the room must have.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The weekly series it belongs to, if any: its moved occurrences should share a room.
    #[serde(default)]
    pub series: Option<String>,
    /// `false` means pinned: locked by staff, already started, or inside the notice period.
    #[serde(default = "default_movable")]
    pub movable: bool,
}

fn default_party() -> u32 {
    1
}
fn default_movable() -> bool {
    true
}

/// Where one affected booking goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    /// The booking's id.
    pub booking: String,
    /// The room it moves to (possibly its own, shifted out of the offline window).
    pub room: String,
    /// New start minute.
    pub start: Minute,
    /// New end minute; the duration never changes.
    pub end: Minute,
}

/// An affected booking left where it is, and why, in words a studio manager can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unresolved {
    /// The booking's id.
    pub booking: String,
    /// Which rule stopped it, in plain words.
    pub reason: String,
}

/// The answer to an instance, as REFLOW.md writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Solution {
    /// Affected bookings placed.
    pub moved: usize,
    /// Affected bookings left unresolved.
    pub unresolved: usize,
    /// The REFLOW.md cost; see [`crate::cost`].
    pub cost: i64,
    /// One per placed affected booking, in instance order.
    pub assignments: Vec<Assignment>,
    /// One per unresolved affected booking, in instance order.
    pub unresolved_bookings: Vec<Unresolved>,
}

impl Booking {
    /// The day of the booking's start, by floor division (minutes may be negative).
    pub fn day(&self) -> i64 {
        self.start.div_euclid(DAY)
    }
}

impl Room {
    /// Whether the room is offline at any minute of `[start, end)`.
    pub fn is_offline_during(&self, start: Minute, end: Minute) -> bool {
        self.offline.iter().any(|&[s, e]| s < end && start < e)
    }
}

impl Instance {
    /// Whether a booking is affected: its room is offline at some minute of it.
    /// A booking in an unknown room is not affected ([`Instance::check`] rejects those).
    pub fn is_affected(&self, booking: &Booking) -> bool {
        self.rooms
            .iter()
            .find(|room| room.id == booking.room)
            .is_some_and(|room| room.is_offline_during(booking.start, booking.end))
    }
}
