"""Interop check: the official Python MCP SDK (PyPI `mcp==2.3.0`) drives `studioflow serve` over stdio.

Usage: python stdio_client.py PATH/TO/studioflow

It spawns `studioflow serve --db <tmp>/studio.db --demo` through the SDK's own stdio transport,
negotiates protocol 2026-07-28 (the SDK probes `server/discover` and would silently fall back to
the legacy `initialize` handshake, so the negotiated version is asserted), lists the tools and
calls several of them. The SDK itself validates every non-error `structuredContent` against the
tool's `outputSchema`, so each successful call also checks the server's schemas. Exits 1 with a
message naming the failed check, or prints one summary line and exits 0.
"""

import os
import sys
import tempfile
from datetime import datetime, timedelta

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment

PROTOCOL = "2026-07-28"
TOOLS = {
    "list_rooms", "query_bookings", "get_booking", "find_free_slots", "create_booking",
    "cancel_booking", "move_booking", "set_room_offline", "list_offline_windows",
    "reflow_month", "get_reflow", "update_booking", "apply_reflow", "undo_reflow",
    "list_clients", "create_client", "update_client", "list_engineers", "create_engineer",
    "update_engineer", "create_room", "update_room", "remove_offline_window", "list_changes",
    "create_webhook", "list_webhooks", "delete_webhook", "list_notifications", "get_studio", "update_studio",
    "add_time_off", "list_time_off", "remove_time_off", "quote",
    "record_payment", "join_waitlist", "list_waitlist", "leave_waitlist", "studio_report",
}
# How long one call may take before the run counts as hung; the reflow solver is the slow one.
CALL_TIMEOUT = 120.0


class CheckFailed(Exception):
    """A check on the server's answers failed; the message says which and what was seen."""


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def text_of(result):
    return " ".join(getattr(block, "text", "") for block in result.content)


async def call_ok(client, tool, arguments):
    """Calls a tool that must succeed; returns its structuredContent (already schema-checked by the SDK)."""
    result = await client.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT)
    check(not result.is_error, f"{tool} {arguments} failed: {text_of(result)}")
    check(isinstance(result.structured_content, dict), f"{tool}: no structuredContent object in {result!r}")
    check(text_of(result).strip() != "", f"{tool}: no text summary")
    return result.structured_content


