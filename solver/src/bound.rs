//! A lower bound on a part's cost by Lagrangian relaxation, for parts too big to prove with the
//! integer program. The clique rows (two bookings in one room, or with one client or engineer, at
//! once) are moved into the objective with a price each; what is left falls apart into one small
//! problem per booking (its cheapest priced placement, or unresolved) and per series (an exact
//! search over which occurrences share a room). For any prices that is a valid bound; subgradient
//! steps raise the prices where placements collide. It only bounds: it never builds a plan.
//!
//! Validity does not depend on convergence, the step rule or the iteration count: every value
//! it reports is the relaxation's exact value at some non-negative prices. A booking whose
//! placements were capped may take a dropped one at no less than its floor, in any room.

use std::collections::BTreeMap;

use crate::candidates::{Problem, Resource};
use crate::instance::Minute;
use crate::split::{Part, maximal_cliques};

/// Series with more occurrences than this in one part are bounded as if they could not split
/// (splits cost nothing extra): still valid, only weaker. Weekly series have 3-5 in a month.
const MAX_EXACT_SERIES: usize = 8;

/// A series handled exactly: its occurrences and their candidates grouped by room.
struct Series {
    members: Vec<usize>,
    rooms: usize,
    entries: Vec<(u32, u8, u32)>,
}

/// The relaxation of one part, with its current prices.
pub(crate) struct Relaxation {
    /// The part's candidates (indices into [`Problem::candidates`]), grouped by booking in the
    /// part's order: booking `i` of the part owns `candidates[first[i]..first[i + 1]]`.
    candidates: Vec<usize>,
    first: Vec<usize>,
    /// Each candidate's own cost.
    cost: Vec<f64>,
    /// CSR: the rows (cliques) each local candidate is in.
    row_start: Vec<usize>,
    rows_of: Vec<u32>,
    /// Row members, CSR, for the subgradient.
    member_start: Vec<usize>,
    members: Vec<u32>,
    /// Per booking of the part: its floor (capped) or infinity, and the unresolved weight.
    floor: Vec<f64>,
    /// Each series of the part: its bookings (local indices), its rooms (with the number of
    /// rooms), and its candidates as (room slot, occurrence, local candidate), by slot.
    series: Vec<Series>,
    /// Whether each booking of the part belongs to a series handled exactly.
    in_series: Vec<bool>,
    unresolved: f64,
    split: f64,
    /// The prices, one per row.
    price: Vec<f64>,
    /// The step scale of the Polyak rule; halved when the bound stalls.
    scale: f64,
    stalled: usize,
    /// The best bound so far (exact value of the relaxation at some prices).
    pub best: f64,
    /// Subgradient iterations run so far.
    pub iterations: u64,
}

