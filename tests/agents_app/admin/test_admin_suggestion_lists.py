"""The studio's name suggestions are one reading and one list per page: a prompt's tool rows
share one ``<datalist>`` of every tool, prompt and agent name, read once however many rows
the prompt has; an agent's four side fields read those names once (each keeps a list of its
own: ``agent_editor.js`` narrows it to its side's prompt)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents_app.models import Agent, LanguageModel, Prompt, PromptTool
from tests.agents_app.admin.admin_pages import post, read_form

pytestmark = pytest.mark.django_db

# The names' reading: prompts' names with their tool descriptions (forms/suggestions.py).
NAMES_READ = re.compile(
    r'SELECT "agents_app_prompt"\."name" AS "name", "agents_app_prompt"\."tool_description" AS'
)


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def helper() -> Prompt:
    model = LanguageModel.objects.create(name="gpt", provider="test", model="x")
    helper = Prompt.objects.create(name="helper", model=model, text="hi", tool_description="Helps")
    Agent.objects.create(name="desk", side_a_prompt=helper, tool_description="The desk")
    return helper


def _prompt_with_tools(helper: Prompt, count: int) -> Prompt:
    prompt = Prompt.objects.create(name=f"with_{count}", model=helper.model, text="hi")
    for n in range(count):
        PromptTool.objects.create(prompt=prompt, name="helper" if n == 0 else f"desk{n}")
    return prompt


def _page(client: Client, url: str) -> tuple[str, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in queries.captured_queries]


def test_a_prompt_s_tool_rows_share_one_list_read_once(staff: Client, helper: Prompt) -> None:
    one = _prompt_with_tools(helper, 1)
    many = _prompt_with_tools(helper, 8)
    _page(staff, reverse("admin:agents_app_prompt_change", args=[one.pk]))  # warm
    page_one, queries_one = _page(staff, reverse("admin:agents_app_prompt_change", args=[one.pk]))
    page, queries = _page(staff, reverse("admin:agents_app_prompt_change", args=[many.pk]))
    # Every tool row's name box (the saved eight, the extra and the "add another" template)
    # points at the one list, which the page holds once, with every kind of name in it.
    boxes = re.findall(r'<input[^>]*name="tool_entries-[^"]*-name"[^>]*>', page)
    assert len(boxes) >= 9
    assert all('list="studio-tool-names"' in box for box in boxes)
    assert page.count("<datalist") - page.count('<datalist id="studio-tool-names"') == (
        page_one.count("<datalist") - page_one.count('<datalist id="studio-tool-names"')
    )
    assert page.count('<datalist id="studio-tool-names"') == 1
    names = page.split('<datalist id="studio-tool-names">', 1)[1].split("</datalist>", 1)[0]
    assert '<option value="helper">prompt: Helps</option>' in names
    assert '<option value="desk">agent: The desk</option>' in names
    # One reading of the names for the whole page: eight rows cost no more than one.
    assert len([q for q in queries if NAMES_READ.search(q)]) == 1
    assert len(queries) == len(queries_one)


def test_a_prompt_s_refused_post_shows_the_list_once(staff: Client, helper: Prompt) -> None:
    prompt = _prompt_with_tools(helper, 3)
    url = reverse("admin:agents_app_prompt_change", args=[prompt.pk])
    data = read_form(staff, url)
    data["name"] = ""
    response = post(staff, url, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert "This field is required" in page
    assert page.count('<datalist id="studio-tool-names"') == 1


def test_an_agent_s_side_fields_read_the_names_once(staff: Client, helper: Prompt) -> None:
    desk = Agent.objects.get(name="desk")
    page, queries = _page(staff, reverse("admin:agents_app_agent_change", args=[desk.pk]))
    assert len([q for q in queries if NAMES_READ.search(q)]) == 1
    # Each side field keeps its own list (the editor's script narrows it per side).
    for side in ("a", "b"):
        for field in ("stop_tool", "end_session_tool"):
            list_id = f"id_side_{side}_{field}_names"
            assert f'list="{list_id}"' in page
            listed = page.split(f'<datalist id="{list_id}">', 1)[1].split("</datalist>", 1)[0]
            assert '<option value="helper">prompt: Helps</option>' in listed
