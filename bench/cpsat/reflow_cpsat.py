#!/usr/bin/env python3
"""An independent OR-Tools CP-SAT model of the reflow problem, written from REFLOW.md alone.

Usage:
    reflow_cpsat.py INSTANCE.json [--time SECONDS] [--workers N] [--out SOLUTION.json]
                    [--formulation cliques|intervals] [--hint SOLUTION.json]

The model (REFLOW.md versions 1 and 2):
  * one Boolean per candidate placement (booking, room, start, engineer) allowed by rules 1-3, 7
    and 8 and not clashing with a fixed booking (rules 4-5 against fixed bookings); the engineer is
    the booking's own (when it can work then) or, in version 2, a listed engineer with every skill
    of `engineer_skills` who works all of it in one stretch of `available` and is not away;
  * at most one candidate per affected booking; an affected booking with none chosen is unresolved;
    pinned affected bookings (rule 6) get no candidate at all;
  * rules 4-5 between placed bookings, either as at-most-one cliques over the candidates that
    cover each start point of a room/client/engineer (default: two half-open intervals overlap
    exactly when both contain the later start), or as optional intervals + AddNoOverlap
    (room intervals are extended by the buffer);
  * the exact REFLOW.md cost: 1000 U + 20 S + 2 T + 1 R + 10 E with the instance's weights, where the
    series term is, per series, (distinct rooms used by its placed affected occurrences - 1),
    and 0 for a series with none placed.

--hint starts the search from another solver's solution (only to try to close a gap: the
independent comparison in compare.py never uses it).

Writes a REFLOW.md solution JSON (to --out, or stdout) and prints a one-line JSON summary on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model

DAY = 1440
DEFAULT_WEIGHTS = {"unresolved": 1000, "series_split": 20, "shift_step": 2, "room_change": 1, "engineer_change": 10}


# ----------------------------------------------------------------------------- instance


def load_instance(path: str) -> dict:
    """Reads an instance and fills in the defaults REFLOW.md gives for missing fields."""
    with open(path) as f:
        inst = json.load(f)
    inst.setdefault("grid_minutes", 15)
    inst.setdefault("max_shift_minutes", 120)
    inst.setdefault("buffer_minutes", 0)
    inst["weights"] = {**DEFAULT_WEIGHTS, **(inst.get("weights") or {})}
    for room in inst["rooms"]:
        room.setdefault("features", [])
        room.setdefault("open", [])
        room.setdefault("offline", [])
    for b in inst["bookings"]:
        b.setdefault("engineer", None)
        b.setdefault("party_size", 1)
        b.setdefault("requires", [])
        b.setdefault("series", None)
        b.setdefault("movable", True)
        b.setdefault("engineer_skills", [])
    inst.setdefault("engineers", [])
    for g in inst["engineers"]:
        g.setdefault("skills", [])
        g.setdefault("available", None)
        g.setdefault("away", [])
    return inst


def overlaps(s1: int, e1: int, s2: int, e2: int) -> bool:
    """Half-open intervals [s1, e1) and [s2, e2) share a minute."""
    return s1 < e2 and s2 < e1


def works_every_minute(g: dict, s: int, e: int) -> bool:
    """The engineer is at work at every minute of [s, e) (by the union of `available`), not away."""
    if any(overlaps(s, e, a, b) for a, b in g["away"]):
        return False
    if g["available"] is None:
        return True
    minute_covered = s
    for a, b in sorted(g["available"]):
        if a <= minute_covered < b:
            minute_covered = b
    return minute_covered >= e


def can_take(g: dict, s: int, e: int) -> bool:
    """Rule 8: [s, e) inside one interval of `available` (or no list), overlapping no `away`."""
    inside = g["available"] is None or any(a <= s and e <= b for a, b in g["available"])
    return inside and not any(overlaps(s, e, a, b) for a, b in g["away"])


def is_affected(booking: dict, rooms: dict, engineers: dict) -> bool:
    """Its room is offline at some minute of [start, end), or its listed engineer cannot work it all."""
    room = rooms.get(booking["room"])
    if room is None:
        return False
    if any(overlaps(booking["start"], booking["end"], a, b) for a, b in room["offline"]):
        return True
    g = engineers.get(booking["engineer"])
    return g is not None and not works_every_minute(g, booking["start"], booking["end"])


# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class Candidate:
    """One placement of an affected booking: `room` at `[start, end)`, `steps` grid steps away,
    run by `engineer` (None when the booking has none)."""

    booking: str
    room: str
    start: int
    end: int
    steps: int
    engineer: str | None


def allowed_starts(b: dict, grid: int, max_shift: int) -> list[tuple[int, int]]:
    """Rule 1: (start, |k|) for starts on the grid, within max_shift, on the booking's day."""
    day = b["start"] // DAY
    k_max = max_shift // grid
    starts = []
    for k in range(-k_max, k_max + 1):
        s = b["start"] + k * grid
        if s // DAY == day:
            starts.append((s, abs(k)))
    return starts


