"""Issue #54, row F2 in the engine (no database): ``define_user_endpoint`` definitions,
``state.user().call`` through the store protocol (the in-memory store serves no user
endpoints and says so), and a ``ThreadUser`` not bound to any scope refusing ``call``.

The Django side: tests/agents_app/users/.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.extend import (
    ThreadUser,
    UserEndpointDefinition,
    UserEndpointError,
    define_hook,
    define_user_endpoint,
)
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import Registry, RegistryError, define_tool
from tests.runtime.conftest import World, agent, prompt
from tests.runtime.tools.test_spec_0_2_0_parent_hooks import _side_parent, _world

SEEN: list[Any] = []


async def profile(request: Any, user: Any, params: dict[str, str]) -> Any:
    return {"me": user.identity().username}


@define_tool("Ask my user's profile")
async def ask(state: Any) -> str:
    user = await state.user()
    try:
        SEEN.append(await user.call("get", "/profile"))
    except UserEndpointError as exc:
        SEEN.append((exc.status, exc.message))
    return "ok"


def test_F2_define_user_endpoint_forms() -> None:
    plain = define_user_endpoint(profile)
    assert isinstance(plain, UserEndpointDefinition)
    assert (plain.name, plain.method, plain.route) == ("profile", None, None)
    routed = define_user_endpoint(method="post", route="/p")(profile)
    assert (routed.method, routed.route) == ("POST", "/p")
    registry = Registry(routed, define_user_endpoint(profile, route="/p"))
    assert sorted(registry.user_endpoints) == ["GET /p", "POST /p"]
    with pytest.raises(ValueError, match="not an HTTP method"):
        define_user_endpoint(profile, method="TRACE")


def test_F5_user_hooks_are_hook_names_define_hook_accepts() -> None:
    async def on_value(user: Any, key: str, value: Any) -> None: ...

    registry = Registry(define_hook("user_value_changed", on_value))
    assert [h.id for h in registry.user_hooks("user_value_changed")] == ["on_value"]
    assert registry.user_hooks("user_client_attached") == []
    with pytest.raises(RegistryError, match="user_client_detached"):
        define_hook("user_client_gone", on_value)


async def test_F2_a_thread_user_outside_a_thread_has_no_endpoints_to_call() -> None:
    with pytest.raises(UserEndpointError) as refused:
        await ThreadUser(id="1", username="ada").call("GET", "/profile")
    assert refused.value.status == 404


async def test_F2_state_user_call_goes_through_the_store(world: World) -> None:
    SEEN.clear()
    world.register(ask)
    world.define(prompt(tools=["ask"]), agent())
    world.script("m", TestScript().add_tool_call("ask").add_text("done"))
    thread = await world.thread(user_id="u1")
    await world.run(thread.id, "hi")
    assert SEEN == [(404, "No user endpoint GET /profile here.")]


async def test_F5_a_parent_hook_that_became_a_user_hook_fails_the_parent_step(
    world: World,
) -> None:
    _world(world, _side_parent(), [{"hook": "counts_values", "reason": "Counts"}])

    async def counts_values(user: Any, key: str, value: Any) -> None: ...

    world.register(define_hook("user_value_changed", counts_values))
    thread, result = await world.chat("go")

    assert result.stop_reason == "step_error"
    assert "that hook is now a user hook" in (result.detail or "")
    assert world.requests() == []  # fails closed: the parent's model was never asked
