//! An independent judge of a solution: rules 1-8 of REFLOW.md, the bookkeeping (every affected
//! booking exactly once, counts) and the cost. It shares no code with the solver's candidate
//! generation on purpose, so that a bug there cannot hide itself here.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::instance::{Assignment, Booking, Engineer, Instance, Room, Solution};

/// One way a solution breaks the contract. The `Display` text names the booking and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// An assignment or unresolved entry names a booking the instance does not have.
    UnknownBooking(String),
    /// A booking that is not affected appears in the solution.
    NotAffected(String),
    /// A booking appears more than once across assignments and unresolved bookings.
    Duplicate(String),
    /// An affected booking appears nowhere.
    Missing(String),
    /// An assignment names a room the instance does not have.
    UnknownRoom {
        /// The booking.
        booking: String,
        /// The room it names.
        room: String,
    },
    /// A placement's rule is broken: which rule and how, in words.
    Rule {
        /// The booking.
        booking: String,
        /// 1 to 8, as numbered in REFLOW.md.
        rule: u8,
        /// What is wrong.
        detail: String,
    },
    /// `moved` or `unresolved` does not match the lists.
    Counts {
        /// What the solution claims, as (moved, unresolved).
        claimed: (usize, usize),
        /// What the lists hold.
        actual: (usize, usize),
    },
    /// `cost` does not match the recomputed cost.
    Cost {
        /// What the solution claims.
        claimed: i64,
        /// What [`cost`] computes.
        actual: i64,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::UnknownBooking(id) => write!(f, "{id}: no such booking in the instance"),
            Violation::NotAffected(id) => write!(f, "{id}: not affected, so it must not move"),
            Violation::Duplicate(id) => write!(f, "{id}: appears more than once"),
            Violation::Missing(id) => write!(f, "{id}: affected but neither placed nor unresolved"),
            Violation::UnknownRoom { booking, room } => write!(f, "{booking}: no such room {room}"),
            Violation::Rule { booking, rule, detail } => write!(f, "{booking}: rule {rule}: {detail}"),
            Violation::Counts { claimed, actual } => write!(
                f,
                "counts: claimed moved {} unresolved {}, lists hold {} and {}",
                claimed.0, claimed.1, actual.0, actual.1
            ),
            Violation::Cost { claimed, actual } => write!(f, "cost: claimed {claimed}, recomputed {actual}"),
        }
    }
}

/// The REFLOW.md cost of a solution's assignments, recomputed from scratch.
///
/// Assignments naming unknown or unaffected bookings are ignored here; [`validate`] reports them.
/// Shifts off the grid count the whole steps they span (also reported by [`validate`]).
pub fn cost(instance: &Instance, solution: &Solution) -> i64 {
    let bookings: HashMap<&str, &Booking> = instance.bookings.iter().map(|b| (b.id.as_str(), b)).collect();
    let is_affected = affected_test(instance);
    let affected = instance.bookings.iter().filter(|b| is_affected(b)).count() as i64;
    let w = &instance.weights;
    let grid = instance.grid_minutes.max(1);
    let mut placed = HashSet::new();
    let mut series_rooms: HashMap<&str, HashSet<&str>> = HashMap::new();
    let (mut shift_steps, mut room_changes, mut engineer_changes) = (0, 0, 0);
    for a in &solution.assignments {
        let Some(b) = bookings.get(a.booking.as_str()) else { continue };
        if !is_affected(b) || !placed.insert(b.id.as_str()) {
            continue;
        }
        shift_steps += (a.start - b.start).abs() / grid;
        room_changes += i64::from(a.room != b.room);
        engineer_changes += i64::from(engineer_of(a, b) != b.engineer.as_deref());
        if let Some(series) = &b.series {
            series_rooms.entry(series.as_str()).or_default().insert(a.room.as_str());
        }
    }
    let splits: i64 = series_rooms.values().map(|rooms| rooms.len() as i64 - 1).sum();
    let unresolved = affected - placed.len() as i64;
    w.unresolved * unresolved
        + w.series_split * splits
        + w.shift_step * shift_steps
        + w.room_change * room_changes
        + w.engineer_change * engineer_changes
}

