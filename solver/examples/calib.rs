//! Temporary: baseline run.
use studioflow_solver::{generate, Options, solve_with_report, validate};
fn main() {
    let fam = std::env::args().nth(1).unwrap();
    let seed: u64 = std::env::args().nth(2).unwrap().parse().unwrap();
    let t: u64 = std::env::args().nth(3).unwrap().parse().unwrap();
    let inst = match fam.as_str() { "c300" => generate::chain_300(seed), "c1000" => generate::chain_1000(seed), "loose" => generate::loose(seed), "c80" => generate::large_chain(seed), _ => panic!() };
    let aff = inst.bookings.iter().filter(|b| inst.is_affected(b)).count();
    println!("{fam} {seed}: bookings {} affected {aff}", inst.bookings.len());
    let r = solve_with_report(&inst, &Options { threads: 2, time_limit: std::time::Duration::from_secs(t), ..Options::default() });
    println!("cost {} bound {} gap {:.3}% greedy {} parts {} largest {} elapsed {:.2} phases {:?} timed_out {}", r.solution.cost, r.lower_bound, 100.0*(r.solution.cost-r.lower_bound) as f64/r.solution.cost as f64, r.greedy_cost, r.parts, r.largest_part, r.elapsed.as_secs_f64(), r.phases, r.timed_out);
    assert!(validate(&inst, &r.solution).is_ok());
    let st = std::fs::read_to_string("/proc/self/status").unwrap();
    for l in st.lines() { if l.starts_with("VmHWM") { println!("{l}"); } }
}
