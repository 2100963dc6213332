"""The agent's Connect page (docs/studio.md "Connect"): each door's URLs and snippet, escaped,
with no secret on the page. That the snippets really work, pasted into a shell against a
running server, is ``tests/agents_app/api/test_connect_snippets.py``."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import Agent, EnvValue
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _snippets(page: str) -> dict[str, str]:
    found = re.findall(
        r'<pre class="studio-example" id="connect-([a-z0-9-]+)-snippet"[^>]*>(.*?)</pre>',
        page,
        re.S,
    )
    return {slug: html.unescape(text) for slug, text in found}


def test_the_editor_links_to_connect_which_lists_every_door_with_a_snippet(
    staff: Client, ops: Any
) -> None:
    define_agent("helper")
    agent = Agent.objects.get(name="helper")
    connect = reverse("admin:agents_app_agent_connect", args=[agent.pk])
    editor = staff.get(reverse("admin:agents_app_agent_change", args=[agent.pk])).content.decode()
    assert f'href="{connect}" id="connect-link"' in editor

    page = staff.get(connect).content.decode()
    base = "http://testserver"
    for url in (
        f"{base}/api",
        f"{base}/v1",
        f"{base}/a2a/helper/.well-known/agent-card.json",
        f"{base}/a2a/helper",
        f"{base}/ag-ui/helper",
        f"{base}/mcp",
    ):
        assert f">{url}</code>" in page, url
    snippets = _snippets(page)
    assert list(snippets) == ["thread-api", "openai", "a2a", "ag-ui", "mcp"]
    assert 'model="helper"' in snippets["openai"]
    assert 'base_url="http://testserver/v1"' in snippets["openai"]
    assert '"method": "message/send"' in snippets["a2a"]
    assert '"url": "http://testserver/mcp"' in snippets["mcp"]
    for slug in snippets:
        assert f'data-copy="#connect-{slug}-snippet"' in page
    # Not exposed as a tool: the MCP section says so and how to change it.
    assert "not exposed as a tool" in page
    assert 'id="connect-unpublished"' not in page


def test_no_secret_reaches_the_page_and_what_people_typed_is_escaped(
    staff: Client, ops: Any
) -> None:
    define_agent("helper")
    Agent.objects.filter(name="helper").update(
        title='<script>alert("t")</script>', state="draft", expose_as_tool=True
    )
    agent = Agent.objects.get(name="helper")
    _, raw_key = api_key_create(user=ops, name="ops key")
    secret = EnvValue(scope="instance", key="STUDIO_API_KEY")
    secret.value = "sk-never-shown-1234"
    secret.save()
    page = staff.get(reverse("admin:agents_app_agent_connect", args=[agent.pk])).content.decode()
    assert raw_key not in page and "sk-never-shown-1234" not in page
    assert "$STUDIO_API_KEY" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert 'id="connect-unpublished"' in page  # a draft: the page says who reaches it
    assert "not exposed as a tool" not in page


def test_connect_needs_the_view_right_and_a_real_agent(alice: Any, ops: Any) -> None:
    define_agent("helper")
    agent = Agent.objects.get(name="helper")
    url = reverse("admin:agents_app_agent_connect", args=[agent.pk])
    person = Client()
    person.force_login(alice)  # no studio rights: the admin's login page, never the snippets
    refused = person.get(url)
    assert refused.status_code in (302, 403) and b"connect-a2a" not in refused.content
    staff = Client()
    staff.force_login(ops)
    assert staff.get(url).status_code == 200
    assert staff.get(reverse("admin:agents_app_agent_connect", args=[999999])).status_code == 404
    assert staff.get("/admin/agents_app/agent/x/connect/").status_code == 404
