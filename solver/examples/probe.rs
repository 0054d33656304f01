//! Scratch probe (temporary).
use std::time::Duration;
use studioflow_solver::*;
fn main() {
    let which = std::env::args().nth(1).unwrap_or("studio".into());
    let threads: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(2);
    for seed in 1..=2 {
        let inst = match which.as_str() { "chain" => generate::chain(seed), "large" => generate::large_chain(seed), _ => generate::studio(seed) };
        let opts = Options { threads, time_limit: Duration::from_secs(60), ..Options::default() };
        println!("occupancy {:.2} series {:.2}", occupancy(&inst), inst.bookings.iter().filter(|b| b.series.is_some()).count() as f64 / inst.bookings.len() as f64);
        let r = solve_with_report(&inst, &opts);
        let v = validate(&inst, &r.solution);
        println!("seed {seed}: bookings {} affected {} parts {} largest {} cost {} greedy {} lb {} opt {} moved {} unres {} t {:?} phases {:?} valid {}",
          inst.bookings.len(), r.affected, r.parts, r.largest_part, r.solution.cost, r.greedy_cost, r.lower_bound, r.proven_optimal, r.solution.moved, r.solution.unresolved, r.elapsed, r.phases, v.is_ok());
        if let Err(v) = v { for x in v.iter().take(5) { println!("  {x}"); } }
        for u in r.solution.unresolved_bookings.iter().take(6) { println!("  {}: {}", u.booking, u.reason); }
    }
}
#[allow(dead_code)]
fn occupancy(inst: &Instance) -> f64 {
    let open: i64 = inst.rooms.iter().flat_map(|r| r.open.iter()).map(|i| i[1]-i[0]).sum();
    let booked: i64 = inst.bookings.iter().map(|b| b.end-b.start).sum();
    booked as f64 / open as f64
}
