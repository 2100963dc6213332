"""Bad input never reaches a 500: every route, every id shape, every stored string.

The routes are not listed by hand: they are walked from the URLconf (ninja's
operations included), so a route added later is covered without touching this file.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from agents_app.api import api
from agents_app.base.storable_text import NUL_ERROR, SURROGATE_ERROR
from agents_app.models import EnvValue, Thread, ThreadValue
from studio.asgi import application
from tests.agents_app.api.api_support import _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db

# Ids no thread can have: words, numbers, a UUID with a bad digit, a too-long one, a NUL,
# a non-ASCII character, the bytes of a lone surrogate (percent-encoded).
BAD_IDS = [
    "not-a-uuid",
    "1",
    "00000000-0000-0000-0000-00000000000g",
    "x" * 300,
    "%00",
    "%E2%98%83",
    "%ED%A0%80",
]
METHODS = ["get", "post", "put", "patch", "delete"]
CLIENT_ERRORS = {400, 401, 403, 404, 405, 413, 414}
SURROGATE = "\\ud800"  # as a JSON escape: the client sends six ASCII characters


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern


def _thread_routes() -> list[str]:
    """Every route with a thread id in it, as a template with ``{id}`` for that id."""
    templates = set()
    for route, _ in _routes():
        if "(?P<thread_id>" in route:  # the chat page's regex route
            templates.add("/" + route.strip("^$").split("(?P<thread_id>")[0] + "{id}")
        elif "<thread_id>" in route:
            path = re.sub(r"<path:\w+>", "a.txt", route.replace("<thread_id>", "{id}"))
            templates.add("/" + re.sub(r"<(?:\w+:)?\w+>", "1", path))
    return sorted(templates)


def test_the_walk_finds_every_kind_of_thread_route() -> None:
    routes = _thread_routes()
    for expected in ("/api/threads/{id}", "/api/threads/{id}/kv", "/chat/t/{id}"):
        assert expected in routes
    assert len(routes) >= 15


def _assert_json_error(response: Any, what: str) -> None:
    assert response.status_code in CLIENT_ERRORS, (what, response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json"), (what, response.content)
    body = json.loads(response.content)
    assert set(body) == {"error"} and body["error"], (what, body)


@pytest.fixture
def callers(make_user: Any) -> dict[str, Client]:
    alice = make_user("alice")
    ops = make_user("ops", staff=True)
    staff_browser = Client(raise_request_exception=False)
    staff_browser.force_login(ops)
    keyed = client_for(alice)
    keyed.raise_request_exception = False
    return {
        "anonymous": Client(raise_request_exception=False),
        "api key": keyed,
        "staff session": staff_browser,
    }


def test_a_non_uuid_thread_id_is_a_json_error_on_every_route_for_every_caller(
    callers: dict[str, Client], caplog: pytest.LogCaptureFixture
) -> None:
    define_agent("helper")
    caplog.set_level(logging.WARNING)
    for template in _thread_routes():
        for bad in BAD_IDS:
            url = template.format(id=bad)
            for who, client in callers.items():
                for method in METHODS:
                    response = client.generic(
                        method.upper(), url, "{}", content_type="application/json"
                    )
                    what = f"{who} {method.upper()} {url[:80]}"
                    if url.startswith("/api/"):
                        _assert_json_error(response, what)
                    else:  # a page: the sign-in redirect, the page itself, or its 404
                        assert response.status_code in {200, 302, 404, 405}, what
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert tracebacks == [], [r.getMessage() for r in tracebacks[:3]]


def _operations() -> Iterator[tuple[str, str, bool]]:
    """(path template, method, takes a JSON body) for every API operation."""
    schema = api.get_openapi_schema()
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            yield path, method, "application/json" in content


def _fill(path: str, thread_id: str) -> str:
    path = path.replace("{thread_id}", thread_id).replace("{name}", "helper")
    return re.sub(r"\{[^}]+\}", "a", path)


def test_a_lone_surrogate_anywhere_in_any_json_body_is_a_400_naming_the_field(
    callers: dict[str, Client], make_user: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from agents_app.orchestration.thread_creation import thread_create

    define_agent("helper")
    ops = make_user("ops2", staff=True)
    thread = thread_create(user=ops, agent_name="helper")
    # Signed in in person: some routes (creating API keys) refuse an API key before reading the body.
    staff = Client()
    staff.force_login(ops)
    staff.raise_request_exception = False
    caplog.set_level(logging.WARNING)
    # Every field name any body uses, each holding the surrogate in a string, a list, a key.
    fields = ["content", "agent_id", "key", "value", "name", "tags", "env", "metadata"]
    body = "{" + ",".join(f'"{f}":"{SURROGATE}"' for f in fields) + "}"
    nested = '{"env":{"' + SURROGATE + '":"v"},"tags":["ok","' + SURROGATE + '"]}'
    checked = 0
    for path, method, takes_json in _operations():
        if not takes_json:
            continue
        url = _fill(path, str(thread.pk))
        for raw, field in ((body, "content"), (nested, "env.(key)")):
            response = staff.generic(method.upper(), url, raw, content_type="application/json")
            _assert_json_error(response, f"{method} {url}")
            assert response.status_code == 400, (url, response.content)
            assert SURROGATE_ERROR in response.json()["error"], (url, response.content)
            assert f"{field}:" in response.json()["error"]
            checked += 1
    assert checked >= 10
    assert not caplog.records or all(r.levelno < logging.ERROR for r in caplog.records)
    assert not ThreadValue.objects.exists()


@pytest.mark.parametrize(
    ("url", "body", "field", "reason"),
    [
        (
            "/api/threads",
            {"agent_id": "helper", "tags": ["a", "\ud800"]},
            "tags.1",
            SURROGATE_ERROR,
        ),
        ("/api/threads", {"agent_id": "helper", "env": {"K": "v\ud800"}}, "env.K", SURROGATE_ERROR),
        (
            "/api/threads",
            {"agent_id": "helper", "env": {"K\udfff": "v"}},
            "env.(key)",
            SURROGATE_ERROR,
        ),
        ("{thread}/messages", {"content": "hi \ud800"}, "content", SURROGATE_ERROR),
        (
            "{thread}/kv",
            {"key": "k", "value": {"deep": ["\udc00"]}},
            "value.deep.0",
            SURROGATE_ERROR,
        ),
        ("{thread}/kv", {"key": "k", "value": "nul\u0000"}, "value", NUL_ERROR),
        (
            "{thread}/fs/f.txt",
            {"data": "aGk=", "metadata": {"m": "\ud800"}},
            "metadata.m",
            SURROGATE_ERROR,
        ),
        ("{thread}/continue", {"side": "a", "note": "\ud800"}, "note", SURROGATE_ERROR),
    ],
)
def test_unstorable_text_in_tags_env_messages_values_and_file_metadata_is_refused(
    make_user: Any, url: str, body: dict[str, Any], field: str, reason: str
) -> None:
    from agents_app.orchestration.thread_creation import thread_create

    define_agent("helper")
    alice = make_user("alice")
    thread = thread_create(user=alice, agent_name="helper")
    client = client_for(alice)
    path = url.replace("{thread}", f"/api/threads/{thread.pk}")
    # json.dumps writes lone surrogates and NUL as escapes, exactly as a client would.
    response = client.post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error.startswith(f"Invalid request: {field}: ")
    assert error.endswith(reason)
    assert Thread.objects.count() == 1 and not EnvValue.objects.filter(key__startswith="K").exists()


def test_a_valid_surrogate_pair_is_stored_as_the_character_it_spells(make_user: Any) -> None:
    define_agent("helper")
    client = client_for(make_user("alice"))
    response = client.post(
        "/api/threads",
        '{"agent_id":"helper","tags":["\\ud83d\\ude00"]}',
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert Thread.objects.get().tags == ["\U0001f600"]


def test_urls_over_the_limit_are_a_json_414(callers: dict[str, Client], settings: Any) -> None:
    long_path = "/api/threads/" + "a" * 9000
    for who, client in callers.items():
        response = client.get(long_path)
        assert response.status_code == 414, who
        assert response.json() == {"error": "URL too long: the limit is 8192 bytes"}
    response = callers["anonymous"].get("/chat/?agent=" + "b" * 9000)
    assert response.status_code == 414 and response["Content-Type"] == "application/json"


def test_a_method_a_route_does_not_take_is_a_json_405(callers: dict[str, Client]) -> None:
    response = callers["api key"].put("/api/threads")
    assert response.status_code == 405
    assert response.json() == {"error": "Method not allowed"}
    assert "POST" in response["Allow"]
    # The length announced is the JSON body's: a stale one broke kept-alive connections.
    assert int(response["Content-Length"]) == len(response.content)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_a_non_uuid_thread_id_on_a_websocket_is_closed_with_4404(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model

    from agents_app.services.access.api_keys import api_key_create

    @sync_to_async
    def key() -> str:
        user = get_user_model().objects.create_user(username="alice")
        return api_key_create(user=user, name="ws")[1]

    raw = await key()
    caplog.set_level(logging.WARNING)
    for route in ("stream", "logs"):
        for bad in ("not-a-uuid", "1", "%00", "x" * 300, str(uuid.uuid4()) + "x"):
            communicator = WebsocketCommunicator(
                application,
                f"/api/threads/{bad}/{route}",
                headers=[(b"authorization", f"Bearer {raw}".encode())],
            )
            connected, _ = await communicator.connect()
            assert connected
            frame = json.loads(await communicator.receive_from())
            closed = await communicator.receive_output()
            assert frame["status"] == 404 and closed["code"] == 4404, (route, bad, frame)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
