"""The definitions catalog and the instance/user env endpoints (secrets write-only)."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import EnvValue
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def test_agents_are_listed_for_everyone_with_authoring_fields_for_staff(
    as_: Any, alice: Any, ops: Any, agent: str
) -> None:
    [mine] = as_(alice).get("/api/agents").json()["agents"]
    assert mine["name"] == agent and mine["side_b_backing"] == "human"
    assert "definition" not in mine
    [full] = as_(ops).get("/api/agents").json()["agents"]
    assert full["definition"]["sideA"] == {"prompt": "helper-prompt"}
    assert as_(ops).get(f"/api/agents/{agent}").json()["agent"]["name"] == agent
    assert as_(ops).get("/api/agents/ghost").json() == {"error": "Agent not found: ghost"}


@pytest.mark.parametrize("path", ["/api/prompts", "/api/models", "/api/tools", "/api/hooks"])
def test_authoring_catalog_is_staff_only(
    as_: Any, alice: Any, ops: Any, agent: str, path: str
) -> None:
    refused = as_(alice).get(path)
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("Forbidden: Admin access required (permission ")
    assert as_(ops).get(path).status_code == 200


def test_catalog_shapes(as_: Any, ops: Any, agent: str) -> None:
    client = as_(ops)
    [prompt] = client.get("/api/prompts").json()["prompts"]
    assert prompt["model_id"] == "helper-model" and prompt["include_chat"] is True
    [model] = client.get("/api/models").json()["models"]
    assert model["provider"] == "test" and model["fallbacks"] == []
    assert client.get("/api/models/helper-model").json()["model"]["name"] == "helper-model"
    tools = client.get("/api/tools?schema=true").json()
    assert tools["helper-prompt"]["type"] == "prompt" and "schema" in tools["helper-prompt"]
    assert tools["helper"]["type"] == "handoff"
    assert client.get("/api/tools?type=agents").json() == {}
    assert client.get("/api/hooks").json() == {"hooks": []}


def test_instance_env_is_staff_only_and_secrets_are_never_returned(
    as_: Any, alice: Any, ops: Any
) -> None:
    assert as_(alice).get("/api/envs/instance").status_code == 403
    client = as_(ops)
    patched = client.patch_json(
        "/api/envs/instance",
        {
            "env_patch": {"API_KEY": "sk-secret", "REGION": "eu"},
            "env_type_patch": {"REGION": "text"},
        },
    )
    assert patched.json() == {"success": True}
    variables = client.get("/api/envs/instance").json()["variables"]
    assert [(v["name"], v["type"], v.get("value")) for v in variables] == [
        ("API_KEY", "secret", None),
        ("REGION", "text", "eu"),
    ]
    assert "sk-secret" not in str(variables)
    client.patch_json("/api/envs/instance", {"env_delete": ["API_KEY"]})
    assert [v["name"] for v in client.get("/api/envs/instance").json()["variables"]] == ["REGION"]


def test_my_env_is_per_user(as_: Any, alice: Any, bob: Any) -> None:
    as_(alice).patch_json("/api/users/me/env", {"env_patch": {"TOKEN": "alice-only"}})
    assert [v["name"] for v in as_(alice).get("/api/users/me/env").json()["variables"]] == ["TOKEN"]
    assert as_(bob).get("/api/users/me/env").json() == {"variables": []}
    assert EnvValue.objects.get().user == alice


@pytest.mark.parametrize(
    "body",
    [
        {"env_patch": {"": "x"}},
        {"env_patch": {"A B": "x"}},
        {"env_patch": {"A": 1}},
        {"env_type_patch": {"MISSING": "text"}},
        {"env_delete": "A"},
    ],
)
def test_env_patches_are_validated(as_: Any, alice: Any, body: Any) -> None:
    response = as_(alice).patch_json("/api/users/me/env", body)
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
