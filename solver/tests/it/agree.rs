//! The validator against the independent checker (`bench/cpsat/check.py`, written from REFLOW.md
//! alone) on generated version 2 months: the solver's plan, and plans broken on purpose (another
//! engineer, with or without the skills, away or not; a shift; a room), must get the same verdict
//! and the same cost from both. Needs `python3` (the standard library only).

use std::path::PathBuf;
use std::process::Command;

use studioflow_solver::{Instance, Solution, cost, generate, validate};

use crate::solve;

/// Variants of `solution`, each with one assignment changed and its cost recomputed.
fn variants(instance: &Instance, solution: &Solution) -> Vec<Solution> {
    let mut out = vec![solution.clone()];
    for i in 0..solution.assignments.len().min(12) {
        let mut change = |f: &dyn Fn(&mut studioflow_solver::Assignment)| {
            let mut s = solution.clone();
            f(&mut s.assignments[i]);
            s.cost = cost(instance, &s);
            out.push(s);
        };
        for g in &instance.engineers {
            change(&|x| x.engineer = Some(g.id.clone()));
        }
        change(&|x| x.engineer = None);
        change(&|x| {
            x.start += 15;
            x.end += 15;
        });
        change(&|x| x.room = instance.rooms[(i * 7) % instance.rooms.len()].id.clone());
    }
    out
}

#[test]
fn validator_and_independent_checker_agree_on_version_2_months() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("studioflow-agree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut files, mut ours) = (Vec::new(), Vec::new());
    for seed in 1..=3 {
        let instance = generate::studio_away(seed);
        let report = solve(&instance);
        assert!(report.affected > 0, "seed {seed}: someone is away");
        let path = dir.join(format!("studio-away-{seed}.json"));
        std::fs::write(&path, serde_json::to_string(&instance).unwrap()).unwrap();
        for (k, s) in variants(&instance, &report.solution).iter().enumerate() {
            let sol = dir.join(format!("studio-away-{seed}.{k}.solution.json"));
            std::fs::write(&sol, serde_json::to_string(s).unwrap()).unwrap();
            files.push((path.clone(), sol));
            ours.push((validate(&instance, s).is_ok(), s.cost));
        }
    }
    let script = "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport check\npairs = json.load(open(sys.argv[2]))\n\
                  print(json.dumps([[v['valid'], v['cost']] for v in (check.check(i, s) for i, s in pairs)]))";
    let list = dir.join("pairs.json");
    std::fs::write(&list, serde_json::to_string(&files).unwrap()).unwrap();
    let out = Command::new("python3")
        .args(["-c", script, root.join("bench/cpsat").to_str().unwrap(), list.to_str().unwrap()])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs: Vec<(bool, i64)> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(theirs.len(), ours.len());
    for (k, (ours, theirs)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(ours, theirs, "{}: validator (valid, cost) vs check.py", files[k].1.display());
    }
    let invalid = ours.iter().filter(|(valid, _)| !valid).count();
    assert!(invalid > 10 && invalid < ours.len() - 3, "both kinds of verdict are exercised: {invalid} of {}", ours.len());
    std::fs::remove_dir_all(&dir).ok();
}
