//! The greedy incumbent: a fast, always-available plan for a part, so that a time limit, a cancel
//! or a failing ILP still leaves a valid answer. It is not optimal and does not try to be.

use crate::candidates::Problem;
use crate::plan::{Occupancy, Plan};
use crate::split::Part;

/// Places the most constrained bookings first (fewest candidates), each at its cheapest free
/// candidate, where a room its series does not use yet costs the series-split weight extra.
/// The order counts candidates before pruning: a pruned booking is not more constrained (it has a
/// free placement), and with that order the greedy picks what it would without pruning.
pub(crate) fn greedy(problem: &Problem, part: &Part) -> Plan {
    let mut order: Vec<usize> = (0..part.affected.len()).collect();
    order.sort_by_key(|&i| (problem.affected[part.affected[i] as usize].options, i));
    place(problem, part, vec![None; part.affected.len()], &order)
}

/// Places each unresolved booking of a plan that still has a free candidate cheaper than leaving
/// it unresolved. An ILP plan cut short by a limit may leave such gaps; the greedy never does.
pub(crate) fn complete(problem: &Problem, part: &Part, plan: Plan) -> Plan {
    if plan.chosen.iter().all(Option::is_some) {
        return plan;
    }
    let order: Vec<usize> = (0..part.affected.len()).collect();
    let completed = place(problem, part, plan.chosen.clone(), &order);
    // Each placement saves more than it costs, so this never gets worse; the guard keeps it obvious.
    if completed.cost < plan.cost { completed } else { plan }
}

/// Visits the part's bookings in `order` and gives each unplaced one its best free candidate.
fn place(problem: &Problem, part: &Part, mut chosen: Vec<Option<usize>>, order: &[usize]) -> Plan {
    let mut occupancy = Occupancy::default();
    let mut series_rooms: Vec<Vec<u32>> = vec![Vec::new(); problem.series_count];
    let take = |c: usize, occupancy: &mut Occupancy, series_rooms: &mut Vec<Vec<u32>>| {
        let cand = &problem.candidates[c];
        occupancy.hold(problem, cand);
        if let Some(s) = problem.affected[cand.affected as usize].series
            && !series_rooms[s as usize].contains(&cand.room)
        {
            series_rooms[s as usize].push(cand.room);
        }
    };
    for c in chosen.iter().flatten() {
        take(*c, &mut occupancy, &mut series_rooms);
    }
    for &i in order {
        if chosen[i].is_some() {
            continue;
        }
        let a = part.affected[i];
        let series = problem.affected[a as usize].series;
        let score = |c: usize| {
            let cand = &problem.candidates[c];
            let split = series.is_some_and(|s| {
                let used = &series_rooms[s as usize];
                !used.is_empty() && !used.contains(&cand.room)
            });
            cand.cost + if split { problem.weights.series_split } else { 0 }
        };
        let best = problem
            .candidates_of(a)
            .filter(|&c| occupancy.is_free(problem, &problem.candidates[c]))
            .min_by_key(|&c| (score(c), c));
        // Placing must beat leaving it unresolved; with the default weights it always does.
        if let Some(c) = best.filter(|&c| score(c) < problem.weights.unresolved) {
            take(c, &mut occupancy, &mut series_rooms);
            chosen[i] = Some(c);
        }
    }
    Plan::new(problem, chosen)
}
