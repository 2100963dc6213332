"""The account, catalog, instance and automation routes show their typed response schema
in the OpenAPI document (issue #37), a real answer carries every key its schema declares, and
no JSON answer of the API is left untyped but those named in ``UNTYPED``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

AUTH_CONFIG_KEYS = [
    "github",
    "google",
    "platformConnected",
    "localPassword",
    "hosted",
    "standardAgentsLogin",
    "platformEndpoint",
]
SCHEDULE_KEYS = [
    "id",
    "name",
    "agent",
    "cron",
    "timezone",
    "intervalSeconds",
    "message",
    "envNames",
    "attachments",
    "target",
    "standingThreadId",
    "paused",
    "pausedReason",  # issue #52: why the platform paused it, and whose it is
    "owner",
    "catchUp",
    "nextRunAt",
]
TRIGGER_KEYS = [
    "id",
    "agent",
    "name",
    "tokenPrefix",
    "template",
    "secretEnv",
    "revoked",
    "disabledReason",
    "owner",
    "lastUsedAt",
]
KEY_KEYS = ["id", "name", "key_prefix", "last_five", "source", "created_at", "last_used_at"]

TYPED = [
    ("get", "/api/api-keys", "200", ["keys"]),
    (
        "post",
        "/api/api-keys",
        "201",
        ["key", "id", "name", "key_prefix", "last_five", "created_at"],
    ),
    ("delete", "/api/api-keys/{key_id}", "200", ["success"]),
    ("get", "/api/envs/instance", "200", ["variables"]),
    ("patch", "/api/envs/instance", "200", ["success"]),
    ("get", "/api/users/me/env", "200", ["variables"]),
    ("patch", "/api/users/me/env", "200", ["success"]),
    ("get", "/api/variables/agents/{name}", "200", ["variables"]),
    ("get", "/api/variables/prompts/{name}", "200", ["variables"]),
    ("get", "/api/variables/tools/{name}", "200", ["variables"]),
    # the catalog and the definition writes
    ("get", "/api/agents", "200", ["agents"]),
    ("get", "/api/agents/{name}", "200", ["agent"]),
    ("get", "/api/prompts", "200", ["prompts"]),
    ("get", "/api/prompts/{name}", "200", ["prompt"]),
    ("get", "/api/models", "200", ["models"]),
    ("get", "/api/models/{name}", "200", ["model"]),
    ("get", "/api/models/{name}/curl-data", "200", ["curl"]),
    ("get", "/api/tools/{name}", "200", ["name", "hasError", "description", "type"]),
    ("get", "/api/hooks", "200", ["hooks"]),
    ("get", "/api/handlers", "200", ["handlers"]),
    ("post", "/api/agents", "201", ["success"]),
    ("put", "/api/prompts/{name}", "200", ["success"]),
    ("delete", "/api/models/{name}", "200", ["success", "deleted", "filePath"]),
    ("post", "/api/models/available", "200", ["models", "hasNextPage", "page", "total"]),
    ("post", "/api/models/capabilities", "200", ["capabilities"]),
    ("post", "/api/models/endpoints", "200", ["endpoints"]),
    ("get", "/api/providers/{name}/models", "200", ["provider"]),
    # the instance and signing in
    ("get", "/api/auth/csrf", "200", ["csrfToken"]),
    ("get", "/api/auth/config", "200", AUTH_CONFIG_KEYS),
    ("post", "/api/auth/logout", "200", ["success"]),
    ("delete", "/api/auth/current-key", "200", ["revoked"]),
    ("get", "/api/config", "200", ["name", "hosted"]),
    ("get", "/api/providers", "200", ["providers"]),
    ("get", "/api/providers/{name}/tools", "200", ["tools"]),
    ("get", "/api/diagnostics", "200", ["warnings"]),
    # automation
    ("post", "/api/schedules/preview", "200", ["nextRuns"]),
    ("post", "/api/schedules", "201", SCHEDULE_KEYS),
    ("get", "/api/schedules", "200", ["schedules"]),
    ("get", "/api/schedules/{schedule_id}", "200", SCHEDULE_KEYS),
    ("post", "/api/schedules/{schedule_id}/pause", "200", SCHEDULE_KEYS),
    ("post", "/api/schedules/{schedule_id}/resume", "200", SCHEDULE_KEYS),
    ("delete", "/api/schedules/{schedule_id}", "200", ["deleted", "id"]),
    (
        "post",
        "/api/webhooks",
        "201",
        ["id", "agent", "url", "secretEnv", "events", "active", "disabledReason", "owner"],
    ),
    ("get", "/api/webhooks", "200", ["webhooks"]),
    ("delete", "/api/webhooks/{subscription_id}", "200", ["deleted", "id"]),
    ("get", "/api/webhooks/{subscription_id}/deliveries", "200", ["deliveries"]),
    ("post", "/api/triggers", "201", TRIGGER_KEYS),
    ("get", "/api/triggers", "200", ["triggers"]),
    ("delete", "/api/triggers/{trigger_id}", "200", TRIGGER_KEYS),
    ("get", "/api/evals/datasets", "200", ["datasets"]),
    ("post", "/api/evals/runs", "202", ["run"]),
    ("get", "/api/evals/runs", "200", ["runs"]),
    ("get", "/api/evals/runs/{run_id}", "200", ["run"]),
    ("post", "/api/evals/runs/{run_id}/cancel", "200", ["run"]),
    ("get", "/api/evals/compare", "200", ["a", "b", "cases"]),
]

# Routes whose 2xx body is not ours to describe (issue #37): user-defined thread
# endpoints and the API's 404 catch-all, and a logged request in its provider's own format.
UNTYPED = {
    "/api/{rest}",
    "/api/threads/{thread_id}/",
    "/api/threads/{thread_id}/{rest}",
    "/api/threads/{thread_id}/logs/{log_id}/inspect/{provider}",
}


def _typed(schema: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return True
    if "anyOf" in schema or "oneOf" in schema:
        return all(_typed(s) for s in schema.get("anyOf", schema.get("oneOf")))
    if schema.get("type") == "array":
        return _typed(schema.get("items", {}))
    extra = schema.get("additionalProperties")
    return isinstance(extra, dict) and _typed(extra)


def test_every_json_answer_of_the_api_has_a_typed_schema(anonymous: Any) -> None:
    """Every 2xx JSON body of every route shows its keys in OpenAPI, but for ``UNTYPED``."""
    document = anonymous.get("/api/openapi.json").json()
    untyped = []
    for path, operations in document["paths"].items():
        if path in UNTYPED:
            continue
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if not str(status).startswith("2") or "content" not in answer:
                    continue
                schema = answer["content"].get("application/json", {}).get("schema")
                if schema is not None and not _typed(schema):
                    untyped.append(f"{method.upper()} {path} {status}")
    assert untyped == []


def _schema(document: dict[str, Any], method: str, path: str, status: str) -> dict[str, Any]:
    content = document["paths"][path][method]["responses"][status]["content"]
    ref = content["application/json"]["schema"]["$ref"]
    return document["components"]["schemas"][ref.rsplit("/", 1)[1]]


@pytest.mark.parametrize(("method", "path", "status", "keys"), TYPED)
def test_an_account_route_shows_its_response_schema(
    openapi_document: dict[str, Any], method: str, path: str, status: str, keys: list[str]
) -> None:
    schema = _schema(openapi_document, method, path, status)
    assert list(schema["properties"]) == keys
    assert set(keys) <= set(schema["required"])
    assert schema["additionalProperties"] is True


def test_a_key_in_the_list_declares_its_fields(anonymous: Any) -> None:
    schemas = anonymous.get("/api/openapi.json").json()["components"]["schemas"]
    assert list(schemas["ApiKeyOut"]["properties"]) == KEY_KEYS


def test_real_answers_carry_the_declared_keys(as_: Any, alice: Any) -> None:
    client = as_(alice)
    document = client.get("/api/openapi.json").json()
    keys = client.get("/api/api-keys").json()
    assert list(keys) == list(_schema(document, "get", "/api/api-keys", "200")["properties"])
    assert list(keys["keys"][0]) == KEY_KEYS
    env = client.get("/api/users/me/env").json()
    assert list(env) == list(_schema(document, "get", "/api/users/me/env", "200")["properties"])
    patched = client.patch_json("/api/users/me/env", {"env_patch": {"A": "1"}}).json()
    assert list(patched) == list(
        _schema(document, "patch", "/api/users/me/env", "200")["properties"]
    )


def test_real_catalog_and_instance_answers_open_with_the_declared_keys(
    as_: Any, alice: Any, ops: Any, agent: str, anonymous: Any
) -> None:
    document = anonymous.get("/api/openapi.json").json()
    schemas = document["components"]["schemas"]
    declared = list(schemas["AgentOut"]["properties"])
    for user in (alice, ops):  # staff get more keys, after the declared ones
        [listed] = as_(user).get("/api/agents").json()["agents"]
        assert list(listed)[: len(declared)] == declared
    prompt = as_(ops).get("/api/prompts").json()["prompts"][0]
    assert list(prompt) == list(schemas["PromptOut"]["properties"])
    for path in ("/api/auth/config", "/api/config"):
        body = anonymous.get(path).json()
        keys = list(_schema(document, "get", path, "200")["properties"])
        assert list(body)[: len(keys)] == keys