/// The engineer an assignment names; absent (a version 1 solution) means the booking's own.
fn engineer_of<'a>(a: &'a Assignment, b: &'a Booking) -> Option<&'a str> {
    a.engineer.as_deref().or(b.engineer.as_deref())
}

/// [`Instance::is_affected`] with the rooms and engineers looked up by id once, not scanned per
/// booking: a chain of a thousand rooms has over a hundred thousand bookings.
fn affected_test(instance: &Instance) -> impl Fn(&Booking) -> bool + '_ {
    let rooms: HashMap<&str, &Room> = instance.rooms.iter().map(|r| (r.id.as_str(), r)).collect();
    let engineers: HashMap<&str, &Engineer> = instance.engineers.iter().map(|g| (g.id.as_str(), g)).collect();
    move |b: &Booking| {
        let Some(room) = rooms.get(b.room.as_str()) else { return false };
        room.is_offline_during(b.start, b.end)
            || b.engineer.as_deref().and_then(|g| engineers.get(g)).is_some_and(|g| !g.works_all_of(b.start, b.end))
    }
}

/// Checks a solution against every rule of REFLOW.md; all violations found are returned.
pub fn validate(instance: &Instance, solution: &Solution) -> Result<(), Vec<Violation>> {
    let mut violations = Vec::new();
    let is_affected = affected_test(instance);
    let rooms: HashMap<&str, &Room> = instance.rooms.iter().map(|r| (r.id.as_str(), r)).collect();
    let bookings: HashMap<&str, &Booking> = instance.bookings.iter().map(|b| (b.id.as_str(), b)).collect();
    let engineers: HashMap<&str, &Engineer> = instance.engineers.iter().map(|g| (g.id.as_str(), g)).collect();

    // Bookkeeping: each affected booking exactly once, nothing else.
    let mut seen = HashSet::new();
    let named = solution.assignments.iter().map(|a| &a.booking);
    for id in named.chain(solution.unresolved_bookings.iter().map(|u| &u.booking)) {
        match bookings.get(id.as_str()) {
            None => violations.push(Violation::UnknownBooking(id.clone())),
            Some(b) if !is_affected(b) => violations.push(Violation::NotAffected(id.clone())),
            Some(_) if !seen.insert(id.as_str()) => violations.push(Violation::Duplicate(id.clone())),
            Some(_) => {}
        }
    }
    for b in instance.bookings.iter().filter(|b| is_affected(b)) {
        if !seen.contains(b.id.as_str()) {
            violations.push(Violation::Missing(b.id.clone()));
        }
    }

    // Rules 1-3 and 6 concern one placement alone.
    let mut placed = Vec::new();
    for a in &solution.assignments {
        let Some(&b) = bookings.get(a.booking.as_str()) else { continue };
        let Some(&room) = rooms.get(a.room.as_str()) else {
            violations.push(Violation::UnknownRoom { booking: a.booking.clone(), room: a.room.clone() });
            continue;
        };
        let mut rule = |rule: u8, detail: String| {
            violations.push(Violation::Rule { booking: b.id.clone(), rule, detail });
        };
        if a.end - a.start != b.end - b.start {
            rule(1, format!("lasts {} minutes, not {}", a.end - a.start, b.end - b.start));
        }
        let shift = a.start - b.start;
        if shift % instance.grid_minutes.max(1) != 0 {
            rule(1, format!("shift of {shift} minutes is off the {}-minute grid", instance.grid_minutes));
        }
        if shift.abs() > instance.max_shift_minutes {
            rule(1, format!("shift of {shift} minutes exceeds {}", instance.max_shift_minutes));
        }
        if a.start.div_euclid(crate::DAY) != b.day() {
            rule(1, "starts on another day".to_string());
        }
        if room.capacity < b.party_size {
            rule(2, format!("party of {} exceeds capacity {} of {}", b.party_size, room.capacity, room.id));
        }
        if let Some(f) = b.requires.iter().find(|f| !room.features.contains(f)) {
            rule(2, format!("{} lacks required feature {f}", room.id));
        }
        if !room.open.iter().any(|&[s, e]| s <= a.start && a.end <= e) {
            rule(3, format!("{} is not open for all of [{}, {})", room.id, a.start, a.end));
        }
        if room.is_offline_during(a.start, a.end) {
            rule(3, format!("{} is offline during [{}, {})", room.id, a.start, a.end));
        }
        if !b.movable {
            rule(6, "pinned bookings are never placed".to_string());
        }
        let engineer = engineer_of(a, b);
        if engineer != b.engineer.as_deref() {
            match (b.engineer.as_deref(), engineer.and_then(|g| engineers.get(g))) {
                (None, _) => rule(7, format!("has no engineer, so none may be named ({})", engineer.unwrap_or_default())),
                (Some(_), None) => rule(7, format!("{} is not in the engineers list", engineer.unwrap_or_default())),
                (Some(_), Some(g)) => {
                    if let Some(k) = b.engineer_skills.iter().find(|k| !g.skills.contains(k)) {
                        rule(7, format!("engineer {} lacks required skill {k}", g.id));
                    }
                }
            }
        }
        if let Some(g) = engineer.and_then(|g| engineers.get(g)) {
            if g.is_away_during(a.start, a.end) {
                rule(8, format!("engineer {} is away during [{}, {})", g.id, a.start, a.end));
            }
            if g.available.as_ref().is_some_and(|open| !open.iter().any(|&[s, e]| s <= a.start && a.end <= e)) {
                rule(8, format!("engineer {} does not work all of [{}, {}) in one stretch", g.id, a.start, a.end));
            }
        }
        placed.push((b, engineer, a.room.as_str(), a.start, a.end));
    }

    // Rules 4 and 5: against fixed bookings, and against each other.
    let buffer = instance.buffer_minutes;
    let fixed = instance.bookings.iter().filter(|b| !is_affected(b));
    let occupants: Vec<(&Booking, Option<&str>, &str, i64, i64)> =
        fixed.map(|b| (b, b.engineer.as_deref(), b.room.as_str(), b.start, b.end)).chain(placed.iter().copied()).collect();
    for (i, &(b, engineer, room, start, end)) in placed.iter().enumerate() {
        let me = occupants.len() - placed.len() + i;
        for (j, &(other, other_engineer, other_room, s, e)) in occupants.iter().enumerate() {
            if j == me {
                continue;
            }
            // Each pair of placed bookings is reported once, by the earlier one.
            if j > me {
                break;
            }
            let what = if j < occupants.len() - placed.len() { "fixed" } else { "placed" };
            if room == other_room && start < e + buffer && s < end + buffer {
                let detail = format!("{room} is taken by {what} booking {} (buffer {buffer})", other.id);
                violations.push(Violation::Rule { booking: b.id.clone(), rule: 4, detail });
            }
            if start < e && s < end {
                if b.client == other.client {
                    let detail = format!("client {} is at {what} booking {}", b.client, other.id);
                    violations.push(Violation::Rule { booking: b.id.clone(), rule: 5, detail });
                }
                if engineer.is_some() && engineer == other_engineer {
                    let eng = engineer.unwrap_or_default();
                    let detail = format!("engineer {eng} is at {what} booking {}", other.id);
                    violations.push(Violation::Rule { booking: b.id.clone(), rule: 5, detail });
                }
            }
        }
    }

    let actual = (solution.assignments.len(), solution.unresolved_bookings.len());
    if (solution.moved, solution.unresolved) != actual {
        violations.push(Violation::Counts { claimed: (solution.moved, solution.unresolved), actual });
    }
    let actual = cost(instance, solution);
    if solution.cost != actual {
        violations.push(Violation::Cost { claimed: solution.cost, actual });
    }
    if violations.is_empty() { Ok(()) } else { Err(violations) }
}
