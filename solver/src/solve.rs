//! The entry points: build the candidates, split into parts, take a greedy plan per part (with
//! local search), improve the parts with the ILP in parallel, then spend the rest of the time in
//! rounds of improvement steps, while the calling thread watches the cancel flag, the deadline
//! and the progress. Parts are merged in index order, so the thread count never changes the
//! answer; only a time limit or a cancel that cuts a search short can.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::candidates::Problem;
use crate::greedy::{complete, greedy};
use crate::instance::{Assignment, Instance, Solution, Unresolved};
use crate::lns::{PartSearch, step};
use crate::model::{Limits, PartOutcome, improve};
use crate::plan::trivial_bound;
use crate::prune::prune;
use crate::reasons::reason;
use crate::split::{Part, split};

/// How [`solve`] may spend its time.
#[derive(Clone)]
pub struct Options {
    /// Worker threads for the ILP parts (at least 1).
    pub threads: usize,
    /// Wall time for the whole solve; at the limit the best plan so far is returned.
    pub time_limit: Duration,
    /// Set it to stop: `solve` returns within 100 ms on an idle machine (see BENCHMARKS.md; set
    /// before the candidates are built, it waits for them and the greedy) with the best valid
    /// plan so far, the greedy one at worst. Workers still inside a chunk of
    /// branch and bound finish that chunk in the background, then stop.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called on the calling thread whenever a part's first search ends, and whenever the
    /// improvement phase finds a better plan or bound.
    pub progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    /// Rounds of the improvement phase (after every part's first search), or `None` to improve
    /// until the time limit. With a work limit that the time limit does not cut short, the answer
    /// is the same on every machine and thread count.
    pub work_limit: Option<u64>,
}

impl Default for Options {
    /// All available cores, a 10 s limit, no cancel flag, no progress callback.
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            time_limit: Duration::from_secs(10),
            cancel: None,
            progress: None,
            work_limit: None,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("threads", &self.threads)
            .field("time_limit", &self.time_limit)
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.as_ref().map(|_| "Fn(Progress)"))
            .field("work_limit", &self.work_limit)
            .finish()
    }
}

/// How far a solve has come: "9 of 14 parts solved", and the best plan and bound so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Parts whose first search has ended.
    pub parts_done: usize,
    /// All parts of the instance.
    pub parts_total: usize,
    /// The cost of the best plan so far (what a cancel now would return, or less).
    pub cost: i64,
    /// A lower bound on the cost of any valid plan.
    pub lower_bound: i64,
    /// Whether the improvement phase has begun (every part's first search has ended).
    pub improving: bool,
}

impl Progress {
    /// "proven optimal", or "within 0.80 % of optimal".
    pub fn quality(&self) -> String {
        quality(self.cost, self.lower_bound)
    }
}

/// How far a cost is from a lower bound, in words: "proven optimal" when they meet, else "within
/// 0.80 % of optimal" (the gap `(cost - bound) / cost`, rounded up so that it never flatters).
pub fn quality(cost: i64, lower_bound: i64) -> String {
    if lower_bound >= cost {
        return "proven optimal".to_string();
    }
    format!("within {:.2} % of optimal", gap_percent(cost, lower_bound))
}

/// `100 * (cost - lower_bound) / cost`, rounded up to two decimals; 0 when the cost is 0.
pub fn gap_percent(cost: i64, lower_bound: i64) -> f64 {
    if cost <= 0 || lower_bound >= cost {
        return 0.0;
    }
    (10_000.0 * (cost - lower_bound) as f64 / cost as f64).ceil() / 100.0
}

