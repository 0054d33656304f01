//! The integer program of one part, written with good_lp and solved with its microlp backend,
//! starting from the greedy plan.
//!
//! One binary per candidate; one "at most one" row per booking; one clique row per resource and
//! maximal set of candidates overlapping there (rooms held for the buffer too); and series terms
//! `y[series, room] >= x` with `z[series] <= sum y`, so that `sum y - z` is the number of extra rooms.
//! The objective is the REFLOW.md cost minus a constant, so "optimal" means the contract's optimum.
//! good_lp builds the model; the search then runs on the `microlp::Problem` good_lp made, through
//! microlp's own `solve_with`, which alone has a node limit (a deterministic budget), resumable
//! solves (so a stop flag is seen between chunks) and the proven bound. Big parts may be thinned
//! to each booking's cheapest candidates, which keeps the program's size linear in the bookings.
//! The same program, without split terms and with capped bookings free to take a dropped
//! placement at their floor, bounds a group of a part that only series link to the rest.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use good_lp::solvers::microlp::{MicroLpProblem, microlp};
use good_lp::{Expression, ProblemVariables, SolverModel, constraint, variable};
use microlp::{ResumeOptions, SolveOptions, SolveOutcome};

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
    pub fn exhausted(&self, nodes: u64) -> bool {
        nodes >= self.node_budget || self.stop.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }

    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The ILP of one part. Variables are named by their creation position: good_lp hands its
/// variables to microlp in creation order (see `good_lp::solvers::microlp::microlp`), and a
/// microlp variable is its creation index (`microlp::Variable::idx`), so position `i` here is
/// microlp variable `i`. The candidates come first, then the `y`, then the `z`.
struct Model {
    lp: MicroLpProblem,
    /// The part's candidate indices; candidate `candidates[i]` is variable `i`.
    candidates: Vec<usize>,
    /// `(series, room)` of each `y`, sorted; `y[j]` is variable `candidates.len() + j`.
    y: Vec<(u32, u32)>,
    /// The series of each `z`, sorted; `z[k]` is variable `candidates.len() + y.len() + k`.
    z: Vec<u32>,
    /// How many bookings may take a dropped placement (variables after the `z`).
    dropped: usize,
    /// microlp's handle of every variable, by position.
    handles: Vec<microlp::Variable>,
    /// Added to the objective to get the part's cost.
    constant: i64,
}

