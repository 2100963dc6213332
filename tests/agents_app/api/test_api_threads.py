"""Threads over HTTP: create, list (filters, sort, paging), get, patch (env write-only), delete."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from agents_app.models import EnvValue, Log, Message, Thread, ThreadSession
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db


def test_create_answers_like_the_reference(as_: Any, alice: Any, agent: str) -> None:
    response = as_(alice).post_json(
        "/api/threads",
        {"agent_id": agent, "tags": ["a", "name:Trip"], "env": {"CITY": "Oslo", "TOKEN": "s3"}},
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"threadId", "agent_id", "message"}
    assert body["agent_id"] == agent and body["message"] == "Thread created successfully"
    thread = Thread.objects.get(pk=body["threadId"])
    assert thread.owner == alice and thread.tags == ["a", "name:Trip"]
    types = dict(EnvValue.objects.filter(thread=thread).values_list("key", "value_type"))
    assert types == {"CITY": "secret", "TOKEN": "secret"}


def test_create_keeps_text_types(as_: Any, alice: Any, agent: str) -> None:
    response = as_(alice).post_json(
        "/api/threads",
        {
            "agent_id": agent,
            "env": {"CITY": "Oslo"},
            "env_types": {"CITY": "text"},
            "initial_messages": [],
            "properties": {},
            "data": None,
        },
    )
    thread = Thread.objects.get(pk=response.json()["threadId"])
    assert EnvValue.objects.get(thread=thread).value_type == "text"
    assert not Message.objects.filter(thread=thread).exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("initial_messages", [{"role": "user", "content": "hello"}]),
        ("properties", {"colour": "blue"}),
        ("data", {"x": 1}),
        ("data", 0),
    ],
)
def test_create_refuses_configuration_it_would_ignore(
    as_: Any, alice: Any, agent: str, field: str, value: Any
) -> None:
    response = as_(alice).post_json("/api/threads", {"agent_id": agent, field: value})
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(f"Invalid request: {field}: ")
    assert not Thread.objects.filter(agent__name=agent).exists()


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({}, 400, "Invalid request: agent_id: Field required"),
        ({"agent_id": "ghost"}, 404, "Agent not found: ghost"),
        (
            {"agent_id": "helper", "tags": "x"},
            400,
            "Invalid request: tags: Input should be a valid list",
        ),
        (
            {"agent_id": "helper", "tags": [1]},
            400,
            "Invalid request: tags.0: Input should be a valid string",
        ),
        ({"agent_id": "helper", "env": {"bad key": "v"}}, 400, None),
        ({"agent_id": "helper\u0000"}, 400, None),
        ({"agent_id": 5}, 400, "Invalid request: agent_id: Input should be a valid string"),
    ],
)
def test_create_rejects_bad_input_with_a_clear_error(
    as_: Any, alice: Any, agent: str, body: Any, status: int, error: str | None
) -> None:
    response = as_(alice).post_json("/api/threads", body)
    assert response.status_code == status, response.content
    assert set(response.json()) == {"error"}
    if error:
        assert response.json()["error"] == error


def test_malformed_json_and_non_object_bodies_are_400(as_: Any, alice: Any, agent: str) -> None:
    client = as_(alice)
    broken = client.post("/api/threads", b"{nope", content_type="application/json")
    assert broken.status_code == 400 and broken.json() == {"error": "Invalid JSON body"}
    array = client.post("/api/threads", b"[1,2]", content_type="application/json")
    assert array.status_code == 400


def test_oversized_bodies_are_413(as_: Any, alice: Any, agent: str, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = as_(alice).post_json("/api/threads", {"agent_id": agent, "tags": ["x" * 2000]})
    assert response.status_code == 413
    assert response.json() == {"error": "Request body too large"}


def test_list_has_the_reference_shape_and_paging(as_: Any, alice: Any, thread_of: Any) -> None:
    threads = [thread_of(alice, tags=[f"n{i}"]) for i in range(3)]
    page = as_(alice).get("/api/threads?limit=2").json()
    assert page["total"] == 3 and page["hasMore"] is True and len(page["threads"]) == 2
    item = page["threads"][0]
    assert set(item) >= {
        "id",
        "agent_id",
        "origin_agent_id",
        "user_id",
        "tags",
        "parent",
        "terminated",
        "created_at",
        "last_activity_at",
        "executing",
        "last_message_preview",
        "last_message_at",
        "agent",
    }
    assert isinstance(item["created_at"], int) and item["created_at"] < 10_000_000_000  # seconds
    assert item["agent"]["side_b_backing"] == "human"
    rest = as_(alice).get("/api/threads?limit=2&offset=2").json()
    assert rest["hasMore"] is False and len(rest["threads"]) == 1
    oldest = as_(alice).get("/api/threads?sort=oldest").json()["threads"]
    assert [t["id"] for t in oldest] == [str(t.pk) for t in threads]


def test_list_filters_by_agent_search_and_executing(as_: Any, alice: Any, thread_of: Any) -> None:
    define_agent("other")
    mine = thread_of(alice, tags=["findme"])
    other = as_(alice).post_json("/api/threads", {"agent_id": "other"}).json()["threadId"]
    client = as_(alice)
    assert [t["id"] for t in client.get("/api/threads?agent_id=other").json()["threads"]] == [other]
    assert [t["id"] for t in client.get("/api/threads?search=findme").json()["threads"]] == [
        str(mine.pk)
    ]
    assert client.get(f"/api/threads?search={mine.pk}").json()["total"] == 1
    assert client.get("/api/threads?executing=1").json()["total"] == 0
    client.post_json(f"/api/threads/{mine.pk}/messages", {"content": "hi"})
    assert [t["id"] for t in client.get("/api/threads?executing=true").json()["threads"]] == [
        str(mine.pk)
    ]
    now = int(time.time())
    assert client.get(f"/api/threads?startDate={now + 100}").json()["total"] == 0


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=abc", "offset=-1", "sort=newest", "limit=99999999999999999999"]
)
def test_list_rejects_bad_query_values(as_: Any, alice: Any, agent: str, query: str) -> None:
    response = as_(alice).get(f"/api/threads?{query}")
    assert response.status_code == 400
    assert response.json()["error"].startswith("Invalid request: ")


def test_get_returns_thread_agent_and_stats(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    Message.objects.create(thread=thread, role="user", content="x")
    Log.objects.create(thread=thread)
    body = as_(alice).get(f"/api/threads/{thread.pk}").json()
    assert body["thread"]["id"] == str(thread.pk)
    assert body["agent"]["side_a_agent_prompt"] == "helper-prompt"
    assert body["stats"] == {"message_count": 1, "log_count": 1}


def test_patch_env_is_write_only_and_typed(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice, env={"OLD": "x"})
    client = as_(alice)
    body = client.patch_json(
        f"/api/threads/{thread.pk}",
        {
            "tags": ["t"],
            "env_patch": {"CITY": "Oslo", "KEY": "secret-value"},
            "env_type_patch": {"CITY": "text"},
            "env_delete": ["OLD"],
        },
    ).json()
    assert body["env_types"] == {"CITY": "text", "KEY": "secret"}
    assert body["tags"] == ["t"]
    assert "secret-value" not in str(body)
    stored = {e.key: e.value for e in EnvValue.objects.filter(thread=thread)}
    assert stored == {"CITY": "Oslo", "KEY": "secret-value"}
    replaced = client.patch_json(f"/api/threads/{thread.pk}", {"env": {"ONLY": "1"}}).json()
    assert replaced["env_types"] == {"ONLY": "secret"}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "No valid fields to update"),
        ({"env_type_patch": {"NOPE": "text"}}, "env_type_patch: NOPE has no matching env value"),
        ({"agent_id": "ghost"}, "Agent not found: ghost"),
        ({"env_patch": {"A": None}}, None),
    ],
)
def test_patch_rejects_nothing_to_do_and_bad_env(
    as_: Any, alice: Any, thread_of: Any, body: Any, error: str | None
) -> None:
    thread = thread_of(alice)
    response = as_(alice).patch_json(f"/api/threads/{thread.pk}", body)
    assert response.status_code in (400, 404)
    if error:
        assert response.json() == {"error": error}


def test_patch_agent_must_have_a_human_side(as_: Any, alice: Any, thread_of: Any) -> None:
    define_agent("duo", dual=True)
    thread = thread_of(alice)
    response = as_(alice).patch_json(f"/api/threads/{thread.pk}", {"agent_id": "duo"})
    assert response.status_code == 400
    assert response.json() == {
        "error": "Only agents with a human-backed side can be assigned to threads"
    }


def test_delete_removes_the_whole_subtree(as_: Any, alice: Any, thread_of: Any) -> None:
    root = thread_of(alice)
    child = Thread.objects.create(
        agent=root.agent, origin_agent=root.agent, owner=alice, parent=root
    )
    grandchild = Thread.objects.create(
        agent=root.agent, origin_agent=root.agent, owner=alice, parent=child
    )
    body = as_(alice).delete(f"/api/threads/{root.pk}").json()
    assert body["success"] is True and body["deletedCount"] == 3
    assert body["deletedThreadIds"] == [str(root.pk), str(child.pk), str(grandchild.pk)]
    assert not Thread.objects.exists()


def test_subagents_lists_children(as_: Any, alice: Any, thread_of: Any) -> None:
    root = thread_of(alice)
    Thread.objects.create(
        agent=root.agent,
        origin_agent=root.agent,
        owner=alice,
        parent=root,
        display_name="Researcher",
        child_status="idle",
    )
    [entry] = as_(alice).get(f"/api/threads/{root.pk}/subagents").json()["subagents"]
    assert entry["agent_name"] == "helper" and entry["threadName"] == "Researcher"
    assert entry["status"] == "idle"


def test_I5_registry_entries_carry_owner_initial_arguments_and_awaiting_human(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    root = thread_of(alice)
    child = Thread.objects.create(
        agent=root.agent,
        origin_agent=root.agent,
        owner=alice,
        parent=root,
        child_status="idle",
        subagent_config={"blocking": False, "owner_side": "b", "arguments": {"topic": "tides"}},
    )
    plain = Thread.objects.create(
        agent=root.agent, origin_agent=root.agent, owner=alice, parent=root
    )
    ThreadSession.objects.create(thread=child, status="completed", stop_reason="awaiting_human")
    ThreadSession.objects.create(thread=plain, status="completed", stop_reason="stop_on_response")
    entries = as_(alice).get(f"/api/threads/{root.pk}/subagents").json()["subagents"]
    by_id = {e["id"]: e for e in entries}
    assert by_id[str(child.pk)]["owner"] == "b"
    assert by_id[str(child.pk)]["initialArguments"] == {"topic": "tides"}
    assert by_id[str(child.pk)]["status"] == "awaiting_human"
    assert (by_id[str(plain.pk)]["owner"], by_id[str(plain.pk)]["initialArguments"]) == (None, {})
    assert by_id[str(plain.pk)]["status"] == "running"


def test_cost_sums_the_subtree(as_: Any, alice: Any, thread_of: Any) -> None:
    root = thread_of(alice)
    child = Thread.objects.create(agent=root.agent, origin_agent=root.agent, parent=root)
    Log.objects.create(thread=root, model="m", model_id="gpt", cost_total="0.5", cost_input="0.5")
    Log.objects.create(thread=child, model="m", model_id="gpt", cost_total="0.25")
    body = as_(alice).get(f"/api/threads/{root.pk}/cost").json()
    assert body["totalCost"] == pytest.approx(0.75)
    assert body["ownCost"] == pytest.approx(0.5)
    assert body["requestCount"] == 2
    assert body["modelBreakdown"][0]["modelName"] == "gpt"
    assert {t["threadId"] for t in body["threads"]} == {str(root.pk), str(child.pk)}


def test_the_stream_path_over_plain_http_is_400(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    response = as_(alice).get(f"/api/threads/{thread.pk}/stream")
    assert response.status_code == 400
    assert response.json() == {"error": "This endpoint only supports WebSocket connections"}


def test_unknown_api_paths_are_json_404(as_: Any, alice: Any, thread_of: Any) -> None:
    response = as_(alice).get("/api/does/not/exist")
    assert response.status_code == 404
    assert response.json() == {"error": "Not found"}
    # A path no route takes because of a newline in it (a decoded %0A, as schemathesis sends
    # into a file path) is still a JSON error, not Django's HTML page.
    thread = thread_of(alice)
    for path in ("/api/does/not%0Aexist", f"/api/threads/{thread.pk}/fs/%0A/upload/start"):
        answer = as_(alice).post(path, "{}", content_type="application/json")
        assert answer.status_code in (400, 404), path
        # and a POST without a CSRF token from a browser-less client: the 404, not an HTML 403
        bare = Client(enforce_csrf_checks=True).post(path, "{}", content_type="application/json")
        assert bare["Content-Type"].startswith("application/json"), path
        assert answer["Content-Type"].startswith("application/json"), path


def test_openapi_docs_are_served(anonymous: Any) -> None:
    assert anonymous.get("/api/docs").status_code == 200
    schema = anonymous.get("/api/openapi.json").json()
    assert "/api/threads/{thread_id}/messages" in schema["paths"]
