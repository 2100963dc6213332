"""A logged request as a ``curl`` command (the log inspector's "Copy as cURL").

Pure: takes the stored request body of a log and returns the command text. The key is
never in it: logs keep requests without credentials (``wire_request``), and the header
that carries the key is written with a shell placeholder (``$OPENAI_API_KEY``), so the
command runs once the reader exports their own key.

A log of a provider without a wire format (``test``) keeps the neutral request; it is
shown as the chosen vendor (default OpenAI) would receive it, from its public endpoint.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, cast

import httpx

from runtime.providers.adapter import strip_inline_data
from runtime.providers.inspect import CannotRender, _neutral
from runtime.providers.registry import ADAPTERS

DEFAULT_VIEW = "openai"


def key_placeholder(provider: str) -> str:
    """``$OPENAI_API_KEY``-style placeholder for ``provider``'s key."""
    cls = ADAPTERS.get(provider)
    return f"${cls.key_env}" if cls is not None and cls.key_env else "$API_KEY"


def wire_of(logged_provider: str, body: Any, view: str | None = None) -> tuple[str, dict[str, Any]]:
    """``(provider, {method, url, headers, body})`` of a logged request body.

    A vendor request is shown as sent; a neutral one as ``view`` (a vendor name) would
    receive it. ``CannotRender`` when there is nothing to show.
    """
    if not isinstance(body, dict):
        raise CannotRender("This log has no request body")
    if isinstance(body.get("summary"), dict) and isinstance(body.get("body"), dict):
        return logged_provider, {
            "method": str(body.get("method") or "POST"),
            "url": str(body.get("url") or ""),
            "headers": dict(body.get("headers") or {}),
            "body": body["body"],
        }
    provider = view or DEFAULT_VIEW
    if provider not in ADAPTERS:
        raise CannotRender(f"Unknown provider: {provider}")
    # Building a request never touches the client: no connection is opened.
    adapter = ADAPTERS[provider](cast(httpx.AsyncClient, None), None, None)
    prepared = adapter.build_request(_neutral(body))
    dumped: dict[str, Any] = strip_inline_data(prepared.dump())
    return provider, dumped


def curl_command(logged_provider: str, body: Any, view: str | None = None) -> str:
    """The ``curl`` command that repeats a logged request, the key as a placeholder."""
    provider, wire = wire_of(logged_provider, body, view)
    cls = ADAPTERS.get(provider)
    headers = {k: str(v) for k, v in (wire.get("headers") or {}).items()}
    if cls is not None:
        adapter = cls(cast(httpx.AsyncClient, None), None, None)
        # The placeholder goes in double quotes so the shell expands it; nothing else does.
        auth = adapter.auth_headers("\x00KEY\x00")
        headers.update(auth)
    lines = [f"curl -X {wire.get('method') or 'POST'} {shlex.quote(str(wire.get('url') or ''))}"]
    placeholder = key_placeholder(provider)
    for name, value in headers.items():
        if "\x00KEY\x00" in value:
            quoted = '"' + f"{name}: {value}".replace("\x00KEY\x00", placeholder) + '"'
        else:
            quoted = shlex.quote(f"{name}: {value}")
        lines.append(f"  -H {quoted}")
    data = json.dumps(wire.get("body"), ensure_ascii=False, indent=2)
    lines.append(f"  --data-raw {shlex.quote(data)}")
    return " \\\n".join(lines)
