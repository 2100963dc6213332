"""Issue #54, row E2 in the engine: ``state.user()`` returns the spec 0.2.0 ``ThreadUser``
(id, username, role, permissions, email, display_name, avatar_url), and code written for
0.1.0 (``is_admin``) keeps working. Observed as the tool received it.

The Django store's side: tests/agents_app/api/test_E2_thread_user.py.
"""

from __future__ import annotations

from typing import Any

from runtime.providers.test_provider import TestScript
from runtime.store.memory import MemoryStore
from runtime.store.protocol import ThreadUser, UserRecord
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

SEEN: list[Any] = []


@define_tool("Who is this?")
async def whoami(state: Any) -> str:
    user = await state.user()
    SEEN.append(None if user is None else (user.to_dict(), user.is_admin, user["role"]))
    return "ok"


def _world(world: World) -> None:
    SEEN.clear()
    world.register(whoami)
    world.define(prompt(tools=["whoami"]), agent())
    world.script("m", TestScript().add_tool_call("whoami").add_text("done"))


async def test_E2_state_user_is_a_thread_user_with_the_spec_fields(world: World) -> None:
    _world(world)
    assert isinstance(world.store, MemoryStore)
    world.store.users["u1"] = ThreadUser(
        id="u1",
        username="ada",
        email="ada@example.org",
        role="admin",
        permissions=["agents_app.view_thread"],
        display_name="Ada Lovelace",
    )
    thread = await world.thread(user_id="u1")

    await world.run(thread.id, "who am I?")

    assert SEEN == [
        (
            {
                "id": "u1",
                "username": "ada",
                "role": "admin",
                "permissions": ["agents_app.view_thread"],
                "email": "ada@example.org",
                "display_name": "Ada Lovelace",
                "avatar_url": None,
            },
            True,  # is_admin, the 0.1.0 field, still answers
            "admin",
        )
    ]


async def test_E2_an_unknown_owner_is_a_plain_user_and_no_owner_is_none(world: World) -> None:
    _world(world)
    world.script("m", TestScript().add_tool_call("whoami").add_text("done").add_tool_call("whoami"))
    owned = await world.thread(user_id="someone")
    await world.run(owned.id, "who am I?")
    assert SEEN[0][0]["role"] == "user" and SEEN[0][1] is False
    assert SEEN[0][0]["display_name"] == "someone"

    ownerless = await world.thread()
    await world.run(ownerless.id, "who am I?")
    assert SEEN[1] is None
    assert UserRecord is ThreadUser  # the 0.1.0 name imports the same class