def room_fits(b: dict, room: dict) -> bool:
    """Rule 2: capacity and features."""
    return room["capacity"] >= b["party_size"] and set(b["requires"]) <= set(room["features"])


def room_available(room: dict, s: int, e: int) -> bool:
    """Rule 3: inside one open interval, and touching no offline interval."""
    inside = any(a <= s and e <= b for a, b in room["open"])
    return inside and not any(overlaps(s, e, a, b) for a, b in room["offline"])


class FixedIndex:
    """The fixed (non-affected) bookings, by room, client and engineer, for rules 4-5."""

    def __init__(self, fixed: list[dict], buffer: int):
        self.buffer = buffer
        self.by_room = defaultdict(list)
        self.by_client = defaultdict(list)
        self.by_engineer = defaultdict(list)
        for f in fixed:
            self.by_room[f["room"]].append((f["start"], f["end"]))
            self.by_client[f["client"]].append((f["start"], f["end"]))
            if f["engineer"] is not None:
                self.by_engineer[f["engineer"]].append((f["start"], f["end"]))

    def clashes(self, b: dict, room_id: str, s: int, e: int) -> bool:
        """A fixed booking in the room (with buffer) or of the client clashes."""
        buf = self.buffer
        if any(s < fe + buf and fs < e + buf for fs, fe in self.by_room[room_id]):
            return True
        return any(overlaps(s, e, fs, fe) for fs, fe in self.by_client[b["client"]])

    def engineer_busy(self, engineer: str | None, s: int, e: int) -> bool:
        """A fixed booking of the engineer overlaps [s, e)."""
        return engineer is not None and any(overlaps(s, e, fs, fe) for fs, fe in self.by_engineer[engineer])


def engineer_choices(b: dict, engineers: dict) -> list[str | None]:
    """Rule 7: the booking's own engineer, and (when it has one) every listed engineer with its skills."""
    own = b["engineer"]
    if own is None:
        return [None]
    others = [g for g, e in engineers.items() if g != own and set(b["engineer_skills"]) <= set(e["skills"])]
    return [own] + sorted(others)


def build_candidates(inst: dict, affected: list[dict], fixed: list[dict]) -> dict[str, list[Candidate]]:
    """Every placement of every movable affected booking allowed by rules 1-3, 7 and 8 and by the
    fixed bookings."""
    index = FixedIndex(fixed, inst["buffer_minutes"])
    engineers = {g["id"]: g for g in inst["engineers"]}
    candidates: dict[str, list[Candidate]] = {}
    for b in affected:
        options = []
        if b["movable"]:
            duration = b["end"] - b["start"]
            starts = allowed_starts(b, inst["grid_minutes"], inst["max_shift_minutes"])
            choices = engineer_choices(b, engineers)
            # Per start, the engineers who may run it then (rule 8 and their fixed bookings).
            free = {}
            for s, _ in starts:
                e = s + duration
                free[s] = [g for g in choices
                           if (g not in engineers or can_take(engineers[g], s, e)) and not index.engineer_busy(g, s, e)]
            for room in inst["rooms"]:
                if not room_fits(b, room):
                    continue
                for s, steps in starts:
                    e = s + duration
                    if free[s] and room_available(room, s, e) and not index.clashes(b, room["id"], s, e):
                        options.extend(Candidate(b["id"], room["id"], s, e, steps, g) for g in free[s])
        candidates[b["id"]] = options
    return candidates


# ----------------------------------------------------------------------------- model


def add_clique_conflicts(model: cp_model.CpModel, groups: dict, x: dict, extra: int) -> None:
    """Rules 4-5 among placed bookings: per group (a room, client or engineer), at most one chosen
    candidate covers each candidate start t, where a candidate covers [start, end + extra)."""
    for members in groups.values():
        if len(members) >= 2:
            for clique in maximal_covering_sets(members, extra):
                model.AddAtMostOne(x[c] for c in clique)


