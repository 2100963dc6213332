"""Helpers for the OpenAI Responses adapter tests."""

from __future__ import annotations

import json
from typing import Any

import httpx

from runtime.core.provider_tools import CitationsFound, ProviderToolDone, WebSearchDone
from runtime.providers.base import ImageDelta
from runtime.providers.openai.responses import OpenAIResponsesProvider

from . import recordings
from .conftest import PLANTED_KEY
from .helpers import Collected
from .replay import ReplayServer, Reply
from .test_provider_openai import MULTIPLY  # noqa: F401 (shared by the Responses tests)


def adapter(client: httpx.AsyncClient, replay: ReplayServer, **kw: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(client, PLANTED_KEY, replay.url + "/v1", **kw)


def jsonl_stream(name: str) -> Reply:
    """A ``.chunks.jsonl`` fixture (one data payload per line) as a named-event stream."""
    body = b""
    for line in recordings.raw(name).decode().splitlines():
        if line.strip():
            kind = json.loads(line)["type"]
            body += f"event: {kind}\ndata: {line}\n\n".encode()
    return Reply.sse(body, 61)


def tools_done(out: Collected) -> list[ProviderToolDone]:
    return [e for e in out.events if isinstance(e, ProviderToolDone)]


def searches(out: Collected) -> list[WebSearchDone]:
    return [e for e in out.events if isinstance(e, WebSearchDone)]


def cited(out: Collected) -> list[Any]:
    return [c for e in out.events if isinstance(e, CitationsFound) for c in e.citations]


def images(out: Collected) -> list[ImageDelta]:
    return [e for e in out.events if isinstance(e, ImageDelta)]


def assistant_turn(out: Collected) -> dict[str, Any]:
    """The assistant message the engine would store for ``out`` (neutral shape)."""
    message: dict[str, Any] = {"role": "assistant", "content": out.text or None}
    if out.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in out.calls
        ]
    if out.finish.provider_data:
        message["provider_data"] = out.finish.provider_data
    return message
