//! Local search on a part's plan, cheap and deterministic: move a whole series into one room, and
//! move single bookings to a cheaper free placement. The greedy places series occurrences one at
//! a time, so in a big chain it splits many series over rooms that could have held them all; these
//! moves undo that. Every move is checked against the rest of the plan and accepted only when the
//! plan's exact cost goes down, so the result is never worse than the plan it started from.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::candidates::{Problem, Resource};
use crate::instance::Minute;
use crate::plan::Plan;
use crate::split::Part;

/// How many sweeps over the part; each later one finds far less than the one before.
const SWEEPS: usize = 3;

/// What a part's placed bookings hold, with who holds it (a booking's index in the part).
pub(crate) struct Holdings {
    held: HashMap<Resource, Vec<(Minute, Minute, usize)>>,
}

impl Holdings {
    pub fn new(problem: &Problem, chosen: &[Option<usize>]) -> Holdings {
        let mut holdings = Holdings { held: HashMap::new() };
        for (i, c) in chosen.iter().enumerate() {
            if let Some(c) = c {
                holdings.hold(problem, *c, i);
            }
        }
        holdings
    }

    fn hold(&mut self, problem: &Problem, c: usize, owner: usize) {
        for (r, s, e) in problem.occupies(&problem.candidates[c]) {
            self.held.entry(r).or_default().push((s, e, owner));
        }
    }

    fn release(&mut self, problem: &Problem, c: usize, owner: usize) {
        for (r, _, _) in problem.occupies(&problem.candidates[c]) {
            if let Some(list) = self.held.get_mut(&r) {
                list.retain(|&(_, _, o)| o != owner);
            }
        }
    }

    /// Whether candidate `c` clashes with nothing held, except by the bookings `ignoring` allows.
    pub fn is_free(&self, problem: &Problem, c: usize, ignoring: impl Fn(usize) -> bool) -> bool {
        problem.occupies(&problem.candidates[c]).all(|(r, s, e)| {
            self.held.get(&r).is_none_or(|list| list.iter().all(|&(hs, he, o)| e <= hs || he <= s || ignoring(o)))
        })
    }
}

/// Improves `plan` with series and single-booking moves; never returns a dearer plan.
pub(crate) fn improve(problem: &Problem, part: &Part, plan: Plan) -> Plan {
    let w = &problem.weights;
    let mut chosen = plan.chosen.clone();
    let mut holdings = Holdings::new(problem, &chosen);
    let series_of = |i: usize| problem.affected[part.affected[i] as usize].series;
    let mut members: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for i in 0..chosen.len() {
        if let Some(s) = series_of(i) {
            members.entry(s).or_default().push(i);
        }
    }
    // Rooms each series' placed occurrences use, with how many use each.
    let rooms_of = |chosen: &[Option<usize>], list: &[usize]| -> BTreeMap<u32, usize> {
        let mut rooms = BTreeMap::new();
        for &i in list {
            if let Some(c) = chosen[i] {
                *rooms.entry(problem.candidates[c].room).or_insert(0) += 1;
            }
        }
        rooms
    };
    let series_cost = |chosen: &[Option<usize>], list: &[usize]| -> i64 {
        let own: i64 = list.iter().map(|&i| chosen[i].map_or(w.unresolved, |c| problem.candidates[c].cost)).sum();
        let rooms = rooms_of(chosen, list).len() as i64;
        own + w.series_split * (rooms - 1).max(0)
    };

    for _ in 0..SWEEPS {
        let mut changed = false;
        // A whole series into one room: each occurrence takes its cheapest free placement there,
        // or keeps its own if it has none.
        for list in members.values() {
            if list.len() < 2 || rooms_of(&chosen, list).len() < 2 {
                continue;
            }
            // Rooms that two occurrences or more could use: only those can save a split.
            let mut listing: BTreeMap<u32, usize> = BTreeMap::new();
            for &i in list {
                let own: BTreeSet<u32> = problem.candidates_of(part.affected[i]).map(|c| problem.candidates[c].room).collect();
                for room in own {
                    *listing.entry(room).or_insert(0) += 1;
                }
            }
            let rooms = listing.into_iter().filter(|&(_, n)| n >= 2).map(|(room, _)| room);
            let before = series_cost(&chosen, list);
            let mut best: Option<(i64, Vec<Option<usize>>)> = None;
            for room in rooms {
                let mut trial = chosen.clone();
                let mut picked: Vec<usize> = Vec::new();
                for &i in list {
                    let own = |o: usize| list.contains(&o);
                    let pick = problem
                        .candidates_of(part.affected[i])
                        .filter(|&c| problem.candidates[c].room == room)
                        .find(|&c| {
                            holdings.is_free(problem, c, own)
                                && picked.iter().all(|&p| !problem.clash(&problem.candidates[p], &problem.candidates[c]))
                        });
                    if let Some(c) = pick {
                        trial[i] = Some(c);
                        picked.push(c);
                    } else if let Some(c) = trial[i] {
                        // It stays where it is, which the others must then leave free.
                        if picked.iter().any(|&p| problem.clash(&problem.candidates[p], &problem.candidates[c])) {
                            trial[i] = None;
                        } else {
                            picked.push(c);
                        }
                    }
                }
                let cost = series_cost(&trial, list);
                if cost < before && best.as_ref().is_none_or(|(b, _)| cost < *b) {
                    best = Some((cost, list.iter().map(|&i| trial[i]).collect()));
                }
            }
            if let Some((_, picks)) = best {
                for (&i, pick) in list.iter().zip(picks) {
                    if let Some(c) = chosen[i] {
                        holdings.release(problem, c, i);
                    }
                    chosen[i] = pick;
                }
                for &i in list {
                    if let Some(c) = chosen[i] {
                        holdings.hold(problem, c, i);
                    }
                }
                changed = true;
            }
        }
        // One booking to its cheapest free placement, counting what it does to its series.
        for i in 0..chosen.len() {
            let a = part.affected[i];
            let list = series_of(i).and_then(|s| members.get(&s));
            let cost_with = |chosen: &[Option<usize>], c: Option<usize>| -> i64 {
                let own = c.map_or(w.unresolved, |c| problem.candidates[c].cost);
                match list {
                    Some(list) => {
                        let mut trial: Vec<Option<usize>> = list.iter().map(|&j| chosen[j]).collect();
                        let at = list.iter().position(|&j| j == i).unwrap_or(0);
                        trial[at] = c;
                        let rooms: BTreeSet<u32> = trial.iter().flatten().map(|&c| problem.candidates[c].room).collect();
                        own + w.series_split * (rooms.len() as i64 - 1).max(0)
                    }
                    None => own,
                }
            };
            let current = cost_with(&chosen, chosen[i]);
            let better = problem
                .candidates_of(a)
                .filter(|&c| Some(c) != chosen[i])
                .filter(|&c| holdings.is_free(problem, c, |o| o == i))
                .map(|c| (cost_with(&chosen, Some(c)), c))
                .filter(|&(cost, _)| cost < current)
                .min();
            if let Some((_, c)) = better {
                if let Some(old) = chosen[i] {
                    holdings.release(problem, old, i);
                }
                holdings.hold(problem, c, i);
                chosen[i] = Some(c);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let improved = Plan::new(problem, chosen);
    if improved.cost < plan.cost && crate::plan::is_conflict_free(problem, &improved.chosen) { improved } else { plan }
}
