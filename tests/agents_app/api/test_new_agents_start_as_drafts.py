"""Issue #55 item 9: a new agent starts as a draft, by the API as in the studio's form; a body
or a file that says "published" is kept as it says, and a definition file without a state is
published (a repository's agents are what it ships; docs/studio.md, "Publishing")."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import Agent, Prompt
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import scripted_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def prompt() -> Prompt:
    save_definitions(
        [
            ("m", scripted_model("m")),
            ("p", PromptDefinition(name="p", model="m", prompt="Hi.")),
        ]
    )
    return Prompt.objects.get(name="p")


def test_an_agent_created_by_the_api_is_a_draft(as_: Any, ops: Any, prompt: Prompt) -> None:
    created = as_(ops).post_json("/api/agents", {"name": "fresh", "sideA": {"prompt": "p"}})
    assert created.status_code == 201, created.content
    assert Agent.objects.get(name="fresh").state == Agent.State.DRAFT
    # Updating it later keeps what it is: the draft default is for creation only.
    updated = as_(ops).put("/api/agents/fresh", {"title": "Fresh"}, content_type="application/json")
    assert updated.status_code == 200, updated.content
    assert Agent.objects.get(name="fresh").state == Agent.State.DRAFT


def test_a_body_that_says_published_is_kept(as_: Any, ops: Any, prompt: Prompt) -> None:
    body = {"name": "ready", "sideA": {"prompt": "p"}, "state": "published"}
    assert as_(ops).post_json("/api/agents", body).status_code == 201
    assert Agent.objects.get(name="ready").state == Agent.State.PUBLISHED


def test_a_definition_file_without_a_state_is_published(prompt: Prompt) -> None:
    save_definitions([("a", AgentDefinition(name="shipped", side_a=SideConfig(prompt="p")))])
    assert Agent.objects.get(name="shipped").state == Agent.State.PUBLISHED


def test_the_studio_form_starts_at_draft(admin_client: Any, prompt: Prompt) -> None:
    page = admin_client.get("/admin/agents_app/agent/add/").content.decode()
    assert '<option value="draft" selected>' in page, page[page.find('id="id_state"') :][:400]
    assert "answer 409" not in page