impl Relaxation {
    /// The relaxation of a part with all prices zero.
    pub fn new(problem: &Problem, part: &Part) -> Relaxation {
        let w = &problem.weights;
        let mut candidates = Vec::new();
        let mut first = Vec::with_capacity(part.affected.len() + 1);
        let mut floor = Vec::with_capacity(part.affected.len());
        for &a in &part.affected {
            first.push(candidates.len());
            candidates.extend(problem.candidates_of(a));
            floor.push(problem.affected[a as usize].floor.map_or(f64::INFINITY, |f| f as f64));
        }
        first.push(candidates.len());
        let cost: Vec<f64> = candidates.iter().map(|&c| problem.candidates[c].cost as f64).collect();
        let room: Vec<u32> = candidates.iter().map(|&c| problem.candidates[c].room).collect();

        // Rows: per resource, the maximal sets of candidates overlapping there, when they span
        // two bookings or more (one booking's own candidates are kept apart by its own choice).
        let mut uses: BTreeMap<Resource, Vec<(Minute, Minute, u32)>> = BTreeMap::new();
        for (local, &c) in candidates.iter().enumerate() {
            for (r, s, e) in problem.occupies(&problem.candidates[c]) {
                uses.entry(r).or_default().push((s, e, local as u32));
            }
        }
        let booking_of: Vec<u32> = (0..part.affected.len())
            .flat_map(|i| std::iter::repeat_n(i as u32, first[i + 1] - first[i]))
            .collect();
        let mut member_start = vec![0];
        let mut members = Vec::new();
        for intervals in uses.into_values() {
            for clique in maximal_cliques(&intervals) {
                let b = booking_of[clique[0] as usize];
                if clique.iter().all(|&c| booking_of[c as usize] == b) {
                    continue;
                }
                members.extend(clique);
                member_start.push(members.len());
            }
        }
        let row_count = member_start.len() - 1;
        let mut count = vec![0usize; candidates.len() + 1];
        for &m in &members {
            count[m as usize + 1] += 1;
        }
        for i in 0..candidates.len() {
            count[i + 1] += count[i];
        }
        let row_start = count.clone();
        let mut rows_of = vec![0u32; members.len()];
        let mut next = count;
        for row in 0..row_count {
            for &m in &members[member_start[row]..member_start[row + 1]] {
                rows_of[next[m as usize]] = row as u32;
                next[m as usize] += 1;
            }
        }

        let mut by_series: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, &a) in part.affected.iter().enumerate() {
            if let Some(s) = problem.affected[a as usize].series {
                by_series.entry(s).or_default().push(i);
            }
        }
        let mut series = Vec::new();
        let mut in_series = vec![false; part.affected.len()];
        for members in by_series.into_values().filter(|m| m.len() > 1 && m.len() <= MAX_EXACT_SERIES) {
            let mut entries: Vec<(u32, u8, u32)> = Vec::new();
            for (j, &i) in members.iter().enumerate() {
                in_series[i] = true;
                entries.extend((first[i]..first[i + 1]).map(|c| (room[c], j as u8, c as u32)));
            }
            entries.sort_unstable();
            let mut slots = 0;
            let mut last = None;
            for entry in &mut entries {
                if last != Some(entry.0) {
                    last = Some(entry.0);
                    slots += 1;
                }
                entry.0 = slots - 1;
            }
            series.push(Series { members, rooms: slots as usize, entries });
        }
        Relaxation {
            candidates,
            first,
            cost,
            row_start,
            rows_of,
            member_start,
            members,
            floor,
            series,
            in_series,
            unresolved: w.unresolved as f64,
            split: w.series_split as f64,
            price: vec![0.0; row_count],
            scale: 1.0,
            stalled: 0,
            best: f64::NEG_INFINITY,
            iterations: 0,
        }
    }

    /// The work of one iteration: candidates plus row memberships.
    pub fn size(&self) -> usize {
        self.candidates.len() + self.members.len()
    }

    /// Whether further steps are unlikely to raise the bound (the step scale has collapsed).
    pub fn converged(&self) -> bool {
        self.scale < 1e-4
    }

    /// The relaxation's value at the current prices, and for each booking the local candidate
    /// it takes alone (for the subgradient; `None`: unresolved or a dropped placement).
    fn evaluate(&self) -> (f64, Vec<Option<usize>>) {
        let priced: Vec<f64> = (0..self.candidates.len())
            .map(|c| {
                self.cost[c] + self.rows_of[self.row_start[c]..self.row_start[c + 1]].iter().map(|&r| self.price[r as usize]).sum::<f64>()
            })
            .collect();
        let mut value = -self.price.iter().sum::<f64>();
        let mut pick = Vec::with_capacity(self.floor.len());
        for i in 0..self.floor.len() {
            let mut best = self.unresolved.min(self.floor[i]);
            let mut chosen = None;
            let first = self.first[i];
            for (c, &price) in priced.iter().enumerate().take(self.first[i + 1]).skip(first) {
                if price < best {
                    best = price;
                    chosen = Some(c);
                }
            }
            pick.push(chosen);
            if !self.in_series[i] {
                value += best;
            }
        }
        for series in &self.series {
            value += self.series_value(series, &priced);
        }
        (value, pick)
    }

    /// The exact least priced cost of a series' occurrences with its splits: the occurrences are
    /// grouped by the room they share; each group beyond the first costs a split, and any
    /// occurrence may stay unresolved instead. A capped occurrence's floor counts in every room.
    fn series_value(&self, series: &Series, priced: &[f64]) -> f64 {
        let members = &series.members;
        let k = members.len();
        let full = (1usize << k) - 1;
        // costs[slot * k + j]: occurrence j's least priced cost in the room of that slot; the
        // last slot stands for a room no occurrence lists, open only to capped ones at their floor.
        let floors: Vec<f64> = members.iter().map(|&m| self.floor[m]).collect();
        let mut costs: Vec<f64> = (0..=series.rooms).flat_map(|_| floors.iter().copied()).collect();
        for &(slot, j, c) in &series.entries {
            let cell = &mut costs[slot as usize * k + j as usize];
            *cell = cell.min(priced[c as usize]);
        }
        // group[mask]: the least priced cost of placing exactly the occurrences of mask in one room.
        let mut group = vec![f64::INFINITY; full + 1];
        let mut sum = vec![0.0; full + 1];
        for costs in costs.chunks(k) {
            for mask in 1..=full {
                let low = mask.trailing_zeros() as usize;
                sum[mask] = sum[mask & (mask - 1)] + costs[low];
                if sum[mask] < group[mask] {
                    group[mask] = sum[mask];
                }
            }
        }
        // any[mask]: the least cost of the occurrences of mask, each group costing a split.
        let mut any = vec![0.0; full + 1];
        for mask in 1..=full {
            let low = mask & mask.wrapping_neg();
            let mut best = self.unresolved + any[mask ^ low];
            let rest = mask ^ low;
            let mut sub = rest;
            loop {
                let g = sub | low;
                let value = group[g] + self.split + any[mask ^ g];
                if value < best {
                    best = value;
                }
                if sub == 0 {
                    break;
                }
                sub = (sub - 1) & rest;
            }
            any[mask] = best;
        }
        // The first group is free: the least over the group it could be, or all unresolved.
        let mut best = self.unresolved * k as f64;
        let mut g = full;
        while g > 0 {
            best = best.min(group[g] + any[full ^ g]);
            g = (g - 1) & full;
        }
        best
    }

    /// Runs `iterations` subgradient steps towards `target` (the cost of a known plan), keeping
    /// the best bound. Deterministic: the same steps give the same prices and bound.
    /// `keep_going` is asked before each step, so that a cancel does not wait for them.
    pub fn improve(&mut self, target: f64, iterations: u64, keep_going: impl Fn() -> bool) {
        for _ in 0..iterations {
            if !keep_going() {
                break;
            }
            self.iterations += 1;
            let (value, pick) = self.evaluate();
            if value > self.best + 1e-9 {
                self.best = value;
                self.stalled = 0;
            } else {
                self.stalled += 1;
                if self.stalled >= 20 {
                    self.scale /= 2.0;
                    self.stalled = 0;
                }
            }
            if self.best >= target - 1e-6 || self.scale < 1e-4 {
                break;
            }
            // Subgradient: chosen members of each row, minus one; projected at zero prices.
            let mut taken = vec![false; self.candidates.len()];
            for c in pick.into_iter().flatten() {
                taken[c] = true;
            }
            let mut gradient = Vec::with_capacity(self.price.len());
            let mut norm = 0.0;
            for row in 0..self.price.len() {
                let used = self.members[self.member_start[row]..self.member_start[row + 1]]
                    .iter()
                    .filter(|&&m| taken[m as usize])
                    .count() as f64;
                let mut g = used - 1.0;
                if self.price[row] <= 0.0 && g < 0.0 {
                    g = 0.0;
                }
                norm += g * g;
                gradient.push(g);
            }
            if norm == 0.0 {
                // The relaxed choice breaks no row: it is feasible, so its value is the optimum.
                break;
            }
            let step = self.scale * (target - value).max(1.0) / norm;
            for (p, g) in self.price.iter_mut().zip(gradient) {
                *p = (*p + step * g).max(0.0);
            }
        }
    }

    /// The best bound so far as an integer cost (costs are integers, so it rounds up).
    pub fn bound(&self) -> i64 {
        if self.best == f64::NEG_INFINITY { i64::MIN } else { (self.best - 1e-3).ceil() as i64 }
    }
}
