"""Spec 0.2.0 row F6 in the engine: ``state.fetch(grant, url)`` asks the store as the code
tool running (``("tools", <name>)``); code that is not a tool call is refused, and the
in-memory store lends no credential at all."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from runtime.providers.test_provider import TestScript
from tests.runtime.conftest import World, agent, prompt

ASKED: list[tuple[Any, ...]] = []


@pytest.fixture
async def state(world: World) -> Any:
    world.define(prompt(), agent())
    world.script("m", TestScript().add_text("hello back"))
    thread = await world.thread(user_id="alice")
    return await world.engine.thread_state(thread.id)


async def test_F6_fetch_outside_a_tool_call_is_refused(state: Any) -> None:
    with pytest.raises(PermissionError, match="credential grants are lent to tools"):
        await state.fetch("crm", "https://api.example.com/x")


async def test_F6_a_tool_asks_the_store_as_itself(state: Any, world: World) -> None:
    async def grant_fetch(*args: Any) -> httpx.Response:
        ASKED.append(args)
        return httpx.Response(204)

    world.store.grant_fetch = grant_fetch  # type: ignore[method-assign]
    response = await state.as_tool("crm_lookup").fetch(
        "crm", "https://api.example.com/x", method="POST", json={"a": 1}
    )
    assert response.status_code == 204
    assert ASKED == [
        (
            "alice",
            "crm",
            ("tools", "crm_lookup"),
            "POST",
            "https://api.example.com/x",
            {"json": {"a": 1}},
        )
    ]


async def test_F6_the_memory_store_lends_nothing(state: Any) -> None:
    with pytest.raises(PermissionError, match="No credential grant named 'crm'"):
        await state.as_tool("crm_lookup").fetch("crm", "https://api.example.com/x")
