#!/usr/bin/env python3
"""An independent checker of a reflow solution against REFLOW.md, written from the spec alone.

Usage:
    check.py INSTANCE.json SOLUTION.json

Checks that every affected booking appears exactly once (in `assignments` or `unresolved_bookings`)
and nothing else appears, that every assignment keeps the booking's duration and obeys rules 1-8
(pairwise, against fixed bookings and against the other assignments), and recomputes the cost,
`moved` and `unresolved`. Version 2 (engineers' skills, hours and time off) included: an assignment
without `engineer` (or with null) keeps the booking's own engineer. Prints a one-line JSON verdict; exits 1 when something is broken.
Self-contained on purpose: it shares no code with reflow_cpsat.py.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

DAY = 1440
WEIGHTS = {"unresolved": 1000, "series_split": 20, "shift_step": 2, "room_change": 1, "engineer_change": 10}


def read_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def booking_field(b: dict, name: str):
    """A booking field with REFLOW.md's default."""
    defaults = {"engineer": None, "party_size": 1, "requires": [], "series": None, "movable": True,
                "engineer_skills": []}
    return b.get(name, defaults.get(name))


def clash(s1: int, e1: int, s2: int, e2: int, gap: int = 0) -> bool:
    """REFLOW.md's conflict test: s1 < e2 + gap and s2 < e1 + gap (gap = buffer in one room)."""
    return s1 < e2 + gap and s2 < e1 + gap


