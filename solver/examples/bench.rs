//! The benchmark of BENCHMARKS.md: generated months at four scales, solved on 1 and 2 threads,
//! against the greedy alone, the exact split (no thinning), no pruning and the unsplit model,
//! plus how fast a cancel returns. Run with `cargo run --release -p studioflow-solver --example bench`
//! (add `quick` for one seed).
//!
//! `bench -- run FAMILY SEED [threads=2] [time=10] [work=ROUNDS] [out=DIR]` solves one instance
//! (families: demo-free `studio`, `chain-40`, `chain-60`, `chain-80`, `loose`, `chain-300`,
//! `chain-1000`, and with engineers away (version 2) `studio-away`, `chain-40-away`, `chain-300-away`) in a process of its own, so that its peak memory is its own, and prints the
//! cost, the bound and the gap over time from the progress reports; with `out`, it writes the
//! instance and the solution as JSON for `bench/cpsat/check.py`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use studioflow_solver::generate::{self, Config};
use studioflow_solver::{Instance, Options, Report, Strategy, solve_with_strategy, validate};

fn main() {
    if std::env::args().nth(1).as_deref() == Some("run") {
        return run_one();
    }
    let quick = std::env::args().any(|a| a == "quick");
    let seeds: &[u64] = if quick { &[1] } else { &[1, 2, 3] };
    type Scale = (&'static str, fn(u64) -> Instance, u64);
    let scales: [Scale; 4] = [
        ("studio", generate::studio, 10),
        ("chain-40", generate::chain, 10),
        ("chain-60", chain_60, 15),
        ("chain-80", generate::large_chain, 20),
    ];
    let exact = Strategy { thin_above: usize::MAX, ..Strategy::default() };

    println!(
        "| scale | seed | affected | parts | threads | method | time | CPU | ms per affected | cost | moved | unresolved | gap to bound | optimal |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, make, limit) in scales {
        for &seed in seeds {
            let instance = make(seed);
            let big = name == "chain-60" || name == "chain-80";
            let mut runs = vec![
                (1, "split ILP", Strategy::default()),
                (2, "split ILP", Strategy::default()),
                (2, "greedy only", Strategy { ilp: false, ..Strategy::default() }),
            ];
            if big {
                // The unsplit model does not improve on the greedy at these scales (BENCHMARKS.md).
                runs.push((2, "exact split", exact));
            } else {
                runs.push((2, "unpruned", Strategy { prune: false, ..exact }));
                runs.push((2, "whole ILP", Strategy { split: false, ..exact }));
            }
            let mut answers = Vec::new();
            for (threads, method, strategy) in runs {
                let options = Options { threads, time_limit: Duration::from_secs(limit), ..Options::default() };
                let cpu = cpu_seconds();
                let report = solve_with_strategy(&instance, &options, strategy);
                let cpu = cpu_seconds() - cpu;
                assert!(validate(&instance, &report.solution).is_ok(), "{name} {seed}: invalid answer");
                row(name, seed, threads, method, &report, cpu);
                answers.push(report);
            }
            // A time limit may cut either run short; only budgets decide otherwise.
            if !answers[0].timed_out && !answers[1].timed_out {
                assert!(answers[0].solution == answers[1].solution, "{name} {seed}: 1 and 2 threads differ");
            }
        }
    }

    println!();
    println!("| cancel set after | phase then | returned after the flag | cost returned | cost held when set |");
    println!("|---|---|---|---|---|");
    let instance = generate::large_chain(1);
    for after in [0, 30, 60, 200, 1000, 3000, 6000] {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancel);
        // The latest progress report: whether the improvement phase had begun, and its cost.
        let latest: Arc<std::sync::Mutex<Option<(bool, i64)>>> = Arc::default();
        let sink = Arc::clone(&latest);
        let seen = Arc::clone(&latest);
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(after));
            let held = *seen.lock().expect("not poisoned");
            flag.store(true, Ordering::Relaxed);
            (Instant::now(), held)
        });
        let options = Options {
            threads: 2,
            cancel: Some(cancel),
            progress: Some(Arc::new(move |p: studioflow_solver::Progress| {
                *sink.lock().expect("not poisoned") = Some((p.improving, p.cost));
            })),
            ..Options::default()
        };
        let report = solve_with_strategy(&instance, &options, Strategy::default());
        let returned = Instant::now();
        let (set, held) = setter.join().expect("setter thread");
        let latency = returned.saturating_duration_since(set);
        assert!(validate(&instance, &report.solution).is_ok());
        let (phase, held) = match held {
            Some((true, cost)) => ("improving", cost.to_string()),
            Some((false, cost)) => ("first search", cost.to_string()),
            None => ("preparing", "-".to_string()),
        };
        println!("| {after} ms | {phase} | {:.1} ms | {} | {held} |", latency.as_secs_f64() * 1e3, report.solution.cost);
        // Let the stray workers of the cancelled solve finish their chunk before the next run.
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// An intermediate scale between the 40- and the 80-room chains.
fn chain_60(seed: u64) -> Instance {
    generate::generate(&Config { rooms: 60, offline_rooms: 6, ..Config::chain(seed) })
}

/// CPU time of this process so far (all threads), from `/proc/self/stat`: unlike wall time, it
/// hardly depends on what else the shared machine runs. Zero where that file does not exist.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn row(name: &str, seed: u64, threads: usize, method: &str, r: &Report, cpu: f64) {
    let s = &r.solution;
    let gap = if s.cost == 0 { 0.0 } else { 100.0 * (s.cost - r.lower_bound) as f64 / s.cost as f64 };
    let per = 1e3 * r.elapsed.as_secs_f64() / r.affected.max(1) as f64;
    println!(
        "| {name} | {seed} | {} | {} | {threads} | {method} | {:.2} s | {cpu:.2} s | {per:.2} | {} | {} | {} | {gap:.3} % | {}{} |",
        r.affected,
        r.parts,
        r.elapsed.as_secs_f64(),
        s.cost,
        s.moved,
        s.unresolved,
        if r.proven_optimal { "yes" } else { "no" },
        if r.timed_out { " (time limit)" } else { "" },
    );
}

