//! The integer program of one part, solved with microlp, starting from the greedy plan.
//!
//! One binary per candidate; one "at most one" row per booking; one clique row per resource and
//! maximal set of candidates overlapping there (rooms held for the buffer too); and series terms
//! `y[series, room] >= x` with `z[series] <= sum y`, so that `sum y - z` is the number of extra rooms.
//! The objective is the REFLOW.md cost minus a constant, so "optimal" means the contract's optimum.
//! It is called directly rather than through good_lp: only the direct API has a node limit (a
//! deterministic budget), resumable solves (so a stop flag is seen between chunks) and the bound.

use std::collections::{BTreeMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use microlp::{ComparisonOp, LinearExpr, OptimizationDirection, ResumeOptions, SolveOptions, SolveOutcome, Variable};

use crate::candidates::{Problem, Resource};
use crate::instance::Minute;
use crate::plan::{Plan, is_conflict_free, trivial_bound};
use crate::split::{Part, maximal_cliques};

/// Branch-and-bound nodes per microlp call; between calls the stop flag and deadline are read.
const NODES_PER_CHUNK: u64 = 50;

/// Where an ILP solve of a part stands: the best plan so far, and what is proven about it.
#[derive(Debug, Clone)]
pub(crate) struct PartOutcome {
    pub plan: Plan,
    /// A lower bound on the part's cost.
    pub bound: i64,
    pub optimal: bool,
}

/// When to give up improving a part.
pub(crate) struct Limits<'a> {
    pub deadline: Instant,
    pub stop: &'a AtomicBool,
    /// Branch-and-bound nodes per part: the deterministic limit. The deadline is only a safety net.
    pub node_budget: u64,
}

impl Limits<'_> {
    fn exhausted(&self, nodes: u64) -> bool {
        nodes >= self.node_budget || self.stop.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }

    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The ILP of one part, with the variables it was built from.
struct Model {
    lp: microlp::Problem,
    /// The part's candidate indices, aligned with `x`.
    candidates: Vec<usize>,
    x: Vec<Variable>,
    /// `(series, room, y)`, sorted.
    y: Vec<(u32, u32, Variable)>,
    /// `(series, z)`, sorted.
    z: Vec<(u32, Variable)>,
    /// Added to the objective to get the part's cost.
    constant: i64,
}

impl Model {
    fn build(problem: &Problem, part: &Part) -> Model {
        let w = &problem.weights;
        let mut lp = microlp::Problem::new(OptimizationDirection::Minimize);
        let candidates: Vec<usize> = part.affected.iter().flat_map(|&a| problem.candidates_of(a)).collect();
        // Choosing a candidate saves the unresolved weight, so its coefficient is its cost minus that.
        let x: Vec<Variable> =
            candidates.iter().map(|&c| lp.add_binary_var((problem.candidates[c].cost - w.unresolved) as f64)).collect();
        let var_of = |c: usize| x[candidates.partition_point(|&d| d < c)];

        // A series' y and z may be continuous: at integral x the optimum sets them to 0 or 1.
        let mut series_rooms = BTreeMap::new();
        for &c in &candidates {
            let cand = &problem.candidates[c];
            if let Some(s) = problem.affected[cand.affected as usize].series {
                series_rooms.entry((s, cand.room)).or_insert(());
            }
        }
        let y: Vec<(u32, u32, Variable)> =
            series_rooms.keys().map(|&(s, r)| (s, r, lp.add_var(w.series_split as f64, (0.0, 1.0)))).collect();
        let mut series: Vec<u32> = y.iter().map(|&(s, _, _)| s).collect();
        series.dedup();
        let z: Vec<(u32, Variable)> =
            series.iter().map(|&s| (s, lp.add_var(-(w.series_split as f64), (0.0, 1.0)))).collect();

        for &a in &part.affected {
            let range = problem.candidates_of(a);
            if range.len() > 1 {
                let row: LinearExpr = range.clone().map(|c| (var_of(c), 1.0)).collect();
                lp.add_constraint(row, ComparisonOp::Le, 1.0);
            }
            // y[s, r] >= sum of this booking's candidates in room r (it takes at most one of them).
            if let Some(s) = problem.affected[a as usize].series {
                let mut by_room: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
                for c in range {
                    by_room.entry(problem.candidates[c].room).or_default().push(c);
                }
                for (room, cs) in by_room {
                    let yi = y.partition_point(|&(ys, yr, _)| (ys, yr) < (s, room));
                    let mut row: LinearExpr = cs.iter().map(|&c| (var_of(c), 1.0)).collect();
                    row.add(y[yi].2, -1.0);
                    lp.add_constraint(row, ComparisonOp::Le, 0.0);
                }
            }
        }
        for &(s, zs) in &z {
            let mut row: LinearExpr = y.iter().filter(|&&(ys, _, _)| ys == s).map(|&(_, _, v)| (v, -1.0)).collect();
            row.add(zs, 1.0);
            lp.add_constraint(row, ComparisonOp::Le, 0.0);
        }

        for clique in clique_rows(problem, &candidates) {
            let row: LinearExpr = clique.iter().map(|&c| (var_of(c), 1.0)).collect();
            lp.add_constraint(row, ComparisonOp::Le, 1.0);
        }
        let constant = w.unresolved * part.affected.len() as i64;
        Model { lp, candidates, x, y, z, constant }
    }