class Checker:
    """Holds one instance and collects the rules a solution breaks."""

    def __init__(self, inst: dict):
        self.grid = inst.get("grid_minutes", 15)
        self.max_shift = inst.get("max_shift_minutes", 120)
        self.buffer = inst.get("buffer_minutes", 0)
        self.w = {**WEIGHTS, **(inst.get("weights") or {})}
        self.rooms = {r["id"]: r for r in inst["rooms"]}
        self.engineers = {g["id"]: g for g in inst.get("engineers", [])}
        self.bookings = {b["id"]: b for b in inst["bookings"]}
        self.affected = {bid for bid, b in self.bookings.items() if self.is_affected(b)}
        self.errors: list[str] = []

    def is_affected(self, b: dict) -> bool:
        room = self.rooms.get(b["room"], {})
        if any(clash(b["start"], b["end"], a, z) for a, z in room.get("offline", [])):
            return True
        g = self.engineers.get(booking_field(b, "engineer"))
        if g is None:
            return False
        if any(clash(b["start"], b["end"], a, z) for a, z in g.get("away", [])):
            return True
        if "available" not in g:
            return False
        # Works every minute of [start, end): walk the covered stretch over the sorted intervals.
        reached = b["start"]
        for a, z in sorted(g["available"]):
            if a <= reached < z:
                reached = z
        return reached < b["end"]

    def engineer_of(self, a: dict) -> str | None:
        """The engineer an assignment names, or the booking's own when it names none."""
        return a.get("engineer") or booking_field(self.bookings[a["booking"]], "engineer")

    def fail(self, message: str) -> None:
        self.errors.append(message)

    # -- coverage

    def check_coverage(self, sol: dict) -> None:
        seen = defaultdict(int)
        for a in sol.get("assignments", []):
            seen[a["booking"]] += 1
        for u in sol.get("unresolved_bookings", []):
            seen[u["booking"]] += 1
        for bid, n in seen.items():
            if bid not in self.affected:
                self.fail(f"{bid} is listed but is not an affected booking")
            elif n > 1:
                self.fail(f"{bid} is listed {n} times")
        for bid in self.affected - set(seen):
            self.fail(f"affected booking {bid} is missing from the solution")

    # -- rules 1-3 and 6, one assignment at a time

    def check_placement(self, a: dict) -> None:
        bid, room_id, s, e = a["booking"], a["room"], a["start"], a["end"]
        b = self.bookings.get(bid)
        room = self.rooms.get(room_id)
        if b is None or room is None:
            self.fail(f"{bid}: unknown booking or room {room_id}")
            return
        if e - s != b["end"] - b["start"]:
            self.fail(f"{bid}: duration {e - s} differs from {b['end'] - b['start']}")
        shift = s - b["start"]
        if shift % self.grid or abs(shift) > self.max_shift or s // DAY != b["start"] // DAY:
            self.fail(f"{bid}: rule 1 (start {s}, original {b['start']})")
        needs = set(booking_field(b, "requires"))
        if room["capacity"] < booking_field(b, "party_size") or not needs <= set(room.get("features", [])):
            self.fail(f"{bid}: rule 2 (room {room_id})")
        inside = any(o0 <= s and e <= o1 for o0, o1 in room.get("open", []))
        offline = any(clash(s, e, f0, f1) for f0, f1 in room.get("offline", []))
        if not inside or offline:
            self.fail(f"{bid}: rule 3 (room {room_id} [{s}, {e}) open={inside} offline={offline})")
        if not booking_field(b, "movable"):
            self.fail(f"{bid}: rule 6 (pinned booking placed)")
        own, eng = booking_field(b, "engineer"), self.engineer_of(a)
        if eng != own:
            g = self.engineers.get(eng)
            if own is None or g is None or not set(booking_field(b, "engineer_skills")) <= set(g.get("skills", [])):
                self.fail(f"{bid}: rule 7 (engineer {eng} instead of {own})")
        g = self.engineers.get(eng)
        if g is not None:
            away = any(clash(s, e, a0, a1) for a0, a1 in g.get("away", []))
            works = "available" not in g or any(w0 <= s and e <= w1 for w0, w1 in g["available"])
            if away or not works:
                self.fail(f"{bid}: rule 8 (engineer {eng} [{s}, {e}) away={away} at work={works})")

    # -- rules 4-5, every pair of occupied slots

    def occupied(self, sol: dict) -> list[tuple[str, str, int, int, str | None]]:
        """(booking, room, start, end, engineer) of every fixed booking and every assignment."""
        slots = [(bid, b["room"], b["start"], b["end"], booking_field(b, "engineer"))
                 for bid, b in self.bookings.items() if bid not in self.affected]
        slots += [(a["booking"], a["room"], a["start"], a["end"], self.engineer_of(a))
                  for a in sol.get("assignments", []) if a["booking"] in self.bookings]
        return slots

    def check_pairs(self, sol: dict) -> None:
        placed = {a["booking"] for a in sol.get("assignments", [])}
        groups = defaultdict(list)
        for bid, room, s, e, eng in self.occupied(sol):
            slot = (bid, room, s, e)
            b = self.bookings[bid]
            groups[("room", room)].append(slot)
            groups[("client", b["client"])].append(slot)
            if eng is not None:
                groups[("engineer", eng)].append(slot)
        for (kind, key), slots in groups.items():
            gap = self.buffer if kind == "room" else 0
            rule = 4 if kind == "room" else 5
            slots.sort(key=lambda t: t[2])
            for i, (b1, _, s1, e1) in enumerate(slots):
                for b2, _, s2, e2 in slots[i + 1:]:
                    if s2 >= e1 + gap:
                        break  # sorted by start: no later slot can clash with this one
                    if (b1 in placed or b2 in placed) and clash(s1, e1, s2, e2, gap):
                        self.fail(f"rule {rule} ({kind} {key}): {b1} [{s1},{e1}) and {b2} [{s2},{e2})")

    # -- cost

    def cost(self, sol: dict) -> dict:
        assignments = sol.get("assignments", [])
        steps = sum(abs(a["start"] - self.bookings[a["booking"]]["start"]) // self.grid for a in assignments)
        changes = sum(a["room"] != self.bookings[a["booking"]]["room"] for a in assignments)
        handed = sum(self.engineer_of(a) != booking_field(self.bookings[a["booking"]], "engineer") for a in assignments)
        series_rooms = defaultdict(set)
        for a in assignments:
            series = booking_field(self.bookings[a["booking"]], "series")
            if series is not None:
                series_rooms[series].add(a["room"])
        split = sum(len(rooms) - 1 for rooms in series_rooms.values())
        unresolved = len(self.affected) - len(assignments)
        total = (self.w["unresolved"] * unresolved + self.w["series_split"] * split
                 + self.w["shift_step"] * steps + self.w["room_change"] * changes
                 + self.w["engineer_change"] * handed)
        return {"cost": total, "moved": len(assignments), "unresolved": unresolved,
                "U": unresolved, "S": split, "T": steps, "R": changes, "E": handed}

    def check(self, sol: dict) -> dict:
        self.check_coverage(sol)
        for a in sol.get("assignments", []):
            self.check_placement(a)
        self.check_pairs(sol)
        parts = self.cost(sol)
        for field in ("cost", "moved", "unresolved"):
            if sol.get(field) != parts[field]:
                self.fail(f"claimed {field} {sol.get(field)} but recomputed {parts[field]}")
        return {"valid": not self.errors, "affected": len(self.affected), **parts, "errors": self.errors[:20]}


def check(instance_path: str, solution_path: str) -> dict:
    """The verdict on one solution file."""
    return Checker(read_json(instance_path)).check(read_json(solution_path))


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    verdict = check(sys.argv[1], sys.argv[2])
    print(json.dumps(verdict))
    return 0 if verdict["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
