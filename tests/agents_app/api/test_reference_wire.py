"""Reference wire details the end-to-end test (tests/integration/test_reference_client.py)
does not reach: token lifetime and revocation, secrets inside JSON-string log bodies,
the log frame's field names for retries, "view as" limits, deletes refused while in use."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone

from agents_app.models import Log
from agents_app.orchestration.thread_creation import thread_create
from runtime.providers.inspect import CannotRender, render_as
from runtime.store.events import log_data
from runtime.store.protocol import LogRecord
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import ApiClient, define_agent

PASSWORD = "pw-for-tests-1"


def _token_login(username: str) -> str:
    response = ApiClient().post_json(
        "/api/auth/login", {"username": username, "password": PASSWORD}
    )
    assert response.status_code == 200, response.content
    assert "sessionid" not in response.cookies
    return str(response.json()["token"])


def _me(token: str) -> int:
    return int(ApiClient(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/auth/me").status_code)


@pytest.mark.django_db
def test_login_tokens_expire_and_die_with_a_password_change(alice: Any) -> None:
    token = _token_login("alice")
    assert _me(token) == 200
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert _me(token) == 401
    fresh = _token_login("alice")
    alice.set_password("another-password-2")
    alice.save()
    assert _me(fresh) == 401


@pytest.mark.django_db
def test_a_session_cookie_is_not_accepted_as_a_bearer_token(alice: Any) -> None:
    browser = ApiClient(enforce_csrf_checks=True)
    csrf = browser.get("/api/auth/csrf").json()["csrfToken"]
    signed_in = browser.post_json(
        "/api/auth/login",
        {"username": "alice", "password": PASSWORD},
        HTTP_X_CSRFTOKEN=csrf,
    )
    assert signed_in.status_code == 200 and "token" not in signed_in.json()
    cookie = browser.cookies["sessionid"].value
    assert _me("agtuser_" + cookie) == 401  # would skip the CSRF check otherwise
    forged = ApiClient(enforce_csrf_checks=True)
    forged.cookies["csrftoken"] = "a" * 32
    refused = forged.post_json(
        "/api/auth/login", {"username": "alice", "password": PASSWORD}, HTTP_X_CSRFTOKEN="b" * 32
    )
    assert refused.status_code == 403  # the cookie path keeps its CSRF check


SECRET = 'sk-"quoted"\\back-9f2'


@pytest.mark.django_db
def test_secrets_in_json_string_log_bodies_are_redacted(as_: Any, alice: Any) -> None:
    define_agent("helper")
    thread = thread_create(user=alice, agent_name="helper", env={"API_KEY": SECRET})
    log = Log.objects.create(
        thread=thread,
        kind="llm",
        request_body={"messages": [{"role": "system", "content": f"Key: {SECRET}"}]},
        response_body={"content": f"echo {SECRET}"},
    )
    response = as_(alice).get(f"/api/threads/{thread.pk}/logs/{log.pk}")
    assert response.status_code == 200
    text = response.content.decode()
    for form in (SECRET, json.dumps(SECRET)[1:-1], json.dumps(json.dumps(SECRET))[1:-1]):
        assert form not in text
    body = response.json()
    sent = json.loads(body["request_body"])
    assert sent["messages"][0]["content"] == "Key: [REDACTED:API_KEY]"
    assert json.loads(body["response_body"]) == {"content": "echo [REDACTED:API_KEY]"}


def test_log_frames_use_the_reference_field_names() -> None:
    frame = log_data(
        LogRecord(
            id="l2",
            thread_id="t",
            parent_id="l0",
            retry_of_id="l1",
            model="support_model",
            model_id="gpt-4o-mini",
            response_body={"tool_calls": [{"function": {"name": "lookup_order"}}]},
        )
    )
    data = frame["data"]
    assert (data["model"], data["model_name"]) == ("support_model", "gpt-4o-mini")
    assert (data["parent_log_id"], data["retry_of_log_id"]) == ("l0", "l1")
    assert data["tools_called"] == '["lookup_order"]'
    assert not {"model_id", "parent_id", "retry_of_id", "request_body", "response_body"} & set(data)


def test_a_vendor_request_is_only_shown_in_its_own_format() -> None:
    logged = {"method": "POST", "url": "u", "body": {"model": "m", "input": []}, "summary": {}}
    assert render_as("openai", "openai", logged) == {"model": "m", "input": []}
    with pytest.raises(CannotRender, match="sent to openai"):
        render_as("anthropic", "openai", logged)
    with pytest.raises(CannotRender, match="Unknown provider"):
        render_as("nobody", "openai", logged)


@pytest.mark.django_db
def test_definitions_in_use_are_not_deleted(as_: Any, ops: Any) -> None:
    define_agent("helper")
    client = as_(ops)
    used = client.delete("/api/prompts/helper-prompt")
    assert used.status_code == 409 and "helper" in used.json()["error"]
    assert client.get("/api/prompts/helper-prompt").status_code == 200
    assert client.delete("/api/agents/helper").json()["success"] is True
    assert client.delete("/api/prompts/helper-prompt").status_code == 200
    assert client.delete("/api/prompts/helper-prompt").status_code == 404


@pytest.mark.django_db
def test_definition_writes_are_staff_only(as_: Any, alice: Any) -> None:
    body = {"name": "m", "provider": "test", "model": "scripted"}
    refused = as_(alice).post_json("/api/models", body)
    assert refused.status_code == 403


@pytest.mark.django_db
def test_an_agent_s_variables_say_where_each_is_defined(as_: Any, ops: Any) -> None:
    from agents_app.services.definitions import saves as definition_saves
    from agents_app.services.env.writes import EnvPatch, env_apply
    from runtime.core.spec import (
        AgentDefinition,
        ModelDefinition,
        PromptDefinition,
        PromptEnvPart,
        PromptTextPart,
        SideConfig,
    )

    model = ModelDefinition(name="oa", provider="openai", model="gpt-4o-mini")
    prompt = PromptDefinition(
        name="p",
        model="oa",
        prompt=[PromptTextPart(content="Shop: "), PromptEnvPart(property="SHOP_NAME")],
    )
    agent = AgentDefinition(name="shop", side_a=SideConfig(prompt="p"))
    definition_saves.save_definitions(
        [("m", model), ("p", prompt), ("a", agent)], strict_code_names=False
    )
    env_apply(
        scope="instance",
        patch=EnvPatch(patch={"SHOP_NAME": "Teapots"}, type_patch={"SHOP_NAME": "text"}),
    )
    found = as_(ops).get("/api/variables/agents/shop").json()["variables"]
    by_name = {v["property"]: v for v in found}
    assert by_name["SHOP_NAME"]["defined"] == {"type": "instance"}
    assert by_name["SHOP_NAME"]["value"] == "Teapots"
    key = by_name["OPENAI_API_KEY"]
    assert key["type"] == "secret" and key["required"] is True and "value" not in key
    assert as_(ops).get("/api/variables/agents/nobody").status_code == 404
