"""Issue #38 item 5: an agent's ``hooks`` beside prompts that list their own.

The reference runs "the active prompt's ``hooks`` list (the agent's ``hooks`` list only when the
prompt declares none)", sub-prompts included: honoured so. Agent hooks that would therefore never
run, because every prompt the agent runs (its sides' prompts and the sub-prompts below them)
lists its own, are refused at save, from the agent's side and from the prompt's, identically by
``import_definitions`` (exit code and message), the definition API (400) and the studio forms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.definitions import rows as definition_services
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.spec.refusals import import_refused as _import

pytestmark = pytest.mark.django_db

AGENT_ADD = reverse("admin:agents_app_agent_add")
AGENT_REFUSED = (
    "These hooks would never run: an agent's hooks run only for prompts that list no hooks of "
    "their own (a prompt's hooks replace its agent's), and every prompt this agent runs lists "
    "its own ('main', 'sub'). Add them to those prompts' hooks lists instead, or remove them "
    "here."
)
PROMPT_REFUSED = (
    "With these hooks every prompt of agent 'a' lists its own, so that agent's hooks would never "
    "run (a prompt's hooks replace its agent's). Add the agent's hooks to this list and remove "
    "them from the agent, or leave this list empty."
)


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known code registry: hooks ``audit`` and ``trace``."""
    monkeypatch.setattr(
        definition_services, "registered_code_names", lambda: (set(), {"audit", "trace"})
    )


MODEL = {"name": "m", "provider": "test", "model": "scripted"}
# Side A runs ``main``, which offers the sub-prompt ``sub``; both list hook ``trace``.
MAIN = {"name": "main", "model": "m", "prompt": "x", "tools": ["sub"], "hooks": ["trace"]}
SUB = {"name": "sub", "model": "m", "prompt": "x", "toolDescription": "Sub.", "hooks": ["trace"]}
AGENT = {"name": "a", "sideA": {"prompt": "main"}, "hooks": ["audit"]}


def _stored_prompts(sub_hooks: list[str]) -> None:
    model = LanguageModel.objects.create(name="m", provider="test", model="scripted")
    main = Prompt.objects.create(name="main", model=model, text="x", hooks=["trace"])
    main.tool_entries.create(name="sub")
    Prompt.objects.create(
        name="sub", model=model, text="x", tool_description="Sub.", hooks=sub_hooks
    )


def test_spec_agent_hooks_that_no_prompt_of_the_agent_would_run_are_refused_by_import_api_and_studio(
    tmp_path: Path, as_: Any, ops: Any, staff: Client
) -> None:
    stderr, error = _import(
        tmp_path,
        {"models/m": MODEL, "prompts/main": MAIN, "prompts/sub": SUB, "agents/a": AGENT},
    )
    assert f"agents/a.json: hooks: {AGENT_REFUSED}" in stderr
    assert error == "Nothing was imported: 1 error."  # named once, on the agent
    assert not Agent.objects.exists()

    _stored_prompts(["trace"])
    refused = as_(ops).post_json("/api/agents", AGENT)
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"]["hooks"] == AGENT_REFUSED

    main = Prompt.objects.get(name="main")
    data = fill(read_form(staff, AGENT_ADD), name="a", side_a_prompt=main.pk, hooks="audit")
    form = post(staff, AGENT_ADD, data)
    assert errors_of(form).get("hooks") == [AGENT_REFUSED], errors_of(form)
    assert not Agent.objects.exists()


def test_spec_prompt_hooks_that_would_silence_an_agents_hooks_are_refused_at_the_prompts_save(
    as_: Any, ops: Any
) -> None:
    _stored_prompts([])
    assert as_(ops).post_json("/api/agents", AGENT).status_code in (200, 201)

    refused = as_(ops).put(
        "/api/prompts/sub", {"hooks": ["trace"]}, content_type="application/json"
    )
    assert refused.status_code == 400, refused.json()
    assert refused.json()["fieldErrors"].get("hooks") == PROMPT_REFUSED, refused.json()
    assert Prompt.objects.get(name="sub").hooks == []


def test_spec_agent_hooks_run_for_a_sub_prompt_that_lists_none_and_are_accepted(
    as_: Any, ops: Any
) -> None:
    """The side's prompt lists its own hooks; its sub-prompt lists none, so the agent's run
    there: "the agent's hooks list only when the prompt declares none"."""
    _stored_prompts([])
    assert as_(ops).post_json("/api/agents", AGENT).status_code in (200, 201)
    assert Agent.objects.get().hooks == ["audit"]
