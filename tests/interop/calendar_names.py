"""Reads iCalendar files with the strict parser `icalendar` (PyPI), for the issue 21 test in
tests/it/calendars.rs, which compares what it reads with the bookings and names it wrote.

Usage: python calendar_names.py FILE...

Prints one JSON object: for each file, its NAME and X-WR-CALNAME and its events (UID, start and
end in UTC, STATUS, SEQUENCE, SUMMARY, LOCATION, DESCRIPTION), every TEXT value unescaped.
Exits 1 naming the file when the parser reports an error or a required property is missing.
"""

import json
import sys

import icalendar
from icalendar.parser import unescape_backslash


def text_of_unknown(value):
    """NAME (RFC 7986) and X-WR-CALNAME are TEXT, but icalendar reads them as values of unknown
    type and keeps them escaped; they are unescaped here with the parser's own TEXT unescaping,
    the one it applies to SUMMARY."""
    return unescape_backslash(value.to_ical().decode("utf-8"))


def read(path):
    with open(path, "rb") as f:
        calendar = icalendar.Calendar.from_ical(f.read())
    events = list(calendar.walk("VEVENT"))
    errors = list(calendar.errors) + [error for event in events for error in event.errors]
    if errors:
        sys.exit(f"{path}: parser errors {errors}")
    if calendar.get("VERSION") != "2.0" or not calendar.get("PRODID"):
        sys.exit(f"{path}: no VERSION 2.0 or PRODID")
    read_events = []
    for event in events:
        for prop in ("UID", "DTSTAMP", "DTSTART", "DTEND", "SEQUENCE", "STATUS", "SUMMARY", "LOCATION", "DESCRIPTION"):
            if event.get(prop) is None:
                sys.exit(f"{path}: an event without {prop}")
        read_events.append({
            "uid": str(event["UID"]),
            "start": event.decoded("DTSTART").isoformat(),
            "end": event.decoded("DTEND").isoformat(),
            "status": str(event["STATUS"]),
            "sequence": int(event["SEQUENCE"]),
            "summary": str(event["SUMMARY"]),
            "location": str(event["LOCATION"]),
            "description": str(event["DESCRIPTION"]),
        })
    return {
        "name": text_of_unknown(calendar["NAME"]),
        "calname": text_of_unknown(calendar["X-WR-CALNAME"]),
        "events": read_events,
    }


print(json.dumps({path: read(path) for path in sys.argv[1:]}))