/// The method knobs, for measuring what each choice costs. [`solve`] uses the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strategy {
    /// Solve independent parts separately (exact, and faster); `false` builds one model for the month.
    pub split: bool,
    /// Improve the greedy plans with the ILP; `false` returns the greedy answer.
    pub ilp: bool,
    /// Branch-and-bound nodes for a part, before the best plan so far is kept. A node budget rather
    /// than a time budget makes the answer the same on any machine. Large parts get fewer nodes
    /// (see [`Strategy::nodes_for`]), since each node of theirs costs more and gains less.
    pub node_budget: u64,
    /// Parts with more candidates than this are solved over each booking's [`Strategy::thin_to`]
    /// cheapest candidates: the integer program then grows with the bookings rather than with
    /// bookings times rooms, but proves nothing about the full model. `usize::MAX` keeps every
    /// part exact.
    pub thin_above: usize,
    /// How many candidates per booking a thinned part keeps (the incumbent's are always kept).
    pub thin_to: usize,
    /// Remove candidates that a free placement of the same booking dominates (exact; see `prune`).
    pub prune: bool,
    /// Parts with more candidates than this skip the first, whole-part integer program (its root
    /// LP alone would take longer than the time limit) and go straight to the improvement phase;
    /// so do parts above 8,000 where some booking may change engineer.
    pub ilp_up_to: usize,
    /// After every part's first search, improve the parts until the time or work limit (`lns`):
    /// Lagrangian bounds and neighbourhoods re-solved exactly.
    pub improve: bool,
    /// The fewest placements a booking keeps, cheapest first, when the month has more than
    /// [`Strategy::candidate_budget`] (see `candidates`): in a chain of hundreds of rooms a booking
    /// may go to thousands, and the month would not fit in memory. Bounds count a dropped
    /// placement at the least cost it could have, so they stay valid, but weaker.
    pub candidate_cap: usize,
    /// Placements for the whole month: each booking keeps up to this divided by the affected
    /// bookings, and at least [`Strategy::candidate_cap`]. Months up to about 80 rooms lose none.
    pub candidate_budget: usize,
}

impl Default for Strategy {
    /// Measured in BENCHMARKS.md: parts up to 18,000 candidates (every part of the chains up to
    /// 80 rooms) get the exact integer program first; bigger ones, up to 30,000 (the loose
    /// month's, with a six-hour window), keep 32 candidates per booking for it; bigger still go
    /// straight to the improvement phase. Up to 1,000,000 placements in all before any is capped.
    fn default() -> Self {
        Strategy { split: true, ilp: true, node_budget: 5_000, thin_above: 18_000, thin_to: 32, prune: true, ilp_up_to: 30_000, improve: true, candidate_cap: 192, candidate_budget: 1_000_000 }
    }
}

impl Strategy {
    /// The node budget of a part with `candidates` candidates: about six million
    /// candidate-nodes of work, between 300 nodes and [`Strategy::node_budget`]. Measured on the
    /// 80-room chain, 300 nodes found the same plans as 2,000 in half the time (BENCHMARKS.md).
    pub fn nodes_for(&self, candidates: usize) -> u64 {
        (6_000_000 / candidates.max(1) as u64).clamp(300.min(self.node_budget), self.node_budget)
    }
}

/// A solution with what is known about it.
#[derive(Debug, Clone)]
pub struct Report {
    /// The answer.
    pub solution: Solution,
    /// No valid solution costs less than this: the bound branch and bound proved on each part's
    /// model (at least its LP relaxation), summed, plus the unplaceable bookings.
    pub lower_bound: i64,
    /// Whether `solution.cost == lower_bound`.
    pub proven_optimal: bool,
    /// The cost of the greedy plan the ILP started from.
    pub greedy_cost: i64,
    /// Independent parts the month was split into.
    pub parts: usize,
    /// Candidate placements in the largest part.
    pub largest_part: usize,
    /// Affected bookings.
    pub affected: usize,
    /// Whether the cancel flag stopped the search.
    pub cancelled: bool,
    /// Whether the time limit stopped the search before every part was proven optimal.
    pub timed_out: bool,
    /// Rounds of the improvement phase completed (see [`Options::work_limit`]).
    pub rounds: u64,
    /// Wall time per phase.
    pub phases: Phases,
    /// Wall time of the whole solve.
    pub elapsed: Duration,
}

