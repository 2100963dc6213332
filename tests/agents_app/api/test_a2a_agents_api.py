"""Remote A2A agents over the API (``/api/a2a-agents``, docs/api.md "The A2A client"): the
studio's permissions and the studio form's rules, through the same save path, and a planted
secret that a header names never comes back in any answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from agents_app.models import A2aAgent, EnvValue
from agents_app.services.definitions.files import definitions_export, definitions_import
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import ApiClient, client_for, scripted_model

pytestmark = pytest.mark.django_db

PLANTED = "planted-a2a-secret-value-7f3c"
URL = "https://partner.example.com/a2a/researcher"
BODY = {"name": "partner", "url": URL, "headers": {"Authorization": "Bearer ${PARTNER_KEY}"}}


@pytest.fixture(autouse=True)
def _planted() -> None:
    secret = EnvValue(scope="instance", key="PARTNER_KEY")
    secret.value = PLANTED
    secret.save()


def _manager(make_user: Any, name: str, *codenames: str) -> ApiClient:
    user = make_user(name)
    user.is_staff = True
    user.save()
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return client_for(user)


A2A_ALL = ("view_a2aagent", "add_a2aagent", "change_a2aagent", "delete_a2aagent")


def _no_secret(response: Any) -> Any:
    assert PLANTED not in response.content.decode(), "a secret header value came back"
    return response.json()


def test_a_manager_creates_reads_updates_and_deletes_a_remote_agent(make_user: Any) -> None:
    api = _manager(make_user, "remotes", *A2A_ALL, "view_envvalue")
    created = api.post("/api/a2a-agents", BODY, content_type="application/json")
    assert created.status_code == 201, created.content
    agent = _no_secret(created)["a2aAgent"]
    assert (agent["name"], agent["url"], agent["headers"]) == (
        "partner",
        URL,
        {"Authorization": "Bearer ${PARTNER_KEY}"},
    )
    assert (agent["timeoutMs"], agent["enabled"], agent["card"]) == (120_000, True, None)

    listed = _no_secret(api.get("/api/a2a-agents"))["a2aAgents"]
    assert [a["name"] for a in listed] == ["partner"]
    assert _no_secret(api.get("/api/a2a-agents/partner"))["a2aAgent"]["url"] == URL

    # An update changes the fields it names and keeps the others.
    changed = api.put(
        "/api/a2a-agents/partner",
        {"description": "Finds papers.", "timeoutMs": 5000},
        content_type="application/json",
    )
    assert changed.status_code == 200, changed.content
    agent = _no_secret(changed)["a2aAgent"]
    assert (agent["description"], agent["timeoutMs"], agent["url"]) == ("Finds papers.", 5000, URL)
    assert A2aAgent.objects.get().headers == {"Authorization": "Bearer ${PARTNER_KEY}"}

    assert api.delete("/api/a2a-agents/partner").json() == {
        "success": True,
        "deleted": "partner",
    }
    assert api.get("/api/a2a-agents/partner").status_code == 404


def test_the_api_refuses_what_the_studio_form_refuses_naming_the_field(make_user: Any) -> None:
    api = _manager(make_user, "remotes", *A2A_ALL, "view_envvalue")

    def refused(body: dict[str, Any], field: str, words: str) -> None:
        answer = api.post("/api/a2a-agents", body, content_type="application/json")
        assert answer.status_code == 400, answer.content
        errors = _no_secret(answer)["fieldErrors"]
        assert words in errors[field], errors

    refused({**BODY, "url": "not a url"}, "url", "http:// or https://")
    refused({**BODY, "url": "http://10.1.2.3/a2a/x"}, "url", "egress policy does not allow")
    refused(
        {**BODY, "headers": {"Authorization": "Bearer ${NOT_SET_ANYWHERE}"}},
        "headers.Authorization",
        "NOT_SET_ANYWHERE, which is not set anywhere",
    )
    refused(
        {**BODY, "headers": {"Authorization": f"Bearer {PLANTED}"}}, "headers.Authorization", ""
    )
    refused({**BODY, "retries": 3}, "retries", "")
    assert not A2aAgent.objects.exists()
    api.post("/api/a2a-agents", BODY, content_type="application/json")
    again = api.post("/api/a2a-agents", BODY, content_type="application/json")
    assert again.status_code == 409
    renamed = api.put("/api/a2a-agents/partner", {"name": "other"}, content_type="application/json")
    assert "fixed once saved" in renamed.json()["fieldErrors"]["name"]
    bad = api.put("/api/a2a-agents/partner", b"[1]", content_type="application/json")
    assert bad.status_code == 400 and "error" in bad.json()


def test_pointing_an_instance_secret_at_a_new_url_needs_the_right_to_read_instance_env(
    make_user: Any,
) -> None:
    api = _manager(make_user, "remotes", *A2A_ALL)  # no view_envvalue
    refused = api.post("/api/a2a-agents", BODY, content_type="application/json")
    assert refused.status_code == 400
    assert (
        "an instance env value you may not read"
        in _no_secret(refused)["fieldErrors"]["headers.Authorization"]
    )
    reader = _manager(make_user, "reader", *A2A_ALL, "view_envvalue")
    assert reader.post("/api/a2a-agents", BODY, content_type="application/json").status_code == 201

    # Leaving the URL and headers as they are is fine; moving them is not.
    kept = api.put("/api/a2a-agents/partner", {"enabled": False}, content_type="application/json")
    assert kept.status_code == 200, kept.content
    moved = api.put(
        "/api/a2a-agents/partner",
        {"url": "https://elsewhere.example.com/a2a/x"},
        content_type="application/json",
    )
    assert moved.status_code == 400
    assert A2aAgent.objects.get().url == URL


def test_each_route_needs_the_studio_s_permission(make_user: Any) -> None:
    viewer = _manager(make_user, "viewer", "view_a2aagent")
    plain = client_for(make_user("plain"))
    assert viewer.get("/api/a2a-agents").status_code == 200
    assert plain.get("/api/a2a-agents").status_code == 403
    assert viewer.post("/api/a2a-agents", BODY, content_type="application/json").status_code == 403
    assert viewer.put("/api/a2a-agents/x", {}, content_type="application/json").status_code == 403
    assert viewer.delete("/api/a2a-agents/x").status_code == 403
    assert not A2aAgent.objects.exists()


def test_a_remote_agent_a_prompt_lists_cannot_be_deleted(make_user: Any) -> None:
    api = _manager(make_user, "remotes", *A2A_ALL, "view_envvalue")
    api.post("/api/a2a-agents", BODY, content_type="application/json")
    model = scripted_model()
    prompt = PromptDefinition(name="asks", model=model.name, prompt="Ask.", tools=["a2a:partner"])
    agent = AgentDefinition(name="asker", side_a=SideConfig(prompt="asks"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)])
    refused = api.delete("/api/a2a-agents/partner")
    assert refused.status_code == 409
    assert "asks" in refused.json()["error"]


def test_definition_files_carry_remote_agents_without_their_secrets(
    make_user: Any, tmp_path: Path
) -> None:
    api = _manager(make_user, "remotes", *A2A_ALL, "view_envvalue")
    api.post("/api/a2a-agents", BODY, content_type="application/json")
    definitions_export(directory=tmp_path)
    written = (tmp_path / "a2a" / "partner.json").read_text()
    assert PLANTED not in written
    assert json.loads(written)["headers"] == {"Authorization": "Bearer ${PARTNER_KEY}"}
    A2aAgent.objects.all().delete()
    definitions_import(directory=tmp_path)
    assert A2aAgent.objects.get().url == URL
