"""Issue #54, row E2 over the Django store: ``state.user()`` is the thread owner's account as
a spec 0.2.0 ``ThreadUser`` (role, permissions, display name …), as the tool received it in a
session started over HTTP. The engine's side: tests/runtime/test_E2_thread_user.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission

from agents_app.base.code_registry import reset_registry
from agents_app.models import ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)
SEEN: list[Any] = []


@define_tool("Who is this?")
async def whoami(state: Any) -> str:
    user = await state.user()
    SEEN.append((user.to_dict(), user.is_admin))
    return "ok"


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    SEEN.clear()
    reset_registry(Registry(whoami))
    yield
    reset_registry(None)


def _session(client: Any) -> None:
    thread_id = client.post_json("/api/threads", {"agent_id": "helper"}).json()["threadId"]
    assert (
        client.post_json(f"/api/threads/{thread_id}/messages", {"content": "hi"}).status_code == 202
    )
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def _agent_calling_whoami() -> None:
    script = [{"tool_calls": [{"name": "whoami", "arguments": {}}]}, {"content": "."}]
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s", script=script)),
            ("prompt", PromptDefinition(name="p", model="m", prompt="x", tools=["whoami"])),
            ("agent", AgentDefinition(name="helper", side_a=SideConfig(prompt="p"))),
        ],
        strict_code_names=False,
    )


def test_E2_the_owner_as_a_thread_user(as_: Any, alice: Any, ops: Any) -> None:
    _agent_calling_whoami()
    alice.first_name, alice.last_name, alice.email = "Alice", "Liddell", "alice@example.org"
    alice.save()
    alice.user_permissions.add(Permission.objects.get(codename="view_thread"))

    _session(as_(alice))
    _session(as_(ops))

    assert [
        (
            {
                "id": str(alice.pk),
                "username": "alice",
                "role": "user",
                "permissions": ["agents_app.view_thread"],
                "email": "alice@example.org",
                "display_name": "Alice Liddell",
                "avatar_url": None,
            },
            False,
        ),
        (
            {
                "id": str(ops.pk),
                "username": "ops",
                "role": "admin",
                "permissions": SEEN[1][0]["permissions"],  # a superuser: every permission
                "email": "",
                "display_name": "ops",
                "avatar_url": None,
            },
            True,
        ),
    ] == SEEN
    assert "agents_app.change_thread" in SEEN[1][0]["permissions"]
