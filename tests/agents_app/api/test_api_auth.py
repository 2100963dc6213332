"""Who may call what: API keys, sessions with CSRF, tickets, and the thread access matrix.

alice owns the thread; bob and charlie are other users; ops is staff.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client

from agents_app.models import ApiKey, WebSocketTicket
from agents_app.services.access.tickets import ticket_consume
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import ApiClient

pytestmark = pytest.mark.django_db

# Every route under /api/threads/{id}/… that reads or acts on one thread.
THREAD_ROUTES = [
    ("get", ""),
    ("patch", ""),
    ("get", "/messages"),
    ("post", "/messages"),
    ("get", "/logs"),
    ("get", "/cost"),
    ("get", "/effects"),
    ("get", "/subagents"),
    ("get", "/kv"),
    ("get", "/fs"),
    ("post", "/stop"),
    ("post", "/continue"),
    ("get", "/some/endpoint"),
    ("delete", ""),
]
BODIES = {("patch", ""): {"tags": ["t"]}, ("post", "/messages"): {"content": "hi"}}


def _call(client: ApiClient, method: str, path: str, body: Any = None) -> Any:
    if method in ("post", "patch"):
        return getattr(client, f"{method}_json")(path, body or {})
    return getattr(client, method)(path)


@pytest.mark.parametrize(("method", "suffix"), THREAD_ROUTES)
def test_nobody_without_credentials_gets_401(
    anonymous: ApiClient, thread_of: Any, alice: Any, method: str, suffix: str
) -> None:
    thread = thread_of(alice)
    response = _call(anonymous, method, f"/api/threads/{thread.pk}{suffix}")
    assert response.status_code == 401
    assert response.json() == {"error": "Unauthorized"}


@pytest.mark.parametrize(("method", "suffix"), THREAD_ROUTES)
def test_bob_and_charlie_get_403_on_alices_thread(
    as_: Any, thread_of: Any, alice: Any, bob: Any, charlie: Any, method: str, suffix: str
) -> None:
    thread = thread_of(alice)
    for outsider in (bob, charlie):
        response = _call(
            as_(outsider), method, f"/api/threads/{thread.pk}{suffix}", BODIES.get((method, suffix))
        )
        assert response.status_code == 403, (outsider.username, response.content)
        assert response.json() == {"error": "Forbidden: You don't have access to this thread"}


@pytest.mark.parametrize(("method", "suffix"), THREAD_ROUTES)
def test_an_unknown_thread_is_404_for_everyone(
    as_: Any, alice: Any, ops: Any, agent: str, method: str, suffix: str
) -> None:
    missing = uuid.uuid4()
    for user in (alice, ops):
        response = _call(
            as_(user), method, f"/api/threads/{missing}{suffix}", BODIES.get((method, suffix))
        )
        assert response.status_code == 404
        assert response.json() == {"error": f"Thread not found: {missing}"}


@pytest.mark.parametrize(("method", "suffix"), THREAD_ROUTES)
def test_alice_and_staff_may_use_alices_thread(
    as_: Any, thread_of: Any, alice: Any, ops: Any, method: str, suffix: str
) -> None:
    for user in (alice, ops):
        thread = thread_of(alice)
        response = _call(
            as_(user), method, f"/api/threads/{thread.pk}{suffix}", BODIES.get((method, suffix))
        )
        # The endpoint route exists for nobody (404 "Not found"), but access passed.
        expected = 404 if suffix == "/some/endpoint" else None
        if expected:
            assert response.json() == {"error": "Not found"}
        else:
            assert response.status_code < 300, (user.username, method, suffix, response.content)


def test_thread_list_shows_own_threads_and_staff_sees_all(
    as_: Any, thread_of: Any, alice: Any, bob: Any, ops: Any
) -> None:
    mine, theirs = thread_of(alice), thread_of(bob)
    ids = lambda user: {t["id"] for t in as_(user).get("/api/threads").json()["threads"]}  # noqa: E731
    assert ids(alice) == {str(mine.pk)}
    assert ids(bob) == {str(theirs.pk)}
    assert ids(ops) == {str(mine.pk), str(theirs.pk)}


def test_an_invalid_or_revoked_key_is_401(as_: Any, alice: Any, agent: str) -> None:
    client = as_(alice)
    assert client.get("/api/threads").status_code == 200
    ApiKey.objects.update(revoked_at="2020-01-01T00:00:00Z")
    assert client.get("/api/threads").status_code == 401
    bogus = Client(HTTP_AUTHORIZATION="Bearer agtbldr_" + "0" * 64)
    assert bogus.get("/api/threads").json() == {"error": "Unauthorized"}


# --- browser sessions ------------------------------------------------------------------------


def _browser_login(username: str) -> tuple[Client, str]:
    client = Client(enforce_csrf_checks=True)
    token = client.get("/api/auth/csrf").json()["csrfToken"]
    response = client.post(
        "/api/auth/login",
        {"username": username, "password": "pw-for-tests-1"},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200, response.content
    return client, client.cookies["csrftoken"].value


def test_login_me_logout_with_a_session(alice: Any) -> None:
    client, token = _browser_login("alice")
    me = client.get("/api/auth/me").json()
    assert me["authType"] == "session"
    assert me["user"]["username"] == "alice" and me["user"]["role"] == "user"
    assert client.post("/api/auth/logout", HTTP_X_CSRFTOKEN=token).json() == {"success": True}
    assert client.get("/api/auth/me").status_code == 401


def test_session_writes_need_the_csrf_token(alice: Any, agent: str) -> None:
    client, token = _browser_login("alice")
    body = {"agent_id": agent}
    refused = client.post("/api/threads", body, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json() == {"error": "CSRF check failed"}
    accepted = client.post(
        "/api/threads", body, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 200


def test_login_rejects_bad_passwords_and_missing_fields(alice: Any) -> None:
    client = Client()
    bad = client.post(
        "/api/auth/login", {"username": "alice", "password": "nope"}, "application/json"
    )
    assert bad.status_code == 401
    assert bad.json() == {"error": "Invalid username or password"}
    missing = client.post("/api/auth/login", {"password": "x"}, "application/json")
    assert missing.json() == {"error": "Username is required"}


def test_login_is_rate_limited_per_username(alice: Any) -> None:
    from django.core.cache import cache

    cache.clear()
    client = Client()
    statuses = [
        client.post(
            "/api/auth/login",
            {"username": "alice", "password": "wrong"},
            "application/json",
            REMOTE_ADDR=f"10.0.0.{i}",
        ).status_code
        for i in range(27)
    ]
    assert statuses[:25] == [401] * 25
    assert statuses[25:] == [429, 429]
    cache.clear()


# --- WebSocket tickets and API keys ---------------------------------------------------------------


def test_websocket_tickets_are_single_use_and_path_bound(as_: Any, alice: Any, agent: str) -> None:
    path = "/api/threads/abc/stream"
    response = as_(alice).post_json("/api/auth/websocket-ticket", {"pathname": path})
    body = response.json()
    assert body["expires_in"] == 30 and len(body["ticket"]) == 64
    assert ticket_consume(raw=body["ticket"], pathname="/api/other") is None
    assert ticket_consume(raw=body["ticket"], pathname=path) == alice
    assert ticket_consume(raw=body["ticket"], pathname=path) is None
    assert WebSocketTicket.objects.get().ticket_hash != body["ticket"]


@pytest.mark.parametrize("pathname", ["/other", "/api/../admin", "/api/x?y=1", "api/x", ""])
def test_websocket_ticket_path_must_be_a_normalized_api_path(
    as_: Any, alice: Any, agent: str, pathname: str
) -> None:
    response = as_(alice).post_json("/api/auth/websocket-ticket", {"pathname": pathname})
    assert response.status_code == 400
    assert response.json() == {"error": "pathname must be a normalized /api/* path."}


def _token_client(username: str) -> ApiClient:
    """A client signed in with a login token (``POST /api/auth/login``), as token clients are."""
    login = ApiClient().post_json(
        "/api/auth/login", {"username": username, "password": "pw-for-tests-1"}
    )
    assert login.status_code == 200, login.content
    return ApiClient(HTTP_AUTHORIZATION=f"Bearer {login.json()['token']}")


def test_api_keys_are_shown_once_listed_and_deleted(as_: Any, alice: Any, bob: Any) -> None:
    as_(alice)  # alice's first key, made in the fixture
    client = _token_client("alice")
    created = client.post_json("/api/api-keys", {"name": "ci"})
    assert created.status_code == 201
    key = created.json()
    assert key["key"].startswith("agtbldr_") and key["key_prefix"] == "agtbldr_"
    listed = client.get("/api/api-keys").json()["keys"]
    assert {k["name"] for k in listed} == {"ci", "key for alice"}
    assert all("key" not in k for k in listed)
    assert as_(bob).delete(f"/api/api-keys/{key['id']}").status_code == 404
    assert client.delete(f"/api/api-keys/{key['id']}").json() == {"success": True}
    assert Client(HTTP_AUTHORIZATION=f"Bearer {key['key']}").get("/api/auth/me").status_code == 401


def test_api_key_names_are_validated(alice: Any) -> None:
    response = _token_client("alice").post_json("/api/api-keys", {"name": "  "})
    assert response.status_code == 400
    assert "1 to 100" in response.json()["error"]


def test_api_key_cannot_mint_keys(as_: Any, alice: Any) -> None:
    """Issue #36 item 8: a leaked key must not keep itself alive through keys it made, so only
    a signed-in person (session cookie or login token) creates keys."""
    by_key = as_(alice).post_json("/api/api-keys", {"name": "offspring"})
    assert by_key.status_code == 403
    assert by_key.json() == {
        "error": "An API key cannot create API keys. Sign in (the studio, or POST "
        "/api/auth/login for a login token) to create one."
    }
    assert not ApiKey.objects.filter(name="offspring").exists()
    assert _token_client("alice").post_json("/api/api-keys", {"name": "t"}).status_code == 201
    browser, csrf = _browser_login("alice")
    by_session = browser.post(
        "/api/api-keys", {"name": "s"}, content_type="application/json", HTTP_X_CSRFTOKEN=csrf
    )
    assert by_session.status_code == 201, by_session.content
    assert set(ApiKey.objects.filter(user=alice).values_list("name", flat=True)) == {
        "key for alice",
        "t",
        "s",
    }


def test_a_key_can_revoke_itself(as_: Any, alice: Any) -> None:
    client = as_(alice)
    assert client.delete("/api/auth/current-key").json() == {"revoked": True}
    assert client.get("/api/auth/me").status_code == 401


def test_the_key_and_its_user_from_the_fixed_statement_equal_the_orms(alice: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from agents_app.services.access.api_keys import api_key_create, api_key_in_use

    alice.last_login = timezone.now()
    alice.save()
    key, raw = api_key_create(user=alice, name="program")
    orm = ApiKey.objects.select_related("user").get(pk=key.pk)
    got = api_key_in_use(raw)  # stamps last_used_at after reading the row
    assert got is not None
    for model_row, read in ((orm, got), (orm.user, got.user)):
        for field in type(model_row)._meta.concrete_fields:
            expected, value = getattr(model_row, field.attname), getattr(read, field.attname)
            assert (value, type(value)) == (expected, type(expected)), field.attname
    assert got.user.is_active is True and got.user.is_superuser is False  # booleans, not 0/1
    with CaptureQueriesContext(connection) as queries:
        assert api_key_in_use(raw) is not None
    assert len(queries) == 1  # the stamp is not due again within a minute
    type(alice).objects.filter(pk=alice.pk).update(is_active=False)
    assert api_key_in_use(raw) is None
    type(alice).objects.filter(pk=alice.pk).update(is_active=True)
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    assert api_key_in_use(raw) is None
