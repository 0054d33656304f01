//! Words for unresolved bookings: which rule stopped each one, phrased for a studio manager who
//! has to act on it (free a room, call a client, find another engineer). The wording depends only
//! on the instance and the final plan, so it is as deterministic as the plan.

use std::collections::BTreeSet;

use crate::candidates::{Blocked, Problem, RoomState};
use crate::instance::{Booking, Instance};

/// The longest list a reason spells out before it says "and N more".
const LISTED: usize = 5;

/// The reason an affected booking is unresolved. `chosen` is the final choice of every affected
/// booking (by index into [`Problem::affected`]), so contention can name who took the places.
pub(crate) fn reason(instance: &Instance, problem: &Problem, affected: usize, chosen: &[Option<usize>]) -> String {
    let a = &problem.affected[affected];
    let b = &instance.bookings[a.booking];
    let window = format!("within ±{} minutes on that day", instance.max_shift_minutes);
    match &a.blocked {
        Some(Blocked::Pinned) => {
            "pinned: it cannot be moved (locked by staff, already started or inside the notice period)".to_string()
        }
        Some(Blocked::NoCompatibleRoom) => format!("no room with {}", needs(b)),
        Some(Blocked::RoomsUnavailable(rooms)) => rooms_unavailable(instance, b, rooms, &window),
        Some(Blocked::PeopleBusy { client, engineer }) if instance.engineers.is_empty() || b.engineer.is_none() => {
            people_busy(b, *client, *engineer, &window)
        }
        Some(Blocked::PeopleBusy { client, engineer }) => staff_busy(instance, b, *client, *engineer, &window),
        None => contention(instance, problem, affected, chosen, &window),
    }
}

/// What the booking needs of a room (rule 2), as the reasons spell it.
fn needs(b: &Booking) -> String {
    if b.requires.is_empty() {
        format!("capacity >= {}", b.party_size)
    } else {
        format!("capacity >= {} and features [{}]", b.party_size, b.requires.join(", "))
    }
}

/// Every compatible room is offline, closed or taken at every allowed start. When they all fail
/// the same way, one sentence says so; otherwise the rooms are grouped by what stopped them.
fn rooms_unavailable(instance: &Instance, b: &Booking, rooms: &[(u32, RoomState)], window: &str) -> String {
    let words = |state: RoomState| match state {
        RoomState::Offline => "offline then".to_string(),
        RoomState::Closed => format!("closed at every start {window}"),
        RoomState::Busy => format!("taken by other bookings at every start {window}"),
    };
    let named = |state: RoomState| {
        let names = rooms.iter().filter(|&&(_, s)| s == state).map(|&(r, _)| instance.rooms[r as usize].id.clone());
        list(names.collect::<Vec<_>>().into_iter())
    };
    let first = rooms.first().map(|&(_, s)| s);
    match first {
        Some(state) if rooms.iter().all(|&(_, s)| s == state) => {
            if rooms.len() == 1 {
                format!("the only room with {} is {}, which is {}", needs(b), named(state), words(state))
            } else {
                format!("the only rooms with {} are {}, which are all {}", needs(b), named(state), words(state))
            }
        }
        _ => {
            let mut groups = Vec::new();
            for (state, label) in
                [(RoomState::Offline, "offline"), (RoomState::Closed, "closed"), (RoomState::Busy, "taken by other bookings")]
            {
                if rooms.iter().any(|&(_, s)| s == state) {
                    groups.push(format!("{label}: {}", named(state)));
                }
            }
            format!("every room with {} is unavailable at every start {window} ({})", needs(b), groups.join("; "))
        }
    }
}

fn people_busy(b: &Booking, client: bool, engineer: bool, window: &str) -> String {
    let eng = b.engineer.as_deref().unwrap_or("-");
    let when = format!("whenever a suitable room is free {window}");
    match (client, engineer) {
        (true, false) => format!("client {} has another booking {when}", b.client),
        (false, true) => format!("engineer {eng} has another booking {when}"),
        (true, true) => format!("client {} and engineer {eng} both have other bookings {when}", b.client),
        (false, false) => format!("client {} or engineer {eng} has another booking {when}", b.client),
    }
}

