"""A real MCP server for the tests: ``python -m tests.mcp_servers.server (stdio | http PORT)``.

Tools: ``echo`` (text), ``pixel`` (a PNG image), ``fail`` (raises), ``hang`` (never
answers until cancelled), ``whoami`` (the ``Authorization`` header over HTTP, env
``MCP_TOKEN`` over stdio: what the canary tests plant a secret in), ``call_meta``
(the ``_meta.callId`` the client sent), ``report`` (an embedded text resource), ``book``
(asks the person a question: elicitation, ``input_required`` on 2026-07-28).
A started and a cancelled ``hang`` are recorded in the file named by env ``MCP_CANCEL_LOG``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Annotated, Any

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, Image, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
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


def main() -> None:
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    uvicorn.run(
        server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning"
    )


if __name__ == "__main__":
    main()