impl Report {
    /// `100 * (cost - lower_bound) / cost`, rounded up to two decimals; 0 when proven optimal.
    pub fn gap_percent(&self) -> f64 {
        gap_percent(self.solution.cost, self.lower_bound)
    }

    /// "proven optimal", or "within 0.80 % of optimal".
    pub fn quality(&self) -> String {
        quality(self.solution.cost, self.lower_bound)
    }
}

/// Wall time per phase of a solve.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phases {
    /// Building candidates and splitting into parts.
    pub prepare: Duration,
    /// The greedy plans and their local search.
    pub greedy: Duration,
    /// The ILP search and the improvement rounds.
    pub ilp: Duration,
    /// Merging, reasons and the cost.
    pub finish: Duration,
}

/// Solves an instance that passed [`Instance::check`]; see [`solve_with_report`].
pub fn solve(instance: &Instance, options: &Options) -> Solution {
    solve_with_report(instance, options).solution
}

/// Solves an instance that passed [`Instance::check`], and says how good the answer is.
///
/// The answer is always valid. On an instance that fails the check it is still a solution of
/// the instance as read (bookings in unknown rooms are treated as not affected), but not
/// necessarily a meaningful one.
pub fn solve_with_report(instance: &Instance, options: &Options) -> Report {
    solve_with_strategy(instance, options, Strategy::default())
}

/// [`solve_with_report`] with explicit method knobs, for benchmarks and experiments.
pub fn solve_with_strategy(instance: &Instance, options: &Options, strategy: Strategy) -> Report {
    let started = Instant::now();
    let deadline = started + options.time_limit;
    let cancelled = || options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
    let mut phases = Phases::default();

    // One pool for the whole solve: preparation and the greedy run on it from this thread, then
    // the ILP parts run on it from a background thread.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(options.threads.max(1)).build().ok().map(Arc::new);
    let prepare = || {
        let mut problem = Problem::build(instance, strategy.candidate_cap, strategy.candidate_budget);
        // Pruning is exact and shrinks the search; a cancel stops it between rounds.
        if strategy.prune {
            prune(&mut problem, cancelled);
        }
        // A cancel before the split keeps the month whole: the greedy answer is the same (parts
        // do not interact, and the greedy keeps each part's order), and the split is skipped.
        let parts = split(&problem, !strategy.split || cancelled());
        (problem, parts)
    };
    let (problem, parts) = match &pool {
        Some(pool) => pool.install(prepare),
        None => prepare(),
    };
    let (problem, parts) = (Arc::new(problem), Arc::new(parts));
    phases.prepare = started.elapsed();

    let start_part = |part: &Part| {
        let plan = crate::local::place_unresolved(&problem, part, crate::local::improve(&problem, part, greedy(&problem, part)));
        let bound = trivial_bound(&problem, part);
        PartOutcome { optimal: bound >= plan.cost, bound, plan }
    };
    let mut best: Vec<PartOutcome> = match &pool {
        Some(pool) => pool.install(|| parts.par_iter().map(start_part).collect()),
        None => parts.iter().map(start_part).collect(),
    };
    let greedy_cost: i64 = best.iter().map(|o| o.plan.cost).sum();
    phases.greedy = started.elapsed() - phases.prepare;

    let mut search = Search { cancelled: false, deadline_hit: false, rounds: 0 };
    if strategy.ilp && !cancelled() {
        search = improve_parts(&problem, &parts, &mut best, options, strategy, deadline, pool);
    } else {
        search.cancelled = cancelled();
        let unplaceable = problem.affected.iter().filter(|a| a.candidates.is_empty()).count() as i64 * problem.weights.unresolved;
        let cost = best.iter().map(|o| o.plan.cost).sum::<i64>() + unplaceable;
        let lower_bound = best.iter().map(|o| o.bound.min(o.plan.cost)).sum::<i64>() + unplaceable;
        let total = best.len();
        report_progress(options, Progress { parts_done: total, parts_total: total, cost, lower_bound, improving: false });
    }
    phases.ilp = started.elapsed() - phases.prepare - phases.greedy;

    let finish_started = Instant::now();
    let mut chosen = vec![None; problem.affected.len()];
    let (mut lower_bound, mut proven_optimal) = (0, true);
    for (part, outcome) in parts.iter().zip(best) {
        let plan = complete(&problem, part, outcome.plan);
        lower_bound += outcome.bound.min(plan.cost);
        proven_optimal &= outcome.bound >= plan.cost;
        for (&a, c) in part.affected.iter().zip(plan.chosen) {
            chosen[a as usize] = c;
        }
    }
    let unplaceable = problem.affected.iter().filter(|a| a.candidates.is_empty()).count() as i64;
    lower_bound += unplaceable * problem.weights.unresolved;
    let solution = assemble(instance, &problem, &chosen);
    phases.finish = finish_started.elapsed();

    Report {
        proven_optimal: proven_optimal && solution.cost == lower_bound,
        lower_bound,
        greedy_cost: greedy_cost + unplaceable * problem.weights.unresolved,
        parts: parts.len(),
        largest_part: parts.iter().map(|p| p.size(&problem)).max().unwrap_or(0),
        affected: problem.affected.len(),
        cancelled: search.cancelled,
        rounds: search.rounds,
        timed_out: search.deadline_hit && !proven_optimal,
        phases,
        elapsed: started.elapsed(),
        solution,
    }
}

