//! Words for unresolved bookings: which rule stopped each one, phrased for a studio manager who
//! has to act on it (free a room, call a client, find another engineer). The wording depends only
//! on the instance and the final plan, so it is as deterministic as the plan.

use std::collections::BTreeSet;

use crate::candidates::{Blocked, Problem};
use crate::instance::{Booking, Instance};

/// The longest list a reason spells out before it says "and N more".
const LISTED: usize = 5;

/// The reason an affected booking is unresolved. `chosen` is the final choice of every affected
/// booking (by index into [`Problem::affected`]), so contention can name who took the places.
pub(crate) fn reason(instance: &Instance, problem: &Problem, affected: usize, chosen: &[Option<usize>]) -> String {
    let a = &problem.affected[affected];
    let b = &instance.bookings[a.booking];
    let room_name = |r: &u32| instance.rooms[*r as usize].id.clone();
    let window = format!("within ±{} minutes on that day", instance.max_shift_minutes);
    match &a.blocked {
        Some(Blocked::Pinned) => {
            "pinned: it cannot be moved (locked by staff, already started or inside the notice period)".to_string()
        }
        Some(Blocked::NoCompatibleRoom) if b.requires.is_empty() => {
            format!("no room with capacity >= {}", b.party_size)
        }
        Some(Blocked::NoCompatibleRoom) => {
            format!("no room with capacity >= {} and features [{}]", b.party_size, b.requires.join(", "))
        }
        Some(Blocked::Closed(rooms)) => format!(
            "every compatible room ({}) is closed or offline at every start {window}",
            list(rooms.iter().map(room_name))
        ),
        Some(Blocked::RoomsBusy(rooms)) => format!(
            "every compatible room ({}) is busy or closed {window}",
            list(rooms.iter().map(room_name))
        ),
        Some(Blocked::PeopleBusy { client, engineer }) => people_busy(b, *client, *engineer),
        None => contention(instance, problem, affected, chosen),
    }
}

fn people_busy(b: &Booking, client: bool, engineer: bool) -> String {
    let eng = b.engineer.as_deref().unwrap_or("-");
    match (client, engineer) {
        (true, false) => format!("client {} is busy at every free time", b.client),
        (false, true) => format!("engineer {eng} is busy at every free time"),
        (true, true) => format!("client {} and engineer {eng} are busy at every free time", b.client),
        (false, false) => format!("client {} and engineer {eng} are never free together at a free time", b.client),
    }
}

/// A booking that had places but did not get one: name the moved bookings that took them.
fn contention(instance: &Instance, problem: &Problem, affected: usize, chosen: &[Option<usize>]) -> String {
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
        return "leaving it unresolved costs less than its cheapest free placement under these weights".to_string();
    }
    format!(
        "its {} possible placements (in {} within ±{} minutes) were all taken by other moved bookings: {}",
        candidates.len(),
        list(rooms.iter().map(|&r| instance.rooms[r as usize].id.clone())),
        instance.max_shift_minutes,
        list(takers.iter().map(|&t| instance.bookings[t].id.clone()))
    )
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