async def run(binary, db):
    # The SDK passes only a few safe variables to the child; keep the server's logs quiet on stderr.
    env = get_default_environment() | {"RUST_LOG": "error"}
    server = StdioServerParameters(command=binary, args=["serve", "--db", db, "--demo"], env=env)
    async with Client(server, mode="auto", client_info=None, read_timeout_seconds=CALL_TIMEOUT) as client:
        check(client.protocol_version == PROTOCOL,
              f"negotiated protocol {client.protocol_version!r}, expected {PROTOCOL} (server/discover failed?)")

        # tools/list: every tool, each with both schemas.
        listing = await client.list_tools()
        tools = list(listing.tools)
        cursor = listing.next_cursor
        while cursor:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
        names = {t.name for t in tools}
        check(names == TOOLS, f"tools/list: missing {sorted(TOOLS - names)}, unexpected {sorted(names - TOOLS)}")
        check(len(tools) == len(TOOLS), f"tools/list: {len(tools)} entries for {len(TOOLS)} names")
        for t in tools:
            check(isinstance(t.input_schema, dict) and t.input_schema.get("type") == "object",
                  f"{t.name}: inputSchema is not an object schema: {t.input_schema!r}")
            check(isinstance(t.output_schema, dict) and t.output_schema.get("type") == "object",
                  f"{t.name}: outputSchema is not an object schema: {t.output_schema!r}")

        # list_rooms: the demo's seven rooms.
        rooms = (await call_ok(client, "list_rooms", {}))["rooms"]
        room_ids = {r["id"] for r in rooms}
        check(len(rooms) == 7, f"list_rooms: {len(rooms)} rooms, expected 7: {sorted(room_ids)}")
        check({"studio-a", "studio-b", "podcast-1"} <= room_ids, f"list_rooms: unexpected ids {sorted(room_ids)}")

        # query_bookings, paged: small pages and big pages must give the same bookings in the same order.
        window = {"from": "2026-09-01T00:00", "to": "2026-10-01T00:00"}
        first = await call_ok(client, "query_bookings", window | {"limit": 25})
        check(len(first["bookings"]) == 25 and first["next_cursor"],
              f"query_bookings: expected a full first page of 25 with a next_cursor, got "
              f"{len(first['bookings'])} and {first['next_cursor']!r}")
        seen, pages = await read_all(client, window | {"limit": 25})
        check(len(seen) == len(set(seen)), "query_bookings: a booking came back on two pages")
        check(len(seen) > 100, f"query_bookings: only {len(seen)} bookings in September 2026")
        big, big_pages = await read_all(client, window | {"limit": 500})
        check(big == seen, f"query_bookings: {pages} pages of 25 gave {len(seen)} bookings, {big_pages} pages "
                           f"of 500 gave {len(big)}, or another order")
        whole = await call_ok(client, "query_bookings", window | {"limit": 500})
        starts = [b["start"] for b in whole["bookings"]]
        check(starts == sorted(starts), "query_bookings: not in start order")
        in_room = await call_ok(client, "query_bookings", window | {"room": "studio-a", "limit": 500})
        check(in_room["bookings"] and all(b["room"] == "studio-a" for b in in_room["bookings"]),
              "query_bookings room=studio-a: empty, or a booking from another room")

        # get_booking: one of the listed bookings, read back whole.
        detail = await call_ok(client, "get_booking", {"id": seen[0]})
        check(detail["booking"]["id"] == seen[0], f"get_booking: asked for {seen[0]}, got {detail['booking']['id']}")

        # find_free_slots: a two-hour session for four with drums in the first week of September.
        slots = (await call_ok(client, "find_free_slots", {
            "from": "2026-09-02T09:00", "to": "2026-09-09T00:00", "duration_minutes": 120,
            "party_size": 4, "requires": ["drums"], "limit": 10,
        }))["slots"]
        check(0 < len(slots) <= 10, f"find_free_slots: {len(slots)} slots, expected 1 to 10")
        drum_rooms = {r["id"] for r in rooms if "drums" in r["features"] and r["capacity"] >= 4}
        for s in slots:
            check(s["room"] in drum_rooms, f"find_free_slots: {s['room']} has no drums or is too small")
            start, end, latest = (datetime.fromisoformat(s[k]) for k in ("start", "end", "latest_start"))
            # `end` is where a session starting at `start` ends; `latest_start` is the window's last fit.
            check(end - start == timedelta(minutes=120) and start <= latest,
                  f"find_free_slots: inconsistent slot {s}")

        # create_booking in the first free slot, then the same slot again: refused, naming the first booking.
        slot = slots[0]
        booking = {"room": slot["room"], "client": "client-003", "start": slot["start"],
                   "end": two_hours_after(slot), "party_size": 4, "requires": ["drums"]}
        created = await call_ok(client, "create_booking", booking)
        check(len(created["bookings"]) == 1 and created["replayed"] is False,
              f"create_booking: unexpected answer {created}")
        new_id = created["bookings"][0]["id"]
        again = await client.call_tool("create_booking", booking | {"client": "client-004"},
                                       read_timeout_seconds=CALL_TIMEOUT)
        check(again.is_error, f"create_booking of a taken slot was accepted: {again.structured_content}")
        check(new_id in text_of(again),
              f"create_booking of a taken slot: the refusal does not name {new_id}: {text_of(again)!r}")

        # reflow_month, dry run: studio-b's offline fortnight in September displaces its bookings.
        reflow = await call_ok(client, "reflow_month", {"month": "2026-09", "offline_rooms": ["studio-b"],
                                                        "dry_run": True})
        check(reflow["applied"] is False, "reflow_month dry_run: applied is true")
        check(reflow["affected"] > 100, f"reflow_month: only {reflow['affected']} affected bookings, expected > 100")
        check(reflow["moved"] + reflow["unresolved"] == reflow["affected"],
              f"reflow_month: moved {reflow['moved']} + unresolved {reflow['unresolved']} != "
              f"affected {reflow['affected']}")
        check(len(reflow["moves"]) == reflow["moved"], "reflow_month: the moves list and `moved` disagree")
        stored = await call_ok(client, "get_reflow", {"reflow_id": reflow["reflow_id"]})
        check(stored["moved"] == reflow["moved"] and stored["applied"] is False,
              f"get_reflow {reflow['reflow_id']}: does not match the dry run")
        # A dry run moves nothing: the booking the plan moves first is still where it was.
        if reflow["moves"]:
            first_move = reflow["moves"][0]
            still = await call_ok(client, "get_booking", {"id": first_move["booking"]})
            check(still["booking"]["room"] == first_move["from_room"],
                  f"reflow_month dry_run moved {first_move['booking']}")

        return (f"{len(tools)} tools, {len(rooms)} rooms, {len(seen)} September bookings in {pages} pages, "
                f"{len(slots)} free slots, booked {new_id} and was refused the same slot, reflow 2026-09 "
                f"affected {reflow['affected']} (moved {reflow['moved']}, unresolved {reflow['unresolved']})")


async def read_all(client, arguments):
    """Every booking id that query_bookings gives for these arguments, following next_cursor; and the page count."""
    ids, pages, cursor = [], 0, None
    while True:
        page = await call_ok(client, "query_bookings", arguments | ({"cursor": cursor} if cursor else {}))
        ids.extend(b["id"] for b in page["bookings"])
        pages += 1
        cursor = page["next_cursor"]
        if not cursor:
            return ids, pages
        check(pages < 1000, "query_bookings: more than 1000 pages; the cursor does not advance")


def first_failure(error):
    """The CheckFailed inside an exception group (the SDK runs calls in anyio task groups), if any."""
    if isinstance(error, CheckFailed):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = first_failure(inner)
        if found is not None:
            return found
    return None


def two_hours_after(slot):
    """The end of a two-hour session starting at the slot's start, as the server writes times.

    Times come back as RFC 3339 with the studio's offset; adding two hours keeps that offset, which
    the server accepts, so the script needs no time-zone library."""
    start = datetime.fromisoformat(slot["start"])
    return (start + timedelta(hours=2)).isoformat()


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH/TO/studioflow", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    if not os.access(binary, os.X_OK):
        print(f"interop: FAILED: {binary} is not an executable file", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="studioflow-interop-") as tmp:
        try:
            summary = anyio.run(run, binary, os.path.join(tmp, "studio.db"))
        except Exception as e:
            failure = first_failure(e)
            if failure is not None:
                print(f"interop: FAILED: {failure}", file=sys.stderr)
                return 1
            # An SDK error (schema validation, JSON-RPC error, timeout) fails too, with its traceback.
            print(f"interop: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            raise
    print(f"interop: mcp 2.3.0 over stdio, protocol {PROTOCOL}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
