//! Sound candidate pruning. A placement that no candidate of any other booking clashes with is
//! always available to its booking, so any other candidate of that booking costing at least as
//! much (plus a series split, if in another room) can go: swapping to the free placement never
//! costs more. Likewise a placement handed to another engineer (version 2) goes when the same room
//! and start with the booking's own engineer is a candidate whose engineer no other booking's
//! candidate needs then: that one clashes with less and costs less. The optimum survives and only
//! the model shrinks; removing candidates frees more placements, so it repeats a few rounds.
//! Nothing here chooses a placement.

use rayon::prelude::*;

use crate::candidates::{Problem, Resource};
use crate::instance::Minute;

/// Rounds of pruning; each later round removes far less than the one before.
const ROUNDS: usize = 3;

/// Removes dominated candidates from `problem`; returns how many went. `stop` is read between
/// the steps of each round, so that a cancel does not wait for the rounds.
pub(crate) fn prune(problem: &mut Problem, stop: impl Fn() -> bool) -> usize {
    let split = problem.weights.series_split;
    let mut removed = 0;
    for _ in 0..ROUNDS {
        let Some((contested, engineer_contested)) = contested(problem, &stop) else { break };
        let mut keep = vec![true; problem.candidates.len()];
        for a in &problem.affected {
            // (room, start) where the booking's own engineer is a candidate that nobody else's needs.
            let mut own_free: Vec<(u32, Minute)> = a
                .candidates
                .clone()
                .map(|c| (c, &problem.candidates[c]))
                .filter(|(c, cand)| cand.engineer.is_some() && cand.engineer == a.engineer && !engineer_contested[*c])
                .map(|(_, cand)| (cand.room, cand.start))
                .collect();
            own_free.sort_unstable();
            // (cost, room) of the booking's free placements kept so far, cheapest first.
            let mut free: Vec<(i64, u32)> = Vec::new();
            for c in a.candidates.clone() {
                let cand = &problem.candidates[c];
                let margin = |room: u32| if a.series.is_some() && room != cand.room { split } else { 0 };
                if free.iter().any(|&(cost, room)| cost + margin(room) <= cand.cost)
                    || (cand.engineer != a.engineer && own_free.binary_search(&(cand.room, cand.start)).is_ok())
                {
                    keep[c] = false;
                } else if !contested[c] {
                    free.push((cand.cost, cand.room));
                }
            }
        }
        let gone = keep.iter().filter(|&&k| !k).count();
        if gone == 0 {
            break;
        }
        removed += gone;
        problem.retain(&keep);
        // A round that removed little means the next would remove less still: in a big chain,
        // where nearly every placement is contested, another round costs more than it saves.
        if gone * 20 < problem.candidates.len() {
            break;
        }
    }
    removed
}

