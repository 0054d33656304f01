//! The benchmark of BENCHMARKS.md: generated months at three scales, solved on 1 and 2 threads,
//! against the greedy alone and the unsplit model, plus how fast a cancel returns.
//! Run with `cargo run --release -p studioflow-solver --example bench` (add `quick` for one seed).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use studioflow_solver::{Instance, Options, Report, Strategy, generate, solve_with_strategy, validate};

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let seeds: &[u64] = if quick { &[1] } else { &[1, 2, 3] };
    type Scale = (&'static str, fn(u64) -> Instance, u64);
    let scales: [Scale; 3] =
        [("studio", generate::studio, 10), ("chain-40", generate::chain, 10), ("chain-80", generate::large_chain, 20)];

    println!("| scale | seed | affected | parts | threads | method | time | cost | moved | unresolved | gap to bound | optimal |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, make, limit) in scales {
        for &seed in seeds {
            let instance = make(seed);
            let runs = [
                (1, "split ILP", Strategy::default()),
                (2, "split ILP", Strategy::default()),
                (2, "greedy only", Strategy { ilp: false, ..Strategy::default() }),
                (2, "whole ILP", Strategy { split: false, ..Strategy::default() }),
            ];
            let mut answers = Vec::new();
            for (threads, method, strategy) in runs {
                let options = Options { threads, time_limit: Duration::from_secs(limit), ..Options::default() };
                let report = solve_with_strategy(&instance, &options, strategy);
                assert!(validate(&instance, &report.solution).is_ok(), "{name} {seed}: invalid answer");
                row(name, seed, threads, method, &report);
                answers.push(report.solution);
            }
            assert_eq!(answers[0], answers[1], "{name} {seed}: 1 and 2 threads differ");
        }
    }

    println!();
    println!("| cancel set after | returned after the flag | cost returned |");
    println!("|---|---|---|");
    let instance = generate::large_chain(1);
    for after in [0, 30, 60, 200, 1000] {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancel);
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(after));
            flag.store(true, Ordering::Relaxed);
            Instant::now()
        });
        let options = Options { threads: 2, cancel: Some(cancel), ..Options::default() };
        let report = solve_with_strategy(&instance, &options, Strategy::default());
        let returned = Instant::now();
        let set = setter.join().expect("setter thread");
        let latency = returned.saturating_duration_since(set);
        assert!(validate(&instance, &report.solution).is_ok());
        println!("| {after} ms | {:.1} ms | {} |", latency.as_secs_f64() * 1e3, report.solution.cost);
        // Let the stray workers of the cancelled solve finish their chunk before the next run.
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn row(name: &str, seed: u64, threads: usize, method: &str, r: &Report) {
    let s = &r.solution;
    let gap = if s.cost == 0 { 0.0 } else { 100.0 * (s.cost - r.lower_bound) as f64 / s.cost as f64 };
    println!(
        "| {name} | {seed} | {} | {} | {threads} | {method} | {:.2} s | {} | {} | {} | {gap:.3} % | {} |",
        r.affected,
        r.parts,
        r.elapsed.as_secs_f64(),
        s.cost,
        s.moved,
        s.unresolved,
        if r.proven_optimal { "yes" } else { "no" },
    );
}
