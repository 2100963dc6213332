"""Issue #54, rows D1 and D6 at the doors: a hook of the spec 0.2.0 types ``tool_call_started``
and ``tool_call_done`` is accepted in a definition's ``hooks`` list by the file import, the
definition API and the studio's prompt form; a thread run over the API fires it, and the logs
API says where each error came from (``error_origin``), as stored in the log row.

The engine side of these rows (and of D3, D5, E1) is in
tests/runtime/test_spec_0_2_0_hooks_and_state.py, run over both stores.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from agents_app.base.code_registry import reset_registry
from agents_app.models import Log, Prompt, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.tools.registry import Registry, define_hook, define_tool
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

CALLS: list[tuple[str, str]] = []


async def _started(state: Any, tool_call: Any, progress: Any) -> None:
    CALLS.append(("started", tool_call["function"]["name"]))


async def _done(state: Any, tool_call: Any, result: Any) -> None:
    CALLS.append(("done", result.status))


async def _broken(state: Any, tool_call: Any, progress: Any) -> None:
    raise RuntimeError("the watcher broke")


@define_tool("Always fails.")
async def refuse_order(state: Any) -> str:
    raise RuntimeError("the order system is down")


WATCH_STARTED = define_hook("tool_call_started", _started, id="watch_started")
WATCH_DONE = define_hook("tool_call_done", _done, id="watch_done")
BROKEN = define_hook("tool_call_started", _broken, id="broken_watcher")


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    CALLS.clear()
    reset_registry(Registry(WATCH_STARTED, WATCH_DONE, BROKEN, refuse_order))
    yield
    reset_registry(None)


def _files(root: Path, files: dict[str, dict[str, Any]]) -> str:
    for label, data in files.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    err = io.StringIO()
    call_command("import_definitions", str(root), stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def test_D1_tool_call_hooks_are_accepted_in_hooks_lists_at_every_door(
    as_: Any, ops: Any, client: Client, tmp_path: Path
) -> None:
    model = {"name": "m", "provider": "test", "model": "scripted"}
    listed = {"name": "p", "model": "m", "prompt": "x", "hooks": ["watch_started", "watch_done"]}
    assert _files(tmp_path, {"models/m": model, "prompts/p": listed}) == ""
    assert Prompt.objects.get(name="p").hooks == ["watch_started", "watch_done"]

    saved = as_(ops).post_json("/api/prompts", {**listed, "name": "p2"})
    assert saved.status_code in (200, 201), saved.content
    assert Prompt.objects.get(name="p2").hooks == ["watch_started", "watch_done"]

    client.force_login(ops)
    add = reverse("admin:agents_app_prompt_add")
    data = fill(
        read_form(client, add),
        name="p3",
        model=Prompt.objects.get(name="p").model_id,
        hooks="watch_done, watch_started",
    )
    assert errors_of(post(client, add, data)) == {}
    assert Prompt.objects.get(name="p3").hooks == ["watch_done", "watch_started"]

    # An id nothing registers is still refused, as for every hook type.
    refused = as_(ops).post_json("/api/prompts", {**listed, "name": "p4", "hooks": ["nope"]})
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"] == {"hooks.0": "Hook 'nope' is not registered."}


def _agent(hooks: list[str]) -> None:
    script = [
        {"tool_calls": [{"name": "refuse_order", "arguments": {}}]},
        {"content": "Sorry, the order system is down."},
    ]
    save_definitions(
        [
            ("model", ModelDefinition(name="m", provider="test", model="s", script=script)),
            (
                "prompt",
                PromptDefinition(
                    name="p", model="m", prompt="x", tools=["refuse_order"], hooks=hooks
                ),
            ),
            ("agent", AgentDefinition(name="shop", side_a=SideConfig(prompt="p"))),
        ],
        strict_code_names=False,
    )


def _run_thread(client: Any) -> str:
    thread_id = client.post_json("/api/threads", {"agent_id": "shop"}).json()["threadId"]
    posted = client.post_json(f"/api/threads/{thread_id}/messages", {"content": "order?"})
    assert posted.status_code == 202, posted.content
    session = ThreadSession.objects.get(thread_id=thread_id, status__in=["queued", "running"])
    async_to_sync(run_session_job)(str(session.pk))
    return str(thread_id)


def test_D1_tool_call_hooks_fire_in_a_thread_run_over_the_api(as_: Any, alice: Any) -> None:
    _agent(["watch_started", "watch_done"])
    _run_thread(as_(alice))

    assert CALLS == [("started", "refuse_order"), ("done", "error")]


def test_D6_the_logs_api_says_where_each_error_came_from(as_: Any, alice: Any) -> None:
    _agent(["broken_watcher"])
    client = as_(alice)
    thread_id = _run_thread(client)

    logs = client.get(f"/api/threads/{thread_id}/logs").json()["logs"]
    assert [(log["kind"], log["error_type"], log["error_origin"]) for log in logs] == [
        ("llm", None, None),
        ("system", "hook_error", "hook:broken_watcher"),
        ("tool", "tool_execution_error", "tool:refuse_order"),
        ("llm", None, None),
    ]
    detail = client.get(f"/api/threads/{thread_id}/logs/{logs[2]['id']}").json()
    assert detail["error_origin"] == "tool:refuse_order"
    stored = Log.objects.filter(thread_id=thread_id).exclude(error_origin="")
    assert sorted(stored.values_list("error_origin", flat=True)) == [
        "hook:broken_watcher",
        "tool:refuse_order",
    ]
