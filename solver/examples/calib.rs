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
    {
        let by: std::collections::HashMap<&str, &studioflow_solver::Booking> = inst.bookings.iter().map(|b| (b.id.as_str(), b)).collect();
        let (mut t, mut rc) = (0, 0);
        let mut sr: std::collections::HashMap<&str, std::collections::HashSet<&str>> = Default::default();
        for a in &r.solution.assignments { let b = by[a.booking.as_str()]; t += (a.start - b.start).abs() / 15; if a.room != b.room { rc += 1; } if let Some(s) = &b.series { sr.entry(s).or_default().insert(&a.room); } }
        let splits: usize = sr.values().map(|v| v.len() - 1).sum();
        println!("U {} T {t} R {rc} S {splits}", r.solution.unresolved);
    }
    if std::env::var_os("SF_UNRES").is_some() { for u in &r.solution.unresolved_bookings { if !u.reason.starts_with("pinned") { println!("  {}: {}", u.booking, u.reason); } } }
    let st = std::fs::read_to_string("/proc/self/status").unwrap();
    for l in st.lines() { if l.starts_with("VmHWM") { println!("{l}"); } }
}
