//! The studioflow reflow solver: when rooms go offline for part of a month, or engineers are away,
//! it moves every booking that sat in those rooms or was theirs to the best place and engineer the
//! rules of `REFLOW.md` (versions 1 and 2) allow, or says in plain words why a booking cannot move. It is pure and deterministic: it knows nothing of SQL, MCP or
//! time zones, only the minutes of one month.
//!
//! ```
//! use studioflow_solver::{Options, generate, solve_with_report, validate};
//!
//! // A generated studio month: 6 rooms, one of them offline for two weeks.
//! let instance = generate::studio(42);
//! instance.check().expect("generated instances are well formed");
//!
//! let report = solve_with_report(&instance, &Options::default());
//! let solution = &report.solution;
//! assert_eq!(solution.moved + solution.unresolved, report.affected);
//! assert!(validate(&instance, solution).is_ok());
//! assert!(report.lower_bound <= solution.cost);
//! println!("cost {} ({})", solution.cost, report.quality()); // "proven optimal", or "within 0.80 % of optimal"
//! for unresolved in &solution.unresolved_bookings {
//!     println!("{}: {}", unresolved.booking, unresolved.reason);
//! }
//! ```
//!
//! The modules, in reading order:
//!
//! - [`instance`]: the contract's types, read and written as JSON.
//! - `check`: [`Instance::check`], which rejects malformed instances.
//! - `candidates`: every placement (room, start, engineer) rules 1-5, 7 and 8 allow against fixed bookings (at most a cap per
//!   booking, cheapest first, with a floor for the rest), or why there is none.
//! - `prune`: candidates that a free placement of the same booking dominates are dropped (exact).
//! - `split`: independent parts of the month (connected by time clashes and series), and the groups of
//!   a part that only series link.
//! - `plan`, `greedy`: a part's choice and its exact cost; the greedy incumbent.
//! - `local`: local search on a plan (a split series into one room, bookings to cheaper places,
//!   unresolved bookings placed by short chains of moves).
//! - `model`: the integer program of a part, written with good_lp and searched with microlp from
//!   the greedy start (on big parts over each booking's cheapest candidates only).
//! - `bound`: a Lagrangian lower bound for parts too big to prove with the integer program.
//! - `lns`: the improvement phase, one step per part: bound iterations (once, where the plan leaves
//!   a booking waiting, its group bounded by its own integer program) and one neighbourhood
//!   re-solved exactly.
//! - `reasons`: plain words for unresolved bookings.
//! - `solve`: [`solve`] and [`solve_with_report`]: parallel parts, the improvement rounds,
//!   limits, cancel, progress.
//! - `validate`: [`validate`] and [`cost`], an independent judge of any solution (rules 1-8).
//! - [`generate`]: seeded realistic instances for tests and benchmarks.
#![deny(missing_docs)]

mod bound;
mod candidates;
mod check;
pub mod generate;
mod greedy;
pub mod instance;
mod lns;
mod local;
mod model;
mod plan;
mod prune;
mod reasons;
mod solve;
mod split;
mod validate;

pub use check::InstanceError;
pub use instance::{Assignment, Booking, DAY, Engineer, Instance, Interval, Minute, Room, Solution, Unresolved, VERSION, VERSIONS, Weights};
pub use solve::{Options, Phases, Progress, Report, Strategy, gap_percent, quality, solve, solve_with_report, solve_with_strategy};
pub use validate::{Violation, cost, validate};
