"""Issue #54, rows F5 and F1: the user hooks ``user_value_changed`` (at every door of the
user KV), ``user_client_attached`` / ``user_client_detached`` (what the user-stream socket
calls), refused as a child's ``parentHooks`` and in a prompt's ``hooks`` at save time; and a
user endpoint's ``emit``/``send`` reaching the user event stream's channel-layer group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from agents_app.base.code_registry import reset_registry
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.users import endpoints, hooks
from runtime.core.spec import ModelDefinition, PromptDefinition
from runtime.extend import UserRequest, define_hook, define_user_endpoint
from runtime.tools.registry import Registry
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

KV = "/api/users/me/kv"
FIRED: list[tuple[str, ...]] = []


async def on_value(user: Any, key: str, value: Any) -> None:
    FIRED.append(("value", user.identity().username, key, repr(value)))
    if key == "count":  # a hook's own write fires nothing again
        await user.set_value("count", (value or 0) + 1)


async def on_attach(user: Any, client_id: str) -> None:
    FIRED.append(("attached", user.identity().username, client_id))


def on_detach(user: Any, client_id: str) -> None:
    FIRED.append(("detached", user.identity().username, client_id))


async def broken(user: Any, key: str, value: Any) -> None:
    raise RuntimeError("a hook that fails")


async def remember(request: UserRequest, user: Any, params: dict[str, str]) -> Any:
    await user.set_value("from_endpoint", request.body)


async def shout(request: UserRequest, user: Any, params: dict[str, str]) -> Any:
    await user.emit("saved", {"n": 1})
    return {"sent": await user.send("client_nobody", {"type": "hello"})}


async def again(request: UserRequest, user: Any, params: dict[str, str]) -> Any:
    """Runs user-scope code of the same person from inside their scope."""
    found = endpoints.find("POST", "remember")
    return await endpoints.run(user.identity(), request, found)


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    FIRED.clear()
    reset_registry(
        Registry(
            define_hook("user_value_changed", on_value),
            define_hook("user_value_changed", broken),
            define_hook("user_client_attached", on_attach),
            define_hook("user_client_detached", on_detach),
            define_user_endpoint(remember, method="POST", route="/remember"),
            define_user_endpoint(shout, method="POST", route="/shout"),
            define_user_endpoint(again, method="POST", route="/again"),
        )
    )
    yield
    reset_registry(None)


def test_F5_user_value_changed_fires_at_the_api_and_in_a_user_endpoint(
    as_: Any, alice: Any, bob: Any
) -> None:
    client = as_(alice)
    assert client.post_json(KV, {"key": "tea", "value": "green"}).status_code == 200
    assert client.delete(KV + "?key=tea").status_code == 200
    assert as_(bob).post_json("/api/users/me/remember", {"a": 1}).status_code == 204
    assert FIRED == [
        ("value", "alice", "tea", "'green'"),
        ("value", "alice", "tea", "None"),  # deleted
        ("value", "bob", "from_endpoint", "{'a': 1}"),
    ]


def test_F5_a_hooks_own_write_fires_nothing_again(as_: Any, alice: Any) -> None:
    assert as_(alice).post_json(KV, {"key": "count", "value": 1}).status_code == 200
    assert FIRED == [("value", "alice", "count", "1")]
    assert as_(alice).get(KV + "?key=count").json()["value"] == 2


def test_F5_user_client_attached_and_detached_run_in_the_persons_scope(alice: Any) -> None:
    hooks.client_attached(alice.pk, "client_a1")
    hooks.client_detached(alice.pk, "client_a1")
    assert FIRED == [("attached", "alice", "client_a1"), ("detached", "alice", "client_a1")]


def test_F1_a_persons_scope_entered_again_from_inside_it_fails_at_once(
    as_: Any, alice: Any
) -> None:
    refused = as_(alice).post_json("/api/users/me/again", {"b": 2})
    assert refused.status_code == 409, refused.content
    assert "already running in this call" in refused.json()["error"]
    assert not FIRED


def test_F1_emit_and_send_reach_the_users_event_stream_group(as_: Any, alice: Any) -> None:
    layer = get_channel_layer()
    assert layer is not None

    async def listen() -> str:
        return await layer.new_channel()

    channel = async_to_sync(listen)()
    async_to_sync(layer.group_add)(f"user-{alice.pk}", channel)
    shouted = as_(alice).post_json("/api/users/me/shout")
    assert shouted.status_code == 200, shouted.content
    assert shouted.json() == {"sent": False}  # no socket of that id is open

    async def receive() -> dict[str, Any]:
        return await asyncio.wait_for(layer.receive(channel), 10)

    message = async_to_sync(receive)()
    assert message["text"] == '{"event":"saved","data":{"n":1}}'
    async_to_sync(layer.group_discard)(f"user-{alice.pk}", channel)


def _save_prompt_and_model() -> None:
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s")),
            ("prompt", PromptDefinition(name="p", model="m", prompt="x")),
        ],
        strict_code_names=False,
    )


def test_F5_a_user_hook_is_refused_as_a_parent_hook_and_in_a_prompts_hooks(
    as_: Any, ops: Any
) -> None:
    _save_prompt_and_model()
    client = as_(ops)
    child = {
        "name": "helper",
        "sideA": {"prompt": "p"},
        "sideB": {"human": True},
        "exposeAsTool": True,
        "toolDescription": "Looks things up",
    }
    for hook in ("on_value", "user_client_attached"):
        required = [{"hook": hook, "reason": "Keeps count"}]
        refused = client.post_json("/api/agents", {**child, "parentHooks": required})
        assert refused.status_code == 400, refused.content
        sentence = refused.json()["fieldErrors"]["parentHooks[0].hook"]
        assert sentence.startswith(f"Hook '{hook}' is a user hook")
        assert "cannot be required as a parent hook" in sentence

    prompt = {"name": "p2", "model": "m", "prompt": "x", "hooks": ["on_attach"]}
    refused = client.post_json("/api/prompts", prompt)
    assert refused.status_code == 400, refused.content
    assert "is a user hook" in refused.json()["fieldErrors"]["hooks.0"]
