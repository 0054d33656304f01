"""An SMTP server for the e-mail tests (tests/it/mail.rs), on aiosmtpd: it binds 127.0.0.1 on a
free port and prints the port, then answers each message's DATA with the next reply of the script
given as its first argument (a JSON list such as ["451 4.3.0 try later", "250 OK"]; the last one
from then on; a recipient named in the optional second argument, a JSON object of address to
reply, always gets that reply; an optional third, {"mode": "starttls" or "tls", "cert": PEM file, "key": PEM file}, makes
it require STARTTLS or speak TLS from the first byte). For every message it prints one JSON line: the envelope, the
reply, and what Python's `email` package and the `icalendar` package read from it (the parts'
content types, the bodies, the calendar's METHOD and each event's UID, SEQUENCE, STATUS and times
in Europe/London)."""

import asyncio
import email
import json
import ssl
import sys
import time
from email import policy
from zoneinfo import ZoneInfo

from aiosmtpd.smtp import SMTP
from icalendar import Calendar

script = json.loads(sys.argv[1])
by_recipient = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
tls = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
london = ZoneInfo("Europe/London")
count = 0


def read(content):
    message = email.message_from_bytes(content, policy=policy.default)
    parts, text, html, calendar = [], None, None, None
    for part in message.walk():
        kind = part.get_content_type()
        parts.append(part.get("content-type"))
        if kind == "text/plain":
            text = part.get_content()
        elif kind == "text/html":
            html = part.get_content()
        elif kind == "text/calendar":
            cal = Calendar.from_ical(part.get_content())
            events = []
            for event in cal.walk("VEVENT"):
                events.append({
                    "uid": str(event["UID"]),
                    "sequence": int(event["SEQUENCE"]),
                    "status": str(event.get("STATUS")),
                    "start": event.decoded("DTSTART").astimezone(london).isoformat(),
                    "end": event.decoded("DTEND").astimezone(london).isoformat(),
                    "organizer": str(event.get("ORGANIZER")),
                    "attendee": str(event.get("ATTENDEE")),
                })
            calendar = {"method": str(cal["METHOD"]), "part_method": part.get_param("method"), "events": events}
    return {
        "from": message["from"],
        "to": message["to"],
        "subject": message["subject"],
        "message_id": message["message-id"],
        "parts": parts,
        "text": text,
        "html": html,
        "calendar": calendar,
    }


class Handler:
    async def handle_DATA(self, server, session, envelope):
        global count
        reply = script[min(count, len(script) - 1)]
        for rcpt in envelope.rcpt_tos:
            reply = by_recipient.get(rcpt, reply)
        count += 1
        try:
            got = read(envelope.content)
            error = None
        except Exception as e:  # a message Python cannot read is the finding itself
            got, error = None, repr(e)
        # STARTTLS leaves its mark on the server; TLS from the first byte on the transport.
        secured = getattr(server, "_tls_protocol", None) is not None or server.transport.get_extra_info("ssl_object") is not None
        print(json.dumps({"rcpt": envelope.rcpt_tos, "reply": reply, "message": got, "error": error, "tls": secured, "at": time.monotonic()}), flush=True)
        return reply


async def main():
    loop = asyncio.get_running_loop()
    context = None
    if tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tls["cert"], tls["key"])
    if tls and tls["mode"] == "starttls":
        server = await loop.create_server(lambda: SMTP(Handler(), tls_context=context, require_starttls=True), "127.0.0.1", 0)
    elif tls:
        server = await loop.create_server(lambda: SMTP(Handler()), "127.0.0.1", 0, ssl=context)
    else:
        server = await loop.create_server(lambda: SMTP(Handler()), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


asyncio.run(main())