/// Whether each candidate is contested: some candidate of another booking clashes with it; and
/// whether it is through its engineer. `None` when `stop` says so between steps.
fn contested(problem: &Problem, stop: impl Fn() -> bool) -> Option<(Vec<bool>, Vec<bool>)> {
    let mut uses: Vec<(Resource, Minute, Minute, u32, usize)> = problem
        .candidates
        .iter()
        .enumerate()
        .flat_map(|(i, c)| problem.occupies(c).map(move |(r, s, e)| (r, s, e, c.affected, i)))
        .collect();
    if stop() {
        return None;
    }
    uses.par_sort_unstable_by_key(|&(r, s, _, _, _)| (r, s));
    if stop() {
        return None;
    }
    // In order of (resource, start), interval k clashes with another booking's interval when
    // one that came before it, of another booking, ends after it starts (the two latest ends of
    // distinct bookings so far tell), or when the first one after it of another booking (from
    // `next_other`) starts before it ends.
    let n = uses.len();
    let mut next_other = vec![n; n];
    for k in (0..n.saturating_sub(1)).rev() {
        let (same_resource, same_booking) = (uses[k + 1].0 == uses[k].0, uses[k + 1].3 == uses[k].3);
        next_other[k] = match (same_resource, same_booking) {
            (false, _) => n,
            (true, false) => k + 1,
            (true, true) => next_other[k + 1],
        };
    }
    let mut contested = vec![false; problem.candidates.len()];
    let mut engineer_contested = vec![false; problem.candidates.len()];
    // (end, booking) of the latest-ending interval so far, and of the latest of another booking.
    let mut latest: Option<(Minute, u32)> = None;
    let mut runner_up: Option<Minute> = None;
    for (k, &(r, s, e, a, i)) in uses.iter().enumerate() {
        if k > 0 && uses[k - 1].0 != r {
            (latest, runner_up) = (None, None);
        }
        let before = latest.is_some_and(|(end, b)| b != a && end > s) || runner_up.is_some_and(|end| end > s);
        let after = uses.get(next_other[k]).is_some_and(|&(_, t, _, _, _)| t < e);
        contested[i] |= before || after;
        engineer_contested[i] |= (before || after) && matches!(r, Resource::Engineer(_));
        latest = match latest {
            Some((end, b)) if b == a => Some((end.max(e), b)),
            Some((end, _)) if e > end => {
                runner_up = Some(end);
                Some((e, a))
            }
            Some(held) => {
                runner_up = Some(runner_up.map_or(e, |end| end.max(e)));
                Some(held)
            }
            None => Some((e, a)),
        };
    }
    (!stop()).then_some((contested, engineer_contested))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    #[test]
    fn contested_matches_the_pairwise_check() {
        for seed in 0..6 {
            let problem = Problem::build(&generate::small(seed), usize::MAX, 0);
            let (fast, _) = contested(&problem, || false).expect("not stopped");
            let cands = &problem.candidates;
            for (i, c) in cands.iter().enumerate() {
                let slow = cands.iter().any(|d| d.affected != c.affected && problem.clash(c, d));
                assert_eq!(fast[i], slow, "seed {seed}, candidate {i}");
            }
        }
    }

    #[test]
    fn pruning_keeps_the_optimum() {
        // Exact either way, so the proven optima agree.
        use crate::{Options, Strategy, solve_with_strategy};
        let options = Options { threads: 1, ..Options::default() };
        for seed in 0..10 {
            let inst = generate::small(seed);
            let pruned = solve_with_strategy(&inst, &options, Strategy::default());
            let full = solve_with_strategy(&inst, &options, Strategy { prune: false, ..Strategy::default() });
            if pruned.proven_optimal && full.proven_optimal {
                assert_eq!(pruned.solution.cost, full.solution.cost, "seed {seed}");
            }
        }
        for seed in 0..4 {
            let inst = generate::generate_with_staff(
                &generate::Config { offline_rooms: 1, ..generate::Config::small(seed) },
                &generate::Staff { away: 2, away_days: 3 },
            );
            let pruned = solve_with_strategy(&inst, &options, Strategy::default());
            let full = solve_with_strategy(&inst, &options, Strategy { prune: false, ..Strategy::default() });
            assert!(pruned.affected > 0);
            if pruned.proven_optimal && full.proven_optimal {
                assert_eq!(pruned.solution.cost, full.solution.cost, "staff seed {seed}");
            }
        }
    }

    #[test]
    fn a_handover_goes_when_the_own_engineer_is_free_there() {
        // Room a offline; b free; e1 (own) and e2 both free. y, without an engineer, wants b at the
        // same time, so no placement is free; but x's placement in b with e2 is dominated by b with
        // e1, whose engineer nobody else needs.
        let inst: crate::Instance = serde_json::from_str(
            r#"{"version": 2, "month": "2026-09", "max_shift_minutes": 0,
                "rooms": [{"id": "a", "capacity": 4, "open": [[0, 1440]], "offline": [[0, 1440]]},
                          {"id": "b", "capacity": 4, "open": [[0, 1440]]}],
                "engineers": [{"id": "e1"}, {"id": "e2"}],
                "bookings": [{"id": "x", "room": "a", "start": 600, "end": 660, "client": "c1", "engineer": "e1"},
                             {"id": "y", "room": "a", "start": 600, "end": 660, "client": "c2"}]}"#,
        )
        .unwrap();
        let mut problem = Problem::build(&inst, usize::MAX, 0);
        assert_eq!(problem.candidates.len(), 3);
        assert_eq!(prune(&mut problem, || false), 1);
        assert_eq!(problem.candidates_of(0).len(), 1);
        assert_eq!(problem.candidates[0].engineer, problem.affected[0].engineer);
    }
}
