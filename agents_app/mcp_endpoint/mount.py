"""Mounting ``/mcp`` in front of Django without loading the MCP SDK at start.

The SDK builds its protocol types at import (about a second of CPU): a server process that
never answers ``/mcp`` should not pay it at every start. The endpoint
(``agents_app.mcp_endpoint.server``) is imported by the first ``/mcp`` request, which pays it
once per process.
"""

from __future__ import annotations

from typing import Any


def with_mcp(django_app: Any, path: str = "/mcp") -> Any:
    """An ASGI app serving ``path`` with MCP and everything else with ``django_app``."""
    mcp_app: Any = None

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal mcp_app
        if scope["type"] == "http" and scope["path"].rstrip("/") == path:
            if mcp_app is None:
                from agents_app.mcp_endpoint.server import McpApp  # the SDK (module doc)

                mcp_app = McpApp()
            await mcp_app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return app