def maximal_covering_sets(members: list[Candidate], extra: int) -> list[list[Candidate]]:
    """Sweeps the candidate starts t in order; the set covering t is kept unless the set covering
    the next start contains it (nothing ended in between), which makes it redundant."""
    members = sorted(members, key=lambda c: c.start)
    starts = sorted({c.start for c in members})
    cliques, active, i = [], [], 0
    for t in starts:
        still = [c for c in active if t < c.end + extra]
        if len(still) < len(active) and len(active) > 1:
            cliques.append(active)  # something ended before t: the previous set is maximal
        active = still
        while i < len(members) and members[i].start == t:
            active.append(members[i])
            i += 1
    if len(active) > 1:
        cliques.append(active)
    return cliques


def add_interval_conflicts(model: cp_model.CpModel, groups: dict, x: dict, extra: int, tag: str) -> None:
    """Rules 4-5 among placed bookings as optional intervals [start, end + extra) and AddNoOverlap."""
    for key, members in groups.items():
        if len(members) < 2:
            continue
        intervals = [
            model.NewOptionalFixedSizeIntervalVar(c.start, c.end + extra - c.start, x[c], f"{tag}:{key}:{i}")
            for i, c in enumerate(members)
        ]
        model.AddNoOverlap(intervals)


def build_model(inst, affected, candidates, formulation):
    """The CP-SAT model; returns (model, x: candidate -> BoolVar, objective constant parts)."""
    model = cp_model.CpModel()
    by_id = {b["id"]: b for b in affected}
    w = inst["weights"]
    x = {}
    for bid, options in candidates.items():
        for c in options:
            x[c] = model.NewBoolVar(f"x[{bid},{c.room},{c.start},{c.engineer}]")
        if options:
            model.AddAtMostOne(x[c] for c in options)

    all_candidates = [c for options in candidates.values() for c in options]
    by_room, by_client, by_engineer = defaultdict(list), defaultdict(list), defaultdict(list)
    for c in all_candidates:
        b = by_id[c.booking]
        by_room[c.room].append(c)
        by_client[b["client"]].append(c)
        if c.engineer is not None:
            by_engineer[c.engineer].append(c)
    buffer = inst["buffer_minutes"]
    if formulation == "cliques":
        add_clique_conflicts(model, by_room, x, buffer)
        add_clique_conflicts(model, by_client, x, 0)
        add_clique_conflicts(model, by_engineer, x, 0)
    else:
        add_interval_conflicts(model, by_room, x, buffer, "room")
        add_interval_conflicts(model, by_client, x, 0, "client")
        add_interval_conflicts(model, by_engineer, x, 0, "engineer")

    # Cost. U = |affected| - placed, so each chosen candidate earns -w.unresolved.
    terms = []
    for c in all_candidates:
        coefficient = -w["unresolved"] + w["shift_step"] * c.steps
        if c.room != by_id[c.booking]["room"]:
            coefficient += w["room_change"]
        if c.engineer != by_id[c.booking]["engineer"]:
            coefficient += w["engineer_change"]
        terms.append(coefficient * x[c])
    terms.append(series_split_term(model, affected, candidates, x) * w["series_split"])
    constant = w["unresolved"] * len(affected)
    model.Minimize(sum(terms) + constant)
    return model, x


def series_split_term(model, affected, candidates, x):
    """S = sum over series of (rooms used by placed occurrences - any placed), exactly:
    used[series, room] = OR of its chosen candidates in that room, placed[series] = OR of all."""
    by_series = defaultdict(list)
    for b in affected:
        if b["series"] is not None:
            by_series[b["series"]].extend(candidates[b["id"]])
    total = 0
    for series, options in by_series.items():
        if not options:
            continue
        by_room = defaultdict(list)
        for c in options:
            by_room[c.room].append(x[c])
        used = []
        for room, literals in by_room.items():
            u = model.NewBoolVar(f"used[{series},{room}]")
            model.AddMaxEquality(u, literals)
            used.append(u)
        placed = model.NewBoolVar(f"placed[{series}]")
        model.AddMaxEquality(placed, used)
        total = total + sum(used) - placed
    return total


# ----------------------------------------------------------------------------- solution


