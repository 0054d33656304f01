//! Local search on a part's plan, cheap and deterministic: move a whole series into one room, and
//! move single bookings to a cheaper free placement. The greedy places series occurrences one at
//! a time, so in a big chain it splits many series over rooms that could have held them all; these
//! moves undo that. An unresolved booking whose places are all held is placed by a short chain of
//! moves when one is found (see [`place_unresolved`]). Every move is checked against the rest of
//! the plan and accepted only when the plan's exact cost goes down, so the result is never worse
//! than the plan it started from.

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

    /// The bookings (indices in the part) whose held placements clash with candidate `c`, ascending.
    fn blockers(&self, problem: &Problem, c: usize) -> Vec<usize> {
        let mut owners: Vec<usize> = problem
            .occupies(&problem.candidates[c])
            .flat_map(|(r, s, e)| {
                self.held.get(&r).into_iter().flatten().filter(move |&&(hs, he, _)| s < he && hs < e).map(|&(_, _, o)| o)
            })
            .collect();
        owners.sort_unstable();
        owners.dedup();
        owners
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

/// Candidates looked at per unresolved booking by [`place_unresolved`], so that a step of a part
/// of hundreds of bookings stays short.
const CHAIN_WORK: usize = 200_000;

/// Places unresolved bookings of `plan` by short chains of moves (ejection chains): a candidate
/// of the unresolved booking whose blockers (at most [`MOST_BLOCKERS`] placed bookings) each move, in turn,
/// to a placement of theirs that is free, or that one more booking holds and leaves the same way,
/// up to [`CHAIN_DEPTH`] bookings further. Candidates are tried cheapest first, and the first
/// chain that lowers the plan's exact cost is taken. A neighbourhood re-solved with a hundred
/// nodes seldom finds such a chain in a part of hundreds of bookings; this search is cheap and
/// exact about each move. Never returns a dearer plan.
pub(crate) fn place_unresolved(problem: &Problem, part: &Part, plan: Plan) -> Plan {
    let waiting: Vec<usize> =
        (0..plan.chosen.len()).filter(|&i| plan.chosen[i].is_none() && !problem.candidates_of(part.affected[i]).is_empty()).collect();
    if waiting.is_empty() {
        return plan;
    }
    let mut best = plan;
    let mut holdings = Holdings::new(problem, &best.chosen);
    for i in waiting {
        let mut work = 0;
        if let Some(moves) = chain(problem, part, &best.chosen, &holdings, i, &mut work) {
            let mut chosen = best.chosen.clone();
            for &(j, c) in &moves {
                chosen[j] = Some(c);
            }
            let trial = Plan::new(problem, chosen);
            // The guard keeps a wrong chain from ever reaching an answer.
            if trial.cost < best.cost && crate::plan::is_conflict_free(problem, &trial.chosen) {
                for &(j, c) in &moves {
                    if let Some(old) = best.chosen[j] {
                        holdings.release(problem, old, j);
                    }
                    holdings.hold(problem, c, j);
                }
                best = trial;
            }
        }
    }
    best
}

/// A chain of moves that places booking `i`: (booking, its new candidate), `i`'s last. `None`
/// when none is found within the work.
fn chain(problem: &Problem, part: &Part, chosen: &[Option<usize>], holdings: &Holdings, i: usize, work: &mut usize) -> Option<Vec<(usize, usize)>> {
    let search = Chains { problem, part, chosen, holdings };
    for c in problem.candidates_of(part.affected[i]) {
        *work += 1;
        if *work > CHAIN_WORK {
            return None;
        }
        let blockers = holdings.blockers(problem, c);
        if blockers.len() > MOST_BLOCKERS {
            continue;
        }
        // Each blocker moves in turn, clear of `c` and of the moves before it.
        let mut moves: Vec<(usize, usize)> = Vec::new();
        let mut moving = blockers.clone();
        for &j in &blockers {
            let mut placed: Vec<usize> = moves.iter().map(|&(_, m)| m).collect();
            placed.push(c);
            match search.relocate(j, &placed, &mut moving, CHAIN_DEPTH, work) {
                Some(chain) => moves.extend(chain),
                None => break,
            }
        }
        if moving.iter().all(|j| moves.iter().any(|&(m, _)| m == *j)) {
            moves.push((i, c));
            return Some(moves);
        }
        if *work > CHAIN_WORK {
            return None;
        }
    }
    None
}

/// The most placed bookings a chain moves out of an unresolved booking's way.
const MOST_BLOCKERS: usize = 3;
/// How many bookings beyond a blocker a chain may push on, one after the other.
const CHAIN_DEPTH: usize = 3;

/// What a chain search reads: the plan and what it holds.
struct Chains<'a> {
    problem: &'a Problem,
    part: &'a Part,
    chosen: &'a [Option<usize>],
    holdings: &'a Holdings,
}

