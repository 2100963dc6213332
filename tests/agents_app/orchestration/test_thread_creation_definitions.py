"""A thread's creation reads its agent's definitions from the process's cache of the newest
versions (``versions.pins_for``, issue #58), at the API edge: an ``after_thread_created``
hook named by the agent's prompt runs, and a change to the prompt's hooks counts at the very
next creation (the definitions' stamp changed), not at some later one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents_app.base.code_registry import reset_registry
from agents_app.models import Thread
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from runtime.extend import define_hook
from runtime.tools.registry import Registry
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import scripted_model

pytestmark = pytest.mark.django_db

CREATED: list[str] = []


async def greet(state: Any) -> None:
    CREATED.append(state.thread_id)


@pytest.fixture(autouse=True)
def _registry(settings: Any) -> Iterator[None]:
    settings.STUDIO_EXECUTOR = "none"
    CREATED.clear()
    reset_registry(Registry(define_hook("after_thread_created", greet)))
    yield
    reset_registry(None)


def _save(hooks: list[str]) -> None:
    model = scripted_model("greeter-model", [{"content": "hi"}])
    prompt = PromptDefinition(name="greeter-prompt", model=model.name, prompt="Greet.", hooks=hooks)
    agent = AgentDefinition(name="greeter", side_a=SideConfig(prompt=prompt.name))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


def _create(client: Any) -> str:
    answer = client.post_json("/api/threads", {"agent_id": "greeter"})
    assert answer.status_code == 200, answer.content
    thread_id: str = answer.json()["threadId"]
    assert Thread.objects.filter(pk=thread_id).exists()
    return thread_id


def test_a_prompts_hook_change_counts_at_the_next_creation(as_: Any, alice: Any) -> None:
    client = as_(alice)
    _save(["greet"])
    first, second = _create(client), _create(client)  # the second from the cache
    assert [first, second] == CREATED

    _save([])  # the prompt names no hook now
    _create(client)
    assert [first, second] == CREATED

    _save(["greet"])
    again = _create(client)
    assert [first, second, again] == CREATED
