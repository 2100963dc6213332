"""Issue #54: the spec 0.2.0 rows left out of scope by decision (docs/api.md "Where we
differ") are refused in words, never silently ignored: skills (E4 ``state.skills``, G1 the
registry), the user hub (F4) and the device and OAuth sign-in routes (H2). A definition that
names skills is refused at save with a sentence naming the field; the routes answer 404 JSON
as any unknown route does, never an HTML page, and the hub socket is closed with 4404."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.access.api_keys import api_key_create
from studio.asgi import application
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

UNKNOWN = "Unknown property 'skills'. Check the spelling (properties are camelCase)."


def _is_json_404(response: Any) -> None:
    assert response.status_code == 404, (response.status_code, response.content[:200])
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]


# --- E4 ---------------------------------------------------------------------------------------


def test_E4_a_prompt_or_side_naming_skills_is_refused_at_save_naming_the_field(
    as_: Any, ops: Any
) -> None:
    LanguageModel.objects.create(name="m", provider="test", model="scripted")
    prompt = {"name": "p", "model": "m", "prompt": "Help.", "skills": ["pdf-tools"]}

    refused = as_(ops).post_json("/api/prompts", prompt)

    assert refused.status_code == 400
    assert refused.json()["fieldErrors"] == {"skills": UNKNOWN}
    assert not Prompt.objects.exists()
    del prompt["skills"]
    assert as_(ops).post_json("/api/prompts", prompt).status_code == 201
    agent = {"name": "a", "sideA": {"prompt": "p", "skills": ["pdf-tools"]}}
    refused = as_(ops).post_json("/api/agents", agent)
    assert refused.status_code == 400
    assert refused.json()["fieldErrors"] == {"sideA.skills": UNKNOWN}
    assert not Agent.objects.filter(name="a").exists()


# --- G1 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/skills"),
        ("post", "/api/skills"),
        ("get", "/api/skills/pdf-tools"),
        ("patch", "/api/skills/pdf-tools"),
        ("delete", "/api/skills/pdf-tools"),
        ("get", "/api/skills/pdf-tools/files/SKILL.md"),
    ],
)
def test_G1_the_skills_routes_answer_404_json(as_: Any, ops: Any, method: str, path: str) -> None:
    client = as_(ops)
    body = {"name": "pdf-tools", "files": [{"path": "SKILL.md", "content": "---\n---\n"}]}
    if method == "get" or method == "delete":
        response = getattr(client, method)(path)
    else:
        response = getattr(client, method)(path, json.dumps(body), content_type="application/json")
    _is_json_404(response)


# --- F4 ---------------------------------------------------------------------------------------


def test_F4_the_user_hub_route_answers_404_json(as_: Any, alice: Any) -> None:
    _is_json_404(as_(alice).get("/api/users/me/hub"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_F4_the_user_hub_socket_is_closed_with_4404(alice: Any) -> None:
    from asgiref.sync import sync_to_async

    _, raw = await sync_to_async(api_key_create)(user=alice, name="hub")
    headers = [(b"authorization", f"Bearer {raw}".encode())]
    communicator = WebsocketCommunicator(application, "/api/users/me/hub", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    frame = json.loads(await communicator.receive_from())
    closed = await communicator.receive_output()
    assert frame["type"] == "error" and frame["status"] == 404
    assert closed["code"] == 4404


# --- H2 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/auth/device/code"),
        ("post", "/api/auth/device/token"),
        ("get", "/api/auth/sa/authorize"),
        ("get", "/api/auth/sa/callback"),
        ("post", "/api/auth/bootstrap"),
    ],
)
def test_H2_device_and_oauth_sign_in_routes_answer_404_json(
    as_: Any, alice: Any, anonymous: Any, method: str, path: str
) -> None:
    for client in (anonymous, as_(alice)):
        if method == "get":
            response = client.get(path)
        else:
            response = client.post(path, "{}", content_type="application/json")
        _is_json_404(response)
