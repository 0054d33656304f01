"""Interop check for calendars, prompts, completions and progress, with the official Python MCP SDK
(PyPI `mcp==2.3.0`) and a strict iCalendar parser (PyPI `icalendar`).

Usage: python calendar_client.py PATH/TO/studioflow

Over stdio (protocol 2026-07-28): lists the resources page by page and the resource templates, reads
studio-b's calendar and parses it, checks that its events are exactly the room's bookings in the
window (60 days back, 400 ahead of the demo's clock), moves one booking (same UID, higher SEQUENCE)
and cancels another (STATUS:CANCELLED), reads an unknown resource (-32602), gets a prompt (and a
refusal for a bad argument), completes room ids and months, and watches a reflow's progress.
Then over HTTP: creates a feed for every room, client and engineer with `studioflow feed create`,
fetches and parses each one, and checks that another calendar's secret, no secret and a revoked
secret all answer 404. Exits 1 naming the failed check, or prints one summary line.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

import anyio
import icalendar
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

CALL_TIMEOUT = 120.0
# The demo studio's clock: Monday 31 August 2026, 09:00 in London (08:00 UTC).
DEMO_NOW = datetime(2026, 8, 31, 8, 0, tzinfo=timezone.utc)
WINDOW = (DEMO_NOW - timedelta(days=60), DEMO_NOW + timedelta(days=400))


class CheckFailed(Exception):
    """A check failed; the message says which and what was seen."""


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def text_of(result):
    return " ".join(getattr(block, "text", "") for block in result.content)


async def call_ok(client, tool, arguments, **kw):
    result = await client.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT, **kw)
    check(not result.is_error, f"{tool} {arguments} failed: {text_of(result)}")
    return result.structured_content


def parse(text, what):
    """Parses iCalendar strictly: a malformed line or a missing required property fails."""
    calendar = icalendar.Calendar.from_ical(text)
    check(calendar.get("VERSION") == "2.0" and calendar.get("PRODID"), f"{what}: no VERSION 2.0 or PRODID")
    events = list(calendar.walk("VEVENT"))
    for e in events:
        for prop in ("UID", "DTSTAMP", "DTSTART", "DTEND", "SEQUENCE", "STATUS", "SUMMARY", "LOCATION"):
            check(e.get(prop) is not None, f"{what}: an event without {prop}: {e.to_ical()[:200]!r}")
        check(e.decoded("DTEND") > e.decoded("DTSTART"), f"{what}: an event ends before it starts")
    check(not calendar.errors and all(not e.errors for e in events), f"{what}: parser errors {calendar.errors}")
    return {str(e["UID"]): e for e in events}


async def bookings_of_room(client, room, status=None):
    ids, cursor = [], None
    args = {"room": room, "from": WINDOW[0].isoformat(), "to": WINDOW[1].isoformat(), "limit": 500}
    if status:
        args["status"] = status
    while True:
        page = await call_ok(client, "query_bookings", args | ({"cursor": cursor} if cursor else {}))
        ids.extend(b["id"] for b in page["bookings"])
        cursor = page["next_cursor"]
        if not cursor:
            return ids


async def read_calendar(client, uri):
    # The server lets clients reuse a read for a few seconds; these checks need it fresh.
    result = await client.read_resource(uri, cache_mode="bypass")
    check(len(result.contents) == 1, f"{uri}: {len(result.contents)} contents")
    content = result.contents[0]
    check(content.mime_type == "text/calendar", f"{uri}: mimeType {content.mime_type!r}")
    return parse(content.text, uri)


def uid_of(events, booking):
    found = [uid for uid in events if uid.startswith(booking + "@")]
    check(len(found) == 1, f"booking {booking}: {len(found)} events")
    return found[0]


async def stdio_part(binary, db):
    env = get_default_environment() | {"RUST_LOG": "error"}
    server = StdioServerParameters(command=binary, args=["serve", "--db", db, "--demo"], env=env)
    async with Client(server, mode="auto", client_info=None, read_timeout_seconds=CALL_TIMEOUT) as client:
        # resources/list, page by page; then the templates.
        listing = await client.list_resources()
        resources, pages = list(listing.resources), 1
        while listing.next_cursor:
            listing = await client.list_resources(cursor=listing.next_cursor)
            resources.extend(listing.resources)
            pages += 1
        uris = [r.uri for r in resources]
        check(len(uris) == len(set(uris)), "resources/list: a resource came back twice")
        # 7 rooms, 25 clients and 6 engineers, and the view (ui://, MCP Apps).
        check(len(resources) == 7 + 25 + 6 + 1 and pages == 2, f"resources/list: {len(resources)} resources in {pages} pages")
        room_uri = "studioflow://calendars/rooms/studio-b.ics"
        check(room_uri in uris, f"resources/list: no {room_uri}")
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        check("studioflow://calendars/rooms/{room}.ics" in templates and "studioflow://reflows/{reflow_id}.json" in templates,
              f"resources/templates/list: {sorted(templates)}")

        # The room's calendar: one event per booking in the window, cancelled ones included.
        events = await read_calendar(client, room_uri)
        active = await bookings_of_room(client, "studio-b")
        cancelled = await bookings_of_room(client, "studio-b", "cancelled")
        check(len(events) == len(active) + len(cancelled),
              f"{room_uri}: {len(events)} events for {len(active)} + {len(cancelled)} bookings in the window")
        check({uid.split("@")[0] for uid in events} == set(active) | set(cancelled), f"{room_uri}: other bookings than the room's")

        # A moved booking keeps its UID and raises its SEQUENCE; a cancelled one says so.
        first = (await call_ok(client, "get_booking", {"id": active[0]}))["booking"]
        start = datetime.fromisoformat(first["start"])
        length = datetime.fromisoformat(first["end"]) - start
        slots = (await call_ok(client, "find_free_slots", {
            # The demo's bookings are in September and October; November has room.
            "from": (start + timedelta(days=70)).isoformat(), "to": (start + timedelta(days=77)).isoformat(),
            "duration_minutes": int(length.total_seconds() // 60), "room": "studio-b", "client": first["client"],
            "party_size": first["party_size"], "requires": first["requires"], "limit": 1}))["slots"]
        check(slots, f"no free slot to move {first['id']} to")
        await call_ok(client, "move_booking", {"id": first["id"], "room": "studio-b", "start": slots[0]["start"]})
        await call_ok(client, "cancel_booking", {"id": active[1], "scope": "occurrence"})
        after = await read_calendar(client, room_uri)
        moved_uid = uid_of(events, first["id"])
        check(moved_uid in after, f"the moved booking {first['id']} lost its UID {moved_uid}")
        before_seq, after_seq = int(events[moved_uid]["SEQUENCE"]), int(after[moved_uid]["SEQUENCE"])
        check(after_seq > before_seq, f"moving {first['id']}: SEQUENCE {before_seq} -> {after_seq}")
        check(after[moved_uid].decoded("DTSTART") != events[moved_uid].decoded("DTSTART"), "the moved event did not move")
        cancelled_uid = uid_of(after, active[1])
        check(str(after[cancelled_uid]["STATUS"]) == "CANCELLED", f"{active[1]} cancelled: STATUS {after[cancelled_uid]['STATUS']}")
        check(len(after) == len(events), f"{room_uri}: {len(events)} events before, {len(after)} after a move and a cancel")

        # An unknown resource: -32602 (SEP-2164) on 2026-07-28.
        try:
            await client.read_resource("studioflow://calendars/rooms/no-such-room.ics")
            check(False, "reading an unknown resource succeeded")
        except MCPError as e:
            check(e.error.code == -32602, f"unknown resource: error {e.error.code} {e.error.message}")

        # Prompts: listed, written with the real ids, and a bad argument refused.
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        check(prompts == {"room_outage", "book_client", "month_report"}, f"prompts/list: {sorted(prompts)}")
        outage = await client.get_prompt("room_outage", {"room": "studio-a", "from": "2026-10-05T00:00", "to": "2026-10-07T00:00"})
        text = outage.messages[0].content.text
        check("set_room_offline" in text and "reflow_month" in text and "studio-a" in text, f"room_outage: {text[:200]!r}")
        try:
            await client.get_prompt("room_outage", {"room": "studio-z", "from": "2026-10-05T00:00", "to": "2026-10-07T00:00"})
            check(False, "room_outage accepted an unknown room")
        except MCPError as e:
            check(e.error.code == -32602 and "studio-z" in e.error.message, f"room_outage studio-z: {e.error}")

        # Completions: room ids by prefix (ids and names), months that have bookings.
        rooms = await client.complete(PromptReference(type="ref/prompt", name="room_outage"), {"name": "room", "value": "stu"})
        check({"studio-a", "studio-b"} <= set(rooms.completion.values), f"complete room 'stu': {rooms.completion.values}")
        months = await client.complete(PromptReference(type="ref/prompt", name="month_report"), {"name": "month", "value": "2026-"})
        check({"2026-09", "2026-10"} <= set(months.completion.values), f"complete month '2026-': {months.completion.values}")
        engineers = await client.complete(
            ResourceTemplateReference(type="ref/resource", uri="studioflow://calendars/engineers/{engineer}.ics"),
            {"name": "engineer", "value": ""})
        check(len(engineers.completion.values) == 6, f"complete engineer '': {engineers.completion.values}")

        # Progress: a synchronous reflow with a progress token reports before its result.
        seen = []

        async def progress(value, total, message):
            seen.append((value, total, message))

        reflow = await call_ok(client, "reflow_month", {"month": "2026-09", "offline_rooms": ["studio-b"], "dry_run": True},
                               progress_callback=progress)
        check(len(seen) >= 2, f"reflow_month with a progress token: {len(seen)} progress notifications")
        values = [v for v, _, _ in seen]
        check(values == sorted(values) and len(set(values)) == len(values), f"progress does not grow: {values}")
        plan = await client.read_resource(f"studioflow://reflows/{reflow['reflow_id']}.json")
        check(plan.contents[0].mime_type == "application/json" and reflow["reflow_id"] in plan.contents[0].text,
              "the reflow plan resource")
        return (f"{len(resources)} resources in {pages} pages, studio-b's calendar {len(events)} events = bookings in the window, "
                f"moved {first['id']} (SEQUENCE {before_seq}->{after_seq}), {len(seen)} progress notifications")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def feeds_part(binary, db):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = os.environ | {"RUST_LOG": "error"}

    def cli(*args):
        out = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=60)
        check(out.returncode == 0, f"studioflow {' '.join(args)}: {out.stderr}")
        return out.stdout.strip()

    calendars = [("room", r) for r in ("studio-a", "studio-b", "studio-c", "rehearsal-1", "rehearsal-2", "rehearsal-3", "podcast-1")]
    calendars += [("client", f"client-{n:03}") for n in range(1, 26)]
    calendars += [("engineer", f"eng-{n:02}") for n in range(1, 7)]
    urls = {}
    for kind, ident in calendars:
        urls[(kind, ident)] = cli("feed", "create", "--db", db, f"--{kind}", ident, "--base-url", base)
    server = subprocess.Popen([binary, "serve", "--db", db, "--http", f"127.0.0.1:{port}"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        events = 0
        for (kind, ident), url in urls.items():
            status, content_type, body = get(url)
            check(status == 200 and content_type.startswith("text/calendar"), f"feed {kind} {ident}: {status} {content_type}")
            events += len(parse(body, f"feed {kind} {ident}"))
        studio_b = urls[("room", "studio-b")]
        secret_a = urls[("room", "studio-a")].split("key=")[1]
        check(get(studio_b.split("?")[0] + "?key=" + secret_a)[0] == 404, "studio-b's feed opened with studio-a's secret")
        check(get(studio_b.split("?")[0])[0] == 404, "studio-b's feed opened without a secret")
        check(get(studio_b.replace("key=", "key=x"))[0] == 404, "studio-b's feed opened with a wrong secret")
        listed = cli("feed", "list", "--db", db)
        feed_id = next(line.split("\t")[0] for line in listed.splitlines() if "\troom studio-b\t" in line)
        cli("feed", "revoke", "--db", db, feed_id)
        check(get(studio_b)[0] == 404, "studio-b's feed still opens after its secret was revoked")
        check(get(urls[("room", "studio-a")])[0] == 200, "revoking studio-b's feed closed studio-a's")
        return f"{len(urls)} feeds over HTTP parsed ({events} events), other/missing/wrong/revoked secrets 404"
    finally:
        server.terminate()
        server.wait(timeout=30)


def first_failure(error):
    if isinstance(error, CheckFailed):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = first_failure(inner)
        if found is not None:
            return found
    return None


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH/TO/studioflow", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="studioflow-calendars-") as tmp:
        db = os.path.join(tmp, "studio.db")
        try:
            summary = anyio.run(stdio_part, binary, db)
            summary += "; " + feeds_part(binary, db)
        except Exception as e:
            failure = first_failure(e)
            if failure is not None:
                print(f"calendars: FAILED: {failure}", file=sys.stderr)
                return 1
            print(f"calendars: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            raise
    print(f"calendars: mcp 2.3.0 and icalendar {icalendar.__version__}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
