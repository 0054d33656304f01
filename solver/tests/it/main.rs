//! The solver's integration tests, one binary: worked examples with hand-computed optima, the
//! corners where nothing can move, the checker, seeded property tests, the limits and the
//! improvement phase.

mod agree;
mod anytime;
mod check;
mod corners;
mod engineers;
mod limits;
mod properties;
mod worked;

use studioflow_solver::{Instance, Options, Report, Solution, solve_with_report, validate};

/// An instance from the JSON of REFLOW.md (defaults apply to missing fields).
pub fn instance(json: &str) -> Instance {
    let instance: Instance = serde_json::from_str(json).expect("test instances are valid JSON");
    instance.check().expect("test instances are well formed");
    instance
}

/// Solves on one thread without a practical time limit, and checks the answer is valid.
pub fn solve(instance: &Instance) -> Report {
    let options = Options { threads: 1, time_limit: std::time::Duration::from_secs(60), ..Options::default() };
    let report = solve_with_report(instance, &options);
    assert_valid(instance, &report.solution);
    report
}

pub fn assert_valid(instance: &Instance, solution: &Solution) {
    if let Err(violations) = validate(instance, solution) {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!("invalid solution:\n{}", list.join("\n"));
    }
}

/// The single assignment of a solution, as (booking, room, start).
pub fn placements(solution: &Solution) -> Vec<(&str, &str, i64)> {
    solution.assignments.iter().map(|a| (a.booking.as_str(), a.room.as_str(), a.start)).collect()
}
