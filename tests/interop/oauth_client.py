"""Interop check: the official Python MCP SDK (PyPI `mcp==2.3.0`, `OAuthClientProvider`) signs in to
studioflow's own authorization server (`serve --oauth-server`) with no token to start from.

Usage: OAUTH_USER=alice OAUTH_PASSWORD=... python oauth_client.py MODE http://127.0.0.1:PORT/mcp [CLIENT_METADATA_URL]

The SDK gets 401, discovers the resource's metadata from the challenge, then the authorization
server's, registers (or, in mode `cimd`, names itself by the URL of its metadata document), and
hands the authorization URL to the redirect handler. The handler is the person at the browser: it
submits the login form and the consent form over HTTP (keeping the pages' cookies, so a second
authorization within the session asks only consent), and gives the SDK the redirect's `code`,
`state` and `iss`. Modes:

- `flow` and `cimd`: list the tools, book a free slot, wait past the access token's life (the
  server runs with a short `--oauth-access-ttl`) and book again, which the SDK does after refreshing.
- `stepup`: list the tools with what the user's role gave, then (after `STUDIOFLOW_PROMOTE`, a
  command the test gives, has run, if any) book: the 403 `insufficient_scope` makes the SDK
  re-authorize; the booking succeeds or fails as the role allows.

Prints one line of JSON (what the Rust test checks against the database), or exits 1 naming the
failed check.
"""

import json
import logging
import os
import re
import subprocess
import sys
import time
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from stdio_client import CALL_TIMEOUT, TOOLS, CheckFailed, call_ok, check, first_failure, two_hours_after

REDIRECT_URI = "http://127.0.0.1:9/callback"


class MemoryStorage:
    """Token storage for one run: what the SDK registered and was issued."""

    def __init__(self):
        self.tokens, self.client_info = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def hidden_fields(html):
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


class Browser:
    """The person at the browser: submits the login and consent forms the authorization URL leads to."""

    def __init__(self, user, password):
        self.user, self.password = user, password
        self.http = httpx2.AsyncClient(follow_redirects=False, timeout=30.0)
        self.pages, self.result = [], None

    async def open(self, authorization_url):
        self.result = None
        url = authorization_url
        response = await self.http.get(url)
        for _ in range(6):
            self.pages.append(f"{response.request.method} {urlparse(str(response.request.url)).path} {response.status_code}")
            if response.status_code in (302, 303):
                location = urljoin(str(response.request.url), response.headers["location"])
                if location.startswith(REDIRECT_URI):
                    query = parse_qs(urlparse(location).query)
                    check("code" in query, f"the authorization ended without a code: {location}")
                    self.result = AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0])
                    return
                response = await self.http.get(location)
                continue
            check(response.status_code == 200, f"{response.request.url} answered {response.status_code}: {response.text[:300]}")
            html = response.text
            check("<script" not in html, "a sign-in page carries a script")
            fields = hidden_fields(html)
            check("csrf" in fields, f"a form without a CSRF token: {html[:300]}")
            if 'name="password"' in html:
                fields.update(username=self.user, password=self.password)
                response = await self.http.post(urljoin(str(response.request.url), "/oauth/login"), data=fields)
            else:
                check('value="allow"' in html, f"the consent page offers no Allow: {html[:600]}")
                fields["consent"] = "allow"
                response = await self.http.post(urljoin(str(response.request.url), "/oauth/consent"), data=fields)
        raise CheckFailed(f"the sign-in did not end: {self.pages}")

    async def callback(self):
        check(self.result is not None, "no authorization result")
        return self.result


def recorder(seen):
    async def hook(response):
        request = response.request
        body = request.content.decode() if request.method == "POST" and "oauth" in request.url.path else ""
        seen.append({"method": request.method, "path": request.url.path, "status": response.status_code, "grant_type": parse_qs(body).get("grant_type", [None])[0]})
    return hook


async def book(client, day, who="client-001"):
    slots = (await call_ok(client, "find_free_slots", {"from": f"{day}T10:00", "to": f"{day}T20:00", "duration_minutes": 120, "limit": 1}))["slots"]
    check(len(slots) == 1, f"find_free_slots: {len(slots)} slots on {day}")
    created = await call_ok(client, "create_booking", {"room": slots[0]["room"], "client": who, "start": slots[0]["start"], "end": two_hours_after(slots[0])})
    return created["bookings"][0]["id"]


async def run(mode, url, document_url):
    browser = Browser(os.environ["OAUTH_USER"], os.environ["OAUTH_PASSWORD"])
    storage = MemoryStorage()
    metadata = OAuthClientMetadata(redirect_uris=[REDIRECT_URI], client_name="studioflow-interop")
    provider = OAuthClientProvider(url, metadata, storage, redirect_handler=browser.open, callback_handler=browser.callback, client_metadata_url=document_url)
    seen = []
    result = {}
    async with create_mcp_http_client(auth=provider) as http:
        http.event_hooks["response"].append(recorder(seen))
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            check(names == TOOLS, f"tools/list: missing {sorted(TOOLS - names)}")
            result["first_scope"] = storage.tokens.scope
            if mode in ("flow", "cimd"):
                result["booking"] = await book(client, "2026-10-14")
                ttl = storage.tokens.expires_in
                await anyio.sleep(ttl + 1.5)
                result["after_expiry"] = await book(client, "2026-11-03", "client-002")
            else:
                promote = os.environ.get("STUDIOFLOW_PROMOTE")
                if promote:
                    subprocess.run(json.loads(promote), check=True, capture_output=True)
                try:
                    result["booking"] = await book(client, "2026-10-14")
                except CheckFailed:
                    raise
                except Exception as e:
                    error = e
                    while getattr(error, "exceptions", None):
                        error = error.exceptions[0]
                    result["refused"] = f"{type(error).__name__}: {error}"
            result["last_scope"] = storage.tokens.scope
    result["client_id"] = storage.client_info.client_id if storage.client_info else None
    result["pages"] = browser.pages
    result["requests"] = [f"{e['method']} {e['path']} {e['status']}" + (f" {e['grant_type']}" if e["grant_type"] else "") for e in seen]
    await browser.http.aclose()
    return result


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("flow", "cimd", "stepup"):
        print(f"usage: OAUTH_USER=... OAUTH_PASSWORD=... {sys.argv[0]} flow|cimd|stepup URL [CLIENT_METADATA_URL]", file=sys.stderr)
        return 2
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    document_url = sys.argv[3] if len(sys.argv) == 4 else None
    try:
        results = anyio.run(run, sys.argv[1], sys.argv[2], document_url)
    except Exception as e:
        failure = first_failure(e)
        if failure is not None:
            print(f"oauth interop: FAILED: {failure}", file=sys.stderr)
            return 1
        print(f"oauth interop: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