impl Model {
    /// The model over `candidates`, some of the part's candidates in ascending order.
    /// `fixed_rooms` gives, per series, the rooms its occurrences outside `part` already use
    /// (in a neighbourhood of a bigger part): those rooms cost no split, and the first room is
    /// then no longer free. With `floors`, a booking whose placements were capped may also take one
    /// it dropped, at its floor and clashing with nothing: a relaxation, for bounds only.
    fn build(problem: &Problem, part: &Part, candidates: Vec<usize>, fixed_rooms: &BTreeMap<u32, BTreeSet<u32>>, floors: bool) -> Model {
        let fixed = |s: u32, room: u32| fixed_rooms.get(&s).is_some_and(|rooms| rooms.contains(&room));
        let w = &problem.weights;
        let mut vars = ProblemVariables::new();
        let x: Vec<good_lp::Variable> = candidates.iter().map(|_| vars.add(variable().binary())).collect();
        let var_of = |c: usize| x[candidates.partition_point(|&d| d < c)];

        // A series' y and z may be continuous: at integral x the optimum sets them to 0 or 1.
        let mut y: Vec<(u32, u32)> = candidates
            .iter()
            .filter_map(|&c| {
                let cand = &problem.candidates[c];
                problem.affected[cand.affected as usize].series.map(|s| (s, cand.room)).filter(|&(s, room)| !fixed(s, room))
            })
            .collect();
        y.sort_unstable();
        y.dedup();
        let y_vars: Vec<good_lp::Variable> = y.iter().map(|_| vars.add(variable().min(0).max(1))).collect();
        let y_of = |s: u32, room: u32| y_vars[y.partition_point(|&key| key < (s, room))];
        let mut z: Vec<u32> = y.iter().map(|&(s, _)| s).filter(|s| fixed_rooms.get(s).is_none_or(BTreeSet::is_empty)).collect();
        z.dedup();
        let z_vars: Vec<good_lp::Variable> = z.iter().map(|_| vars.add(variable().min(0).max(1))).collect();
        let dropped: Vec<(u32, i64)> =
            part.affected.iter().filter_map(|&a| problem.affected[a as usize].floor.filter(|_| floors).map(|f| (a, f))).collect();
        let dropped_vars: Vec<good_lp::Variable> = dropped.iter().map(|_| vars.add(variable().binary())).collect();

        // Choosing a candidate saves the unresolved weight, so its coefficient is its cost minus that;
        // the saved weights are the constant, kept outside because microlp has no objective constant.
        let mut objective = Expression::with_capacity(vars.len());
        for (&c, &v) in candidates.iter().zip(&x) {
            objective.add_mul((problem.candidates[c].cost - w.unresolved) as f64, v);
        }
        for &v in &y_vars {
            objective.add_mul(w.series_split as f64, v);
        }
        for &v in &z_vars {
            objective.add_mul(-(w.series_split as f64), v);
        }
        for (&(_, floor), &v) in dropped.iter().zip(&dropped_vars) {
            objective.add_mul((floor - w.unresolved) as f64, v);
        }
        let handles = microlp_handles(vars.len());
        let mut lp = vars.minimise(objective).using(microlp);

        for &a in &part.affected {
            let range = problem.candidates_of(a);
            let first = candidates.partition_point(|&c| c < range.start);
            let last = candidates.partition_point(|&c| c < range.end);
            let range = &candidates[first..last];
            let dropped = dropped.binary_search_by_key(&a, |&(d, _)| d).ok().map(|i| dropped_vars[i]);
            if range.len() + usize::from(dropped.is_some()) > 1 {
                let mut taken: Expression = range.iter().map(|&c| var_of(c)).sum();
                if let Some(v) = dropped {
                    taken.add_mul(1.0, v);
                }
                lp.add_constraint(constraint!(taken <= 1));
            }
            // y[s, r] >= sum of this booking's candidates in room r (it takes at most one of them).
            if let Some(s) = problem.affected[a as usize].series {
                let mut by_room: BTreeMap<u32, Expression> = BTreeMap::new();
                for &c in range {
                    by_room.entry(problem.candidates[c].room).or_default().add_mul(1.0, var_of(c));
                }
                for (room, taken) in by_room {
                    if !fixed(s, room) {
                        lp.add_constraint(constraint!(taken <= y_of(s, room)));
                    }
                }
            }
        }
        for (&s, &zs) in z.iter().zip(&z_vars) {
            let first = y.partition_point(|&(ys, _)| ys < s);
            let last = y.partition_point(|&(ys, _)| ys <= s);
            let rooms_used: Expression = y_vars[first..last].iter().sum();
            lp.add_constraint(constraint!(zs <= rooms_used));
        }

        for clique in clique_rows(problem, &candidates) {
            let taken: Expression = clique.iter().map(|&c| var_of(c)).sum();
            lp.add_constraint(constraint!(taken <= 1));
        }
        let constant = w.unresolved * part.affected.len() as i64;
        Model { lp, candidates, y, z, dropped: dropped.len(), handles, constant }
    }

    /// The values of every variable for a plan, for microlp's warm start.
    fn warm_start(&self, problem: &Problem, plan: &Plan) -> Vec<(microlp::Variable, f64)> {
        let chosen: HashSet<usize> = plan.chosen.iter().flatten().copied().collect();
        let mut used = HashSet::new();
        let mut values = Vec::with_capacity(self.handles.len());
        for &c in &self.candidates {
            let on = chosen.contains(&c);
            values.push(f64::from(u8::from(on)));
            let cand = &problem.candidates[c];
            if let (true, Some(s)) = (on, problem.affected[cand.affected as usize].series) {
                used.insert((s, cand.room));
            }
        }
        values.extend(self.y.iter().map(|key| f64::from(u8::from(used.contains(key)))));
        values.extend(self.z.iter().map(|&s| f64::from(u8::from(used.iter().any(|&(us, _)| us == s)))));
        values.extend(std::iter::repeat_n(0.0, self.dropped));
        debug_assert_eq!(values.len(), self.handles.len());
        self.handles.iter().copied().zip(values).collect()
    }

