//! A plan for one part: which candidate, if any, each of its bookings takes, with the exact
//! integer cost of that choice. Both the greedy and the ILP produce plans, and plans are compared
//! only through [`plan_cost`], so "better" means the REFLOW.md cost everywhere.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::candidates::{Candidate, Problem, Resource};
use crate::instance::Minute;
use crate::split::Part;

/// A choice for every booking of a part, aligned with [`Part::affected`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// A candidate index per booking, or `None` for unresolved.
    pub chosen: Vec<Option<usize>>,
    /// [`plan_cost`] of `chosen`.
    pub cost: i64,
}

impl Plan {
    pub fn new(problem: &Problem, chosen: Vec<Option<usize>>) -> Plan {
        let cost = plan_cost(problem, &chosen);
        Plan { chosen, cost }
    }
}

/// The part's share of the REFLOW.md cost.
pub(crate) fn plan_cost(problem: &Problem, chosen: &[Option<usize>]) -> i64 {
    let w = &problem.weights;
    let mut cost = 0;
    let mut series_rooms: HashMap<u32, HashSet<u32>> = HashMap::new();
    for choice in chosen {
        match choice {
            None => cost += w.unresolved,
            Some(c) => {
                let c = &problem.candidates[*c];
                cost += c.cost;
                if let Some(s) = problem.affected[c.affected as usize].series {
                    series_rooms.entry(s).or_default().insert(c.room);
                }
            }
        }
    }
    cost + w.series_split * series_rooms.values().map(|rooms| rooms.len() as i64 - 1).sum::<i64>()
}

/// What placed candidates hold, to test another candidate against them (rules 4 and 5).
#[derive(Debug, Default)]
pub(crate) struct Occupancy {
    held: HashMap<Resource, Vec<(Minute, Minute)>>,
}

impl Occupancy {
    pub fn is_free(&self, problem: &Problem, c: &Candidate) -> bool {
        problem.occupies(c).all(|(r, s, e)| {
            self.held.get(&r).is_none_or(|held| held.iter().all(|&(hs, he)| e <= hs || he <= s))
        })
    }

    pub fn hold(&mut self, problem: &Problem, c: &Candidate) {
        for (r, s, e) in problem.occupies(c) {
            self.held.entry(r).or_default().push((s, e));
        }
    }
}

/// Whether the chosen candidates are pairwise compatible; a guard on answers read back from the ILP.
pub(crate) fn is_conflict_free(problem: &Problem, chosen: &[Option<usize>]) -> bool {
    let mut occupancy = Occupancy::default();
    for c in chosen.iter().flatten() {
        let c = &problem.candidates[*c];
        if !occupancy.is_free(problem, c) {
            return false;
        }
        occupancy.hold(problem, c);
    }
    true
}

/// A lower bound on the part's cost: each booking alone at its cheapest, plus what each series
/// must pay on top. A series whose occurrences have no room in common needs two rooms; `k`
/// occurrences with pairwise disjoint rooms need `k`. Each room beyond the first costs a split,
/// unless an occurrence is left unresolved instead, which costs more than its cheapest placement.
pub(crate) fn trivial_bound(problem: &Problem, part: &Part) -> i64 {
    let w = &problem.weights;
    let cheapest = |a: u32| problem.candidates_of(a).map(|c| problem.candidates[c].cost).min();
    let alone: i64 = part.affected.iter().map(|&a| cheapest(a).unwrap_or(i64::MAX).min(w.unresolved)).sum();
    // Per series: rooms common to all occurrences (`None`: any room), rooms of a disjoint packing
    // and its size, and the least that leaving one occurrence unresolved costs beyond its cheapest
    // placement. A booking whose placements were capped may go to rooms it does not list, so it
    // narrows neither the common rooms nor joins the packing.
    let mut series: BTreeMap<u32, SeriesRooms> = BTreeMap::new();
    for &a in &part.affected {
        let Some(s) = problem.affected[a as usize].series else { continue };
        let complete = problem.affected[a as usize].floor.is_none();
        let rooms: HashSet<u32> = problem.candidates_of(a).map(|c| problem.candidates[c].room).collect();
        let giving_up = (w.unresolved - cheapest(a).unwrap_or(w.unresolved)).max(0);
        let entry = series.entry(s).or_insert_with(|| (None, HashSet::new(), 0, giving_up));
        if complete {
            match &mut entry.0 {
                Some(common) => common.retain(|r| rooms.contains(r)),
                None => entry.0 = Some(rooms.clone()),
            }
            if entry.1.is_disjoint(&rooms) {
                entry.1.extend(rooms);
                entry.2 += 1;
            }
        }
        entry.3 = entry.3.min(giving_up);
    }
    let forced: i64 = series
        .values()
        .map(|(common, _, packed, least)| {
            let rooms_needed = (*packed).max(if common.as_ref().is_some_and(HashSet::is_empty) { 2 } else { 1 });
            (rooms_needed - 1) * w.series_split.min(*least)
        })
        .sum();
    alone + forced
}

/// Per series: the rooms common to all occurrences (`None`: any room), the rooms of a disjoint
/// packing, its size, and the least that leaving one occurrence unresolved costs.
type SeriesRooms = (Option<HashSet<u32>>, HashSet<u32>, i64, i64);

