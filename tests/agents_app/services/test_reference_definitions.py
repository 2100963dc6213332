"""The reference studio's definition pages against our API: PUT renames cascade to every
reference in one transaction (reference-behavior.md §2.16), ``GET /api/models/{name}/
curl-data`` gives the request with the key as a shell variable (§5.5), and every route the
studio's bundle calls answers (none 404s for an existing name)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents_app.models import Agent, Prompt, PromptTool
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.env.writes import EnvPatch, env_apply
from runtime.core.spec import (
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SideConfig,
)
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

PLANTED = "sk-planted-secret-7f3a9c2e41d0"


def _graph() -> None:
    """m1 ← p1 (model); p2 uses p1 as a tool and as tool_choice; a1 runs p1, stops on p1;
    a2 is handed off to from p2; m2 falls back to m1."""
    definition_saves.save_definitions(
        [
            ("m1", ModelDefinition(name="m1", provider="test", model="scripted")),
            (
                "m2",
                ModelDefinition(name="m2", provider="test", model="scripted", fallbacks=["m1"]),
            ),
            ("p1", PromptDefinition(name="p1", model="m1", prompt="one")),
            ("a2", AgentDefinition(name="a2", side_a=SideConfig(prompt="p1"))),
            (
                "p2",
                PromptDefinition(
                    name="p2",
                    model="m1",
                    prompt="two",
                    tools=["p1", "a2"],
                ),
            ),
            ("a1", AgentDefinition(name="a1", side_a=SideConfig(prompt="p2"))),
        ],
        strict_code_names=False,
    )


@pytest.mark.django_db
def test_spec_put_rename_of_a_prompt_cascades_to_prompts_and_agents(as_: Any, ops: Any) -> None:
    _graph()
    client = as_(ops)
    answer = client.put("/api/prompts/p1", {"name": "p1-new"}, content_type="application/json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["renamed"] == {"from": "p1", "to": "p1-new"}
    assert body["updatedPrompts"] == ["p2"] and body["updatedAgents"] == ["a2"]
    assert body["prompt"]["name"] == "p1-new"
    assert client.get("/api/prompts/p1").status_code == 404
    assert "p1-new" in client.get("/api/prompts/p2").json()["prompt"]["tools"]
    assert client.get("/api/agents/a2").json()["agent"]["side_a_agent_prompt"] == "p1-new"
    # The renamed definitions still validate as a whole (what the admin would check).
    assert set(PromptTool.objects.filter(prompt__name="p2").values_list("name", flat=True)) == {
        "p1-new",
        "a2",
    }


@pytest.mark.django_db
def test_spec_put_rename_of_a_model_and_an_agent_cascades(as_: Any, ops: Any) -> None:
    _graph()
    client = as_(ops)
    model = client.put("/api/models/m1", {"name": "m1-new"}, content_type="application/json")
    assert model.status_code == 200, model.content
    assert model.json()["renamed"] == {"from": "m1", "to": "m1-new"}
    assert model.json()["updatedPrompts"] == ["p1", "p2"]
    assert client.get("/api/prompts/p1").json()["prompt"]["model_id"] == "m1-new"
    assert client.get("/api/models/m2").json()["model"]["fallbacks"] == ["m1-new"]
    agent = client.put("/api/agents/a2", {"name": "a2-new"}, content_type="application/json")
    assert agent.status_code == 200, agent.content
    assert agent.json()["updatedPrompts"] == ["p2"]
    assert "a2-new" in client.get("/api/prompts/p2").json()["prompt"]["tools"]


@pytest.mark.django_db
def test_a_refused_rename_changes_nothing(as_: Any, ops: Any) -> None:
    _graph()
    client = as_(ops)
    taken = client.put("/api/prompts/p1", {"name": "p2"}, content_type="application/json")
    assert taken.status_code == 400 and "already exists" in taken.json()["error"]
    invalid = client.put(
        "/api/prompts/p1",
        {"name": "p1-new", "model_id": "no-such-model"},
        content_type="application/json",
    )
    assert invalid.status_code == 400 and invalid.json()["error"] == "Validation failed"
    # Rolled back together: the rename and the references it had rewritten.
    assert Prompt.objects.filter(name="p1").exists()
    assert not Prompt.objects.filter(name="p1-new").exists()
    assert PromptTool.objects.filter(prompt__name="p2", name="p1").exists()
    assert Agent.objects.get(name="a2").side_a_prompt.name == "p1"


@pytest.mark.django_db
def test_curl_data_never_holds_the_key(as_: Any, ops: Any, monkeypatch: Any) -> None:
    definition_saves.save_definitions(
        [
            ("oa", ModelDefinition(name="oa", provider="openai", model="gpt-4o-mini")),
            (
                "an",
                ModelDefinition(name="an", provider="anthropic", model="claude-3-5-haiku-latest"),
            ),
            ("t", ModelDefinition(name="t", provider="test", model="scripted")),
            ("or5", ModelDefinition(name="or5", provider="openai", model="gpt-5", api="responses")),
        ],
        strict_code_names=False,
    )
    env_apply(
        scope="instance",
        patch=EnvPatch(patch={"OPENAI_API_KEY": PLANTED}, type_patch={"OPENAI_API_KEY": "secret"}),
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED + "-env")
    client = as_(ops)
    openai = client.get("/api/models/oa/curl-data")
    assert openai.status_code == 200, openai.content
    assert openai["Cache-Control"] == "no-store"
    assert set(openai.json()) == {"curl"}
    curl = openai.json()["curl"]
    assert PLANTED not in openai.content.decode()
    assert "https://api.openai.com/v1/chat/completions" in curl
    assert "-H 'authorization: Bearer '\"${OPENAI_API_KEY}\"" in curl
    assert curl.endswith("--data-binary @-")
    # A model on the Responses API gets that API's URL.
    responses = client.get("/api/models/or5/curl-data").json()["curl"]
    assert "https://api.openai.com/v1/responses" in responses and PLANTED not in responses
    anthropic = client.get("/api/models/an/curl-data").json()["curl"]
    assert PLANTED not in anthropic and "'x-api-key: '\"${ANTHROPIC_API_KEY}\"" in anthropic
    assert "anthropic-version" in anthropic
    scripted = client.get("/api/models/t/curl-data")
    assert scripted.status_code == 400 and "no HTTP request" in scripted.json()["error"]
    assert client.get("/api/models/nope/curl-data").status_code == 404


@pytest.mark.django_db
def test_curl_data_is_staff_only(as_: Any, alice: Any) -> None:
    definition_saves.save_definitions(
        [("oa", ModelDefinition(name="oa", provider="openai", model="gpt-4o-mini"))],
        strict_code_names=False,
    )
    assert as_(alice).get("/api/models/oa/curl-data").status_code == 403


# The GET routes the reference studio's bundle (dist/client/*.js) calls, with names that
# exist; its pack/unpack/marketplace/hosted-platform calls are out of scope.
STUDIO_GETS = [
    "/api/auth/config",
    "/api/config",
    "/api/auth/me",
    "/api/agents",
    "/api/agents/a1",
    "/api/prompts",
    "/api/prompts/p1",
    "/api/models",
    "/api/models/m1",
    "/api/providers",
    "/api/providers/openai/icon",
    "/api/providers/openai/icon?model=gpt-4o-mini",
    "/api/diagnostics",
    "/api/handlers",
    "/api/hooks",
    "/api/tools",
    "/api/tools?schema=true",
    "/api/tools?type=agents&schema=true",
    "/api/tools?type=prompts&schema=true",
    "/api/tools?type=tools",
    "/api/variables/agents/a1",
    "/api/variables/prompts/p1",
    "/api/threads",
    "/api/threads/owners",
]
THREAD_GETS = [
    "",
    "/messages",
    "/logs",
    "/diagnostics",
    "/cost",
    "/effects",
    "/kv",
    "/fs",
    "/fs?find=**/*&type=file",
    "/pending-tool-calls",
    "/subagents",
]


@pytest.mark.django_db
def test_every_route_the_reference_studio_reads_answers(as_: Any, ops: Any) -> None:
    _graph()
    client = as_(ops)
    thread = client.post_json("/api/threads", {"agent_id": "a1"})
    assert thread.status_code == 200, thread.content
    thread_id = thread.json()["threadId"]
    paths = STUDIO_GETS + [f"/api/threads/{thread_id}{p}" for p in THREAD_GETS]
    answers = {path: client.get(path) for path in paths}
    failing = {
        p: (r.status_code, r.content[:200]) for p, r in answers.items() if r.status_code != 200
    }
    assert not failing, failing
    for path, response in answers.items():
        if "icon" not in path:
            json.loads(response.content)  # JSON, never an HTML page
    # The repository's sample side handler (tests/agents_app/api/test_handler_sides.py).
    assert [h["name"] for h in answers["/api/handlers"].json()["handlers"]] == ["order_desk"]
    assert answers["/api/variables/prompts/p1"].json() == {"variables": []}  # test provider
    missing = client.get("/api/variables/tools/no-such-tool")
    assert missing.status_code == 404 and missing.json()["error"] == "Tool not found: no-such-tool"


@pytest.mark.django_db
def test_a_page_sending_back_the_whole_get_shape_saves_its_edits(as_: Any, ops: Any) -> None:
    """The studio echoes what it read (our ``definition`` extension included) with the
    edited snake_case fields: the edits win, nothing is silently dropped."""
    _graph()
    client = as_(ops)
    for path, key, field, value in (
        ("/api/prompts/p1", "prompt", "prompt", "edited text"),
        ("/api/agents/a1", "agent", "title", "Edited title"),
        ("/api/models/m1", "model", "input_price", 3.5),
    ):
        shape = client.get(path).json()[key]
        assert "definition" in shape
        saved = client.put(path, {**shape, field: value}, content_type="application/json")
        assert saved.status_code == 200, saved.content
        assert "renamed" not in saved.json()
        assert client.get(path).json()[key][field] == value
