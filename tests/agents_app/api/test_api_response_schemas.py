"""Routes with a typed response schema show it in the OpenAPI document (issue #37), and
the schema keeps every key the route sends (the wire format stays the reference's)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

COST_KEYS = [
    "totalCost",
    "inputCost",
    "cachedCost",
    "outputCost",
    "routerFeeCost",
    "ownCost",
    "requestCount",
    "messageCount",
    "avgCostPerMessage",
    "modelBreakdown",
    "avgCostPerMessageByModel",
    "threads",
    "truncated",
]
QUEUED_KEYS = ["status", "queueId", "messageId", "message"]
LOG_KEYS = ["id", "kind", "message_id", "provider", "actual_provider"]
REVIVE_KEYS = [
    "verdict",
    "action",
    "executing",
    "incompleteLogs",
    "queuedMessages",
    "silenceMs",
    "ceilingMs",
    "strikes",
    "requestRestart",
]

TYPED = [
    ("get", "/api/threads", "200", ["threads", "total", "hasMore"]),
    ("get", "/api/threads/owners", "200", ["owners"]),
    ("delete", "/api/threads/{thread_id}", "200", ["success", "threadId", "deletedThreadIds"]),
    ("get", "/api/threads/{thread_id}/subagents", "200", ["subagents"]),
    ("get", "/api/threads/{thread_id}/messages", "200", ["messages", "total", "hasMore"]),
    ("patch", "/api/threads/{thread_id}/messages/{message_id}", "200", ["success"]),
    ("delete", "/api/threads/{thread_id}/messages/{message_id}", "200", ["success"]),
    ("post", "/api/threads/{thread_id}/stop", "200", ["status", "message"]),
    ("get", "/api/threads/{thread_id}/pending-tool-calls", "200", ["pending"]),
    ("post", "/api/threads/{thread_id}/continue", "202", ["status", "queueId", "message"]),
    ("get", "/api/auth/me", "200", ["user", "authType"]),
    ("post", "/api/auth/websocket-ticket", "200", ["ticket", "expires_in"]),
    # issue #37, the thread's own routes: every key each always sends, in its order
    ("post", "/api/threads", "200", ["threadId", "agent_id", "message"]),
    ("get", "/api/threads/{thread_id}", "200", ["thread", "agent", "stats"]),
    (
        "patch",
        "/api/threads/{thread_id}",
        "200",
        ["id", "agent_id", "user_id", "tags", "env_types", "created_at"],
    ),
    ("get", "/api/threads/{thread_id}/cost", "200", [*COST_KEYS]),
    ("post", "/api/threads/{thread_id}/messages", "202", [*QUEUED_KEYS]),
    ("post", "/api/threads/{thread_id}/messages/{message_id}/edit", "202", [*QUEUED_KEYS]),
    (
        "post",
        "/api/threads/{thread_id}/messages/{message_id}/regenerate",
        "202",
        ["status", "queueId", "message"],
    ),
    ("put", "/api/threads/{thread_id}/active", "200", ["active_path", "leaf_id"]),
    ("post", "/api/threads/{thread_id}/fork", "200", ["threadId", "message"]),
    ("get", "/api/threads/{thread_id}/tree", "200", ["nodes", "active_path"]),
    ("post", "/api/threads/{thread_id}/messages/{message_id}/feedback", "200", ["feedback"]),
    (
        "delete",
        "/api/threads/{thread_id}/messages/{message_id}/feedback",
        "200",
        ["withdrawn", "feedback"],
    ),
    ("post", "/api/inbound/{token}", "202", ["threadId", "messageId"]),
    ("post", "/api/threads/{thread_id}/tool-result", "200", ["status"]),
    (
        "get",
        "/api/threads/{thread_id}/effects",
        "200",
        ["effects", "total", "upcomingCount", "limit", "offset"],
    ),
    (
        "post",
        "/api/threads/{thread_id}/effects/{effect_id}/cancel",
        "200",
        ["action", "id", "canceledBy"],
    ),
    ("post", "/api/threads/{thread_id}/effects/{effect_id}/run", "200", ["action", "id"]),
    ("get", "/api/threads/{thread_id}/logs", "200", ["logs", "total", "hasMore"]),
    ("get", "/api/threads/{thread_id}/logs/{log_id}", "200", [*LOG_KEYS]),
    ("get", "/api/threads/{thread_id}/diagnostics", "200", ["thread", "watchdog", "terminated"]),
    ("post", "/api/threads/{thread_id}/revive", "200", [*REVIVE_KEYS]),
    ("post", "/api/threads/{thread_id}/kv", "200", ["key", "value", "previousKey", "deleted"]),
]

# Routes that answer in several shapes, by their query or body: each shape's keys.
TYPED_SHAPES = [
    (
        "get",
        "/api/threads/{thread_id}/kv",
        "200",
        [["key", "value"], ["values", "total", "limit", "offset", "search"]],
    ),
    (
        "get",
        "/api/threads/{thread_id}/fs",
        "200",
        [
            ["totalSize", "fileCount", "directoryCount"],
            ["files", "pattern"],
            ["results", "pattern"],
            ["files", "path"],
        ],
    ),
    ("get", "/api/threads/{thread_id}/fs/{path}", "200", [["files", "path"], ["file"]]),
    (
        "post",
        "/api/threads/{thread_id}/fs/{path}",
        "201",
        [["id", "type", "path", "name", "mimeType", "size"], ["directory"]],
    ),
]


@pytest.mark.parametrize(("method", "path", "status", "keys"), TYPED, ids=lambda v: str(v))
def test_a_typed_route_shows_its_response_schema(
    openapi_document: dict[str, Any], method: str, path: str, status: str, keys: list[str]
) -> None:
    document = openapi_document
    content = document["paths"][path][method]["responses"][status]["content"]
    ref = content["application/json"]["schema"]["$ref"]
    schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert list(schema["properties"])[: len(keys)] == keys
    assert set(keys) <= set(schema["required"])
    assert schema["additionalProperties"] is True  # a key not declared is kept, not dropped


def _schema(document: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    return document["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


@pytest.mark.parametrize(("method", "path", "status", "shapes"), TYPED_SHAPES, ids=str)
def test_a_route_of_several_shapes_shows_each(
    openapi_document: dict[str, Any], method: str, path: str, status: str, shapes: list[list[str]]
) -> None:
    document = openapi_document
    content = document["paths"][path][method]["responses"][status]["content"]
    options = [_schema(document, ref) for ref in content["application/json"]["schema"]["anyOf"]]
    assert [
        list(o["properties"])[: len(keys)] for o, keys in zip(options, shapes, strict=True)
    ] == shapes
    for option, keys in zip(options, shapes, strict=True):
        assert set(keys) <= set(option["required"])
        assert option["additionalProperties"] is True


def test_nested_shapes_are_declared(anonymous: Any) -> None:
    schemas = anonymous.get("/api/openapi.json").json()["components"]["schemas"]
    assert list(schemas["LogDetailOut"]["properties"])[-3:] == [
        "source_message_content",
        "source_message_role",
        "source_message_created_at",
    ]
    assert list(schemas["EffectOut"]["properties"])[:3] == ["id", "name", "scheduledAt"]
    assert "isDirectory" in schemas["FileRecordOut"]["properties"]
    assert list(schemas["FeedbackOut"]["properties"]) == ["score", "reason", "comment"]
    assert list(schemas["ThreadFieldsOut"]["properties"])[:2] == ["id", "agent_id"]
    assert "modelName" in schemas["ModelCostOut"]["properties"]


def test_a_file_download_declares_its_bytes(anonymous: Any) -> None:
    document = anonymous.get("/api/openapi.json").json()
    content = document["paths"]["/api/threads/{thread_id}/fs/{path}"]["get"]["responses"]["200"]
    assert content["content"]["*/*"]["schema"]["format"] == "binary"
    assert content["content"]["image/jpeg"]["schema"]["format"] == "binary"


def test_the_stream_path_says_it_is_a_websocket(anonymous: Any) -> None:
    document = anonymous.get("/api/openapi.json").json()
    operation = document["paths"]["/api/threads/{thread_id}/stream"]["get"]
    assert not any(code.startswith("2") for code in operation["responses"])


def test_a_key_the_schema_does_not_declare_reaches_the_client() -> None:
    from agents_app.api.responses import ThreadPageOut

    body = {"threads": [{"id": "t", "x": None}], "total": True, "hasMore": 1, "extra": None}
    assert ThreadPageOut.model_validate(body).model_dump() == body
    assert list(ThreadPageOut.model_validate(body).model_dump()) == list(body)


def _declared(document: dict[str, Any], path: str, method: str, status: str) -> list[str]:
    schema = document["paths"][path][method]["responses"][status]["content"]["application/json"]
    return list(_schema(document, schema["schema"])["properties"])


def test_real_answers_open_with_the_declared_keys(
    as_: Any, alice: Any, thread_of: Any, settings: Any, tmp_path: Any
) -> None:
    """The declared keys are the first keys of the real answers, in the same order."""
    settings.MEDIA_ROOT = str(tmp_path)
    document = as_(alice).get("/api/openapi.json").json()
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}"
    client.post(base + "/fs/a.txt", b"x", content_type="text/plain")
    answers = [
        (client.get(base), "/api/threads/{thread_id}", "get", "200"),
        (client.patch_json(base, {"tags": ["t"]}), "/api/threads/{thread_id}", "patch", "200"),
        (client.get(base + "/cost"), "/api/threads/{thread_id}/cost", "get", "200"),
        (client.get(base + "/tree"), "/api/threads/{thread_id}/tree", "get", "200"),
        (client.get(base + "/effects"), "/api/threads/{thread_id}/effects", "get", "200"),
        (client.get(base + "/logs"), "/api/threads/{thread_id}/logs", "get", "200"),
        (client.get(base + "/diagnostics"), "/api/threads/{thread_id}/diagnostics", "get", "200"),
        (client.post_json(base + "/revive", {}), "/api/threads/{thread_id}/revive", "post", "200"),
        (
            client.post_json(base + "/kv", {"key": "k", "value": 1}),
            "/api/threads/{thread_id}/kv",
            "post",
            "200",
        ),
    ]
    for response, path, method, status in answers:
        assert response.status_code == int(status), (path, response.content)
        keys = _declared(document, path, method, status)
        assert list(response.json())[: len(keys)] == keys, path
    detail = client.get(base).json()
    assert list(detail["thread"])[:2] == ["id", "agent_id"]
    file = client.get(base + "/fs/a.txt?format=json").json()["file"]
    assert list(file)[:3] == ["path", "name", "mimeType"]
    page = client.get(base + "/kv").json()
    assert list(page) == ["values", "total", "limit", "offset", "search"]
    assert list(page["values"][0]) == ["key", "value", "serialized", "size", "updatedAt"]
