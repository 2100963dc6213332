"""Routes with a typed response schema show it in the OpenAPI document (issue #37), and
the schema keeps every key the route sends (the wire format stays the reference's)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

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
]


@pytest.mark.parametrize(("method", "path", "status", "keys"), TYPED, ids=lambda v: str(v))
def test_a_typed_route_shows_its_response_schema(
    anonymous: Any, method: str, path: str, status: str, keys: list[str]
) -> None:
    document = anonymous.get("/api/openapi.json").json()
    content = document["paths"][path][method]["responses"][status]["content"]
    ref = content["application/json"]["schema"]["$ref"]
    schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert list(schema["properties"])[: len(keys)] == keys
    assert set(keys) <= set(schema["required"])
    assert schema["additionalProperties"] is True  # a key not declared is kept, not dropped


def test_a_key_the_schema_does_not_declare_reaches_the_client() -> None:
    from agents_app.api.responses import ThreadPageOut

    body = {"threads": [{"id": "t", "x": None}], "total": True, "hasMore": 1, "extra": None}
    assert ThreadPageOut.model_validate(body).model_dump() == body
    assert list(ThreadPageOut.model_validate(body).model_dump()) == list(body)
