"""The account routes (API keys, env) show their typed response schema in the OpenAPI
document (issue #37), and a real answer carries every key its schema declares."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

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
]


def _schema(document: dict[str, Any], method: str, path: str, status: str) -> dict[str, Any]:
    content = document["paths"][path][method]["responses"][status]["content"]
    ref = content["application/json"]["schema"]["$ref"]
    return document["components"]["schemas"][ref.rsplit("/", 1)[1]]


@pytest.mark.parametrize(("method", "path", "status", "keys"), TYPED)
def test_an_account_route_shows_its_response_schema(
    anonymous: Any, method: str, path: str, status: str, keys: list[str]
) -> None:
    schema = _schema(anonymous.get("/api/openapi.json").json(), method, path, status)
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
