"""Issue #55 item 1: an eval run's versions chosen from a list. The run form shows a select per
definition the chosen agent uses ("current" and each recorded version, in words); posting it
as a plain form (no JavaScript) stores exactly what the text form stores, and a version that
does not exist is refused naming the definition."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from agents_app.models import DefinitionVersion, EvalDataset, EvalRun
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.evals import checks as evals
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.admin.admin_pages import errors_of, fill, read_form
from tests.agents_app.admin.test_eval_case_form import ASK, _story

pytestmark = pytest.mark.django_db

ADD = "/admin/agents_app/evalrun/add/"


@pytest.fixture
def stories() -> EvalDataset:
    _story()  # story_agent → story_prompt (v1, v2) → slow_writer (v1, v2)
    alice = get_user_model().objects.create_user("alice", password="pw-for-tests-1")
    save_definitions(
        [("prompt", PromptDefinition(name="story_prompt", model="slow_writer", prompt="Thrice."))],
        strict_code_names=False,
        author=alice,
        note="Told three times <script>alert(1)</script>",
    )
    dataset = EvalDataset.objects.create(name="stories")
    evals.case_save(dataset=dataset, name="tells", messages=ASK[:1], checks=[])
    return dataset


def _options(html: str, name: str) -> list[str]:
    select = re.search(rf'<select[^>]*name="{re.escape(name)}"[^>]*>(.*?)</select>', html, re.S)
    assert select, f"no select {name}"
    return [re.sub(r"\s+", " ", o).strip() for o in re.findall(r">([^<]*)</option>", select[1])]


def _start(client: Client, **fields: Any) -> Any:
    data = fill(read_form(client, f"{ADD}?agent=story_agent"), label="run", concurrency=1)
    data["dataset"] = str(EvalDataset.objects.get().pk)
    data.update(fields)
    return client.post(ADD, data)


def test_the_form_lists_what_the_agent_uses_with_each_version_in_words(
    admin_client: Client, stories: EvalDataset
) -> None:
    recorded = DefinitionVersion.objects.count()
    html = admin_client.get(f"{ADD}?agent=story_agent").content.decode()
    assert DefinitionVersion.objects.count() == recorded  # showing the form writes nothing
    labels = re.findall(r'<label for="id_pin_\d+">([^<]*)</label>', html)
    assert labels == ["Agent story_agent", "Prompt story_prompt", "Model slow_writer"]
    prompt = _options(html, "version:prompts/story_prompt")
    assert prompt[0] == "current (version 3)"
    assert re.fullmatch(
        r"3 — \d{1,2} \w{3} \d{4}, by alice: Told three times &lt;script&gt;alert\(1\)&lt;/script&gt;",
        prompt[1],
    ), prompt[1]
    assert [o.split(" — ")[0] for o in prompt[1:]] == ["3", "2", "1"]
    assert _options(html, "version:models/slow_writer")[0] == "current (version 2)"
    assert "<script>alert(1)" not in html


def test_versions_chosen_from_the_list_are_stored_as_the_text_form_stores_them(
    admin_client: Client, stories: EvalDataset
) -> None:
    listed = _start(
        admin_client,
        **{"version:prompts/story_prompt": "2", "version:models/slow_writer": "1"},
    )
    assert listed.status_code == 302, errors_of(listed)
    typed = _start(admin_client, pins="slow_writer = 1\nstory_prompt = 2")
    assert typed.status_code == 302, errors_of(typed)
    by_list, by_text = EvalRun.objects.order_by("created_at")
    assert by_list.versions == {"prompts/story_prompt": 2, "models/slow_writer": 1}
    assert by_text.versions == by_list.versions
    everything_current = _start(admin_client)
    assert everything_current.status_code == 302, errors_of(everything_current)
    assert EvalRun.objects.order_by("-created_at").first().versions == {}  # type: ignore[union-attr]


def test_a_version_that_does_not_exist_is_refused_naming_the_definition(
    admin_client: Client, stories: EvalDataset
) -> None:
    refusals = {
        "9": "Prompt story_prompt has no version 9.",
        "two": "Prompt story_prompt: choose a version from its list.",
    }
    for value, words in refusals.items():
        response = _start(admin_client, **{"version:prompts/story_prompt": value})
        assert response.status_code == 200, value
        assert errors_of(response) == {"pin_list": [words]}
    other = _start(admin_client, **{"version:prompts/other_prompt": "1"})
    assert errors_of(other) == {
        "pin_list": [
            "Agent story_agent does not use prompts/other_prompt (it uses agents/story_agent, "
            "prompts/story_prompt, models/slow_writer)."
        ]
    }
    both = _start(admin_client, pins="story_prompt = 1", **{"version:prompts/story_prompt": "2"})
    assert errors_of(both) == {
        "pins": ["prompts/story_prompt is version 2 in the list and 1 here: keep one."]
    }
    assert EvalRun.objects.count() == 0


def test_another_agent_is_listed_by_the_forms_own_button(
    admin_client: Client, stories: EvalDataset
) -> None:
    save_definitions(
        [
            ("model", ModelDefinition(name="quick", provider="test", model="scripted")),
            ("prompt", PromptDefinition(name="quick_prompt", model="quick", prompt="Hi.")),
            (
                "agent",
                AgentDefinition(name="quick_agent", side_a=SideConfig(prompt="quick_prompt")),
            ),
        ],
        strict_code_names=False,
    )
    # Versions chosen for story_agent, then quick_agent chosen without listing its own.
    switched = _start(admin_client, agent="quick_agent", **{"version:prompts/story_prompt": "2"})
    assert errors_of(switched) == {
        "pin_list": [
            "These versions were listed for agent story_agent, not quick_agent: choose them "
            "again below."
        ]
    }
    assert "version:prompts/quick_prompt" in switched.content.decode()
    listed = _start(admin_client, agent="quick_agent", label="kept", _list_versions="1")
    assert listed.status_code == 302
    assert "agent=quick_agent" in listed["Location"] and "label=kept" in listed["Location"]
    page = admin_client.get(listed["Location"]).content.decode()
    assert _options(page, "version:models/quick")[0] == "current (version 1)"
    assert 'value="kept"' in page
    assert EvalRun.objects.count() == 0
