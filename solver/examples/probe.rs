//! A throw-away probe: solves one generated month and prints the report (temporary).
use std::time::Duration;
use studioflow_solver::{Options, Strategy, generate, solve_with_strategy};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let threads: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let inst = match args.get(1).map(String::as_str) { Some("chain") => generate::chain(seed), Some("studio") => generate::studio(seed), _ => generate::large_chain(seed) };
    let dec = std::env::var("SF_DEC").ok().and_then(|v| v.parse().ok()).unwrap_or(6000);
    let r = solve_with_strategy(&inst, &Options { threads, time_limit: Duration::from_secs(60), ..Options::default() }, Strategy { thin_above: dec, ..Strategy::default() });
    println!("affected={} parts={} largest={} cost={} greedy={} bound={} opt={} elapsed={:?} phases={:?}", r.affected, r.parts, r.largest_part, r.solution.cost, r.greedy_cost, r.lower_bound, r.proven_optimal, r.elapsed, r.phases);
}