struct Search {
    cancelled: bool,
    deadline_hit: bool,
    /// Improvement rounds completed.
    rounds: u64,
}

/// What the search thread tells the calling thread.
enum Update {
    /// A better plan or bound for a part; `last` when the part's first search has ended.
    Part { part: usize, outcome: PartOutcome, last: bool },
    /// The search has ended on its own (everything proven, stalled, or the work limit reached).
    Finished { rounds: u64 },
}

/// Improves the parts on a pool of `options.threads` threads while this thread keeps `best` up
/// to date and watches cancel and deadline. First every part not yet proven optimal gets its
/// integer program (largest first, node budgets); then, until the time or work limit, rounds of
/// improvement steps (`lns`): in each round every part that is neither proven nor stalled takes
/// one step, in parallel, and the round's results are merged in part order. Each step depends
/// only on its part, so a work limit (rounds) gives the same answer on any thread count.
/// The pool runs on its own thread, so that a cancel returns at once: the workers see the stop
/// flag at their next chunk of nodes and end on their own.
fn improve_parts(
    problem: &Arc<Problem>,
    parts: &Arc<Vec<Part>>,
    best: &mut [PartOutcome],
    options: &Options,
    strategy: Strategy,
    deadline: Instant,
    pool: Option<Arc<rayon::ThreadPool>>,
) -> Search {
    let mut todo: Vec<(usize, PartOutcome)> = best
        .iter()
        .enumerate()
        .filter(|(i, o)| !o.optimal && first_search(problem, &parts[*i], strategy))
        .map(|(i, o)| (i, o.clone()))
        .collect();
    todo.sort_by_key(|(i, _)| (std::cmp::Reverse(parts[*i].size(problem)), *i));
    let total = best.len();
    let mut done = total - todo.len();
    let unplaceable = problem.affected.iter().filter(|a| a.candidates.is_empty()).count() as i64 * problem.weights.unresolved;
    let progress = |best: &[PartOutcome], done: usize, improving: bool| {
        let cost = best.iter().map(|o| o.plan.cost).sum::<i64>() + unplaceable;
        let lower_bound = best.iter().map(|o| o.bound.min(o.plan.cost)).sum::<i64>() + unplaceable;
        report_progress(options, Progress { parts_done: done, parts_total: total, cost, lower_bound, improving });
    };
    progress(best, done, false);

    let stop = Arc::new(AtomicBool::new(false));
    // Rounds completed so far, readable when the deadline ends the wait before the search ends.
    let rounds_done = Arc::new(AtomicU64::new(0));
    let (sender, updates) = mpsc::channel::<Update>();
    {
        let (problem, parts, stop) = (Arc::clone(problem), Arc::clone(parts), Arc::clone(&stop));
        let rounds_done = Arc::clone(&rounds_done);
        let mut states: Vec<PartOutcome> = best.to_vec();
        let work_limit = options.work_limit;
        std::thread::spawn(move || {
            let first = |(part, start): (usize, PartOutcome), sender: &mut mpsc::Sender<Update>| {
                let node_budget = strategy.nodes_for(parts[part].size(&problem));
                let limits = Limits { deadline, stop: &stop, node_budget };
                let send = |outcome: &PartOutcome, last| {
                    // The receiver may have stopped listening after a cancel; that is fine.
                    let _ = sender.send(Update::Part { part, outcome: outcome.clone(), last });
                };
                let thin = (parts[part].size(&problem) > strategy.thin_above).then_some(strategy.thin_to);
                let outcome = improve(&problem, &parts[part], start.plan, thin, &limits, |o| send(o, false));
                send(&outcome, true);
                (part, outcome)
            };
            let rounds = |states: &mut Vec<PartOutcome>, sender: &mpsc::Sender<Update>| -> u64 {
                let mut searches: Vec<PartSearch> = (0..states.len()).map(|_| PartSearch::new()).collect();
                let mut round = 0;
                let limits = Limits { deadline, stop: &stop, node_budget: crate::lns::NODES };
                while work_limit.is_none_or(|limit| round < limit) && !limits.exhausted(0) {
                    let active: Vec<usize> = (0..states.len()).filter(|&i| !searches[i].done(&states[i])).collect();
                    let mut jobs: Vec<(usize, PartOutcome, PartSearch)> = active
                        .into_iter()
                        .map(|i| (i, states[i].clone(), std::mem::replace(&mut searches[i], PartSearch::new())))
                        .collect();
                    if jobs.is_empty() {
                        break;
                    }
                    // Big parts first, so that the round does not wait for one started last.
                    jobs.sort_by_key(|(i, _, _)| (std::cmp::Reverse(parts[*i].size(&problem)), *i));
                    let take_step = |sender: &mut mpsc::Sender<Update>, job: &mut (usize, PartOutcome, PartSearch)| {
                        let (part, outcome, search) = job;
                        let before = (outcome.plan.cost, outcome.bound);
                        step(&problem, &parts[*part], *part, outcome, search, &limits);
                        if (outcome.plan.cost, outcome.bound) != before {
                            let _ = sender.send(Update::Part { part: *part, outcome: outcome.clone(), last: false });
                        }
                    };
                    jobs.par_iter_mut().with_max_len(1).for_each_with(sender.clone(), take_step);
                    // A step cut short by the deadline or a cancel does not count as a round.
                    if limits.exhausted(0) {
                        break;
                    }
                    for (i, outcome, search) in jobs {
                        states[i] = outcome;
                        searches[i] = search;
                    }
                    round += 1;
                    rounds_done.store(round, Ordering::Relaxed);
                }
                round
            };
            let run = || {
                let finished: Vec<(usize, PartOutcome)> =
                    todo.into_par_iter().with_max_len(1).map_with(sender.clone(), |s, t| first(t, s)).collect();
                for (part, outcome) in finished {
                    states[part] = outcome;
                }
                let rounds = if strategy.improve { rounds(&mut states, &sender) } else { 0 };
                let _ = sender.send(Update::Finished { rounds });
            };
            match pool {
                Some(pool) => pool.install(run),
                // No pool (thread limits reached): rayon runs on this thread alone.
                None => run(),
            }
        });
    }

    let mut search = Search { cancelled: false, deadline_hit: false, rounds: 0 };
    loop {
        if options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            search.cancelled = true;
            break;
        }
        let now = Instant::now();
        if now >= deadline + GRACE {
            search.deadline_hit = true;
            break;
        }
        let wait = POLL.min(deadline + GRACE - now);
        match updates.recv_timeout(wait) {
            Ok(Update::Part { part, outcome, last }) => {
                let better = outcome.plan.cost < best[part].plan.cost || outcome.bound > best[part].bound;
                if last || better {
                    // Plans only get cheaper and bounds only higher: keep the best of each.
                    let bound = best[part].bound.max(outcome.bound);
                    if outcome.plan.cost <= best[part].plan.cost {
                        best[part].plan = outcome.plan;
                    }
                    best[part].bound = bound;
                    best[part].optimal = bound >= best[part].plan.cost;
                }
                if last {
                    done += 1;
                }
                if last || better {
                    progress(best, done, done == total);
                }
            }
            Ok(Update::Finished { rounds }) => {
                search.rounds = rounds;
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    search.deadline_hit |= Instant::now() >= deadline;
    search.rounds = search.rounds.max(rounds_done.load(Ordering::Relaxed));
    stop.store(true, Ordering::Relaxed);
    search
}

/// The largest part where some booking may change engineer that gets the first, whole-part
/// integer program. With engineer rows, that program took 6 of the 10 s on the 40-room chain with
/// engineers away (parts of 13,000-28,000 candidates), for a plan the improvement rounds reach in
/// less (BENCHMARKS.md).
const HANDOVER_ILP_UP_TO: usize = 8_000;

/// Whether a part gets the first, whole-part integer program: up to [`Strategy::ilp_up_to`]
/// candidates, or [`HANDOVER_ILP_UP_TO`] when some booking of it may change engineer.
fn first_search(problem: &Problem, part: &Part, strategy: Strategy) -> bool {
    let size = part.size(problem);
    let handovers = || {
        part.affected.iter().any(|&a| {
            let own = problem.affected[a as usize].engineer;
            problem.candidates[problem.candidates_of(a)].iter().any(|c| c.engineer != own)
        })
    };
    size <= strategy.ilp_up_to && (size <= HANDOVER_ILP_UP_TO || !handovers())
}

/// How often the calling thread looks at the cancel flag while parts are being solved.
const POLL: Duration = Duration::from_millis(10);
/// How long after the deadline the calling thread still waits for parts that stop at it.
const GRACE: Duration = Duration::from_millis(20);

fn report_progress(options: &Options, progress: Progress) {
    if let Some(report) = &options.progress {
        report(progress);
    }
}

/// The contract's solution from the final choice of every affected booking, in instance order.
fn assemble(instance: &Instance, problem: &Problem, chosen: &[Option<usize>]) -> Solution {
    let mut assignments = Vec::new();
    let mut unresolved_bookings = Vec::new();
    for (i, a) in problem.affected.iter().enumerate() {
        let booking = instance.bookings[a.booking].id.clone();
        match chosen[i] {
            Some(c) => {
                let c = &problem.candidates[c];
                let room = instance.rooms[c.room as usize].id.clone();
                // Version 1 solutions name no engineer: it never changes there.
                let engineer = c.engineer.filter(|_| instance.version >= 2).map(|g| problem.engineers[g as usize].clone());
                assignments.push(Assignment { booking, room, start: c.start, end: c.end, engineer });
            }
            None => unresolved_bookings.push(Unresolved { booking, reason: reason(instance, problem, i, chosen) }),
        }
    }
    let mut solution = Solution {
        moved: assignments.len(),
        unresolved: unresolved_bookings.len(),
        cost: 0,
        assignments,
        unresolved_bookings,
    };
    solution.cost = crate::validate::cost(instance, &solution);
    solution
}
