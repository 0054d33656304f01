"""Interop check: the official Python MCP SDK (PyPI `mcp==2.3.0`) over Streamable HTTP with a bearer token.

Usage: STUDIOFLOW_TOKEN=sft_... python http_client.py http://127.0.0.1:PORT/mcp

The server is already running with `--require-auth` (tests/it/sdk_python.rs starts it and creates the
token; the secret comes in the environment, not on the command line). With the token, sent by the
SDK's own HTTP client (`create_mcp_http_client(headers=...)`), the script negotiates protocol
2026-07-28, lists the tools, finds a free slot and books it. Without it, it connects twice more:
with the SDK's plain transport, and with its OAuth client (`OAuthClientProvider`), and records what
each surfaces and which requests it made, through an httpx2 response hook. Prints one line of JSON
(what the Rust test checks against the database), or exits 1 naming the failed check.
"""

import json
import os
import sys

import logging

import anyio
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata
from mcp.shared.exceptions import MCPError

from stdio_client import CALL_TIMEOUT, PROTOCOL, TOOLS, CheckFailed, call_ok, check, first_failure, two_hours_after


def recorder(seen):
    """An httpx2 response hook that notes each exchange: what the SDK saw before it mapped it to an error."""
    async def hook(response):
        seen.append({
            "method": response.request.method,
            "url": str(response.request.url),
            "status": response.status_code,
            "www_authenticate": response.headers.get("www-authenticate"),
            "sent_authorization": "authorization" in response.request.headers,
        })
    return hook


def innermost(error):
    """The first exception that is not a group (the SDK runs its transport in anyio task groups)."""
    while getattr(error, "exceptions", None):
        error = error.exceptions[0]
    return error


def resource_metadata_of(challenge):
    check(challenge and challenge.startswith("Bearer "), f"WWW-Authenticate: {challenge!r}")
    for part in challenge[len("Bearer "):].split(","):
        name, _, value = part.strip().partition("=")
        if name == "resource_metadata":
            return value.strip('"')
    raise CheckFailed(f"no resource_metadata in WWW-Authenticate: {challenge!r}")


async def with_token(url, token):
    seen = []
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        http.event_hooks["response"].append(recorder(seen))
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="auto", client_info=None, read_timeout_seconds=CALL_TIMEOUT) as client:
            check(client.protocol_version == PROTOCOL, f"negotiated protocol {client.protocol_version!r}, expected {PROTOCOL}")
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            names = {t.name for t in tools}
            check(names == TOOLS, f"tools/list: missing {sorted(TOOLS - names)}, unexpected {sorted(names - TOOLS)}")
            slots = (await call_ok(client, "find_free_slots", {
                "from": "2026-10-14T10:00", "to": "2026-10-14T20:00", "duration_minutes": 120, "limit": 1,
            }))["slots"]
            check(len(slots) == 1, f"find_free_slots: {len(slots)} slots on 14 October")
            slot = slots[0]
            created = await call_ok(client, "create_booking", {
                "room": slot["room"], "client": "client-001", "start": slot["start"], "end": two_hours_after(slot),
            })
            check(len(created["bookings"]) == 1, f"create_booking: {created}")
            booking = created["bookings"][0]
            read_back = await call_ok(client, "get_booking", {"id": booking["id"]})
            check(read_back["booking"]["room"] == slot["room"], f"get_booking {booking['id']}: {read_back}")
    check(seen and all(e["status"] == 200 and e["sent_authorization"] for e in seen),
          f"with the token, an exchange was refused or sent no Authorization: {seen}")
    return {"tools": len(tools), "booking": booking["id"], "room": slot["room"], "start": slot["start"], "requests": len(seen)}


async def plain_without_token(url):
    """The SDK's plain transport: what a 401 becomes, and what went over the wire."""
    seen = []
    async with create_mcp_http_client() as http:
        http.event_hooks["response"].append(recorder(seen))
        try:
            async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT):
                raise CheckFailed("connected without a token")
        except CheckFailed:
            raise
        except Exception as e:  # an ExceptionGroup around the MCPError
            error = innermost(e)
    check(isinstance(error, MCPError), f"without a token: {type(error).__name__}: {error}")
    check(seen and all(e["status"] == 401 for e in seen), f"without a token: {seen}")
    return {
        "error": {"type": type(error).__name__, "code": error.error.code, "message": error.error.message},
        "statuses": [e["status"] for e in seen],
        "www_authenticate": seen[0]["www_authenticate"],
        "resource_metadata": resource_metadata_of(seen[0]["www_authenticate"]),
    }


class NoStorage:
    """Token storage that holds nothing: this client has never been authorized."""

    async def get_tokens(self):
        return None

    async def set_tokens(self, tokens):
        pass

    async def get_client_info(self):
        return None

    async def set_client_info(self, client_info):
        pass


async def oauth_without_token(url):
    """The SDK's OAuth client: on the 401 it discovers the resource's metadata from the header itself.

    studioflow without `--oauth-issuer` names no authorization server (API tokens are made with
    `studioflow token create`), so the flow cannot get a token; what matters is where it looked."""
    seen, redirects = [], []

    async def redirect(authorization_url):
        redirects.append(authorization_url)

    metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"], client_name="studioflow-interop")
    provider = OAuthClientProvider(url, metadata, NoStorage(), redirect_handler=redirect)
    async with create_mcp_http_client(auth=provider) as http:
        http.event_hooks["response"].append(recorder(seen))
        try:
            async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT):
                raise CheckFailed("the OAuth client connected without any authorization server")
        except CheckFailed:
            raise
        except Exception as e:
            error = innermost(e)
    check(not redirects, f"the OAuth client sent the user to {redirects}")
    check(not any(e["sent_authorization"] for e in seen), f"the OAuth client sent a credential: {seen}")
    return {
        "error": {"type": type(error).__name__, "message": str(error)},
        "requests": [f"{e['method']} {e['url']} {e['status']}" for e in seen],
        "challenge": seen[0]["www_authenticate"] if seen else None,
        "parsed_metadata": provider.context.protected_resource_metadata is not None,
    }


async def run(url, token):
    return {
        "with_token": await with_token(url, token),
        "without_token": await plain_without_token(url),
        "oauth_without_token": await oauth_without_token(url),
    }


def main():
    if len(sys.argv) != 2 or not os.environ.get("STUDIOFLOW_TOKEN"):
        print(f"usage: STUDIOFLOW_TOKEN=sft_... {sys.argv[0]} http://HOST:PORT/mcp", file=sys.stderr)
        return 2
    # The OAuth client logs its expected failure with a traceback; the JSON says what it was.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    try:
        results = anyio.run(run, sys.argv[1], os.environ["STUDIOFLOW_TOKEN"])
    except Exception as e:
        failure = first_failure(e)
        if failure is not None:
            print(f"http interop: FAILED: {failure}", file=sys.stderr)
            return 1
        print(f"http interop: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
