"""Interop check (issue 29): the official Python MCP SDK (PyPI `mcp==2.3.0`) approves and declines a
reflow through its own input-required support, without the Tasks extension.

Usage: python approval_client.py PATH/TO/studioflow

It spawns `studioflow serve --db <tmp>/studio.db --demo` over stdio, negotiates 2026-07-28, and calls
`reflow_month {require_approval: true}` with an `elicitation_callback`: the SDK receives the
input-required result, asks the callback (which sees the approval question) and calls again with
`inputResponses` and the `requestState` itself. Once declined (nothing applied), once accepted
(applied). Exits 1 naming the failed check, or prints one summary line and exits 0.
"""

import os
import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp_types import ElicitResult

PROTOCOL = "2026-07-28"
CALL_TIMEOUT = 120.0
ARGS = {"month": "2026-09", "offline_rooms": ["studio-b"], "require_approval": True}


class CheckFailed(Exception):
    """A check on the server's answers failed."""


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def text_of(result):
    return " ".join(getattr(block, "text", "") for block in result.content)


async def run(binary, db):
    env = get_default_environment() | {"RUST_LOG": "error"}
    server = StdioServerParameters(command=binary, args=["serve", "--db", db, "--demo"], env=env)
    asked = []
    answer = {"action": "decline"}

    async def elicit(context, params):
        asked.append(params.message)
        return ElicitResult(action=answer["action"], content={})

    async with Client(server, mode="auto", client_info=None, read_timeout_seconds=CALL_TIMEOUT, elicitation_callback=elicit) as client:
        check(client.protocol_version == PROTOCOL, f"negotiated {client.protocol_version!r}, expected {PROTOCOL}")
        declined = await client.call_tool("reflow_month", ARGS, read_timeout_seconds=CALL_TIMEOUT)
        check(len(asked) == 1 and asked[0].startswith("Apply "), f"the approval question was not asked once: {asked!r}")
        check(not declined.is_error, f"declined: {text_of(declined)}")
        check(declined.structured_content["applied"] is False, f"declined but applied: {declined.structured_content!r}")
        check(text_of(declined).startswith("Declined: nothing was moved"), f"declined: {text_of(declined)}")

        answer["action"] = "accept"
        accepted = await client.call_tool("reflow_month", ARGS, read_timeout_seconds=CALL_TIMEOUT)
        check(len(asked) == 2, f"the second call was not asked: {asked!r}")
        check(not accepted.is_error, f"accepted: {text_of(accepted)}")
        check(accepted.structured_content["applied"] is True, f"accepted but not applied: {accepted.structured_content!r}")
        moved = len(accepted.structured_content["moves"])
        check(moved > 0, "accepted: no moves")
        print(f"python sdk approval: declined (nothing moved), then accepted ({moved} moves applied) through input-required results")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            anyio.run(run, binary, os.path.join(tmp, "studio.db"))
        except CheckFailed as e:
            print(f"FAILED: {e}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
