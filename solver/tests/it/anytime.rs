//! The improvement phase: it never returns a worse plan than its incumbent, a cancel during it
//! returns that incumbent at once, a work limit gives the same answer on any thread count, and
//! the bounds it proves (Lagrangian, capped candidates) never exceed a proven optimum.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use studioflow_solver::{Options, Progress, Strategy, generate, solve_with_report, solve_with_strategy};

use crate::assert_valid;

/// Generous: only the work limit or the end of the search should stop these solves.
fn with_work(threads: usize, rounds: u64) -> Options {
    Options { threads, time_limit: Duration::from_secs(300), work_limit: Some(rounds), ..Options::default() }
}

#[test]
fn more_rounds_never_give_a_worse_plan_or_a_lower_bound() {
    // Rounds are deterministic, so a run of n rounds is the start of a run of n + 1: the plan's
    // cost can only fall and the bound only rise, from the first pass (0 rounds) on.
    // A loose month (six-hour window) is not proven optimal in its first search.
    let inst = generate::loose(1);
    let first = solve_with_strategy(&inst, &with_work(2, 0), Strategy { improve: false, ..Strategy::default() });
    let mut previous = first.clone();
    for rounds in [0, 1, 4] {
        let report = solve_with_report(&inst, &with_work(2, rounds));
        assert_valid(&inst, &report.solution);
        assert!(report.solution.cost <= previous.solution.cost, "{rounds} rounds: {} after {}", report.solution.cost, previous.solution.cost);
        assert!(report.lower_bound >= previous.lower_bound, "{rounds} rounds: bound {} after {}", report.lower_bound, previous.lower_bound);
        assert!(report.lower_bound <= report.solution.cost);
        previous = report;
    }
    assert!(previous.solution.cost <= first.solution.cost);
    assert_eq!(previous.rounds, 4);
}

#[test]
fn progress_reports_only_better_plans_and_higher_bounds() {
    let inst = generate::loose(2);
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let options = Options { progress: Some(Arc::new(move |p| sink.lock().expect("not poisoned").push(p))), ..with_work(2, 3) };
    let report = solve_with_report(&inst, &options);
    assert_valid(&inst, &report.solution);
    let seen = seen.lock().expect("not poisoned");
    assert!(seen.windows(2).all(|w| w[1].cost <= w[0].cost && w[1].lower_bound >= w[0].lower_bound), "{seen:?}");
    let last = seen.last().expect("progress was reported");
    // The answer is the last plan reported (or one that `complete` improved further).
    assert!(report.solution.cost <= last.cost);
    assert!(last.lower_bound <= report.solution.cost);
    assert!(seen.iter().any(|p| p.improving), "the improvement phase reported");
}

#[test]
fn cancel_during_the_improvement_phase_returns_the_incumbent_promptly() {
    // The cancel is set from the progress report of the improvement phase's first better plan or
    // bound, so it lands in that phase whatever the machine's speed.
    let inst = generate::loose(1);
    let cancel = Arc::new(AtomicBool::new(false));
    let at_cancel: Arc<Mutex<Option<(Instant, i64)>>> = Arc::default();
    let (flag, record) = (Arc::clone(&cancel), Arc::clone(&at_cancel));
    let options = Options {
        threads: 2,
        time_limit: Duration::from_secs(120),
        cancel: Some(Arc::clone(&cancel)),
        progress: Some(Arc::new(move |p: Progress| {
            let mut record = record.lock().expect("not poisoned");
            if p.improving && record.is_none() {
                *record = Some((Instant::now(), p.cost));
                flag.store(true, Ordering::Relaxed);
            }
        })),
        ..Options::default()
    };
    let report = solve_with_report(&inst, &options);
    let returned = Instant::now();
    let (cancelled_at, incumbent) = at_cancel.lock().expect("not poisoned").expect("the improvement phase began");
    assert!(report.cancelled);
    assert!(returned.duration_since(cancelled_at) < Duration::from_secs(2), "the 200 ms figure is in BENCHMARKS.md");
    assert!(report.solution.cost <= incumbent, "{} returned, {incumbent} held at the cancel", report.solution.cost);
    assert!(report.lower_bound <= report.solution.cost);
    assert_valid(&inst, &report.solution);
}

#[test]
fn one_and_two_threads_agree_under_a_work_limit() {
    // chain_away(2): engineers who may change, and a part whose plan leaves a booking waiting
    // (chains of moves, the larger bound work).
    for inst in [generate::large_chain(2), generate::loose(3), generate::chain_away(2)] {
        let one = solve_with_report(&inst, &with_work(1, 3));
        let two = solve_with_report(&inst, &with_work(2, 3));
        assert!(!one.timed_out && !two.timed_out);
        assert_eq!(one.solution, two.solution);
        assert_eq!(one.lower_bound, two.lower_bound);
        // Fewer rounds only when every part is proven or stalled before the third.
        assert_eq!(one.rounds, two.rounds);
        assert!(one.rounds <= 3);
    }
}

#[test]
fn improvement_bounds_never_exceed_a_proven_optimum() {
    // Skipping the first integer program sends every part to the improvement phase, whose bound
    // is Lagrangian; the exact default proves the optimum on these small months.
    let lagrangian = Strategy { ilp_up_to: 0, ..Strategy::default() };
    for seed in 0..16 {
        let inst = generate::small(seed);
        let exact = solve_with_report(&inst, &with_work(1, 20));
        if !exact.proven_optimal {
            continue;
        }
        let relaxed = solve_with_strategy(&inst, &with_work(1, 20), lagrangian);
        assert_valid(&inst, &relaxed.solution);
        assert!(relaxed.lower_bound <= exact.solution.cost, "seed {seed}: bound {} above the optimum {}", relaxed.lower_bound, exact.solution.cost);
        assert!(relaxed.solution.cost >= exact.solution.cost, "seed {seed}");
    }
}

#[test]
fn capped_candidates_keep_the_bound_below_the_optimum() {
    // With at most 3 placements per booking most bookings lose some: their floors keep every
    // bound (trivial, Lagrangian, integer program) valid for the whole instance.
    for seed in 0..16 {
        let inst = generate::small(seed);
        let exact = solve_with_report(&inst, &with_work(1, 20));
        if !exact.proven_optimal {
            continue;
        }
        for cap in [1, 3] {
            let capped = solve_with_strategy(&inst, &with_work(1, 20), Strategy { candidate_cap: cap, candidate_budget: 0, ..Strategy::default() });
            assert_valid(&inst, &capped.solution);
            assert!(capped.lower_bound <= exact.solution.cost, "seed {seed}, cap {cap}: bound {} above {}", capped.lower_bound, exact.solution.cost);
            assert!(capped.solution.cost >= exact.solution.cost, "seed {seed}, cap {cap}");
        }
    }
}
