"""Issue #40 item 7 below the browser: the definition's ``state`` and ``audience`` round-trip
through export and import, and ``/mcp``'s catalog and asks honour them (a draft or another
group's agent is absent for a person who is not staff)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User

from agents_app.base.errors import NotFound
from agents_app.models import Agent
from agents_app.orchestration.agent_calls import agent_ask, exposed_agents
from agents_app.services.definitions.rows import all_definitions
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import scripted_model

pytestmark = pytest.mark.django_db


def _save(**fields: object) -> None:
    model = scripted_model("pub-model", [{"content": "hi"}])
    prompt = PromptDefinition(name="pub-prompt", model=model.name, prompt="Be brief.")
    agent = AgentDefinition(
        name="pub", side_a=SideConfig(prompt=prompt.name), expose_as_tool=True,
        tool_description="Answers.", **fields,  # type: ignore[arg-type]
    )  # fmt: skip
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


def _exported() -> dict[str, object]:
    return next(a.dump() for a in all_definitions()["agents"] if a.name == "pub")


def test_state_and_audience_round_trip_and_default_to_published_for_everyone() -> None:
    _save()
    assert Agent.objects.get(name="pub").state == "published"
    assert "state" not in _exported() and "audience" not in _exported()  # files stay as they were
    _save(state="draft", audience=["Support", "Beta"])
    exported = _exported()
    assert exported["state"] == "draft"
    assert exported["audience"] == ["Beta", "Support"]
    assert set(Group.objects.values_list("name", flat=True)) >= {"Beta", "Support"}
    # Importing the exported definition again leaves the same agent.
    save_definitions([("agent", AgentDefinition.model_validate(exported))], strict_code_names=False)
    assert _exported() == exported


def test_mcp_offers_only_what_the_user_is_offered() -> None:
    _save(state="draft")
    person = User.objects.create_user("pat", password="x")
    staff = User.objects.create_user("sam", password="x", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_agent"))
    staff = User.objects.get(pk=staff.pk)
    assert [a.name for a in exposed_agents(person)] == []
    assert [a.name for a in exposed_agents(staff)] == ["pub"]
    with pytest.raises(NotFound):
        agent_ask(user=person, agent_name="pub", message="hi")

    _save(audience=["Beta"])
    assert [a.name for a in exposed_agents(person)] == []
    person.groups.add(Group.objects.get(name="Beta"))
    assert [a.name for a in exposed_agents(person)] == ["pub"]


def test_thread_creation_offers_the_same_agents_and_reads_permissions_only_past_the_audience() -> (
    None
):
    """``offered_agent`` (every thread's creation) asks the cheap question first: a published
    agent in the person's audience is offered without the two permission statements; a draft
    still needs the studio's view permission, and stays absent for everyone else."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents_app.selectors import offered_agent

    _save()
    person = User.objects.create_user("pat", password="x")
    staff = User.objects.create_user("sam", password="x", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_agent"))
    staff = User.objects.get(pk=staff.pk)
    with CaptureQueriesContext(connection) as read:
        assert offered_agent(person, "pub").name == "pub"
    assert not [q for q in read.captured_queries if "auth_permission" in q["sql"]], read
    assert len(read.captured_queries) == 1

    _save(state="draft")
    with pytest.raises(NotFound):
        offered_agent(person, "pub")
    assert offered_agent(User.objects.get(pk=staff.pk), "pub").name == "pub"
    with pytest.raises(NotFound):
        offered_agent(staff, "x" * 129)
