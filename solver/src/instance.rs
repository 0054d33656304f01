//! The REFLOW.md contract as Rust types: the instance a reflow starts from and the solution it ends
//! with, serialised exactly as the contract writes them. Reading an instance fills the contract's
//! defaults and checks its shape; it does not solve or judge anything.
//!
//! Version 2 adds engineers (skills, working hours, time off) and the skills a session needs. Its
//! fields default to "absent", and absent fields are not written, so a version 1 instance reads as
//! a version 2 instance with the same answer and writes back as it was read.

use serde::{Deserialize, Serialize};

/// Minutes from 00:00 local wall-clock time on the first day of the month.
pub type Minute = i64;

/// A half-open interval `[start, end)` in instance minutes, written `[start, end]` in JSON.
pub type Interval = [Minute; 2];

/// Minutes in a day; day `d` covers `[1440 * d, 1440 * (d + 1))`.
pub const DAY: Minute = 1440;

/// The newest instance format version; this crate reads versions 1 and 2 (see [`VERSIONS`]).
pub const VERSION: u32 = 2;

/// Every instance format version this crate reads.
pub const VERSIONS: [u32; 2] = [1, 2];

/// One month of bookings and rooms, with the rooms that are offline for part of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// 1 or 2 (see [`VERSIONS`]); the fields marked "version 2" need 2.
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
    /// Version 2: the engineers who may run sessions, with their skills, hours and time off.
    /// An engineer that bookings name but this list omits is always available, with no skills.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engineers: Vec<Engineer>,
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
    /// Version 2: per placed booking run by an engineer other than its own (default 10).
    pub engineer_change: i64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { unresolved: 1000, series_split: 20, shift_step: 2, room_change: 1, engineer_change: 10 }
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

/// Version 2: an engineer, what they can do, and when they work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Engineer {
    /// Unique among the engineers; bookings name engineers by it.
    pub id: String,
    /// What they can do (`mixing`, `tracking`, ...).
    #[serde(default)]
    pub skills: Vec<String>,
    /// Their working hours, `[start, end)`, expanded over the month; `None` (omitted): always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<Vec<Interval>>,
    /// Their time off, `[start, end)`.
    #[serde(default)]
    pub away: Vec<Interval>,
}

impl Engineer {
    /// Whether the engineer works every minute of `[start, end)` and is away at none of it:
    /// a booking of theirs that fails this is affected.
    pub fn works_all_of(&self, start: Minute, end: Minute) -> bool {
        !self.is_away_during(start, end) && self.available.as_ref().is_none_or(|open| covers(open, start, end))
    }

    /// Rule 8: `[start, end)` lies inside one interval of `available` and overlaps none of `away`.
    pub fn can_take(&self, start: Minute, end: Minute) -> bool {
        !self.is_away_during(start, end)
            && self.available.as_ref().is_none_or(|open| open.iter().any(|&[s, e]| s <= start && end <= e))
    }

    /// Whether the engineer is away at any minute of `[start, end)`.
    pub fn is_away_during(&self, start: Minute, end: Minute) -> bool {
        self.away.iter().any(|&[s, e]| s < end && start < e)
    }

    /// Whether the engineer can do everything `skills` names (rule 7).
    pub fn has_skills(&self, skills: &[String]) -> bool {
        skills.iter().all(|k| self.skills.contains(k))
    }
}

/// Whether the union of `intervals` covers every minute of `[start, end)`.
fn covers(intervals: &[Interval], start: Minute, end: Minute) -> bool {
    let mut sorted: Vec<Interval> = intervals.iter().copied().filter(|&[s, e]| s < end && start < e).collect();
    sorted.sort_unstable();
    let mut reached = start;
    for [s, e] in sorted {
        if s > reached {
            return false;
        }
        reached = reached.max(e);
        if reached >= end {
            return true;
        }
    }
    reached >= end
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
    /// Version 2: what any engineer of this session must be able to do (rule 7).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engineer_skills: Vec<String>,
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
    /// Version 2: the engineer who runs it there (rule 7), or null when the booking has none.
    /// Read as absent (from a version 1 solution), it means the booking's own engineer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engineer: Option<String>,
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
    /// Whether a booking is affected: its room is offline at some minute of it, or (version 2)
    /// its engineer is away at some minute of it or does not work every minute of it.
    /// A booking in an unknown room is not affected ([`Instance::check`] rejects those).
    pub fn is_affected(&self, booking: &Booking) -> bool {
        let Some(room) = self.rooms.iter().find(|room| room.id == booking.room) else { return false };
        room.is_offline_during(booking.start, booking.end)
            || booking
                .engineer
                .as_deref()
                .and_then(|id| self.engineers.iter().find(|g| g.id == id))
                .is_some_and(|g| !g.works_all_of(booking.start, booking.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_hours_cover_by_union_and_rule_8_needs_one_interval() {
        let g = Engineer { id: "g".into(), skills: vec![], available: Some(vec![[720, 1200], [540, 720]]), away: vec![[1000, 1100]] };
        assert!(g.works_all_of(600, 800), "two touching intervals cover the booking");
        assert!(!g.can_take(600, 800), "but rule 8 wants one interval");
        assert!(g.can_take(540, 720));
        assert!(!g.works_all_of(500, 600), "not at work at 500");
        assert!(!g.works_all_of(990, 1010) && !g.can_take(990, 1010), "away from 1000");
        assert!(g.can_take(1100, 1200));
        let always = Engineer { id: "h".into(), skills: vec!["mixing".into()], available: None, away: vec![] };
        assert!(always.works_all_of(-5, 50_000) && always.can_take(0, 10));
        assert!(always.has_skills(&["mixing".into()]) && !always.has_skills(&["mixing".into(), "tracking".into()]));
    }
}
