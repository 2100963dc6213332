"""Spec tool env declarations seen from the studio: ``GET /api/variables/agents/{name}``
reports what code tools declare (through sub-prompts and agents as tools, cycles included),
and the agent's admin page lists the values missing at the agent/prompt/instance levels.
Secret values never appear in either."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.base.code_registry import reset_registry
from agents_app.models import Agent
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.env.writes import EnvPatch, env_apply
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.tools.registry import Registry, define_tool
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

PLANTED = "sk_planted_weather_9f3a"
pytestmark = pytest.mark.django_db


async def _tool(state: Any) -> str:
    return "ok"


@pytest.fixture(autouse=True)
def code_registry() -> Iterator[None]:
    charge = define_tool(
        {
            "description": "Charge the card",
            "execute": _tool,
            "name": "charge",
            "variables": [
                {"name": "STRIPE_KEY", "type": "secret", "description": "Stripe API key"},
                {"name": "CURRENCY", "type": "text", "required": False},
            ],
        }
    )
    weather = define_tool("Weather", _tool, name="weather", tenvs={"WEATHER_KEY": str})
    reset_registry(Registry(charge, weather))
    yield
    reset_registry(None)


@pytest.fixture
def shop() -> Agent:
    """shop → main → sub-prompt billing (charge) and agent child → child_prompt (weather,
    and shop again: a cycle)."""
    items: list[tuple[str, Any]] = [
        ("m", ModelDefinition(name="oa", provider="openai", model="gpt-4o-mini")),
        ("p1", PromptDefinition(name="billing", model="oa", prompt="Bill.", tools=["charge"])),
        (
            "p2",
            PromptDefinition(
                name="child_prompt",
                model="oa",
                prompt="Child.",
                tools=["weather", "shop"],
                env={"WEATHER_KEY": PLANTED},
            ),
        ),
        ("p3", PromptDefinition(name="main", model="oa", prompt="Hi.", tools=["billing", "child"])),
        (
            "a1",
            AgentDefinition(
                name="child",
                side_a=SideConfig(prompt="child_prompt"),
                expose_as_tool=True,
                tool_description="Child.",
            ),
        ),
        (
            "a2",
            AgentDefinition(
                name="shop",
                side_a=SideConfig(prompt="main"),
                expose_as_tool=True,
                tool_description="Shop.",
            ),
        ),
    ]
    definition_saves.save_definitions(items, strict_code_names=False)
    env_apply(
        scope="instance",
        patch=EnvPatch(patch={"CURRENCY": "EUR"}, type_patch={"CURRENCY": "text"}),
    )
    return Agent.objects.get(name="shop")


def test_spec_variables_api_reports_tool_declared_variables(
    as_: Any, ops: Any, shop: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    response = as_(ops).get("/api/variables/agents/shop")
    assert response.status_code == 200
    assert PLANTED not in response.content.decode()
    found = {v["property"]: v for v in response.json()["variables"]}
    assert list(found) == sorted(found)
    assert found["STRIPE_KEY"] == {
        "property": "STRIPE_KEY",
        "declared": [{"type": "tool", "name": "charge"}],
        "type": "secret",
        "required": True,
        "scoped": False,
        "description": "Stripe API key",
        "defined": False,
    }
    assert found["CURRENCY"]["defined"] == {"type": "instance"}
    assert found["CURRENCY"]["value"] == "EUR" and found["CURRENCY"]["required"] is False
    weather = found["WEATHER_KEY"]
    assert weather["declared"] == [{"type": "tool", "name": "weather"}]
    assert weather["defined"] == {"type": "prompt", "name": "child_prompt"}
    assert weather["type"] == "text" and "value" not in weather  # prompt values are secret
    assert found["OPENAI_API_KEY"]["declared"] == [{"type": "model", "name": "oa"}]


def test_spec_agent_page_lists_missing_tool_env_values(
    client: Client, ops: Any, shop: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client.force_login(ops)
    page = client.get(reverse("admin:agents_app_agent_change", args=[shop.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert PLANTED not in html
    panel = html[
        html.index('id="env-needs"') : html.index("</section>", html.index('id="env-needs"'))
    ]
    rows = {row.split("<code>")[1].split("</code>")[0]: row for row in panel.split("<tr")[2:]}
    assert "<strong>missing</strong>" in rows["STRIPE_KEY"] and "tool charge" in rows["STRIPE_KEY"]
    assert "<strong>missing</strong>" in rows["OPENAI_API_KEY"]
    assert "missing" not in rows["WEATHER_KEY"] and "tool weather" in rows["WEATHER_KEY"]
    assert "missing" not in rows["CURRENCY"]  # optional, and set for the instance
    assert "<script" not in panel and "style=" not in panel