    /// The values of every variable for a plan, for microlp's warm start.
    fn warm_start(&self, problem: &Problem, plan: &Plan) -> Vec<(Variable, f64)> {
        let chosen: HashSet<usize> = plan.chosen.iter().flatten().copied().collect();
        let mut used = HashSet::new();
        let mut values: Vec<(Variable, f64)> = Vec::new();
        for (&c, &v) in self.candidates.iter().zip(&self.x) {
            let on = chosen.contains(&c);
            values.push((v, if on { 1.0 } else { 0.0 }));
            let cand = &problem.candidates[c];
            if let (true, Some(s)) = (on, problem.affected[cand.affected as usize].series) {
                used.insert((s, cand.room));
            }
        }
        for &(s, r, v) in &self.y {
            values.push((v, if used.contains(&(s, r)) { 1.0 } else { 0.0 }));
        }
        for &(s, v) in &self.z {
            values.push((v, if used.iter().any(|&(us, _)| us == s) { 1.0 } else { 0.0 }));
        }
        values
    }

    /// Reads the chosen candidates back, per booking of the part.
    fn plan(&self, problem: &Problem, part: &Part, solution: &microlp::Solution) -> Option<Plan> {
        let mut chosen = vec![None; part.affected.len()];
        let mut at = 0;
        for (i, &a) in part.affected.iter().enumerate() {
            for _ in problem.candidates_of(a) {
                if solution.var_value_raw(self.x[at]) > 0.5 {
                    if chosen[i].is_some() {
                        return None;
                    }
                    chosen[i] = Some(self.candidates[at]);
                }
                at += 1;
            }
        }
        is_conflict_free(problem, &chosen).then(|| Plan::new(problem, chosen))
    }
}

/// One row per resource and maximal set of the part's candidates that overlap on it, kept only
/// when it spans two bookings or more (a single booking's candidates are covered by its own row).
fn clique_rows(problem: &Problem, candidates: &[usize]) -> Vec<Vec<usize>> {
    let mut uses: BTreeMap<Resource, Vec<(Minute, Minute, usize)>> = BTreeMap::new();
    for &c in candidates {
        for (r, s, e) in problem.occupies(&problem.candidates[c]) {
            uses.entry(r).or_default().push((s, e, c));
        }
    }
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for intervals in uses.values() {
        for mut clique in maximal_cliques(intervals) {
            let first = problem.candidates[clique[0]].affected;
            if clique.iter().all(|&c| problem.candidates[c].affected == first) {
                continue;
            }
            clique.sort_unstable();
            if seen.insert(clique.clone()) {
                rows.push(clique);
            }
        }
    }
    rows
}

/// Improves a part's plan with the ILP, reporting each better plan as it is found.
/// Never returns anything worse than `incumbent`; a microlp error or panic just ends the search.
pub(crate) fn improve(
    problem: &Problem,
    part: &Part,
    incumbent: Plan,
    limits: &Limits,
    mut report: impl FnMut(&PartOutcome),
) -> PartOutcome {
    let mut best = PartOutcome { bound: trivial_bound(problem, part), plan: incumbent, optimal: false };
    if best.bound >= best.plan.cost || limits.exhausted(0) {
        best.optimal = best.bound >= best.plan.cost;
        return best;
    }
    let model = Model::build(problem, part);
    let mut options = SolveOptions::default();
    options.node_limit = Some(NODES_PER_CHUNK);
    options.time_limit = Some(limits.remaining());
    options.warm_start = Some(model.warm_start(problem, &best.plan));
    let mut outcome = catch_unwind(AssertUnwindSafe(|| model.lp.solve_with(options)));
    let mut nodes = 0;
    loop {
        let current: SolveOutcome = match outcome {
            Ok(Ok(current)) => current,
            // Infeasible cannot happen (all zeros is feasible); anything else is microlp giving up.
            Ok(Err(_)) | Err(_) => break,
        };
        if let Some(solution) = current.solution()
            && let Some(plan) = model.plan(problem, part, solution)
            && plan.cost < best.plan.cost
        {
            best.plan = plan;
            report(&best);
        }
        if let Some(bound) = current.stats().best_bound {
            // The cost is an integer, so a fractional bound rounds up.
            let bound = (bound - 1e-6).ceil() as i64 + model.constant;
            best.bound = best.bound.max(bound);
        }
        if best.bound >= best.plan.cost {
            best.optimal = true;
            break;
        }
        // A finished proof whose answer did not read back keeps the greedy plan and the bound.
        if current.is_optimal() {
            break;
        }
        nodes += NODES_PER_CHUNK;
        if limits.exhausted(nodes) {
            break;
        }
        let mut resume = ResumeOptions::default();
        resume.node_limit = Some(NODES_PER_CHUNK);
        resume.time_limit = Some(limits.remaining());
        outcome = catch_unwind(AssertUnwindSafe(|| current.resume_with(resume)));
    }
    best.bound = best.bound.min(best.plan.cost);
    best
}
