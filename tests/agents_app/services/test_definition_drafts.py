"""Prompt drafts: tried in a thread of their own before they are saved, then saved with a note."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.base.errors import Conflict, Invalid
from agents_app.models import DefinitionDraft, Prompt, Thread, ThreadSession
from agents_app.services.definitions import drafts, versions
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401

pytestmark = pytest.mark.django_db


def save(*defs: Any) -> None:
    save_definitions([(f"x/{d.name}", d) for d in defs], strict_code_names=False)


@pytest.fixture
def base() -> None:
    save(
        ModelDefinition(name="m1", provider="test", model="scripted"),
        PromptDefinition(name="p1", model="m1", prompt="Be brief."),
        AgentDefinition(name="a1", side_a=SideConfig(prompt="p1")),
    )


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_a_draft_changes_only_the_sessions_of_its_own_thread(base: None, ops: Any) -> None:
    draft = drafts.draft_create("p1", ["Be cheerful."], author=ops)
    assert draft.base_number == 1 and draft.definition["prompt"] == "Be cheerful."
    a1 = Thread.objects.create(agent_id=_agent_pk(), origin_agent_id=_agent_pk(), tags=["draft"])
    drafts.draft_attach(draft, a1)
    pins = versions.compute_pins("a1", str(a1.pk))
    assert pins.drafts == {"prompts/p1": str(draft.pk)}
    assert versions.pinned_definition(pins, "prompts", "p1") == draft.definition
    assert pins.stamp("a1", "p1", "m1") == {"agents/a1": 1, "prompts/p1": "draft", "models/m1": 1}
    other = versions.compute_pins("a1", None)
    assert versions.pinned_definition(other, "prompts", "p1")["prompt"] == "Be brief."  # type: ignore[index]
    assert Prompt.objects.get(name="p1").text == "Be brief."  # nothing saved
    assert [v.number for v in versions.history("prompts", "p1")] == [1]


def _agent_pk() -> int:
    from agents_app.models import Agent

    return Agent.objects.get(name="a1").pk


def test_saving_a_draft_records_the_next_version_with_its_note(base: None, ops: Any) -> None:
    draft = drafts.draft_create("p1", ["Be cheerful."], author=ops)
    saved = drafts.draft_save(draft, note="Cheerful tone", author=ops)
    assert (saved.number, saved.note, saved.source, saved.author) == (
        2,
        "Cheerful tone",
        "draft",
        ops,
    )
    assert Prompt.objects.get(name="p1").text == "Be cheerful."
    with pytest.raises(Conflict, match="saved already"):
        drafts.draft_save(draft, note="again")


def test_a_draft_is_refused_when_the_prompt_was_saved_since(base: None) -> None:
    draft = drafts.draft_create("p1", ["Be cheerful."])
    save(PromptDefinition(name="p1", model="m1", prompt="Someone else's edit."))
    with pytest.raises(Conflict, match="saved since"):
        drafts.draft_save(draft, note="")
    assert Prompt.objects.get(name="p1").text == "Someone else's edit."


def test_a_draft_that_changes_nothing_is_refused(base: None) -> None:
    with pytest.raises(Invalid, match="same as the saved prompt"):
        drafts.draft_create("p1", ["Be brief."])


def test_text_parts_are_edited_in_place(base: None) -> None:
    save(
        PromptDefinition(
            name="p2",
            model="m1",
            prompt=[
                {"type": "text", "content": "One"},
                {"type": "include", "prompt": "p1"},
                {"type": "text", "content": "Two"},
            ],
        )
    )
    draft = drafts.draft_create("p2", ["One", "Deux"])
    assert draft.definition["prompt"] == [
        {"type": "text", "content": "One"},
        {"type": "include", "prompt": "p1"},
        {"type": "text", "content": "Deux"},
    ]


def test_the_draft_page_tries_then_saves_a_draft(base: None, staff: Client) -> None:
    p = Prompt.objects.get(name="p1")
    url = reverse("admin:agents_app_prompt_draft", args=[p.pk])
    page = staff.get(url + "?agent=a1")
    assert page.status_code == 200 and "Be brief." in page.content.decode()
    response = staff.post(url, {"agent": "a1", "text": "Be cheerful."})
    assert response.status_code == 302
    draft = DefinitionDraft.objects.get()
    assert draft.thread is not None and draft.thread.tags == ["draft"]
    tried = staff.get(response["Location"]).content.decode()
    assert f"/chat/t/{draft.thread_id}?embed=1" in tried and "<ins>" in tried
    assert "style=" not in tried.split('id="content-main"')[1]
    # A session of the draft's thread runs on the draft.
    session = ThreadSession.objects.create(thread=draft.thread, status="running")
    pins = versions.session_pins(str(session.pk))
    assert pins is not None and pins.drafts == {"prompts/p1": str(draft.pk)}
    save_url = reverse("admin:agents_app_prompt_draft_save", args=[p.pk, draft.pk])
    saved = staff.post(save_url, {"change_note": "Cheerful"})
    assert saved.status_code == 302
    assert saved["Location"] == reverse("admin:agents_app_prompt_version", args=[p.pk, 2])
    v2 = versions.latest("prompts", "p1")
    assert v2 is not None and (v2.note, v2.source, v2.author_name) == ("Cheerful", "draft", "ops")
    # The agent page links to the draft page from "Try this agent".
    agent_page = staff.get(reverse("admin:agents_app_agent_change", args=[_agent_pk()]))
    assert f"{url}?agent=a1" in agent_page.content.decode()