/// The instance family `name` at `seed`.
fn family(name: &str, seed: u64) -> Instance {
    match name {
        "studio" => generate::studio(seed),
        "chain-40" => generate::chain(seed),
        "chain-60" => chain_60(seed),
        "chain-80" => generate::large_chain(seed),
        "loose" => generate::loose(seed),
        "chain-300" => generate::chain_300(seed),
        "chain-1000" => generate::chain_1000(seed),
        "studio-away" => generate::studio_away(seed),
        "chain-40-away" => generate::chain_away(seed),
        "chain-300-away" => generate::chain_300_away(seed),
        other => panic!("unknown family {other}"),
    }
}

/// `run FAMILY SEED [threads=N] [time=S] [work=ROUNDS] [out=DIR]`: one instance, with its gap over time.
fn run_one() {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let name = args.first().expect("a family").clone();
    let seed: u64 = args.get(1).and_then(|s| s.parse().ok()).expect("a seed");
    let flag = |key: &str| args.iter().find_map(|a| a.strip_prefix(&format!("{key}=")).map(str::to_string));
    let threads: usize = flag("threads").map_or(2, |t| t.parse().expect("threads"));
    let time: f64 = flag("time").map_or(10.0, |t| t.parse().expect("time"));
    let work: Option<u64> = flag("work").map(|w| w.parse().expect("work"));
    let out = flag("out");
    let file = flag("file");

    let instance = match &file {
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path).expect("instance file")).expect("instance JSON"),
        None => family(&name, seed),
    };
    let started = Instant::now();
    let events: Arc<std::sync::Mutex<Vec<(f64, i64, i64)>>> = Arc::default();
    let sink = Arc::clone(&events);
    let options = Options {
        threads,
        time_limit: Duration::from_secs_f64(time),
        work_limit: work,
        progress: Some(Arc::new(move |p: studioflow_solver::Progress| {
            sink.lock().expect("not poisoned").push((started.elapsed().as_secs_f64(), p.cost, p.lower_bound));
        })),
        ..Options::default()
    };
    // `cancel=MS`: set the cancel flag MS ms after the start, and say how long the solve took to return.
    let cancel_after: Option<u64> = flag("cancel").map(|c| c.parse().expect("cancel"));
    let flag_set: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
    let options = match cancel_after {
        Some(ms) => {
            let cancel = Arc::new(AtomicBool::new(false));
            let (cancel_flag, set) = (Arc::clone(&cancel), Arc::clone(&flag_set));
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(ms));
                *set.lock().expect("not poisoned") = Some(Instant::now());
                cancel_flag.store(true, Ordering::Relaxed);
            });
            Options { cancel: Some(cancel), ..options }
        }
        None => options,
    };
    let cpu = cpu_seconds();
    let report = solve_with_strategy(&instance, &options, Strategy::default());
    let cpu = cpu_seconds() - cpu;
    if let Some(set) = *flag_set.lock().expect("not poisoned") {
        let improving = events.lock().expect("not poisoned").len();
        println!(
            "cancel set {} ms after the start ({improving} progress reports by then or after): returned {:.1} ms after the flag, cancelled: {}, finish phase {:?}",
            cancel_after.unwrap_or(0),
            Instant::now().saturating_duration_since(set).as_secs_f64() * 1e3,
            report.cancelled,
            report.phases.finish,
        );
    }
    let valid = validate(&instance, &report.solution).is_ok();
    assert!(valid, "{name} {seed}: invalid answer");
    let s = &report.solution;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "| {name} | {seed} | {} | {threads} | {time} s{} | {} | {} | {} | {:.2} s | {:.2} s | {cpu:.2} s | {} MiB | {} | {} |",
        report.affected,
        work.map_or(String::new(), |w| format!(", {w} rounds")),
        s.cost,
        report.lower_bound,
        studioflow_solver::quality(s.cost, report.lower_bound),
        report.phases.prepare.as_secs_f64(),
        report.elapsed.as_secs_f64(),
        peak_rss_mib(),
        report.rounds,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    );
    eprintln!("columns: family | seed | affected | threads | limit | cost | bound | gap | prepare | time | CPU | peak RSS | rounds | load");
    let events = events.lock().expect("not poisoned");
    let at = |t: f64| events.iter().rev().find(|e| e.0 <= t).copied();
    let mut line = format!("gap over time ({name} {seed}):");
    for t in [1.0, 2.0, 5.0, 10.0, 30.0, 60.0] {
        if t > time + 0.5 {
            break;
        }
        match at(t) {
            Some((_, cost, bound)) => line += &format!(" {t} s: {cost} / {bound} = {:.2} %;", studioflow_solver::gap_percent(cost, bound)),
            None => line += &format!(" {t} s: (preparing);"),
        }
    }
    println!("{line}");
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).expect("out dir");
        let stem = format!("{dir}/{name}-{seed}");
        std::fs::write(format!("{stem}.json"), serde_json::to_string(&instance).expect("json")).expect("write instance");
        std::fs::write(format!("{stem}.solution.json"), serde_json::to_string(s).expect("json")).expect("write solution");
    }
}

/// Peak resident memory of this process so far, from `/proc/self/status` (VmHWM); 0 elsewhere.
fn peak_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    kib / 1024
}
