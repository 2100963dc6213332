"""load_demo: the demo agents on the test provider, their tools, and the demo login."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.definitions.demo import DEMO_DIR
from agents_app.services.definitions.rows import agent_definition, all_definitions
from runtime.tools.registry import discover

pytestmark = pytest.mark.django_db


def load_demo(*args: str) -> str:
    out = io.StringIO()
    call_command("load_demo", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def snapshot() -> dict[str, list[dict[str, Any]]]:
    return {kind: [d.dump() for d in defs] for kind, defs in all_definitions().items()}


@pytest.fixture(autouse=True)
def no_admin_password_configured(settings: Any) -> None:
    settings.STUDIO_ADMIN_PASSWORD = ""


def test_load_demo_creates_the_three_agents() -> None:
    load_demo()
    assert set(Agent.objects.values_list("name", flat=True)) == {
        "support_agent",
        "debate_agent",
        "intent_classifier",
    }
    assert set(LanguageModel.objects.values_list("provider", flat=True)) == {"test"}


def test_load_demo_twice_is_idempotent() -> None:
    load_demo()
    before = snapshot()
    users = get_user_model().objects.count()
    out = load_demo()
    assert "0 created, 0 updated" in out
    assert snapshot() == before
    assert get_user_model().objects.count() == users


def test_load_demo_keeps_studio_edits_unless_reset() -> None:
    load_demo()
    Agent.objects.filter(name="support_agent").update(title="Edited in the studio")
    load_demo()
    assert Agent.objects.get(name="support_agent").title == "Edited in the studio"
    load_demo("--reset")
    assert Agent.objects.get(name="support_agent").title == "Support (demo)"


def test_support_agent_calls_lookup_order_then_answers_with_its_result() -> None:
    load_demo()
    agent = agent_definition(Agent.objects.get(name="support_agent"))
    assert agent.type == "ai_human" and agent.side_a.stop_on_response
    prompt = Prompt.objects.get(name=agent.side_a.prompt)
    assert list(prompt.tool_entries.values_list("name", flat=True)) == ["lookup_order"]
    model = prompt.model
    script = model.script_obj()
    assert script is not None and len(script) >= 4  # room for a short chat
    first, second = script[0], script[1]
    assert first.tool_calls is not None
    assert first.tool_calls[0].name == "lookup_order"
    assert first.tool_calls[0].arguments == {"order_id": "A-1001"}
    assert second.content and not second.tool_calls and "A-1001" in second.content
    assert model.streaming_obj() is not None


def test_debate_agent_is_dual_ai_with_two_scripted_sides() -> None:
    load_demo()
    agent = agent_definition(Agent.objects.get(name="debate_agent"))
    assert agent.type == "dual_ai" and agent.max_session_turns == 4
    assert agent.side_b is not None
    assert (agent.side_a.label, agent.side_b.label) == ("Pro", "Con")
    models = {Prompt.objects.get(name=s.prompt).model for s in (agent.side_a, agent.side_b)}
    assert len(models) == 2
    for model in models:
        script = model.script_obj()
        # Each side speaks twice per session (4 turns): enough for a few sessions.
        assert script is not None and len(script) >= 4
        assert all(r.content and not r.tool_calls for r in script)


def test_intent_classifier_stops_on_classify_and_is_a_tool() -> None:
    load_demo()
    agent = agent_definition(Agent.objects.get(name="intent_classifier"))
    assert agent.side_a.stop_tool == "classify"
    assert agent.side_a.stop_tool_response_property == "intent"
    assert agent.expose_as_tool and agent.tool_description
    script = Prompt.objects.get(name=agent.side_a.prompt).model.script_obj()
    assert script is not None and len(script) >= 4
    assert all(r.tool_calls and r.tool_calls[0].name == "classify" for r in script)


async def test_demo_tools_are_discovered_and_answer_like_the_scripts_expect() -> None:
    registry = discover([settings.BASE_DIR])
    lookup, classify = registry.tools["lookup_order"], registry.tools["classify"]
    assert lookup.args_model is not None and classify.args_model is not None
    found = await lookup(None, lookup.args_model(order_id="A-1001"))
    assert found["found"] is True and found["status"] == "shipped"
    support = json.loads((DEMO_DIR / "models" / "support_model.json").read_text())
    expected = support["script"][1]["expectInput"]["containsToolResult"]["resultContains"]
    assert expected in json.dumps(found)
    assert (await lookup(None, lookup.args_model(order_id="Z-9")))["found"] is False
    result = await classify(None, classify.args_model(intent="refund"))
    assert result["intent"] == "refund"


def test_demo_scripts_call_only_tools_that_exist() -> None:
    tools = set(discover([settings.BASE_DIR]).tools)
    for path in (DEMO_DIR / "models").glob("*.json"):
        for response in json.loads(path.read_text()).get("script", []):
            for call in response.get("toolCalls", []):
                assert call["name"] in tools, (path.name, call["name"])


def test_load_demo_creates_admin_with_a_generated_password() -> None:
    out = load_demo()
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    password = out.split("with the password: ", 1)[1].split()[0]
    assert len(password) >= 12
    assert admin.check_password(password)
    assert "/admin/" in out


def test_generated_admin_passwords_differ_between_installs() -> None:
    first = load_demo().split("with the password: ", 1)[1].split()[0]
    get_user_model().objects.all().delete()
    second = load_demo().split("with the password: ", 1)[1].split()[0]
    assert first != second


def test_admin_password_comes_from_the_settings(settings: Any) -> None:
    settings.STUDIO_ADMIN_PASSWORD = "correct horse battery staple"
    out = load_demo()
    assert "correct horse battery staple" not in out
    assert (
        get_user_model()
        .objects.get(username="admin")
        .check_password("correct horse battery staple")
    )


def test_no_demo_admin_when_an_administrator_exists(make_user: Any) -> None:
    make_user("ops", staff=True)
    out = load_demo()
    assert not get_user_model().objects.filter(username="admin").exists()
    assert "as 'ops'" in out


def test_admin_password_is_printed_only_once() -> None:
    load_demo()
    assert "with the password: " not in load_demo()


def test_admin_password_can_come_from_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from studio.envparse import envstr

    secret = tmp_path / "admin_password"
    secret.write_text("from a mounted secret\n")
    monkeypatch.setenv("STUDIO_ADMIN_PASSWORD_FILE", str(secret))
    assert envstr("STUDIO_ADMIN_PASSWORD") == "from a mounted secret"


def test_admin_password_from_the_settings_is_applied_on_every_run(settings: Any) -> None:
    load_demo()  # created with a generated password (lost, say)
    settings.STUDIO_ADMIN_PASSWORD = "found again on a rerun"
    out = load_demo()
    assert "Set the password of 'admin' from STUDIO_ADMIN_PASSWORD" in out
    admin = get_user_model().objects.get(username="admin")
    assert admin.check_password("found again on a rerun")
    stored = admin.password
    # The same password again is not stored anew (that would sign everyone out).
    assert "applied on every run" in load_demo()
    assert get_user_model().objects.get(username="admin").password == stored
