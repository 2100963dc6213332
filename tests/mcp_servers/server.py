"""A real MCP server for the tests: ``python -m tests.mcp_servers.server (stdio | http PORT)``.

Tools: ``echo`` (text), ``pixel`` (a PNG image), ``fail`` (raises), ``hang`` (never
answers until cancelled), ``whoami`` (the ``Authorization`` header over HTTP, env
``MCP_TOKEN`` over stdio: what the canary tests plant a secret in), ``call_meta``
(the ``_meta.callId`` the client sent), ``report`` (an embedded text resource), ``book``
(asks the person a question: elicitation, ``input_required`` on 2026-07-28), ``seat``
(asks with the 2025 API, ``ctx.elicit``: an ``elicitation/create`` request in the middle of
the call). ``http PORT 2025`` serves the 2025 revisions only: ``server/discover`` is not
answered, so a client falls back to the ``initialize`` handshake (a stateful session).
A started and a cancelled ``hang`` are recorded in the file named by env ``MCP_CANCEL_LOG``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Annotated, Any

from mcp import MCPError, types
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, Image, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import EmbeddedResource, TextResourceContents
from pydantic import BaseModel

# A 1x1 red PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)

server = MCPServer("test-tools", log_level="CRITICAL")


@server.tool(description="Repeat the given text.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="A one-pixel PNG.")
def pixel() -> Image:
    return Image(data=PIXEL, format="png")


@server.tool(description="Always fails.")
def fail(reason: str = "broken on purpose") -> str:
    # The SDK 2.x shows the model a ToolError's text; any other exception is a crash
    # whose text stays on the server.
    raise ToolError(reason)


@server.tool(description="Never answers.")
async def hang() -> str:
    _note("started")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        _note("cancelled")
        raise
    return "woke up"


def _note(line: str) -> None:
    path = os.environ.get("MCP_CANCEL_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@server.tool(description="Who the caller says it is.")
def whoami(ctx: Context) -> str:
    request: Any = ctx.request_context.request
    if request is not None:
        return f"auth: {request.headers.get('authorization', '')}"
    return f"token: {os.environ.get('MCP_TOKEN', '')}"


@server.tool(description="The call id the client sent in _meta.")
def call_meta(ctx: Context) -> str:
    meta = ctx.request_context.meta or {}
    return f"callId: {meta.get('callId')}"


@server.tool(description="An embedded text resource.")
def report() -> list[Any]:
    resource = TextResourceContents(uri="memo://report", mime_type="text/plain", text="all good")
    return [EmbeddedResource(type="resource", resource=resource)]


class Seat(BaseModel):
    seat: str
    window: bool = False


def ask_seat(flight: str) -> Elicit[Seat]:
    return Elicit(f"Which seat on flight {flight}?", Seat)


@server.tool(description="Book a seat: asks the person which one (elicitation).")
def book(flight: str, answer: Annotated[ElicitationResult[Seat], Resolve(ask_seat)]) -> str:
    if answer.action == "accept":
        where = "a window" if answer.data.window else "an aisle"
        return f"Booked seat {answer.data.seat} ({where}) on {flight}."
    return f"Not booked: the person chose {answer.action}."


class Meal(BaseModel):
    meal: str


def ask_meal(flight: str) -> Elicit[Meal]:
    return Elicit(f"Which meal on flight {flight}?", Meal)


@server.tool(description="Order a meal: asks the person which one (elicitation).")
def meal(flight: str, answer: Annotated[ElicitationResult[Meal], Resolve(ask_meal)]) -> str:
    if answer.action == "accept":
        return f"Ordered {answer.data.meal} on {flight}."
    return f"No meal: the person chose {answer.action}."


# ``seat`` calls that wait for each other before asking, by group (``together``).
_arrived: dict[str, int] = {}
_all_here: dict[str, asyncio.Event] = {}


async def _gather(group: str, together: int) -> None:
    _arrived[group] = _arrived.get(group, 0) + 1
    here = _all_here.setdefault(group, asyncio.Event())
    if _arrived[group] >= together:
        here.set()
    await here.wait()


@server.tool(description="Pick a seat: asks the person in the middle of the call (2025 API).")
async def seat(
    flight: str, ctx: Context, together: int = 1, group: str = "", tagged: bool = False
) -> str:
    """``together``: wait until that many calls of ``group`` are in flight, then ask; ``tagged``:
    the question carries the call's ``_meta.callId`` (which call's person to ask)."""
    await _gather(group, together)
    message = f"Which seat on flight {flight}?"
    try:
        if tagged:
            call_id = (ctx.request_context.meta or {}).get("callId")
            params = types.ElicitRequestFormParams.model_validate(
                {
                    "message": message,
                    "requestedSchema": render_elicitation_schema(Seat),
                    "_meta": {"callId": call_id},
                }
            )
            raw = await ctx.request_context.session.send_request(
                types.ElicitRequest(params=params),
                types.ElicitResult,
                # On the call's own response stream, as ``ctx.elicit`` sends it.
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            action, content = raw.action, raw.content or {}
        else:
            answer = await ctx.elicit(message, Seat)
            action = answer.action
            content = answer.data.model_dump() if answer.action == "accept" else {}
    except MCPError as exc:
        return f"Not booked: {exc.error.message}"
    if action == "accept":
        where = "a window" if content.get("window") else "an aisle"
        return f"Booked seat {content.get('seat')} ({where}) on {flight}."
    return f"Not booked: the person chose {action}."


async def _no_discover(ctx: Any, params: Any) -> Any:
    raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found")


def main() -> None:
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    if sys.argv[3:] == ["2025"]:
        lowlevel: Any = server._lowlevel_server
        lowlevel.add_request_handler("server/discover", types.RequestParams, _no_discover)
    import uvicorn

    uvicorn.run(
        server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning"
    )


if __name__ == "__main__":
    main()