    /// Reads the chosen candidates back, per booking of the part.
    fn plan(&self, problem: &Problem, part: &Part, solution: &microlp::Solution) -> Option<Plan> {
        let mut chosen = vec![None; part.affected.len()];
        for (&c, &handle) in self.candidates.iter().zip(&self.handles) {
            if solution.var_value_raw(handle) > 0.5 {
                let i = part.affected.binary_search(&problem.candidates[c].affected).ok()?;
                if chosen[i].is_some() {
                    return None;
                }
                chosen[i] = Some(c);
            }
        }
        is_conflict_free(problem, &chosen).then(|| Plan::new(problem, chosen))
    }
}

/// microlp's handles of the first `count` variables of any problem. good_lp does not expose the
/// handles it got, but a microlp variable is nothing but its creation index (`Variable::idx`), so
/// the variables of a scratch problem built the same number of times are the same handles.
/// A wrong mapping could not produce a wrong answer: plans read back are re-checked for clashes
/// and costed from scratch.
fn microlp_handles(count: usize) -> Vec<microlp::Variable> {
    let mut scratch = microlp::Problem::new(microlp::OptimizationDirection::Minimize);
    let handles: Vec<microlp::Variable> = (0..count).map(|_| scratch.add_var(0.0, (0.0, 0.0))).collect();
    debug_assert!(handles.iter().enumerate().all(|(i, h)| h.idx() == i));
    handles
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
///
/// With `thin`, the model keeps only each booking's `thin` cheapest candidates (and the
/// incumbent's): the program's size then grows with the bookings, not with bookings times rooms.
/// Its proofs are then about the thinned model only, so the bound stays the trivial one.
pub(crate) fn improve(
    problem: &Problem,
    part: &Part,
    incumbent: Plan,
    thin: Option<usize>,
    limits: &Limits,
    mut report: impl FnMut(&PartOutcome),
) -> PartOutcome {
    let mut best = PartOutcome { bound: trivial_bound(problem, part), plan: incumbent, optimal: false };
    // Only a model of every placement proves something about the instance.
    let exact = thin.is_none() && problem.is_complete(&part.affected);
    if best.bound >= best.plan.cost || limits.exhausted(0) {
        best.optimal = best.bound >= best.plan.cost;
        return best;
    }
    // Each booking's candidates are sorted cheapest first, so `take` keeps the cheapest; the set
    // adds the incumbent's choices without duplicates, in the ascending order `Model::build` needs.
    let kept: BTreeSet<usize> = part
        .affected
        .iter()
        .flat_map(|&a| problem.candidates_of(a).take(thin.unwrap_or(usize::MAX)))
        .chain(best.plan.chosen.iter().flatten().copied())
        .collect();
    let model = Model::build(problem, part, kept.into_iter().collect(), &BTreeMap::new(), false);
    let warm = model.warm_start(problem, &best.plan);
    search(&model, warm, NODES_PER_CHUNK, limits, |current| {
        if let Some(solution) = current.solution()
            && let Some(plan) = model.plan(problem, part, solution)
            && plan.cost < best.plan.cost
        {
            best.plan = plan;
            report(&best);
        }
        if let Some(bound) = current.stats().best_bound
            && exact
        {
            // The cost is an integer, so a fractional bound rounds up.
            let bound = (bound - 1e-6).ceil() as i64 + model.constant;
            best.bound = best.bound.max(bound);
        }
        if best.bound >= best.plan.cost {
            best.optimal = true;
            return ControlFlow::Break(());
        }
        // A finished proof (of the thinned model, or whose answer did not read back) ends the
        // search too: `search` sees it.
        ControlFlow::Continue(())
    });
    best.bound = best.bound.min(best.plan.cost);
    best
}

/// Re-solves a neighbourhood of a part exactly: the bookings of `free` (ascending indices into
/// [`Problem::affected`]) over `candidates` (theirs, ascending, none clashing with the rest of the
/// part's plan), with the rooms the rest of each series uses in `fixed_rooms`, from `warm` (their
/// current choices, aligned with `free`). Each plan the search finds is passed to `consider`,
/// which keeps it if it is better; the search runs for `limits.node_budget` branch-and-bound nodes
/// at most. Returns whether the search proved its last answer optimal.
pub(crate) fn solve_neighbourhood(
    problem: &Problem,
    free: &Part,
    candidates: Vec<usize>,
    fixed_rooms: &BTreeMap<u32, BTreeSet<u32>>,
    warm: &Plan,
    limits: &Limits,
    mut consider: impl FnMut(&Plan),
) -> bool {
    let model = Model::build(problem, free, candidates, fixed_rooms, false);
    // The warm start needs no special case: `y` and `z` leave out what the rest of a series fixes.
    let warm = model.warm_start(problem, warm);
    let end = search(&model, warm, NODES_PER_CHUNK.min(limits.node_budget.max(1)), limits, |current| {
        if let Some(solution) = current.solution()
            && let Some(plan) = model.plan(problem, free, solution)
        {
            consider(&plan);
        }
        ControlFlow::Continue(())
    });
    end == SearchEnd::Proven
}

/// How a chunked search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SearchEnd {
    /// microlp finished its search: its last answer is optimal (for the model it was given).
    Proven,
    /// The caller's `visit` stopped it.
    Stopped,
    /// The node budget, the deadline or the stop flag ended it.
    OutOfBudget,
    /// microlp gave up (an error, or a panic caught here).
    Failed,
}

