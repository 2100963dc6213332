"""Issue #54, row E3 at the doors: ``/api/users/me/kv`` as the reference serves it (``?key=``,
or ``prefix&limit&offset`` → ``{entries:[{key, value, updated_at}], total, limit, offset}``;
``POST {key, value}`` and ``DELETE ?key=`` → ``{status: 'ok', key}``), over the same store a
thread's code writes with ``state.set_user_value``, and never another user's values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel

from agents_app.base.code_registry import reset_registry
from agents_app.models import ThreadSession, UserValue
from agents_app.orchestration.runner import run_session_job
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

KV = "/api/users/me/kv"
SECRET = "sk-live-4f9a8b7c6d5e4f3a"
READ: list[Any] = []


class RememberArgs(BaseModel):
    key: str
    value: Any = None


@define_tool("Remember something about the user", RememberArgs)
async def remember(state: Any, args: RememberArgs) -> str:
    await state.set_user_value(args.key, args.value)
    return "remembered"


@define_tool("Remember the user's shop key (a secret)")
async def remember_key(state: Any) -> str:
    await state.set_user_value("shop", {"key": await state.env("SHOP_KEY")})
    READ.append(await state.get_user_value("shop"))
    return "remembered"


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    READ.clear()
    reset_registry(Registry(remember, remember_key))
    yield
    reset_registry(None)


def _agent(calls: list[dict[str, Any]]) -> None:
    script = [{"tool_calls": [call]} for call in calls] + [{"content": "Noted."}]
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s", script=script)),
            (
                "prompt",
                PromptDefinition(
                    name="p", model="m", prompt="x", tools=["remember", "remember_key"]
                ),
            ),
            ("agent", AgentDefinition(name="memo", side_a=SideConfig(prompt="p"))),
        ],
        strict_code_names=False,
    )


def _chat(client: Any) -> None:
    thread_id = client.post_json("/api/threads", {"agent_id": "memo"}).json()["threadId"]
    posted = client.post_json(f"/api/threads/{thread_id}/messages", {"content": "hi"})
    assert posted.status_code == 202, posted.content
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))


def test_E3_what_a_thread_remembers_is_its_owners_and_no_one_elses(
    as_: Any, alice: Any, bob: Any
) -> None:
    _agent(
        [
            {"name": "remember", "arguments": {"key": "pref.tea", "value": {"milk": True}}},
            {"name": "remember", "arguments": {"key": "pref.music", "value": "jazz"}},
            {"name": "remember", "arguments": {"key": "name", "value": "Alice"}},
        ]
    )
    _chat(as_(alice))
    mine, theirs = as_(alice), as_(bob)

    assert mine.get(KV + "?key=pref.tea").json() == {"key": "pref.tea", "value": {"milk": True}}
    page = mine.get(KV + "?prefix=pref.&limit=1&offset=1").json()
    assert (page["total"], page["limit"], page["offset"]) == (2, 1, 1)
    assert [(e["key"], e["value"]) for e in page["entries"]] == [("pref.tea", {"milk": True})]
    assert isinstance(page["entries"][0]["updated_at"], int)
    assert mine.get(KV).json()["total"] == 3

    # Bob sees none of it, and his writes and deletes touch only his own values.
    assert theirs.get(KV + "?key=pref.tea").json() == {"key": "pref.tea", "value": None}
    assert theirs.get(KV).json() == {"entries": [], "total": 0, "limit": 100, "offset": 0}
    assert theirs.post_json(KV, {"key": "pref.tea", "value": "none"}).json() == {
        "status": "ok",
        "key": "pref.tea",
    }
    assert theirs.delete(KV + "?key=name").json() == {"status": "ok", "key": "name"}
    assert mine.get(KV + "?key=pref.tea").json()["value"] == {"milk": True}
    assert mine.get(KV + "?key=name").json()["value"] == "Alice"
    assert theirs.get(KV + "?key=pref.tea").json()["value"] == "none"

    # Alice's own writes: null deletes, DELETE deletes.
    assert mine.post_json(KV, {"key": "pref.music", "value": None}).status_code == 200
    assert mine.delete(KV + "?key=name").status_code == 200
    assert sorted(UserValue.objects.filter(user=alice).values_list("key", flat=True)) == [
        "pref.tea"
    ]


def test_E3_a_secret_a_thread_remembers_is_redacted_where_shown(as_: Any, alice: Any) -> None:
    client = as_(alice)
    patched = client.patch_json("/api/users/me/env", {"env_patch": {"SHOP_KEY": SECRET}})
    assert patched.status_code == 200, patched.content
    _agent([{"name": "remember_key", "arguments": {}}])
    _chat(client)

    assert READ == [{"key": SECRET}]  # the thread's code gets it back exactly
    shown = client.get(KV + "?key=shop").content.decode()
    assert SECRET not in shown and "shop" in shown
    row = UserValue.objects.get(user=alice, key="shop")
    assert SECRET not in str(row.value) and SECRET not in row.sealed  # sealed: encrypted


def test_E3_bad_requests_are_refused_with_a_sentence(as_: Any, alice: Any) -> None:
    client = as_(alice)
    too_long = client.get(KV + "?key=" + "k" * 513)
    assert too_long.status_code == 400 and "key" in too_long.json()["error"]
    assert client.get(KV + "?limit=501").status_code == 400
    assert client.post_json(KV, {"value": 1}).status_code == 400
    assert client.delete(KV).status_code == 400
    nul = client.get(KV + "?key=a%00b")
    assert nul.status_code == 400 and nul.json()["error"].startswith("Invalid request: key:")
    assert client.get(KV, HTTP_AUTHORIZATION="").status_code in (401, 403)
