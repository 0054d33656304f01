//! `studioflow solve`: a REFLOW.md instance solved, the solution JSON on stdout and a summary line
//! on stderr. It reads no database: anyone's instance can be solved and checked.

use super::{CommandError, CommandResult};
use anyhow::{anyhow, Context};
use std::io::{Read, Write};
use std::path::Path;
use studioflow_solver as solver;

/// `solve`: reads an instance, prints the solution JSON on stdout and a summary line on stderr.
pub fn solve(file: &Path, threads: Option<usize>, time_limit: f64, work_limit: Option<u64>) -> CommandResult {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display())).map_err(CommandError::Input)?
    };
    let instance: solver::Instance = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a REFLOW.md instance", file.display()))
        .map_err(CommandError::Input)?;
    instance.check().map_err(|e| CommandError::Input(anyhow!("the instance is invalid: {e}")))?;
    if !(time_limit > 0.0 && time_limit <= 86_400.0) {
        return Err(CommandError::Input(anyhow!("--time-limit must be more than 0 and at most 86400 seconds")));
    }
    if threads == Some(0) {
        return Err(CommandError::Input(anyhow!("--threads must be at least 1")));
    }
    let options = solver::Options {
        threads: threads.unwrap_or(solver::Options::default().threads),
        time_limit: std::time::Duration::from_secs_f64(time_limit),
        work_limit,
        ..solver::Options::default()
    };
    let report = solver::solve_with_report(&instance, &options);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &report.solution).map_err(|e| CommandError::Failed(e.into()))?;
    writeln!(out)?;
    eprintln!("{}", summary_line(&report, options.threads));
    Ok(())
}

fn summary_line(report: &solver::Report, threads: usize) -> String {
    let s = &report.solution;
    let quality = if report.proven_optimal {
        "proven optimal".to_owned()
    } else {
        format!("{}, lower bound {}", solver::quality(s.cost, report.lower_bound), report.lower_bound)
    };
    let stopped = if report.cancelled { ", cancelled" } else if report.timed_out { ", time limit reached" } else { "" };
    format!(
        "moved {}, unresolved {}, cost {} ({quality}) in {:.2} s on {threads} thread(s), {} part(s), {} round(s) of improvement{stopped}",
        s.moved, s.unresolved, s.cost, report.elapsed.as_secs_f64(), report.parts, report.rounds
    )
}