/// The branch-and-bound search of a model, from `warm`, in chunks: `first_chunk` nodes, then
/// [`NODES_PER_CHUNK`] at a time, each chunk resumed from where the last stopped. After each
/// chunk, `visit` reads microlp's outcome (its best solution, its bound) and may stop the search;
/// otherwise it goes on until microlp proves its answer or [`Limits::exhausted`] says so (the node
/// count is the deterministic limit, read between chunks with the stop flag and the deadline).
fn search(model: &Model, warm: Vec<(microlp::Variable, f64)>, first_chunk: u64, limits: &Limits, mut visit: impl FnMut(&SolveOutcome) -> ControlFlow<()>) -> SearchEnd {
    let mut options = SolveOptions::default();
    options.node_limit = Some(first_chunk);
    options.time_limit = Some(limits.remaining());
    options.warm_start = Some(warm);
    let mut outcome = catch_unwind(AssertUnwindSafe(|| model.lp.as_inner().solve_with(options)));
    let mut nodes = 0;
    loop {
        let current: SolveOutcome = match outcome {
            Ok(Ok(current)) => current,
            // Infeasible cannot happen (all zeros is feasible); anything else is microlp giving up.
            Ok(Err(_)) | Err(_) => return SearchEnd::Failed,
        };
        if visit(&current).is_break() {
            return SearchEnd::Stopped;
        }
        if current.is_optimal() {
            return SearchEnd::Proven;
        }
        nodes += NODES_PER_CHUNK;
        if limits.exhausted(nodes) {
            return SearchEnd::OutOfBudget;
        }
        let mut resume = ResumeOptions::default();
        resume.node_limit = Some(NODES_PER_CHUNK);
        resume.time_limit = Some(limits.remaining());
        outcome = catch_unwind(AssertUnwindSafe(|| current.resume_with(resume)));
    }
}

/// A lower bound on the cost of the bookings of `group` alone, as if no other booking and no series
/// split existed: the integer program over all their candidates (a capped booking may also take a
/// dropped placement at its floor), searched within `limits`, with the bound its branch and bound
/// proves (at least its linear relaxation's; `i64::MIN` if microlp gave none). Returns the bound
/// and whether microlp finished its search, so that the bound is the group's optimum.
pub(crate) fn group_bound(problem: &Problem, group: &Part, limits: &Limits) -> (i64, bool) {
    let candidates: Vec<usize> = group.affected.iter().flat_map(|&a| problem.candidates_of(a)).collect();
    // Every room of every series counts as already used, so the model has no split terms.
    let mut all_rooms: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for &c in &candidates {
        let cand = &problem.candidates[c];
        if let Some(s) = problem.affected[cand.affected as usize].series {
            all_rooms.entry(s).or_default().insert(cand.room);
        }
    }
    let model = Model::build(problem, group, candidates, &all_rooms, true);
    let empty = Plan { chosen: vec![None; group.affected.len()], cost: 0 };
    let warm = model.warm_start(problem, &empty);
    let mut bound = i64::MIN;
    let end = search(&model, warm, NODES_PER_CHUNK.min(limits.node_budget.max(1)), limits, |current| {
        if let Some(b) = current.stats().best_bound {
            bound = bound.max((b - 1e-6).ceil() as i64 + model.constant);
        }
        ControlFlow::Continue(())
    });
    (bound, end == SearchEnd::Proven)
}
