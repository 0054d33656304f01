//! Splits the problem into independent parts: affected bookings whose candidates can never clash
//! and that share no series cannot influence each other's best placement, so each connected
//! component of the "may interact" graph is solved alone, and the sum of the parts' optima is the
//! whole month's optimum. This module only groups; it does not solve.

use rayon::prelude::*;

use crate::candidates::{Problem, Resource};
use crate::instance::Minute;

/// A set of affected bookings that interact only with each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    /// Indices into [`Problem::affected`], ascending; all have candidates.
    pub affected: Vec<u32>,
}

impl Part {
    /// Number of candidates, the measure of a part's size.
    pub fn size(&self, problem: &Problem) -> usize {
        self.affected.iter().map(|&a| problem.candidates_of(a).len()).sum()
    }
}

/// Groups the affected bookings that have candidates into parts, ordered by their first booking.
/// With `whole`, every such booking goes into one part (for measuring what splitting costs).
pub(crate) fn split(problem: &Problem, whole: bool) -> Vec<Part> {
    let placeable: Vec<u32> =
        (0..problem.affected.len() as u32).filter(|&a| !problem.candidates_of(a).is_empty()).collect();
    if whole {
        return if placeable.is_empty() { Vec::new() } else { vec![Part { affected: placeable }] };
    }
    components(problem, &placeable, true)
}

/// The groups of a part's bookings that no clash links, once series are left aside: in the
/// generated months, one per day. A bound may treat each group alone if it drops the series splits.
pub(crate) fn clash_groups(problem: &Problem, part: &Part) -> Vec<Part> {
    components(problem, &part.affected, false)
}

/// The connected components of `placeable` (ascending, all with candidates) under "some
/// candidates clash", and "same series" when `series` is set.
fn components(problem: &Problem, placeable: &[u32], series: bool) -> Vec<Part> {
    let mut sets = DisjointSets::new(problem.affected.len());

    // Candidates clash only through a shared resource at overlapping times: sweep each resource's
    // intervals by start, joining each one to the longest-running interval before it if they overlap.
    let mut uses: Vec<(Resource, Minute, Minute, u32)> = placeable
        .iter()
        .flat_map(|&a| problem.candidates[problem.candidates_of(a)].iter())
        .flat_map(|c| problem.occupies(c).map(move |(r, s, e)| (r, s, e, c.affected)))
        .collect();
    // Only the order by start matters to the sweep; ties may fall either way.
    uses.par_sort_unstable_by_key(|&(r, s, _, _)| (r, s));
    let mut running: Option<(Resource, Minute, u32)> = None;
    for &(resource, start, end, affected) in &uses {
        match running {
            Some((r, until, holder)) if r == resource && start < until => {
                sets.join(holder, affected);
                if end > until {
                    running = Some((resource, end, affected));
                }
            }
            _ => running = Some((resource, end, affected)),
        }
    }

    // A series ties its occurrences together, across days.
    let mut first_of_series = vec![None; problem.series_count];
    for &a in placeable.iter().filter(|_| series) {
        if let Some(s) = problem.affected[a as usize].series {
            match first_of_series[s as usize] {
                Some(first) => sets.join(first, a),
                None => first_of_series[s as usize] = Some(a),
            }
        }
    }

    let mut parts: Vec<Part> = Vec::new();
    let mut part_of_root = std::collections::HashMap::new();
    for &a in placeable {
        let root = sets.root(a);
        let index = *part_of_root.entry(root).or_insert_with(|| {
            parts.push(Part { affected: Vec::new() });
            parts.len() - 1
        });
        parts[index].affected.push(a);
    }
    parts
}

/// Union-find over affected-booking indices.
struct DisjointSets {
    parent: Vec<u32>,
}

impl DisjointSets {
    fn new(n: usize) -> Self {
        DisjointSets { parent: (0..n as u32).collect() }
    }

    fn root(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grandparent = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grandparent;
            x = grandparent;
        }
        x
    }

    fn join(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.root(a), self.root(b));
        // The smaller index stays the root, so the grouping never depends on the join order.
        if ra != rb {
            self.parent[ra.max(rb) as usize] = ra.min(rb);
        }
    }
}

/// The maximal sets of pairwise-overlapping intervals among `intervals` (half-open).
/// For intervals these are exactly the sets of intervals containing some start point, so the
/// sweep emits the current set each time a removal follows additions.
pub(crate) fn maximal_cliques<T: Copy>(intervals: &[(Minute, Minute, T)]) -> Vec<Vec<T>> {
    // Ends sort before starts at the same minute: touching intervals do not overlap.
    let mut events: Vec<(Minute, bool, usize)> = Vec::with_capacity(intervals.len() * 2);
    for (i, &(s, e, _)) in intervals.iter().enumerate() {
        events.push((s, true, i));
        events.push((e, false, i));
    }
    events.sort_unstable();
    let mut active: Vec<usize> = Vec::new();
    let mut grown = false;
    let mut cliques = Vec::new();
    for (_, is_start, i) in events {
        if is_start {
            active.push(i);
            grown = true;
        } else {
            if grown {
                cliques.push(active.iter().map(|&j| intervals[j].2).collect());
                grown = false;
            }
            if let Some(pos) = active.iter().position(|&j| j == i) {
                active.swap_remove(pos);
            }
        }
    }
    cliques
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cliques_of_a_staircase() {
        // a=[0,10) b=[5,15) c=[10,20): {a,b} and {b,c}; a and c only touch.
        let mut cliques = maximal_cliques(&[(0, 10, 'a'), (5, 15, 'b'), (10, 20, 'c')]);
        cliques.iter_mut().for_each(|c| c.sort());
        assert_eq!(cliques, vec![vec!['a', 'b'], vec!['b', 'c']]);
    }
}
