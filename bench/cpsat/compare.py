#!/usr/bin/env python3
"""Compares studioflow's reflow solver with the independent CP-SAT model on the same instances.

Usage (from anywhere; see README.md):
    compare.py [--studioflow BIN] [--cpsat-time 120] [--workers 8] [--only NAME,...] [--no-generate]

1. Writes the instances into bench/cpsat/instances/: the demo month (`studioflow init --demo`,
   then `export-instance --month 2026-09 --offline studio-b`) and the generated months
   `generate::{studio,chain,large_chain}(seed)` and, with engineers away (version 2),
   `generate::{studio_away,chain_away}(seed)`, through the small program in geninst/.
2. For each instance runs CP-SAT (reflow_cpsat.py, --cpsat-time s, --workers, default 8 on the 2 cores) and
   `studioflow solve --threads 2 --time-limit L` (10 s, 20 s for the 80-room chain), one after
   the other so that each has both cores.
3. Checks both solutions with check.py (rules 1-8, cost recomputed) and prints a Markdown table;
   everything is also kept in bench/cpsat/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import check

HERE = Path(__file__).resolve().parent
INSTANCES = HERE / "instances"
RESULTS = HERE / "results"

# name -> (geninst spec or None for the demo month, studioflow time limit in seconds)
DEFAULT_SET = {
    "demo-2026-09": (None, 10),
    "studio-1": ("studio:1", 10),
    "studio-2": ("studio:2", 10),
    "chain-1": ("chain:1", 10),
    "chain-2": ("chain:2", 10),
    "chain-3": ("chain:3", 10),
    "large-1": ("large:1", 20),
    "large-2": ("large:2", 20),
    # Version 2: engineers away (generate::studio_away, generate::chain_away).
    "studio-away-1": ("studio-away:1", 10),
    "studio-away-2": ("studio-away:2", 10),
    "chain-away-1": ("chain-away:1", 10),
    "chain-away-2": ("chain-away:2", 10),
}


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Runs a command, failing loudly with its stderr."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode not in (0,):
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    return done


def generate(names: list[str], studioflow: str) -> None:
    """Writes every named instance into INSTANCES."""
    INSTANCES.mkdir(exist_ok=True)
    specs = [DEFAULT_SET[n][0] for n in names if DEFAULT_SET[n][0]]
    if specs:
        manifest = HERE / "geninst" / "Cargo.toml"
        run(["cargo", "run", "--quiet", "--release", "--manifest-path", str(manifest), "--", str(INSTANCES), *specs])
    if "demo-2026-09" in names:
        db = RESULTS / "demo.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        run([studioflow, "init", "--db", str(db), "--demo"])
        out = run([studioflow, "export-instance", "--db", str(db), "--month", "2026-09", "--offline", "studio-b"])
        (INSTANCES / "demo-2026-09.json").write_text(out.stdout)


def run_cpsat(name: str, seconds: float, workers: int) -> dict:
    """CP-SAT on one instance; returns its summary line (and writes its solution)."""
    out = RESULTS / f"{name}.cpsat.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(HERE / "reflow_cpsat.py"), str(INSTANCES / f"{name}.json"),
           "--time", str(seconds), "--workers", str(workers), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    summary["solution"] = str(out) if out.exists() else None
    return summary


def run_studioflow(name: str, studioflow: str, limit: float) -> dict:
    """studioflow solve on one instance with 2 threads; returns wall time and its summary line."""
    out = RESULTS / f"{name}.studioflow.json"
    started = time.monotonic()
    done = run([studioflow, "solve", str(INSTANCES / f"{name}.json"), "--threads", "2", "--time-limit", str(limit)])
    wall = time.monotonic() - started
    out.write_text(done.stdout)
    return {"wall_s": round(wall, 2), "summary": done.stderr.strip().splitlines()[-1], "solution": str(out)}


def verdict(name: str, solution: str | None) -> dict | None:
    return check.check(str(INSTANCES / f"{name}.json"), solution) if solution else None


def row(name: str, cp: dict, cp_check: dict | None, sf: dict, sf_check: dict) -> str:
    """One Markdown table row."""
    cp_cost = cp_check["cost"] if cp_check else None
    sf_cost = sf_check["cost"]
    if cp_cost is None or sf_cost < cp_cost:
        winner = "studioflow"
    elif sf_cost == cp_cost:
        winner = "tie"
    else:
        winner = "CP-SAT"
    gap = f"{100 * (sf_cost - cp_cost) / cp_cost:+.3f} %" if cp_cost else "-"
    bound = cp.get("bound", "-")
    to_bound = f"{100 * (sf_cost - bound) / bound:.3f} %" if isinstance(bound, int) and bound > 0 else "-"
    valid = "yes" if sf_check["valid"] and (cp_check is None or cp_check["valid"]) else "**NO**"
    return (f"| {name} | {sf_check['affected']} | {cp.get('candidates', '-')} | {cp_cost if cp_cost is not None else '-'} "
            f"| {bound} | {cp['status']} | {sf_cost} | {sf['wall_s']:.2f} s | {winner} | {gap} | {to_bound} | {valid} |")


HEADER = ("| instance | affected | CP-SAT candidates | CP-SAT cost | CP-SAT bound | CP-SAT status | studioflow cost "
          "| studioflow time | better | studioflow vs CP-SAT | studioflow vs CP-SAT bound | both valid |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = os.environ.get("CARGO_TARGET_DIR", str(HERE.parent.parent / "target"))
    parser.add_argument("--studioflow", default=str(Path(target) / "release" / "studioflow"))
    parser.add_argument("--cpsat-time", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=8,
                        help="CP-SAT workers (default 8, interleaved on the 2 cores: see README.md)")
    parser.add_argument("--only", help="comma-separated instance names (default: all of DEFAULT_SET)")
    parser.add_argument("--no-generate", action="store_true", help="reuse the files in instances/")
    args = parser.parse_args()

    names = args.only.split(",") if args.only else list(DEFAULT_SET)
    RESULTS.mkdir(exist_ok=True)
    if not args.no_generate:
        generate(names, args.studioflow)

    rows, records = [], []
    for name in names:
        limit = DEFAULT_SET[name][1]
        sf = run_studioflow(name, args.studioflow, limit)
        sf_check = verdict(name, sf["solution"])
        cp = run_cpsat(name, args.cpsat_time, args.workers)
        cp_check = verdict(name, cp["solution"])
        record = {"instance": name, "studioflow": sf, "studioflow_check": sf_check,
                  "cpsat": cp, "cpsat_check": cp_check, "studioflow_limit_s": limit}
        records.append(record)
        print(json.dumps(record), file=sys.stderr, flush=True)
        rows.append(row(name, cp, cp_check, sf, sf_check))
    table = HEADER + "\n" + "\n".join(rows)
    (RESULTS / "table.md").write_text(table + "\n")
    (RESULTS / "records.json").write_text(json.dumps(records, indent=2) + "\n")
    print(table)
    return 0 if all(r["studioflow_check"]["valid"] and (r["cpsat_check"] or {"valid": True})["valid"]
                    for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