/// Version 2, a booking with an engineer when engineers are listed: say what stops its own engineer
/// (away, off work or busy) and name the others who could run it, or the skill nobody else has.
fn staff_busy(instance: &Instance, b: &Booking, client: bool, engineer: bool, window: &str) -> String {
    let eng = b.engineer.as_deref().unwrap_or("-");
    let own = instance.engineers.iter().find(|g| g.id == eng);
    let state = match own {
        Some(g) if g.is_away_during(b.start, b.end) => format!("engineer {eng} is away"),
        Some(g) if !g.works_all_of(b.start, b.end) => format!("engineer {eng} is not at work then"),
        _ => format!("engineer {eng} is busy"),
    };
    let skills = if b.engineer_skills.is_empty() { String::new() } else { format!(" with [{}]", b.engineer_skills.join(", ")) };
    let others: Vec<String> =
        instance.engineers.iter().filter(|g| g.id != eng && g.has_skills(&b.engineer_skills)).map(|g| g.id.clone()).collect();
    let when = format!("when a suitable room is free {window}");
    let engineers = if others.is_empty() {
        if b.engineer_skills.is_empty() {
            format!("{state} and there is no other engineer")
        } else {
            format!("{state} and no other engineer has the skills [{}]", b.engineer_skills.join(", "))
        }
    } else {
        format!("{state} and no other engineer{skills} ({}) is free {when}", list(others.into_iter()))
    };
    match (client, engineer) {
        (true, false) => format!("client {} has another booking {when}", b.client),
        (false, true) => engineers,
        (true, true) => format!("client {} has another booking {when}; {engineers}", b.client),
        (false, false) => format!("client {} is busy or no engineer{skills} is free at each start {when}", b.client),
    }
}

/// A booking that had places but did not get one: name the moved bookings that took them.
fn contention(instance: &Instance, problem: &Problem, affected: usize, chosen: &[Option<usize>], window: &str) -> String {
    let candidates = problem.candidates_of(affected as u32);
    let rooms: BTreeSet<u32> = candidates.clone().map(|c| problem.candidates[c].room).collect();
    let mut takers = BTreeSet::new();
    let mut some_free = false;
    for c in candidates.clone() {
        let mine = &problem.candidates[c];
        let mut free = true;
        for (other, choice) in chosen.iter().enumerate() {
            if let Some(theirs) = choice
                && problem.clash(mine, &problem.candidates[*theirs])
            {
                takers.insert(problem.affected[other].booking);
                free = false;
            }
        }
        some_free |= free;
    }
    if some_free {
        return format!(
            "placing it costs more than leaving it unresolved (weight {}) under these weights",
            problem.weights.unresolved
        );
    }
    let whom = if takers.len() == 1 { "another moved booking" } else { "other moved bookings" };
    let rooms = list(rooms.iter().map(|&r| instance.rooms[r as usize].id.clone()));
    let takers = list(takers.iter().map(|&t| instance.bookings[t].id.clone()));
    // A place is a room and a start: the same place with another engineer is not another place.
    let places: BTreeSet<(u32, i64)> = candidates.map(|c| (problem.candidates[c].room, problem.candidates[c].start)).collect();
    if places.len() == 1 {
        format!("the only place it could go (in {rooms}, {window}) went to {whom}: {takers}")
    } else {
        format!("all {} places it could go (in {rooms}, {window}) went to {whom}: {takers}", places.len())
    }
}

/// `a, b, c` or `a, b, c, d, e and 3 more`.
fn list(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.take(LISTED).collect();
    if total > LISTED {
        let last = format!("{} and {} more", shown.pop().unwrap_or_default(), total - LISTED);
        shown.push(last);
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::list;

    #[test]
    fn long_lists_are_cut() {
        let names = |n: usize| (0..n).map(|i| format!("r{i}")).collect::<Vec<_>>().into_iter();
        assert_eq!(list(names(2)), "r0, r1");
        assert_eq!(list(names(7)), "r0, r1, r2, r3, r4 and 2 more");
    }
}
