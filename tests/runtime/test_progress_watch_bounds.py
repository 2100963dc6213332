"""``ProgressWatch`` keeps the streamed arguments only of calls that still wait for their
progress argument: joining every delta of every call made a long argument (a file's content
in thousands of deltas) quadratic in its length on the event loop."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from runtime.providers.base import ToolCallDelta, ToolCallStart
from runtime.step.tool_progress import ProgressWatch


def _offered(progress_argument: str | None) -> Any:
    return SimpleNamespace(tool=SimpleNamespace(progress_argument=progress_argument))


def test_only_calls_waiting_for_their_progress_argument_keep_their_deltas() -> None:
    fired: list[tuple[str, Any]] = []

    async def fire(call: Any, value: Any) -> None:
        fired.append((call["id"], value))

    tools = {"write": _offered(None), "search": _offered("query")}
    watch = ProgressWatch(tools, set(), fire)

    async def stream() -> None:
        await watch.feed(ToolCallStart(id="w", name="write"))
        await watch.feed(ToolCallStart(id="s", name="search"))
        await watch.feed(ToolCallDelta(id="s", delta='{"query": "cats", '))
        await watch.feed(ToolCallDelta(id="w", delta='{"content": "'))
        for _ in range(1000):
            await watch.feed(ToolCallDelta(id="w", delta="x" * 20))
            await watch.feed(ToolCallDelta(id="s", delta="y" * 20))

    asyncio.run(stream())
    assert fired == [("s", "cats")]
    assert watch._calls["w"] == ("write", [])  # no progress argument: nothing kept
    assert watch._calls["s"] == ("search", ['{"query": "cats", '])  # announced: no more