impl Chains<'_> {
    /// Moves booking `j` to another placement of its own, clear of the `placed` candidates and of
    /// everything held except by the bookings `moving` (which leave their places); when that
    /// placement is held by one more booking, that one moves on in turn, up to `depth` more.
    /// Returns the moves, the last pushed first; `moving` gains the bookings pushed on.
    fn relocate(&self, j: usize, placed: &[usize], moving: &mut Vec<usize>, depth: usize, work: &mut usize) -> Option<Vec<(usize, usize)>> {
        let problem = self.problem;
        let clash = |a: usize, b: usize| problem.clash(&problem.candidates[a], &problem.candidates[b]);
        for d in problem.candidates_of(self.part.affected[j]) {
            *work += 1;
            if *work > CHAIN_WORK {
                return None;
            }
            if Some(d) == self.chosen[j] || placed.iter().any(|&p| clash(d, p)) {
                continue;
            }
            let next: Vec<usize> = self.holdings.blockers(problem, d).into_iter().filter(|o| !moving.contains(o)).collect();
            match next[..] {
                [] => return Some(vec![(j, d)]),
                [k] if depth > 0 => {
                    let mut further = placed.to_vec();
                    further.push(d);
                    moving.push(k);
                    if let Some(mut chain) = self.relocate(k, &further, moving, depth - 1, work) {
                        chain.push((j, d));
                        return Some(chain);
                    }
                    moving.pop();
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unresolved_booking_is_placed_by_a_chain_of_two_moves() {
        // Room a (offline) held u (needs the piano), j (needs drums) and k, all at 600-660, none
        // may shift. Only b has the piano; b and c have drums; d has neither. The plan: j in b, k
        // in c, u unresolved: 1 + 1 + 1000 = 1002. No single move places u: b is j's, and j's only
        // other room, c, is k's. The chain k to d, j to c, u to b does: three room changes, 3,
        // the optimum (every booking must leave a).
        let inst: crate::Instance = serde_json::from_str(
            r#"{"version": 1, "month": "2026-09", "max_shift_minutes": 0,
                "rooms": [{"id": "a", "capacity": 4, "features": ["piano", "drums"], "open": [[0, 1440]], "offline": [[0, 1440]]},
                          {"id": "b", "capacity": 4, "features": ["piano", "drums"], "open": [[0, 1440]]},
                          {"id": "c", "capacity": 4, "features": ["drums"], "open": [[0, 1440]]},
                          {"id": "d", "capacity": 4, "open": [[0, 1440]]}],
                "bookings": [{"id": "u", "room": "a", "start": 600, "end": 660, "client": "cu", "requires": ["piano"]},
                             {"id": "j", "room": "a", "start": 600, "end": 660, "client": "cj", "requires": ["drums"]},
                             {"id": "k", "room": "a", "start": 600, "end": 660, "client": "ck"}]}"#,
        )
        .unwrap();
        inst.check().unwrap();
        let problem = Problem::build(&inst, usize::MAX, 0);
        let part = Part { affected: vec![0, 1, 2] };
        let in_room = |a: u32, room: u32| problem.candidates_of(a).find(|&c| problem.candidates[c].room == room).expect("a candidate there");
        let plan = Plan::new(&problem, vec![None, Some(in_room(1, 1)), Some(in_room(2, 2))]);
        assert_eq!(plan.cost, 1002);
        assert_eq!(improve(&problem, &part, plan.clone()), plan, "no single move places u");
        let placed = place_unresolved(&problem, &part, plan);
        assert_eq!(placed.chosen, vec![Some(in_room(0, 1)), Some(in_room(1, 2)), Some(in_room(2, 3))]);
        assert_eq!(placed.cost, 3);
    }
}
