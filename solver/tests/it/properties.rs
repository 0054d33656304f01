//! Seeded property tests over generated instances: every answer is valid and consistent, the
//! ILP never loses to the greedy, the bound holds, and the thread count does not change the answer.

use studioflow_solver::{Options, Strategy, generate, solve_with_report, solve_with_strategy};

use crate::assert_valid;

fn options(threads: usize) -> Options {
    Options { threads, time_limit: std::time::Duration::from_secs(60), ..Options::default() }
}

#[test]
fn small_instances_valid_consistent_and_no_worse_than_greedy() {
    for seed in 0..40 {
        let inst = generate::small(seed);
        let report = solve_with_report(&inst, &options(1));
        let s = &report.solution;
        assert_valid(&inst, s);
        assert_eq!(s.moved + s.unresolved, report.affected, "seed {seed}");
        assert_eq!(s.cost, studioflow_solver::cost(&inst, s), "seed {seed}");
        assert!(s.cost <= report.greedy_cost, "seed {seed}: ILP {} worse than greedy {}", s.cost, report.greedy_cost);
        assert!(report.lower_bound <= s.cost, "seed {seed}");
    }
}

#[test]
fn one_and_two_threads_give_the_same_solution() {
    for seed in [3, 4] {
        let inst = generate::studio(seed);
        assert_eq!(solve_with_report(&inst, &options(1)).solution, solve_with_report(&inst, &options(2)).solution);
    }
}

#[test]
fn splitting_is_exact_on_small_instances() {
    // Parts interact with nothing outside, so the sum of part optima is the month's optimum.
    for seed in 0..12 {
        let inst = generate::small(seed);
        let split = solve_with_report(&inst, &options(1));
        let whole = solve_with_strategy(&inst, &options(1), Strategy { split: false, ..Strategy::default() });
        // Small instances are proven well within their node budgets, so the comparison is made
        // for every seed; a seed that stopped unproven would make it meaningless, and fails.
        assert!(split.proven_optimal && whole.proven_optimal, "seed {seed}: both solves must be proven optimal");
        assert_eq!(split.solution.cost, whole.solution.cost, "seed {seed}");
    }
}

#[test]
fn greedy_alone_is_valid() {
    for seed in 0..10 {
        let inst = generate::studio(seed);
        let report = solve_with_strategy(&inst, &options(1), Strategy { ilp: false, ..Strategy::default() });
        assert_valid(&inst, &report.solution);
        assert_eq!(report.solution.cost, report.greedy_cost);
    }
}

#[test]
fn thinned_parts_stay_valid_deterministic_and_no_worse_than_greedy() {
    // Thinning every part (the default thins only parts above 6,000 candidates): the search runs
    // over each booking's 32 cheapest candidates, plus the greedy's, so it can only improve on it.
    let inst = generate::chain(2);
    let thin = Strategy { thin_above: 0, ..Strategy::default() };
    let one = solve_with_strategy(&inst, &options(1), thin);
    let two = solve_with_strategy(&inst, &options(2), thin);
    assert_valid(&inst, &one.solution);
    assert_eq!(one.solution, two.solution);
    assert!(one.solution.cost <= one.greedy_cost);
    assert!(one.lower_bound <= one.solution.cost, "the bound stays valid: it is not the thinned model's");
}