def unresolved_reason(b: dict, options: list[Candidate]) -> str:
    """A generic plain-words reason for an affected booking left unresolved."""
    if not b["movable"]:
        return "pinned (movable: false)"
    if not options:
        return "no compatible room open and free of fixed bookings, client and engineer within the allowed shift"
    return "every candidate placement is taken by another moved booking (room, client or engineer)"


def extract_solution(solver, inst, affected, candidates, x) -> dict:
    """The REFLOW.md solution JSON of the best assignment found, with its cost recomputed."""
    w = inst["weights"]
    assignments, unresolved = [], []
    steps = changes = handed = 0
    rooms_by_series = defaultdict(set)
    for b in affected:
        chosen = [c for c in candidates[b["id"]] if solver.BooleanValue(x[c])]
        if chosen:
            c = chosen[0]
            assignments.append({"booking": b["id"], "room": c.room, "start": c.start, "end": c.end,
                                "engineer": c.engineer})
            steps += c.steps
            changes += c.room != b["room"]
            handed += c.engineer != b["engineer"]
            if b["series"] is not None:
                rooms_by_series[b["series"]].add(c.room)
        else:
            unresolved.append({"booking": b["id"], "reason": unresolved_reason(b, candidates[b["id"]])})
    split = sum(len(rooms) - 1 for rooms in rooms_by_series.values())
    cost = (w["unresolved"] * len(unresolved) + w["series_split"] * split
            + w["shift_step"] * steps + w["room_change"] * changes + w["engineer_change"] * handed)
    return {"moved": len(assignments), "unresolved": len(unresolved), "cost": cost,
            "assignments": assignments, "unresolved_bookings": unresolved}


def add_hint(model, x, candidates, hint_path: str) -> None:
    """Hints the candidates chosen in a REFLOW.md solution (and every other candidate off)."""
    with open(hint_path) as f:
        solution = json.load(f)
    own = {b: options[0].engineer for b, options in candidates.items() if options}
    chosen = {(a["booking"], a["room"], a["start"], a.get("engineer") or own.get(a["booking"]))
              for a in solution["assignments"]}
    for options in candidates.values():
        for c in options:
            model.AddHint(x[c], (c.booking, c.room, c.start, c.engineer) in chosen)


def solve(path: str, seconds: float, workers: int, formulation: str,
          hint: str | None = None) -> tuple[dict | None, dict]:
    """Builds and solves the model; returns (solution or None, summary)."""
    started = time.monotonic()
    inst = load_instance(path)
    rooms = {r["id"]: r for r in inst["rooms"]}
    engineers = {g["id"]: g for g in inst["engineers"]}
    affected = [b for b in inst["bookings"] if is_affected(b, rooms, engineers)]
    fixed = [b for b in inst["bookings"] if not is_affected(b, rooms, engineers)]
    candidates = build_candidates(inst, affected, fixed)
    model, x = build_model(inst, affected, candidates, formulation)
    if hint:
        add_hint(model, x, candidates, hint)
    built = time.monotonic() - started

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = workers
    status = solver.Solve(model)
    summary = {
        "instance": path, "status": solver.StatusName(status), "affected": len(affected),
        "candidates": len(x), "formulation": formulation, "workers": workers,
        "hint": hint, "build_s": round(built, 2), "solve_wall_s": round(solver.WallTime(), 2),
    }
    solution = None
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solution = extract_solution(solver, inst, affected, candidates, x)
        summary.update(objective=int(round(solver.ObjectiveValue())), bound=int(round(solver.BestObjectiveBound())),
                       cost=solution["cost"])
    return solution, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instance")
    parser.add_argument("--time", type=float, default=120.0, help="CP-SAT time limit, seconds (default 120)")
    parser.add_argument("--workers", type=int, default=2, help="CP-SAT workers (default 2)")
    parser.add_argument("--out", help="write the solution here instead of stdout")
    parser.add_argument("--formulation", choices=["cliques", "intervals"], default="cliques")
    parser.add_argument("--hint", help="a REFLOW.md solution to start from (not independent: see docstring)")
    args = parser.parse_args()

    solution, summary = solve(args.instance, args.time, args.workers, args.formulation, args.hint)
    if solution is not None:
        text = json.dumps(solution, indent=2) + "\n"
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    print(json.dumps(summary), file=sys.stderr)
    return 0 if solution is not None else 1


if __name__ == "__main__":
    sys.exit(main())
