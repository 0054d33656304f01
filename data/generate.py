"""Regenerate the studioflow demo data: data/demo/studio.toml and data/demo/bookings.toml.

Run from the repository root:

    python3 data/generate.py

The demo studio is "Northside Sound", seven rooms in London, booked through September and
October 2026 with weekly series and one-off sessions. The seed scenario takes studio-b offline
for a fortnight (2026-09-07 to 2026-09-21) while it still holds about 140 sessions, so a reflow
has to move them: most fit elsewhere within two hours, a handful are hard on purpose (Hammond
organ, pinned, a ten-piece band, a busy engineer, control room plus drums).

The generator uses only the standard library and a fixed seed, so two runs give byte-identical
files. Before writing, it parses its own TOML output back and checks it (`check`): no room,
client or engineer conflicts, hours, features and capacity respected, the fortnight count, the
series share and the October clock-change rule.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SEED = 2026
OUT_DIR = Path(__file__).resolve().parent / "demo"

FIRST_DAY = dt.date(2026, 9, 1)  # minute 0 of the timeline is 2026-09-01 00:00 local
DAY_COUNT = 61  # September and October
BUFFER = 15  # every room's turnaround, minutes
GRID = 15  # starts and lengths are multiples of this
CLOCK = "2026-08-31T09:00"
NOTICE_HOURS = 48
OFFLINE_ROOM = "studio-b"
OFFLINE_FROM = "2026-09-07T00:00"
OFFLINE_TO = "2026-09-21T00:00"
FORTNIGHT_RANGE = (130, 150)
FORTNIGHT_TARGET = 140
SERIES_SHARE_RANGE = (0.30, 0.40)
REFLOW_SHIFT = 120  # a reflow may move a session this many minutes earlier or later
CLOCK_CHANGE = "2026-10-25T00:00"  # nothing may touch local 00:00-03:00 on this night

WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

# ---------------------------------------------------------------------------------------------
# The studio
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Room:
    id: str
    name: str
    capacity: int
    features: tuple[str, ...]
    hours: tuple[str, ...]


ROOMS = [
    Room("studio-a", "Studio A (live room)", 10,
         ("control-room", "drums", "grand-piano", "isolation-booth", "vocal-booth"),
         ("mon-sun 09:00-23:00",)),
    Room("studio-b", "Studio B (production suite)", 10,
         ("control-room", "drums", "hammond-organ", "pa-system", "vocal-booth"),
         ("mon-sun 09:00-01:00",)),
    Room("studio-c", "Studio C (vocal and mix room)", 4,
         ("control-room", "vocal-booth"),
         ("mon-sat 10:00-22:00",)),
    Room("rehearsal-1", "Rehearsal 1", 6,
         ("drums", "pa-system"),
         ("mon-thu 10:00-00:00", "fri-sat 10:00-02:00", "sun 12:00-22:00")),
    Room("rehearsal-2", "Rehearsal 2", 6,
         ("drums", "pa-system"),
         ("mon-sun 10:00-00:00",)),
    Room("rehearsal-3", "Rehearsal 3 (showcase room)", 12,
         ("backline", "drums", "pa-system"),
         ("tue-sun 12:00-00:00",)),
    Room("podcast-1", "Podcast Room", 4,
         ("podcast-desk", "video", "vocal-booth"),
         ("mon-fri 08:00-20:00", "sat 10:00-18:00")),
]
ROOM_BY_ID = {r.id: r for r in ROOMS}


@dataclass(frozen=True)
class Client:
    id: str
    name: str
    kind: str  # band, artist, podcast, choir, voice, theatre, jingle
    party: tuple[int, int]  # smallest and largest party the client brings


CLIENTS = [
    Client("client-001", "The Velvet Static", "band", (3, 5)),
    Client("client-002", "Copper Lanterns", "band", (4, 6)),
    Client("client-003", "Mothlight", "band", (3, 4)),
    Client("client-004", "Hollow Pines", "band", (4, 5)),
    Client("client-005", "The Saltwater Sirens", "band", (3, 5)),
    Client("client-006", "Neon Orchard", "band", (4, 6)),
    Client("client-007", "Brass Tacks Collective", "band", (5, 10)),
    Client("client-008", "Gravel & Grace", "band", (2, 4)),
    Client("client-009", "The Midnight Ferries", "band", (4, 6)),
    Client("client-010", "Paper Satellites", "band", (3, 5)),
    Client("client-011", "Kestrel Drive", "band", (4, 5)),
    Client("client-012", "Static Bloom", "band", (3, 6)),
    Client("client-013", "Amara Osei", "artist", (1, 3)),
    Client("client-014", "Jonah Whitlock", "artist", (1, 2)),
    Client("client-015", "Lucía Ferrer", "artist", (1, 3)),
    Client("client-016", "Niamh Doherty", "artist", (1, 3)),
    Client("client-017", "Tomasz Wren", "artist", (1, 2)),
    Client("client-018", "Two Mics and a Kettle", "podcast", (2, 3)),
    Client("client-019", "The Long Table Podcast", "podcast", (2, 4)),
    Client("client-020", "Northern Lines", "podcast", (1, 3)),
    Client("client-021", "Small Print (true crime)", "podcast", (2, 4)),
    Client("client-022", "Eastside Community Choir", "choir", (8, 12)),
    Client("client-023", "Clearwave Voice Agency", "voice", (1, 2)),
    Client("client-024", "Harbour Youth Theatre", "theatre", (6, 12)),
    Client("client-025", "Brightside Jingles", "jingle", (1, 3)),
]

ENGINEERS = [
    ("eng-01", "Priya Natarajan"),
    ("eng-02", "Tom Okafor"),
    ("eng-03", "Saoirse Byrne"),
    ("eng-04", "Marco Bellini"),
    ("eng-05", "Hannah Lindqvist"),
    ("eng-06", "Dev Chauhan"),
]
ENGINEER_IDS = [e for e, _ in ENGINEERS]
# What each engineer is known for; each also gets every skill their own sessions ask for.
ENGINEER_SKILLS = {
    "eng-01": ["mixing", "tracking", "vocals"],
    "eng-02": ["live-sound", "tracking"],
    "eng-03": ["mixing", "podcast", "vocals"],
    "eng-04": ["mixing", "tracking"],
    "eng-05": ["mixing", "podcast", "vocals"],
    "eng-06": ["mixing", "tracking", "vocals"],
}


def engineer_skills(requires) -> list[str]:
    """What any engineer of a session with these needs must be able to do (one skill, by the room's gear)."""
    need = set(requires)
    if "podcast-desk" in need:
        return ["podcast"]
    if "control-room" in need and need & {"drums", "isolation-booth", "grand-piano"}:
        return ["tracking"]
    if "vocal-booth" in need:
        return ["vocals"]
    if "control-room" in need:
        return ["mixing"]
    if "hammond-organ" in need:
        return ["tracking"]
    return ["live-sound"]


@dataclass(frozen=True)
class Profile:
    """A kind of session a room hosts: what it needs, how long, who comes."""
    weight: int
    requires: tuple[str, ...]
    lengths: tuple[int, ...]
    party: tuple[int, int]
    kinds: tuple[str, ...]
    engineer: float  # probability that an engineer is booked with it


def _p(weight, requires, lengths, party, kinds, engineer=0.0):
    return Profile(weight, tuple(sorted(requires)), tuple(lengths), party, tuple(kinds.split()), engineer)


PROFILES = {
    "studio-a": [
        _p(4, ["control-room", "drums", "isolation-booth"], [180, 210, 240], (3, 6), "band", 1.0),
        _p(3, ["control-room", "vocal-booth"], [120, 150, 180], (1, 3), "artist band jingle", 1.0),
        _p(2, ["control-room", "grand-piano"], [120, 180, 240], (1, 3), "artist", 1.0),
        _p(1, ["control-room", "grand-piano", "vocal-booth"], [180, 240], (8, 10), "choir theatre band", 1.0),
    ],
    "studio-b": [
        _p(4, ["drums", "pa-system"], [60, 90, 120], (3, 5), "band"),
        _p(3, ["vocal-booth"], [60, 75, 90], (1, 3), "artist podcast voice jingle", 0.5),
        _p(2, ["control-room", "vocal-booth"], [60, 90, 120], (1, 3), "artist band jingle", 1.0),
        _p(1, ["drums"], [60, 90, 120], (2, 5), "band"),
        _p(1, ["pa-system"], [60, 90], (2, 6), "band theatre"),
        _p(1, [], [60, 90], (1, 4), "band artist podcast"),
    ],
    "studio-c": [
        _p(4, ["control-room", "vocal-booth"], [120, 180, 240], (1, 3), "artist jingle voice band", 1.0),
        _p(2, ["vocal-booth"], [120, 180], (1, 2), "voice podcast", 1.0),
        _p(1, ["control-room"], [120, 180], (1, 4), "artist band", 1.0),
    ],
    "rehearsal-1": [
        _p(5, ["drums", "pa-system"], [120, 120, 150, 180], (3, 6), "band"),
        _p(2, ["pa-system"], [120, 150, 180], (2, 6), "band artist theatre"),
        _p(1, [], [120, 180], (2, 6), "band artist"),
    ],
    "rehearsal-3": [
        _p(3, ["backline", "drums", "pa-system"], [120, 180], (3, 10), "band"),
        _p(2, ["drums", "pa-system"], [120, 150, 180], (3, 8), "band"),
        _p(2, ["pa-system"], [120, 180], (6, 12), "choir theatre"),
        _p(1, [], [120, 180], (8, 12), "theatre choir"),
    ],
    "podcast-1": [
        _p(5, ["podcast-desk"], [60, 60, 90, 120], (2, 4), "podcast", 0.3),
        _p(2, ["podcast-desk", "video"], [90, 120], (2, 4), "podcast", 0.3),
        _p(2, ["vocal-booth"], [60, 90], (1, 2), "voice jingle", 0.3),
    ],
}
PROFILES["rehearsal-2"] = PROFILES["rehearsal-1"]
# Outside the offline fortnight studio-b also hosts what only it (or only it and studio-a) can.
STUDIO_B_EXTRA = [
    _p(1, ["hammond-organ"], [90, 120], (1, 4), "band artist", 0.5),
    _p(1, ["control-room", "drums"], [120, 180], (3, 5), "band", 1.0),
]

# Target share of open hours booked, per room (studio-b is the busy one).
OCCUPANCY = {
    "studio-a": 0.58, "studio-b": 0.85, "studio-c": 0.62, "rehearsal-1": 0.55,
    "rehearsal-2": 0.55, "rehearsal-3": 0.54, "podcast-1": 0.56,
}
FORTNIGHT_OCCUPANCY = 0.32  # the other rooms, while studio-b is offline
FORTNIGHT_LENGTHS = (60, 60, 60, 75, 90)
LATE_BAND_SLOTS = 20 * 60  # from 20:00 studio-b's fortnight sessions are band slots  # studio-b's short sessions in the fortnight
# Weekly series per room, before the two hand-written ones.
SERIES_PER_ROOM = {
    "studio-a": 8, "studio-b": 8, "studio-c": 7, "rehearsal-1": 14,
    "rehearsal-2": 14, "rehearsal-3": 11, "podcast-1": 13,
}

# ---------------------------------------------------------------------------------------------
# Time: minutes since 2026-09-01 00:00 local (naive wall-clock time)
# ---------------------------------------------------------------------------------------------


def at(text: str) -> int:
    """Minutes on the timeline for a naive local "YYYY-MM-DDTHH:MM"."""
    t = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M")
    return (t.date() - FIRST_DAY).days * 1440 + t.hour * 60 + t.minute


def fmt(minute: int) -> str:
    t = dt.datetime.combine(FIRST_DAY, dt.time()) + dt.timedelta(minutes=minute)
    return t.strftime("%Y-%m-%dT%H:%M")


def weekday(day: int) -> int:
    return (FIRST_DAY + dt.timedelta(days=day)).weekday()


def parse_hours(lines) -> dict[int, list[tuple[int, int]]]:
    """Weekday (0 = Monday) -> [(open, close)] in minutes from that day's midnight."""
    spans: dict[int, list[tuple[int, int]]] = {d: [] for d in range(7)}
    for line in lines:
        days, times = line.split(" ")
        opens, closes = (int(x[:2]) * 60 + int(x[3:]) for x in times.split("-"))
        if closes <= opens:
            closes += 1440
        for part in days.split(","):
            first, _, last = part.partition("-")
            a, b = WEEKDAYS.index(first), WEEKDAYS.index(last or first)
            for d in range(a, b + 1):
                spans[d].append((opens, closes))
    return spans


HOURS = {r.id: parse_hours(r.hours) for r in ROOMS}


def openings(room: str, day: int) -> list[tuple[int, int]]:
    """The opening spans of `room` that begin on `day`, on the timeline."""
    return [(day * 1440 + o, day * 1440 + c) for o, c in HOURS[room][weekday(day)]]


def inside_hours(room: str, start: int, end: int) -> bool:
    day = start // 1440
    return any(o <= start and end <= c for d in (day - 1, day) for o, c in openings(room, d))


def touches_clock_change(start: int, end: int) -> bool:
    night = at(CLOCK_CHANGE)
    return start < night + 180 and end > night


# ---------------------------------------------------------------------------------------------
# The schedule being built
# ---------------------------------------------------------------------------------------------


@dataclass
class Booking:
    room: str
    client: str
    engineer: str | None
    start: int
    minutes: int
    party: int
    requires: tuple[str, ...]
    pinned: bool = False
    status: str = "confirmed"
    series: "Series | None" = None

    @property
    def end(self) -> int:
        return self.start + self.minutes


@dataclass
class Series:
    room: str
    client: str
    engineer: str | None
    start: int
    minutes: int
    party: int
    requires: tuple[str, ...]
    interval: int
    count: int
    until: dt.date | None  # written as UNTIL when set, else COUNT
    id: str = ""
    occurrences: list[Booking] = field(default_factory=list)

    def starts(self) -> list[int]:
        return [self.start + k * 7 * 1440 * self.interval for k in range(self.count)]

    def rrule(self) -> str:
        interval = f";INTERVAL={self.interval}" if self.interval > 1 else ""
        if self.until:
            return f"FREQ=WEEKLY{interval};UNTIL={self.until:%Y%m%d}T235959Z"
        return f"FREQ=WEEKLY{interval};COUNT={self.count}"


class Schedule:
    """Bookings indexed by (room | client | engineer, day) for quick conflict tests."""

    def __init__(self):
        self.bookings: list[Booking] = []
        self.series: list[Series] = []
        self.index: dict[tuple[str, int], list[Booking]] = {}

    def _near(self, key: str, start: int, end: int):
        for day in range(start // 1440 - 1, end // 1440 + 1):
            yield from self.index.get((key, day), ())

    def room_clash(self, room: str, start: int, end: int, ignore=None) -> Booking | None:
        for b in self._near(room, start, end):
            if b is not ignore and start < b.end + BUFFER and b.start < end + BUFFER:
                return b
        return None

    def person_free(self, who: str | None, start: int, end: int, ignore=None) -> bool:
        if who is None:
            return True
        return all(b is ignore or not (start < b.end and b.start < end) for b in self._near(who, start, end))

    def can_place(self, b: Booking, ignore=None) -> bool:
        return (inside_hours(b.room, b.start, b.end)
                and not touches_clock_change(b.start, b.end)
                and self.room_clash(b.room, b.start, b.end, ignore) is None
                and self.person_free(b.client, b.start, b.end, ignore)
                and self.person_free(b.engineer, b.start, b.end, ignore))

    def add(self, b: Booking) -> None:
        self.bookings.append(b)
        for key in (b.room, b.client, b.engineer):
            if key is not None:
                self.index.setdefault((key, b.start // 1440), []).append(b)

    def remove(self, b: Booking) -> None:
        self.bookings.remove(b)
        for key in (b.room, b.client, b.engineer):
            if key is not None:
                self.index[(key, b.start // 1440)].remove(b)


# ---------------------------------------------------------------------------------------------
# Choosing sessions and people
# ---------------------------------------------------------------------------------------------


def in_fortnight(minute: int) -> bool:
    return at(OFFLINE_FROM) <= minute < at(OFFLINE_TO)


def profiles_for(room: str, start: int) -> list[Profile]:
    """What a one-off session in `room` at `start` may be.

    Studio-b adds its special sessions outside the offline fortnight; inside it, late sessions are
    band slots, which the rehearsal rooms (open to midnight) can take over in a reflow.
    """
    profiles = PROFILES[room]
    if room != OFFLINE_ROOM:
        return profiles
    if not in_fortnight(start):
        return profiles + STUDIO_B_EXTRA
    if start % 1440 >= LATE_BAND_SLOTS:
        return [p for p in profiles if {"drums", "pa-system"} & set(p.requires)]
    return profiles


def pick(rng: random.Random, profiles: list[Profile]) -> Profile:
    return rng.choices(profiles, weights=[p.weight for p in profiles])[0]


def eligible_clients(profile: Profile, room: str) -> list[Client]:
    cap = min(profile.party[1], ROOM_BY_ID[room].capacity)
    return [c for c in CLIENTS if c.kind in profile.kinds and c.party[0] <= cap and profile.party[0] <= c.party[1]]


def party_for(rng: random.Random, client: Client, profile: Profile, room: str) -> int:
    lo = max(client.party[0], profile.party[0])
    hi = min(client.party[1], profile.party[1], ROOM_BY_ID[room].capacity)
    return rng.randint(lo, hi)


def first_free(rng: random.Random, candidates: list[str], free) -> str | None:
    order = candidates[:]
    rng.shuffle(order)
    return next((c for c in order if free(c)), None)


def make_session(rng, sched: Schedule, room: str, start: int, minutes: int, profile: Profile) -> Booking | None:
    """A booking of `profile` at `start`, with a free client (and engineer), or None."""
    clients = eligible_clients(profile, room)
    client_id = first_free(rng, [c.id for c in clients], lambda c: sched.person_free(c, start, start + minutes))
    if client_id is None:
        return None
    engineer = None
    if rng.random() < profile.engineer:
        engineer = first_free(rng, ENGINEER_IDS, lambda e: sched.person_free(e, start, start + minutes))
        if engineer is None and profile.engineer >= 1.0:
            return None
    client = next(c for c in CLIENTS if c.id == client_id)
    party = party_for(rng, client, profile, room)
    return Booking(room, client_id, engineer, start, minutes, party, profile.requires)


# ---------------------------------------------------------------------------------------------
# The seed scenario: hard studio-b sessions and the bookings that make them hard
# ---------------------------------------------------------------------------------------------

# (room, client, engineer, start, minutes, party, requires, pinned, status)
HARD_SESSIONS = [
    # Only studio-b has a Hammond organ.
    ("studio-b", "client-016", "eng-04", "2026-09-09T14:00", 90, 2, ["hammond-organ"], False, "confirmed"),
    ("studio-b", "client-009", None, "2026-09-16T20:00", 120, 5, ["drums", "hammond-organ"], False, "confirmed"),
    # Staff-locked: the reflow must leave these alone.
    ("studio-b", "client-013", "eng-05", "2026-09-08T11:00", 90, 1, ["vocal-booth"], True, "tentative"),
    ("studio-b", "client-011", None, "2026-09-15T18:00", 120, 5, ["drums", "pa-system"], True, "confirmed"),
    # Ten-piece and nine-piece bands with drums: only studio-a and rehearsal-3 fit, both busy.
    ("studio-b", "client-007", None, "2026-09-12T15:00", 120, 10, ["drums"], False, "confirmed"),
    ("studio-b", "client-007", None, "2026-09-17T18:00", 150, 9, ["drums"], False, "confirmed"),
    # Control room plus drums: only studio-a fits, and it is booked solid around them.
    ("studio-b", "client-002", "eng-01", "2026-09-10T11:00", 120, 4, ["control-room", "drums"], False, "confirmed"),
    ("studio-b", "client-012", "eng-03", "2026-09-20T15:00", 180, 5, ["control-room", "drums", "vocal-booth"], False, "confirmed"),
    # Dev (eng-06) has a tight day: studio-c frees up only when he is due in the podcast room.
    ("studio-b", "client-014", "eng-06", "2026-09-14T14:00", 120, 2, ["control-room", "vocal-booth"], False, "confirmed"),
]

BLOCKERS = [
    # 2026-09-12, around the ten-piece band
    ("studio-a", "client-005", "eng-02", "2026-09-12T12:00", 210, 4, ["control-room", "drums", "isolation-booth"]),
    ("studio-a", "client-015", "eng-03", "2026-09-12T15:45", 225, 3, ["control-room", "grand-piano"]),
    ("rehearsal-3", "client-024", None, "2026-09-12T12:00", 165, 11, ["pa-system"]),
    ("rehearsal-3", "client-006", None, "2026-09-12T15:00", 240, 6, ["backline", "drums", "pa-system"]),
    # 2026-09-17, around the nine-piece band
    ("studio-a", "client-022", "eng-05", "2026-09-17T15:00", 210, 10, ["control-room", "grand-piano", "vocal-booth"]),
    ("studio-a", "client-001", "eng-02", "2026-09-17T18:45", 225, 5, ["control-room", "drums", "isolation-booth"]),
    ("rehearsal-3", "client-010", None, "2026-09-17T16:00", 180, 5, ["backline", "drums", "pa-system"]),
    ("rehearsal-3", "client-024", None, "2026-09-17T19:15", 210, 9, ["pa-system"]),
    # 2026-09-10 and 2026-09-20, studio-a booked solid
    ("studio-a", "client-004", "eng-02", "2026-09-10T09:00", 210, 4, ["control-room", "drums", "isolation-booth"]),
    ("studio-a", "client-017", "eng-04", "2026-09-10T12:45", 225, 1, ["control-room", "grand-piano"]),
    ("studio-a", "client-003", "eng-05", "2026-09-20T12:00", 240, 4, ["control-room", "drums", "isolation-booth"]),
    ("studio-a", "client-016", "eng-01", "2026-09-20T16:15", 255, 2, ["control-room", "vocal-booth"]),
    # 2026-09-14, Dev's tight day
    ("studio-a", "client-008", "eng-01", "2026-09-14T11:00", 210, 3, ["control-room", "drums", "isolation-booth"]),
    ("studio-a", "client-013", "eng-02", "2026-09-14T14:45", 225, 2, ["control-room", "grand-piano"]),
    ("studio-c", "client-025", "eng-03", "2026-09-14T13:30", 120, 2, ["control-room", "vocal-booth"]),
    ("podcast-1", "client-019", "eng-06", "2026-09-14T16:00", 90, 3, ["podcast-desk"]),
]


def place_scenario(sched: Schedule) -> list[Booking]:
    hard = []
    for room, client, eng, start, minutes, party, requires, pinned, status in HARD_SESSIONS:
        b = Booking(room, client, eng, at(start), minutes, party, tuple(sorted(requires)), pinned, status)
        assert sched.can_place(b), f"hard session {start} does not fit"
        sched.add(b)
        hard.append(b)
    for room, client, eng, start, minutes, party, requires in BLOCKERS:
        b = Booking(room, client, eng, at(start), minutes, party, tuple(sorted(requires)))
        assert sched.can_place(b), f"blocker {room} {start} does not fit"
        sched.add(b)
    return hard


# ---------------------------------------------------------------------------------------------
# Weekly series
# ---------------------------------------------------------------------------------------------

# Two hand-written series; the Sunday one runs through the October clock change at 19:00.
FIXED_SERIES = [
    ("rehearsal-1", "client-004", None, "2026-09-01T19:00", 120, 5, ["drums", "pa-system"], 1, 9, None),
    ("rehearsal-2", "client-010", None, "2026-09-06T19:00", 150, 4, ["drums", "pa-system"], 1, 8, dt.date(2026, 10, 31)),
]


def try_add_series(sched: Schedule, s: Series) -> bool:
    occurrences = [Booking(s.room, s.client, s.engineer, t, s.minutes, s.party, s.requires, series=s) for t in s.starts()]
    if not all(sched.can_place(b) for b in occurrences):
        return False
    for b in occurrences:
        sched.add(b)
    s.occurrences = occurrences
    sched.series.append(s)
    return True


def weeks_left(first: int, interval: int) -> int:
    """How many occurrences from `first` stay within October."""
    return (DAY_COUNT - 1 - first // 1440) // (7 * interval) + 1


def random_series(rng: random.Random, sched: Schedule, room: str) -> Series | None:
    day = rng.choice(range(7)) if rng.random() < 0.7 else rng.choice(range(7, 21))
    spans = openings(room, day)
    if not spans:
        return None
    opens, closes = spans[0]
    profile = pick(rng, PROFILES[room])  # series run through the fortnight: no studio-b specials
    minutes = rng.choice(profile.lengths)
    evening = room.startswith("rehearsal") and rng.random() < 0.7
    earliest = max(opens, day * 1440 + 17 * 60) if evening else opens
    latest = min(closes, day * 1440 + 1440) - minutes
    if latest < earliest:
        return None
    start = earliest + GRID * rng.randint(0, (latest - earliest) // GRID)
    interval = 2 if rng.random() < 0.08 else 1
    count, until = series_end(rng, start, interval)
    session = make_session(rng, sched, room, start, minutes, profile)
    if session is None:
        return None
    return Series(room, session.client, session.engineer, start, minutes, session.party, session.requires,
                  interval, count, until)


def series_end(rng: random.Random, start: int, interval: int) -> tuple[int, dt.date | None]:
    """COUNT, and the UNTIL date if the rule is written with one: to the end of October or a little short."""
    most = weeks_left(start, interval)
    if rng.random() < 0.45:
        return most, FIRST_DAY + dt.timedelta(days=DAY_COUNT - 1)
    count = min(most, max(3, most - rng.randint(0, 3)))
    if interval == 1 and count < most and rng.random() < 0.5:
        return count, FIRST_DAY + dt.timedelta(days=start // 1440 + 7 * (count - 1))  # the last session's date
    return count, None


def place_series(rng: random.Random, sched: Schedule) -> None:
    for room, client, eng, start, minutes, party, requires, interval, count, until in FIXED_SERIES:
        s = Series(room, client, eng, at(start), minutes, party, tuple(sorted(requires)), interval, count, until)
        assert try_add_series(sched, s), f"fixed series {room} {start} does not fit"
    for room in ROOM_BY_ID:
        placed, attempts = 0, 0
        while placed < SERIES_PER_ROOM[room] and attempts < 500:
            attempts += 1
            s = random_series(rng, sched, room)
            if s is not None and try_add_series(sched, s):
                placed += 1


def name_series(sched: Schedule) -> None:
    sched.series.sort(key=lambda s: (s.start, s.room))
    for i, s in enumerate(sched.series, 1):
        s.id = f"series-{i:03d}"


# ---------------------------------------------------------------------------------------------
# One-off sessions: walk each room's day, leaving idle gaps to reach the target occupancy
# ---------------------------------------------------------------------------------------------


def idle_gap(rng: random.Random, occupancy: float, mean_length: float) -> int:
    mean = max(0.0, mean_length * (1 - occupancy) / occupancy - BUFFER)
    return GRID * rng.randint(0, round(2 * mean / GRID))


def fill_span(rng, sched: Schedule, room: str, opens: int, closes: int, occupancy: float, quota: int | None = None) -> None:
    """Add one-off sessions between `opens` and `closes`; stop after `quota` sessions in the room that day."""
    day_end = opens - opens % 1440 + 1440  # no session starts after midnight
    mean_length = sum(sum(p.lengths) / len(p.lengths) for p in PROFILES[room]) / len(PROFILES[room])
    t = opens
    while True:
        if quota is not None and day_count(sched, room, opens // 1440) >= quota:
            return
        t += idle_gap(rng, occupancy, mean_length)
        profile = pick(rng, profiles_for(room, t))
        lengths = FORTNIGHT_LENGTHS if room == OFFLINE_ROOM and in_fortnight(t) else profile.lengths
        if t >= day_end or t + min(lengths) > closes:
            return
        minutes = fitting_length(sched, room, t, closes, rng.choice(lengths), lengths)
        if minutes is None:  # the room is busy at t: carry on after that booking
            t = max(t + GRID, sched.room_clash(room, t, t + min(lengths)).end + BUFFER)
            continue
        b = make_session(rng, sched, room, t, minutes, profile)
        if b is None or not sched.can_place(b):
            t += GRID
            continue
        sched.add(b)
        t = b.end + BUFFER


def fitting_length(sched: Schedule, room: str, t: int, closes: int, wanted: int, lengths) -> int | None:
    """`wanted` if the room is free for it at `t`, else the longest of `lengths` that is, else None."""
    free = [m for m in lengths if t + m <= closes and sched.room_clash(room, t, t + m) is None]
    if not free:
        return None
    return wanted if wanted in free else max(free)


def top_up(rng, sched: Schedule, room: str, opens: int, closes: int, quota: int) -> None:
    """Squeeze one-hour sessions into the gaps the walk left, until the room has `quota` that day."""
    day_end = opens - opens % 1440 + 1440
    for t in range(opens, min(closes - 60, day_end - GRID) + 1, GRID):
        if day_count(sched, room, opens // 1440) >= quota:
            return
        profile = pick(rng, profiles_for(room, t))
        if sched.room_clash(room, t, t + 60) is None:
            b = make_session(rng, sched, room, t, 60, profile)
            if b is not None and sched.can_place(b):
                sched.add(b)


def day_count(sched: Schedule, room: str, day: int) -> int:
    return sum(1 for b in sched.index.get((room, day), ()) if b.room == room)


def fill_days(rng: random.Random, sched: Schedule) -> None:
    for day in range(DAY_COUNT):
        for room in ROOM_BY_ID:
            for opens, closes in openings(room, day):
                if room == OFFLINE_ROOM and in_fortnight(opens):
                    fill_span(rng, sched, room, opens, closes, 0.92, quota=10)
                elif in_fortnight(opens):
                    fill_span(rng, sched, room, opens, closes, FORTNIGHT_OCCUPANCY)
                else:
                    fill_span(rng, sched, room, opens, closes, OCCUPANCY[room])


def top_up_fortnight(rng: random.Random, sched: Schedule) -> None:
    """Squeeze more sessions into studio-b's fortnight, a day at a time, until it holds the target."""
    days = range(at(OFFLINE_FROM) // 1440, at(OFFLINE_TO) // 1440)
    for quota in (10, 11, 12):
        for day in days:
            if sum(day_count(sched, OFFLINE_ROOM, d) for d in days) >= FORTNIGHT_TARGET:
                return
            for opens, closes in openings(OFFLINE_ROOM, day):
                top_up(rng, sched, OFFLINE_ROOM, opens, closes, quota)


def mark_some(rng: random.Random, sched: Schedule) -> None:
    """A few one-offs are tentative; a few outside the scenario are pinned by staff."""
    for b in sorted(sched.bookings, key=lambda b: (b.start, b.room)):
        if b.series is not None or b.pinned or b.status != "confirmed":
            continue
        in_scenario = b.room == OFFLINE_ROOM and in_fortnight(b.start)
        if rng.random() < 0.07:
            b.status = "tentative"
        elif not in_scenario and rng.random() < 0.01:
            b.pinned = True


# ---------------------------------------------------------------------------------------------
# Writing TOML
# ---------------------------------------------------------------------------------------------


def q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def q_list(items) -> str:
    return "[" + ", ".join(q(i) for i in items) + "]"


def skills_of(sched: "Schedule") -> dict[str, list[str]]:
    """Each engineer's skills: what they are known for, and whatever their own sessions need."""
    skills = {e: set(ENGINEER_SKILLS[e]) for e in ENGINEER_IDS}
    for b in sched.bookings:
        if b.engineer:
            skills[b.engineer].update(engineer_skills(b.requires))
    return {e: sorted(s) for e, s in skills.items()}


def render_studio(sched: "Schedule") -> str:
    lines = [
        "# Generated by data/generate.py (do not edit by hand): Northside Sound, a seven-room London"
        " recording, rehearsal and podcast studio, with studio-b offline for a fortnight.",
        "[studio]",
        'name = "Northside Sound"',
        'timezone = "Europe/London"',
        f"notice_hours = {NOTICE_HOURS}",
        f"clock = {q(CLOCK)}",
    ]
    for r in ROOMS:
        lines += ["", "[[rooms]]", f"id = {q(r.id)}", f"name = {q(r.name)}", f"capacity = {r.capacity}",
                  f"features = {q_list(sorted(r.features))}", f"buffer_minutes = {BUFFER}", f"hours = {q_list(r.hours)}"]
    for c in CLIENTS:
        lines += ["", "[[clients]]", f"id = {q(c.id)}", f"name = {q(c.name)}"]
    skills = skills_of(sched)
    for eid, name in ENGINEERS:
        lines += ["", "[[engineers]]", f"id = {q(eid)}", f"name = {q(name)}", f"skills = {q_list(skills[eid])}"]
    lines += ["", "[[offline]]", f"room = {q(OFFLINE_ROOM)}", f"from = {q(OFFLINE_FROM)}", f"to = {q(OFFLINE_TO)}",
              'reason = "Control-room desk replacement"']
    return "\n".join(lines) + "\n"


def common_fields(x) -> list[str]:
    fields = [f"room = {q(x.room)}", f"client = {q(x.client)}"]
    if x.engineer:
        fields.append(f"engineer = {q(x.engineer)}")
        fields.append(f"engineer_skills = {q_list(engineer_skills(x.requires))}")
    return fields + [f"start = {q(fmt(x.start))}", f"minutes = {x.minutes}"]


def render_series(s: Series) -> str:
    fields = [f"id = {q(s.id)}"] + common_fields(s) + [f"rrule = {q(s.rrule())}", f"party_size = {s.party}"]
    if s.requires:
        fields.append(f"requires = {q_list(s.requires)}")
    return "  { " + ", ".join(fields) + " },"


def render_booking(b: Booking) -> str:
    fields = common_fields(b) + [f"party_size = {b.party}"]
    if b.requires:
        fields.append(f"requires = {q_list(b.requires)}")
    if b.pinned:
        fields.append("pinned = true")
    if b.status != "confirmed":
        fields.append(f"status = {q(b.status)}")
    return "  { " + ", ".join(fields) + " },"


def render_bookings(sched: Schedule) -> str:
    one_offs = sorted((b for b in sched.bookings if b.series is None), key=lambda b: (b.start, b.room))
    lines = [
        "# Generated by data/generate.py (do not edit by hand): Northside Sound's weekly series and"
        " one-off sessions for September and October 2026.",
        "series = [",
        *(render_series(s) for s in sorted(sched.series, key=lambda s: s.id)),
        "]",
        "bookings = [",
        *(render_booking(b) for b in one_offs),
        "]",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Checks, on the rendered text parsed back
# ---------------------------------------------------------------------------------------------


def expand_rrule(first: int, rule: str) -> list[int]:
    parts = dict(p.split("=") for p in rule.split(";"))
    assert parts["FREQ"] == "WEEKLY", rule
    step = 7 * 1440 * int(parts.get("INTERVAL", "1"))
    if "COUNT" in parts:
        return [first + k * step for k in range(int(parts["COUNT"]))]
    until = dt.datetime.strptime(parts["UNTIL"], "%Y%m%dT%H%M%SZ").date()
    last_day = (until - FIRST_DAY).days  # sessions start after 08:00 local, well before UNTIL
    return [t for t in range(first, (last_day + 1) * 1440, step)]


def occurrences(bookings_doc: dict) -> list[dict]:
    out = []
    for s in bookings_doc["series"]:
        for t in expand_rrule(at(s["start"]), s["rrule"]):
            out.append({**s, "start_min": t, "series": s["id"]})
    for b in bookings_doc["bookings"]:
        out.append({**b, "start_min": at(b["start"]), "series": None})
    for o in out:
        o["end_min"] = o["start_min"] + o["minutes"]
    return out


def assert_no_overlap(items: list[dict], key: str, gap: int) -> None:
    groups: dict[str, list[dict]] = {}
    for o in items:
        if o.get(key):
            groups.setdefault(o[key], []).append(o)
    for who, group in groups.items():
        group.sort(key=lambda o: o["start_min"])
        latest = None
        for o in group:
            assert latest is None or o["start_min"] >= latest["end_min"] + gap, \
                f"{key} {who}: {latest['start']} clashes with {o['start']} ({fmt(o['start_min'])})"
            if latest is None or o["end_min"] > latest["end_min"]:
                latest = o


def check(studio_text: str, bookings_text: str) -> list[dict]:
    studio, doc = tomllib.loads(studio_text), tomllib.loads(bookings_text)
    rooms = {r["id"]: r for r in studio["rooms"]}
    clients = {c["id"] for c in studio["clients"]}
    engineers = {e["id"] for e in studio["engineers"]}
    assert len(rooms) == 7 and all(r["buffer_minutes"] == BUFFER for r in rooms.values())
    assert [s["id"] for s in doc["series"]] == sorted(s["id"] for s in doc["series"])
    starts = [(at(b["start"]), b["room"]) for b in doc["bookings"]]
    assert starts == sorted(starts), "bookings are not sorted by start then room"
    occ = occurrences(doc)
    for o in occ:
        room = rooms[o["room"]]
        where = f"{o['room']} {fmt(o['start_min'])}"
        assert o["client"] in clients and o.get("engineer", "eng-01") in engineers, where
        assert 0 <= o["start_min"] < DAY_COUNT * 1440, f"{where}: outside September-October"
        assert o["start_min"] % GRID == 0 and o["minutes"] % GRID == 0 and o["minutes"] > 0, where
        assert set(o.get("requires", [])) <= set(room["features"]), f"{where}: room lacks {o['requires']}"
        assert o["party_size"] <= room["capacity"], f"{where}: party {o['party_size']} too big"
        assert inside_hours(o["room"], o["start_min"], o["end_min"]), f"{where}: outside opening hours"
        assert not touches_clock_change(o["start_min"], o["end_min"]), f"{where}: touches the clock change"
        assert o.get("status", "confirmed") in ("confirmed", "tentative"), where
    for series in doc["series"]:
        assert series["rrule"].startswith("FREQ=WEEKLY;"), series["id"]
    assert_no_overlap(occ, "room", BUFFER)  # per room, with the turnaround buffer
    assert_no_overlap(occ, "client", 0)
    assert_no_overlap(occ, "engineer", 0)
    fortnight = [o for o in occ if o["room"] == OFFLINE_ROOM and in_fortnight(o["start_min"])]
    assert FORTNIGHT_RANGE[0] <= len(fortnight) <= FORTNIGHT_RANGE[1], f"{len(fortnight)} studio-b sessions in the fortnight"
    share = sum(1 for o in occ if o["series"]) / len(occ)
    assert SERIES_SHARE_RANGE[0] <= share <= SERIES_SHARE_RANGE[1], f"series share {share:.1%}"
    assert any(o["series"] and o["start_min"] // 1440 > at(CLOCK_CHANGE) // 1440 and
               any(p["series"] == o["series"] and p["start_min"] < at(CLOCK_CHANGE) for p in occ) for o in occ), \
        "no series crosses the clock change"
    return occ


# ---------------------------------------------------------------------------------------------
# Reflow estimate: can each studio-b fortnight session go elsewhere within +-2 h the same day?
# ---------------------------------------------------------------------------------------------


def moves(sched: Schedule, b: Booking) -> list[Booking]:
    """Placements of `b` in another room, shifted by at most REFLOW_SHIFT, same local day."""
    out = []
    day = b.start // 1440
    for room in ROOMS:
        if room.id == OFFLINE_ROOM or not set(b.requires) <= set(room.features) or b.party > room.capacity:
            continue
        for shift in range(-REFLOW_SHIFT, REFLOW_SHIFT + 1, GRID):
            c = Booking(room.id, b.client, b.engineer, b.start + shift, b.minutes, b.party, b.requires)
            if c.start // 1440 == day and sched.can_place(c, ignore=b):
                out.append(c)
    return out


def reflow_estimate(sched: Schedule, hard: list[Booking]) -> int:
    """Greedy, most constrained first, on a copy of the schedule; returns how many sessions moved."""
    trial = Schedule()
    for b in sched.bookings:
        trial.add(b)
    for b in hard:
        if not b.pinned:
            assert not moves(trial, b), f"hard session {fmt(b.start)} can be moved"
    moved = 0
    todo = [b for b in sched.bookings if b.room == OFFLINE_ROOM and in_fortnight(b.start)]
    todo.sort(key=lambda b: (len(moves(trial, b)), b.start))  # the most constrained first
    for b in todo:
        options = [] if b.pinned else moves(trial, b)
        if options:
            best = min(options, key=lambda c: (abs(c.start - b.start), c.room))
            trial.remove(b)
            trial.add(best)
            moved += 1
    return moved


# ---------------------------------------------------------------------------------------------
# Summary and main
# ---------------------------------------------------------------------------------------------


def open_minutes(room: str, days) -> int:
    return sum(c - o for d in days for o, c in openings(room, d))


def summarise(occ: list[dict], sched: Schedule, moved: int) -> None:
    fortnight_days = range(at(OFFLINE_FROM) // 1440, at(OFFLINE_TO) // 1440)
    n_series = sum(1 for o in occ if o["series"])
    print(f"{len(sched.series)} series ({n_series} sessions), {len(occ) - n_series} one-offs, {len(occ)} sessions in all;"
          f" series share {n_series / len(occ):.1%}")
    print(f"{'room':<12} {'sessions':>8} {'occupancy':>9} {'fortnight':>9}")
    for room in ROOM_BY_ID:
        mine = [o for o in occ if o["room"] == room]
        used = sum(o["minutes"] for o in mine)
        used_f = sum(o["minutes"] for o in mine if o["start_min"] // 1440 in fortnight_days)
        print(f"{room:<12} {len(mine):>8} {used / open_minutes(room, range(DAY_COUNT)):>9.1%}"
              f" {used_f / open_minutes(room, fortnight_days):>9.1%}")
    fortnight = [o for o in occ if o["room"] == OFFLINE_ROOM and in_fortnight(o["start_min"])]
    print(f"studio-b sessions in the offline fortnight: {len(fortnight)}"
          f" ({sum(1 for o in fortnight if o['series'])} from series, {sum(1 for o in fortnight if o.get('pinned'))} pinned)")
    print(f"greedy reflow estimate: {moved}/{len(fortnight)} move within {REFLOW_SHIFT // 60} h the same day;"
          f" {len(HARD_SESSIONS)} hard on purpose")


def build() -> tuple[Schedule, list[Booking]]:
    rng = random.Random(SEED)
    sched = Schedule()
    hard = place_scenario(sched)
    place_series(rng, sched)
    name_series(sched)
    fill_days(rng, sched)
    top_up_fortnight(rng, sched)
    mark_some(rng, sched)
    return sched, hard


def main() -> int:
    sched, hard = build()
    studio_text, bookings_text = render_studio(sched), render_bookings(sched)
    occ = occurrences(tomllib.loads(bookings_text))
    moved = reflow_estimate(sched, hard)
    summarise(occ, sched, moved)
    check(studio_text, bookings_text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "studio.toml").write_text(studio_text, encoding="utf-8")
    (OUT_DIR / "bookings.toml").write_text(bookings_text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
